//! Compiled entries: where they run (single packets, not batches, not
//! while traced, not when profiling), what the runtime calls they use do
//! (`run_as`, `forward_code`, `push_packet_into`), and what is refused.

use super::{CompiledPush, ElemRef};
use crate::drops::UNCONNECTED;
use crate::element::{Action, HopCode, HOP_DROP};
use crate::registry::{ClassSpec, Registry};
use crate::testing::{build_with, sink, TestSink};
use crate::{BuildOptions, Cx, Element, Router, Verdict};
use paraclick_packet::{Batch, Packet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts its hop in byte 1; by the tag in byte 0: its `drop_tag` drops
/// (unspecified), 1 drops for reason 0, 2 goes out of output 1, 3 out of
/// output 5 (never connected), anything else out of output 0.
struct Act {
    drop_tag: u8,
}

impl Action for Act {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.data_mut()[1] += 1;
        match p.data()[0] {
            t if t == self.drop_tag => Verdict::Drop,
            1 => Verdict::DropFor(0),
            2 => Verdict::Out(1),
            3 => Verdict::Out(5),
            _ => Verdict::Out(0),
        }
    }
}

/// A pull sink (its input 0 is a pull input).
struct PullSink;
impl Element for PullSink {}

/// A pull source.
struct PullSource;
impl Element for PullSource {}

fn reg() -> Registry {
    let mut reg = Registry::new();
    crate::testing::register(&mut reg);
    reg.register(
        ClassSpec::action("Act", "1/1-2", "h", |_| Ok(Act { drop_tag: 0 }))
            .drop_reasons(&["too short"]),
    );
    reg.register(ClassSpec::action("Act7", "1/1-2", "h", |_| {
        Ok(Act { drop_tag: 7 })
    }));
    reg.register(ClassSpec::element("PullSink", "1/0", "l", |_| Ok(PullSink)));
    reg.register(ClassSpec::element("PullSource", "0/1", "l", |_| {
        Ok(PullSource)
    }));
    reg
}

fn router_with(conf: &str, opts: &BuildOptions) -> Router {
    build_with(&reg(), conf, opts)
}

fn router(conf: &str) -> Router {
    router_with(conf, &BuildOptions::default())
}

fn packets(tags: &[u8]) -> Batch {
    tags.iter()
        .map(|&t| Packet::from_slice(&[t, 0]).unwrap())
        .collect::<Vec<_>>()
        .into()
}

/// (tag, hops counted) of each packet.
fn seen(ps: &[Packet]) -> Vec<(u8, u8)> {
    ps.iter().map(|p| (p.data()[0], p.data()[1])).collect()
}

/// What a build would emit for `a` (and, with `then`, the `b` after
/// it): each element's action called with its type, the coded result
/// matched, the rest left to the dynamic router. Counts its calls.
struct Entry {
    a: ElemRef<Act>,
    then: Option<ElemRef<Act>>,
    hits: Arc<AtomicUsize>,
}

impl CompiledPush for Entry {
    fn push_packet(&self, cx: &mut Cx<'_>, mut p: Packet) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        cx.run_as(self.a.index());
        let code: HopCode = Action::action(self.a.get(), cx, &mut p).code();
        match (&self.then, code) {
            (Some(b), 0) => {
                cx.run_as(b.index());
                match Action::action(b.get(), cx, &mut p).code() {
                    // Charged to whichever element is running.
                    HOP_DROP => cx.drop_packet(p),
                    code => cx.forward_code(b.index(), code, p),
                }
            }
            _ => cx.forward_code(self.a.index(), code, p),
        }
    }
}

fn entry(r: &Router, a: &str, then: Option<&str>) -> (Box<Entry>, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let e = Entry {
        a: r.element_ref::<Act>(a).unwrap(),
        then: then.map(|b| r.element_ref::<Act>(b).unwrap()),
        hits: hits.clone(),
    };
    (Box::new(e), hits)
}

