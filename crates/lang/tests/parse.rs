//! Parser tests: every syntax form and every error, with exact messages
//! and positions.

mod common;
use common::*;

// ---------------------------------------------------------------- syntax

#[test]
fn declaration_forms() {
    let g = parse("a :: Counter; b :: Queue(10); c, d :: Paint(2)");
    assert_eq!(
        elems(&g),
        vec![
            ("a".into(), "Counter".into(), "".into()),
            ("b".into(), "Queue".into(), "10".into()),
            ("c".into(), "Paint".into(), "2".into()),
            ("d".into(), "Paint".into(), "2".into()),
        ]
    );
    assert!(g.connections.is_empty());
    assert!(g.elements.iter().all(|e| !e.anonymous));
}

#[test]
fn connection_chain_and_ports() {
    let g = parse(
        "a :: A; b :: B; c :: C;\n\
         a -> b -> c;\n\
         a[1] -> [2]b;\n\
         a [3] -> [4] b [5] -> [6] c",
    );
    assert_eq!(
        conns(&g),
        s(&[
            "a[0] -> [0]b",
            "b[0] -> [0]c",
            "a[1] -> [2]b",
            "a[3] -> [4]b",
            "b[5] -> [6]c",
        ])
    );
}

#[test]
fn semicolons_optional_and_newlines_insignificant() {
    let g = parse("a :: A b :: B\na\n->\nb a -> b;;;");
    assert_eq!(names(&g), vec!["a", "b"]);
    assert_eq!(conns(&g), s(&["a[0] -> [0]b"]));
}

#[test]
fn anonymous_elements_are_named_class_at_index() {
    // N is the element's 1-based position among the scope's elements
    let g = parse("src :: InfiniteSource -> Counter -> Queue(5) -> sink :: Discard; Print");
    assert_eq!(
        names(&g),
        vec!["src", "Counter@2", "Queue@3", "sink", "Print@5"]
    );
    assert_eq!(g.elements[2].config, "5");
    assert!(g.elements[1].anonymous && !g.elements[0].anonymous);
    assert_eq!(
        conns(&g),
        s(&[
            "src[0] -> [0]Counter@2",
            "Counter@2[0] -> [0]Queue@3",
            "Queue@3[0] -> [0]sink"
        ])
    );
}

#[test]
fn anonymous_names_avoid_declared_names() {
    let g = parse("Counter@2 :: Counter; x :: A -> Counter -> Discard");
    // the anonymous Counter would be Counter@3... no clash; force one:
    assert_eq!(names(&g), vec!["Counter@2", "x", "Counter@3", "Discard@4"]);
    let g = parse("A -> B; B@2 :: X");
    assert_eq!(names(&g), vec!["A@1", "B@3", "B@2"]);
}

#[test]
fn bare_identifier_is_element_or_anonymous_class() {
    let g = parse("c :: Counter; InfiniteSource -> c -> Discard; c -> counter");
    assert_eq!(
        names(&g),
        vec!["c", "InfiniteSource@2", "Discard@3", "counter@4"]
    );
    assert_eq!(g.elements[3].class, "counter");
}

#[test]
fn declaration_inside_connection() {
    let g = parse("src :: InfiniteSource -> c :: Counter(1) -> Discard; c [1] -> Discard");
    assert_eq!(names(&g), vec!["src", "c", "Discard@3", "Discard@4"]);
    assert_eq!(g.elements[1].config, "1");
    assert_eq!(
        conns(&g),
        s(&[
            "src[0] -> [0]c",
            "c[0] -> [0]Discard@3",
            "c[1] -> [0]Discard@4"
        ])
    );
}

#[test]
fn config_strings_are_raw() {
    let g = parse(
        "a :: A(x, \"y)\" , 'z)' /* ) */ // )\n (nested (parens)));\n\
         b :: B(\\) )",
    );
    assert_eq!(
        g.elements[0].config,
        "x, \"y)\" , 'z)' /* ) */ // )\n (nested (parens))"
    );
    assert_eq!(g.elements[1].config, "\\) ");
    let g = parse("a :: A();");
    assert_eq!(g.elements[0].config, "");
}

#[test]
fn comments_everywhere() {
    let g = parse("// start\na /* mid */ :: /* x */ A // end\n-> /* \n */ b :: B");
    assert_eq!(conns(&g), s(&["a[0] -> [0]b"]));
}

