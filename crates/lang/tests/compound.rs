//! Compound element expansion: naming, splicing through input/output,
//! nesting, formals, keyword formals, overloading, defines.

mod common;
use common::*;

#[test]
fn anonymous_compound_in_connection() {
    let g = parse("a :: A; b :: B; a -> { input -> X -> output } -> b;");
    assert_eq!(names(&g), vec!["a", "b", "@3/X@1"]);
    assert_eq!(conns(&g), s(&["a[0] -> [0]@3/X@1", "@3/X@1[0] -> [0]b"]));
}

#[test]
fn named_compound_instance_and_ports() {
    let g = parse(
        "compound :: {\n\
           input -> x :: X -> output;\n\
           input [1] -> Y -> [1] output;\n\
         };\n\
         a :: A; b :: B; c :: C; d :: D;\n\
         a -> compound -> b;\n\
         c -> [1] compound [1] -> d;",
    );
    assert_eq!(
        names(&g),
        vec!["compound/x", "compound/Y@2", "a", "b", "c", "d"]
    );
    assert_eq!(
        conns(&g),
        s(&[
            "a[0] -> [0]compound/x",
            "compound/x[0] -> [0]b",
            "c[0] -> [0]compound/Y@2",
            "compound/Y@2[0] -> [0]d",
        ])
    );
}

#[test]
fn elementclass_and_instances() {
    let g = parse(
        "elementclass MyQueue { input -> Queue -> Shaper(1000) -> output }\n\
         q :: MyQueue; a :: A; b :: B;\n\
         a -> q -> b;\n\
         a [1] -> MyQueue -> [1] b;",
    );
    assert_eq!(
        elems(&g),
        vec![
            ("q/Queue@1".into(), "Queue".into(), "".into()),
            ("q/Shaper@2".into(), "Shaper".into(), "1000".into()),
            ("a".into(), "A".into(), "".into()),
            ("b".into(), "B".into(), "".into()),
            ("MyQueue@4/Queue@1".into(), "Queue".into(), "".into()),
            ("MyQueue@4/Shaper@2".into(), "Shaper".into(), "1000".into()),
        ]
    );
    assert_eq!(
        conns(&g),
        s(&[
            "a[0] -> [0]q/Queue@1",
            "q/Queue@1[0] -> [0]q/Shaper@2",
            "q/Shaper@2[0] -> [0]b",
            "a[1] -> [0]MyQueue@4/Queue@1",
            "MyQueue@4/Queue@1[0] -> [0]MyQueue@4/Shaper@2",
            "MyQueue@4/Shaper@2[0] -> [1]b",
        ])
    );
}

#[test]
fn passthrough_and_fanout_splicing() {
    let g = parse("a :: A; b :: B; c :: C; p :: { input -> output; input -> [1] output }; a -> p -> b; p [1] -> c");
    assert!(names(&g).iter().all(|n| !n.starts_with('p')));
    assert_eq!(conns(&g), s(&["a[0] -> [0]b", "a[0] -> [0]c"]));
    // two sources into one compound input
    let g = parse("a :: A; b :: B; d :: D; p :: { input -> x :: X -> output }; a, b -> p -> d");
    assert_eq!(
        conns(&g),
        s(&["a[0] -> [0]p/x", "b[0] -> [0]p/x", "p/x[0] -> [0]d"])
    );
}

#[test]
fn unconnected_compound_ports_drop_inner_connections() {
    let g = parse("{ input -> X -> output } -> b :: B;");
    assert_eq!(names(&g), vec!["@1/X@1", "b"]);
    assert_eq!(conns(&g), s(&["@1/X@1[0] -> [0]b"]));
}

#[test]
fn nested_compounds() {
    let g = parse(
        "elementclass Inner { input -> c :: Counter -> output }\n\
         elementclass Outer { input -> i :: Inner -> Inner -> output }\n\
         s :: Src -> o :: Outer -> d :: Dst;",
    );
    assert_eq!(names(&g), vec!["s", "o/i/c", "o/Inner@2/c", "d"]);
    assert_eq!(
        conns(&g),
        s(&[
            "s[0] -> [0]o/i/c",
            "o/i/c[0] -> [0]o/Inner@2/c",
            "o/Inner@2/c[0] -> [0]d"
        ])
    );
    // passthrough nested in passthrough
    let g = parse("a :: A -> { input -> { input -> output } -> output } -> b :: B");
    assert_eq!(conns(&g), s(&["a[0] -> [0]b"]));
}

