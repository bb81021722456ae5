//! Pieces the trace elements share: sampling, replay timing, time bounds,
//! end-of-trace actions, encapsulation names, and small parsers. Not an
//! element.

use paraclick_packet::{Batch, Timestamp};
use paraclick_runtime::{Cx, InitCx};
use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A trace source's push task. Without TIMING the trace has no clock of
/// its own: a full queue downstream pauses the reading (Click's full
/// notifier) instead of dropping packets by the luck of scheduling.
pub(crate) fn add_trace_task(ix: &mut InitCx<'_>, push: bool, timing: bool) {
    if push {
        let t = ix.add_task();
        if !timing {
            ix.wait_for_room(t);
        }
    }
}

/// A trace source's default `BURST`: one packet per task run, as Click's
/// FromDump, FromIPSummaryDump and FromTcpdump emit. Each packet then goes
/// all the way through the push path (every Print, counter and rewriter
/// on it) before the next is read, and two sources alternate packet by
/// packet, so what a configuration prints or writes comes out in Click's
/// order. An explicit `BURST N` hands batches of up to N packets on:
/// fewer task runs (about half the instructions per packet on a pcap
/// router run), with the side effects of one element for the whole batch
/// before the next element's.
pub(crate) const TRACE_BURST: usize = 1;

/// Fixed-point precision of sampling probabilities (as in Click).
pub(crate) const SAMPLING_SHIFT: u32 = 28;

/// Converts a SAMPLE argument to fixed point.
pub(crate) fn sample_fixed(p: f64) -> Result<u32, String> {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return Err("SAMPLE must be between 0 and 1".into());
    }
    Ok((p * (1u64 << SAMPLING_SHIFT) as f64).round() as u32)
}

/// The `sampling_prob` handler text: the probability actually used.
pub(crate) fn sampling_prob_text(fixed: u32) -> String {
    fmt_real(fixed as f64 / (1u64 << SAMPLING_SHIFT) as f64)
}