#[test]
fn many_to_one_and_one_to_many() {
    let g = parse("a, b :: X; c :: Y; a, b [1] -> c; c -> [1] a, b");
    assert_eq!(
        conns(&g),
        s(&[
            "a[0] -> [0]c",
            "b[1] -> [0]c",
            "c[0] -> [1]a",
            "c[0] -> [0]b"
        ])
    );
    // only the last name of a many-to-one connection is declared
    let g = parse("n1, n2 :: Cls -> n3 :: D");
    assert_eq!(elems(&g)[0], ("n1@1".into(), "n1".into(), "".into()));
    assert_eq!(elems(&g)[1], ("n2".into(), "Cls".into(), "".into()));
}

#[test]
fn many_to_many() {
    let g = parse("c :: Classifier(a, b, -); n :: N; c => Paint(0), Paint(1), Paint(2) -> n");
    assert_eq!(
        conns(&g),
        s(&[
            "c[0] -> [0]Paint@3",
            "c[1] -> [0]Paint@4",
            "c[2] -> [0]Paint@5",
            "Paint@3[0] -> [0]n",
            "Paint@4[0] -> [0]n",
            "Paint@5[0] -> [0]n",
        ])
    );
    let g = parse("c :: C; d :: D; c [0, 2] => [1, 0] d; c [1], c [3] => d, d");
    assert_eq!(
        conns(&g),
        s(&[
            "c[0] -> [1]d",
            "c[2] -> [0]d",
            "c[1] -> [0]d",
            "c[3] -> [0]d"
        ])
    );
    let g = parse("a :: A; b :: B; a => b");
    assert_eq!(conns(&g), s(&["a[0] -> [0]b"]));
    let g = parse("t :: T; t => [0,1] q :: Q");
    assert_eq!(conns(&g), s(&["t[0] -> [0]q", "t[1] -> [1]q"]));
}

#[test]
fn repeated_connections_count_once() {
    let g = parse("a :: A; b :: B; a -> b; a -> b; a [0] -> [0] b");
    assert_eq!(g.connections.len(), 1);
}

#[test]
fn requirements_and_provide() {
    // require(library FILE) is resolved while parsing (crates/paraclick/tests/libraries.rs);
    // the other requirements are left for the router to check.
    let g = parse("require(package foo, bar);\n  require(package \"my pkg\")\nprovide(x)");
    let r: Vec<Vec<String>> = g.requirements.iter().map(|r| r.words.clone()).collect();
    assert_eq!(
        r,
        vec![
            vec!["package".to_string(), "foo".to_string()],
            vec!["bar".to_string()],
            vec!["package".to_string(), "my pkg".to_string()],
        ]
    );
    assert_eq!(
        (g.requirements[2].span.line, g.requirements[2].span.col),
        (2, 3)
    );
}

#[test]
fn spans_of_elements_and_connections() {
    let g = parse("src :: InfiniteSource(LIMIT 5)\n  -> c :: Counter -> Discard;");
    let e = &g.elements[0];
    assert_eq!((e.span.line, e.span.col), (1, 8));
    assert_eq!(
        &"src :: InfiniteSource(LIMIT 5)"[e.span.start..e.span.end],
        "InfiniteSource(LIMIT 5)"
    );
    assert_eq!(&*e.span.file, FILE);
    let c = &g.elements[1];
    assert_eq!((c.span.line, c.span.col), (2, 11));
    let d = &g.elements[2];
    assert_eq!((d.span.line, d.span.col), (2, 22));
    let conn = &g.connections[1];
    assert_eq!((conn.span.line, conn.span.col), (2, 6));
}

#[test]
fn shebang_line_is_ignored() {
    let g = parse("#!/usr/local/bin/click\na :: A");
    assert_eq!(names(&g), vec!["a"]);
}

#[test]
fn identifiers_with_slashes_and_at() {
    let g = parse("a/b :: X; x@y :: Y; a/b -> x@y");
    assert_eq!(conns(&g), s(&["a/b[0] -> [0]x@y"]));
}

// ---------------------------------------------------------------- errors

