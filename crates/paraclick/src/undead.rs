//! `paraclick undead`: dead-code removal, as Click's click-undead(1)
//! describes it. The element facts come from each class's spec
//! ([`ClassSpec::kind`](paraclick_runtime::ClassSpec), `dead_code`,
//! `flow_code`, `processing`); a class the registry lacks is a plain
//! element through which every input flows to every output.
//!
//! In order:
//! 1. pass-throughs go: a [`DeadCode::Through`] element (Null) joins what
//!    fed input i to what output i fed; a [`DeadCode::StaticSwitch`]
//!    joins what fed it to what its chosen output fed (nothing, for an
//!    output out of range); a [`DeadCode::StaticPullSwitch`] joins what fed
//!    its chosen input to what it fed;
//! 2. a connection stays only if packets from a source can arrive on it
//!    and go on to a sink, following each class's flow code; an element
//!    left with no connection goes, unless it is an information element
//!    (a class with no ports, or an unknown class never connected);
//! 3. schedulers ([`Kind::Scheduler`]) lose their dead inputs and tees
//!    ([`DeadCode::Tee`]) their dead outputs, the rest renumbered in order
//!    (a [`DeadCode::SelectsInput`] scheduler's argument following its
//!    input); one left with a single input (scheduler) or output (tee) is
//!    removed, its two sides joined (a PullSwitch only if it pulls from
//!    that input); a thread placement (StaticThreadSched's `ELEMENT
//!    THREAD`) of an element that went goes too;
//! 4. a port of an element left that lost its connections is connected
//!    to a new Discard (a push output) or from a new Idle (an input), so
//!    that the result still checks.
//!
//! Sources: [`Kind::Source`] elements, and [`Kind::Device`] elements with
//! connected outputs. Sinks: [`DeadCode::Sink`] elements, [`Kind::Device`]
//! elements with connected inputs, and [`DeadCode::PullSink`] elements
//! whose input is pull (a pushed Discard only drops).

use paraclick_lang::check::{check_graph_partial, ClassSpec as LangSpec, FlowCode, PortKind};
use paraclick_lang::{CheckedGraph, FlatConnection, FlatElement, FlatGraph};
use paraclick_runtime::{DeadCode, Kind, Registry};
use std::process::ExitCode;

/// `paraclick undead`: reads, removes dead code, writes the result.
pub(crate) fn main(a: &crate::UndeadArgs) -> ExitCode {
    let g = match crate::read_flat(&a.input, &a.out.errors) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let out = undead(&g, &crate::registry());
    crate::write_output(&a.out.output, &paraclick_lang::print_click(&out))
}

/// What the transform knows of one element.
struct Facts {
    known: bool,
    kind: Kind,
    role: DeadCode,
    flow: FlowCode,
    no_ports: bool,
}

fn facts(reg: &Registry, class: &str) -> Facts {
    let all = FlowCode::parse("x/x").expect("valid flow code");
    match reg.get(class) {
        Some(c) => Facts {
            known: true,
            kind: c.kind,
            role: c.dead_code,
            flow: FlowCode::parse(c.flow_code).unwrap_or(all),
            no_ports: c.port_count == "0/0",
        },
        None => Facts {
            known: false,
            kind: Kind::Plain,
            role: DeadCode::Plain,
            flow: all,
            no_ports: false,
        },
    }
}

/// The first argument of `config` as a port number: `None` when it is
/// not an integer, `Some(None)` for a negative one (no port).
fn port_arg(config: &str) -> Option<Option<usize>> {
    let args = paraclick_lang::args::split_args(config);
    let n: i64 = args.first()?.parse().ok()?;
    Some(usize::try_from(n).ok())
}