/// Prints a real number without trailing zeros ("1", "0.5").
pub(crate) fn fmt_real(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let s = format!("{v:.9}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A per-source sampler: keeps each packet with the fixed-point
/// probability (xorshift random numbers; deterministic per element).
pub(crate) struct Sampler {
    prob: u32,
    rng: u64,
}

impl Sampler {
    pub(crate) fn new(prob: u32, seed: u64) -> Sampler {
        Sampler {
            prob,
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    #[inline]
    pub(crate) fn keep(&mut self) -> bool {
        if self.prob >= 1 << SAMPLING_SHIFT {
            return true;
        }
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 36) as u32 & ((1 << SAMPLING_SHIFT) - 1);
        r < self.prob
    }
}

/// Replays a trace with its original spacing: the first packet goes at
/// once, each later one when as much wall time has passed since the first
/// as trace time separates them.
#[derive(Default)]
pub(crate) struct Timing {
    base: Option<(Instant, Timestamp)>,
}

impl Timing {
    /// `None` if a packet stamped `ts` is due now (starting the clock on
    /// the first packet), else the instant it is due.
    pub(crate) fn wait_until(&mut self, ts: Timestamp, now: Instant) -> Option<Instant> {
        let (start, first) = *self.base.get_or_insert((now, ts));
        let delta = ts.0.saturating_sub(first.0);
        if delta <= 0 {
            return None;
        }
        let due = start + Duration::from_nanos(delta as u64);
        (due > now).then_some(due)
    }

    pub(crate) fn reset(&mut self) {
        self.base = None;
    }
}

/// START/START_AFTER and END/END_AFTER/INTERVAL, resolved against the
/// trace as it is read.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TimeBounds {
    pub start_abs: Option<Timestamp>,
    pub start_after: Option<Duration>,
    pub end_abs: Option<Timestamp>,
    pub end_after: Option<Duration>,
    pub interval: Option<Duration>,
}

fn dur_ns(d: Duration) -> i64 {
    d.as_nanos().min(i64::MAX as u128) as i64
}

impl TimeBounds {
    /// Reads the keywords (at most one start and one end keyword).
    pub(crate) fn read(a: &mut paraclick_runtime::Args<'_>) -> Result<TimeBounds, String> {
        let start = a.read::<String>("START");
        let start_after = a.read::<Duration>("START_AFTER");
        let end = a.read::<String>("END");
        let end_after = a.read::<Duration>("END_AFTER");
        let interval = a.read::<Duration>("INTERVAL");
        if start.is_some() && start_after.is_some() {
            return Err("supply at most one of START and START_AFTER".into());
        }
        let ends = [end.is_some(), end_after.is_some(), interval.is_some()];
        if ends.iter().filter(|&&b| b).count() > 1 {
            return Err("supply at most one of END, END_AFTER, and INTERVAL".into());
        }
        let abs = |name: &str, s: Option<String>| -> Result<Option<Timestamp>, String> {
            match s {
                None => Ok(None),
                Some(s) => Timestamp::parse(&s)
                    .map(Some)
                    .ok_or_else(|| format!("{name}: expected time in seconds since the epoch")),
            }
        };
        Ok(TimeBounds {
            start_abs: abs("START", start)?,
            start_after,
            end_abs: abs("END", end)?,
            end_after,
            interval,
        })
    }

    /// The first timestamp in the trace is `ts`: resolve relative bounds.
    pub(crate) fn first_in_trace(&mut self, ts: Timestamp) {
        if let Some(d) = self.start_after.take() {
            self.start_abs = Some(Timestamp(ts.0.saturating_add(dur_ns(d))));
        }
        if let Some(d) = self.end_after.take() {
            self.end_abs = Some(Timestamp(ts.0.saturating_add(dur_ns(d))));
        }
    }

    /// The first packet emitted is stamped `ts`: resolve INTERVAL.
    pub(crate) fn first_output(&mut self, ts: Timestamp) {
        if let Some(d) = self.interval.take() {
            self.end_abs = Some(Timestamp(ts.0.saturating_add(dur_ns(d))));
        }
    }

    #[inline]
    pub(crate) fn before_start(&self, ts: Timestamp) -> bool {
        self.start_abs.is_some_and(|s| ts < s)
    }

    #[inline]
    pub(crate) fn at_end(&self, ts: Timestamp) -> bool {
        self.end_abs.is_some_and(|e| ts >= e)
    }

    /// The `extend_interval` handler: moves the end later.
    pub(crate) fn extend(&mut self, d: Duration) {
        if let Some(e) = self.end_abs.as_mut() {
            e.0 = e.0.saturating_add(dur_ns(d));
        } else if let Some(x) = self.end_after.as_mut() {
            *x += d;
        } else if let Some(x) = self.interval.as_mut() {
            *x += d;
        }
    }
}

/// What a source does when its trace ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EndAction {
    /// `STOP true`: ask the router to stop.
    Stop,
    /// `END_CALL handler value`.
    Call(String, String),
    /// The default: set the element's `active` to false.
    Deactivate,
}

impl EndAction {
    pub(crate) fn from_args(stop: bool, end_call: Option<String>) -> Result<EndAction, String> {
        match (stop, end_call) {
            (true, Some(_)) => Err("END_CALL and STOP are mutually exclusive".into()),
            (true, None) => Ok(EndAction::Stop),
            (false, Some(c)) => {
                let c = c.trim();
                let (h, v) = match c.split_once(char::is_whitespace) {
                    Some((h, v)) => (h.to_string(), v.trim().to_string()),
                    None => (c.to_string(), String::new()),
                };
                if h.is_empty() {
                    return Err("END_CALL: expected a write handler".into());
                }
                Ok(EndAction::Call(h, v))
            }
            (false, None) => Ok(EndAction::Deactivate),
        }
    }

    /// Runs the action once (from a task or a pull, outside any lock).
    pub(crate) fn run(&self, cx: &mut Cx<'_>, active: &AtomicBool) {
        match self {
            EndAction::Stop => cx.request_stop(),
            EndAction::Call(h, v) => {
                if let Err(e) = cx.handler_cx().write(h, v) {
                    eprintln!("{}: END_CALL: {e}", cx.element_name());
                }
            }
            EndAction::Deactivate => active.store(false, Ordering::Relaxed),
        }
    }
}

/// The task of a sink that pulls (ToDump, the summary and flow dumps): it
/// only pulls, so it sleeps while the queues upstream are empty.
pub(crate) fn add_pull_sink_task(ix: &mut InitCx<'_>) {
    let t = ix.add_task();
    ix.sleep_when_empty(t);
}

/// One run of a pull sink's task: pulls up to `burst` packets, hands them
/// to `record`, and passes them on out of output 0 if it is connected.
/// Returns whether anything was pulled.
pub(crate) fn run_pull_sink(
    cx: &mut Cx<'_>,
    burst: usize,
    record: impl FnOnce(&mut Cx<'_>, &Batch),
) -> bool {
    match cx.pull(0, burst) {
        Some(b) => {
            record(cx, &b);
            if cx.noutputs() > 0 {
                cx.push(0, b);
            }
            true
        }
        None => false,
    }
}

/// The task of a socket element (Socket, RawSocket) that sends what it
/// pulls (`pull_input`) and/or receives into its output (`has_output`).
/// Sending only, it sleeps while the queues upstream are empty; receiving
/// polls the socket, so it never sleeps.
pub(crate) fn add_socket_task(ix: &mut InitCx<'_>, pull_input: bool, has_output: bool) {
    if has_output || pull_input {
        let t = ix.add_task();
        if !has_output {
            ix.sleep_when_empty(t);
        }
    }
}

/// What one production attempt of a trace source (FromDump,
/// FromTcpdump, the text traces) gave; its tail, [`Produced::finish`] or
/// [`Produced::finish_push`], is the one all of them run.
#[derive(Default)]
pub struct Produced {
    /// Packets for output 0.
    pub out: Option<Batch>,
    /// Packets for output 1 (FromDump's packets outside its bounds),
    /// always pushed.
    pub out1: Option<Batch>,
    /// Anything happened (a record read, a packet emitted).
    pub progress: bool,
    /// The file ended just now.
    pub ended: bool,
    /// TIMING: when the held packet is due.
    pub wait: Option<Instant>,
    /// Nothing was tried: the source is inactive or its file has ended,
    /// and only a handler write (`active`, `filepos`, `extend_interval`...)
    /// gives it work again.
    pub idle: bool,
}

impl Produced {
    /// An attempt that found the source inactive or its file done.
    pub(crate) fn idle() -> Produced {
        Produced {
            idle: true,
            ..Produced::default()
        }
    }

    /// After the attempt: pushes output 1's packets, runs the end action
    /// if the file just ended, and asks for a wake-up (under --simtime, a
    /// move of the clock) when a held packet is due (timer 0, whose run
    /// does nothing). An idle source (inactive, or its file done) tells
    /// the runtime that only a handler write gives it work, so that its
    /// thread sleeps instead of polling it (or the task pulling it).
    /// Returns the packets to emit and whether anything happened.
    pub(crate) fn finish(
        mut self,
        cx: &mut Cx<'_>,
        end: &EndAction,
        active: &AtomicBool,
    ) -> (Option<Batch>, bool) {
        if let Some(b) = self.out1.take() {
            cx.push(1, b);
        }
        if self.ended {
            end.run(cx, active);
        }
        if let Some(due) = self.wait {
            cx.schedule_at(0, due);
        }
        if self.idle {
            cx.wake_when_written();
        }
        (self.out, self.progress)
    }

    /// [`Produced::finish`] for a push source: the packets go to output 0
    /// before the end action runs, so a STOP (and a DriverManager waiting
    /// for it) comes after the file's last packet has gone through, as in
    /// Click. Returns whether anything happened.
    pub(crate) fn finish_push(
        mut self,
        cx: &mut Cx<'_>,
        end: &EndAction,
        active: &AtomicBool,
    ) -> bool {
        if let Some(b) = self.out.take() {
            cx.push(0, b);
        }
        self.finish(cx, end, active).1
    }
}

/// Counts errors and prints only the first one.
#[derive(Default)]
pub(crate) struct ErrorCount {
    n: AtomicU64,
}

impl ErrorCount {
    pub(crate) fn report(&self, who: &str, msg: &str) {
        if self.n.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!("{who}: {msg}");
        }
    }

    pub(crate) fn get(&self) -> u64 {
        self.n.load(Ordering::Relaxed)
    }
}

/// pcap link types Click names (`ENCAP` arguments, `encap` handlers).
const ENCAPS: &[(&str, u32)] = &[
    ("ETHER", 1),
    ("IP", 101),
    ("FDDI", 10),
    ("ATM", 11),
    ("802_11", 105),
    ("SLL", 113),
    ("AIRONET", 120),
    ("HDLC", 104),
    ("PPP_HDLC", 50),
    ("PPP", 9),
    ("SUNATM", 123),
    ("PRISM", 119),
    ("NULL", 0),
];

/// Link types that are raw IPv4 packets (DLT_RAW in its several numbers,
/// LINKTYPE_IPV4).
pub(crate) fn is_raw_ip(linktype: u32) -> bool {
    matches!(linktype, 12 | 14 | 101 | 228)
}

/// Click's name for a link type, or its number.
pub(crate) fn encap_name(linktype: u32) -> String {
    if is_raw_ip(linktype) {
        return "IP".into();
    }
    ENCAPS
        .iter()
        .find(|(_, l)| *l == linktype)
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| linktype.to_string())
}

