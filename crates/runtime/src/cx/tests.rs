//! The data-path context: drops counted per reason, pushes out of an
//! output that does not exist, timers (fire, reschedule, cancel) and
//! deferred flushes.

use crate::drops::{UNCONNECTED, UNSPECIFIED};
use crate::registry::{ClassSpec, Registry};
use crate::testing::{build_with, sink};
use crate::{BuildOptions, Cx, Element, InitCx, Router};
use paraclick_packet::{Batch, Packet};
use std::sync::Mutex;
use std::time::Duration;

/// Drops each packet as its first byte says: 0 without a reason, 1 and 2
/// for its class's reasons 0 and 1, 9 for a reason it does not declare;
/// a batch whose first packet says 5 is dropped whole for reason 1, one
/// whose first says 6 is counted 10 drops of reason 0 and passed on.
struct Dropper;

impl Element for Dropper {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut b: Batch) {
        match b.iter().next().map(|p| p.data()[0]) {
            Some(5) => return cx.drop_batch_for(1, b),
            Some(6) => {
                cx.count_drops_for(0, 10);
                return cx.push(0, b);
            }
            _ => {}
        }
        for p in b.drain() {
            match p.data()[0] {
                0 => cx.drop_packet(p),
                1 => cx.drop_packet_for(0, p),
                2 => cx.drop_packet_for(1, p),
                9 => cx.drop_packet_for(7, p),
                _ => cx.push_packet(0, p),
            }
        }
    }
}

/// Sends each packet out of the output its first byte names.
struct Fan;

impl Element for Fan {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut b: Batch) {
        // Uniform batches go whole (the batch path); others packet by
        // packet (the single-packet path).
        let ports: Vec<usize> = b.iter().map(|p| usize::from(p.data()[0])).collect();
        if ports.windows(2).all(|w| w[0] == w[1]) && ports.len() > 1 {
            return cx.push(ports[0], b);
        }
        for p in b.drain() {
            let port = usize::from(p.data()[0]);
            cx.push_packet(port, p);
        }
    }
}

/// Timers in simulated time: timer 0 fires every 10 ms (rescheduled
/// from itself) and stops the router at its third firing; each firing
/// schedules timer 1 in 5 ms and cancels it at once, and schedules timer
/// 2 in 100 ms then again in 1 ms (the second replaces the first).
#[derive(Default)]
struct Ticker {
    start: Mutex<u64>,
    fired: Mutex<Vec<(usize, u64)>>,
}

impl Element for Ticker {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        *self.start.lock().unwrap() = ix.core.clock.now_ns();
        ix.schedule_after(0, Duration::from_millis(10));
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, timer: usize) {
        let at = (cx.core.clock.now_ns() - *self.start.lock().unwrap()) / 1_000_000;
        let mut fired = self.fired.lock().unwrap();
        fired.push((timer, at));
        if timer != 0 {
            return;
        }
        if fired.iter().filter(|f| f.0 == 0).count() == 3 {
            return cx.request_stop();
        }
        cx.schedule_after(0, Duration::from_millis(10));
        cx.schedule_after(1, Duration::from_millis(5));
        cx.unschedule(1);
        cx.schedule_after(2, Duration::from_millis(100));
        cx.schedule_after(2, Duration::from_millis(1));
    }
}

/// Stages what it gets and passes it on only in its flush.
#[derive(Default)]
struct Stager {
    staged: Mutex<Vec<Packet>>,
    flushes: Mutex<usize>,
}

impl Element for Stager {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut b: Batch) {
        let mut s = self.staged.lock().unwrap();
        if s.is_empty() {
            cx.defer_flush();
        }
        s.extend(b.drain());
    }

    fn flush(&self, cx: &mut Cx<'_>) {
        *self.flushes.lock().unwrap() += 1;
        let b: Vec<Packet> = std::mem::take(&mut *self.staged.lock().unwrap());
        cx.push(0, b.into());
    }
}

const REASONS: &[&str] = &["too short", "too long"];

fn reg() -> Registry {
    let mut reg = Registry::new();
    crate::testing::register(&mut reg);
    reg.register(
        ClassSpec::element("Dropper", "1/0-1", "h", |_| Ok(Dropper)).drop_reasons(REASONS),
    );
    reg.register(ClassSpec::element("Fan", "1/1-3", "h", |_| Ok(Fan)));
    reg.register(ClassSpec::element("Ticker", "0/0", "h", |_| {
        Ok(Ticker::default())
    }));
    reg.register(ClassSpec::element("Stager", "1/1", "h", |_| {
        Ok(Stager::default())
    }));
    reg
}

