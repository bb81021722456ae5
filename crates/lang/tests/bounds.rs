//! Configurations that would exhaust the stack or memory, or read files
//! they should not, get located errors (issue 35).

use paraclick_lang::{
    check_graph, parse_config, parse_config_with, render, ClassSpec, FilePolicy, ParseOptions,
    Source, SourceSet, MAX_EXPANSION_DEPTH,
};
use std::path::{Path, PathBuf};

/// Compound classes nested by use: `C{k}` uses `C{k-1}`, `uses` times in a
/// row; the top level uses `C{depth-1}` once.
fn nested_by_use(depth: usize, uses: usize) -> String {
    let mut s = String::from("elementclass C0 { input -> Null -> output }\n");
    for k in 1..depth {
        s.push_str(&format!("elementclass C{k} {{ input"));
        for _ in 0..uses {
            s.push_str(&format!(" -> C{}", k - 1));
        }
        s.push_str(" -> output }\n");
    }
    s.push_str(&format!(
        "src :: InfiniteSource -> top :: C{} -> Discard;\n",
        depth - 1
    ));
    s
}

fn errors(r: Result<paraclick_lang::FlatGraph, Vec<paraclick_lang::Diagnostic>>) -> String {
    match r {
        Ok(g) => panic!("expected errors, got {} elements", g.elements.len()),
        Err(e) => lines(&e),
    }
}

