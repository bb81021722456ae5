//! # FromNLANRDump
//!
//! FromNLANRDump(FILENAME [, keywords FORMAT, STOP, ACTIVE, FORCE_IP, START, START_AFTER, END, END_AFTER, INTERVAL, END_CALL, SAMPLE, TIMING, MMAP, FILEPOS, BURST])
//!
//! Reads packets from an NLANR trace file.
//!
//! Reads IP packet headers from a file in one of the fixed-record formats
//! of NLANR's traces (FR, FR+ or TSH), builds an IPv4 packet from each
//! record and emits it; optionally stops the router at the end of the
//! file. gzip- and bzip2-compressed files are read through `zcat` and
//! `bzcat`. FILENAME `-` is the standard input.
//!
//! The formats: every record has a fixed size, and every field is in
//! network byte order.
//!
//!     FR (24 bytes)               FR+ and TSH (44 bytes)
//!     0   timestamp seconds       0   timestamp seconds
//!     4   timestamp microseconds  4   timestamp microseconds (TSH: the
//!     8   IP source address           top byte is the interface number,
//!     12  IP destination address      the low 24 bits the microseconds)
//!     16  IP length (2 bytes)     8   the IP header (20 bytes, without
//!     18  IP protocol (1)             options)
//!     19  TCP flags (1)           28  the first 16 bytes of the transport
//!     20  source port (2)             header (TCP: all but its checksum
//!     22  destination port (2)        and urgent pointer)
//!
//! An FR record becomes a packet with an IPv4 header (TTL 100) holding
//! the addresses, length and protocol, and for TCP and UDP a transport
//! header with the ports (and, for TCP, the flags; the header length 5).
//! An FR+ or TSH record becomes a packet holding the recorded bytes: the
//! IP header (a header length above 5 gets that many bytes of zero
//! options, so the checksum still holds and the transport header is where
//! the header says), then the 16 transport bytes, and for the first
//! fragment of a TCP packet 4 zero bytes completing its TCP header.
//! Packets carry the timestamp, the IP header annotation, and, when
//! shorter than their IP length, the extra length annotation; in TSH dumps
//! the paint annotation is the record's interface number (Click's link
//! annotation). A record whose microseconds are 1000000 or more, or (FR+,
//! TSH) whose IP header is not version 4 with a header length of at least
//! 5, is skipped and counted in `errors`; a truncated record at the end of
//! the file ends the trace with a counted error. The first error is
//! printed to standard error with the file offset of the record.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to read: a regular file (a FIFO or a
//!   device is refused), or `-` for the standard input.
//! - `FORMAT` (`fr`, `fr+`, `tsh` or `guess`; default `guess`): the
//!   format. `guess` takes it from the file name's suffix (`.fr`, `.fr+`
//!   or `.frp`, `.tsh`, before any `.gz` or `.bz2`), and failing that from
//!   the first record: a 44-byte format (read as TSH; an FR+ record's
//!   interface byte is zero) when its byte 8 starts an IPv4 header, else
//!   FR.
//! - `STOP` (boolean, default false): ask the router to stop when the file
//!   is done (or the END time is reached).
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `FORCE_IP` (boolean): ignored; the packets are always IP.
//! - `START` (seconds since the epoch): emit only packets stamped at or
//!   after this time. `START_AFTER` (time): skip the first T seconds of the
//!   trace. At most one of the two.
//! - `END` (seconds since the epoch): end at the first packet stamped at or
//!   after this time. `END_AFTER` (time): end T seconds after the first
//!   timestamp in the trace. `INTERVAL` (time): end T seconds after the
//!   first packet emitted. At most one of the three.
//! - `END_CALL` (write handler and value): called when the trace ends.
//!   Default: `active false` on this element. Exclusive with STOP.
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with this
//!   probability (fixed-point; see `sampling_prob`).
//! - `TIMING` (boolean, default false): keep the original spacing between
//!   packets on the router's clock (simulated under `--simtime`).
//! - `MMAP` (boolean): accepted for compatibility and ignored.
//! - `FILEPOS` (byte offset in the uncompressed file): start at this
//!   record; it must be a multiple of the record size.
//! - `BURST` (integer, default 1; a paraclick addition, as FromDump's):
//!   packets per task run.
//!
//! Handlers:
//! - `count` (read): packets emitted. `reset_counts` (write): resets it.
//! - `active` (read/write), `sampling_prob` (read).
//! - `encap` (read): `IP`.
//! - `filename`, `filesize` (bytes, or `-` for a compressed file or the
//!   standard input), `filepos` (read: the uncompressed file position).
//! - `packet_filepos` (read): the file position of the last packet emitted.
//! - `extend_interval` (write, time): moves the END time later and sets
//!   `active` to true.
//! - `stop` (write): sets `active` to false and stops the router.
//! - `errors` (read): bad records met (a paraclick addition).
//!
//! Example:
//!
//!     FromNLANRDump(trace.tsh.gz, STOP true) -> CheckIPHeader -> c :: Counter -> Discard;

