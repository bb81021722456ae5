//! # FromDump
//!
//! FromDump(FILENAME [, keywords STOP, TIMING, SAMPLE, FORCE_IP, START, START_AFTER, END, END_AFTER, INTERVAL, END_CALL, FILEPOS, ACTIVE, BURST, MMAP])
//!
//! Reads packets from a tcpdump (libpcap) file.
//!
//! Reads packets from a file produced by `tcpdump -w FILENAME` or ToDump
//! and emits them, each with its timestamp annotation set from the file,
//! optionally stopping the router when there are no more packets. Both
//! byte orders and both the microsecond (`0xA1B2C3D4`) and nanosecond
//! (`0xA1B23C4D`) variants of the format are read. FILENAME `-` is the
//! standard input. The file is read as a stream through a bounded buffer,
//! so traces of any size use the same memory.
//!
//! Packets captured shorter than they were on the wire (the record's
//! captured length below its original length, as with `tcpdump -s 68`)
//! are emitted with the captured bytes only, as in Click; their extra
//! length annotation holds the missing byte count.
//!
//! For Ethernet traces each packet's link-layer (MAC) header annotation is
//! set. For raw-IP link types (`IP`: DLT_RAW 12/14/101, LINKTYPE_IPV4 228)
//! the network (IP) header annotation is set on packets that hold an IPv4
//! header.
//!
//! A corrupt or truncated file (a record header cut short, a record longer
//! than the file) ends the trace as if the file ended there: the first such
//! error is printed to standard error and counted in `errors`; nothing
//! panics.
//!
//! Ports: no inputs, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`). In push context FromDump owns a task that emits up to
//! BURST packets per run; in pull context each pull reads up to the number
//! of packets asked for.
//!
//! Arguments:
//! - `FILENAME` (string): the file to read: a regular file (a FIFO or a
//!   device is refused, since opening or reading it could block while the
//!   configuration is built), or `-` for the standard input.
//! - `STOP` (boolean, default false): ask the router to stop when the file
//!   is done (or the END time is reached).
//! - `TIMING` (boolean, default false): keep the original spacing between
//!   packets. The first packet goes at once; each later one when as much
//!   time has passed on the router's clock (simulated under `--simtime`)
//!   as separates it from the first in the trace. Without
//!   TIMING, a full queue downstream pauses the reading rather than
//!   dropping packets.
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with this
//!   probability (fixed-point; see `sampling_prob`).
//! - `FORCE_IP` (boolean, default false): emit only IPv4 packets, with their
//!   IP header annotation set (Ethernet, 802.1Q, Linux SLL, BSD loopback and
//!   raw-IP link types are understood). Other packets go to output 1 if it
//!   exists; otherwise they are skipped.
//! - `START` (seconds since the epoch): emit only packets stamped at or
//!   after this time. `START_AFTER` (time): skip the first T seconds of the
//!   trace. At most one of the two.
//! - `END` (seconds since the epoch): end at the first packet stamped at or
//!   after this time. `END_AFTER` (time): end T seconds after the first
//!   timestamp in the trace. `INTERVAL` (time): end T seconds after the
//!   first packet emitted. At most one of the three.
//! - `END_CALL` (write handler and value): called when the trace ends.
//!   Default: `active false` on this element. Exclusive with STOP.
//! - `FILEPOS` (byte offset): start reading records at this offset of the
//!   file (which must be the start of a record).
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `BURST` (integer, default 1; a paraclick addition): packets emitted
//!   per task run. 1 is Click's one packet per run: each packet goes
//!   through the whole push path before the next is read, and two sources
//!   alternate packet by packet, so Print output and other side effects
//!   come out in Click's order. A larger BURST (32 is typical) costs about
//!   half the instructions per packet, but each element then handles a
//!   whole batch before the next one: what several elements print
//!   interleaves per batch, not per packet (packets still meet again in
//!   arrival order where paths join).
//! - `MMAP` (boolean): accepted for compatibility and ignored.
//!
//! gzip- and bzip2-compressed files and pcapng files are not read (an error
//! at configuration says so).
//!
//! Handlers:
//! - `count` (read): packets emitted so far. `reset_counts` (write): resets it.
//! - `active` (read/write): boolean.
//! - `sampling_prob` (read): the sampling probability actually used.
//! - `encap` (read): the file's link type (`ETHER`, `IP`, `SLL`, ... or a number).
//! - `filename` (read), `filesize` (read: bytes, or `-` if unknown).
//! - `filepos` (read/write): the file offset of the next record; writing
//!   it restarts reading there.
//! - `packet_filepos` (read): the file offset of the last packet emitted.
//! - `extend_interval` (write, time): moves the END time later and sets
//!   `active` to true.
//! - `reset_timing` (write): restarts TIMING's clock at the next packet.
//! - `errors` (read): corrupt-file errors met (a paraclick addition).
//!
//! Example:
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true) -> CheckIPHeader(14) -> c :: Counter -> Discard;

use crate::common::{
    add_trace_task, encap_name, is_raw_ip, open_input, sample_fixed, sampling_prob_text, EndAction,
    ErrorCount, Produced, Sampler, TimeBounds, Timing, TRACE_BURST,
};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount};
use pcap_file::pcap::PcapReader;
use pcap_file::TsResolution;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