#[test]
fn error_expected_arrow_or_semicolon() {
    assert_eq!(
        error("a :: A -> b :: B ) c"),
        "r.click:1:18: expected '->' or ';', found ')'"
    );
    // A second parenthesis starts an element group.
    assert_eq!(
        error("a :: A(1) (2)"),
        "r.click:1:12: '2' is neither an element nor a class (all-digit component)"
    );
    assert_eq!(
        error("a :: A :: B"),
        "r.click:1:8: expected '->' or ';', found '::'"
    );
    assert_eq!(
        error("a -> b ] -> c"),
        "r.click:1:8: expected '->' or ';', found ']'"
    );
}

#[test]
fn error_missing_element() {
    assert_eq!(
        error("a -> ;"),
        "r.click:1:6: expected element after '->', found ';'"
    );
    assert_eq!(
        error("a ->"),
        "r.click:1:5: expected element after '->', found end of file"
    );
    assert_eq!(error("-> b"), "r.click:1:1: expected element, found '->'");
    assert_eq!(
        error("a :: ;"),
        "r.click:1:6: expected element class after '::', found ';'"
    );
    assert_eq!(
        error("a, -> b"),
        "r.click:1:4: expected element after ',', found '->'"
    );
    assert_eq!(
        error("[1] -> b"),
        "r.click:1:5: expected element name or class, found '->'"
    );
}

#[test]
fn error_redeclaration() {
    let e = errors("a :: Counter;\nb :: Queue;\na :: Queue;");
    assert_eq!(e, vec!["r.click:3:1: redeclaration of element 'a'"]);
    let d = paraclick_lang::parse_config(&paraclick_lang::Source::new(FILE, "a :: X; a :: Y"), &[])
        .unwrap_err();
    assert_eq!(d[0].notes.len(), 1);
    let (span, note) = &d[0].notes[0];
    assert_eq!(note, "element 'a' previously declared here");
    assert_eq!(span.as_ref().map(|s| (s.line, s.col)), Some((1, 1)));
    assert_eq!(
        error("a, a :: X"),
        "r.click:1:4: redeclaration of element 'a'"
    );
}

#[test]
fn error_bad_port_numbers() {
    assert_eq!(
        error("a :: A; b :: B; a [x] -> b"),
        "r.click:1:20: bad port number 'x'"
    );
    assert_eq!(
        error("a :: A; b :: B; a [1 -> b"),
        "r.click:1:22: expected ']' after port number, found '->'"
    );
    assert_eq!(
        error("a :: A; b :: B; a [] -> b"),
        "r.click:1:19: empty port list '[]'"
    );
    assert_eq!(
        error("a :: A; b :: B; a -> [-1] b"),
        "r.click:1:23: unexpected character '-'"
    );
    assert_eq!(
        error("a :: A; b :: B; a [99999999] -> b"),
        "r.click:1:20: port number 99999999 is too large (at most 65535)"
    );
    assert_eq!(
        error("a :: A; a [1];"),
        "r.click:1:11: port given, but no connection"
    );
}

#[test]
fn error_unterminated() {
    assert_eq!(
        error("a :: A(1, 2\n-> b;"),
        "r.click:1:7: unterminated configuration string: missing ')'"
    );
    assert_eq!(
        error("a :: A(\"x) -> b;"),
        "r.click:1:8: unterminated string in configuration"
    );
    assert_eq!(
        error("a :: A; /* comment"),
        "r.click:1:9: unterminated comment: missing '*/'"
    );
    assert_eq!(
        error("x :: { input -> output"),
        "r.click:1:6: unterminated compound element: missing '}'"
    );
}

#[test]
fn undefined_parameter_outside_compound_is_literal() {
    // Click leaves an undefined `$name` outside any compound as written.
    let g = parse("a :: A(1, $foo);\nb :: B(${bar}x)");
    assert_eq!(g.elements[0].config, "1, $foo");
    assert_eq!(g.elements[1].config, "${bar}x");
    // inside a compound it is still an error
    assert_eq!(
        error("elementclass E { a :: A(1, $foo) -> output }; E -> Discard"),
        "r.click:1:28: unknown parameter '$foo'"
    );
    // quoted, escaped, commented and defaulted references are fine
    let g = parse("a :: A('$x', \\$y, ${z-3} /* $w */)");
    assert_eq!(g.elements[0].config, "'$x', \\$y, 3 /* $w */");
}