#[test]
fn class_names_are_lexically_scoped() {
    // inside its own definition, Queue is the previous (primitive) Queue
    let g = parse("elementclass Queue { input -> Queue -> Shaper -> output }\nq :: Queue");
    assert_eq!(
        elems(&g)[0],
        ("q/Queue@1".into(), "Queue".into(), "".into())
    );
    // a later elementclass does not change earlier elements
    let g = parse(
        "elementclass A { input -> B -> output }\n\
         elementclass B { input -> C -> output }\n\
         x :: A",
    );
    assert_eq!(elems(&g)[0], ("x/B@1".into(), "B".into(), "".into()));
    // classes defined inside a compound are local to it
    let g = parse("x :: { elementclass L { input -> Y -> output }; input -> L -> output }; z :: L");
    assert_eq!(names(&g), vec!["x/L@1/Y@1", "z"]);
    assert_eq!(g.elements[1].class, "L");
}

#[test]
fn synonyms() {
    let g = parse("elementclass MyQ Queue; q :: MyQ(5); elementclass C2 C1; elementclass C1 { input -> output }; c :: C2");
    assert_eq!(
        elems(&g),
        vec![
            ("q".into(), "Queue".into(), "5".into()),
            ("c".into(), "C1".into(), "".into())
        ]
    );
    let g = parse("elementclass C1 { input -> X -> output }; elementclass C2 C1; c :: C2");
    assert_eq!(names(&g), vec!["c/X@1"]);
}

#[test]
fn implicit_input_and_output() {
    let g = parse("elementclass P { -> Counter -> ; [1] -> [1] }\na :: A; b :: B; a [0, 1] => p :: P => [0, 1] b");
    assert_eq!(
        conns(&g),
        s(&[
            "a[0] -> [0]p/Counter@1",
            "p/Counter@1[0] -> [0]b",
            "a[1] -> [1]b"
        ])
    );
}

#[test]
fn formals_and_substitution() {
    let g = parse(
        "elementclass Src { $rate, $len | RatedSource(RATE $rate, LENGTH ${len}0) -> output }\n\
         s :: Src(100, 6) -> Discard;",
    );
    assert_eq!(g.elements[0].name, "s/RatedSource@1");
    assert_eq!(g.elements[0].config, "RATE 100, LENGTH 60");
    // arguments are split and trimmed, comments removed, quotes kept
    let g = parse("elementclass E { $a, $b | input -> X($a|$b) -> output } a :: A -> E( \"x, y\" , /* c */ 2 ) -> b :: B");
    assert_eq!(g.elements[1].config, "\"x, y\"|2");
    // single quotes prevent substitution
    let g = parse("elementclass E { $a | X('$a', \"$a\") } e :: E(1)");
    assert_eq!(g.elements[0].config, "'$a', \"1\"");
}

#[test]
fn keyword_formals() {
    let g = parse(
        "elementclass Dev { $x, DEV $dev, BURST $b | FromDevice($dev, $x, BURST $b) -> output }\n\
         d :: Dev(BURST 8, 7, DEV eth0) -> Discard;",
    );
    assert_eq!(g.elements[0].config, "eth0, 7, BURST 8");
    // keyword before positional in the definition is accepted too
    let g = parse("elementclass K { DEV $dev, $x | X($dev $x) } k :: K(1, DEV e)");
    assert_eq!(g.elements[0].config, "e 1");
}

#[test]
fn rest_parameter() {
    let g = parse(
        "elementclass R { $a, COUNT $count, __REST__ $rest | X($a; $count; $rest) }\n\
         r :: R(1, 2, COUNT 3, FOO 4)",
    );
    assert_eq!(g.elements[0].config, "1; 3; 2, FOO 4");
    let g = parse("elementclass R { __REST__ $rest | X($rest) } r :: R()");
    assert_eq!(g.elements[0].config, "");
}

#[test]
fn compound_arguments_see_caller_parameters() {
    let g = parse(
        "define($N 9)\n\
         elementclass A { $x | input -> X($x) -> output }\n\
         elementclass B { $y | input -> A($y) -> output }\n\
         b :: B($N) -> Discard",
    );
    assert_eq!(g.elements[0].name, "b/A@1/X@1");
    assert_eq!(g.elements[0].config, "9");
}

#[test]
fn defines_and_overrides() {
    let text =
        "define($DEV eth0, $COUNT 1);\nfd :: FromDevice($DEV) -> c :: Counter($COUNT) -> Discard";
    let g = parse(text);
    assert_eq!(g.elements[0].config, "eth0");
    assert_eq!(g.elements[1].config, "1");
    let g = parse_with(text, &[("DEV", "eth7"), ("$COUNT", "3")]);
    assert_eq!(g.elements[0].config, "eth7");
    assert_eq!(g.elements[1].config, "3");
    // definitions take effect for the whole scope, wherever they are
    let g = parse("Message($a); define($a 2)");
    assert_eq!(g.elements[0].config, "2");
    // command-line parameters need no define
    let g = parse_with("Message($x)", &[("x", "hi")]);
    assert_eq!(g.elements[0].config, "hi");
    // defined values may use earlier definitions
    let g = parse("define($a 1, $b $a$a); X($b)");
    assert_eq!(g.elements[0].config, "11");
}