const CHAIN: &str = "src :: TestSource -> a :: Act -> b :: Act7 -> s :: TestSink;
                     a[1] -> s2 :: TestSink;";

#[test]
fn an_entry_takes_single_packets_but_not_batches_nor_traced_ones() {
    let mut r = router(CHAIN);
    let (e, hits) = entry(&r, "a", None);
    r.install_compiled("a", e).unwrap();
    assert_eq!(r.compiled_elements(), [1]);
    r.send_from("src", 0, packets(&[5])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 1, "a single packet");
    assert_eq!(seen(&sink(&r, "s")), [(5, 2)], "through a and b");
    r.send_from("src", 0, packets(&[5, 6, 8])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 1, "a batch goes dynamically");
    assert_eq!(seen(&sink(&r, "s")), [(5, 2), (6, 2), (8, 2)]);
    // A packet the tracer marks takes the dynamic path, hop by hop.
    r.write_handler("trace_add", "1").unwrap();
    r.send_from("src", 0, packets(&[9])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 1, "a traced packet is not");
    assert_eq!(seen(&sink(&r, "s")), [(9, 2)]);
    let trace = r.read_handler("trace").unwrap();
    assert!(trace.contains("a[0] -> [0]b :: Act7"), "{trace}");
    // Once the marks are taken, single packets run the entry again.
    r.send_from("src", 0, packets(&[4])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 2);
    assert_eq!(seen(&sink(&r, "s")), [(4, 2)]);
}

#[test]
fn run_as_charges_a_drop_to_the_element_it_names() {
    let mut r = router(CHAIN);
    let (e, hits) = entry(&r, "a", Some("b"));
    r.install_compiled("a", e).unwrap();
    r.send_from("src", 0, packets(&[7])).unwrap();
    r.send_from("src", 0, packets(&[6])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 2);
    assert_eq!(seen(&sink(&r, "s")), [(6, 2)]);
    assert_eq!(r.drops(), vec![("b".to_string(), 1)]);
}

#[test]
fn forward_code_goes_on_as_the_fused_loop_would() {
    let mut r = router(CHAIN);
    let (ea, hits_a) = entry(&r, "a", None);
    let (eb, hits_b) = entry(&r, "b", None);
    r.install_compiled("a", ea).unwrap();
    r.install_compiled("b", eb).unwrap();
    // 5: out of a's output 0 into b's own entry; 2: out of output 1 to
    // s2; 0: dropped; 1: dropped for a's reason; 3: an output not
    // connected.
    for t in [5, 2, 0, 1, 3] {
        r.send_from("src", 0, packets(&[t])).unwrap();
    }
    assert_eq!(hits_a.load(Ordering::Relaxed), 5);
    assert_eq!(hits_b.load(Ordering::Relaxed), 1, "b's entry from a's");
    assert_eq!(seen(&sink(&r, "s")), [(5, 2)]);
    assert_eq!(seen(&sink(&r, "s2")), [(2, 1)]);
    assert_eq!(r.drops(), vec![("a".to_string(), 3)]);
    assert_eq!(
        r.drop_reasons("a").unwrap(),
        [
            ("too short", 1),
            (UNCONNECTED, 1),
            (crate::drops::UNSPECIFIED, 1)
        ]
    );
}

#[test]
fn push_packet_into_runs_an_entry_or_the_element() {
    struct Into {
        b: ElemRef<Act>,
        s: ElemRef<TestSink>,
    }
    impl CompiledPush for Into {
        fn push_packet(&self, cx: &mut Cx<'_>, p: Packet) {
            match p.data()[0] {
                8 => cx.push_packet_into(self.s.index(), 0, p),
                9 => cx.push_packet_into(self.s.index(), 3, p),
                _ => cx.push_packet_into(self.b.index(), 0, p),
            }
        }
    }
    let mut r = router(CHAIN);
    let (eb, hits_b) = entry(&r, "b", None);
    r.install_compiled("b", eb).unwrap();
    let into = Into {
        b: r.element_ref("b").unwrap(),
        s: r.element_ref("s").unwrap(),
    };
    r.install_compiled("a", Box::new(into)).unwrap();
    for t in [5, 8, 9] {
        r.send_from("src", 0, packets(&[t])).unwrap();
    }
    assert_eq!(hits_b.load(Ordering::Relaxed), 1, "b's entry");
    assert_eq!(seen(&sink(&r, "s")), [(5, 1), (8, 0)]);
    assert_eq!(r.drop_reasons("a").unwrap(), [(UNCONNECTED, 1)]);
}