#[test]
fn error_keywords_and_characters() {
    assert_eq!(
        error("elementclass;"),
        "r.click:1:13: expected element class name after 'elementclass', found ';'"
    );
    assert_eq!(
        error("elementclass A;"),
        "r.click:1:15: expected '{' or a class name after 'elementclass A', found ';'"
    );
    assert_eq!(
        error("connectiontunnel a -> b;"),
        "r.click:1:1: 'connectiontunnel' is not supported"
    );
    assert_eq!(error("a :: A; }"), "r.click:1:9: unmatched '}'");
    assert_eq!(error("a :: A % b"), "r.click:1:8: unexpected character '%'");
    assert_eq!(
        error("a :: require"),
        "r.click:1:6: expected element class after '::', found 'require'"
    );
    assert_eq!(
        error("require x"),
        "r.click:1:9: expected '(' after 'require', found 'x'"
    );
    assert_eq!(
        error("1/x :: A"),
        "r.click:1:1: element name '1/x' has all-digit component"
    );
}

#[test]
fn error_bad_define() {
    assert_eq!(
        error("define(foo 1)"),
        "r.click:1:1: bad definition 'foo 1': expected '$NAME value'"
    );
    assert_eq!(
        error("define($a 1, $a 2)"),
        "r.click:1:1: parameter '$a' defined more than once"
    );
}

#[test]
fn all_errors_are_reported() {
    let e = errors(
        "a :: A;\n\
         a :: B;\n\
         b :: C($nope);\n\
         c -> ;\n\
         d [z] -> e;\n\
         f :: F(\"x\n",
    );
    assert_eq!(
        e,
        vec![
            "r.click:2:1: redeclaration of element 'a'",
            "r.click:4:6: expected element after '->', found ';'",
            "r.click:5:4: bad port number 'z'",
            "r.click:6:8: unterminated string in configuration",
        ]
    );
}

#[test]
fn recovery_keeps_later_statements() {
    // the error does not hide the later redeclaration
    let e = errors("a -> ] ;\nx :: X; x :: Y;");
    assert_eq!(
        e,
        vec![
            "r.click:1:6: expected element after '->', found ']'",
            "r.click:2:9: redeclaration of element 'x'",
        ]
    );
}

#[test]
fn error_use_before_declaration() {
    let e = errors("src :: Src; src -> b; b :: Counter;");
    assert_eq!(
        e,
        vec!["r.click:1:20: element 'b' used before its declaration"]
    );
    // a later declaration of a name used as a class is fine if the class exists
    let g = parse("elementclass Q { input -> Y -> output } Q; Q@1 :: X");
    assert_eq!(names(&g), vec!["Q@2/Y@1", "Q@1"]);
}

#[test]
fn error_nesting_too_deep() {
    let text = format!("x :: {}{}", "{ ".repeat(150), "}".repeat(150));
    let e = errors(&text);
    assert_eq!(
        e[0],
        "r.click:1:206: compound elements nested too deeply (at most 100 levels)"
    );
}

#[test]
fn error_duplicate_names_after_expansion() {
    let e = errors("c :: { input -> x :: X -> output }; c/x :: Y; a :: A -> c -> b :: B");
    assert_eq!(
        e,
        vec!["r.click:1:44: two elements are named 'c/x' after compound expansion"]
    );
}

