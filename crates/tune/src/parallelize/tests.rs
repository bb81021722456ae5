use super::*;
use paraclick_runtime::testing::assert_err;

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

fn plan_for(text: &str, n: usize) -> (Graph, Plan) {
    let (gr, _, plan) = plan_and_app(text, n);
    (gr, plan)
}

fn plan_and_app(text: &str, n: usize) -> (Graph, App, Plan) {
    plan_with(&crate::registry(), text, n)
}

/// [`plan_and_app`] with the classes of `reg` (a test's own besides the
/// library's).
fn plan_with(reg: &Registry, text: &str, n: usize) -> (Graph, App, Plan) {
    let src = Source {
        name: "test".into(),
        text: text.into(),
    };
    let reg = reg.clone();
    let mut app = static_app(&src, &reg, &[]).unwrap();
    let g = paraclick_lang::parse_config(&src, &[]).unwrap();
    let mut gr = Graph::new(g, &app, &HashMap::new(), &reg);
    uniform_costs(&mut gr, &mut app);
    let w = WhatIf {
        core_share: vec![1.0; n],
        ..WhatIf::default()
    };
    let plan = search(&gr, &app, &machine(), n, &w);
    (gr, app, plan)
}

#[test]
fn a_device_reading_one_queue_of_several_is_not_split_again() {
    assert_eq!(
        fanout_config("eth0, BURST 8, FANOUT LB, QUEUE 0", 1, 2).unwrap(),
        "eth0, BURST 8, QUEUE 1, N_QUEUES 2, FANOUT HASH"
    );
    assert_eq!(
        fanout_config("eth0, N_QUEUES 1", 3, 4).unwrap(),
        "eth0, QUEUE 3, N_QUEUES 4, FANOUT HASH"
    );
    let e = fanout_config("eth0, QUEUE 1, N_QUEUES 2", 0, 2).unwrap_err();
    assert!(e.contains("N_QUEUES 2"), "{e}");
    let (_, plan) = plan_for(
        "a :: FromDevice(eth9, QUEUE 0, N_QUEUES 2) -> Strip(14) -> Discard;
         b :: FromDevice(eth9, QUEUE 1, N_QUEUES 2) -> Strip(14) -> Discard;",
        2,
    );
    assert_note(&plan, |n| {
        n.starts_with("a: no device fanout: it already reads one of N_QUEUES 2")
    });
    assert!(!plan.candidates.iter().any(|c| c.rewrite.kind() == "fanout"));
}

#[test]
fn a_device_fanout_shares_the_source_task_among_its_replicas() {
    let (gr, plan) = plan_for(
        "fd :: FromDevice(eth9) -> CheckIPHeader(14) -> c :: Counter -> q :: Queue -> ToDevice(eth9);",
        2,
    );
    let c = plan
        .candidates
        .iter()
        .find(|c| c.rewrite.kind() == "fanout")
        .unwrap();
    assert_eq!(
        c.name,
        "device fanout of fd into 2 (FromDevice QUEUE r of N_QUEUES 2)"
    );
    let t = c.model.tasks.iter().position(|t| t.name == "fd").unwrap();
    let r1 = c
        .model
        .tasks
        .iter()
        .position(|t| t.name == "fd_r1")
        .unwrap();
    let whole = plan.candidates[0].model.tasks[t].cycles_per_packet;
    assert!((c.model.tasks[t].cycles_per_packet - whole / 2.0).abs() < 1e-9);
    assert_eq!(
        c.model.tasks[r1].cycles_per_packet,
        c.model.tasks[t].cycles_per_packet
    );
    assert_ne!(c.assign[t], c.assign[r1]);
    // Each replica feeds half of what the source fed into q.
    let q = &c.model.queues[0];
    assert_eq!(q.producers.len(), 2, "{q:?}");
    assert!(
        q.producers.iter().all(|p| (p.1 - 0.5).abs() < 1e-9),
        "{q:?}"
    );
    // No queue is added: its floor is its prediction.
    assert_eq!(c.model.queues.len(), c.base_queues);
    assert_eq!(c.floor, c.predicted);
    // The rewrite: the header check replicated, merging at the Counter.
    let text = paraclick_lang::print_flat(&rewrite(&gr, c, 2));
    assert!(
        text.contains("fd_r1 :: FromDevice(eth9, QUEUE 1, N_QUEUES 2, FANOUT HASH);"),
        "{text}"
    );
    assert!(
        text.contains("fd :: FromDevice(eth9, QUEUE 0, N_QUEUES 2, FANOUT HASH, REPLICAS fd_r1);"),
        "{text}"
    );
    assert!(
        text.contains("CheckIPHeader@2_r1 [0] -> [0] c_r1;"),
        "{text}"
    );
    assert!(text.contains("c :: Counter(REPLICAS c_r1);"), "{text}");
    assert!(text.contains("c_r1 [0] -> [0] q;"), "{text}");
    assert_note(&plan, |n| {
        n.starts_with("fd: device fanout replicates 2 element(s)") && n.contains("q (Queue)")
    });
}

/// Two sources a and b, each into its own priority scheduler (aps,
/// bps) over two queues, its puller (auq, buq) into a Counter.
fn two_schedulers() -> String {
    let mut text = String::new();
    for x in ["a", "b"] {
        text.push_str(&format!(
            "{x} :: InfiniteSource(LIMIT 10) -> Strip(14) -> CheckIPHeader \
             -> {x}cl :: IPClassifier(ip dscp 46, -);
             {x}cl[0] -> {x}ef :: Queue; {x}cl[1] -> {x}be :: Queue;
             {x}ps :: PrioSched; {x}ef -> [0]{x}ps; {x}be -> [1]{x}ps;
             {x}ps -> {x}uq :: Unqueue -> {x}out :: Counter -> Discard;\n"
        ));
    }
    text
}

