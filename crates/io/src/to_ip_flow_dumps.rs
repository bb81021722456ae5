//! # ToIPFlowDumps
//!
//! ToIPFlowDumps(OUTPUT_PATTERN [, keywords NOTIFIER, ABSOLUTE_TIME, ABSOLUTE_SEQ, BINARY, GZIP, ALL_TCP_OPT, TCP_OPT, TCP_WINDOW, IP_ID, MINCOUNT, BURST])
//!
//! Creates separate trace files for each TCP/UDP flow.
//!
//! Writes summary information about incoming packets, in the style of
//! ToIPSummaryDump, to several files, one file per flow. Flows are told
//! apart by their aggregate annotations; run ToIPFlowDumps downstream of
//! AggregateIPFlows. Packets that are not TCP or UDP first fragments with
//! an IPv4 header (network header annotation), or whose aggregate
//! annotation is 0, are passed on but not written; `skipped` counts them.
//!
//! OUTPUT_PATTERN names each flow's file, with printf-like escapes
//! expanded per flow: `%n` the aggregate annotation in decimal; `%.0n`
//! its upper 8 bits, `%.1n`, `%.2n`, `%.3n` bits 16-23, 8-15, 0-7; `%.4n`
//! its upper 16 bits, `%.5n` its lower 16 bits; `%x`, `%X` (and `%.0x`
//! ... `%.5X`) the same in hex; `%s` the source address, `%.0s` ... `%.3s`
//! its first through fourth bytes; `%d`, `%.0d` ... `%.3d` the same for the
//! destination; `%S` the source port; `%D` the destination port; `%p` the
//! protocol (`T` or `U`); `%%` a `%`. A `0` flag and a field width pad on
//! the left (`%06n`). Source and destination are those of the flow's first
//! packet. Missing directories in a file name are created.
//!
//! Each file holds what Click's ToIPFlowDumps writes (the form of Click
//! 2.x; the example in Click's manual shows an older `!IPSummaryDump 1.1`
//! header with `!first_seq` and `!first_time`):
//!
//!     !IPSummaryDump 1.3
//!     !flowid 192.150.187.37 3153 18.26.4.44 21 T
//!     !aggregate 1
//!     !data ntimestamp direction tcp_flags tcp_seq payload_len tcp_ack
//!     !firstseq > 2195313811
//!     !firstseq < 2484225252
//!     !firsttime 1018330170.887164999
//!     0.000000001 > S 0 0 0
//!     0.075539001 < SA 0 0 1
//!
//! UDP flows have `!data ntimestamp direction payload_len`. IP_ID adds
//! `ip_id` after `direction`; TCP_WINDOW adds `tcp_window` after
//! `tcp_ack`, then TCP_OPT `tcp_ntopt` (MSS, window scale, SACK) or
//! ALL_TCP_OPT `tcp_opt` (`.` for a packet without options), TCP only,
//! printed as ToIPSummaryDump prints them. (Click lists `tcp_ntopt` always
//! and omits `tcp_window` from `!data`; here `!data` names exactly the
//! columns written.) `direction` is `>` for packets from the flow's first
//! source address and port, else `<`. Timestamps are relative to
//! `!firsttime`, one nanosecond before the flow's first packet (so no
//! relative time is 0), unless ABSOLUTE_TIME; in nanoseconds either way.
//! Sequence numbers of each direction are relative to the first one seen
//! in that direction (the `!firstseq` lines), acknowledgements to the
//! other direction's, unless ABSOLUTE_SEQ; a packet without the ACK flag
//! prints its raw acknowledgement field. `!firstseq` lines list the
//! directions known when the file's header is written. Unlike Click's,
//! UDP `payload_len` excludes the IP header (as ToIPSummaryDump's does).
//!
//! Records are buffered per flow and written (the header first) once a
//! flow has 128 buffered packets and at least MINCOUNT packets, and at the
//! end: the `flush` handler and router shutdown write every flow with at
//! least MINCOUNT packets and forget all flows. A flow seen again after a
//! flush starts a new file (overwriting the old one).
//!
//! With BINARY true, each file has the same `!` header lines, then a
//! `!binary` line, then one binary record per packet in ToIPSummaryDump's
//! `BINARY true` form. The columns are those of the text lines, in the
//! order real Click 2.x writes them (and `!data` names): `ntimestamp
//! tcp_seq payload_len tcp_ack ip_id tcp_window tcp_flags direction`, then
//! the option column (UDP: `ntimestamp payload_len ip_id direction`),
//! without those not asked for; `direction` is one byte, `tcp_window`
//! two. FromIPSummaryDump reads either form back to the same packets.
//!
//! With GZIP true, a flow's file is compressed when the flow is complete
//! (at flush or shutdown): `NAME` is replaced by `NAME.gz` (gzip format,
//! written in-process). Pieces of a long flow written earlier stay
//! uncompressed in `NAME` until then.
//!
//! Not supported: NOTIFIER. paraclick's AggregateIPFlows sends no
//! flow-end notifications, so flows are written and freed only at flush
//! and shutdown; a NOTIFIER argument is accepted (Click configurations
//! keep working) with a warning on standard error.
//!
//! Ports: 1 input, 0 or 1 outputs; packets pass through unchanged.
//! Processing: agnostic; with a pull input and no output, a task pulls up
//! to BURST packets per run.
//!
//! Arguments:
//! - `OUTPUT_PATTERN` (string): the file name pattern.
//! - `NOTIFIER` (element name): accepted with a warning, ignored.
//! - `ABSOLUTE_TIME`, `ABSOLUTE_SEQ` (booleans, default false).
//! - `IP_ID`, `TCP_WINDOW`, `TCP_OPT`, `ALL_TCP_OPT` (booleans, default
//!   false): extra columns.
//! - `MINCOUNT` (unsigned, default 0): write only flows with at least this
//!   many packets.
//! - `BINARY` (boolean, default false): binary records (see above).
//! - `GZIP` (boolean, default false): compress completed files to `.gz`.
//! - `BURST` (integer, default 32): packets per task run.
//!
//! Handlers:
//! - `flush` (write): write and forget every flow (see above).
//! - `count` (read): packets recorded. `skipped` (read): packets not
//!   recorded. `nflows` (read): flows held. `errors` (read): failed
//!   file writes (the first is printed to standard error).
//!
//! Example:
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!       -> AggregateIPFlows -> ToIPFlowDumps(/tmp/flows/%s-%d-%03n.txt, MINCOUNT 2) -> Discard;