fn router(conf: &str) -> Router {
    build_with(&reg(), conf, &BuildOptions::default())
}

fn packets(tags: &[u8]) -> Batch {
    tags.iter()
        .map(|&t| Packet::from_slice(&[t, 0]).unwrap())
        .collect::<Vec<_>>()
        .into()
}

fn tags(ps: &[Packet]) -> Vec<u8> {
    ps.iter().map(|p| p.data()[0]).collect()
}

#[test]
fn drops_count_against_their_reason_and_the_element() {
    let r = router("TestSource -> d :: Dropper -> s :: TestSink;");
    r.push_into("d", 0, packets(&[0, 1, 2, 2, 9, 3, 1]))
        .unwrap();
    assert_eq!(tags(&sink(&r, "s")), [3]);
    assert_eq!(
        r.drop_reasons("d").unwrap(),
        [("too short", 2), ("too long", 2), (UNSPECIFIED, 2)],
        "a plain drop and an undeclared reason are unspecified"
    );
    r.push_into("d", 0, packets(&[5, 0, 1])).unwrap();
    r.push_into("d", 0, packets(&[6, 3])).unwrap();
    assert_eq!(tags(&sink(&r, "s")), [6, 3], "counted, not dropped");
    assert_eq!(
        r.drop_reasons("d").unwrap(),
        [("too short", 12), ("too long", 5), (UNSPECIFIED, 2)]
    );
    assert_eq!(r.drops(), vec![("d".to_string(), 19)]);
    assert_eq!(r.total_drops(), 19);
}

#[test]
fn a_push_out_of_an_output_that_does_not_exist_is_a_counted_drop() {
    // Fan may have three outputs; only the first is connected, so
    // outputs 1 and 2 do not exist.
    let r = router("TestSource -> f :: Fan; f[0] -> s :: TestSink;");
    // The batch path and the single-packet path, each way.
    r.push_into("f", 0, packets(&[0, 0])).unwrap();
    r.push_into("f", 0, packets(&[1, 1, 1])).unwrap();
    r.push_into("f", 0, packets(&[0, 2, 7])).unwrap();
    r.push_into("f", 0, packets(&[2])).unwrap();
    assert_eq!(tags(&sink(&r, "s")), [0, 0, 0]);
    assert_eq!(r.drops(), vec![("f".to_string(), 6)]);
    assert_eq!(r.drop_reasons("f").unwrap(), [(UNCONNECTED, 6)]);
    assert_eq!(
        r.read_handler("f.drop_reasons").unwrap(),
        "unconnected output 6\n"
    );
}

#[test]
fn the_drops_handler_lists_every_reason_largest_first() {
    let r = router("TestSource -> f :: Fan; f[0] -> d :: Dropper -> s :: TestSink;");
    assert_eq!(r.read_handler("drops").unwrap(), "no drops\n");
    r.push_into("f", 0, packets(&[2, 1])).unwrap();
    r.push_into("d", 0, packets(&[1, 2, 2, 0, 1, 2])).unwrap();
    assert_eq!(
        r.read_handler("drops").unwrap(),
        "3  d  too long\n\
         2  f  unconnected output\n\
         2  d  too short\n\
         1  d  unspecified\n",
        "ties in element order"
    );
}

/// The lines of the `trace` handler's text, without the cycle counts.
fn trace_lines(r: &Router) -> Vec<String> {
    r.read_handler("trace")
        .unwrap()
        .lines()
        .map(|l| match l.split_once(" cycles  ") {
            Some((_, rest)) => rest.to_string(),
            None => l.trim().to_string(),
        })
        .collect()
}