#[test]
fn every_scheduler_and_every_source_is_also_split_at_once() {
    // Two sources, each into its own priority scheduler: each split
    // alone, and each kind for both at once.
    let text = two_schedulers();
    let (gr, plan) = plan_for(&text, 2);
    let names: Vec<&str> = plan.candidates.iter().map(|c| c.name.as_str()).collect();
    for want in [
        "flow split after a into 2",
        "flow split after b into 2",
        "flow split after each of a, b into 2 (HashSwitch)",
        "scheduler aps replicated into 2",
        "scheduler bps replicated into 2",
        "schedulers aps, bps each replicated into 2",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(want)),
            "{want}: {names:?}"
        );
    }
    for c in plan
        .candidates
        .iter()
        .filter(|c| c.name.starts_with("schedulers") || c.name.starts_with("flow split after each"))
    {
        let t = paraclick_lang::print_flat(&rewrite(&gr, c, 2));
        if c.name.starts_with("schedulers") {
            // Both parts rewritten, and each replica of a Counter
            // summed under the original's name.
            for x in ["a", "b"] {
                assert!(
                    t.contains(&format!("{x}out :: Counter(REPLICAS {x}out_r1);")),
                    "{t}"
                );
            }
            assert!(
                t.contains("par_hs_aef :: HashSwitch") && t.contains("par_hs_bbe :: HashSwitch"),
                "{t}"
            );
            assert!(
                t.contains("auq_r1 :: Unqueue") && t.contains("buq_r1 :: Unqueue"),
                "{t}"
            );
        } else {
            assert!(
                t.contains("p0 :: HashSwitch(26, 12);") && t.contains("p1 :: HashSwitch(26, 12);"),
                "{t}"
            );
        }
        // Each replica's puller pinned to its own thread.
        assert_eq!(c.fixed.len(), 4, "{}", c.name);
        parses(&t);
    }
}

#[test]
fn round_robins_placement_is_left_to_the_adaptive_scheduler() {
    // Two equal sources, each with its own pinned path: round-robin
    // is as good as any placement, and nothing splits.
    let text = "a :: InfiniteSource(LIMIT 10) -> ToDump(/dev/null);
                b :: InfiniteSource(LIMIT 10) -> ToDump(/dev/null);
                StaticThreadSched(a 0, b 0);";
    let (gr, mut plan) = plan_for(text, 2);
    plan.chosen = 0;
    assert!(adaptive_handoff(&plan, 2));
    assert!(!adaptive_handoff(&plan, 1));
    let out = paraclick_lang::print_flat(&output_graph(&gr, &plan, 2, true));
    assert!(!out.contains("StaticThreadSched"), "{out}");
    let pinned = paraclick_lang::print_flat(&output_graph(&gr, &plan, 2, false));
    assert!(
        pinned.contains("par_sched :: StaticThreadSched(a 0, b 1);"),
        "{pinned}"
    );
    // Another placement is written pinned.
    let k = plan
        .candidates
        .iter()
        .position(|c| matches!(c.rewrite, Rewrite::Place) && c.assign != plan.candidates[0].assign);
    if let Some(k) = k {
        plan.chosen = k;
        assert!(!adaptive_handoff(&plan, 2));
    }
}

#[test]
fn legality_table() {
    assert!(replicable("CheckIPHeader").is_ok());
    assert!(replicable("IPRewriter")
        .unwrap_err()
        .contains("port allocator"));
    assert_err(replicable("Queue"), "a queue: one FIFO for all flows");
    assert!(replicable("Counter").is_ok());
    assert_err(
        replicable("AverageCounter"),
        "its rate is measured over all flows (summed replicas are not written)",
    );
    assert!(replicable("SomethingNew")
        .unwrap_err()
        .contains("not known"));
    // Facts the classes declare, not a list of names here.
    assert_eq!(
        replicable("ThreadSafeQueue").unwrap_err(),
        "a queue: one FIFO for all flows"
    );
    assert!(replicable("VLANEncap").is_ok());
    assert!(replicable("IPReassembler").is_ok());
    assert!(replicable("InfiniteSource")
        .unwrap_err()
        .starts_with("a source"));
    assert!(is_queue("CPUQueue") && !is_queue("Unqueue"));
}

/// `reg` with `spec` (a library class's) registered again as `name`: a
/// class of a test's own, declaring what the library's declares.
fn with_class_as(name: &'static str, spec: &str, edit: impl Fn(&mut ClassSpec)) -> Registry {
    let mut reg = crate::registry();
    let mut c = reg.get(spec).unwrap().clone();
    c.name = name;
    edit(&mut c);
    reg.register(c);
    reg
}

use paraclick_runtime::ClassSpec;

/// The element `e :: CLASS(CONFIG)`, as the planner reads it.
fn element_of(class: &str, config: &str) -> FlatElement {
    let src = Source {
        name: "one".into(),
        text: format!("e :: {class}({config});"),
    };
    paraclick_lang::parse_config(&src, &[])
        .unwrap()
        .elements
        .remove(0)
}

#[test]
fn a_keyword_a_class_declares_keeps_its_element_whole() {
    // A class of the test's own: counts per flow, but a LIMIT_CALL needs
    // all flows' count (as Counter's COUNT_CALL does).
    let mut reg = crate::registry();
    reg.register(
        ClassSpec::element("TallyOfMyOwn", "1/1", "a", |_| Ok(Tally))
            .per_flow()
            .shared_when(&[("LIMIT_CALL", "its LIMIT_CALL needs all flows' count")]),
    );
    learn_classes(&reg);
    let el = |config: &str| element_of("TallyOfMyOwn", config);
    assert!(replicable_el(&el("")).is_ok());
    assert_err(
        replicable_el(&el("LIMIT_CALL 10 s.stop")),
        "its LIMIT_CALL needs all flows' count",
    );
    // A keyword's name inside another argument's text is not the keyword.
    assert!(replicable_el(&el("NOTE \"LIMIT_CALL\"")).is_ok());
    // Counter's, declared by Counter.
    let counter = |config: &str| FlatElement {
        class: "Counter".into(),
        ..el(config)
    };
    assert!(replicable_el(&counter("")).is_ok());
    for kw in ["COUNT_CALL 5 s.stop", "BYTE_COUNT_CALL 5 s.stop"] {
        assert_err(
            replicable_el(&counter(kw)),
            "its COUNT_CALL or BYTE_COUNT_CALL fires when all flows' count reaches N",
        );
    }
}

struct Tally;
impl paraclick_runtime::Element for Tally {}