use crate::common::ErrorCount;
use crate::flow_pattern::{FlowKey, Pattern};
use crate::ipsumdump::{Field, View, ViewOpts};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard};

/// Buffered packets per flow before its records are written.
const NPKT: usize = 128;

pub struct ToIPFlowDumps {
    pattern: Pattern,
    absolute_time: bool,
    absolute_seq: bool,
    ip_id: bool,
    /// TCP columns after `tcp_ack`.
    extra: Vec<Field>,
    /// The columns of TCP and UDP flows' records, in `!data` order, and
    /// for each the index of its word in a text line.
    tcp_fields: Vec<(Field, usize)>,
    udp_fields: Vec<(Field, usize)>,
    binary: bool,
    gzip: bool,
    mincount: u64,
    flows: Mutex<HashMap<u32, Flow>>,
    count: PerThreadCount,
    skipped: PerThreadCount,
    errors: ErrorCount,
    pull_input: bool,
    burst: usize,
}

struct Flow {
    key: FlowKey,
    filename: String,
    first_time: Timestamp,
    /// First sequence number per direction (0 `>`, 1 `<`).
    first_seq: [Option<u32>; 2],
    npackets: u64,
    /// Records not yet written (text lines or binary records).
    data: Vec<u8>,
    nlines: usize,
    /// The file has been created and has its header.
    written: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ToIPFlowDumps", "1/0-1", "a", make)
        .dead_code(paraclick_runtime::DeadCode::Sink)
        .shared("an output: one file or device for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ToIPFlowDumps, String> {
    let mut a = cx.args();
    let pattern = a.read_mp::<String>("OUTPUT_PATTERN");
    let notifier = a.read::<String>("NOTIFIER");
    let absolute_time = a.read::<bool>("ABSOLUTE_TIME").unwrap_or(false);
    let absolute_seq = a.read::<bool>("ABSOLUTE_SEQ").unwrap_or(false);
    let binary = a.read::<bool>("BINARY").unwrap_or(false);
    let gzip = a.read::<bool>("GZIP").unwrap_or(false);
    let all_tcp_opt = a.read::<bool>("ALL_TCP_OPT").unwrap_or(false);
    let tcp_opt = a.read::<bool>("TCP_OPT").unwrap_or(false);
    let tcp_window = a.read::<bool>("TCP_WINDOW").unwrap_or(false);
    let ip_id = a.read::<bool>("IP_ID").unwrap_or(false);
    let mincount = a.read::<u64>("MINCOUNT").unwrap_or(0);
    let burst = a.read::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    if let Some(n) = notifier {
        cx.warn(&format!(
            "NOTIFIER {n} is not supported; flows are written and freed only at flush and shutdown"
        ));
    }
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let pattern = Pattern::parse(&pattern).map_err(|e| format!("OUTPUT_PATTERN: {e}"))?;
    let mut extra = Vec::new();
    if tcp_window {
        extra.push(Field::TcpWindow);
    }
    if tcp_opt && !all_tcp_opt {
        extra.push(Field::TcpNtopt);
    }
    if all_tcp_opt {
        extra.push(Field::TcpOpt);
    }
    let mut udp_fields = vec![Field::NTimestamp, Field::Direction];
    if ip_id {
        udp_fields.push(Field::IpId);
    }
    let mut tcp_fields = udp_fields.clone();
    tcp_fields.extend([
        Field::TcpFlags,
        Field::TcpSeq,
        Field::PayloadLen,
        Field::TcpAck,
    ]);
    tcp_fields.extend(&extra);
    udp_fields.push(Field::PayloadLen);
    if binary {
        crate::ipsumdump_binary::check(&tcp_fields).map_err(|e| format!("BINARY: {e}"))?;
    }
    let (tcp_fields, udp_fields) = (columns(tcp_fields, binary), columns(udp_fields, binary));
    Ok(ToIPFlowDumps {
        pattern,
        absolute_time,
        absolute_seq,
        ip_id,
        extra,
        tcp_fields,
        udp_fields,
        binary,
        gzip,
        mincount,
        flows: Mutex::new(HashMap::new()),
        count: PerThreadCount::new(cx.nthreads),
        skipped: PerThreadCount::new(cx.nthreads),
        errors: ErrorCount::default(),
        pull_input: cx.input_is_pull(0) && cx.noutputs == 0,
        burst,
    })
}

/// The columns `text` (in text line order) as written: binary records
/// have the order real Click 2.x gives them (fixed widths, widest first,
/// then the options), text lines keep `text`'s order.
fn columns(text: Vec<Field>, binary: bool) -> Vec<(Field, usize)> {
    const BINARY_ORDER: [Field; 10] = [
        Field::NTimestamp,
        Field::TcpSeq,
        Field::PayloadLen,
        Field::TcpAck,
        Field::IpId,
        Field::TcpWindow,
        Field::TcpFlags,
        Field::Direction,
        Field::TcpNtopt,
        Field::TcpOpt,
    ];
    let mut v: Vec<(Field, usize)> = text.into_iter().enumerate().map(|(i, f)| (f, i)).collect();
    if binary {
        v.sort_by_key(|(f, _)| BINARY_ORDER.iter().position(|b| b == f));
    }
    v
}

/// What ToIPFlowDumps needs of a TCP/UDP first fragment.
struct Hdr {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    proto: u8,
    seq: u32,
    ack: u32,
    flags: u8,
}

fn header(p: &Packet) -> Option<Hdr> {
    let ip = p.network_header()?;
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let hl = usize::from(ip[0] & 15) * 4;
    let proto = ip[9];
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    if hl < 20 || frag != 0 || !(proto == 6 || proto == 17) {
        return None;
    }
    let t = ip.get(hl..)?;
    let need = if proto == 6 { 14 } else { 4 };
    if t.len() < need {
        return None;
    }
    let be32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    let addr = |i: usize| Ipv4Addr::new(ip[i], ip[i + 1], ip[i + 2], ip[i + 3]);
    Some(Hdr {
        src: addr(12),
        dst: addr(16),
        sport: u16::from_be_bytes([t[0], t[1]]),
        dport: u16::from_be_bytes([t[2], t[3]]),
        proto,
        seq: if proto == 6 { be32(4) } else { 0 },
        ack: if proto == 6 { be32(8) } else { 0 },
        flags: if proto == 6 { t[13] } else { 0 },
    })
}

impl ToIPFlowDumps {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, Flow>> {
        self.flows.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fields(&self, proto: u8) -> &[(Field, usize)] {
        if proto == 6 {
            &self.tcp_fields
        } else {
            &self.udp_fields
        }
    }