type Reader = PcapReader<Box<dyn Read + Send>>;

/// Size of the pcap file header and of each record header.
const FILE_HEADER: u64 = 24;
const RECORD_HEADER: u64 = 16;
/// A record claiming more captured bytes than this is corrupt.
const MAX_CAPLEN: u32 = 1 << 20;

pub struct FromDump {
    filename: String,
    state: Mutex<State>,
    active: AtomicBool,
    count: PerThreadCount,
    errors: ErrorCount,
    burst: AtomicUsize,
    end: EndAction,
    timing: bool,
    force_ip: bool,
    push: bool,
    two_outputs: bool,
    sample: u32,
    linktype: u32,
    filesize: Option<u64>,
}

struct State {
    reader: Option<Reader>,
    ctl: Ctl,
}

/// Everything but the reader, so a record borrowed from the reader can be
/// processed against it.
struct Ctl {
    linktype: u32,
    nano: bool,
    /// File offset of the next record.
    pos: u64,
    /// File offset of the last packet emitted.
    packet_pos: u64,
    pending: Option<Pending>,
    seen_first: bool,
    output_first: bool,
    bounds: TimeBounds,
    timing: Timing,
    sampler: Sampler,
    /// The trace ended (EOF, END time, or an error).
    done: bool,
}

/// A record read but not emitted yet.
enum Pending {
    /// Held back (END reached, or no packet buffer): its bytes.
    Raw {
        ts: Timestamp,
        orig_len: u32,
        data: Vec<u8>,
        pos: u64,
    },
    /// Built, waiting for its time (TIMING).
    Ready { p: Packet, port: usize, pos: u64 },
}

/// What became of one record.
enum Step {
    Emit(Packet, usize),
    Wait(Packet, usize, Instant),
    Skip,
    End,
    NoBuffer,
}

/// How long FromDump waits before it tries again to make a packet when
/// its thread's packet pool is dry.
const NO_BUFFER_RETRY: Duration = Duration::from_millis(1);

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromDump", "0/1-2", "a/ah", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

struct Opened {
    reader: Reader,
    linktype: u32,
    nano: bool,
    pos: u64,
    size: Option<u64>,
}