use crate::common::{sample_fixed, EndAction, Produced, Sampler, TimeBounds, Timing, TRACE_BURST};
use crate::ipsumdump::{build, BuildOpts, Values};
use crate::text_trace::{Core, TraceArgs, TraceReader, TraceSource};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, DynHandler, HandlerCx, Kind};
use std::io::{BufReader, Read};
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// FromNLANRDump: a trace source reading NLANR records.
pub type FromNLANRDump = TraceSource<NlanrReader>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Fr,
    FrPlus,
    Tsh,
}

impl Format {
    fn cell(self) -> usize {
        match self {
            Format::Fr => 24,
            Format::FrPlus | Format::Tsh => 44,
        }
    }
}

/// The largest record: what the reader's buffer holds.
const MAX_CELL: usize = 44;

/// How FromNLANRDump reads its file.
pub struct NlanrReader {
    format: Format,
    state: Mutex<State>,
}

struct State {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    /// Bytes of the uncompressed file consumed.
    pos: u64,
    /// The position of the last packet emitted.
    packet_pos: u64,
    /// A packet read but not emitted yet (TIMING, or the END time), with
    /// its position.
    held: Option<(Packet, u64)>,
    seen_first: bool,
    output_first: bool,
    bounds: TimeBounds,
    timing: Timing,
    sampler: Sampler,
    done: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromNLANRDump", "0/1", "a", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

fn parse_format(s: &str) -> Option<Option<Format>> {
    match s.to_ascii_lowercase().as_str() {
        "fr" => Some(Some(Format::Fr)),
        "fr+" | "frplus" => Some(Some(Format::FrPlus)),
        "tsh" => Some(Some(Format::Tsh)),
        "guess" => Some(None),
        _ => None,
    }
}

/// The format a file name's suffix names.
fn format_of_name(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    let n = n
        .strip_suffix(".gz")
        .or_else(|| n.strip_suffix(".bz2"))
        .unwrap_or(&n);
    if n.ends_with(".fr") {
        Some(Format::Fr)
    } else if n.ends_with(".fr+") || n.ends_with(".frp") {
        Some(Format::FrPlus)
    } else if n.ends_with(".tsh") {
        Some(Format::Tsh)
    } else {
        None
    }
}

/// The format the first bytes of a file suggest.
fn format_of_head(head: &[u8]) -> Format {
    match head.get(8) {
        Some(&b) if head.len() >= 44 && b >> 4 == 4 && b & 15 >= 5 => Format::Tsh,
        _ => Format::Fr,
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, String> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(got)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromNLANRDump, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let format = a.read::<String>("FORMAT");
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let _force_ip = a.read::<bool>("FORCE_IP");
    let bounds = TimeBounds::read(&mut a)?;
    let end_call = a.read::<String>("END_CALL");
    let sample = a.read::<f64>("SAMPLE").unwrap_or(1.0);
    let timing = a.read::<bool>("TIMING").unwrap_or(false);
    let _mmap = a.read::<bool>("MMAP");
    let filepos = a.read::<u64>("FILEPOS");
    let burst = a.read::<usize>("BURST").unwrap_or(TRACE_BURST);
    a.complete()?;
    paraclick_elements::util::check_burst(burst)?;
    let format = match format {
        Some(f) => parse_format(&f)
            .ok_or_else(|| format!("FORMAT: expected 'fr', 'fr+', 'tsh' or 'guess', not '{f}'"))?,
        None => None,
    };
    let sample = sample_fixed(sample)?;
    let end = EndAction::from_args(stop, end_call)?;
    cx.allowed_file(&filename)?;
    let (mut input, size) = crate::decompress::open_maybe_compressed(&filename)?;
    let compressed = filename != "-" && {
        let mut head = [0u8; 3];
        let n = crate::common::open_input(&filename)
            .and_then(|(mut r, _)| read_full(&mut r, &mut head))
            .unwrap_or(0);
        crate::decompress::decompressor(&head[..n]).is_some()
    };
    let format = match format.or_else(|| format_of_name(&filename)) {
        Some(f) => f,
        None => {
            let mut head = [0u8; MAX_CELL];
            let n = read_full(&mut input, &mut head).map_err(|e| format!("{filename}: {e}"))?;
            let f = format_of_head(&head[..n]);
            input = Box::new(std::io::Cursor::new(head[..n].to_vec()).chain(input));
            f
        }
    };
    let mut pos = 0;
    if let Some(fp) = filepos {
        let cell = format.cell() as u64;
        if fp % cell != 0 {
            return Err(format!(
                "FILEPOS {fp} is not at a record: records are {cell} bytes"
            ));
        }
        let skipped = std::io::copy(&mut (&mut input).take(fp), &mut std::io::sink())
            .map_err(|e| format!("{filename}: {e}"))?;
        if skipped < fp {
            return Err(format!("FILEPOS {fp} is past the end of the file"));
        }
        pos = fp;
    }
    let args = TraceArgs {
        filename,
        end,
        active,
        timing,
        sample,
        burst,
    };
    let seed = args.filename.len() as u64 ^ 0x41a2;
    Ok(TraceSource {
        core: Core::new(cx, &args, if compressed { None } else { size }),
        reader: NlanrReader {
            format,
            state: Mutex::new(State {
                reader: Some(BufReader::with_capacity(1 << 16, input)),
                pos,
                packet_pos: pos,
                held: None,
                seen_first: false,
                output_first: false,
                bounds,
                timing: Timing::default(),
                sampler: Sampler::new(sample, seed),
                done: false,
            }),
        },
    })
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// What a record became.
enum Cell {
    Packet(Packet),
    Bad(String),
    /// The packet pool is empty.
    NoBuffer,
}

/// The packet of one record (`c` holds exactly the format's bytes).
fn decode(format: Format, c: &[u8]) -> Cell {
    let sec = be32(c, 0);
    let word = be32(c, 4);
    let (usec, link) = match format {
        Format::Tsh => (word & 0x00ff_ffff, (word >> 24) as u8),
        _ => (word, 0),
    };
    if usec >= 1_000_000 {
        return Cell::Bad(format!("microseconds {usec} out of range"));
    }
    let ts = Timestamp(i64::from(sec) * 1_000_000_000 + i64::from(usec) * 1000);
    let p = match format {
        Format::Fr => {
            let proto = c[18];
            let ports = proto == 6 || proto == 17;
            let v = Values {
                ts: Some(ts),
                src: Some(Ipv4Addr::from(be32(c, 8))),
                dst: Some(Ipv4Addr::from(be32(c, 12))),
                len: Some(u32::from(be16(c, 16))),
                proto: Some(proto),
                tcp_flags: (proto == 6).then_some(u16::from(c[19])),
                sport: ports.then_some(be16(c, 20)),
                dport: ports.then_some(be16(c, 22)),
                ..Values::default()
            };
            let opts = BuildOpts {
                checksum: false,
                default_proto: proto,
                flowid: None,
            };
            match build(&v, &opts) {
                Some(p) => p,
                None => return Cell::NoBuffer,
            }
        }
        Format::FrPlus | Format::Tsh => {
            let ip = &c[8..28];
            let transport = &c[28..44];
            if ip[0] >> 4 != 4 || ip[0] & 15 < 5 {
                return Cell::Bad(format!("not an IPv4 header (first byte {:#04x})", ip[0]));
            }
            let hl = usize::from(ip[0] & 15) * 4; // 20 to 60
            let first_tcp = ip[9] == 6 && be16(ip, 6) & 0x1fff == 0;
            let mut bytes = [0u8; 60 + 20];
            bytes[..20].copy_from_slice(ip);
            bytes[hl..hl + 16].copy_from_slice(transport);
            let n = hl + if first_tcp { 20 } else { 16 };
            let Some(mut p) = Packet::from_slice(&bytes[..n]) else {
                return Cell::NoBuffer;
            };
            p.set_network_header(0, hl);
            let ip_len = u32::from(be16(ip, 2));
            p.anno_mut().extra_length = ip_len.saturating_sub(n as u32);
            p.set_timestamp(ts);
            p
        }
    };
    let mut p = p;
    if format == Format::Tsh {
        p.anno_mut().paint = link;
    }
    Cell::Packet(p)
}

impl NlanrReader {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TraceReader for NlanrReader {
    fn produce(&self, core: &Core, cx: &mut Cx<'_>, max: usize) -> Produced {
        let mut r = Produced::default();
        if !core.active.load(Ordering::Relaxed) {
            return Produced::idle();
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.done {
            return Produced::idle();
        }
        let now = cx.now();
        let cell = self.format.cell();
        let budget = max.saturating_mul(8).max(256);
        let (mut emitted, mut examined) = (0, 0);
        let mut buf = [0u8; MAX_CELL];
        while emitted < max && examined < budget {
            examined += 1;
            let (p, at) = if let Some(h) = st.held.take() {
                h
            } else {
                let Some(reader) = st.reader.as_mut() else {
                    st.done = true;
                    r.ended = true;
                    break;
                };
                let at = st.pos;
                let got = match read_full(reader, &mut buf[..cell]) {
                    Ok(n) => n,
                    Err(e) => {
                        core.report(cx, "FromNLANRDump", &at.to_string(), &e);
                        0
                    }
                };
                if got < cell {
                    if got > 0 {
                        core.report(
                            cx,
                            "FromNLANRDump",
                            &at.to_string(),
                            &format!("truncated record ({got} of {cell} bytes)"),
                        );
                    }
                    st.reader = None;
                    st.done = true;
                    r.ended = true;
                    break;
                }
                st.pos += cell as u64;
                r.progress = true;
                let p = match decode(self.format, &buf[..cell]) {
                    Cell::Packet(p) => p,
                    Cell::Bad(msg) => {
                        core.report(cx, "FromNLANRDump", &at.to_string(), &msg);
                        continue;
                    }
                    Cell::NoBuffer => {
                        // Read it again later.
                        st.pos = at;
                        let rest: Box<dyn Read + Send> = Box::new(
                            std::io::Cursor::new(buf[..cell].to_vec())
                                .chain(st.reader.take().expect("reader")),
                        );
                        st.reader = Some(BufReader::with_capacity(cell, rest));
                        break;
                    }
                };
                let ts = p.timestamp();
                if !st.seen_first {
                    st.seen_first = true;
                    st.bounds.first_in_trace(ts);
                }
                if st.bounds.before_start(ts) || !st.sampler.keep() {
                    continue;
                }
                (p, at)
            };
            let ts = p.timestamp();
            if st.bounds.at_end(ts) {
                // Kept for extend_interval.
                st.held = Some((p, at));
                st.done = true;
                r.ended = true;
                break;
            }
            if !st.output_first {
                st.output_first = true;
                st.bounds.first_output(ts);
            }
            if core.timing {
                if let Some(due) = st.timing.wait_until(ts, now) {
                    st.held = Some((p, at));
                    r.wait = Some(due);
                    break;
                }
            }
            st.packet_pos = at;
            r.out.get_or_insert_with(Batch::new).push(p);
            emitted += 1;
        }
        drop(guard);
        if emitted > 0 {
            r.progress = true;
            core.count.add(cx.thread(), emitted as u64);
        }
        r
    }

    fn filepos(&self) -> u64 {
        self.lock().pos
    }

    fn queued(&self) -> usize {
        usize::from(self.lock().held.is_some())
    }

    fn extra_handlers(&self) -> Vec<DynHandler> {
        vec![
            DynHandler {
                name: "packet_filepos".into(),
                read: true,
                write: false,
                param: false,
            },
            DynHandler {
                name: "extend_interval".into(),
                read: false,
                write: true,
                param: false,
            },
        ]
    }

    fn read_extra(&self, _core: &Core, name: &str) -> Option<Result<String, String>> {
        (name == "packet_filepos").then(|| Ok(self.lock().packet_pos.to_string()))
    }

    fn write_extra(
        &self,
        core: &Core,
        name: &str,
        value: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        if name != "extend_interval" {
            return None;
        }
        Some(hx.arg::<Duration>(value).map(|d| {
            let mut st = self.lock();
            st.bounds.extend(d);
            if st.reader.is_some() || st.held.is_some() {
                st.done = false;
            }
            drop(st);
            core.active.store(true, Ordering::Relaxed);
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_packet::wire::{Ipv4Header, TcpHeader, UdpHeader};

    /// An FR record.
    #[allow(clippy::too_many_arguments)]
    fn fr(
        sec: u32,
        usec: u32,
        src: [u8; 4],
        dst: [u8; 4],
        len: u16,
        proto: u8,
        flags: u8,
        ports: (u16, u16),
    ) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&sec.to_be_bytes());
        v.extend_from_slice(&usec.to_be_bytes());
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&len.to_be_bytes());
        v.push(proto);
        v.push(flags);
        v.extend_from_slice(&ports.0.to_be_bytes());
        v.extend_from_slice(&ports.1.to_be_bytes());
        assert_eq!(v.len(), 24);
        v
    }

    /// A TSH (or FR+, with `iface` 0) record of a TCP segment whose IP
    /// header has `hl` words, its checksum correct.
    fn tsh(sec: u32, usec: u32, iface: u8, hl: u8, len: u16, proto: u8) -> Vec<u8> {
        let mut ip = [0u8; 20];
        ip[0] = 0x40 | hl;
        ip[2..4].copy_from_slice(&len.to_be_bytes());
        ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let sum = paraclick_packet::wire::checksum::checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut t = [0u8; 16];
        t[0..2].copy_from_slice(&1234u16.to_be_bytes());
        t[2..4].copy_from_slice(&80u16.to_be_bytes());
        t[4..8].copy_from_slice(&1000u32.to_be_bytes());
        t[12] = 0x50;
        t[13] = 0x12; // SYN ACK
        t[14..16].copy_from_slice(&8192u16.to_be_bytes());
        let mut v = Vec::new();
        v.extend_from_slice(&sec.to_be_bytes());
        v.extend_from_slice(&((u32::from(iface) << 24) | usec).to_be_bytes());
        v.extend_from_slice(&ip);
        v.extend_from_slice(&t);
        assert_eq!(v.len(), 44);
        v
    }

    fn read_back(file: &std::path::Path, extra: &str) -> (Vec<paraclick_packet::Packet>, u64) {
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromNLANRDump({}, STOP true{extra}) -> s :: TestSink;",
                q(file)
            ),
        );
        run(&r);
        let errors = handler(&r, "f.errors").parse().unwrap();
        (sink(&r, "s"), errors)
    }

    #[test]
    fn fr_records_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.fr");
        let mut data = fr(
            100,
            250_000,
            [1, 0, 0, 1],
            [2, 0, 0, 2],
            1500,
            6,
            0x18,
            (4000, 80),
        );
        data.extend(fr(
            101,
            0,
            [3, 0, 0, 3],
            [4, 0, 0, 4],
            60,
            17,
            0,
            (53, 5353),
        ));
        data.extend(fr(102, 0, [5, 0, 0, 5], [6, 0, 0, 6], 84, 1, 0, (0, 0)));
        std::fs::write(&f, &data).unwrap();
        let (got, errors) = read_back(&f, "");
        assert_eq!(errors, 0);
        assert_eq!(got.len(), 3);
        let p = &got[0];
        assert_eq!(p.timestamp(), ts(100, 250_000_000));
        let ip = Ipv4Header::new_unchecked(p.data());
        assert_eq!(ip.src_addr().octets(), [1, 0, 0, 1]);
        assert_eq!(ip.dst_addr().octets(), [2, 0, 0, 2]);
        assert_eq!((ip.total_len(), ip.protocol()), (1500, 6));
        assert_eq!(p.len() as u32 + p.anno().extra_length, 1500);
        let tcp = TcpHeader::new_unchecked(&p.data()[20..]);
        assert_eq!(
            (tcp.src_port(), tcp.dst_port(), tcp.flags()),
            (4000, 80, 0x18)
        );
        let udp = UdpHeader::new_unchecked(&got[1].data()[20..]);
        assert_eq!((udp.src_port(), udp.dst_port()), (53, 5353));
        assert_eq!(Ipv4Header::new_unchecked(got[2].data()).protocol(), 1);
    }

    #[test]
    fn tsh_and_fr_plus_records_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.tsh");
        let mut data = tsh(7, 5, 3, 5, 40, 6);
        // Header length 6: a zero option word keeps the checksum right.
        data.extend(tsh(8, 6, 1, 6, 1000, 6));
        data.extend(tsh(9, 7, 2, 5, 200, 17));
        std::fs::write(&f, &data).unwrap();
        let (got, errors) = read_back(&f, "");
        assert_eq!(errors, 0);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].timestamp(), ts(7, 5000));
        assert_eq!(got[0].anno().paint, 3, "TSH interface number");
        assert_eq!(got[0].len(), 40, "20-byte IP header, whole TCP header");
        let ip = Ipv4Header::new_unchecked(got[0].data());
        assert_eq!(
            paraclick_packet::wire::checksum::checksum(&got[0].data()[..20]),
            0
        );
        assert_eq!(
            (ip.src_addr().octets(), ip.total_len()),
            ([10, 0, 0, 1], 40)
        );
        let tcp = TcpHeader::new_unchecked(&got[0].data()[20..]);
        assert_eq!(
            (
                tcp.src_port(),
                tcp.dst_port(),
                tcp.seq_number(),
                tcp.flags()
            ),
            (1234, 80, 1000, 0x12)
        );
        // The 24-byte header: options of zeros, then the TCP header.
        let p = &got[1];
        assert_eq!(p.anno().paint, 1);
        assert_eq!(p.network_header_length(), Some(24));
        assert_eq!(
            paraclick_packet::wire::checksum::checksum(&p.data()[..24]),
            0
        );
        assert_eq!(TcpHeader::new_unchecked(&p.data()[24..]).src_port(), 1234);
        assert_eq!(p.len() as u32 + p.anno().extra_length, 1000);
        // UDP: the 16 recorded transport bytes only.
        assert_eq!(got[2].len(), 36);

        // The same records as FR+ (by FORMAT): no interface numbers.
        let g = dir.path().join("t.data");
        std::fs::write(&g, tsh(7, 5, 0, 5, 40, 6)).unwrap();
        let (got, _) = read_back(&g, ", FORMAT fr+");
        assert_eq!((got.len(), got[0].anno().paint), (1, 0));
        // Guessed from the contents: an IPv4 header at byte 8.
        let (got, _) = read_back(&g, "");
        assert_eq!(got[0].len(), 40);
    }

