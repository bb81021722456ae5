//! The queue family against Click's documented behaviour: one
//! implementation, classes that differ in policy.

use paraclick_packet::{Batch, Packet};
use paraclick_runtime::testing::assert_err;
use paraclick_runtime::testing::TestSink;
use paraclick_runtime::Router;

fn reg() -> paraclick_runtime::Registry {
    let mut reg = crate::registry();
    paraclick_runtime::testing::register(&mut reg);
    reg
}

fn tagged(tags: &[u8]) -> Batch {
    tags.iter()
        .map(|&t| Packet::from_slice(&[t; 20]).unwrap())
        .collect()
}

fn tags_of(b: Option<Batch>) -> Vec<u8> {
    b.map(|b| b.iter().map(|p| p.data()[0]).collect())
        .unwrap_or_default()
}

fn router(conf: &str) -> Router {
    // MixedQueue's second input must be connected.
    let conf = if conf.contains("MixedQueue") && !conf.contains("[1]q") {
        format!("{conf}; Idle -> [1]q")
    } else {
        conf.to_string()
    };
    Router::from_str(&conf, &reg(), 1).unwrap_or_else(|e| panic!("{conf}: {e:?}"))
}

const CLASSES: &[&str] = &[
    "Queue",
    "FullNoteQueue",
    "SimpleQueue",
    "NotifierQueue",
    "ThreadSafeQueue",
    "MSQueue",
    "QuickNoteQueue",
    "FrontDropQueue",
    "MixedQueue",
];

#[test]
fn every_class_is_a_fifo_with_the_documented_handlers() {
    for class in CLASSES {
        let r = router(&format!(
            "TestSource -> q :: {class}(4) -> Discard(ACTIVE false)"
        ));
        r.push_into("q", 0, tagged(&[1, 2, 3])).unwrap();
        assert_eq!(r.read_handler("q.length").unwrap(), "3", "{class}");
        assert_eq!(
            tags_of(r.pull_from("q", 0, 2).unwrap()),
            vec![1, 2],
            "{class}"
        );
        assert_eq!(r.read_handler("q.highwater_length").unwrap(), "3");
        assert_eq!(r.read_handler("q.capacity").unwrap(), "4");
        assert_eq!(r.read_handler("q.drops").unwrap(), "0");
        r.write_handler("q.reset", "").unwrap();
        assert_eq!(r.read_handler("q.length").unwrap(), "0", "{class}");
        assert_eq!(
            r.read_handler("q.drops").unwrap(),
            "1",
            "reset drops, counted"
        );
        r.write_handler("q.reset_counts", "").unwrap();
        assert_eq!(r.read_handler("q.drops").unwrap(), "0");
        assert_eq!(r.read_handler("q.highwater_length").unwrap(), "0");
        // Default capacity 1000, as Click's.
        let r = router(&format!(
            "TestSource -> q :: {class} -> Discard(ACTIVE false)"
        ));
        assert_eq!(r.read_handler("q.capacity").unwrap(), "1000", "{class}");
        // Capacity 0 is refused, and for that reason alone (only
        // MixedQueue has a second input to connect).
        let second = if *class == "MixedQueue" {
            "; Idle -> [1]q"
        } else {
            ""
        };
        let e = assert_err(
            Router::from_str(
                &format!("TestSource -> q :: {class}(0) -> Discard{second}"),
                &reg(),
                1,
            ),
            "CAPACITY must be at least 1",
        );
        assert_eq!(
            e,
            format!("<config>:1:20: q :: {class}: CAPACITY must be at least 1")
        );
    }
}

