//! Drop counters and drop reasons.
//!
//! Every packet an element drops is counted against it, per thread (the
//! router's `--report drops`, [`crate::Router::drops`]). A class may also
//! declare why its elements drop, as a small table of
//! [reasons](method@crate::ClassSpec::drop_reasons) (VPP's per-node
//! error strings): a drop then names a reason by its index in the table
//! ([`crate::Verdict::DropFor`], [`crate::Hop::DropFor`],
//! [`crate::Cx::drop_packet_for`]), and each reason has its own per-thread
//! count, read through the `drop_reasons` handler every element has. A
//! drop that names no reason ([`crate::Verdict::Drop`],
//! [`crate::Cx::drop_packet`]) is [`UNSPECIFIED`].
//!
//! The counts are plain loads and stores on the dropping thread's own
//! cache lines: the total as before, and for a drop with a reason that
//! reason's count too. A packet that is not dropped costs nothing here.

use crate::core::Core;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// The reason of a drop that names none.
pub const UNSPECIFIED: &str = "unspecified";

/// The reason of every element's drops of packets it sent to an output
/// that is not connected (counted by the framework, not the class).
pub const UNCONNECTED: &str = "unconnected output";

/// The most reasons a class may declare (a reason is a `u8`).
pub const MAX_REASONS: usize = 256;

/// Counters per line of the padded storage.
const PER_LINE: usize = std::mem::align_of::<CachePadded<u64>>() / 8;

/// Counters of one writer (a worker thread), in whole cache lines of their
/// own: no other thread's counters, nor any other data, share a line with
/// them. Adding is a load and a store (single writer); reading may race
/// with it and sees some recent value.
pub(crate) struct Counts {
    lines: Box<[CachePadded<[AtomicU64; PER_LINE]>]>,
}

impl Counts {
    pub(crate) fn new(n: usize) -> Counts {
        Counts {
            lines: (0..n.div_ceil(PER_LINE))
                .map(|_| CachePadded::new(Default::default()))
                .collect(),
        }
    }

    /// Adds `n` to counter `i`: only from the thread that owns these.
    #[inline]
    pub(crate) fn add(&self, i: usize, n: u64) {
        let c = &self.lines[i / PER_LINE][i % PER_LINE];
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.lines
            .get(i / PER_LINE)
            .map_or(0, |l| l[i % PER_LINE].load(Ordering::Relaxed))
    }
}

/// Where each element's reason counts are: the element's class table and
/// the index of its first reason's counter in every thread's
/// [`Counts`] (`ThreadShared::reason_drops`).
pub(crate) struct Reasons {
    elems: Box<[(usize, &'static [&'static str])]>,
    /// Per counter: drops counted off the data path (carried over from the
    /// router a hot swap replaced).
    pub(crate) off_path: Box<[AtomicU64]>,
}

impl Reasons {
    /// The tables of the elements, in element order.
    pub(crate) fn new(tables: impl IntoIterator<Item = &'static [&'static str]>) -> Reasons {
        let mut next = 0;
        let elems: Box<[_]> = tables
            .into_iter()
            .map(|t| {
                let t = &t[..t.len().min(MAX_REASONS)];
                let base = next;
                next += t.len();
                (base, t)
            })
            .collect();
        Reasons {
            elems,
            off_path: (0..next).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counters in all (each thread has this many).
    pub(crate) fn len(&self) -> usize {
        self.off_path.len()
    }

    /// The counter of reason `reason` of element `elem`; `None` for a
    /// reason its class does not declare (counted as unspecified).
    #[inline]
    pub(crate) fn slot(&self, elem: usize, reason: u8) -> Option<usize> {
        let &(base, t) = self.elems.get(elem)?;
        let r = usize::from(reason);
        (r < t.len()).then_some(base + r)
    }

    /// Element `elem`'s class table.
    pub(crate) fn names(&self, elem: usize) -> &'static [&'static str] {
        self.elems.get(elem).map_or(&[], |e| e.1)
    }
}

/// Packets element `elem` dropped, on every thread and off the data path.
pub(crate) fn total(core: &Core, elem: usize) -> u64 {
    core.threads.iter().map(|t| t.drops.get(elem)).sum::<u64>()
        + core.handler_drops[elem].load(Ordering::Relaxed)
        + stopped(core, elem)
}

/// Packets freed when a task of element `elem` panicked in a fault domain
/// ([`crate::fault::STOPPED`]).
fn stopped(core: &Core, elem: usize) -> u64 {
    core.domains.as_ref().map_or(0, |d| d.stopped(elem))
}

