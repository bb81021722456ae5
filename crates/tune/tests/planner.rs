//! The planner called as a library: a configuration from conf/, every
//! element counted alike (no profiling run, so the plan depends on the
//! graph alone), searched for N threads on a fixed machine; the tests read
//! the candidates and the rewritten graph as values, not as text. (The
//! command line's own tests are crates/paraclick/tests/parallelize.rs.)

use paraclick_lang::{parse_config, FlatGraph, Source};
use paraclick_model::app::WhatIf;
use paraclick_model::machine::Machine;
use paraclick_tune::parallelize::{
    rewrite, search, static_app, uniform_costs, Candidate, Graph, Part, Plan,
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

/// conf/`name` with `defines`, planned for `n` threads.
fn plan(name: &str, defines: &[(&str, &str)], n: usize) -> (Graph, Plan) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conf")
        .join(name);
    let src = Source {
        name: format!("conf/{name}"),
        text: std::fs::read_to_string(&path).unwrap(),
    };
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