#[test]
fn tail_drop_goes_to_output_1_when_connected() {
    let r = router("TestSource -> q :: Queue(2) -> Discard(ACTIVE false); q[1] -> d :: TestSink");
    r.push_into("q", 0, tagged(&[1, 2, 3, 4])).unwrap();
    let d = r.element::<TestSink>("d").unwrap();
    assert_eq!(
        d.take().iter().map(|p| p.data()[0]).collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert_eq!(r.read_handler("q.drops").unwrap(), "2");
    assert_eq!(r.total_drops(), 0, "emitted, not dropped by the router");
    // Without output 1 they are dropped and counted.
    let r = router("TestSource -> q :: Queue(2) -> Discard(ACTIVE false)");
    r.push_into("q", 0, tagged(&[1, 2, 3])).unwrap();
    assert_eq!(r.total_drops(), 1);
    // One packet at a time (the single-packet push), and why.
    r.push_into("q", 0, tagged(&[4])).unwrap();
    assert_eq!(r.read_handler("q.drop_reasons").unwrap(), "full 2\n");
    // A FrontDropQueue drops its oldest for the same reason.
    let r = router("TestSource -> q :: FrontDropQueue(2) -> Discard(ACTIVE false)");
    r.push_into("q", 0, tagged(&[1, 2, 3])).unwrap();
    assert_eq!(r.read_handler("q.drop_reasons").unwrap(), "full 1\n");
}

#[test]
fn capacity_is_writable() {
    let r = router("TestSource -> q :: SimpleQueue(2) -> Discard(ACTIVE false)");
    r.push_into("q", 0, tagged(&[1, 2, 3])).unwrap();
    assert_eq!(r.read_handler("q.drops").unwrap(), "1");
    r.write_handler("q.capacity", "3").unwrap();
    r.push_into("q", 0, tagged(&[4, 5])).unwrap();
    assert_eq!(r.read_handler("q.length").unwrap(), "3");
    assert_eq!(r.read_handler("q.drops").unwrap(), "2");
    // Lowered below the length: the oldest packets beyond it are
    // dropped (counted), and the configuration says the new capacity.
    r.write_handler("q.capacity", "1").unwrap();
    assert_eq!(r.read_handler("q.length").unwrap(), "1");
    assert_eq!(r.read_handler("q.drops").unwrap(), "4");
    assert_eq!(r.read_handler("q.config").unwrap(), "1");
    r.push_into("q", 0, tagged(&[6])).unwrap();
    assert_eq!(tags_of(r.pull_from("q", 0, 10).unwrap()), vec![4]);
    r.push_into("q", 0, tagged(&[7, 8])).unwrap();
    assert_eq!(tags_of(r.pull_from("q", 0, 10).unwrap()), vec![7]);
    assert_err(
        r.write_handler("q.capacity", "0"),
        "q.capacity: capacity must be between 1 and 4096",
    );
    assert_err(
        r.write_handler("q.capacity", "x"),
        "q.capacity: expected unsigned integer",
    );
    let max: usize = r.read_handler("q.max_capacity").unwrap().parse().unwrap();
    assert!(max >= 4096);
    assert_err(
        r.write_handler("q.capacity", &(max + 1).to_string()),
        "q.capacity: capacity must be between 1 and 4096",
    );
    r.write_handler("q.capacity", &max.to_string()).unwrap();
}

#[test]
fn front_drop_queue_keeps_the_newest() {
    let r = router(
        "TestSource -> q :: FrontDropQueue(3) -> Discard(ACTIVE false); q[1] -> d :: TestSink",
    );
    r.push_into("q", 0, tagged(&[1, 2, 3])).unwrap();
    r.push_into("q", 0, tagged(&[4])).unwrap();
    r.push_into("q", 0, tagged(&[5, 6])).unwrap();
    assert_eq!(r.read_handler("q.drops").unwrap(), "3");
    let d = r.element::<TestSink>("d").unwrap();
    assert_eq!(
        d.take().iter().map(|p| p.data()[0]).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(tags_of(r.pull_from("q", 0, 10).unwrap()), vec![4, 5, 6]);
    assert_eq!(r.read_handler("q.highwater_length").unwrap(), "3");
}

#[test]
fn mixed_queue_is_fifo_on_input_0_and_lifo_on_input_1() {
    // Click's documented example: A, B on input 0, C on 1, D on 0, E on 1
    // leave the queue as E C A B D.
    let r = router(
        "a :: TestSource -> [0]q :: MixedQueue(5); b :: TestSource -> [1]q; q -> Discard(ACTIVE false)",
    );
    let (a, b, c, d, e) = (b'A', b'B', b'C', b'D', b'E');
    r.push_into("q", 0, tagged(&[a])).unwrap();
    r.push_into("q", 0, tagged(&[b])).unwrap();
    r.push_into("q", 1, tagged(&[c])).unwrap();
    r.push_into("q", 0, tagged(&[d])).unwrap();
    r.push_into("q", 1, tagged(&[e])).unwrap();
    assert_eq!(r.read_handler("q.length").unwrap(), "5");
    // Full: a FIFO packet is dropped, a LIFO packet takes the place of the
    // packet at the tail (the FIFO side's newest), as in Click.
    r.push_into("q", 0, tagged(b"F")).unwrap();
    assert_eq!(r.read_handler("q.drops").unwrap(), "1");
    r.push_into("q", 1, tagged(b"G")).unwrap();
    assert_eq!(r.read_handler("q.drops").unwrap(), "2");
    assert_eq!(r.read_handler("q.length").unwrap(), "5");
    assert_eq!(
        tags_of(r.pull_from("q", 0, 10).unwrap()),
        vec![b'G', e, c, a, b],
        "D, at the tail, made room for G"
    );
    assert!(r.pull_from("q", 0, 10).unwrap().is_none());
    // With only LIFO packets queued, the tail is the oldest of them.
    for t in [1, 2, 3, 4, 5, 6, 7] {
        r.push_into("q", 1, tagged(&[t])).unwrap();
    }
    assert_eq!(r.read_handler("q.drops").unwrap(), "4");
    assert_eq!(tags_of(r.pull_from("q", 0, 2).unwrap()), vec![7, 6]);
    // FIFO packets go behind the rest; a full queue drops them.
    r.push_into("q", 0, tagged(&[8, 9, 10])).unwrap();
    assert_eq!(r.read_handler("q.drops").unwrap(), "5");
    assert_eq!(
        tags_of(r.pull_from("q", 0, 10).unwrap()),
        vec![5, 4, 3, 8, 9]
    );
    // Capacity 1: a LIFO packet replaces the one there, a FIFO one drops.
    r.write_handler("q.capacity", "1").unwrap();
    r.push_into("q", 1, tagged(&[11])).unwrap();
    r.push_into("q", 1, tagged(&[13])).unwrap();
    r.push_into("q", 0, tagged(&[12])).unwrap();
    assert_eq!(tags_of(r.pull_from("q", 0, 10).unwrap()), vec![13]);
    assert_eq!(r.read_handler("q.drops").unwrap(), "7");
}

#[test]
fn family_members_have_the_documented_notifiers() {
    // A pull Discard behind each class: it sleeps on an empty queue only
    // if the class has an empty notifier; a source ahead of it waits on a
    // full queue only if it has a full notifier.
    for (class, empty, full) in [
        ("Queue", true, true),
        ("FullNoteQueue", true, true),
        ("ThreadSafeQueue", true, true),
        ("MSQueue", true, true),
        ("QuickNoteQueue", true, true),
        ("NotifierQueue", true, false),
        ("MixedQueue", true, false),
        ("FrontDropQueue", true, false),
        ("SimpleQueue", false, false),
    ] {
        let r = router(&format!(
            "s :: InfiniteSource(LENGTH 20, LIMIT 50, STOP false) -> q :: {class}(10) -> d :: Discard(ACTIVE false)"
        ));
        let q = r.element::<crate::standard::queue::Queue>("q").unwrap();
        use paraclick_runtime::QueueElement;
        assert_eq!(q.empty_notifier().is_some(), empty, "{class}");
        assert_eq!(q.full_notifier().is_some(), full, "{class}");
    }
}

#[test]
fn huge_capacities_are_clear_errors() {
    // 10^10 aborted the process allocating the ring; 2^64-1 overflowed
    // its rounding to a power of two and the first packet panicked.
    for class in CLASSES.iter().chain(&["CPUQueue"]) {
        for cap in ["10000000000", "18446744073709551615", "16777217"] {
            let conf = format!("TestSource -> q :: {class}({cap}) -> Discard; Idle -> [1]q");
            let conf = if *class == "MixedQueue" {
                conf
            } else {
                conf.replace("; Idle -> [1]q", "")
            };
            let e = match Router::from_str(&conf, &reg(), 1) {
                Ok(_) => panic!("{conf} was accepted"),
                Err(d) => paraclick_runtime::testing::messages(&d),
            };
            assert!(e.contains("more than the maximum, 16777216"), "{conf}: {e}");
        }
    }
    // The maximum itself is accepted (its ring is allocated, 128 MiB).
    let r = router("TestSource -> q :: Queue(16777216) -> Discard(ACTIVE false)");
    assert_eq!(r.read_handler("q.capacity").unwrap(), "16777216");
    assert_eq!(r.read_handler("q.max_capacity").unwrap(), "16777216");
}
