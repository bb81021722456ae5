//! The planner called as a library: a configuration from conf/, every
//! element counted alike (no profiling run, so the plan depends on the
//! graph alone), searched for N threads on a fixed machine; the tests read
//! the candidates and the rewritten graph as values, not as text. (The
//! command line's own tests are crates/paraclick/tests/parallelize.rs.)

use paraclick_lang::{parse_config, FlatGraph, Source};
use paraclick_model::app::WhatIf;
use paraclick_model::machine::Machine;
use paraclick_tune::parallelize::{
    output_text, rewrite, rewrite_text, search, static_app, uniform_costs, Candidate, Graph, Part,
    Plan, Rewrite,
};
use std::collections::HashMap;
use std::path::Path;

fn machine() -> Machine {
    Machine {
        cpu: "test".into(),
        cores: 4,
        tsc_ghz: 2.0,
        line_transfer_ns: 50.0,
        local_ring_ns: 20.0,
        cross_ring_ns: 40.0,
        crossing_ns: 30.0,
        memory_gbs: 10.0,
        af_packet_ns: None,
        tap_ns: None,
        calibrated_at: 0,
        queue_hop: Vec::new(),
    }
}

/// conf/`name`.
fn conf(name: &str) -> Source {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conf")
        .join(name);
    Source {
        name: format!("conf/{name}"),
        text: std::fs::read_to_string(&path).unwrap(),
    }
}

/// conf/`name` with `defines`, planned for `n` threads.
fn plan(name: &str, defines: &[(&str, &str)], n: usize) -> (Graph, Plan) {
    plan_src(&conf(name), defines, n)
}

/// `src` with `defines`, planned for `n` threads.
fn plan_src(src: &Source, defines: &[(&str, &str)], n: usize) -> (Graph, Plan) {
    let src = src.clone();
    let defines: Vec<(String, String)> = defines
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let reg = paraclick_io::full_registry();
    let mut app = static_app(&src, &reg, &defines).unwrap();
    let g = parse_config(&src, &defines).unwrap();
    let mut gr = Graph::new(g, &app, &HashMap::new(), &reg);
    uniform_costs(&mut gr, &mut app);
    let w = WhatIf {
        core_share: vec![1.0; n],
        ..WhatIf::default()
    };
    let plan = search(&gr, &app, &machine(), n, &w);
    (gr, plan)
}

/// The elements of `g` of class `class`, with their configurations.
fn of_class<'a>(g: &'a FlatGraph, class: &str) -> Vec<(&'a str, &'a str)> {
    g.elements
        .iter()
        .filter(|e| e.class == class)
        .map(|e| (e.name.as_str(), e.config.as_str()))
        .collect()
}