/// Opens a pcap file, checks its header, and positions it at `filepos`
/// (the first record by default).
fn open_pcap(name: &str, filepos: Option<u64>) -> Result<Opened, String> {
    let (mut input, size) = open_input(name)?;
    let mut hdr = [0u8; FILE_HEADER as usize];
    let mut got = 0;
    while got < hdr.len() {
        match input.read(&mut hdr[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }
    if got >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b {
        return Err(format!("{name}: gzip-compressed dumps are not supported"));
    }
    if got >= 3 && &hdr[..3] == b"BZh" {
        return Err(format!("{name}: bzip2-compressed dumps are not supported"));
    }
    if got >= 4 && hdr[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        return Err(format!("{name}: pcapng files are not supported"));
    }
    if got == 0 {
        return Err(format!("{name}: empty file"));
    }
    let magic = u32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
    if got < 4 || !matches!(magic, 0xA1B2_C3D4 | 0xA1B2_3C4D | 0xD4C3_B2A1 | 0x4D3C_B2A1) {
        return Err(format!("{name}: not a tcpdump file (bad magic number)"));
    }
    if got < hdr.len() {
        return Err(format!("{name}: truncated tcpdump file header"));
    }
    let mut pos = FILE_HEADER;
    if let Some(fp) = filepos {
        if fp < FILE_HEADER {
            return Err(format!("FILEPOS {fp} is inside the file header"));
        }
        if name == "-" {
            return Err("FILEPOS needs a file, not the standard input".into());
        }
        let mut f = crate::common::open_regular(name)?;
        f.seek(SeekFrom::Start(fp))
            .map_err(|e| format!("{name}: {e}"))?;
        input = Box::new(f);
        pos = fp;
    }
    let chained: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(hdr).chain(input));
    let reader = PcapReader::new(chained).map_err(|e| format!("{name}: {e}"))?;
    let h = reader.header();
    Ok(Opened {
        linktype: u32::from(h.datalink),
        nano: h.ts_resolution == TsResolution::NanoSecond,
        reader,
        pos,
        size,
    })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromDump, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let timing = a.read_p::<bool>("TIMING").unwrap_or(false);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let sample = a.read::<f64>("SAMPLE").unwrap_or(1.0);
    let force_ip = a.read::<bool>("FORCE_IP").unwrap_or(false);
    let bounds = TimeBounds::read(&mut a)?;
    let end_call = a.read::<String>("END_CALL");
    let filepos = a.read::<u64>("FILEPOS");
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let burst = a.read::<usize>("BURST").unwrap_or(TRACE_BURST);
    let _mmap = a.read::<bool>("MMAP");
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let sample = sample_fixed(sample)?;
    let end = EndAction::from_args(stop, end_call)?;
    cx.allowed_file(&filename)?;
    let o = open_pcap(&filename, filepos)?;
    let ctl = Ctl {
        linktype: o.linktype,
        nano: o.nano,
        pos: o.pos,
        packet_pos: o.pos,
        pending: None,
        seen_first: false,
        output_first: false,
        bounds,
        timing: Timing::default(),
        sampler: Sampler::new(sample, filename.len() as u64 ^ 0x5eed),
        done: false,
    };
    Ok(FromDump {
        filename,
        linktype: o.linktype,
        filesize: o.size,
        state: Mutex::new(State {
            reader: Some(o.reader),
            ctl,
        }),
        active: AtomicBool::new(active),
        count: PerThreadCount::new(cx.nthreads),
        errors: ErrorCount::default(),
        burst: AtomicUsize::new(burst),
        end,
        timing,
        force_ip,
        push: cx.output_is_push(0),
        two_outputs: cx.noutputs >= 2,
        sample,
    })
}

/// Where the IPv4 header of a frame of link type `linktype` starts, and
/// its length, if the frame holds a plausible one.
pub(crate) fn ip_header_at(linktype: u32, d: &[u8]) -> Option<(usize, usize)> {
    let be16 = |at: usize| d.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let off = match linktype {
        1 => match be16(12)? {
            0x0800 => 14,
            0x8100 | 0x88a8 if be16(16)? == 0x0800 => 18,
            _ => return None,
        },
        l if is_raw_ip(l) => 0,
        113 if be16(14)? == 0x0800 => 16,
        0 | 108 => {
            let f = d.get(0..4)?;
            let be = u32::from_be_bytes([f[0], f[1], f[2], f[3]]);
            let le = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
            if be != 2 && (linktype == 108 || le != 2) {
                return None;
            }
            4
        }
        _ => return None,
    };
    let b = *d.get(off)?;
    let hl = usize::from(b & 15) * 4;
    (b >> 4 == 4 && hl >= 20 && d.len() >= off + hl).then_some((off, hl))
}

impl Ctl {
    /// Decides what to do with one record.
    fn process(
        &mut self,
        e: &FromDump,
        ts: Timestamp,
        orig_len: u32,
        data: &[u8],
        now: Instant,
    ) -> Step {
        if !self.seen_first {
            self.seen_first = true;
            self.bounds.first_in_trace(ts);
        }
        if self.bounds.before_start(ts) {
            return Step::Skip;
        }
        if self.bounds.at_end(ts) {
            return Step::End;
        }
        if !self.sampler.keep() {
            return Step::Skip;
        }
        let ip = ip_header_at(self.linktype, data);
        let port = match (e.force_ip, ip) {
            (true, None) if e.two_outputs => 1,
            (true, None) => return Step::Skip,
            _ => 0,
        };
        let Some(mut p) = Packet::from_slice(data) else {
            return Step::NoBuffer;
        };
        p.set_timestamp(ts);
        p.anno_mut().extra_length = orig_len.saturating_sub(data.len() as u32);
        if self.linktype == 1 {
            p.set_mac_header(0);
        }
        if let Some((off, hl)) = ip {
            if e.force_ip || is_raw_ip(self.linktype) {
                p.set_network_header(off, hl);
            }
        }
        if !self.output_first {
            self.output_first = true;
            self.bounds.first_output(ts);
        }
        if e.timing {
            if let Some(due) = self.timing.wait_until(ts, now) {
                return Step::Wait(p, port, due);
            }
        }
        Step::Emit(p, port)
    }
}

impl FromDump {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn who(&self, cx: &Cx<'_>) -> String {
        format!("{} :: FromDump", cx.element_name())
    }

    /// Reads up to `max` packets into output batches.
    fn produce(&self, cx: &mut Cx<'_>, max: usize) -> Produced {
        let mut r = Produced::default();
        if !self.active.load(Ordering::Relaxed) {
            return Produced::idle();
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.ctl.done {
            return Produced::idle();
        }
        let now = cx.now(); // the router's clock: simulated under --simtime
        let budget = max.saturating_mul(8).max(256);
        let mut emitted = 0;
        let mut examined = 0;
        let emit = |r: &mut Produced, ctl: &mut Ctl, p: Packet, port: usize, pos: u64| {
            ctl.packet_pos = pos;
            let b = if port == 0 { &mut r.out } else { &mut r.out1 };
            b.get_or_insert_with(Batch::new).push(p);
        };
        while emitted < max && examined < budget {
            examined += 1;
            // A record held back earlier comes first.
            let (step, pos) = match st.ctl.pending.take() {
                Some(Pending::Ready { p, port, pos }) => {
                    if self.timing {
                        if let Some(due) = st.ctl.timing.wait_until(p.timestamp(), now) {
                            st.ctl.pending = Some(Pending::Ready { p, port, pos });
                            r.wait = Some(due);
                            break;
                        }
                    }
                    (Step::Emit(p, port), pos)
                }
                Some(Pending::Raw {
                    ts,
                    orig_len,
                    data,
                    pos,
                }) => {
                    let step = st.ctl.process(self, ts, orig_len, &data, now);
                    if matches!(step, Step::End | Step::NoBuffer) {
                        st.ctl.pending = Some(Pending::Raw {
                            ts,
                            orig_len,
                            data,
                            pos,
                        });
                    }
                    (step, pos)
                }
                None => {
                    let pos = st.ctl.pos;
                    let next = match st.reader.as_mut() {
                        Some(reader) => reader.next_raw_packet(),
                        None => None,
                    };
                    match next {
                        None => (Step::End, pos),
                        Some(Err(e)) => {
                            let msg = match e {
                                pcap_file::PcapError::IoError(ref io)
                                    if io.kind() == std::io::ErrorKind::UnexpectedEof =>
                                {
                                    format!("truncated packet record at file offset {pos}")
                                }
                                e => format!("corrupt record at file offset {pos}: {e}"),
                            };
                            self.errors
                                .report(&self.who(cx), &format!("{}: {msg}", self.filename));
                            st.reader = None;
                            (Step::End, pos)
                        }
                        Some(Ok(raw)) if raw.incl_len > MAX_CAPLEN => {
                            self.errors.report(
                                &self.who(cx),
                                &format!(
                                    "{}: corrupt record at file offset {pos} (captured length {})",
                                    self.filename, raw.incl_len
                                ),
                            );
                            st.reader = None;
                            (Step::End, pos)
                        }
                        Some(Ok(raw)) => {
                            st.ctl.pos += RECORD_HEADER + u64::from(raw.incl_len);
                            let frac = if st.ctl.nano {
                                raw.ts_frac
                            } else {
                                raw.ts_frac.wrapping_mul(1000)
                            };
                            let ts =
                                Timestamp(i64::from(raw.ts_sec) * 1_000_000_000 + i64::from(frac));
                            let step = st.ctl.process(self, ts, raw.orig_len, &raw.data, now);
                            if matches!(step, Step::End | Step::NoBuffer) {
                                st.ctl.pending = Some(Pending::Raw {
                                    ts,
                                    orig_len: raw.orig_len,
                                    data: raw.data.to_vec(),
                                    pos,
                                });
                            }
                            (step, pos)
                        }
                    }
                }
            };
            match step {
                Step::Emit(p, port) => {
                    emit(&mut r, &mut st.ctl, p, port, pos);
                    emitted += 1;
                }
                Step::Wait(p, port, due) => {
                    st.ctl.pending = Some(Pending::Ready { p, port, pos });
                    r.wait = Some(due);
                    break;
                }
                Step::Skip => r.progress = true,
                Step::NoBuffer => {
                    // Its thread's pool is dry (packets held downstream):
                    // try again in a while, its thread asleep meanwhile,
                    // rather than polling until buffers come back.
                    if let Some(at) = now.checked_add(NO_BUFFER_RETRY) {
                        cx.wake_at(at);
                    }
                    break;
                }
                Step::End => {
                    st.ctl.done = true;
                    r.ended = true;
                    break;
                }
            }
        }
        drop(guard);
        if emitted > 0 {
            r.progress = true;
            self.count.add(cx.thread(), emitted as u64);
        }
        r
    }

    /// The link type of the file (for ToDump's USE_ENCAP_FROM).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// Packets emitted so far.
    pub fn count(&self) -> u64 {
        self.count.get()
    }

    fn set_filepos(&self, fp: u64) -> Result<(), String> {
        let o = open_pcap(&self.filename, Some(fp))?;
        let mut st = self.lock();
        st.reader = Some(o.reader);
        st.ctl.pos = fp;
        st.ctl.pending = None;
        st.ctl.done = false;
        Ok(())
    }

    fn extend_interval(&self, d: Duration) {
        let mut st = self.lock();
        st.ctl.bounds.extend(d);
        st.ctl.done = false;
        drop(st);
        self.active.store(true, Ordering::Relaxed);
    }
}

impl paraclick_elements::control::quit_watcher::Finishes for FromDump {
    fn finished(&self) -> bool {
        self.lock().ctl.done
    }
}

impl Element for FromDump {
    /// Whether its file has ended, to QuitWatcher.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(
            want,
            FromDump,
            dyn paraclick_elements::control::quit_watcher::Finishes => |e| e
        )
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.count.reset();
            Ok(())
        }),
        Handler::read("sampling_prob", |e, _| sampling_prob_text(e.sample)),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("encap", |e, _| encap_name(e.linktype)),
        Handler::read("filename", |e, _| e.filename.clone()),
        Handler::read("filesize", |e, _| {
            e.filesize.map_or_else(|| "-".into(), |s| s.to_string())
        }),
        Handler::rw(
            "filepos",
            |e, _| e.lock().ctl.pos.to_string(),
            |e, v, hx| e.set_filepos(hx.arg(v)?),
        ),
        Handler::read("packet_filepos", |e, _| e.lock().ctl.packet_pos.to_string()),
        Handler::write("extend_interval", |e, v, hx| {
            e.extend_interval(hx.arg(v)?);
            Ok(())
        }),
        Handler::write("reset_timing", |e, _, _| {
            e.lock().ctl.timing.reset();
            Ok(())
        }),
        Handler::read("errors", |e, _| e.errors.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        add_trace_task(ix, self.push, self.timing);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        self.produce(cx, self.burst.load(Ordering::Relaxed))
            .finish_push(cx, &self.end, &self.active)
    }

    fn run_timer(&self, _cx: &mut Cx<'_>, _timer: usize) {}

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        self.produce(cx, max.max(1))
            .finish(cx, &self.end, &self.active)
            .0
    }

    fn queued(&self) -> usize {
        usize::from(matches!(
            self.lock().ctl.pending,
            Some(Pending::Ready { .. })
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::*;
    use paraclick_runtime::testing::assert_err;

    /// Real time: with its thread's pool dry (a sink that leaks every
    /// packet), FromDump waits for buffers with its thread asleep, trying
    /// again each millisecond (the worker naps on its time: 20 or more
    /// naps in 100 ms); it polled, never napping on a time.
    #[test]
    fn a_dry_pool_puts_it_to_sleep_between_tries() {
        struct Leak;
        impl paraclick_runtime::Element for Leak {
            fn push(&self, _cx: &mut Cx<'_>, _port: usize, b: Batch) {
                std::mem::forget(b);
            }
        }
        let mut reg = full_registry();
        reg.register(ClassSpec::element("Leak", "1/0", "h", |cx| {
            cx.args().complete()?;
            Ok(Leak)
        }));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.pcap");
        let f = eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x10, 0);
        let cap = paraclick_packet::pool::default_capacity();
        let recs: Vec<Rec<'_>> = (0..cap as u32 + 100)
            .map(|i| Rec {
                sec: 1,
                frac: i,
                orig_len: f.len() as u32,
                data: &f,
            })
            .collect();
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        let r = build(&reg, &format!("f :: FromDump({}) -> Leak;", q(&path)));
        let naps = std::sync::atomic::AtomicU64::new(u64::MAX);
        run_until(&r, |r| {
            if handler(r, "f.count") != cap.to_string() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
            let p0 = r.parks();
            std::thread::sleep(Duration::from_millis(100));
            naps.store(r.parks() - p0, std::sync::atomic::Ordering::Relaxed);
            true
        });
        let naps = naps.load(std::sync::atomic::Ordering::Relaxed);
        assert!(naps >= 20, "{naps} naps in 100 ms of a dry pool");
    }

    fn frames() -> Vec<Vec<u8>> {
        vec![
            eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x02, 0),
            eth_tcp([10, 0, 0, 2], [10, 0, 0, 1], 80, 1234, 0x12, 30),
            eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x10, 100),
        ]
    }

    /// Three records; the last captured short (60 of its 154 bytes).
    fn records(f: &[Vec<u8>], nano: bool) -> Vec<Rec<'_>> {
        let frac = |us: u32, extra: u32| if nano { us * 1000 + extra } else { us };
        vec![
            Rec {
                sec: 1_000_000_000,
                frac: frac(1, 7),
                orig_len: f[0].len() as u32,
                data: &f[0],
            },
            Rec {
                sec: 1_000_000_000,
                frac: frac(500_000, 0),
                orig_len: f[1].len() as u32,
                data: &f[1],
            },
            Rec {
                sec: 1_000_000_001,
                frac: frac(999_999, 999),
                orig_len: f[2].len() as u32,
                data: &f[2][..60],
            },
        ]
    }

    #[test]
    fn reads_all_four_variants() {
        let dir = tempfile::tempdir().unwrap();
        let f = frames();
        for big in [false, true] {
            for nano in [false, true] {
                let path = dir.path().join(format!("t-{big}-{nano}.pcap"));
                let bytes = pcap_bytes(big, nano, 65535, 1, &records(&f, nano));
                std::fs::write(&path, &bytes).unwrap();
                let r = build(
                    &full_registry(),
                    &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
                );
                run(&r);
                let got = sink(&r, "s");
                assert_eq!(got.len(), 3, "big {big} nano {nano}");
                assert_eq!(got[0].data(), &f[0][..]);
                assert_eq!(got[1].data(), &f[1][..]);
                assert_eq!(
                    got[2].data(),
                    &f[2][..60],
                    "truncated capture: caplen bytes"
                );
                let sub = |us: u32, ns: u32| if nano { us * 1000 + ns } else { us * 1000 };
                assert_eq!(got[0].timestamp(), ts(1_000_000_000, sub(1, 7)));
                assert_eq!(got[1].timestamp(), ts(1_000_000_000, sub(500_000, 0)));
                assert_eq!(got[2].timestamp(), ts(1_000_000_001, sub(999_999, 999)));
                assert_eq!(got[0].anno().extra_length, 0);
                assert_eq!(got[2].anno().extra_length, f[2].len() as u32 - 60);
                for p in &got {
                    assert_eq!(p.mac_header_offset(), Some(0));
                    assert!(!p.has_network_header());
                }
                assert_eq!(handler(&r, "f.count"), "3");
                assert_eq!(handler(&r, "f.encap"), "ETHER");
                assert_eq!(handler(&r, "f.filename"), path.display().to_string());
                assert_eq!(handler(&r, "f.filesize"), bytes.len().to_string());
                assert_eq!(handler(&r, "f.filepos"), bytes.len().to_string());
                assert_eq!(handler(&r, "f.errors"), "0");
                assert_eq!(handler(&r, "f.sampling_prob"), "1");
                r.write_handler("f.reset_counts", "").unwrap();
                assert_eq!(handler(&r, "f.count"), "0");
            }
        }
    }

    #[test]
    fn truncated_file_stops_with_one_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = frames();
        let bytes = pcap_bytes(false, false, 65535, 1, &records(&f, false));
        for cut in [bytes.len() - 10, bytes.len() - 60 - 8] {
            let path = dir.path().join(format!("cut{cut}.pcap"));
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let r = build(
                &full_registry(),
                &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
            );
            run(&r);
            assert_eq!(sink(&r, "s").len(), 2);
            assert_eq!(handler(&r, "f.errors"), "1");
            assert_eq!(handler(&r, "f.count"), "2");
        }
        // A record claiming an absurd captured length is corrupt.
        let mut bad = bytes.clone();
        let third = 24 + 16 + f[0].len() + 16 + f[1].len();
        bad[third + 8..third + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        let path = dir.path().join("corrupt.pcap");
        std::fs::write(&path, &bad).unwrap();
        let r = build(
            &full_registry(),
            &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
        );
        run(&r);
        assert_eq!(sink(&r, "s").len(), 2);
        assert_eq!(handler(&r, "f.errors"), "1");
        // A header-only file is an empty trace, not an error.
        let path = dir.path().join("empty-trace.pcap");
        std::fs::write(&path, &bytes[..24]).unwrap();
        let r = build(
            &full_registry(),
            &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
        );
        run(&r);
        assert_eq!(sink(&r, "s").len(), 0);
        assert_eq!(handler(&r, "f.errors"), "0");
    }

    #[test]
    fn bad_files_are_configuration_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, &[u8], &str)] = &[
            ("empty", b"", "empty file"),
            (
                "magic",
                b"hello, this is not a pcap file",
                "bad magic number",
            ),
            ("gzip", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0], "gzip"),
            (
                "short",
                &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0],
                "truncated tcpdump file header",
            ),
        ];
        for (name, bytes, msg) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let e = build_err(
                &full_registry(),
                &format!("FromDump({}) -> TestSink;", q(&path)),
            );
            assert!(e.contains(msg), "{name}: {e}");
        }
        let e = build_err(
            &full_registry(),
            &format!("FromDump({}) -> TestSink;", q(&dir.path().join("none"))),
        );
        assert!(e.contains("No such file"), "{e}");
        let path = dir.path().join("ok.pcap");
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &[])).unwrap();
        for bad in [
            "SAMPLE 2",
            "BURST 0",
            "STOP true, END_CALL x.y",
            "START 1, START_AFTER 1",
        ] {
            let e = build_err(
                &full_registry(),
                &format!("FromDump({}, {bad}) -> TestSink;", q(&path)),
            );
            assert!(!e.is_empty());
        }
    }

    #[test]
    fn force_ip_splits_and_marks_headers() {
        let dir = tempfile::tempdir().unwrap();
        let ip = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 4);
        let mut arp = vec![0xffu8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let mut vlan = Vec::new();
        vlan.extend_from_slice(&ip[..12]);
        vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        vlan.extend_from_slice(&ip[12..]);
        let recs = [
            Rec {
                sec: 1,
                frac: 0,
                orig_len: ip.len() as u32,
                data: &ip,
            },
            Rec {
                sec: 2,
                frac: 0,
                orig_len: 42,
                data: &arp,
            },
            Rec {
                sec: 3,
                frac: 0,
                orig_len: vlan.len() as u32,
                data: &vlan,
            },
        ];
        let path = dir.path().join("mixed.pcap");
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        let r = build(&full_registry(), &format!(
            "f :: FromDump({}, STOP true, FORCE_IP true); f[0] -> a :: TestSink; f[1] -> b :: TestSink;",
            q(&path)
        ));
        run(&r);
        let a = sink(&r, "a");
        let b = sink(&r, "b");
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].network_header_offset(), Some(14));
        assert_eq!(a[0].transport_header_offset(), Some(34));
        assert_eq!(a[1].network_header_offset(), Some(18));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].data(), &arp[..]);
        assert!(!b[0].has_network_header());
        assert_eq!(handler(&r, "f.count"), "3");
        // With one output, non-IP packets are skipped.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP true, FORCE_IP true) -> a :: TestSink;",
                q(&path)
            ),
        );
        run(&r);
        assert_eq!(sink(&r, "a").len(), 2);
        assert_eq!(r.total_drops(), 0);
    }

    #[test]
    fn raw_ip_traces_get_network_headers() {
        let dir = tempfile::tempdir().unwrap();
        let frame = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 0);
        let ip = &frame[14..];
        for lt in [101u32, 12, 228] {
            let path = dir.path().join(format!("raw{lt}.pcap"));
            let recs = [Rec {
                sec: 5,
                frac: 0,
                orig_len: ip.len() as u32,
                data: ip,
            }];
            std::fs::write(&path, pcap_bytes(true, false, 65535, lt, &recs)).unwrap();
            let r = build(
                &full_registry(),
                &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
            );
            run(&r);
            let got = sink(&r, "s");
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].network_header_offset(), Some(0));
            assert_eq!(got[0].network_header_length(), Some(20));
            assert_eq!(got[0].mac_header_offset(), None);
            assert_eq!(handler(&r, "f.encap"), "IP");
        }
        assert_eq!(ip_header_at(1, &[0u8; 10]), None);
        assert_eq!(ip_header_at(113, &[0u8; 10]), None);
        let mut sll = vec![0u8; 16];
        sll[14] = 8;
        sll.extend_from_slice(ip);
        assert_eq!(ip_header_at(113, &sll), Some((16, 20)));
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(ip);
        assert_eq!(ip_header_at(0, &null), Some((4, 20)));
        assert_eq!(ip_header_at(108, &null), None);
        // A bad IP header length is not IP.
        let mut bad = ip.to_vec();
        bad[0] = 0x43;
        assert_eq!(ip_header_at(101, &bad), None);
        assert_eq!(ip_header_at(101, &ip[..19]), None);
    }

    fn ten_packets(dir: &Path) -> std::path::PathBuf {
        let frame = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 0);
        let recs: Vec<Rec<'_>> = (0..10)
            .map(|i| Rec {
                sec: 100 + i,
                frac: 0,
                orig_len: frame.len() as u32,
                data: &frame,
            })
            .collect();
        let path = dir.join("ten.pcap");
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        path
    }

    use std::path::Path;

    #[test]
    fn time_bounds_and_sampling() {
        let dir = tempfile::tempdir().unwrap();
        let path = ten_packets(dir.path());
        let secs = |conf: &str| -> Vec<i64> {
            let r = build(
                &full_registry(),
                &format!(
                    "f :: FromDump({}, STOP true, {conf}) -> s :: TestSink;",
                    q(&path)
                ),
            );
            run(&r);
            sink(&r, "s").iter().map(|p| p.timestamp().sec()).collect()
        };
        assert_eq!(secs("START 103, END 106"), vec![103, 104, 105]);
        assert_eq!(secs("START_AFTER 2, END_AFTER 4s"), vec![102, 103]);
        assert_eq!(secs("START_AFTER 7, INTERVAL 1"), vec![107]);
        assert_eq!(secs("END 100"), Vec::<i64>::new());
        assert_eq!(secs("SAMPLE 0"), Vec::<i64>::new());
        assert_eq!(secs("SAMPLE 1, BURST 3").len(), 10);
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP true, SAMPLE 0.5) -> s :: TestSink;",
                q(&path)
            ),
        );
        assert_eq!(handler(&r, "f.sampling_prob"), "0.5");
    }

    #[test]
    fn quit_watcher_stops_when_the_file_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = ten_packets(dir.path());
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP false) -> s :: TestSink;
                 InfiniteSource(LENGTH 60) -> Discard;
                 QuitWatcher(f);",
                q(&path)
            ),
        );
        run(&r);
        assert_eq!(sink(&r, "s").len(), 10);
    }

    #[test]
    fn default_burst_is_one_packet_per_run() {
        // Two sources into one sink: one packet per task run alternates
        // them packet by packet, as Click's scheduler runs its FromDumps;
        // an explicit BURST hands runs of packets on.
        let dir = tempfile::tempdir().unwrap();
        let path = ten_packets(dir.path());
        let paints = |burst: &str| -> Vec<u8> {
            let r = build(
                &full_registry(),
                &format!(
                    "FromDump({p}, STOP true{burst}) -> Paint(1) -> s :: TestSink; \
                     FromDump({p}, STOP true{burst}) -> Paint(2) -> s;",
                    p = q(&path)
                ),
            );
            run(&r);
            sink(&r, "s").iter().map(|p| p.anno().paint).collect()
        };
        let d = paints("");
        assert_eq!(d.len(), 20);
        assert!(d[..18].chunks(2).all(|c| c[0] != c[1]), "{d:?}");
        let b = paints(", BURST 4");
        assert_eq!(b.len(), 20);
        assert_eq!(&b[..4], &[b[0]; 4], "{b:?}");
    }

    #[test]
    fn inactive_it_costs_no_cpu_until_activated() {
        // Pushing, and pulled by an Unqueue: either way the worker sleeps
        // until the write to `active`, then the file goes through.
        let dir = tempfile::tempdir().unwrap();
        let path = ten_packets(dir.path());
        let f = q(&path);
        sleeps_until_written(
            &format!("f :: FromDump({f}, ACTIVE false) -> c :: Counter -> Discard;"),
            "f",
            "f.active",
            "c.count",
            "10",
        );
        sleeps_until_written(
            &format!(
                "f :: FromDump({f}, ACTIVE false) -> u :: Unqueue -> c :: Counter -> Discard;"
            ),
            "u",
            "f.active",
            "c.count",
            "10",
        );
    }

    #[test]
    fn pull_context_and_end_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = ten_packets(dir.path());
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP true) -> u :: Unqueue(BURST 3) -> s :: TestSink;",
                q(&path)
            ),
        );
        run(&r);
        assert_eq!(sink(&r, "s").len(), 10);
        // Pulled by hand: the default end action sets active to false.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}) -> u :: Unqueue -> s :: TestSink;",
                q(&path)
            ),
        );
        let b = r.pull_from("f", 0, 4).unwrap().unwrap();
        assert_eq!(b.len(), 4);
        assert_eq!(
            handler(&r, "f.packet_filepos"),
            (24 + 3 * (16 + 54)).to_string()
        );
        assert_eq!(handler(&r, "f.filepos"), (24 + 4 * (16 + 54)).to_string());
        assert_eq!(r.pull_from("f", 0, 6).unwrap().unwrap().len(), 6);
        assert_eq!(handler(&r, "f.active"), "true");
        // The end of the file is found at the next pull.
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(handler(&r, "f.active"), "false");
        // Rewind with filepos.
        r.write_handler("f.filepos", "24").unwrap();
        r.write_handler("f.active", "true").unwrap();
        assert_eq!(r.pull_from("f", 0, 100).unwrap().unwrap().len(), 10);
        assert_err(
            r.write_handler("f.filepos", "3"),
            "f.filepos: FILEPOS 3 is inside the file header",
        );
        // END_CALL calls a handler instead.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, END_CALL u.active false) -> u :: Unqueue -> s :: TestSink;",
                q(&path)
            ),
        );
        assert_eq!(r.pull_from("f", 0, 100).unwrap().unwrap().len(), 10);
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(handler(&r, "f.active"), "true");
        assert_eq!(handler(&r, "u.active"), "false");
        // extend_interval moves END and reactivates.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, END 103) -> u :: Unqueue -> s :: TestSink;",
                q(&path)
            ),
        );
        assert_eq!(r.pull_from("f", 0, 100).unwrap().unwrap().len(), 3);
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(handler(&r, "f.active"), "false");
        r.write_handler("f.extend_interval", "2s").unwrap();
        let b = r.pull_from("f", 0, 100).unwrap().unwrap();
        assert_eq!(
            b.iter().map(|p| p.timestamp().sec()).collect::<Vec<_>>(),
            vec![103, 104]
        );
        // FILEPOS starts at a record.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, FILEPOS {}) -> u :: Unqueue -> s :: TestSink;",
                q(&path),
                24 + 8 * 70
            ),
        );
        let b = r.pull_from("f", 0, 100).unwrap().unwrap();
        assert_eq!(
            b.iter().map(|p| p.timestamp().sec()).collect::<Vec<_>>(),
            vec![108, 109]
        );
        // ACTIVE false emits nothing.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, ACTIVE false) -> u :: Unqueue -> s :: TestSink;",
                q(&path)
            ),
        );
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
    }

    #[test]
    fn timing_runs_on_the_router_clock() {
        // Under --simtime, SetTimestamp stamps each packet with the
        // simulated time it was emitted: 40 s apart, as in the trace. (On
        // the wall clock the run would outlast `run`'s 20 s watchdog.)
        let dir = tempfile::tempdir().unwrap();
        let frame = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 0);
        let recs: Vec<Rec<'_>> = (0..3)
            .map(|i| Rec {
                sec: 100 + 40 * i,
                frac: 0,
                orig_len: frame.len() as u32,
                data: &frame,
            })
            .collect();
        let path = dir.path().join("slow.pcap");
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        let r = build_simtime(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP true, TIMING true) -> SetTimestamp -> s :: TestSink;",
                q(&path)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 3);
        for (i, w) in got.windows(2).enumerate() {
            let d = w[1].timestamp().0 - w[0].timestamp().0;
            assert!(
                (40_000_000_000..40_001_000_000).contains(&d),
                "gap {i}: {d} ns"
            );
        }
    }

    #[test]
    fn timing_keeps_the_spacing() {
        let dir = tempfile::tempdir().unwrap();
        let frame = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 0);
        let recs: Vec<Rec<'_>> = (0..4)
            .map(|i| Rec {
                sec: 50,
                frac: i * 25_000,
                orig_len: 54,
                data: &frame,
            })
            .collect();
        let path = dir.path().join("timed.pcap");
        std::fs::write(&path, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromDump({}, STOP true, TIMING true) -> s :: TestSink;",
                q(&path)
            ),
        );
        let t0 = Instant::now();
        run(&r);
        // 75 ms of trace time separate the first and the last packet.
        assert!(
            t0.elapsed() >= Duration::from_millis(74),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(sink(&r, "s").len(), 4);
    }
}

#[cfg(test)]
mod garbage_tests {
    use crate::test_util::*;

    /// Random bytes after a valid file header never panic: the trace just
    /// ends, with at most one error reported.
    #[test]
    fn random_records_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..40 {
            let mut bytes = pcap_bytes(i % 2 == 0, i % 4 < 2, 65535, [1, 101, 113, 0][i % 4], &[]);
            let n = (rnd() % 400) as usize;
            for _ in 0..n {
                // Mostly small lengths, so some records parse.
                let b = rnd() as u8;
                bytes.push(if rnd() % 3 == 0 { b % 64 } else { b });
            }
            let path = dir.path().join(format!("g{i}.pcap"));
            std::fs::write(&path, &bytes).unwrap();
            let r = build(
                &full_registry(),
                &format!(
                    "f :: FromDump({}, STOP true, FORCE_IP true) -> s :: TestSink;",
                    q(&path)
                ),
            );
            run(&r);
            assert!(handler(&r, "f.errors").parse::<u64>().unwrap() <= 1);
        }
    }
}