    fn header_text(&self, f: &Flow) -> String {
        let k = &f.key;
        let mut h = String::from("!IPSummaryDump 1.3\n");
        let _ = writeln!(
            h,
            "!flowid {} {} {} {} {}",
            k.src,
            k.sport,
            k.dst,
            k.dport,
            if k.proto == 6 { 'T' } else { 'U' }
        );
        let _ = writeln!(h, "!aggregate {}", k.aggregate);
        let names: Vec<&str> = self.fields(k.proto).iter().map(|f| f.0.name()).collect();
        let _ = writeln!(h, "!data {}", names.join(" "));
        if k.proto == 6 && !self.absolute_seq {
            for (d, c) in [(0, '>'), (1, '<')] {
                if let Some(s) = f.first_seq[d] {
                    let _ = writeln!(h, "!firstseq {c} {s}");
                }
            }
        }
        if !self.absolute_time {
            let _ = writeln!(h, "!firsttime {:#}", f.first_time);
        }
        if self.binary {
            h.push_str("!binary\n");
        }
        h
    }

    /// Appends `p`'s record to its flow (false: not a TCP/UDP packet of a
    /// flow); writes the flow if its buffer is full.
    fn record(&self, flows: &mut HashMap<u32, Flow>, p: &Packet) -> bool {
        let agg = p.anno().flow_hash;
        let Some(hd) = header(p).filter(|_| agg != 0) else {
            return false;
        };
        let f = flows.entry(agg).or_insert_with(|| {
            let key = FlowKey {
                aggregate: agg,
                src: hd.src,
                sport: hd.sport,
                dst: hd.dst,
                dport: hd.dport,
                proto: hd.proto,
            };
            Flow {
                filename: self.pattern.expand(&key),
                key,
                first_time: Timestamp(p.timestamp().0 - 1),
                first_seq: [None; 2],
                npackets: 0,
                data: Vec::new(),
                nlines: 0,
                written: false,
            }
        });
        let d = usize::from(!(hd.src == f.key.src && hd.sport == f.key.sport));
        f.npackets += 1;
        let mut line = String::with_capacity(64);
        let l = &mut line;
        if self.absolute_time {
            let _ = write!(l, "{:#}", p.timestamp());
        } else {
            let _ = write!(l, "{:#}", Timestamp(p.timestamp().0 - f.first_time.0));
        }
        l.push_str(if d == 0 { " >" } else { " <" });
        let view = View::new(
            p,
            &ViewOpts {
                extra_length: true,
                careful_trunc: false,
                bad_packets: false,
            },
            &mut String::new(),
        );
        if self.ip_id {
            l.push(' ');
            view.write(l, Field::IpId);
        }
        if hd.proto == 6 {
            l.push(' ');
            view.write(l, Field::TcpFlags);
            let seq = if self.absolute_seq {
                hd.seq
            } else {
                hd.seq.wrapping_sub(*f.first_seq[d].get_or_insert(hd.seq))
            };
            let ack = if self.absolute_seq || hd.flags & 0x10 == 0 {
                hd.ack
            } else {
                // The other direction's first seq, learned from this ack
                // if that direction has not been seen yet.
                hd.ack
                    .wrapping_sub(*f.first_seq[1 - d].get_or_insert(hd.ack.wrapping_sub(1)))
            };
            let _ = write!(l, " {seq} ");
            view.write(l, Field::PayloadLen);
            let _ = write!(l, " {ack}");
            for fld in &self.extra {
                l.push(' ');
                view.write(l, *fld);
            }
        } else {
            l.push(' ');
            view.write(l, Field::PayloadLen);
        }
        if self.binary {
            let words: Vec<&str> = line.split(' ').collect();
            let cols = self.fields(hd.proto).iter();
            let cols = cols.map(|&(fld, i)| (fld, words.get(i).copied().unwrap_or("-")));
            crate::ipsumdump_binary::text_record(cols, &mut f.data);
        } else {
            f.data.extend_from_slice(line.as_bytes());
            f.data.push(b'\n');
        }
        f.nlines += 1;
        if f.nlines >= NPKT && f.npackets >= self.mincount {
            self.output(f);
        }
        true
    }