#[test]
fn a_trace_follows_marked_packets_hop_by_hop_and_says_why_they_died() {
    let r = router(
        "src :: TestSource -> d :: Dropper -> s :: TestSink;
         src[1] -> f :: Fan; f[0] -> s2 :: TestSink;",
    );
    // Nothing traced: nothing recorded, and no mark.
    r.send_from("src", 0, packets(&[3])).unwrap();
    assert_eq!(
        trace_lines(&r),
        ["no traces (trace add N [FILTER] starts one)"]
    );
    assert_eq!(sink(&r, "s")[0].trace(), 0);
    r.write_handler("trace_add", "4").unwrap();
    // Packets enter: the first passes d, the second dies there for its
    // reason; out of src's second output, the third passes f, the fourth
    // dies at f's missing output.
    r.send_from("src", 0, packets(&[3, 1])).unwrap();
    r.send_from("src", 1, packets(&[0, 2, 0])).unwrap();
    let marks = |n: &str| sink(&r, n).iter().map(|p| p.trace()).collect::<Vec<_>>();
    assert_eq!(marks("s"), [1], "the mark travels with the packet");
    assert_eq!(marks("s2"), [3, 0], "only four were marked");
    let want = [
        "trace 1:",
        "thread 0  entered at src :: TestSource",
        "len 2",
        "thread 0  src[0] -> [0]d :: Dropper",
        "thread 0  d[0] -> [0]s :: TestSink",
        "left through s :: TestSink",
        "trace 2:",
        "thread 0  entered at src :: TestSource",
        "len 2",
        "thread 0  src[0] -> [0]d :: Dropper",
        "thread 0  dropped by d :: Dropper: too short",
        "trace 3:",
        "thread 0  entered at src :: TestSource",
        "len 2",
        "thread 0  src[1] -> [0]f :: Fan",
        "thread 0  f[0] -> [0]s2 :: TestSink",
        "left through s2 :: TestSink",
        "trace 4:",
        "thread 0  entered at src :: TestSource",
        "len 2",
        "thread 0  src[1] -> [0]f :: Fan",
        "thread 0  dropped by f :: Fan: unconnected output",
    ];
    assert_eq!(trace_lines(&r), want);
    // No more marks: later packets go untraced.
    r.send_from("src", 0, packets(&[3])).unwrap();
    assert_eq!(marks("s"), [0]);
    assert_eq!(trace_lines(&r), want);
    r.write_handler("trace_clear", "").unwrap();
    assert_eq!(
        trace_lines(&r),
        ["no traces (trace add N [FILTER] starts one)"]
    );
    // Bad requests are errors, not panics.
    assert!(r.write_handler("trace_add", "0").is_err());
    assert!(r
        .write_handler("trace_add", "2 tcp")
        .unwrap_err()
        .contains("filter"));
}

#[test]
fn once_the_marks_are_taken_unmarked_packets_skip_the_traced_path() {
    let r = router("src :: TestSource -> d :: Dropper -> s :: TestSink;");
    let traced = || super::TRACED_CALLS.with(|c| c.get());
    r.write_handler("trace_add", "2").unwrap();
    // Two marked; the third finds the marks taken.
    r.send_from("src", 0, packets(&[3, 3, 3])).unwrap();
    let marked = sink(&r, "s");
    let marks: Vec<_> = marked.iter().map(|p| p.trace()).collect();
    assert_eq!(marks, [1, 2, 0]);
    // The trace is still on, but these packets are not marked: the
    // batch path and the single-packet one (Dropper pushes one by one).
    let before = traced();
    r.send_from("src", 0, packets(&[3, 3, 3, 3])).unwrap();
    r.push_into("d", 0, packets(&[3])).unwrap();
    assert_eq!(traced(), before, "an unmarked packet took the traced path");
    assert_eq!(sink(&r, "s").len(), 5);
    // A marked packet among unmarked ones is still followed hop by hop.
    let mut b = packets(&[3, 3]);
    let p1 = marked.into_iter().next().unwrap();
    b.push(p1);
    r.push_into("d", 0, b).unwrap();
    assert!(traced() > before, "a marked packet skipped the traced path");
    let lines = trace_lines(&r);
    let hops = lines
        .iter()
        .filter(|l| l.starts_with("thread 0  d[0] -> [0]s :: TestSink"))
        .count();
    assert_eq!(
        hops, 3,
        "trace 1 twice (the second a copy), trace 2 once: {lines:?}"
    );
}

#[test]
fn timers_fire_when_due_are_replaced_and_cancelled() {
    let opts = BuildOptions {
        simtime: true,
        ..BuildOptions::default()
    };
    let r = build_with(&reg(), "t :: Ticker;", &opts);
    crate::testing::run(&r);
    let t = r.element::<Ticker>("t").unwrap();
    assert_eq!(
        *t.fired.lock().unwrap(),
        [(0, 10), (2, 11), (0, 20), (2, 21), (0, 30)],
        "timer 1 never fires; timer 2 once per schedule, at its last time"
    );
}

#[test]
fn a_deferred_flush_runs_once_per_request() {
    let r = router("TestSource -> g :: Stager -> s :: TestSink;");
    r.push_into("g", 0, packets(&[1, 2])).unwrap();
    assert_eq!(tags(&sink(&r, "s")), [1, 2]);
    r.push_into("g", 0, packets(&[3])).unwrap();
    assert_eq!(tags(&sink(&r, "s")), [3]);
    let g = r.element::<Stager>("g").unwrap();
    assert_eq!(*g.flushes.lock().unwrap(), 2);
}