/// The link type of an ENCAP argument (a name, case-insensitive, or a number).
pub(crate) fn parse_encap(s: &str) -> Option<u32> {
    let s = s.trim();
    let up = s.to_ascii_uppercase();
    let up = match up.as_str() {
        "ETHERNET" => "ETHER",
        "RAW" => "IP",
        "LINUX_SLL" => "SLL",
        "802.11" => "802_11",
        x => x,
    };
    ENCAPS
        .iter()
        .find(|(n, _)| *n == up)
        .map(|(_, l)| *l)
        .or_else(|| s.parse().ok())
}

/// Opens FILENAME for reading; `-` is the standard input.
pub(crate) fn open_input(name: &str) -> Result<(Box<dyn Read + Send>, Option<u64>), String> {
    if name == "-" {
        return Ok((Box::new(std::io::stdin()), None));
    }
    let f = open_regular(name)?;
    let size = f.metadata().ok().map(|m| m.len());
    Ok((Box::new(f), size))
}

/// Opens `name` for reading if it is a regular file. Anything else (a
/// FIFO, a device, a socket) is refused with a clear error: opening a
/// FIFO blocks until a writer opens it, and reading one (or a device)
/// can block without end, which while a configuration is built (a
/// `hotconfig` included) would hold the control plane. The open itself
/// is non-blocking, so a FIFO named here cannot block it either.
pub(crate) fn open_regular(name: &str) -> Result<File, String> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(name)
        .map_err(|e| format!("{name}: {e}"))?;
    let m = f.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !m.is_file() {
        return Err(format!(
            "{name}: not a regular file (FIFOs and devices are not read; use - for the standard input)"
        ));
    }
    if let Ok(flags) = rustix::fs::fcntl_getfl(&f) {
        let _ = rustix::fs::fcntl_setfl(&f, flags - OFlags::NONBLOCK);
    }
    Ok(f)
}