    #[test]
    fn bad_records_are_counted_and_truncation_ends_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.tsh");
        let mut data = tsh(1, 0, 0, 5, 40, 6);
        data.extend(tsh(2, 0, 0, 4, 40, 6)); // header length 4
        let mut v6 = tsh(3, 0, 0, 5, 40, 6);
        v6[8] = 0x65; // version 6
        data.extend(v6);
        data.extend(tsh(4, 999_999, 0, 5, 40, 6));
        // As FR+: microseconds 2000000 are out of range.
        let mut bad_usec = tsh(5, 0, 0, 5, 40, 6);
        bad_usec[4..8].copy_from_slice(&2_000_000u32.to_be_bytes());
        data.extend(bad_usec);
        data.extend(&tsh(6, 0, 0, 5, 40, 6)[..30]); // truncated
        std::fs::write(&f, &data).unwrap();
        let (got, errors) = read_back(&f, ", FORMAT fr+");
        let secs: Vec<i64> = got
            .iter()
            .map(|p| p.timestamp().0 / 1_000_000_000)
            .collect();
        assert_eq!(secs, [1, 4]);
        assert_eq!(errors, 4);
    }

    #[test]
    fn time_bounds_filepos_and_handlers() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.fr");
        let mut data = Vec::new();
        for s in 0..10u32 {
            data.extend(fr(100 + s, 0, [1, 0, 0, 1], [2, 0, 0, 2], 40, 6, 0, (1, 2)));
        }
        std::fs::write(&f, &data).unwrap();
        let (got, _) = read_back(&f, ", START_AFTER 2, END_AFTER 5");
        let secs: Vec<i64> = got
            .iter()
            .map(|p| p.timestamp().0 / 1_000_000_000)
            .collect();
        assert_eq!(secs, [102, 103, 104]);
        let (got, _) = read_back(&f, ", FILEPOS 192");
        assert_eq!(got.len(), 2);
        let r = build(
            &full_registry(),
            &format!("f :: FromNLANRDump({}, STOP true) -> Discard;", q(&f)),
        );
        run(&r);
        assert_eq!(handler(&r, "f.filepos"), "240");
        assert_eq!(handler(&r, "f.packet_filepos"), "216");
        assert_eq!(handler(&r, "f.filesize"), "240");
        assert_eq!(handler(&r, "f.encap"), "IP");
        assert_eq!(handler(&r, "f.count"), "10");
    }

    #[test]
    fn configuration_errors() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.fr");
        std::fs::write(&f, fr(1, 0, [0; 4], [0; 4], 0, 0, 0, (0, 0))).unwrap();
        let e = build_err(
            &full_registry(),
            &format!("FromNLANRDump({}, FORMAT xx) -> Discard;", q(&f)),
        );
        assert!(e.contains("FORMAT: expected 'fr'"), "{e}");
        let e = build_err(
            &full_registry(),
            &format!("FromNLANRDump({}, FILEPOS 10) -> Discard;", q(&f)),
        );
        assert!(e.contains("FILEPOS 10 is not at a record"), "{e}");
        let e = build_err(
            &full_registry(),
            &format!("FromNLANRDump({}, FILEPOS 48) -> Discard;", q(&f)),
        );
        assert!(e.contains("past the end"), "{e}");
        let e = build_err(
            &full_registry(),
            "FromNLANRDump(/nonexistent/x.fr) -> Discard;",
        );
        assert!(!e.is_empty());
    }

    #[test]
    fn random_files_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut x: u64 = 0x1234_5678_9abc_def1;
        for (i, fmt) in ["fr", "fr+", "tsh", "guess"]
            .iter()
            .cycle()
            .take(24)
            .enumerate()
        {
            let n = (i * 37) % 300;
            let data: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let f = dir.path().join(format!("r{i}"));
            std::fs::write(&f, &data).unwrap();
            let (got, _) = read_back(&f, &format!(", FORMAT {fmt}"));
            assert!(got.len() <= n / 24);
        }
    }
}
