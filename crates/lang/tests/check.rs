//! Graph checks: port counts, push/pull resolution, port usage, unknown
//! classes.

mod common;
use common::*;

use paraclick_lang::check::{
    check_graph_with_flow, FlowCode, OutputCount, PortCount, PortRange, Processing, ProcessingSpec,
};
use paraclick_lang::{check_graph, render, CheckedGraph, ClassSpec, PortKind, Source, SourceSet};

use PortKind::{Pull as L, Push as H};

fn spec(class: &str) -> Option<ClassSpec> {
    let (pc, proc) = match class {
        "Src" => ("0/1", "h"),
        "PullSrc" => ("0/1", "l"),
        "Counter" | "Paint" => ("1/1", "a"),
        "Queue" => ("1/1", "h/l"),
        "ToDevice" => ("1/0", "l"),
        "Discard" => ("1/0", "a"),
        "Tee" => ("1/-", "h"),
        "PullTee" => ("1/-", "l/lh"),
        "Classifier" => ("1/-", "h"),
        "RoundRobinSched" => ("-/1", "l/l"),
        "Idle" => ("-/-", "a"),
        "Suppressor" => ("-/=", "a"),
        "Plus" => ("1-/=+", "h"),
        "CheckIPHeader" => ("1/1-2", "a/ah"),
        "Two" => ("1/2", "h"),
        "Three" => ("3", "a"),
        "Unqueue" => ("1/1", "l/h"),
        "ARPQuerier" => ("2/1", "a"),
        "BadCount" => ("1/x", "a"),
        "BadProc" => ("1/1", "q"),
        _ => return None,
    };
    Some(ClassSpec::new(pc, proc))
}

const KNOWN: &[&str] = &[
    "Src",
    "PullSrc",
    "Counter",
    "Paint",
    "Queue",
    "ToDevice",
    "Discard",
    "Tee",
    "PullTee",
    "Classifier",
    "RoundRobinSched",
    "Idle",
    "Suppressor",
    "Plus",
    "CheckIPHeader",
    "Two",
    "Three",
    "Unqueue",
    "ARPQuerier",
];

fn check(text: &str) -> Result<CheckedGraph, Vec<String>> {
    let g = parse(text);
    check_graph(&g, &spec, KNOWN).map_err(|e| e.iter().map(|d| d.to_string()).collect())
}

fn ok(text: &str) -> CheckedGraph {
    match check(text) {
        Ok(c) => c,
        Err(e) => panic!("unexpected errors: {e:#?}"),
    }
}