#[test]
fn a_scheduler_or_puller_of_a_new_class_is_replicated_with_its_queues_when_it_says_so() {
    // PrioSched and Unqueue under names the planner has no list of.
    for (name, like, old) in [
        ("PrioOfMyOwn", "PrioSched", "ps :: PrioSched"),
        ("PullerOfMyOwn", "Unqueue", "uq :: Unqueue"),
    ] {
        let new = old.replace(like, name);
        let text = QOS.replace(old, &new);
        let reg = with_class_as(name, like, |_| {});
        let (_, _, plan) = plan_with(&reg, &text, 2);
        assert!(
            plan.candidates.iter().any(|c| c.rewrite.kind() == "sched"),
            "{name}: {}",
            table(&plan, 2, "")
        );
        // The same class without the fact is kept whole.
        let name2: &'static str = if like == "PrioSched" {
            "PrioOfMyOwnNoFact"
        } else {
            "PullerOfMyOwnNoFact"
        };
        let reg = with_class_as(name2, like, |c| c.replicable_with_queues = false);
        let text = QOS.replace(old, &old.replace(like, name2));
        let (_, _, plan) = plan_with(&reg, &text, 2);
        assert!(
            !plan.candidates.iter().any(|c| c.rewrite.kind() == "sched"),
            "{name2}: {}",
            table(&plan, 2, "")
        );
    }
}

#[test]
fn replica_sums_flow_keys_and_header_changes_are_the_classes_facts() {
    let mut reg = crate::registry();
    for (name, like) in [
        ("CounterOfMyOwn", "Counter"),
        ("ReassemblerOfMyOwn", "IPReassembler"),
        ("StripOfMyOwn", "Strip"),
        ("UnstripOfMyOwn", "Unstrip"),
        ("EtherEncapOfMyOwn", "EtherEncap"),
        ("WrapperOfMyOwn", "IPEncap"),
    ] {
        let mut c = reg.get(like).unwrap().clone();
        c.name = name;
        reg.register(c);
    }
    learn_classes(&reg);
    assert!(sums_replicas("CounterOfMyOwn") && sums_replicas("Counter"));
    assert!(sums_replicas("FromDevice") && !sums_replicas("Discard"));
    assert_eq!(flow_hash_len(["Strip", "ReassemblerOfMyOwn"]), 8);
    assert_eq!(flow_hash_len(["Strip", "IPReassembler"]), 8);
    assert_eq!(flow_hash_len(["Strip", "CounterOfMyOwn"]), 12);
    let el = element_of;
    assert_eq!(ip_offset_after(&el("StripOfMyOwn", "14"), 14), Some(0));
    assert_eq!(ip_offset_after(&el("UnstripOfMyOwn", "14"), 0), Some(14));
    assert_eq!(
        ip_offset_after(
            &el("EtherEncapOfMyOwn", "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2"),
            0
        ),
        Some(14)
    );
    assert_eq!(
        ip_offset_after(&el("WrapperOfMyOwn", "4, 1.0.0.1, 2.0.0.2"), 0),
        None
    );
    assert_eq!(ip_offset_after(&el("CheckIPHeader", ""), 14), Some(14));
    // IPInputCombo strips the Ethernet header whatever its arguments.
    assert_eq!(ip_offset_after(&el("IPInputCombo", "1"), 14), Some(0));
    // Classes that move the header by a length the packet decides.
    for c in ["StripToNetworkHeader", "VLANDecap", "ARPQuerier", "Resize"] {
        assert_eq!(ip_offset_after(&el(c, ""), 14), None, "{c}");
    }
    // A Strip whose length is not a number: not known.
    assert_eq!(ip_offset_after(&el("StripOfMyOwn", "$n"), 14), None);
    // Every library class whose name says it encapsulates (or unwraps)
    // declares that the planner cannot follow the header through it.
    let lib = crate::registry();
    for n in lib.names() {
        if (n.contains("Encap") || n.contains("Tunnel")) && n != "EtherEncap" {
            assert_eq!(
                lib.get(n).unwrap().header_change,
                paraclick_runtime::HeaderChange::Unknown,
                "{n}"
            );
        }
    }
}

const QOS: &str = "src :: InfiniteSource(LIMIT 10) -> Strip(14) -> CheckIPHeader \
    -> cl :: IPClassifier(ip dscp 46, -);
    cl[0] -> ef_in :: Counter -> ef :: Queue(10000);
    cl[1] -> be :: Queue;
    ps :: PrioSched;
    ef -> [0]ps;
    be -> [1]ps;
    ps -> uq :: Unqueue -> Unstrip(14) -> SetIPDSCP(0) -> out :: Counter -> Discard;";

#[test]
fn a_priority_scheduler_is_replicated_per_flow_group_behind_a_hash_of_its_queues_packets() {
    for n in [2, 4] {
        let (gr, plan) = plan_for(QOS, n);
        let (k, c) = plan
            .candidates
            .iter()
            .enumerate()
            .find(|(_, c)| c.rewrite.kind() == "sched")
            .unwrap_or_else(|| panic!("{}", table(&plan, n, "")));
        // The packets reach the queues stripped: the hash is over the
        // IP header's addresses and ports.
        assert!(
            c.name.contains("ps replicated into") && c.name.contains("HashSwitch(12, 12)"),
            "{}",
            c.name
        );
        // Each replica's puller on its own thread.
        for r in 0..n {
            let name = if r == 0 {
                "uq".to_string()
            } else {
                format!("uq_r{r}")
            };
            let i = c
                .task_names
                .iter()
                .position(|x| x.as_deref() == Some(&name))
                .unwrap();
            assert_eq!(c.assign[i], r, "{name}");
        }
        assert_note(&plan, |x| {
            x == "ps: scheduler replication copies 8 element(s); kept whole where the replicas merge: none"
        });
        let text = paraclick_lang::print_flat(&rewrite(&gr, &plan.candidates[k], n));
        // The queues' capacity shared out (Queue's default 1000 for
        // be); ef_in, before the hash, kept whole; out replicated, its
        // original reporting the sums under its name.
        let cap = 10000usize.div_ceil(n);
        assert!(text.contains(&format!("ef :: Queue({cap});")), "{text}");
        assert!(
            text.contains(&format!("ef_r{} :: Queue({cap});", n - 1)),
            "{text}"
        );
        assert!(
            text.contains(&format!("be :: Queue({});", 1000usize.div_ceil(n))),
            "{text}"
        );
        assert!(!text.contains("ef_in_r1"), "{text}");
        let reps: Vec<String> = (1..n).map(|r| format!("out_r{r}")).collect();
        assert!(
            text.contains(&format!("out :: Counter(REPLICAS {});", reps.join(" "))),
            "{text}"
        );
        assert!(text.contains("ef_in [0] -> [0] par_hs_ef;"), "{text}");
        assert!(
            text.contains(&format!("par_hs_ef [{}] -> [0] ef_r{};", n - 1, n - 1)),
            "{text}"
        );
        assert!(
            text.contains(&format!("ps_r{} [0] -> [0] uq_r{};", n - 1, n - 1)),
            "{text}"
        );
        // It parses, and every element checks.
        let src = Source {
            name: "rewritten".into(),
            text,
        };
        let reg = crate::registry();
        static_app(&src, &reg, &[]).unwrap();
    }
}