fn names(plan: &Plan) -> Vec<&str> {
    plan.candidates.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn the_qos_scheduler_is_replicated_per_flow_group() {
    // conf/qos-bench.click: one PrioSched behind three queues, pulled by
    // one Unqueue (SMP Click's Figure 16). Among the candidates for 2
    // threads is the paper's hand rewrite (conf/replicated-qos.click):
    // the scheduler, its queues and its puller twice, a HashSwitch in
    // front of each queue.
    let (gr, plan) = plan("qos-bench.click", &[], 2);
    let c: &Candidate = plan
        .candidates
        .iter()
        .find(|c| matches!(c.rewrite.parts(), [Part::Sched(..)]))
        .unwrap_or_else(|| panic!("no scheduler replication: {:?}", names(&plan)));
    let Part::Sched(_, sp) = &c.rewrite.parts()[0] else {
        unreachable!()
    };
    assert_eq!(sp.sched, "ps");
    let g = rewrite(&gr, c, 2);
    assert_eq!(of_class(&g, "PrioSched").len(), 2, "{g:?}");
    assert_eq!(of_class(&g, "Unqueue").len(), 2);
    let queues = of_class(&g, "Queue");
    assert_eq!(queues.len(), 6, "{queues:?}");
    // Each queue's capacity is shared out among its replicas.
    assert!(queues.iter().all(|(_, cfg)| *cfg == "256"), "{queues:?}");
    assert_eq!(of_class(&g, "HashSwitch").len(), 3);
    // Each replica is pinned to its own thread.
    let sched = of_class(&g, "StaticThreadSched");
    assert_eq!(sched.len(), 1, "{sched:?}");
    assert!(
        sched[0].1.contains("uq 0") && sched[0].1.contains("uq_r1 1"),
        "{sched:?}"
    );
}

#[test]
fn a_router_on_absent_devices_is_split_by_their_receive_queues() {
    // conf/iprouter-veth.click at 4 threads, its devices named so that no
    // host has them: two FromDevice tasks cannot fill four threads, so
    // the chosen plan fans each device out into four receive queues of
    // one PACKET_FANOUT HASH group, each with its replica of the path.
    let (gr, plan) = plan(
        "iprouter-veth.click",
        &[("DEV0", "paraclick-none0"), ("DEV1", "paraclick-none1")],
        4,
    );
    let c = &plan.candidates[plan.chosen];
    assert_eq!(c.rewrite.kind(), "fanout", "{:?}", names(&plan));
    assert_eq!(c.rewrite.parts().len(), 2);
    let g = rewrite(&gr, c, 4);
    let devices = of_class(&g, "FromDevice");
    assert_eq!(devices.len(), 8, "{devices:?}");
    for (dev, name) in [("paraclick-none0", "in0"), ("paraclick-none1", "in1")] {
        for r in 1..4 {
            let replica = format!("{name}_r{r}");
            let (_, cfg) = devices
                .iter()
                .find(|(n, _)| *n == replica)
                .unwrap_or_else(|| panic!("{replica}: {devices:?}"));
            assert!(cfg.starts_with(dev), "{cfg}");
            assert!(
                cfg.ends_with(&format!("QUEUE {r}, N_QUEUES 4, FANOUT HASH")),
                "{cfg}"
            );
        }
    }
}

/// The lines of `text` that differ from `orig`'s, `(line, now)`, and the
/// lines after `orig`'s last: a rewrite written as the user's file
/// changes lines in place and adds a block at the end.
fn diff(orig: &str, text: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let (o, t): (Vec<&str>, Vec<&str>) = (orig.lines().collect(), text.lines().collect());
    assert!(t.len() >= o.len(), "{text}");
    let changed = o
        .iter()
        .zip(&t)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (_, b))| (i + 1, b.to_string()))
        .collect();
    (
        changed,
        t[o.len()..].iter().map(|l| l.to_string()).collect(),
    )
}

/// The candidate of `plan` whose only part is `kind`'s.
fn single<'a>(plan: &'a Plan, kind: &str) -> (usize, &'a Candidate) {
    plan.candidates
        .iter()
        .enumerate()
        .find(|(_, c)| matches!(c.rewrite.parts(), [p] if p.kind() == kind))
        .unwrap_or_else(|| panic!("no {kind}: {:?}", names(plan)))
}

/// A configuration written for these tests: defines, a compound, a
/// `=>` connection, comments and anonymous elements.
const SMALL: &str = "\
// small.click: a rewrite keeps this comment,
define($N 1000, $P 3);   // this define,

// this compound,
elementclass Twice { input -> Paint(1) -> Paint($P) -> output }

src :: InfiniteSource(LIMIT $N)
  -> t :: Twice -> Tee(2) => c0 :: Counter, c1 :: Counter;
c0 -> q :: Queue(100);   // and this layout.
c1 -> Discard;
q -> uq :: Unqueue -> Discard;
";

/// SMALL's pipeline candidate, its split moved to the connection from
/// element `from` to `to`.
fn small_split(gr: &Graph, plan: &Plan, from: &str, to: &str) -> Candidate {
    let (_, c) = single(plan, "pipeline");
    let mut c = c.clone();
    let at =
        gr.g.connections
            .iter()
            .position(|k| gr.g.elements[k.from].name == from && gr.g.elements[k.to].name == to)
            .unwrap_or_else(|| panic!("{from} -> {to}: {:?}", gr.g));
    let Rewrite::Split { parts } = &mut c.rewrite else {
        unreachable!()
    };
    let Part::Pipeline { conn, .. } = &mut parts[0] else {
        unreachable!()
    };
    *conn = at;
    c
}