#[test]
fn defines_are_visible_in_compounds_and_local_defines_stay_inside() {
    let g = parse(
        "define($G global)\n\
         elementclass C { $p | define($L local-$p); X($G $L $p) }\n\
         c :: C(1)",
    );
    assert_eq!(g.elements[0].config, "global local-1 1");
    // outside the compound, $L is undefined: left as written, as in Click
    let g = parse("elementclass C { define($L 1) } c :: C; Y($L)");
    assert!(g.elements.iter().any(|e| e.config == "$L"));
}

#[test]
fn formals_are_lexically_scoped() {
    // a class defined at top level does not see the formals of the compound using it
    let e = errors("elementclass Leaf { X($p) } elementclass User { $p | Leaf } u :: User(1)");
    assert_eq!(e, vec!["r.click:1:23: unknown parameter '$p'"]);
    // but a class defined inside a compound sees that compound's formals
    let g = parse("elementclass U { $p | elementclass L { X($p) }; L } u :: U(5)");
    assert_eq!(g.elements[0].name, "u/L@1/X@1");
    assert_eq!(g.elements[0].config, "5");
}

#[test]
fn overloading() {
    let text = "elementclass MyQueue {\n\
                  input -> Queue -> Shaper(1000) -> output;\n\
                ||\n\
                  $cap | input -> Queue($cap) -> Shaper(1000) -> output;\n\
                }\n\
                a :: MyQueue; b :: MyQueue(20);";
    let g = parse(text);
    assert_eq!(
        elems(&g),
        vec![
            ("a/Queue@1".into(), "Queue".into(), "".into()),
            ("a/Shaper@2".into(), "Shaper".into(), "1000".into()),
            ("b/Queue@1".into(), "Queue".into(), "20".into()),
            ("b/Shaper@2".into(), "Shaper".into(), "1000".into()),
        ]
    );
    // chosen by port counts
    let g = parse("elementclass P { input -> A -> output || input -> B -> output; input [1] -> C -> output } x :: X; p :: P; x -> p -> x; x [1] -> [1] p");
    assert_eq!(names(&g), vec!["x", "p/B@1", "p/C@2"]);
}

#[test]
fn overloading_extends_previous_definitions() {
    let g = parse(
        "elementclass Queue { $cap, $rate | input -> Queue($cap) -> Shaper($rate) -> output || ... }\n\
         a :: Queue(5, 10); b :: Queue(7);",
    );
    assert_eq!(
        elems(&g),
        vec![
            ("a/Queue@1".into(), "Queue".into(), "5".into()),
            ("a/Shaper@2".into(), "Shaper".into(), "10".into()),
            ("b".into(), "Queue".into(), "7".into()),
        ]
    );
    let e =
        error("elementclass T { $a | X($a) }\nt :: T(1, 2)\nelementclass T { $a, $b | Y || ... }");
    assert_eq!(
        e,
        "r.click:2:6: too many arguments for 't' :: T: expected 1, got 2"
    );
}

#[test]
fn multiple_declaration_of_compound() {
    let g = parse("x, y :: { input -> Counter -> output }");
    assert_eq!(names(&g), vec!["x/Counter@1", "y/Counter@1"]);
}

// ---------------------------------------------------------------- errors

#[test]
fn error_argument_counts() {
    assert_eq!(
        error("elementclass C { $a, $b | X($a $b) }\nc :: C(1);"),
        "r.click:2:6: too few arguments for 'c' :: C: expected 2, got 1"
    );
    assert_eq!(
        error("elementclass C { $a, $b | X($a $b) }\nc :: C(1, 2, 3);"),
        "r.click:2:6: too many arguments for 'c' :: C: expected 2, got 3"
    );
    assert_eq!(
        error("elementclass C { COUNT $count | X($count) }\nc :: C(1);"),
        "r.click:2:6: too many arguments for 'c' :: C: expected 0, got 1"
    );
    assert_eq!(
        error("elementclass C { COUNT $count | X($count) }\nc :: C();"),
        "r.click:2:6: missing keyword argument 'COUNT' for 'c' :: C"
    );
    assert_eq!(
        error("c :: { X }(1)"),
        "r.click:1:6: too many arguments for 'c' (anonymous compound): expected 0, got 1"
    );
    let d = paraclick_lang::parse_config(
        &paraclick_lang::Source::new(FILE, "elementclass C { $a, KW $k | X }\nc :: C;"),
        &[],
    )
    .unwrap_err();
    assert_eq!(d[0].notes[0].1, "compound 'C' takes $a, KW $k");
    assert_eq!(
        d[0].notes[0].0.as_ref().map(|s| (s.line, s.col)),
        Some((1, 14))
    );
}