    /// Writes `f`'s buffered records (and, the first time, its header).
    fn output(&self, f: &mut Flow) {
        let res = (|| -> std::io::Result<()> {
            let path = std::path::Path::new(&f.filename);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            let mut file = if f.written {
                std::fs::OpenOptions::new().append(true).open(path)?
            } else {
                std::fs::File::create(path)?
            };
            if !f.written {
                file.write_all(self.header_text(f).as_bytes())?;
            }
            file.write_all(&f.data)
        })();
        if let Err(e) = res {
            self.errors
                .report("ToIPFlowDumps", &format!("{}: {e}", f.filename));
        }
        f.written = true;
        f.data.clear();
        f.nlines = 0;
    }

    /// GZIP: replaces the completed file `name` by `name.gz`.
    fn compress(&self, name: &str) {
        let res = (|| -> std::io::Result<()> {
            let mut input = std::fs::File::open(name)?;
            let gz = std::fs::File::create(format!("{name}.gz"))?;
            let mut enc = flate2::write::GzEncoder::new(
                std::io::BufWriter::new(gz),
                flate2::Compression::default(),
            );
            std::io::copy(&mut input, &mut enc)?;
            enc.finish()?.flush()?;
            std::fs::remove_file(name)
        })();
        if let Err(e) = res {
            self.errors
                .report("ToIPFlowDumps", &format!("{name}.gz: {e}"));
        }
    }