#[test]
fn unknown_parameter_suggestion() {
    let d = paraclick_lang::parse_config(
        &paraclick_lang::Source::new(
            FILE,
            "define($DEV eth0); elementclass E { FromDevice($DEVV) -> output }; E -> Discard",
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(d[0].to_string(), "r.click:1:48: unknown parameter '$DEVV'");
    assert_eq!(d[0].notes[0].1, "did you mean '$DEV'?");
}

#[test]
fn empty_configuration() {
    let g = parse("");
    assert!(g.elements.is_empty() && g.connections.is_empty() && g.requirements.is_empty());
    let g = parse("  // nothing\n/* at all */ ;;");
    assert!(g.elements.is_empty());
}

#[test]
fn crlf_line_endings() {
    let g = parse("a :: A;\r\nb :: B;\r\na -> b;\r\n");
    assert_eq!(conns(&g), s(&["a[0] -> [0]b"]));
    assert_eq!((g.elements[1].span.line, g.elements[1].span.col), (2, 6));
}

#[test]
fn recovery_at_next_line_without_semicolons() {
    let e = errors("a -> ]\nb :: X\nb :: Y\nc [x] -> d\ne :: E(\n$u)");
    assert_eq!(
        e,
        vec![
            "r.click:1:6: expected element after '->', found ']'",
            "r.click:3:1: redeclaration of element 'b'",
            "r.click:4:4: bad port number 'x'",
        ]
    );
}

#[test]
fn script_variables_are_not_parameters() {
    let g = parse("define($n 3); s :: Script(set x $n, print $x, print $(add $x 1))");
    assert_eq!(g.elements[0].config, "set x 3, print $x, print $(add $x 1)");
}

/// `cpp`'s line directives move the reported file and line, at the top
/// level and inside a configuration string (which does not keep them).
#[test]
fn line_directives_set_the_reported_place() {
    let e = error("a :: Idle;\n# 1 \"B\" 1\na :: Idle;\n# 3 \"A\" 2\nb :: Idle;");
    assert!(e.starts_with("B:1:1: redeclaration of element 'a'"), "{e}");
    let g = parse("m :: M(\n# 100 \"foo.click\"\n\"x\");\nn :: N;");
    assert_eq!(g.elements[0].config.trim(), "\"x\"");
    assert_eq!(&*g.elements[1].span.file, "foo.click");
    assert_eq!(g.elements[1].span.line, 101);
    // `#line N` and a bare `# N` keep the file.
    let g = parse("#line 7\nm :: M;\n# 20\nn :: N;");
    assert_eq!(
        (&*g.elements[0].span.file, g.elements[0].span.line),
        (FILE, 7)
    );
    assert_eq!(g.elements[1].span.line, 20);
}

/// Click's form of errors: FILE:LINE without column or excerpt, notes
/// pointing elsewhere kept, suggestions dropped, an element's errors
/// under one context line, `-e` named `config`.
#[test]
fn errors_in_clicks_form() {
    use paraclick_lang::{render_click, Diagnostic, Source};
    let errs = match paraclick_lang::parse_config(&Source::new("A", "x :: Idle;\nx :: Idle;"), &[])
    {
        Err(e) => e,
        Ok(_) => panic!("redeclaration accepted"),
    };
    assert_eq!(
        render_click(&errs),
        "A:2: redeclaration of element 'x'\nA:1: element 'x' previously declared here\n"
    );
    let at = |line| paraclick_lang::Span {
        file: "<expr>".into(),
        line,
        col: 3,
        start: 0,
        end: 1,
    };
    let d = |m: &str| Diagnostic::error(Some(at(3)), m);
    let diags = [
        d("rw :: R: one").in_element("configuring", "rw", "R", "one"),
        d("rw :: R: two").in_element("configuring", "rw", "R", "two"),
        d("unknown element class 'Cuonter'").with_note(Some(at(3)), "did you mean 'Counter'?"),
    ];
    assert_eq!(
        render_click(&diags),
        "config:3: While configuring 'rw :: R':\n  one\n  two\n\
         config:3: unknown element class 'Cuonter'\n"
    );
}

/// A name used as a class is a class from then on, in every scope (Click's
/// lexer: its tools take any such word for a class), so declaring an
/// element of that name later is an error; so is a name an
/// `elementclass` in scope defines. A class local to a compound, an
/// element declared in one, or a word of this scope declared later (a
/// clearer error) is none of these.
#[test]
fn a_name_used_as_a_class_names_no_element() {
    let err = |t: &str| {
        error(t)
            .split_once(": ")
            .map(|(a, b)| (a.to_string(), b.to_string()))
    };
    let (at, msg) = err("elementclass Foo {\n   A -> B;\n}\nA :: Idle;").unwrap();
    assert!(at.ends_with(":4:1"), "{at}");
    assert_eq!(msg, "class 'A' used as element name");
    let (at, _) = err("elementclass Foo {\n   A :: A;\n}\n").unwrap();
    assert!(at.ends_with(":2:4"), "{at}");
    let (_, msg) = err("Idle :: Idle;").unwrap();
    assert_eq!(msg, "class 'Idle' used as element name");
    let (_, msg) = err("elementclass A { input -> output }\nA :: Idle;").unwrap();
    assert_eq!(msg, "class 'A' used as element name");
    for fine in [
        "elementclass Foo { A :: Idle }\nA :: Idle;",
        "elementclass Foo { elementclass A { input -> output } }\nA :: Idle;",
        "x :: Idle;\nelementclass x { input -> output }",
    ] {
        parse(fine);
    }
    assert!(error("Idle -> foo;\nfoo :: Discard;").contains("used before its declaration"));
}