#[test]
fn entries_are_refused_after_the_start_and_on_pull_inputs() {
    let mut r = router(CHAIN);
    let (e, _) = entry(&r, "a", None);
    let err = r.install_compiled("nope", e).unwrap_err();
    assert!(err.contains("no such element"), "{err}");
    let (e, _) = entry(&r, "a", None);
    let err = r.install_compiled("src", e).unwrap_err();
    assert!(err.contains("has no input"), "{err}");
    crate::testing::run_until(&r, |r| r.core.started_ns.load(Ordering::Acquire) != 0);
    let (e, _) = entry(&r, "a", None);
    let err = r.install_compiled("a", e).unwrap_err();
    assert!(err.contains("the router has started"), "{err}");
    assert!(r.compiled_elements().is_empty());

    let mut r =
        router("src :: TestSource -> a :: Act -> s :: TestSink; PullSource -> p :: PullSink;");
    let (e, _) = entry(&r, "a", None);
    let err = r.install_compiled("p", e).unwrap_err();
    assert!(err.contains("pull input"), "{err}");
    assert!(r.compiled_elements().is_empty());
}

#[test]
fn a_profiled_router_keeps_the_dynamic_path() {
    let opts = BuildOptions {
        profile: true,
        ..BuildOptions::default()
    };
    let mut r = router_with(CHAIN, &opts);
    let (e, hits) = entry(&r, "a", None);
    r.install_compiled("a", e).unwrap();
    r.send_from("src", 0, packets(&[5])).unwrap();
    assert_eq!(hits.load(Ordering::Relaxed), 0);
    assert_eq!(seen(&sink(&r, "s")), [(5, 2)]);
}

#[test]
fn typed_handles_and_type_facts() {
    let r = router(CHAIN);
    assert!(r.element_ref::<TestSink>("a").is_none(), "wrong type");
    assert!(r.element_ref::<Act>("nope").is_none(), "no such element");
    let b = r.element_ref::<Act>("b").unwrap();
    assert_eq!(b.index(), 2);
    assert_eq!(b.clone().get().drop_tag, 7);
    let act = std::any::type_name::<Act>();
    assert_eq!(r.rust_type_of("b"), Some(act));
    assert_eq!(r.rust_type_of("s"), Some(std::any::type_name::<TestSink>()));
    assert_eq!(r.element_fuses("a"), Some(true));
    assert_eq!(r.element_fuses("s"), Some(false));
    let reg = reg();
    assert_eq!(reg.rust_type("Act7"), Some(act));
    assert!(reg.fuses("Act"));
    assert!(!reg.fuses("TestSink"));
    assert!(!reg.fuses("Nope"));
    assert_eq!(
        reg.get("PullSink").unwrap().rust_type.unwrap().id,
        std::any::TypeId::of::<PullSink>()
    );
    assert_eq!(r.push_peer("a", 0), Some(("b", 0)));
    assert_eq!(r.push_peer("a", 1), Some(("s2", 0)));
    assert_eq!(r.push_peer("b", 1), None, "not connected");
    assert_eq!(r.push_peer("s", 0), None, "no such output");
    assert_eq!(r.push_peer("nope", 0), None);
    // A handle keeps its element alive after the router is gone.
    drop(r);
    assert_eq!(b.get().drop_tag, 7);
}