    /// Writes every flow with at least MINCOUNT packets; forgets all flows.
    pub fn flush(&self) {
        let flows = std::mem::take(&mut *self.lock());
        let mut v: Vec<Flow> = flows.into_values().collect();
        v.sort_by_key(|f| f.key.aggregate);
        for mut f in v {
            if f.npackets >= self.mincount && (f.nlines > 0 || !f.written) {
                self.output(&mut f);
            }
            if self.gzip && f.written {
                self.compress(&f.filename);
            }
        }
    }

    fn record_batch(&self, cx: &mut Cx<'_>, batch: &Batch) {
        let mut flows = self.lock();
        let recorded = batch.iter().filter(|p| self.record(&mut flows, p)).count();
        drop(flows);
        self.count.add(cx.thread(), recorded as u64);
        self.skipped
            .add(cx.thread(), (batch.len() - recorded) as u64);
    }
}

impl Drop for ToIPFlowDumps {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Element for ToIPFlowDumps {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("flush", |e, _, _| {
            e.flush();
            Ok(())
        }),
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("skipped", |e, _| e.skipped.get().to_string()),
        Handler::read("nflows", |e, _| e.lock().len().to_string()),
        Handler::read("errors", |e, _| e.errors.get().to_string()),
        Handler::read("output_pattern", |e, _| e.pattern.text().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.pull_input {
            crate::common::add_pull_sink_task(ix);
        }
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.record_batch(cx, &batch);
        if cx.noutputs() > 0 {
            cx.push(0, batch);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(0, max)?;
        self.record_batch(cx, &b);
        Some(b)
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        crate::common::run_pull_sink(cx, self.burst, |cx, b| self.record_batch(cx, b))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use std::path::Path;

    /// tcpdump text (written for this test): a TCP connection, a UDP
    /// packet, and an ICMP packet (not a TCP/UDP flow).
    const TEXT: &str = "\
1000000000.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [S], seq 1000, win 8192, options [mss 1460], length 0
1000000001.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [S.], seq 5000, ack 1001, win 65535, length 0
1000000002.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [.], ack 1, win 8192, length 0
1000000003.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [P.], seq 1:101, ack 1, win 8192, length 100
1000000004.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [.], ack 101, win 65535, length 0
1000000007.500000 IP 10.0.0.3.4000 > 10.0.0.4.5000: UDP, length 32
1000000008.500000 IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 7, seq 1, length 64
";

    fn run_text(dir: &Path, text: &str, args: &str) -> paraclick_runtime::Router {
        run_text_to(dir, "out", text, args)
    }

    /// Runs `text` through AggregateIPFlows into ToIPFlowDumps writing
    /// files under `dir/sub`.
    fn run_text_to(dir: &Path, sub: &str, text: &str, args: &str) -> paraclick_runtime::Router {
        let a = dir.join("in.txt");
        std::fs::write(&a, text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "FromTcpdump({}, STOP true, CHECKSUM true) -> AggregateIPFlows \
             -> t :: ToIPFlowDumps({}{args}) -> Discard;",
                q(&a),
                q(&dir.join(sub).join("%s-%S-%p-%n.txt"))
            ),
        );
        run(&r);
        r
    }

    /// The files in `dir`, sorted by name, with their bytes.
    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// What FromIPSummaryDump reads from `path`, as ToIPSummaryDump text.
    fn read_back(path: &Path, out: &Path) -> String {
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true) -> ToIPSummaryDump({}, HEADER false, \
             CONTENTS ntimestamp ip_src sport ip_dst dport ip_proto direction ip_id \
             tcp_flags tcp_seq tcp_ack payload_len tcp_window tcp_opt);",
                q(path),
                q(out)
            ),
        );
        run(&r);
        assert_eq!(handler(&r, "f.errors"), "0", "{}", path.display());
        drop(r);
        std::fs::read_to_string(out).unwrap()
    }