/// Removes dead code from `g` (see the module's documentation).
pub fn undead(g: &FlatGraph, reg: &Registry) -> FlatGraph {
    let f: Vec<Facts> = g.elements.iter().map(|e| facts(reg, &e.class)).collect();
    let n = g.elements.len();
    let mut gone = vec![false; n];
    let mut conns = g.connections.clone();

    // 1. Pass-throughs.
    for e in 0..n {
        // Which (input, output) pairs the element joins.
        let pairs: Vec<(usize, usize)> = match f[e].role {
            DeadCode::Through => {
                let top = conns
                    .iter()
                    .filter(|c| c.to == e)
                    .map(|c| c.to_port + 1)
                    .max()
                    .unwrap_or(0);
                (0..top).map(|p| (p, p)).collect()
            }
            DeadCode::StaticSwitch => match port_arg(&g.elements[e].config) {
                Some(out) => out.map(|o| (0, o)).into_iter().collect(),
                None => continue,
            },
            DeadCode::StaticPullSwitch => match port_arg(&g.elements[e].config) {
                Some(inp) => inp.map(|i| (i, 0)).into_iter().collect(),
                None => continue,
            },
            _ => continue,
        };
        bypass(&mut conns, e, &pairs);
        gone[e] = true;
    }

    // 2. Live connections: reached from a source, reaching a sink.
    let kinds = resolve(g, reg, &conns);
    let pull_in: Vec<bool> = (0..n)
        .map(|e| kinds.inputs.get(e).and_then(|v| v.first()) == Some(&PortKind::Pull))
        .collect();
    let mut nin = vec![0; n];
    let mut nout = vec![0; n];
    for c in &conns {
        nin[c.to] = nin[c.to].max(c.to_port + 1);
        nout[c.from] = nout[c.from].max(c.from_port + 1);
    }
    let source = |e: usize| f[e].kind == Kind::Source || (f[e].kind == Kind::Device && nout[e] > 0);
    let sink = |e: usize| match f[e].role {
        DeadCode::Sink => true,
        DeadCode::PullSink => pull_in[e],
        _ => f[e].kind == Kind::Device && nin[e] > 0,
    };
    // Forward: outputs packets can leave by.
    let mut out_live: Vec<Vec<bool>> = (0..n).map(|e| vec![source(e); nout[e]]).collect();
    let mut in_live: Vec<Vec<bool>> = (0..n).map(|e| vec![false; nin[e]]).collect();
    loop {
        let mut changed = false;
        for c in &conns {
            if out_live[c.from][c.from_port] && !in_live[c.to][c.to_port] {
                in_live[c.to][c.to_port] = true;
                let flow = &f[c.to].flow;
                for (o, live) in out_live[c.to].iter_mut().enumerate() {
                    *live |= flow.flows(c.to_port, o);
                }
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Backward: inputs from which packets reach a sink.
    let mut in_useful: Vec<Vec<bool>> = (0..n).map(|e| vec![sink(e); nin[e]]).collect();
    loop {
        let mut changed = false;
        for c in &conns {
            if in_useful[c.to][c.to_port] {
                let flow = &f[c.from].flow;
                for (i, useful) in in_useful[c.from].iter_mut().enumerate() {
                    if !*useful && flow.flows(i, c.from_port) {
                        *useful = true;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    conns.retain(|c| out_live[c.from][c.from_port] && in_useful[c.to][c.to_port]);
    let mut connected = vec![false; n];
    for c in &conns {
        connected[c.from] = true;
        connected[c.to] = true;
    }
    let ever_connected: Vec<bool> = {
        let mut v = vec![false; n];
        for c in &g.connections {
            v[c.from] = true;
            v[c.to] = true;
        }
        v
    };
    for e in 0..n {
        let info = f[e].no_ports || (!f[e].known && !ever_connected[e]);
        if !connected[e] && !info {
            gone[e] = true;
        }
    }

    // 3. Schedulers' inputs and tees' outputs.
    let mut configs: Vec<Option<String>> = vec![None; n];
    let mut renumbered = vec![false; n];
    for e in 0..n {
        if gone[e] {
            continue;
        }
        let selects = f[e].role == DeadCode::SelectsInput;
        let inputs = f[e].kind == Kind::Scheduler && (f[e].role == DeadCode::Plain || selects);
        let outputs = f[e].role == DeadCode::Tee;
        if !inputs && !outputs {
            continue;
        }
        renumbered[e] = true;
        let mut used: Vec<usize> = conns
            .iter()
            .filter_map(|c| match inputs {
                true => (c.to == e).then_some(c.to_port),
                false => (c.from == e).then_some(c.from_port),
            })
            .collect();
        used.sort_unstable();
        used.dedup();
        let config = &g.elements[e].config;
        let args = paraclick_lang::args::split_args(config);
        // The input a PullSwitch pulls from (0 unless said), if it says.
        let selected = match args.is_empty() {
            true => Some(Some(0)),
            false => port_arg(config),
        };
        if used.len() == 1 && (!selects || selected == Some(Some(used[0]))) {
            let pairs = match inputs {
                true => [(used[0], 0)],
                false => [(0, used[0])],
            };
            bypass(&mut conns, e, &pairs);
            gone[e] = true;
            continue;
        }
        let old = if inputs { nin[e] } else { nout[e] };
        if used.len() == old {
            continue;
        }
        for c in conns.iter_mut() {
            if inputs && c.to == e {
                c.to_port = used.binary_search(&c.to_port).expect("a used port");
            } else if outputs && c.from == e {
                c.from_port = used.binary_search(&c.from_port).expect("a used port");
            }
        }
        configs[e] = if selects {
            // The selected input's new number; -1 (none) if it died.
            selected.map(|k| {
                k.and_then(|k| used.binary_search(&k).ok())
                    .map_or("-1".to_string(), |k| k.to_string())
            })
        } else if outputs && !args.is_empty() {
            // Tee(N): N is the number of outputs.
            Some(used.len().to_string())
        } else if inputs && args.len() == old && old > 1 {
            // One argument per input (StrideSched's tickets): the live ones'.
            let kept: Vec<&str> = used.iter().map(|&p| args[p].as_str()).collect();
            Some(kept.join(", "))
        } else {
            None
        };
    }

    // Thread placements (StaticThreadSched's `ELEMENT THREAD` arguments)
    // of elements that went go with them; one left with none goes.
    for e in 0..n {
        if gone[e] || f[e].kind != Kind::ThreadSched {
            continue;
        }
        let args = paraclick_lang::args::split_args(&g.elements[e].config);
        let names_gone = |a: &String| {
            let words = paraclick_lang::args::split_words(a);
            words
                .first()
                .and_then(|w| g.find(w))
                .is_some_and(|i| gone[i])
        };
        if args.iter().any(names_gone) {
            let kept: Vec<&str> = args
                .iter()
                .filter(|a| !names_gone(a))
                .map(String::as_str)
                .collect();
            if kept.is_empty() {
                gone[e] = true;
            } else {
                configs[e] = Some(kept.join(", "));
            }
        }
    }

    // 4. Ports of the elements left that lost their connections (here or
    // to a pass-through that led nowhere): a
    // Discard takes what push outputs send, an Idle feeds inputs, so that
    // every port in use stays connected.
    let mut dead_outs = Vec::new();
    let mut dead_ins = Vec::new();
    for c in &g.connections {
        let kind = kinds.outputs.get(c.from).and_then(|v| v.get(c.from_port));
        let (from, to) = (c.from, c.to);
        if !gone[from]
            && !renumbered[from]
            && kind != Some(&PortKind::Pull)
            && !conns
                .iter()
                .any(|d| d.from == from && d.from_port == c.from_port)
            && !dead_outs.contains(&(from, c.from_port))
        {
            dead_outs.push((from, c.from_port));
        }
        if !gone[to]
            && !renumbered[to]
            && !conns.iter().any(|d| d.to == to && d.to_port == c.to_port)
            && !dead_ins.contains(&(to, c.to_port))
        {
            dead_ins.push((to, c.to_port));
        }
    }

    // The graph of what is left, in the original order.
    let mut index = vec![usize::MAX; n];
    let mut out = FlatGraph {
        elements: Vec::new(),
        connections: Vec::new(),
        requirements: g.requirements.clone(),
    };
    for e in 0..n {
        if !gone[e] {
            index[e] = out.elements.len();
            let mut el = g.elements[e].clone();
            if let Some(c) = configs[e].take() {
                el.config = c;
            }
            out.elements.push(el);
        }
    }
    for c in conns {
        if gone[c.from] || gone[c.to] {
            continue;
        }
        let c = FlatConnection {
            from: index[c.from],
            to: index[c.to],
            ..c
        };
        if !out.connections.contains(&c) {
            out.connections.push(c);
        }
    }
    for (class, ports, outputs) in [("Discard", &dead_outs, true), ("Idle", &dead_ins, false)] {
        let Some(&(first, _)) = ports.first() else {
            continue;
        };
        let k = out.elements.len();
        let mut name = format!("{class}@{}", k + 1);
        while out.elements.iter().any(|e| e.name == name) {
            name.push('_');
        }
        out.elements.push(FlatElement {
            name,
            class: class.to_string(),
            config: String::new(),
            span: g.elements[first].span.clone(),
            anonymous: true,
        });
        for &(e, p) in ports {
            let (from, from_port, to, to_port) = match outputs {
                true => (index[e], p, k, 0),
                false => (k, 0, index[e], p),
            };
            out.connections.push(FlatConnection {
                from,
                from_port,
                to,
                to_port,
                span: g.elements[e].span.clone(),
            });
        }
    }
    out
}

/// Removes element `e`'s connections, joining what fed input i to what
/// output o fed for each (i, o) in `pairs`.
fn bypass(conns: &mut Vec<FlatConnection>, e: usize, pairs: &[(usize, usize)]) {
    let mut joined = Vec::new();
    for &(i, o) in pairs {
        for a in conns
            .iter()
            .filter(|c| c.to == e && c.to_port == i && c.from != e)
        {
            for b in conns
                .iter()
                .filter(|c| c.from == e && c.from_port == o && c.to != e)
            {
                joined.push(FlatConnection {
                    from: a.from,
                    from_port: a.from_port,
                    to: b.to,
                    to_port: b.to_port,
                    span: a.span.clone(),
                });
            }
        }
    }
    conns.retain(|c| c.from != e && c.to != e);
    for c in joined {
        let dup = conns.iter().any(|d| {
            (d.from, d.from_port, d.to, d.to_port) == (c.from, c.from_port, c.to, c.to_port)
        });
        if !dup {
            conns.push(c);
        }
    }
}

/// The kinds of the ports (push or pull), as the checker resolves them on
/// the graph with `conns` (errors, such as unknown classes, ignored).
fn resolve(g: &FlatGraph, reg: &Registry, conns: &[FlatConnection]) -> CheckedGraph {
    let now = FlatGraph {
        elements: g.elements.clone(),
        connections: conns.to_vec(),
        requirements: Vec::new(),
    };
    let lookup = |name: &str| {
        reg.get(name)
            .map(|c| LangSpec::new(c.port_count, c.processing))
    };
    let names = reg.names();
    check_graph_partial(&now, &lookup, &names).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_lang::{parse_config, print_click, Source};
    use paraclick_runtime::Router;

    fn run(text: &str) -> String {
        let g = parse_config(&Source::new("t", text), &[]).expect("parses");
        print_click(&undead(&g, &paraclick_io::full_registry()))
    }

    #[test]
    fn clicks_example() {
        // click-undead(1)'s example (Click's test tools/undead-01).
        let out = run("Idle -> Counter -> td1 :: ToDump(a);
            is :: InfiniteSource -> ss :: StaticSwitch(1);
            ss[0] -> ToDump(c);
            ss[1] -> q :: Queue -> rr :: RoundRobinSched;
            Idle -> [1]rr;
            rr -> td2 :: ToDump(b);");
        assert_eq!(
            out,
            "is :: InfiniteSource;\nq :: Queue;\ntd2 :: ToDump(b);\n\nis -> q\n    -> td2;\n"
        );
    }

    #[test]
    fn live_elements_stay() {
        let text = "fa::FromDevice(a) -> arpq::ARPQuerier(1.0.0.1, 0:1:2:3:4:5) -> td::ToDump;
            fb::FromDevice(b) -> [1]arpq;";
        let out = run(text);
        assert!(out.contains("fb -> [1] arpq;"), "{out}");
        assert!(out.contains("arpq :: ARPQuerier"), "{out}");
    }

    #[test]
    fn null_is_bypassed() {
        let out = run("InfiniteSource -> Null -> n2 :: Null -> ToDump(x);");
        assert!(!out.contains("Null"), "{out}");
        assert!(out.contains("InfiniteSource@1 -> ToDump@4;"), "{out}");
    }

    #[test]
    fn pushed_discard_is_no_sink_but_pulled_is() {
        // A push path into Discard only drops: all of it goes.
        assert_eq!(run("InfiniteSource -> Counter -> Discard;"), "");
        let out = run("InfiniteSource -> q :: Queue -> d :: Discard;");
        assert!(out.ends_with("-> q\n    -> d;\n"), "{out}");
    }

    #[test]
    fn static_switch_out_of_range_kills_everything_after() {
        assert_eq!(
            run("InfiniteSource -> s :: StaticSwitch(-1); s[0] -> ToDump(a);"),
            ""
        );
    }

    #[test]
    fn static_pull_switch_keeps_the_chosen_input() {
        let out = run(
            "InfiniteSource -> q0 :: Queue; InfiniteSource -> q1 :: Queue;
            q0 -> [0]s :: StaticPullSwitch(1); q1 -> [1]s; s -> d :: Discard;",
        );
        assert!(out.ends_with("-> q1\n    -> d;\n"), "{out}");
        assert!(!out.contains("q0"), "{out}");
    }

    #[test]
    fn scheduler_loses_dead_inputs() {
        let out = run(
            "i0 :: InfiniteSource -> q0 :: Queue -> [0]s :: StrideSched(1, 2, 3);
            Idle -> [1]s;
            i2 :: InfiniteSource -> q2 :: Queue -> [2]s;
            s -> d :: Discard;",
        );
        assert!(out.contains("s :: StrideSched(1, 3);"), "{out}");
        assert!(out.contains("i2 -> q2\n    -> [1] s;"), "{out}");
        assert!(!out.contains("Idle"), "{out}");
    }

    #[test]
    fn pull_switch_keeps_pulling_the_same_input() {
        let q = "InfiniteSource -> q0 :: Queue; Idle -> q1 :: Queue;
            InfiniteSource -> q2 :: Queue; q0 -> [0]ps :: PullSwitch(2); q1 -> [1]ps;
            q2 -> [2]ps; ps -> d :: Discard;";
        let out = run(q);
        assert!(out.contains("ps :: PullSwitch(1);"), "{out}");
        assert!(out.contains("q2\n    -> [1] ps;"), "{out}");
        // The selected input died: it pulls nothing still.
        let out = run(&q.replace("PullSwitch(2)", "PullSwitch(1)"));
        assert!(out.contains("ps :: PullSwitch(-1);"), "{out}");
        // One input left, the one it pulls from: it goes.
        let out = run(
            "InfiniteSource -> q0 :: Queue -> ps :: PullSwitch; Idle -> [1]ps;
            ps -> d :: Discard;",
        );
        assert!(out.ends_with("-> q0\n    -> d;\n"), "{out}");
        // One input left, another selected: it stays.
        let out = run(
            "InfiniteSource -> q0 :: Queue -> ps :: PullSwitch(1); Idle -> [1]ps;
            ps -> d :: Discard;",
        );
        assert!(out.contains("ps :: PullSwitch(-1);"), "{out}");
    }

    #[test]
    fn tee_loses_dead_outputs() {
        let out = run(
            "InfiniteSource -> t :: Tee(3); t[0] -> ToDump(a); t[1] -> Discard;
            t[2] -> ToDump(b);",
        );
        assert!(out.contains("t :: Tee(2);"), "{out}");
        assert!(!out.contains("Discard"), "{out}");
        assert!(out.contains("t [1] -> ToDump@5;"), "{out}");
        // With one output left, the Tee goes.
        let out = run("InfiniteSource -> t :: Tee; t[0] -> ToDump(a); t[1] -> Discard;");
        assert!(!out.contains("Tee"), "{out}");
    }

    #[test]
    fn flow_codes_are_followed() {
        // Idle (flow code x/y) passes nothing from its input to its output.
        assert_eq!(run("InfiniteSource -> Idle -> ToDump(a);"), "");
    }

    #[test]
    fn ports_that_lost_their_connections_stay_connected() {
        // Classifier output 1 led to a pushed Discard, ARPQuerier input 1
        // came from Idle: a Discard and an Idle keep the ports in use, so
        // that the result still checks.
        let out = run("fa :: FromDevice(a) -> c :: Classifier(12/0800, -);
            c[0] -> arpq :: ARPQuerier(1.0.0.1, 0:1:2:3:4:5) -> td :: ToDump(x);
            c[1] -> Counter -> Discard; Idle -> [1]arpq;");
        assert!(
            out.ends_with(
                "Discard@5 :: Discard;\nIdle@6 :: Idle;\n\n\
                 fa -> c\n    -> arpq\n    -> td;\n\
                 Idle@6 -> [1] arpq;\nc [1] -> Discard@5;\n"
            ),
            "{out}"
        );
        let g = parse_config(&Source::new("t", &out), &[]).expect("parses");
        assert!(Router::check(&g, &paraclick_io::full_registry()).is_ok());
        // A switch that sends nowhere leaves its upstream's port to fill.
        let out = run("fa :: FromDevice(a) -> c :: Classifier(12/0800, -);
            c[0] -> td :: ToDump(x); c[1] -> StaticSwitch(-1) -> ToDump(y);");
        assert!(out.contains("c [1] -> Discard@"), "{out}");
    }

    #[test]
    fn thread_placements_of_removed_elements_go() {
        let out = run(
            "src :: InfiniteSource -> Discard; s2 :: InfiniteSource -> ToDump(x);
            StaticThreadSched(src 1, s2 0);",
        );
        assert!(out.contains("StaticThreadSched(s2 0);"), "{out}");
        let out = run("src :: InfiniteSource -> Discard; StaticThreadSched(src 1);");
        assert_eq!(out, "");
    }

    #[test]
    fn information_elements_stay() {
        let out = run("AddressInfo(a 1.0.0.1); Idle -> Discard;");
        assert!(out.contains("AddressInfo"), "{out}");
        assert!(!out.contains("Idle"), "{out}");
    }
}