/// Element `elem`'s drops of each declared reason, in table order.
fn declared(core: &Core, elem: usize) -> Vec<(&'static str, u64)> {
    let rs = &core.reasons;
    rs.names(elem)
        .iter()
        .enumerate()
        .filter_map(|(r, &name)| {
            let s = rs.slot(elem, r as u8)?;
            let n = core
                .threads
                .iter()
                .map(|t| t.reason_drops.get(s))
                .sum::<u64>()
                + rs.off_path[s].load(Ordering::Relaxed);
            Some((name, n))
        })
        .collect()
}

/// Element `elem`'s drops per reason, nonzero only: its declared reasons
/// in table order, [`UNCONNECTED`], [`crate::fault::STOPPED`], then
/// [`UNSPECIFIED`] (the total less
/// the others).
pub(crate) fn per_reason(core: &Core, elem: usize) -> Vec<(&'static str, u64)> {
    // The reasons first: a drop adds to the total before its reason, so
    // the total read after them covers them.
    let mut v = declared(core, elem);
    let unconnected = core
        .threads
        .iter()
        .map(|t| t.unconnected.get(elem))
        .sum::<u64>();
    v.push((UNCONNECTED, unconnected));
    v.push((crate::fault::STOPPED, stopped(core, elem)));
    let named: u64 = v.iter().map(|r| r.1).sum();
    v.push((UNSPECIFIED, total(core, elem).saturating_sub(named)));
    v.retain(|r| r.1 > 0);
    v
}

/// The `drop_reasons` handler: one line per reason with drops,
/// `REASON COUNT`.
pub(crate) fn handler_text(core: &Core, elem: usize) -> String {
    per_reason(core, elem)
        .into_iter()
        .map(|(r, n)| format!("{r} {n}\n"))
        .collect()
}