    #[test]
    fn binary_flow_files_read_back_like_text_ones() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let args = ", IP_ID true, TCP_WINDOW true, TCP_OPT true";
        drop(run_text_to(d, "text", TEXT, args));
        drop(run_text_to(d, "bin", TEXT, &format!("{args}, BINARY true")));
        let (text, bin) = (files(&d.join("text")), files(&d.join("bin")));
        assert_eq!(text.len(), 2);
        assert_eq!(
            text.iter().map(|f| &f.0).collect::<Vec<_>>(),
            bin.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for ((name, t), (_, b)) in text.iter().zip(&bin) {
            let t = String::from_utf8(t.clone()).unwrap();
            // The same header lines (`!data` in another order), then
            // `!binary` and records.
            let at = b.windows(8).position(|w| w == b"!binary\n").unwrap() + 8;
            let bin_header = String::from_utf8(b[..at].to_vec()).unwrap();
            let mut th: Vec<&str> = t.lines().filter(|l| l.starts_with('!')).collect();
            let mut bh: Vec<&str> = bin_header.lines().collect();
            assert_eq!(bh.pop(), Some("!binary"));
            let words = |l: &str| {
                let mut w: Vec<String> = l.split(' ').map(String::from).collect();
                w.sort();
                w
            };
            assert_eq!(th.len(), bh.len());
            for (x, y) in th.iter_mut().zip(&bh) {
                if x.starts_with("!data") {
                    assert_eq!(words(x), words(y));
                } else {
                    assert_eq!(x, y);
                }
            }
            let records = &b[at..];
            let nrec = t.lines().filter(|l| !l.starts_with('!')).count();
            // Each record: a length word, then the fixed-width columns
            // (ntimestamp 8, direction 1, ip_id 2, then TCP: flags 1,
            // seq 4, payload_len 4, ack 4, window 2, options 1 + n).
            let mut at = 0;
            for _ in 0..nrec {
                let len = u32::from_be_bytes(records[at..at + 4].try_into().unwrap()) as usize;
                assert!(len >= 4 + 8 + 1 + 2 + 4, "{name}");
                at += len;
            }
            assert_eq!(at, records.len(), "{name}: {nrec} records");
            let rt = read_back(&d.join("text").join(name), &d.join("rt"));
            let rb = read_back(&d.join("bin").join(name), &d.join("rb"));
            assert_eq!(rt.lines().count(), nrec);
            assert_eq!(rt, rb, "{name}");
        }
        // The columns in the order, and the SYN's record in the bytes, that
        // real Click 2.x's ToIPFlowDumps writes with these keywords.
        let tcp_bin = &bin[0].1;
        let hdr = String::from_utf8_lossy(tcp_bin);
        assert!(hdr.contains(
            "!data ntimestamp tcp_seq payload_len tcp_ack ip_id tcp_window tcp_flags direction tcp_ntopt\n"
        ));
        let at = tcp_bin.windows(8).position(|w| w == b"!binary\n").unwrap() + 8;
        assert_eq!(
            tcp_bin[at..at + 35],
            [
                0, 0, 0, 35, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0x20, 0, 2, 0, 4, 2, 4, 5, 0xb4
            ]
        );
        let udp_hdr = String::from_utf8_lossy(&bin[1].1);
        assert!(udp_hdr.contains("!data ntimestamp payload_len ip_id direction\n"));
        // The TCP flow's SYN keeps its relative numbers and MSS option.
        let tcp = read_back(&d.join("bin").join(&bin[0].0), &d.join("rb"));
        let first: Vec<&str> = tcp.lines().next().unwrap().split(' ').collect();
        assert_eq!(
            first[1..],
            [
                "10.0.0.1", "1234", "10.0.0.2", "80", "T", ">", "0", "S", "0", "0", "0", "8192",
                "mss1460"
            ]
        );
    }