#[test]
fn a_scheduler_with_a_rate_or_a_puller_with_one_is_kept_whole_and_the_plan_says_why() {
    let shaped = QOS.replace("ps -> uq", "ps -> BandwidthShaper(1Mbps) -> uq");
    let rated = QOS.replace("uq :: Unqueue", "uq :: RatedUnqueue(1000)");
    for (text, why) in [
        (shaped.as_str(), "its pull path has BandwidthShaper"),
        (rated.as_str(), "may not be copied with its queues"),
    ] {
        let (_, plan) = plan_for(text, 2);
        assert!(
            !plan.candidates.iter().any(|c| c.rewrite.kind() == "sched"),
            "{}",
            table(&plan, 2, "")
        );
        assert_note(&plan, |x| {
            x.contains("no scheduler replication") && x.contains(why)
        });
    }
}

#[test]
fn a_queue_capacity_is_shared_among_its_replicas() {
    assert_eq!(share_capacity("10000", 2), "5000");
    assert_eq!(share_capacity("1001", 2), "501");
    assert_eq!(share_capacity("", 4), "250");
    assert_eq!(share_capacity("CAPACITY 300", 4), "CAPACITY 75");
    assert_eq!(share_capacity("3", 4), "1");
}

#[test]
fn one_heavy_path_is_split_and_the_rewrite_parses() {
    // One source, a long stateless path, a counter: a flow split (or a
    // pipeline split) must beat any placement of the single task.
    let mut text = String::from("s :: InfiniteSource(LIMIT 10);\ns");
    for i in 0..8 {
        text.push_str(&format!(" -> w{i} :: Null"));
    }
    text.push_str(" -> c :: Counter -> Discard;\n");
    let (gr, plan) = plan_for(&text, 2);
    let chosen = &plan.candidates[plan.chosen];
    assert!(chosen.name.contains("split"), "{}", table(&plan, 2, ""));
    assert!(
        chosen.predicted > plan.candidates[1].predicted * 1.3,
        "{}",
        table(&plan, 2, "")
    );
    // The counter is replicated, its original summing the replicas'
    // counts under its name.
    let flow = plan
        .candidates
        .iter()
        .find(|c| c.rewrite.kind() == "flow")
        .unwrap();
    let t = paraclick_lang::print_flat(&rewrite(&gr, flow, 2));
    assert!(t.contains("c :: Counter(REPLICAS c_r1);"), "{t}");
    assert!(t.contains("c_r1 [0] -> [0] Discard"), "{t}");
    // Every candidate's rewrite is a configuration that builds.
    for c in &plan.candidates {
        let g = rewrite(&gr, c, 2);
        let src = Source {
            name: "rewritten".into(),
            text: paraclick_lang::print_flat(&g),
        };
        let r = profile::build(
            &src,
            &crate::registry(),
            &[],
            2,
            SchedPolicy::Static,
            false,
            true,
        );
        assert!(r.is_ok(), "{}: {}", c.name, src.text);
    }
}

#[test]
fn a_check_run_measures_the_rewrite_at_the_offered_rate() {
    // A split of one path fed by a FastUDPFlows (which takes an
    // offered rate): a rate no machine forwards fails, a slow one
    // passes, loss-free.
    let reg = crate::registry();
    let plan_of = |source: &str| {
        let (gr, app, w) = path_of(source, 4);
        let plan = search(&gr, &app, &machine(), 2, &w);
        let k = plan
            .candidates
            .iter()
            .position(|c| c.rewrite.kind() == "pipeline")
            .expect("a pipeline split");
        (gr, plan, k)
    };
    let (gr, plan, k) = plan_of(
        "FastUDPFlows(0, -1, 64, 02:00:00:00:00:01, 10.0.0.1, 02:00:00:00:00:02, 10.0.0.2, 4, 1000000000)",
    );
    let c = &plan.candidates[k];
    match check_run(&gr, c, 2, &reg, 1e9, "check").unwrap() {
        // Behind the rate, or unsteady at saturation.
        Checked::Failed(why) => assert!(why.contains("pps entered"), "{why}"),
        Checked::Passed(how) => panic!("passed at 1e9 pps: {how}"),
    }
    match check_run(&gr, c, 2, &reg, 20_000.0, "check").unwrap() {
        Checked::Passed(how) => assert!(how.contains("0 dropped"), "{how}"),
        Checked::Failed(why) => panic!("failed at 20,000 pps: {why}"),
    }
    // A source that takes no offered rate: not run.
    let (gr, plan, k) = plan_of("InfiniteSource(LIMIT -1)");
    let e = check_run(&gr, &plan.candidates[k], 2, &reg, 1000.0, "check").unwrap_err();
    assert!(
        e.contains("InfiniteSource") && e.contains("no offered rate"),
        "{e}"
    );
}