/// Opens FILENAME for writing (created or truncated); `-` is the standard
/// output.
pub(crate) fn open_output(name: &str) -> Result<Box<dyn Write + Send>, String> {
    if name == "-" {
        return Ok(Box::new(std::io::stdout()));
    }
    let f = File::create(name).map_err(|e| format!("{name}: {e}"))?;
    Ok(Box::new(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    /// A FIFO (or device) named as an input file is refused at once: the
    /// open blocked until a writer came, and with it a `hotconfig`.
    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from(0o600)).unwrap();
        for name in [fifo.to_str().unwrap(), "/dev/null", "/dev/zero"] {
            let e = open_input(name).err().expect(name);
            assert!(e.contains("not a regular file"), "{e}");
        }
        let dir_e = open_input(dir.path().to_str().unwrap()).err().unwrap();
        assert!(
            dir_e.contains("not a regular file") || dir_e.contains("directory"),
            "{dir_e}"
        );
        let f = dir.path().join("f");
        std::fs::write(&f, b"abc").unwrap();
        let (mut r, size) = open_input(f.to_str().unwrap()).unwrap();
        assert_eq!(size, Some(3));
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        assert_eq!(v, b"abc");
    }

    #[test]
    fn sampling_fixed_point() {
        assert_eq!(sampling_prob_text(sample_fixed(1.0).unwrap()), "1");
        assert_eq!(sampling_prob_text(sample_fixed(0.5).unwrap()), "0.5");
        assert_err(sample_fixed(1.5), "SAMPLE must be between 0 and 1");
        assert_err(sample_fixed(-0.1), "SAMPLE must be between 0 and 1");
        let mut s = Sampler::new(sample_fixed(0.25).unwrap(), 7);
        let kept = (0..100_000).filter(|_| s.keep()).count();
        assert!((23_000..27_000).contains(&kept), "kept {kept}");
        let mut all = Sampler::new(sample_fixed(1.0).unwrap(), 1);
        assert!((0..1000).all(|_| all.keep()));
        let mut none = Sampler::new(0, 1);
        assert!(!(0..1000).any(|_| none.keep()));
    }

    #[test]
    fn timing_keeps_spacing() {
        let mut t = Timing::default();
        let now = Instant::now();
        assert_eq!(t.wait_until(Timestamp(5_000_000_000), now), None);
        let due = t.wait_until(Timestamp(5_010_000_000), now).unwrap();
        assert_eq!(due - now, Duration::from_millis(10));
        assert_eq!(
            t.wait_until(Timestamp(5_010_000_000), now + Duration::from_millis(10)),
            None
        );
        // Going back in time is due at once.
        assert_eq!(t.wait_until(Timestamp(1), now), None);
    }

    #[test]
    fn bounds() {
        let mut b = TimeBounds {
            start_after: Some(Duration::from_secs(1)),
            end_after: Some(Duration::from_secs(3)),
            ..TimeBounds::default()
        };
        b.first_in_trace(Timestamp::from_parts(100, 0));
        assert!(b.before_start(Timestamp::from_parts(100, 999_999_999)));
        assert!(!b.before_start(Timestamp::from_parts(101, 0)));
        assert!(!b.at_end(Timestamp::from_parts(102, 999_999_999)));
        assert!(b.at_end(Timestamp::from_parts(103, 0)));
        b.extend(Duration::from_secs(1));
        assert!(!b.at_end(Timestamp::from_parts(103, 0)));
        let mut i = TimeBounds {
            interval: Some(Duration::from_millis(500)),
            ..TimeBounds::default()
        };
        i.first_in_trace(Timestamp::from_parts(1, 0));
        i.first_output(Timestamp::from_parts(2, 0));
        assert!(i.at_end(Timestamp::from_parts(2, 500_000_000)));
    }

    #[test]
    fn encaps() {
        assert_eq!(parse_encap("ETHER"), Some(1));
        assert_eq!(parse_encap("ip"), Some(101));
        assert_eq!(parse_encap("SLL"), Some(113));
        assert_eq!(parse_encap("147"), Some(147));
        assert_eq!(parse_encap("bogus"), None);
        assert_eq!(encap_name(1), "ETHER");
        assert_eq!(encap_name(12), "IP");
        assert_eq!(encap_name(228), "IP");
        assert_eq!(encap_name(147), "147");
    }

    #[test]
    fn end_actions() {
        assert_eq!(EndAction::from_args(true, None), Ok(EndAction::Stop));
        assert_err(
            EndAction::from_args(true, Some("x.active false".into())),
            "END_CALL and STOP are mutually exclusive",
        );
        assert_eq!(
            EndAction::from_args(false, Some("c.reset".into())),
            Ok(EndAction::Call("c.reset".into(), String::new()))
        );
        assert_eq!(
            EndAction::from_args(false, Some("s.active  false".into())),
            Ok(EndAction::Call("s.active".into(), "false".into()))
        );
        assert_eq!(EndAction::from_args(false, None), Ok(EndAction::Deactivate));
    }
}