    #[test]
    fn gzip_compresses_completed_flow_files() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // TEXT and a 300-packet UDP flow, which is written in pieces.
        let mut text = TEXT.to_string();
        for i in 0..300u32 {
            text += &format!(
                "{}.000001 IP 10.9.0.1.999 > 10.9.0.2.53: UDP, length {}\n",
                2_000_000_000 + i,
                i % 40
            );
        }
        for (sub, extra) in [
            ("plain", ""),
            ("gz", ", GZIP true"),
            ("bgz", ", BINARY true, GZIP true"),
        ] {
            let r = run_text_to(d, sub, &text, &format!(", TCP_OPT true{extra}"));
            if sub == "gz" {
                // Completed files only: the long flow's first pieces are
                // written uncompressed, nothing is compressed yet.
                let now = files(&d.join(sub));
                assert_eq!(now.len(), 1);
                assert!(now[0].0.starts_with("10.9.0.1-999-U-") && now[0].0.ends_with(".txt"));
            }
            r.write_handler("t.flush", "").unwrap();
            assert_eq!(handler(&r, "t.errors"), "0");
        }
        drop(run_text_to(d, "bin", &text, ", TCP_OPT true, BINARY true"));
        for (sub, plain) in [("gz", "plain"), ("bgz", "bin")] {
            let gz = files(&d.join(sub));
            let plain = files(&d.join(plain));
            assert_eq!(gz.len(), 3);
            assert_eq!(gz.len(), plain.len());
            for ((gname, gbytes), (pname, pbytes)) in gz.iter().zip(&plain) {
                assert_eq!(gname, &format!("{pname}.gz"));
                assert_eq!(&gbytes[..2], [0x1f, 0x8b], "gzip magic");
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&gbytes[..])
                    .read_to_end(&mut out)
                    .unwrap();
                assert_eq!(&out, pbytes, "{gname}");
            }
        }
    }

    /// The contents of the one file in `dir/out` whose name starts with
    /// `prefix`, and the aggregate number ending its name.
    fn file_agg(dir: &Path, prefix: &str) -> Option<(String, u32)> {
        let mut found = std::fs::read_dir(dir.join("out"))
            .ok()?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let agg = name.trim_end_matches(".txt").rsplit('-').next().unwrap();
                (
                    std::fs::read_to_string(e.path()).unwrap(),
                    agg.parse().unwrap(),
                )
            })
            .collect::<Vec<_>>();
        assert!(found.len() <= 1);
        found.pop()
    }

    fn file(dir: &Path, prefix: &str) -> Option<String> {
        file_agg(dir, prefix).map(|f| f.0)
    }

    #[test]
    fn one_file_per_flow_in_clicks_format() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_text(dir.path(), TEXT, "");
        assert_eq!(handler(&r, "t.count"), "6");
        assert_eq!(handler(&r, "t.skipped"), "0"); // AggregateIPFlows drops ICMP
        assert_eq!(handler(&r, "t.nflows"), "2");
        assert!(
            file(dir.path(), "10.0.0.1").is_none(),
            "written before the end"
        );
        r.write_handler("t.flush", "").unwrap();
        assert_eq!(handler(&r, "t.nflows"), "0");
        assert_eq!(handler(&r, "t.errors"), "0");
        let (tcp, agg) = file_agg(dir.path(), "10.0.0.1-1234-T-").unwrap();
        assert_eq!(
            tcp,
            format!(
                "!IPSummaryDump 1.3\n\
                 !flowid 10.0.0.1 1234 10.0.0.2 80 T\n\
                 !aggregate {agg}\n\
                 !data ntimestamp direction tcp_flags tcp_seq payload_len tcp_ack\n\
                 !firstseq > 1000\n\
                 !firstseq < 5000\n\
                 !firsttime 1000000000.499999999\n\
                 0.000000001 > S 0 0 0\n\
                 1.000000001 < SA 0 0 1\n\
                 2.000000001 > A 1 0 1\n\
                 3.000000001 > PA 1 100 1\n\
                 4.000000001 < A 1 0 101\n"
            )
        );
        let (udp, agg2) = file_agg(dir.path(), "10.0.0.3-4000-U-").unwrap();
        assert_ne!(agg, agg2);
        assert_eq!(
            udp,
            format!(
                "!IPSummaryDump 1.3\n\
                 !flowid 10.0.0.3 4000 10.0.0.4 5000 U\n\
                 !aggregate {agg2}\n\
                 !data ntimestamp direction payload_len\n\
                 !firsttime 1000000007.499999999\n\
                 0.000000001 > 32\n"
            )
        );
    }

    #[test]
    fn mincount_absolute_and_extra_columns_and_drop_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_text(
            dir.path(),
            TEXT,
            ", MINCOUNT 2, ABSOLUTE_TIME true, ABSOLUTE_SEQ true, TCP_WINDOW true, IP_ID true, TCP_OPT true",
        );
        drop(r);
        assert!(
            file(dir.path(), "10.0.0.3").is_none(),
            "1-packet flow under MINCOUNT"
        );
        let t = file(dir.path(), "10.0.0.1-1234-T-").unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[3],
            "!data ntimestamp direction ip_id tcp_flags tcp_seq payload_len tcp_ack tcp_window tcp_ntopt"
        );
        assert!(!t.contains("!firstseq") && !t.contains("!firsttime"), "{t}");
        assert_eq!(lines[4], "1000000000.500000000 > 0 S 1000 0 0 8192 mss1460");
        assert_eq!(lines[8], "1000000004.500000000 < 0 A 5001 0 1101 65535 .");
    }

    #[test]
    fn long_flows_are_written_in_pieces_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..300u32 {
            let (a, b) = if i % 3 == 2 {
                ("10.9.0.2.53", "10.9.0.1.999")
            } else {
                ("10.9.0.1.999", "10.9.0.2.53")
            };
            text += &format!("{}.{:06} IP {a} > {b}: UDP, length {}\n", 50 + i, i, i % 40);
        }
        let r = run_text(dir.path(), &text, ", ABSOLUTE_TIME true");
        // 300 packets: the first 256 written in two pieces of 128 already.
        let part = file(dir.path(), "10.9.0.1-999-U-").unwrap();
        assert_eq!(part.lines().filter(|l| !l.starts_with('!')).count(), 256);
        r.write_handler("t.flush", "").unwrap();
        let all = file(dir.path(), "10.9.0.1-999-U-").unwrap();
        assert_eq!(
            all.lines().filter(|l| l.starts_with('!')).count(),
            4,
            "one header"
        );
        // FromIPSummaryDump reads the flow file back.
        let path = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let back = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true) -> s :: TestSink;",
                q(&path)
            ),
        );
        run(&back);
        assert_eq!(handler(&back, "f.errors"), "0");
        let got = sink(&back, "s");
        assert_eq!(got.len(), 300);
        for (i, p) in got.iter().enumerate() {
            assert_eq!(p.timestamp().sec(), 50 + i as i64);
            assert_eq!(p.anno().paint, u8::from(i % 3 == 2), "packet {i}");
            assert_eq!(p.len() + p.anno().extra_length as usize, 28 + i % 40);
        }
    }

    #[test]
    fn packets_without_aggregate_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, TEXT).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "FromTcpdump({}, STOP true) -> t :: ToIPFlowDumps({}) -> c :: Counter -> Discard;",
                q(&a),
                q(&dir.path().join("out/%n"))
            ),
        );
        run(&r);
        assert_eq!(handler(&r, "t.skipped"), "7");
        assert_eq!(handler(&r, "t.count"), "0");
        assert_eq!(handler(&r, "c.count"), "7", "packets pass through");
        r.write_handler("t.flush", "").unwrap();
        assert!(!dir.path().join("out").exists());
    }

    #[test]
    fn pull_input_runs_its_own_task() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, TEXT).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}) -> AggregateIPFlows -> Queue(100) -> t :: ToIPFlowDumps({});",
                q(&a),
                q(&dir.path().join("out/%s-%S-%p-%n.txt"))
            ),
        );
        run_until(&r, |r| handler(r, "t.count") == "6");
        r.write_handler("t.flush", "").unwrap();
        let t = file(dir.path(), "10.0.0.1-1234-T-").unwrap();
        assert_eq!(t.lines().filter(|l| !l.starts_with('!')).count(), 5);
    }

    #[test]
    fn bad_configurations() {
        assert!(
            build_err(&full_registry(), "Idle -> ToIPFlowDumps(x%q) -> Discard").contains("%q")
        );
        assert!(build_err(
            &full_registry(),
            "Idle -> ToIPFlowDumps(x%n, BINARY 3) -> Discard"
        )
        .contains("BINARY"));
        assert!(build_err(
            &full_registry(),
            "Idle -> ToIPFlowDumps(x%n, GZIP 3) -> Discard"
        )
        .contains("GZIP"));
        // NOTIFIER is accepted (with a warning), every other keyword too.
        build(
            &full_registry(),
            "Idle -> a :: AggregateIPFlows -> ToIPFlowDumps(x%n, NOTIFIER a, BINARY true, \
             GZIP true, ALL_TCP_OPT true, TCP_WINDOW true, IP_ID true) -> Discard",
        );
    }
}