/// A path of `nulls` Null elements after `source` and a Counter,
/// with uniform costs, predicted in the slow state (a 200 ns line
/// against the calibration's 50), where its splits win with their
/// estimated terms.
fn path_of(source: &str, nulls: usize) -> (Graph, App, WhatIf) {
    let mut text = format!("s :: {source};\ns");
    for i in 0..nulls {
        text.push_str(&format!(" -> w{i} :: Null"));
    }
    text.push_str(" -> c :: Counter -> Discard;\n");
    let src = Source {
        name: "test".into(),
        text,
    };
    let reg = crate::registry();
    let mut app = static_app(&src, &reg, &[]).unwrap();
    let g = paraclick_lang::parse_config(&src, &[]).unwrap();
    let mut gr = Graph::new(g, &app, &HashMap::new(), &reg);
    uniform_costs(&mut gr, &mut app);
    let w = WhatIf {
        core_share: vec![1.0; 2],
        line_ns: Some(200.0),
        ..WhatIf::default()
    };
    (gr, app, w)
}

/// One heavy path: eight Nulls after an InfiniteSource.
fn heavy_path() -> (Graph, App, WhatIf) {
    path_of("InfiniteSource(LIMIT 10)", 8)
}

#[test]
fn a_chosen_plan_that_loses_packets_in_its_check_run_is_rejected() {
    // One heavy path in the slow state: a split is chosen.
    let (gr, app, w) = heavy_path();
    let m = machine();
    let plan0 = search(&gr, &app, &m, 2, &w);
    let first = plan0.chosen;
    assert!(!matches!(plan0.candidates[first].rewrite, Rewrite::Place));
    let must = best_place(&plan0.candidates) * (1.0 + PLACE_MARGIN);
    // Passed: the choice stands, checked once at the rate it must
    // reach, and the note says so.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let mut asked = Vec::new();
    let notes = check_choice(&mut plan, &mut |_, k, rate| {
        asked.push((k, rate));
        Ok(Checked::Passed("fine".into()))
    });
    assert_eq!(plan.chosen, first);
    assert_eq!(asked, vec![(first, must)]);
    assert!(
        notes[0].contains("checked") && notes[0].contains("fine"),
        "{notes:?}"
    );
    // Failed each time: every split it tries is rejected, never one
    // twice, and a placement ends chosen.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let mut asked = Vec::new();
    let notes = check_choice(&mut plan, &mut |_, k, _| {
        asked.push(k);
        Ok(Checked::Failed("lost 5%".into()))
    });
    assert!(is_round_robin(&plan, plan.chosen), "{notes:?}");
    assert_eq!(asked[0], first);
    assert!(asked.len() <= CHECK_MAX);
    let uniq: HashSet<usize> = asked.iter().copied().collect();
    assert_eq!(uniq.len(), asked.len(), "{asked:?}");
    for &k in &asked {
        assert!(plan.candidates[k].rejected);
    }
    assert!(
        notes[0].contains("rejected") && notes[0].contains("lost 5%"),
        "{notes:?}"
    );
    // The first fails, the next passes: the next is chosen.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let notes = check_choice(&mut plan, &mut |_, k, _| {
        Ok(if k == first {
            Checked::Failed("lost".into())
        } else {
            Checked::Passed("fine".into())
        })
    });
    if !matches!(plan.candidates[plan.chosen].rewrite, Rewrite::Place) {
        assert_ne!(plan.chosen, first, "{notes:?}");
        assert!(notes.last().unwrap().contains("checked"), "{notes:?}");
    }
    // Could not run: the choice stands, and the note says why.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let notes = check_choice(&mut plan, &mut |_, _, _| Err("no source".into()));
    assert_eq!(plan.chosen, first);
    assert!(notes[0].contains("not checked: no source"), "{notes:?}");
    // Round-robin's placement chosen is never run.
    let mut plan = search(&gr, &app, &m, 2, &w);
    plan.chosen = 0;
    let notes = check_choice(&mut plan, &mut |_, _, _| panic!("ran round-robin"));
    assert!(notes.is_empty());
    // Another placement is run at round-robin's predicted rate and
    // 2%; rejected, round-robin is chosen (no split left to choose).
    let mut plan = search(&gr, &app, &m, 2, &w);
    for c in plan.candidates.iter_mut().skip(2) {
        c.rejected = true;
    }
    plan.candidates[1].assign = plan.candidates[0].assign.iter().map(|&t| 1 - t).collect();
    plan.candidates[1].predicted = plan.candidates[0].predicted * 1.5;
    plan.chosen = choose(&plan.candidates);
    assert_eq!(plan.chosen, 1);
    let rr = plan.candidates[0].predicted;
    let mut asked = Vec::new();
    let notes = check_choice(&mut plan, &mut |_, k, rate| {
        asked.push((k, rate));
        Ok(Checked::Failed("lost".into()))
    });
    assert_eq!(asked, vec![(1, rr * (1.0 + PLACE_MARGIN))]);
    assert_eq!(plan.chosen, 0, "{notes:?}");
    assert!(
        notes[0].contains("round-robin's predicted rate"),
        "{notes:?}"
    );
}

#[test]
fn a_split_is_predicted_again_with_its_measured_line_terms() {
    let (gr, app, w) = heavy_path();
    let m = machine();
    let plan0 = search(&gr, &app, &m, 2, &w);
    let chosen0 = plan0.chosen;
    assert!(
        plan0.candidates[chosen0].name.contains("split"),
        "{}",
        table(&plan0, 2, "")
    );
    // Nothing measured: nothing moves, and only splits that could be
    // chosen were asked, best first.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let mut asked = Vec::new();
    let notes = measure_splits(&mut plan, &m, 2, &w, &mut |_, k| {
        asked.push(k);
        Ok((Vec::new(), "line term: estimated".into()))
    });
    assert_eq!(plan.chosen, chosen0);
    assert_eq!(asked.first(), Some(&chosen0), "{notes:?}");
    let place = best_place(&plan.candidates);
    for &k in &asked {
        assert!(!matches!(plan.candidates[k].rewrite, Rewrite::Place));
        assert!(plan.candidates[k].predicted > place * (1.0 + PLACE_MARGIN));
        assert_eq!(plan.candidates[k].predicted, plan0.candidates[k].predicted);
    }
    assert!(asked.len() <= MEASURE_MAX);
    // Measured: each split's new queues cost both ends four lines per
    // crossing packet. Every split falls below the placements'
    // margin and a placement is chosen.
    let mut plan = search(&gr, &app, &m, 2, &w);
    let notes = measure_splits(&mut plan, &m, 2, &w, &mut |c, _| {
        Ok((four_lines(c, |q| q.starts_with("par_q")), String::new()))
    });
    assert!(!notes.is_empty());
    let t = table(&plan, 2, "");
    assert!(
        matches!(plan.candidates[plan.chosen].rewrite, Rewrite::Place),
        "{t}\n{notes:?}"
    );
    for (k, c) in plan.candidates.iter().enumerate() {
        if notes.iter().any(|x| x.starts_with(&format!("#{k}:"))) {
            assert!(c.predicted < plan0.candidates[k].predicted, "{t}");
        }
    }
    // In the fast state the same terms, on every queue, cost their
    // lines too (whole lines at 50 ns): the choice stands.
    let fast = WhatIf {
        line_ns: Some(50.0),
        ..w.clone()
    };
    let p0 = search(&gr, &app, &m, 2, &fast);
    let mut p1 = search(&gr, &app, &m, 2, &fast);
    measure_splits(&mut p1, &m, 2, &fast, &mut |c, _| {
        Ok((four_lines(c, |_| true), String::new()))
    });
    assert_eq!(p1.chosen, p0.chosen);
}