/// Each diagnostic and its notes, one a line.
fn lines(e: &[paraclick_lang::Diagnostic]) -> String {
    let mut out = String::new();
    for d in e {
        out.push_str(&format!("{d}\n"));
        for (_, n) in &d.notes {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out
}

/// A quarter of the stack the router parses a `hotconfig` on (a thread
/// of 8 MiB; the control connection's 256 KiB overflowed before the
/// bound, at 250 levels): expansion to the bound fits with a margin.
const STACK: usize = 2 << 20;

/// Runs `f` on a thread with a stack of `STACK` bytes.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap()
        .join()
        .expect("thread panicked")
}

#[test]
fn compounds_nested_by_use_beyond_the_bound_are_a_located_error() {
    let text = nested_by_use(250, 1);
    let src = Source::new("deep.click", text.as_str());
    let e = errors(parse_config(&src, &[]));
    assert!(e.contains("nested too deeply by use"), "{e}");
    assert!(
        e.contains(&format!("(at most {MAX_EXPANSION_DEPTH})")),
        "{e}"
    );
    assert_eq!(e.matches("nested too deeply").count(), 1, "{e}");
    // located at a use inside a class body, noted at the top-level use
    assert!(e.starts_with("deep.click:"), "{e}");
    assert!(e.contains("note: while expanding 'top' :: C249"), "{e}");
}

#[test]
fn compounds_nested_by_use_at_the_bound_expand() {
    // `top` is level 1, C0 level MAX: exactly at the bound
    let g = parse_config(
        &Source::new("ok.click", nested_by_use(MAX_EXPANSION_DEPTH, 1).as_str()),
        &[],
    )
    .unwrap();
    assert_eq!(g.elements.len(), 3);
    let e = errors(parse_config(
        &Source::new(
            "no.click",
            nested_by_use(MAX_EXPANSION_DEPTH + 1, 1).as_str(),
        ),
        &[],
    ));
    assert!(e.contains("nested too deeply by use"), "{e}");
}

#[test]
fn deep_use_is_refused_within_a_bounded_stack() {
    // 3,000 levels overflowed even an 8 MiB stack before the bound.
    let e = on_small_stack(|| {
        let text = nested_by_use(3000, 1);
        errors(parse_config(&Source::new("deep.click", text.as_str()), &[]))
    });
    assert!(e.contains("nested too deeply by use"), "{e}");
}

#[test]
fn exponential_expansion_stops_at_the_element_bound() {
    // Each class uses the previous twice: 2^23 Nulls, 1.2 KB of text.
    let text = nested_by_use(24, 2);
    assert!(text.len() < 1500);
    let opts = ParseOptions {
        max_elements: 10_000,
        ..ParseOptions::default()
    };
    let e = errors(parse_config_with(
        &Source::new("exp.click", text.as_str()),
        &[],
        &opts,
    ));
    assert!(e.contains("configuration too large"), "{e}");
    assert!(e.contains("10000"), "{e}");
    assert!(e.contains("--max-elements"), "{e}");
    assert!(e.contains("note: while expanding 'top' :: C23"), "{e}");
    assert_eq!(e.matches("too large").count(), 1, "{e}");
    // A configuration within the bound is unchanged.
    let small = nested_by_use(8, 2);
    let g = parse_config_with(&Source::new("s.click", small.as_str()), &[], &opts).unwrap();
    assert_eq!(g.elements.len(), 2 + (1 << 7));
}

#[test]
fn compound_instances_without_elements_count_too() {
    // pass-through compounds make no element, but tunnels and connections
    let mut text = String::from("elementclass P0 { input -> output }\n");
    for k in 1..30 {
        text.push_str(&format!(
            "elementclass P{k} {{ input -> P{} -> P{} -> output }}\n",
            k - 1,
            k - 1
        ));
    }
    text.push_str("Idle -> P29 -> Discard;\n");
    let opts = ParseOptions {
        max_elements: 50_000,
        ..ParseOptions::default()
    };
    let e = errors(parse_config_with(
        &Source::new("p.click", text.as_str()),
        &[],
        &opts,
    ));
    assert!(e.contains("configuration too large"), "{e}");
}

#[test]
fn parameter_doubling_stops_before_allocating() {
    // $p40 would be 2^40 bytes
    let mut text = String::from("define($p0 xxxxxxxx");
    for k in 1..40 {
        text.push_str(&format!(", $p{k} $p{}$p{}", k - 1, k - 1));
    }
    text.push_str(");\nIdle -> Print($p39) -> Discard;\n");
    let e = errors(parse_config(&Source::new("d.click", text.as_str()), &[]));
    assert!(e.contains("parameter substitution makes"), "{e}");
    // through compound arguments as well
    let mut text = String::from("elementclass D0 { $a | input -> Print($a) -> output }\n");
    for k in 1..40 {
        text.push_str(&format!(
            "elementclass D{k} {{ $a | input -> D{}($a$a) -> output }}\n",
            k - 1
        ));
    }
    text.push_str("Idle -> D39(xxxxxxxx) -> Discard;\n");
    let e = errors(parse_config(&Source::new("d.click", text.as_str()), &[]));
    assert!(e.contains("parameter substitution makes"), "{e}");
}

fn lookup(name: &str) -> Option<ClassSpec> {
    match name {
        "InfiniteSource" => Some(ClassSpec::new("0/1", "a/ah")),
        "Null" => Some(ClassSpec::new("1/1", "a")),
        "Discard" => Some(ClassSpec::new("1/0", "a")),
        "Queue" => Some(ClassSpec::new("1/1", "h/l")),
        "ToDevice" => Some(ClassSpec::new("1/0", "l")),
        "Tee" => Some(ClassSpec::new("1/-", "h")),
        _ => None,
    }
}

fn check(text: &str) -> Result<(), String> {
    let g = parse_config(&Source::new("c.click", text), &[]).unwrap();
    check_graph(&g, &lookup, &[])
        .map(|_| ())
        .map_err(|e| lines(&e))
}

fn chain(n: usize, head: &str, tail: &str) -> String {
    let mut s = String::from(head);
    for _ in 0..n {
        s.push_str(" -> Null");
    }
    s.push_str(tail);
    s
}

#[test]
fn long_push_and_pull_chains_are_refused_by_check() {
    let max = paraclick_lang::check::MAX_CHAIN;
    // source + nulls + sink = max elements: fine
    assert_eq!(
        check(&chain(max - 2, "InfiniteSource", " -> Discard;")),
        Ok(())
    );
    let e = check(&chain(9000, "InfiniteSource", " -> Discard;")).unwrap_err();
    assert!(e.contains("push chain too long"), "{e}");
    assert!(
        e.contains(&format!("is element {} of a push path", max + 1)),
        "{e}"
    );
    assert!(e.contains("starts at 'InfiniteSource@1'"), "{e}");
    let e = check(&chain(max, "InfiniteSource -> Queue", " -> ToDevice;")).unwrap_err();
    assert!(e.contains("pull chain too long"), "{e}");
    assert!(e.contains("starts at 'ToDevice@"), "{e}");
    // split by a queue, each half is fine
    let half = chain(max - 3, "InfiniteSource", " -> Queue");
    assert_eq!(check(&chain(max - 3, &half, " -> ToDevice;")), Ok(()));
}

#[test]
fn push_cycles_count_all_their_elements() {
    // a cycle of many elements (Tee's output 1 loops back)
    let mut s = String::from("src :: InfiniteSource -> t :: Tee -> Discard;\nt[1]");
    for _ in 0..1200 {
        s.push_str(" -> Null");
    }
    s.push_str(" -> t;\n");
    let e = check(&s).unwrap_err();
    assert!(e.contains("through a cycle of 1201 elements"), "{e}");
    // and a small cycle is fine
    assert_eq!(
        check("src :: InfiniteSource -> t :: Tee -> Discard; t[1] -> Null -> t;"),
        Ok(())
    );
}

/// A directory under the target directory's `tmp`, removed when dropped.
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(name: &str) -> TmpDir {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("bounds-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_library_that_is_not_a_configuration_is_never_quoted() {
    let t = TmpDir::new("quote");
    let secret = t.0.join("shadow");
    std::fs::write(&secret, "root:$6$s3cr3tHash:19000:0:99999:7:::\nbin:*:1\n").unwrap();
    let text = format!("require(library {});\nIdle -> Discard;\n", secret.display());
    let src = Source::new("q.click", text.as_str());
    let e = parse_config(&src, &[]).unwrap_err();
    let mut set = SourceSet::new();
    set.add(src.clone());
    set.add(Source::new(
        secret.display().to_string(),
        std::fs::read_to_string(&secret).unwrap(),
    ));
    let out = render(&e, &set);
    for word in ["root", "s3cr3t", "99999", "bin"] {
        assert!(!out.contains(word), "{word} quoted:\n{out}");
    }
    assert_eq!(e.len(), 1, "{out}");
    assert!(out.starts_with("q.click:1:1: library"), "{out}");
    assert!(out.contains("is not a configuration"), "{out}");
    assert!(out.contains("the first at line 1, column"), "{out}");

    // a *.click library's errors are its own, as before
    let lib = t.0.join("lib.click");
    std::fs::write(&lib, "elementclass X { input -> output }\nfoo :: ;\n").unwrap();
    let text = format!(
        "require(library {});\nIdle -> X -> Discard;\n",
        lib.display()
    );
    let e = parse_config(&Source::new("q.click", text.as_str()), &[]).unwrap_err();
    assert!(
        e[0].span.as_ref().unwrap().file.ends_with("lib.click"),
        "{e:?}"
    );
}

#[test]
fn a_confined_configuration_reads_libraries_only_under_allowed_directories() {
    let t = TmpDir::new("confined");
    let ok = t.0.join("ok");
    std::fs::create_dir(&ok).unwrap();
    std::fs::write(ok.join("lib.click"), "elementclass X { input -> output }\n").unwrap();
    std::fs::write(
        t.0.join("out.click"),
        "elementclass Y { input -> output }\n",
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(t.0.join("out.click"), ok.join("link.click")).unwrap();
    let opts = ParseOptions {
        clickpath: Some(ok.display().to_string()),
        files: FilePolicy::under([&ok]),
        ..ParseOptions::default()
    };
    let parse = |lib: &str, class: &str| {
        let text = format!("require(library {lib});\nIdle -> {class} -> Discard;\n");
        parse_config_with(&Source::new("hotconfig", text.as_str()), &[], &opts)
    };
    assert!(parse("lib.click", "X").is_ok());
    assert!(parse(&ok.join("lib.click").display().to_string(), "X").is_ok());
    for bad in [
        t.0.join("out.click").display().to_string(),
        format!("{}/../out.click", ok.display()),
        "../out.click".to_string(),
        "/etc/passwd".to_string(),
        ok.join("missing.click").display().to_string(),
        #[cfg(unix)]
        "link.click".to_string(),
    ] {
        let e = parse(&bad, "Y").unwrap_err();
        assert!(
            e[0].message
                .contains("under the directories a configuration from a control socket may read"),
            "{bad}: {e:?}"
        );
    }
    // the operator's own configuration reads any library
    let any = ParseOptions {
        clickpath: Some(ok.display().to_string()),
        ..ParseOptions::default()
    };
    let text = format!(
        "require(library {});\nIdle -> Y -> Discard;\n",
        t.0.join("out.click").display()
    );
    assert!(parse_config_with(&Source::new("c.click", text.as_str()), &[], &any).is_ok());
}

#[test]
fn kinds_spread_along_a_long_chain_in_one_sweep() {
    // Pull spreads backward from ToDevice one element per pass over the
    // connections; each pass used to visit all of them (100,000 elements:
    // minutes, on a control connection's thread for a hotconfig).
    let n = 100_000;
    let e = check(&chain(n, "InfiniteSource -> Queue", " -> ToDevice;")).unwrap_err();
    assert_eq!(e.matches("chain too long").count(), 1, "{e}");
    assert!(e.contains("pull chain too long"), "{e}");
    let e = check(&chain(n, "InfiniteSource", " -> Queue -> ToDevice;")).unwrap_err();
    assert!(e.contains("push chain too long"), "{e}");
    // a conflict far down a chain is still found, once
    let text = chain(
        n,
        "InfiniteSource -> Queue",
        " -> t :: Tee -> Discard; t[1] -> Discard;",
    );
    let e = check(&text).unwrap_err();
    let errors: Vec<&str> = e.lines().filter(|l| !l.starts_with("note:")).collect();
    assert_eq!(errors.len(), 1, "{e}");
    assert!(errors[0].contains("pull output 0 of"), "{e}");
}

#[test]
fn libraries_requiring_libraries_are_bounded_in_depth() {
    let t = TmpDir::new("libchain");
    let n = 150;
    for k in 0..n {
        let next = if k + 1 < n {
            format!("require(library l{}.click);\n", k + 1)
        } else {
            String::new()
        };
        std::fs::write(
            t.0.join(format!("l{k}.click")),
            format!("{next}elementclass L{k} {{ input -> output }}\n"),
        )
        .unwrap();
    }
    let text = format!(
        "require(library {});\nIdle -> L0 -> Discard;\n",
        t.0.join("l0.click").display()
    );
    let e = errors(parse_config(&Source::new("c.click", text.as_str()), &[]));
    assert!(
        e.contains("libraries require each other too deeply (at most 100 levels)"),
        "{e}"
    );
    assert_eq!(e.matches("too deeply").count(), 1, "{e}");
}

#[test]
fn anonymous_names_skip_declared_ones_in_linear_time() {
    // Declared names take every `Null@N` the anonymous Nulls would get:
    // each anonymous one searched past all of them (20,000: 36 s).
    let n = 20_000;
    let mut text: String = (n + 2..2 * n + 2)
        .map(|i| format!("Null@{i} :: Idle;\n"))
        .collect();
    text.push_str(&chain(n, "Idle", " -> Discard;"));
    let g = parse_config(&Source::new("a.click", text.as_str()), &[]).unwrap();
    let anon: Vec<&str> = g
        .elements
        .iter()
        .filter(|e| e.anonymous && e.class == "Null")
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(anon.len(), n);
    assert_eq!(anon[0], format!("Null@{}", 2 * n + 2));
    assert_eq!(anon[n - 1], format!("Null@{}", 3 * n + 1));
}

#[test]
fn connection_groups_are_counted_before_their_pairs_are_made() {
    // `a0, a1, ... -> b0, b1, ...` would connect every pair (Click
    // refuses it, and so does paraclick, but only after the pairs are
    // counted): 5,000 a side is 25 million connections from 160 KB of
    // text (2.5 GB; 10,000 a side aborted on allocation).
    let n = 5000;
    let side = |p: &str, class: &str| -> String {
        (0..n)
            .map(|i| format!("{p}{i} :: {class}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!("{} -> {};\n", side("a", "Idle"), side("b", "Discard"));
    let e = errors(parse_config(&Source::new("x.click", text.as_str()), &[]));
    assert!(
        e.contains("this connection makes 25000000 connections"),
        "{e}"
    );
    assert_eq!(e.matches("too large").count(), 1, "{e}");
    // within the bound, many to one and one to many are made; many to
    // many with '->' is refused, as Click refuses it
    let opts = ParseOptions {
        max_elements: 100,
        ..ParseOptions::default()
    };
    let g = parse_config_with(
        &Source::new(
            "x.click",
            "a, b -> t :: Tee -> [0] c, [1] c; t[1] -> Discard;",
        ),
        &[],
        &opts,
    )
    .unwrap_or_else(|e| panic!("{}", lines(&e)));
    assert_eq!(g.connections.len(), 5);
    let e = parse_config_with(
        &Source::new("x.click", "a, b -> t :: Tee, u :: Tee;"),
        &[],
        &opts,
    )
    .unwrap_err();
    assert_eq!(
        paraclick_lang::render_click(&e),
        "x.click:1: syntax error: many-to-many connections require '=>'\n"
    );
}

#[test]
fn an_error_per_line_of_a_large_file_renders_in_linear_time() {
    // Each excerpt read the file from its start to find its line, and
    // each unknown class had its suggestion computed again.
    let n = 100_000;
    let text: String = (0..n).map(|i| format!("Counter{i};\n")).collect();
    let src = Source::new("u.click", text.as_str());
    let g = parse_config(&src, &[]).unwrap();
    let known = |c: &str| (c == "Counter").then(|| ClassSpec::new("1/1", "a"));
    let e = check_graph(&g, &known, &["Counter"]).unwrap_err();
    assert_eq!(e.len(), n);
    let mut set = SourceSet::new();
    set.add(src);
    let out = render(&e, &set);
    assert!(
        out.ends_with(&format!(
        "u.click:{n}:1: undeclared element 'Counter{}'\n{n} | Counter{};\n       | ^^^^^^^^^^^^\n",
        n - 1,
        n - 1
    )),
        "{}",
        &out[out.len() - 300..]
    );
    // suggestions for the first hundred names only
    let said = |i: usize| {
        e[i].notes
            .iter()
            .any(|(_, m)| m == "did you mean 'Counter'?")
    };
    assert!(said(0) && said(99));
    assert!(!said(100) && !said(n - 1));
}

#[test]
fn no_suggestion_is_computed_for_a_huge_class_name() {
    let long = "Counte".repeat(20_000);
    assert_eq!(paraclick_lang::check::suggest(&long, &["Counter"]), None);
    assert_eq!(
        paraclick_lang::check::suggest("Countr", &["Counter"]),
        Some("Counter")
    );
}