#[test]
fn a_pipeline_split_is_the_users_file_with_one_connection_changed() {
    // conf/qos-bench.click, every element counted alike: the pipeline
    // split of src's path is its file with one connection (written on
    // one line) passing through the new Queue and Unqueue, and a block
    // at the end that places them: defines, comments and names kept.
    let src = conf("qos-bench.click");
    let (gr, plan) = plan("qos-bench.click", &[], 2);
    let (k, c) = single(&plan, "pipeline");
    let t = rewrite_text(&src.text, &[], &gr, c, 2, false).unwrap();
    let (changed, tail) = diff(&src.text, &t.text);
    assert_eq!(changed.len(), 1, "{changed:?}");
    let (line, now) = &changed[0];
    let insert = format!(" par_q{k} :: Queue(1000) -> par_u{k} :: Unqueue(BURST 32) ->");
    assert_eq!(
        now.replacen(&insert, "", 1),
        src.text.lines().nth(line - 1).unwrap(),
        "{now}"
    );
    assert_eq!(
        tail[..2],
        ["", &format!("// paraclick parallelize -j 2: {}", c.name)]
    );
    assert_eq!(tail.len(), 3, "{tail:?}");
    assert!(
        tail[2].starts_with("par_sched :: StaticThreadSched(")
            && tail[2].contains(&format!("par_u{k} ")),
        "{tail:?}"
    );
    assert_eq!(t.changes.len(), 2, "{:?}", t.changes);
    assert!(
        t.changes[0].starts_with(&format!("line {line}: ")),
        "{:?}",
        t.changes
    );
    // Still the file's defines: read with N=7, the source stops at 7.
    let n7 = vec![("N".to_string(), "7".to_string())];
    let g = parse_config(&Source::new("x", t.text.as_str()), &n7).unwrap();
    assert_eq!(of_class(&g, "FastUDPFlows").len(), 1);
    let (_, w) = of_class(&g, "WorkPackage")[0];
    assert_eq!(w, "10");
    let script = g.elements.iter().find(|e| e.class == "Script").unwrap();
    assert!(
        script.config.contains("$(lt $(out.count) 7)"),
        "{}",
        script.config
    );
    // The written-out output says what changed, above the table.
    let out = output_text(&src, &[], &gr, c, 2, false);
    assert!(out.own_text);
    assert!(
        out.top.starts_with(&format!(
            "// conf/qos-bench.click rewritten for -j 2: {}\n// the file as written, changed only here:\n//   line {line}: ",
            c.name
        )),
        "{}",
        out.top
    );
}

#[test]
fn replicas_keep_their_arguments_as_written_and_anonymous_targets_are_named() {
    // conf/qos-bench.click's scheduler replication: the queues' shared
    // capacity and out's REPLICAS change in place, the HashSwitches go
    // into the connections that fed the queues, the replicas at the end
    // keep `WorkPackage($W)` as written.
    let src = conf("qos-bench.click");
    let (gr, plan) = plan("qos-bench.click", &[], 2);
    let (_, c) = single(&plan, "sched");
    let t = rewrite_text(&src.text, &[], &gr, c, 2, false).unwrap();
    let (changed, tail) = diff(&src.text, &t.text);
    let want = [
        (
            19,
            "cl[0] -> hi_in :: Counter -> par_hs_hi :: HashSwitch(26, 12) -> hi :: Queue(256);",
        ),
        (
            20,
            "cl[1] -> med_in :: Counter -> par_hs_med :: HashSwitch(26, 12) -> med :: Queue(256);",
        ),
        (
            21,
            "cl[2] -> lo_in :: Counter -> par_hs_lo :: HashSwitch(26, 12) -> lo :: Queue(256);",
        ),
        (
            28,
            "vpn[0] -> WorkPackage($W) -> out :: Counter(REPLICAS out_r1) -> Discard;",
        ),
    ];
    let changed: Vec<(usize, &str)> = changed.iter().map(|(l, s)| (*l, s.as_str())).collect();
    assert_eq!(changed, want);
    assert!(
        tail.contains(&"    -> WorkPackage@12_r1 :: WorkPackage($W)".to_string()),
        "{tail:?}"
    );
    assert!(
        tail.contains(&"par_hs_med[1] -> med_r1 :: Queue(256) -> [1]ps_r1;".to_string()),
        "{tail:?}"
    );
    // W=3 reaches the replica as the original.
    let w3 = vec![("W".to_string(), "3".to_string())];
    let g = parse_config(&Source::new("x", t.text.as_str()), &w3).unwrap();
    let w = of_class(&g, "WorkPackage");
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w.iter().all(|(_, cfg)| *cfg == "3"), "{w:?}");

    // An anonymous element the replicas merge into is named in place.
    let text = "define($N 100);\nsrc :: InfiniteSource(LIMIT $N) -> Paint(1) -> c :: Counter\n  -> Queue(10) -> Unqueue -> Discard;\n";
    let s = Source::new("anon.click", text);
    let (gr, plan) = plan_src(&s, &[], 2);
    let (_, c) = single(&plan, "flow");
    let t = rewrite_text(text, &[], &gr, c, 2, false).unwrap();
    assert!(
        t.text.contains("-> Queue@4 :: Queue(10) -> Unqueue"),
        "{}",
        t.text
    );
    assert!(
        t.text.contains("    -> c_r1 :: Counter\n    -> Queue@4;\n"),
        "{}",
        t.text
    );
    // The anonymous Unqueue, after the elements inserted before it, is
    // read as Unqueue@8 (Unqueue@5 in the original): pinned so.
    let g = parse_config(&Source::new("x", t.text.as_str()), &[]).unwrap();
    assert_eq!(of_class(&g, "Unqueue")[0].0, "par_u3_0");
    assert!(g.find("Unqueue@8").is_some(), "{g:?}");
    let pins = of_class(&g, "StaticThreadSched")[0].1;
    assert!(pins.contains("Unqueue@8 "), "{pins}");
    assert!(
        t.changes
            .iter()
            .any(|l| l.starts_with("line 3: the anonymous Queue named Queue@4")),
        "{:?}",
        t.changes
    );
}