/// One source, eight Nulls and a Counter: one path to split.
fn one_path() -> String {
    let mut text = String::from("s :: InfiniteSource(LIMIT 10);\ns");
    for i in 0..8 {
        text.push_str(&format!(" -> w{i} :: Null"));
    }
    text.push_str(" -> c :: Counter -> Discard;\n");
    text
}

#[test]
fn a_split_is_chosen_only_if_a_line_more_per_crossing_packet_would_not_undo_its_gain() {
    let (_, plan) = plan_for(&one_path(), 2);
    let m = machine();
    // The floor: below the prediction for every split, by more at a
    // slower line; a placement's is its prediction.
    let drop = |line: f64, c: &Candidate| {
        let w = WhatIf {
            core_share: vec![1.0; 2],
            line_ns: Some(line),
            ..WhatIf::default()
        };
        let p = predict(&c.model, &m, &c.assign, 2, &w);
        let f = floor(&c.model, c.base_queues, &c.assign, &m, 2, &w);
        assert!(f <= p, "{}: floor {f} over {p}", c.name);
        assert_eq!(
            floor(&c.model, c.model.queues.len(), &c.assign, &m, 2, &w),
            p
        );
        p - f
    };
    let mut splits = 0;
    for c in &plan.candidates {
        if matches!(c.rewrite, Rewrite::Place) {
            assert_eq!(c.floor, c.predicted, "{}", c.name);
            continue;
        }
        splits += 1;
        let (fast, slow) = (drop(30.0, c), drop(150.0, c));
        assert!(fast > 0.0 && slow > fast, "{}: {fast} {slow}", c.name);
    }
    assert!(splits > 0, "{}", table(&plan, 2, ""));
    // The choice goes by the floor: a split predicted 10% over the
    // best placement is chosen when a line more would leave it 3%
    // over, not when it would leave it 1% over.
    let mut cands = plan.candidates.clone();
    let k = cands
        .iter()
        .position(|c| !matches!(c.rewrite, Rewrite::Place))
        .unwrap();
    for c in cands.iter_mut() {
        if !matches!(c.rewrite, Rewrite::Place) {
            c.predicted = 0.0;
            c.floor = 0.0;
        }
    }
    let place = best_place(&cands);
    cands[k].predicted = place * 1.10;
    cands[k].floor = place * 1.01;
    assert!(matches!(cands[choose(&cands)].rewrite, Rewrite::Place));
    cands[k].floor = place * 1.03;
    assert_eq!(choose(&cands), k);
    // Of two splits predicted within 2% of each other, the one with
    // the higher floor; further apart, the higher prediction.
    let k2 = cands
        .iter()
        .rposition(|c| !matches!(c.rewrite, Rewrite::Place))
        .unwrap();
    assert_ne!(k, k2);
    cands[k2].predicted = place * 1.09;
    cands[k2].floor = place * 1.09;
    assert_eq!(choose(&cands), k2);
    cands[k2].predicted = place * 1.07;
    cands[k2].floor = place * 1.07;
    assert_eq!(choose(&cands), k);
}

#[test]
fn a_split_measured_alike_each_time_is_doubted_by_its_spread_not_a_whole_line() {
    let t = |consumer: Option<f64>, spread: Option<f64>| LineTerm {
        producer: Some(0.3),
        consumer,
        consumer_data: DATA_LINES_PER_PACKET,
        spread,
    };
    // Estimated, or measured once: a whole line.
    assert_eq!(line_doubt(&t(None, None)), LINE_DOUBT);
    assert_eq!(line_doubt(&t(None, Some(0.01))), LINE_DOUBT);
    assert_eq!(line_doubt(&t(Some(1.4), None)), LINE_DOUBT);
    // Measured alike: twice the deviation, at least the least doubt;
    // measured far apart: no more than a line.
    assert_eq!(line_doubt(&t(Some(1.4), Some(0.01))), MEASURED_DOUBT_MIN);
    assert!((line_doubt(&t(Some(1.4), Some(0.2))) - 0.4).abs() < 1e-12);
    assert_eq!(line_doubt(&t(Some(1.4), Some(0.9))), LINE_DOUBT);

    // A split's floor rises with its new queues' measured agreement:
    // between its prediction and its floor at a whole line.
    let (_, plan) = plan_for(&one_path(), 2);
    let m = machine();
    let w = WhatIf {
        core_share: vec![1.0; 2],
        line_ns: Some(150.0),
        ..WhatIf::default()
    };
    let c = plan
        .candidates
        .iter()
        .find(|c| !matches!(c.rewrite, Rewrite::Place))
        .expect("a split");
    let with = |spread: Option<f64>| {
        let mut model = c.model.clone();
        for q in model.queues.iter_mut().skip(c.base_queues) {
            q.line_growth.consumer = Some(1.2);
            q.line_growth.spread = spread;
        }
        (
            predict(&model, &m, &c.assign, 2, &w),
            floor(&model, c.base_queues, &c.assign, &m, 2, &w),
        )
    };
    let (p, once) = with(None);
    let (p2, alike) = with(Some(0.05));
    let (p3, apart) = with(Some(2.0));
    assert_eq!((p, p), (p2, p3), "the spread leaves the prediction alone");
    assert!(once < alike && alike < p, "{once} {alike} {p}");
    assert_eq!(apart, once);
}