#[test]
fn error_compound_ports() {
    assert_eq!(
        error("a :: A; c :: { input -> X -> output }; a -> [1] c"),
        "r.click:1:40: 'c' :: anonymous compound has no input 1 (the compound has 1 input)"
            .replace("'c' :: anonymous compound", "'c' (anonymous compound)")
    );
    assert_eq!(
        error("elementclass Sink { input -> Discard }\na :: A -> s :: Sink -> b :: B"),
        "r.click:2:11: 's' :: Sink has no output 0 (the compound has no outputs)"
    );
    assert_eq!(
        error("elementclass G { input -> X -> output; input [2] -> Y -> output }"),
        "r.click:1:16: compound 'G' input 1 is not connected inside the compound"
    );
    assert_eq!(
        error("elementclass G { input -> X -> [1] output }"),
        "r.click:1:16: compound 'G' output 0 is not connected inside the compound"
    );
    assert_eq!(
        error("p :: { x :: X -> input; input -> output }"),
        "r.click:1:8: cannot connect to 'input': inside a compound, 'input' only has outputs"
    );
    assert_eq!(
        error("p :: { output -> x :: X; input -> output }"),
        "r.click:1:8: cannot connect from 'output': inside a compound, 'output' only has inputs"
    );
    assert_eq!(
        error("p :: { input :: X }"),
        "r.click:1:8: redeclaration of element 'input'"
    );
}

#[test]
fn error_formals() {
    assert_eq!(
        error("elementclass C { $a, $a | X }"),
        "r.click:1:22: duplicate parameter '$a'"
    );
    assert_eq!(
        error("elementclass C { count $a | X }"),
        "r.click:1:18: bad keyword 'count' for parameter '$a': keywords are uppercase letters, digits and '_'"
    );
    assert_eq!(
        error("elementclass C { __REST__ $r, $a | X }"),
        "r.click:1:18: '__REST__' parameter must come last"
    );
    assert_eq!(
        error("elementclass C { $a $b | X }"),
        "r.click:1:21: expected ',' or '|' after compound parameter, found '$b'"
    );
    assert_eq!(
        error("elementclass C { KW $a, KW2 | X }"),
        "r.click:1:29: expected parameter after keyword 'KW2', found '|'"
    );
    // undeclared formal used in a compound body
    let d = paraclick_lang::parse_config(
        &paraclick_lang::Source::new(FILE, "elementclass C { $a | X($a, $b) } c :: C(1)"),
        &[],
    )
    .unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].to_string(), "r.click:1:29: unknown parameter '$b'");
    assert_eq!(d[0].notes[0].1, "compound 'C' takes $a");
}

#[test]
fn error_overload_no_match() {
    let e = error("elementclass O { $a | X || $a, $b | Y }\no :: O(1, 2, 3)");
    assert_eq!(e, "r.click:2:6: no definition of compound 'O' matches 'o' :: O (3 arguments, no inputs, no outputs)");
    assert_eq!(
        error("x :: { X || ... }"),
        "r.click:1:6: '...' can only extend a named class (use it in 'elementclass')"
    );
}

#[test]
fn unknown_parameters_of_an_unused_class_are_not_errors() {
    // Click expands a compound's body only when the class is used: a
    // library may define a class whose parameters it never declares.
    let src = "elementclass Fw { input -> E($mac1, $gw0) -> output }\n\
               elementclass Other { $a | X($a, $b) }\nIdle -> Discard";
    let g = parse(src);
    assert_eq!(g.elements.len(), 2);
    // used: the unknown parameters are errors, once per class
    let e = errors(&format!(
        "{src}; i :: Idle -> f :: Fw -> g :: Fw -> Discard"
    ));
    assert_eq!(
        e,
        vec![
            "r.click:1:30: unknown parameter '$mac1'",
            "r.click:1:37: unknown parameter '$gw0'",
        ]
    );
    // a class nested in an unused one is not checked either; in a used
    // one, it is when it is used
    let nested = "elementclass Out { elementclass In { X($q) }; In }";
    assert_eq!(parse(nested).elements.len(), 0);
    assert_eq!(
        errors(&format!("{nested} o :: Out")),
        vec!["r.click:1:40: unknown parameter '$q'"]
    );
}

#[test]
fn errors_in_every_instance_and_definition_are_reported_once() {
    // the unknown parameter is in the definition: reported once, not per instance
    let e = errors("elementclass C { X($zz) }\na :: C; b :: C; c :: C(1)");
    assert_eq!(
        e,
        vec![
            "r.click:1:20: unknown parameter '$zz'",
            "r.click:2:22: too many arguments for 'c' :: C: expected 0, got 1",
        ]
    );
}