fn errs(text: &str) -> Vec<String> {
    match check(text) {
        Ok(_) => panic!("expected errors for {text:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- parsing specs

#[test]
fn port_count_strings() {
    let r = |lo, hi| PortRange { lo, hi };
    let m = usize::MAX;
    let pc = |s| PortCount::parse(s).unwrap();
    assert_eq!(
        pc("1/1"),
        PortCount {
            inputs: r(1, 1),
            outputs: OutputCount::Range(r(1, 1))
        }
    );
    assert_eq!(pc("1/1-2").outputs, OutputCount::Range(r(1, 2)));
    assert_eq!(
        pc("-/="),
        PortCount {
            inputs: r(0, m),
            outputs: OutputCount::SameAsInputs(0)
        }
    );
    assert_eq!(pc("1-/=+").outputs, OutputCount::SameAsInputs(1));
    assert_eq!(pc("1-/=+").inputs, r(1, m));
    assert_eq!(pc("0/1").inputs, r(0, 0));
    assert_eq!(pc("1/-").outputs, OutputCount::Range(r(0, m)));
    assert_eq!(pc("-2/0").inputs, r(0, 2));
    assert_eq!(
        pc("3"),
        PortCount {
            inputs: r(3, 3),
            outputs: OutputCount::Range(r(3, 3))
        }
    );
    assert_eq!(
        pc("2-/"),
        PortCount {
            inputs: r(2, m),
            outputs: OutputCount::Range(r(0, 0))
        }
    );
    for bad in ["x", "1/x", "1/1/1", "2-1/1", "1/=x", "1:1"] {
        assert_eq!(PortCount::parse(bad), None, "{bad}");
    }
    assert_eq!(pc("1/1-2").resolve(0, 0), (1, 1));
    assert_eq!(pc("1/1-2").resolve(1, 2), (1, 2));
    assert_eq!(pc("-/=").resolve(3, 0), (3, 3));
    assert_eq!(pc("1-/=+").resolve(0, 0), (1, 2));
}

#[test]
fn processing_strings() {
    use Processing::*;
    let p = ProcessingSpec::parse("a/ah").unwrap();
    assert_eq!((p.input(0), p.input(5)), (Agnostic, Agnostic));
    assert_eq!(
        (p.output(0), p.output(1), p.output(7)),
        (Agnostic, Push, Push)
    );
    let p = ProcessingSpec::parse("hl/hlh").unwrap();
    assert_eq!((p.input(0), p.input(1), p.input(2)), (Push, Pull, Pull));
    assert_eq!((p.output(0), p.output(1), p.output(2)), (Push, Pull, Push));
    let p = ProcessingSpec::parse("l").unwrap();
    assert_eq!((p.input(0), p.output(0)), (Pull, Pull));
    let p = ProcessingSpec::parse("H/L").unwrap();
    assert_eq!((p.input(0), p.output(0)), (Push, Pull));
    assert_eq!(ProcessingSpec::parse("x/h"), None);
}

#[test]
fn flow_codes() {
    let f = FlowCode::parse("x/x").unwrap();
    assert!(f.flows(0, 0) && f.flows(3, 1));
    let f = FlowCode::parse("xy/x").unwrap();
    assert!(f.flows(0, 0) && f.flows(0, 2) && !f.flows(1, 0));
    let f = FlowCode::parse("#/#").unwrap();
    assert!(f.flows(1, 1) && !f.flows(1, 0));
    let f = FlowCode::parse("#/[^#]").unwrap();
    assert!(!f.flows(1, 1) && f.flows(1, 0));
    let f = FlowCode::parse("[ab]/[bc]").unwrap();
    assert!(f.flows(0, 0));
    let f = FlowCode::parse("x/y").unwrap();
    assert!(!f.flows(0, 0));
    assert_eq!(FlowCode::parse("x/"), None);
    assert_eq!(FlowCode::parse("[x/x"), None);
}

// ---------------------------------------------------------------- resolution

#[test]
fn push_chain() {
    let c = ok("Src -> Counter -> Paint -> Discard");
    assert_eq!(c.inputs, vec![vec![], vec![H], vec![H], vec![H]]);
    assert_eq!(c.outputs, vec![vec![H], vec![H], vec![H], vec![]]);
}

#[test]
fn agnostic_propagates_through_chains() {
    // pull from the sink backwards through two agnostic elements
    let c = ok("Src -> q :: Queue -> a :: Paint -> b :: Counter -> t :: ToDevice");
    assert_eq!(c.inputs[1], vec![H]);
    assert_eq!(c.outputs[1], vec![L]);
    assert_eq!(
        (c.inputs[2].clone(), c.outputs[2].clone()),
        (vec![L], vec![L])
    );
    assert_eq!(
        (c.inputs[3].clone(), c.outputs[3].clone()),
        (vec![L], vec![L])
    );
    // push forwards
    let c = ok("Src -> Paint -> Counter -> Queue -> ToDevice");
    assert_eq!(
        (c.inputs[1].clone(), c.outputs[2].clone()),
        (vec![H], vec![H])
    );
    // pull source pulled through agnostic elements by a pull sink
    let c = ok("PullSrc -> Paint -> Paint -> ToDevice");
    assert_eq!(c.outputs[0], vec![L]);
    assert_eq!(c.inputs[2], vec![L]);
    // agnostic ports of one element resolve together
    let c = ok("Src -> s :: Suppressor -> Discard; Idle -> [1] s [1] -> Discard");
    assert_eq!(c.inputs[1], vec![H, H]);
    assert_eq!(c.outputs[1], vec![H, H]);
    assert_eq!(c.outputs[3], vec![H]);
}

#[test]
fn unresolved_agnostic_defaults_to_push() {
    let c = ok("Idle -> Discard");
    assert_eq!(c.outputs[0], vec![H]);
    assert_eq!(c.inputs[1], vec![H]);
}

#[test]
fn mixed_processing_codes() {
    // "a/ah": output 1 is push, output 0 follows the input
    let c = ok("Src -> q :: Queue -> ch :: CheckIPHeader -> ToDevice; ch [1] -> Discard");
    assert_eq!(c.inputs[2], vec![L]);
    assert_eq!(c.outputs[2], vec![L, H]);
    assert_eq!(c.inputs[4], vec![H]);
    // pull-to-push and push-to-pull elements
    let c = ok("Src -> Queue -> Unqueue -> Queue -> ToDevice");
    assert_eq!(c.outputs[2], vec![H]);
    let c = ok("Src -> Queue -> p :: PullTee -> ToDevice; p [1] -> Discard");
    assert_eq!(c.outputs[2], vec![L, H]);
    assert_eq!(c.inputs[4], vec![H]);
}

#[test]
fn flow_code_limits_agnostic_coupling() {
    // ARPQuerier's input 1 does not flow to its output: no mixed context
    let text = "Src -> [0] a :: ARPQuerier -> Discard; PullSrc -> [1] a";
    let g = parse(text);
    let flow = |c: &str| (c == "ARPQuerier").then(|| "xy/x".to_string());
    let c = check_graph_with_flow(&g, &spec, &flow, KNOWN).unwrap();
    assert_eq!(c.inputs[1], vec![H, L]);
    assert_eq!(c.outputs[1], vec![H]);
    // with the default flow code, every agnostic port is coupled
    let e = check_graph(&g, &spec, KNOWN).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(
        e[0].message
            .starts_with("agnostic 'a' (ARPQuerier, r.click:1:17) in mixed context"),
        "{}",
        e[0]
    );
}

// ---------------------------------------------------------------- port counts

#[test]
fn port_counts_used_and_minimum() {
    let c = ok("Src -> CheckIPHeader -> Discard");
    assert_eq!(c.outputs[1].len(), 1);
    let c = ok("Src -> c :: CheckIPHeader -> Discard; c [1] -> Discard");
    assert_eq!(c.outputs[1].len(), 2);
    let c = ok("Src -> c :: Classifier; c [0] -> Discard; c [1] -> Discard; c [2] -> Discard");
    assert_eq!(c.outputs[1].len(), 3);
    let c = ok("Src -> s :: Suppressor -> Discard; Src -> [1] s [1] -> Discard");
    assert_eq!((c.inputs[1].len(), c.outputs[1].len()), (2, 2));
    let c = ok("Src -> p :: Plus -> Discard; p [1] -> Discard");
    assert_eq!((c.inputs[1].len(), c.outputs[1].len()), (1, 2));
    let c = ok("Src -> Queue -> r :: RoundRobinSched -> ToDevice; Src -> Queue -> [1] r");
    assert_eq!(c.inputs[2], vec![L, L]);
}

#[test]
fn too_many_ports() {
    assert_eq!(
        errs("Src -> c :: Counter -> Discard; c [1] -> Discard"),
        vec!["r.click:1:33: 'c' :: Counter has no output 1 (at most 1 output allowed)"]
    );
    assert_eq!(
        errs("Src -> c :: CheckIPHeader -> Discard; c [2] -> Discard; Src -> [1] c"),
        vec![
            "r.click:1:39: 'c' :: CheckIPHeader has no output 2 (at most 2 outputs allowed)",
            "r.click:1:57: 'c' :: CheckIPHeader has no input 1 (at most 1 input allowed)",
            // the clamped count is 2, and output 1 has no connection
            "r.click:1:13: 'c' :: CheckIPHeader output 1 unused",
        ]
    );
    assert_eq!(
        errs("Src -> d :: Discard; d -> Discard"),
        vec!["r.click:1:22: 'd' :: Discard has no output 0 (Discard has no outputs)"]
    );
    assert_eq!(
        errs("Src -> s :: Suppressor -> Discard; s [1] -> Discard"),
        vec!["r.click:1:36: 's' :: Suppressor has no output 1 (Suppressor has as many outputs as inputs: 1 with 1 input)"]
    );
    assert_eq!(
        errs("Src -> p :: Plus -> Discard; p [1] -> Discard; p [2] -> Discard"),
        vec!["r.click:1:48: 'p' :: Plus has no output 2 (Plus has as many outputs as inputs plus 1: 2 with 1 input)"]
    );
}

#[test]
fn unused_ports() {
    assert_eq!(
        errs("Src -> t :: Two -> Discard"),
        vec!["r.click:1:13: 't' :: Two output 1 unused"]
    );
    assert_eq!(
        errs("Src -> c :: Classifier; c [0] -> Discard; c [2] -> Discard"),
        vec!["r.click:1:13: 'c' :: Classifier output 1 unused"]
    );
    assert_eq!(
        errs("c :: Counter"),
        vec![
            "r.click:1:6: 'c' :: Counter input 0 unused",
            "r.click:1:6: 'c' :: Counter output 0 unused"
        ]
    );
    assert_eq!(
        errs("Src -> x :: Three -> Discard"),
        vec![
            "r.click:1:13: 'x' :: Three input 1 unused",
            "r.click:1:13: 'x' :: Three input 2 unused",
            "r.click:1:13: 'x' :: Three output 1 unused",
            "r.click:1:13: 'x' :: Three output 2 unused",
        ]
    );
    assert_eq!(
        errs("Src -> s :: Suppressor -> Discard; Src -> [1] s"),
        vec!["r.click:1:13: 's' :: Suppressor output 1 unused"]
    );
}

// ---------------------------------------------------------------- push/pull errors

#[test]
fn push_to_pull() {
    let e = errs("src :: Src;\nq2 :: ToDevice;\nsrc -> q2;");
    assert_eq!(
        e,
        vec!["r.click:3:1: push output 0 of 'src' (Src, r.click:1:8) connected to pull input 0 of 'q2' (ToDevice, r.click:2:7)"]
    );
}

#[test]
fn pull_to_push() {
    let e = errs("Src -> q :: Queue -> c :: Classifier -> Discard");
    assert_eq!(
        e,
        vec!["r.click:1:8: pull output 0 of 'q' (Queue, r.click:1:13) connected to push input 0 of 'c' (Classifier, r.click:1:27)"]
    );
}

#[test]
fn agnostic_in_mixed_context() {
    let e = errs("Src -> c :: Counter -> ToDevice");
    assert_eq!(
        e,
        vec!["r.click:1:13: agnostic 'c' (Counter, r.click:1:13) in mixed context: push input 0, pull output 0"]
    );
}

#[test]
fn push_output_used_twice() {
    let g = parse("s :: Src; s -> Discard;\ns -> Counter -> Discard");
    let e = check_graph(&g, &spec, KNOWN).unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].to_string(),
        "r.click:2:1: illegal reuse of 's :: Src' push output 0"
    );
    assert_eq!(
        e[0].notes[0].0.as_ref().map(|s| (s.line, s.col)),
        Some((1, 11))
    );
    assert_eq!(e[0].notes[0].1, "first connection here");
}

#[test]
fn pull_input_used_twice() {
    let e = errs("Src -> q1 :: Queue -> td :: ToDevice; Src -> q2 :: Queue -> td");
    assert_eq!(
        e,
        vec!["r.click:1:46: illegal reuse of 'td :: ToDevice' pull input 0"]
    );
    // push inputs and pull outputs may have many connections
    ok("Src -> d :: Discard; Src -> d; Src -> q :: Queue -> PullTee -> ToDevice");
}

#[test]
fn repeated_connection_is_not_reuse() {
    let mut g = parse("s :: Src -> Discard");
    let c = g.connections[0].clone();
    g.connections.push(c);
    check_graph(&g, &spec, KNOWN).unwrap();
}

// ---------------------------------------------------------------- classes

#[test]
fn unknown_class_with_suggestion() {
    let text = "src :: Src;\n\nsrc -> c :: Cuonter -> Discard;";
    let g = parse(text);
    let e = check_graph(&g, &spec, KNOWN).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    let mut set = SourceSet::new();
    set.add(Source::new(FILE, text));
    assert_eq!(
        render(&e, &set),
        "r.click:3:13: unknown element class 'Cuonter'\n\
         \x20  3 | src -> c :: Cuonter -> Discard;\n\
         \x20    |             ^^^^^^^\n\
         r.click:3:13: note: did you mean 'Counter'?\n"
    );
}

#[test]
fn unknown_class_suggestions() {
    let e = check_graph(&parse("Src -> tee(2) -> Discard"), &spec, KNOWN).unwrap_err();
    assert_eq!(e[0].message, "undeclared element 'tee'");
    assert_eq!(e[0].notes[0].1, "did you mean 'Tee'?");
    assert_eq!(e[0].span.as_ref().map(|s| s.end - s.start), Some(3));
    let e = check_graph(&parse("Src -> Frobnicator -> Discard"), &spec, KNOWN).unwrap_err();
    assert_eq!(e[0].message, "undeclared element 'Frobnicator'");
    assert!(e[0].notes.is_empty());
    // unknown classes cause no port or push/pull errors of their own
    let e = check_graph(
        &parse("Src -> x :: Mystery; x -> ToDevice; x [3] -> Discard"),
        &spec,
        KNOWN,
    )
    .unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!(
        paraclick_lang::check::suggest("Qeueu", KNOWN),
        Some("Queue")
    );
    assert_eq!(
        paraclick_lang::check::suggest("ToDevic", KNOWN),
        Some("ToDevice")
    );
    assert_eq!(paraclick_lang::check::suggest("Zzz", KNOWN), None);
}

#[test]
fn bad_class_specs() {
    let e = errs("Src -> a :: BadCount -> Discard; Src -> b :: BadCount -> Discard; Src -> BadProc -> Discard");
    assert_eq!(
        e,
        vec![
            "r.click:1:13: element class 'BadCount' has a bad port count \"1/x\"",
            "r.click:1:74: element class 'BadProc' has a bad processing code \"q\"",
        ]
    );
}

#[test]
fn every_error_in_one_pass() {
    let e = errs(
        "s :: Src -> Cuonter -> Discard;\n\
         s -> Discard;\n\
         Src -> c :: Counter -> ToDevice;\n\
         t :: Two;\n\
         Src -> t -> Discard;",
    );
    assert_eq!(
        e,
        vec![
            "r.click:1:13: undeclared element 'Cuonter'",
            "r.click:3:13: agnostic 'c' (Counter, r.click:3:13) in mixed context: push input 0, pull output 0",
            "r.click:2:1: illegal reuse of 's :: Src' push output 0",
            "r.click:4:6: 't' :: Two output 1 unused",
        ]
    );
}

#[test]
fn compound_graph_checks() {
    // the checker sees the flat graph: ports spliced through compounds
    let c =
        ok("elementclass Buf { input -> Queue -> output }\nSrc -> b :: Buf -> Paint -> ToDevice");
    assert_eq!(c.outputs[1], vec![L]);
    assert_eq!(c.inputs[2], vec![L]);
}

#[test]
fn partial_check_resolves_ports_beside_its_errors() {
    // A port Counter lacks, an unknown class and a push/pull conflict:
    // errors, and still every element's ports as its class allows.
    let g = parse(
        "Src -> c :: Counter -> q :: Queue -> Discard; Idle -> [3]c; \
         Src -> Zork -> [1]t :: Two; t[1] -> Discard; t -> Discard; \
         PullSrc -> Counter -> Queue",
    );
    let (c, errs) = paraclick_lang::check::check_graph_partial(&g, &spec, KNOWN);
    let errs: Vec<String> = errs.iter().map(|d| d.to_string()).collect();
    assert!(
        errs.iter().any(|e| e.contains("has no input 3")),
        "{errs:#?}"
    );
    assert!(errs.iter().any(|e| e.contains("undeclared element 'Zork'")));
    assert!(
        errs.iter().any(|e| e.contains("has no input 1")),
        "{errs:#?}"
    );
    assert!(errs.iter().any(|e| e.contains("pull")), "{errs:#?}");
    let at = |n: &str| g.elements.iter().position(|e| e.name == n).unwrap();
    // Counter: one input and one output, push from the source.
    assert_eq!(c.inputs[at("c")], vec![H]);
    assert_eq!(c.outputs[at("c")], vec![H]);
    assert_eq!(c.outputs[at("q")], vec![L]);
    // Two: one input, two push outputs, whatever [1]t asked for.
    assert_eq!(c.inputs[at("t")].len(), 1);
    assert_eq!(c.outputs[at("t")], vec![H, H]);
    // The same graph, checked whole, is refused with the same errors.
    let whole = check_graph(&g, &spec, KNOWN).map(|_| ()).unwrap_err();
    assert_eq!(whole.len(), errs.len());
}

/// An element named after a known class is refused, as Click's lexer
/// refuses it, inside a compound too; a different case is another name.
#[test]
fn an_element_named_after_a_known_class() {
    let e = errs("Counter :: Src -> Discard;");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].ends_with("class 'Counter' used as element name"),
        "{e:?}"
    );
    let e = errs("elementclass F { input -> Tee :: Counter -> output }\nSrc -> F -> Discard;");
    assert!(e[0].ends_with("class 'Tee' used as element name"), "{e:?}");
    ok("counter :: Counter; Src -> counter -> Discard;");
}