/// A measurement stand-in: four lines per crossing packet at both
/// ends of each of `c`'s queues whose name `keep` takes.
fn four_lines(c: &Candidate, keep: impl Fn(&str) -> bool) -> Vec<(String, LineTerm)> {
    c.model
        .queues
        .iter()
        .filter(|q| keep(&q.name))
        .map(|q| {
            let t = LineTerm {
                producer: Some(4.0),
                consumer: Some(4.0),
                ..LineTerm::default()
            };
            (q.name.clone(), t)
        })
        .collect()
}

#[test]
fn a_new_queue_is_estimated_from_its_consumers_classes_and_its_sources_measured_crossings() {
    let src = Source {
        name: "test".into(),
        text: "s :: InfiniteSource(LIMIT 10) -> a :: Null -> b :: Null \
               -> ck :: CheckIPHeader -> q :: Queue -> Discard;"
            .into(),
    };
    let reg = crate::registry();
    let mut app = static_app(&src, &reg, &[]).unwrap();
    let g = paraclick_lang::parse_config(&src, &[]).unwrap();
    let mut gr = Graph::new(g, &app, &HashMap::new(), &reg);
    uniform_costs(&mut gr, &mut app);
    let el = |name: &str| gr.g.find(name).unwrap();
    let s = app.tasks.iter().position(|t| t.name == "s").unwrap();
    // Nothing measured: the consumer's data lines from its classes.
    let t = new_queue_term(&gr, &app, s, &[el("b"), el("ck")]);
    assert_eq!(t.consumer_data, DATA_LINES_PER_PACKET);
    assert_eq!((t.producer, t.consumer), (None, None));
    let t = new_queue_term(&gr, &app, s, &[el("b")]);
    assert_eq!(t.consumer_data, 0.0);
    // The source's crossings through q measured (its consumer reads
    // data: the configuration's estimate said so): a new queue to a
    // consumer that reads data takes the source's figure, one to a
    // consumer that does not keeps the chain's.
    app.queues[0].line_growth = LineTerm {
        producer: Some(0.8),
        consumer: Some(1.1),
        consumer_data: DATA_LINES_PER_PACKET,
        spread: None,
    };
    let t = new_queue_term(&gr, &app, s, &[el("ck")]);
    assert_eq!(t.producer, Some(0.8));
    assert_eq!(t.consumer, None, "the consumer is the new queue's own");
    assert_eq!(new_queue_term(&gr, &app, s, &[el("b")]).producer, None);
    // Another task's queues say nothing of this one's source.
    let other = 1 - s;
    assert_eq!(new_queue_term(&gr, &app, other, &[el("ck")]).producer, None);
    // The search gives the pipeline split's queue this estimate.
    let w = WhatIf {
        core_share: vec![1.0; 2],
        ..WhatIf::default()
    };
    let plan = search(&gr, &app, &machine(), 2, &w);
    let split = plan
        .candidates
        .iter()
        .find(|c| c.rewrite.kind() == "pipeline")
        .expect("a pipeline split");
    let q = split.model.queues.last().unwrap();
    assert!(q.name.starts_with("par_q"), "{}", q.name);
    assert_eq!(
        q.line_growth.consumer_data, DATA_LINES_PER_PACKET,
        "{}",
        split.name
    );
    assert_eq!(q.line_growth.producer, Some(0.8));
}

#[test]
fn search_is_fast_on_hundreds_of_elements() {
    // 40 sources, each with a path of 8 elements into one of 20
    // queues drained by its own Discard: 420 elements, 60 tasks.
    let mut text = String::new();
    for q in 0..20 {
        text.push_str(&format!("q{q} :: Queue -> Discard;\n"));
    }
    for s in 0..40 {
        text.push_str(&format!("s{s} :: InfiniteSource(LIMIT 10)"));
        for i in 0..8 {
            text.push_str(&format!(" -> n{s}_{i} :: Null"));
        }
        text.push_str(&format!(" -> q{};\n", s % 20));
    }
    let src = Source {
        name: "big".into(),
        text: text.clone(),
    };
    let g = paraclick_lang::parse_config(&src, &[]).unwrap();
    assert!(g.elements.len() >= 400, "{}", g.elements.len());
    // The search's size: a bounded number of candidates (2 placements,
    // at most one pipeline split per task and one flow split per
    // source), each placed by a bounded local search (a generous
    // bound on wall time: CI machines are slow and shared).
    let t0 = std::time::Instant::now();
    let (_, plan) = plan_for(&text, 4);
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        plan.candidates.len() <= 2 + 60 + 40,
        "{}",
        plan.candidates.len()
    );
    assert!(plan.candidates.len() >= 40);
    assert!(secs < 30.0, "search took {secs} s");
    eprintln!(
        "search over {} elements: {} candidates in {:.3} s",
        g.elements.len(),
        plan.candidates.len(),
        secs
    );
}

/// Parses a rewritten configuration into its application model.
fn parses(t: &str) {
    let src = Source {
        name: "rewritten".into(),
        text: t.into(),
    };
    static_app(&src, &crate::registry(), &[]).unwrap_or_else(|e| panic!("{e}: {t}"));
}