#[test]
fn a_change_inside_a_compound_or_a_group_is_written_flattened_and_says_why() {
    let s = Source::new("small.click", SMALL);
    let (gr, plan) = plan_src(&s, &[], 2);
    // Into the compound from outside: its top-level connection changes.
    let c = small_split(&gr, &plan, "src", "t/Paint@1");
    let t = rewrite_text(SMALL, &[], &gr, &c, 2, false).unwrap();
    let (changed, _) = diff(SMALL, &t.text);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(
        changed[0]
            .1
            .ends_with("-> t :: Twice -> Tee(2) => c0 :: Counter, c1 :: Counter;"),
        "{changed:?}"
    );
    assert!(t
        .text
        .contains("elementclass Twice { input -> Paint(1) -> Paint($P) -> output }"));
    // Inside the compound's body (shared by every instance): the whole
    // graph flattened, its first line naming the connection.
    let c = small_split(&gr, &plan, "t/Paint@1", "t/Paint@2");
    let why = rewrite_text(SMALL, &[], &gr, &c, 2, false).unwrap_err();
    assert!(
        why.contains("t/Paint@1 [0] -> [0] t/Paint@2") && why.contains("inside a compound's body"),
        "{why}"
    );
    let out = output_text(&s, &[], &gr, &c, 2, false);
    assert!(!out.own_text);
    assert!(
        out.top.starts_with("// small.click rewritten for -j 2: ")
            && out.top.contains(
                "written flattened (defines substituted, compounds expanded, comments left out): "
            )
            && out.top.trim_end().ends_with(&why),
        "{}",
        out.top
    );
    let flat = parse_config(&Source::new("flat", out.body.as_str()), &[]).unwrap();
    assert!(paraclick_lang::same_graph(&flat, &rewrite(&gr, &c, 2)));
    // Written with `=>` (or in a group): text inserted there would
    // change the other connections too.
    let c = small_split(&gr, &plan, "Tee@3", "c0");
    let why = rewrite_text(SMALL, &[], &gr, &c, 2, false).unwrap_err();
    assert!(why.contains("in a group or with '=>'"), "{why}");
    assert!(!output_text(&s, &[], &gr, &c, 2, false).own_text);
}

#[test]
fn the_configurations_own_static_thread_sched_is_commented_out() {
    // A placement of a configuration that places its tasks itself: its
    // StaticThreadSched commented out, the plan's at the end.
    let text = "src :: InfiniteSource(LIMIT 10) -> q :: Queue;\n\
                StaticThreadSched(src 0, uq 0);  // both on 0\n\
                q -> uq :: Unqueue -> Discard;\n\
                t :: StaticThreadSched(src 1); x :: Idle -> Discard;\n";
    let s = Source::new("own.click", text);
    let (gr, plan) = plan_src(&s, &[], 2);
    let c = &plan.candidates[1];
    assert!(matches!(c.rewrite, Rewrite::Place));
    let t = rewrite_text(text, &[], &gr, c, 2, false).unwrap();
    let (changed, tail) = diff(text, &t.text);
    assert_eq!(
        changed,
        [
            (
                2,
                "// StaticThreadSched(src 0, uq 0);  // both on 0".to_string()
            ),
            (
                4,
                "/* t :: StaticThreadSched(src 1); */ x :: Idle -> Discard;".to_string()
            )
        ]
    );
    assert!(
        tail.last()
            .unwrap()
            .starts_with("par_sched :: StaticThreadSched(src "),
        "{tail:?}"
    );
    let out = output_text(&s, &[], &gr, c, 2, false);
    assert!(out.own_text, "{}", out.top);
}