/// The `drops` global handler (VPP's `show errors`): one line per
/// element and reason with drops, `COUNT ELEMENT REASON`, the largest
/// count first (ties by element order); `no drops` if none.
pub(crate) fn router_text(core: &Core) -> String {
    let mut rows: Vec<(u64, usize, &'static str)> = Vec::new();
    for e in 0..core.slots.len() {
        for (r, n) in per_reason(core, e) {
            rows.push((n, e, r));
        }
    }
    if rows.is_empty() {
        return "no drops\n".to_string();
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let w = rows
        .iter()
        .map(|r| core.slots[r.1].name.len())
        .max()
        .unwrap_or(0);
    let cw = rows[0].0.to_string().len();
    rows.iter()
        .map(|&(n, e, r)| format!("{n:>cw$}  {:<w$}  {r}\n", core.slots[e].name))
        .collect()
}

/// A hot swap: element `j` of `old` hands its reason counts to element
/// `i` of `new` (of the same class, so the same table).
pub(crate) fn carry(new: &Core, i: usize, old: &Core, j: usize) {
    if new.reasons.names(i) != old.reasons.names(j) {
        return;
    }
    for (r, (_, n)) in declared(old, j).into_iter().enumerate() {
        if let Some(s) = new.reasons.slot(i, r as u8) {
            new.reasons.off_path[s].fetch_add(n, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::element::{Action, Element, Hop, Verdict};
    use crate::registry::{ClassSpec, Registry};
    use crate::testing::{Harness, TestSink};
    use crate::{BuildOptions, Cx, Router};
    use paraclick_packet::{Batch, Packet};

    /// Byte OFFSET says what happens: 0 passes, 1 and 2 drop for the
    /// first and second reason, 3 drops without one, 9 names a reason the
    /// class does not declare.
    struct Check(usize);

    fn verdict(p: &Packet, off: usize) -> Verdict {
        match p.data()[off] {
            0 => Verdict::Out(0),
            1 => Verdict::DropFor(BAD_VERSION),
            2 => Verdict::DropFor(BAD_CHECKSUM),
            3 => Verdict::Drop,
            r => Verdict::DropFor(r),
        }
    }

    const REASONS: &[&str] = &["bad version", "bad checksum"];
    const BAD_VERSION: u8 = 0;
    const BAD_CHECKSUM: u8 = 1;

    impl Action for Check {
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            verdict(p, self.0)
        }
    }

    /// [`Check`] as an element that routes single packets (a fused
    /// `route_packet` hop) and runs batches through its own push.
    struct Route(usize);

    impl Element for Route {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
            crate::push_verdicts(cx, batch, |_, p| verdict(p, self.0))
        }
    }

    impl crate::RoutingElement for Route {
        fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
            verdict(p, self.0).into()
        }
    }

    /// Passes every packet to output 0.
    struct Pass;

    impl Action for Pass {
        fn action(&self, _cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
            Verdict::Out(0)
        }
    }

    fn reg() -> Registry {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(
            ClassSpec::action("Check", "1/1", "a", |cx| {
                let mut a = cx.args();
                let off = a.read_p::<usize>("OFFSET").unwrap_or(0);
                a.complete()?;
                Ok(Check(off))
            })
            .drop_reasons(REASONS),
        );
        reg.register(
            ClassSpec::routing("Route", "1/1", "h", |cx| {
                let mut a = cx.args();
                let off = a.read_p::<usize>("OFFSET").unwrap_or(0);
                a.complete()?;
                Ok(Route(off))
            })
            .drop_reasons(REASONS),
        );
        reg.register(ClassSpec::action("Pass", "1/1", "a", |cx| {
            cx.args().complete()?;
            Ok(Pass)
        }));
        reg
    }

    /// A packet whose bytes 0 and 1 are `c` and `r`, tagged.
    fn pk(c: u8, r: u8, tag: u8) -> Packet {
        Packet::from_slice(&[c, r, tag]).unwrap()
    }

    fn batch(kinds: &[u8]) -> Vec<Packet> {
        kinds.iter().map(|&k| pk(k, 0, 0)).collect()
    }

    #[test]
    fn a_bad_checksum_counts_its_reason_and_the_handler_prints_it() {
        let h = Harness::new(&reg(), "Check", 1).unwrap();
        assert_eq!(h.read("drop_reasons").unwrap(), "", "nothing dropped yet");
        h.push(0, batch(&[2]));
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drop_reasons").unwrap(), "bad checksum 1\n");
        // Uniform batches, a mixed one, a generic drop and an undeclared
        // reason (counted as unspecified).
        h.push(0, batch(&[2, 2, 2]));
        h.push(0, batch(&[1, 1]));
        h.push(0, batch(&[0, 2, 3, 1, 0, 9, 2]));
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.drops(), 11);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "bad version 3\nbad checksum 6\nunspecified 2\n"
        );
        assert_eq!(
            h.router.drop_reasons("e"),
            Some(vec![
                ("bad version", 3),
                ("bad checksum", 6),
                (super::UNSPECIFIED, 2)
            ])
        );
        // Every element has the handler, listed with the built-in ones.
        assert!(h.read("handlers").unwrap().contains("drop_reasons\tr\n"));
        assert_eq!(h.router.read_handler("o0.drop_reasons").unwrap(), "");
    }

    /// Pushes packets through `Pass -> Check(0) -> Route(1) -> sink` as
    /// batches and one at a time; returns the tags the sink got, the drop
    /// totals and both elements' reasons.
    #[allow(clippy::type_complexity)]
    fn run_chain(
        profile: bool,
    ) -> (
        Vec<u8>,
        Vec<(String, u64)>,
        Vec<(&'static str, u64)>,
        Vec<(&'static str, u64)>,
    ) {
        let src = paraclick_lang::Source {
            name: "<test>".into(),
            text: "TestSource -> a :: Pass -> c :: Check(0) -> r :: Route(1) -> o :: TestSink;"
                .into(),
        };
        let opts = BuildOptions {
            pin: false,
            profile,
            ..BuildOptions::default()
        };
        let r = Router::build(&src, &reg(), &opts).unwrap();
        let batches: [&[(u8, u8)]; 5] = [
            // Uniform drops at c, mixed ones, a uniform pass.
            &[(2, 0), (2, 0), (2, 0)],
            &[(1, 0), (3, 0), (9, 0)],
            &[(0, 0), (0, 0), (0, 0)],
            // Mixed at both.
            &[(0, 1), (1, 0), (0, 2), (2, 0), (0, 3), (0, 0)],
            // Uniform drops at r.
            &[(0, 2), (0, 2)],
        ];
        for b in batches {
            let b = b.iter().enumerate().map(|(i, &(c, x))| pk(c, x, i as u8));
            r.push_into("a", 0, Batch::from(b.collect::<Vec<_>>()))
                .unwrap();
        }
        for (c, x) in [(1, 0), (2, 0), (0, 2), (0, 9), (0, 0), (3, 0)] {
            r.push_into("a", 0, Batch::one(pk(c, x, 50))).unwrap();
        }
        let got = r
            .element::<TestSink>("o")
            .unwrap()
            .take()
            .iter()
            .map(|p| p.data()[2])
            .collect();
        (
            got,
            r.drops(),
            r.drop_reasons("c").unwrap(),
            r.drop_reasons("r").unwrap(),
        )
    }

    #[test]
    fn fused_hops_count_the_right_reason_as_the_unfused_path_does() {
        let fused = run_chain(false);
        assert_eq!(fused.0, vec![0, 1, 2, 5, 50]);
        assert_eq!(fused.1, vec![("c".to_string(), 11), ("r".to_string(), 7)]);
        assert_eq!(
            fused.2,
            vec![
                ("bad version", 3),
                ("bad checksum", 5),
                (super::UNSPECIFIED, 3)
            ]
        );
        assert_eq!(
            fused.3,
            vec![
                ("bad version", 1),
                ("bad checksum", 4),
                (super::UNSPECIFIED, 2)
            ]
        );
        // Profiling turns fusion off: the same counts through push calls.
        assert_eq!(run_chain(true), fused);
    }

    #[test]
    fn a_routing_element_counts_its_reasons_on_both_paths() {
        let reg = reg();
        let h = Harness::new(&reg, "Route; TestSource -> p :: Pass -> e", 1).unwrap();
        // Batches go to Route's push; single packets through its fused
        // route_packet hop.
        h.router
            .push_into("p", 0, Batch::from(batch(&[1, 2, 0, 3])))
            .unwrap();
        for k in [2, 9, 0] {
            h.router.push_into("p", 0, Batch::one(pk(k, 0, 0))).unwrap();
        }
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.drops(), 5);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "bad version 1\nbad checksum 2\nunspecified 2\n"
        );
    }

    #[test]
    fn counts_of_two_threads_sum_and_stay_in_their_own_slots() {
        let r = Router::from_str("TestSource -> c :: Check -> TestSink;", &reg(), 2).unwrap();
        let core = &*r.core;
        let c = core.names["c"];
        const N: u64 = 100_000;
        std::thread::scope(|s| {
            for t in 0..2 {
                s.spawn(move || {
                    let mut cx = Cx::new(core, t);
                    cx.current = c;
                    for i in 0..N {
                        if i % 2 == 0 {
                            cx.drop_packet_for(BAD_CHECKSUM, pk(2, 0, 0));
                        } else {
                            cx.count_drops_for(BAD_VERSION, 1);
                        }
                    }
                    cx.count_drops(3);
                });
            }
        });
        let slot = core.reasons.slot(c, BAD_CHECKSUM).unwrap();
        for t in &core.threads[..2] {
            assert_eq!(t.reason_drops.get(slot), N / 2);
            assert_eq!(t.drops.get(c), N + 3);
        }
        assert_eq!(
            r.read_handler("c.drop_reasons").unwrap(),
            format!("bad version {N}\nbad checksum {N}\nunspecified 6\n")
        );
        assert_eq!(r.total_drops(), 2 * N + 6);
    }

    #[test]
    fn a_hot_swap_carries_the_reasons_over() {
        let conf = "TestSource -> c :: Check -> TestSink;";
        let old = Router::from_str(conf, &reg(), 1).unwrap();
        old.push_into("c", 0, Batch::from(batch(&[1, 2, 2, 3])))
            .unwrap();
        let new = Router::from_str(conf, &reg(), 2).unwrap();
        new.take_state_from(&old).unwrap();
        assert_eq!(new.drops(), vec![("c".to_string(), 4)]);
        new.push_into("c", 0, Batch::from(batch(&[2]))).unwrap();
        assert_eq!(
            new.read_handler("c.drop_reasons").unwrap(),
            "bad version 1\nbad checksum 3\nunspecified 1\n"
        );
    }

    #[test]
    fn counters_fill_whole_cache_lines() {
        let c = super::Counts::new(3);
        assert!(std::mem::align_of_val(&*c.lines) >= 64);
        c.add(2, 5);
        c.add(2, 1);
        assert_eq!((c.get(0), c.get(2), c.get(99)), (0, 6, 0));
        let t = super::Reasons::new([&[][..], REASONS, &["x"]]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.slot(0, 0), None);
        assert_eq!(t.slot(1, 1), Some(1));
        assert_eq!(t.slot(1, 2), None);
        assert_eq!(t.slot(2, 0), Some(2));
        assert_eq!(t.slot(3, 0), None);
    }
}