#[test]
fn several_tasks_pipeline_splits_are_combined() {
    // Two sources, four threads: each task's pipeline split alone
    // leaves threads idle.
    let text = "a :: InfiniteSource(LIMIT 10) -> Strip(14) -> CheckIPHeader -> Paint(1) \
                -> Paint(2) -> Paint(3) -> Paint(4) -> Paint(5) -> Paint(6) -> Discard;
                b :: InfiniteSource(LIMIT 10) -> Strip(14) \
                -> CheckIPHeader -> Paint(1) -> Paint(2) -> Paint(3) -> Paint(4) -> Paint(5) \
                -> Paint(6) -> Paint(7) -> Discard;";
    let (gr, plan) = plan_for(text, 4);
    let (k, c) = plan
        .candidates
        .iter()
        .enumerate()
        .find(|(_, c)| c.rewrite.kind() == "combination")
        .unwrap_or_else(|| panic!("no combination: {:?}", names(&plan)));
    let parts = c.rewrite.parts();
    assert!(parts.len() >= 2, "{}", c.name);
    assert!(parts.iter().all(|p| p.kind() == "pipeline"), "{}", c.name);
    // It beats every split of one task alone, and is chosen.
    for o in plan
        .candidates
        .iter()
        .filter(|o| o.name.starts_with("pipeline split"))
    {
        assert!(
            c.predicted > o.predicted * (1.0 + PLACE_MARGIN),
            "{} vs {}",
            c.name,
            o.name
        );
    }
    assert_eq!(plan.chosen, k, "{:?}", names(&plan));
    let t = paraclick_lang::print_flat(&rewrite(&gr, c, 4));
    for i in 0..parts.len() {
        assert!(t.contains(&format!("par_q{k}p{i} :: Queue(1000);")), "{t}");
        assert!(
            t.contains(&format!("par_u{k}p{i} :: Unqueue(BURST 32);")),
            "{t}"
        );
        assert!(
            t.contains(&format!("par_u{k}p{i} {}", c.assign[gr.task_set.len() + i])),
            "{t}"
        );
    }
    parses(&t);
}

/// Some note of `plan` is what `ok` looks for.
fn assert_note(plan: &Plan, ok: impl Fn(&str) -> bool) {
    assert!(plan.notes.iter().any(|n| ok(n)), "{:?}", plan.notes);
}

fn names(plan: &Plan) -> Vec<&str> {
    plan.candidates.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn splits_of_different_kinds_combine_on_disjoint_tasks() {
    // a's flow split and b's scheduler replication touch different
    // tasks; a's flow split and a's scheduler replication do not (the
    // replication's HashSwitches run in a's task, which the flow
    // split replaces).
    let text = two_schedulers();
    let (gr, app, plan) = plan_and_app(&text, 2);
    let single = |prefix: &str| -> (usize, Part) {
        let k = plan
            .candidates
            .iter()
            .position(|c| c.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {:?}", names(&plan)));
        let ps = plan.candidates[k].rewrite.parts();
        assert_eq!(ps.len(), 1);
        (k, ps[0].clone())
    };
    let fa = single("flow split after a into 2");
    let sa = single("scheduler aps replicated");
    let sb = single("scheduler bps replicated");
    assert!(Part::compatible(&gr, &app, &fa.1, &sb.1));
    assert!(!Part::compatible(&gr, &app, &fa.1, &sa.1));
    assert!(!Part::compatible(&gr, &app, &fa.1, &fa.1));
    let w = WhatIf {
        core_share: vec![1.0; 2],
        ..WhatIf::default()
    };
    let c = combo_candidate(
        &gr,
        &app,
        &machine(),
        2,
        &w,
        &[fa, sb],
        &plan.candidates,
        &task_names(&gr),
    );
    let k = plan.candidates.len();
    assert!(
        c.name.starts_with("combination: flow split after a into 2"),
        "{}",
        c.name
    );
    // Both parts' replicas pinned r to thread r.
    assert_eq!(c.fixed.len(), 4, "{:?}", c.fixed);
    let t = paraclick_lang::print_flat(&rewrite(&gr, &c, 2));
    for want in [
        format!("par_hs{k}p0 :: HashSwitch(26, 12);"),
        format!("par_u{k}p0_1 :: Unqueue(BURST 32);"),
        "par_hs_bef :: HashSwitch".to_string(),
        "buq_r1 :: Unqueue".to_string(),
        "bout :: Counter(REPLICAS bout_r1);".to_string(),
        "bef_r1 :: Queue".to_string(),
    ] {
        assert!(t.contains(&want), "{want}: {t}");
    }
    // a's scheduler and b's flow path are left alone.
    assert!(!t.contains("auq_r1") && !t.contains("par_hs_aef"), "{t}");
    parses(&t);
}

#[test]
fn no_pipeline_split_behind_a_puller() {
    // The Unqueue's path is the long one, and the best place for a
    // split; but an Unqueue does not wait for room, so a queue after
    // it would drop where the configuration's queue does not.
    let text = "s :: InfiniteSource(LIMIT 10) -> q :: Queue -> u :: Unqueue -> Strip(14) \
                -> CheckIPHeader -> Paint(1) -> Paint(2) -> Paint(3) -> Paint(4) -> Discard;";
    let (_, plan) = plan_for(text, 2);
    let splits: Vec<&str> = names(&plan)
        .into_iter()
        .filter(|n| n.starts_with("pipeline split") && !n.contains("s[0]"))
        .collect();
    assert!(splits.is_empty(), "{splits:?}");
    assert_note(&plan, |n| {
        n.starts_with("u: no pipeline split: its task pulls (Unqueue)")
    });
}

#[test]
fn a_pipeline_split_is_made_where_only_its_task_runs() {
    // Two sources merge into one path: a queue after the merge would
    // take the rest of both, which one task's split does not model.
    let text = "a :: InfiniteSource(LIMIT 10) -> Paint(1) -> Paint(2) -> m :: Paint(3);
                b :: InfiniteSource(LIMIT 10) -> Paint(4) -> Paint(5) -> m;
                m -> Strip(14) -> CheckIPHeader -> Paint(6) -> Paint(7) -> Discard;";
    let (gr, plan) = plan_for(text, 2);
    let mut seen = HashSet::new();
    let mut pipes = 0;
    for c in &plan.candidates {
        assert!(seen.insert(c.name.clone()), "twice: {}", c.name);
        if let [Part::Pipeline { task, conn, .. }] = c.rewrite.parts() {
            pipes += 1;
            let from = gr.g.connections[*conn].from;
            let runs = gr.task_set.iter().filter(|s| s.contains(&from)).count();
            assert_eq!(
                runs, 1,
                "{} splits after {} (task {task})",
                c.name, gr.g.elements[from].name
            );
        }
    }
    assert_eq!(pipes, 2, "{:?}", names(&plan));
}
