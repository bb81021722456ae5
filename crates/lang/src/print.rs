//! Prints a [`FlatGraph`] back as Click text, in two forms.
//!
//! [`print_click`] is Click's own flattened form (what `click -o`,
//! `click-flatten` and the `flatconfig` handler print): declarations, then
//! the connections in chains. [`print_flat`] is the plain one: every element is declared by name (`name :: Class(config);`, anonymous
//! ones under their `Class@N` names) and every connection is written on its
//! own (`a [p] -> [q] b;`), so parsing the text again gives the same
//! elements, in the same order, with the same classes, configurations and
//! connections. Requirements are printed as `require(...)`.

use crate::params::scan_vars;
use crate::FlatGraph;
use std::fmt::Write;

/// `config` as it must be written so that parsing gives `config` back
/// (also for text written into a user's file): a
/// `$name` reference left in it (substitution is a single pass, so a
/// parameter's value can hold one) would be substituted or rejected when
/// parsed again; `${name-REF}` gives back REF itself.
pub fn protect_vars(config: &str) -> String {
    let vars = scan_vars(config);
    if vars.is_empty() {
        return config.to_string();
    }
    let mut out = String::with_capacity(config.len() + 8 * vars.len());
    let mut last = 0;
    for v in vars {
        out.push_str(&config[last..v.start]);
        let _ = write!(out, "${{{}-{}}}", v.name, &config[v.start..v.end]);
        last = v.end;
    }
    out.push_str(&config[last..]);
    out
}

/// The Click text of `g`.
pub fn print_flat(g: &FlatGraph) -> String {
    let mut out = String::new();
    for r in &g.requirements {
        // Words are stored unquoted: quote each again, or a word with a
        // space, quote, parenthesis or control character would print as
        // something else (the config fuzzer found a NUL-bearing one).
        let words: Vec<String> = r.words.iter().map(|w| crate::args::quote(w)).collect();
        let _ = writeln!(out, "require({});", words.join(" "));
    }
    for e in &g.elements {
        if e.config.is_empty() {
            let _ = writeln!(out, "{} :: {};", e.name, e.class);
        } else {
            let config = protect_vars(&e.config);
            let _ = writeln!(out, "{} :: {}({config});", e.name, e.class);
        }
    }
    for c in &g.connections {
        let _ = writeln!(
            out,
            "{} [{}] -> [{}] {};",
            g.elements[c.from].name, c.from_port, c.to_port, g.elements[c.to].name
        );
    }
    out
}

/// Click's flattened configuration, as Click prints it (parsing it gives
/// the same graph, as for [`print_flat`]): the requirements (`require(...);`, then a blank line), every declaration
/// (elements outside compounds first, then each compound level's in
/// turn, as Click's flattening lists them), a blank line, then the
/// connections in chains (see `connection_chains`).
pub fn print_click(g: &FlatGraph) -> String {
    let depth = |i: usize| g.elements[i].name.matches('/').count();
    let mut order: Vec<usize> = (0..g.elements.len()).collect();
    order.sort_by_key(|&i| depth(i));
    print_click_in(g, &order, true)
}

/// [`print_click`] with the declarations in the order of `g.elements`,
/// whatever their compound level, and the connections taken in the order
/// of `g.connections` rather than sorted: for graphs a tool rewrote,
/// whose order is the tool's (`paraclick xform`).
pub fn print_click_listed(g: &FlatGraph) -> String {
    let order: Vec<usize> = (0..g.elements.len()).collect();
    print_click_in(g, &order, false)
}

fn print_click_in(g: &FlatGraph, order: &[usize], sort: bool) -> String {
    let mut s = String::new();
    for r in &g.requirements {
        let words: Vec<String> = r.words.iter().map(|w| crate::args::quote(w)).collect();
        let _ = writeln!(s, "require({});", words.join(" "));
    }
    if !g.requirements.is_empty() {
        s.push('\n');
    }
    for &i in order {
        let e = &g.elements[i];
        if e.config.is_empty() {
            let _ = writeln!(s, "{} :: {};", e.name, e.class);
        } else {
            let config = protect_vars(&e.config);
            let _ = writeln!(s, "{} :: {}({config});", e.name, e.class);
        }
    }
    if !g.connections.is_empty() {
        s.push('\n');
    }
    // Connections sort by element in the order listed above.
    let mut rank = vec![0; g.elements.len()];
    for (k, &i) in order.iter().enumerate() {
        rank[i] = k;
    }
    s.push_str(&connection_chains(g, &rank, sort));
    s
}

/// The connections as chains: `a -> b\n    -> [1] c;` for `a -> b`,
/// `b -> [1] c`, as Click prints them.
///
/// Connections sort by (destination, input port, source, output port),
/// elements by `rank` (with `sort` false they stay in the graph's order,
/// duplicates dropped, and "first sorted" below means first listed). Each connection into input 0 of an element makes
/// one connection from that element's output 0 a *continuation*: the
/// first sorted of those into an input 0, else the first sorted, itself
/// left out (a connection from an element to its own input 0 continues
/// into the element's next one). Every other
/// connection starts a chain. The starts are printed in order, each chain
/// going on while it ends at input 0 of an element with a continuation
/// not yet printed (the first sorted); then whatever is left (cycles of
/// continuations), likewise, from its first connection sorted.
fn connection_chains(g: &FlatGraph, rank: &[usize], sort: bool) -> String {
    let mut conns: Vec<&crate::FlatConnection> = g.connections.iter().collect();
    if sort {
        conns.sort_by_key(|c| (rank[c.to], c.to_port, rank[c.from], c.from_port));
        conns.dedup_by_key(|c| (c.from, c.from_port, c.to, c.to_port));
    } else {
        let mut seen = std::collections::HashSet::new();
        conns.retain(|c| seen.insert((c.from, c.from_port, c.to, c.to_port)));
    }
    // outs[e]: the connections from output 0 of element e, sorted, those
    // into an input 0 (which can go on) first.
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); g.elements.len()];
    for (k, c) in conns.iter().enumerate() {
        if c.from_port == 0 {
            outs[c.from].push(k);
        }
    }
    for o in &mut outs {
        o.sort_by_key(|&k| conns[k].to_port != 0);
    }
    let mut continues = vec![false; conns.len()];
    for (k, c) in conns.iter().enumerate() {
        if c.to_port == 0 {
            if let Some(&m) = outs[c.to].iter().find(|&&m| m != k) {
                continues[m] = true;
            }
        }
    }
    let mut done = vec![false; conns.len()];
    let name = |i: usize| g.elements[i].name.as_str();
    let mut s = String::new();
    let starts = (0..conns.len()).filter(|&k| !continues[k]);
    let rest = (0..conns.len()).filter(|&k| continues[k]);
    for start in starts.chain(rest) {
        if done[start] {
            continue;
        }
        let first = conns[start];
        s.push_str(name(first.from));
        if first.from_port != 0 {
            let _ = write!(s, " [{}]", first.from_port);
        }
        let mut k = start;
        let mut head = true;
        loop {
            done[k] = true;
            let c = conns[k];
            s.push_str(if head { " -> " } else { "\n    -> " });
            head = false;
            if c.to_port != 0 {
                let _ = write!(s, "[{}] ", c.to_port);
            }
            s.push_str(name(c.to));
            if c.to_port != 0 {
                break;
            }
            match outs[c.to].iter().find(|&&m| continues[m] && !done[m]) {
                Some(&m) => k = m,
                None => break,
            }
        }
        s.push_str(";\n");
    }
    s
}

/// Whether two graphs have the same elements (names, classes,
/// configurations, in order) and the same connections, ignoring spans and
/// which names were generated.
pub fn same_graph(a: &FlatGraph, b: &FlatGraph) -> bool {
    a.elements.len() == b.elements.len()
        && a.connections.len() == b.connections.len()
        && a.elements
            .iter()
            .zip(&b.elements)
            .all(|(x, y)| x.name == y.name && x.class == y.class && x.config == y.config)
        && a.connections.iter().zip(&b.connections).all(|(x, y)| {
            (x.from, x.from_port, x.to, x.to_port) == (y.from, y.from_port, y.to, y.to_port)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_config, Source};

    fn round_trip(text: &str) -> (FlatGraph, FlatGraph, String) {
        let a = parse_config(&Source::new("a", text), &[]).expect("parses");
        let printed = print_flat(&a);
        let b = parse_config(&Source::new("b", &printed), &[])
            .unwrap_or_else(|e| panic!("printed text does not parse: {e:?}\n{printed}"));
        (a, b, printed)
    }

    #[test]
    fn compounds_anonymous_elements_and_ports_survive_printing() {
        let (a, b, printed) = round_trip(
            "define($n 3);\n\
             elementclass Two { $x | input -> Paint($x) -> [1]output; input[1] -> [0]output }\n\
             src :: InfiniteSource(LIMIT $n) -> t :: Two(7);\n\
             t[0] -> Counter -> Discard; t[1] -> Discard;\n\
             src2 :: InfiniteSource -> [1]t;",
        );
        assert!(same_graph(&a, &b), "{printed}");
        assert!(printed.contains("t/Paint@1 :: Paint(7);"), "{printed}");
        assert!(
            printed.contains("src :: InfiniteSource(LIMIT 3);"),
            "{printed}"
        );
    }

    #[test]
    fn references_left_in_a_configuration_are_kept() {
        // A parameter's value holding a reference: substituted once, the
        // reference stays as text (found by fuzzing: printed as is, it
        // was rejected as an unknown parameter).
        let (a, b, printed) =
            round_trip("e :: Null(${z-1}); f :: Null(${q-$q}); g :: Null(${r-a${r}b})");
        assert!(same_graph(&a, &b), "{printed}");
        assert_eq!(a.elements[1].config, "$q");
        assert_eq!(a.elements[2].config, "a${r}b");
        assert_eq!(a.elements[2].config, "a${r}b");
    }

    #[test]
    fn different_graphs_differ() {
        let a = parse_config(&Source::new("a", "a :: Null -> b :: Null"), &[]).unwrap();
        let b = parse_config(&Source::new("b", "a :: Null -> [0]b :: Null(x)"), &[]).unwrap();
        assert!(!same_graph(&a, &b));
        let c = parse_config(&Source::new("c", "a :: Null; b :: Null"), &[]).unwrap();
        assert!(!same_graph(&a, &c));
    }

    #[test]
    fn flatconfig_lists_declarations_then_connections() {
        let src = crate::Source {
            name: "t".into(),
            text: "a :: X(1) -> b :: Y; a [1] -> [2] b;".into(),
        };
        let g = crate::parse_config(&src, &[]).unwrap();
        assert_eq!(
            print_click(&g),
            "a :: X(1);\nb :: Y;\n\na -> b;\na [1] -> [2] b;\n"
        );
    }

    #[test]
    fn in_order_printing_keeps_the_listed_order() {
        let src = crate::Source::new("t", "x :: S; a :: T; y :: D; w :: S; x -> a -> y; w -> a;");
        let mut g = crate::parse_config(&src, &[]).unwrap();
        // Sorted, w -> a (into a) comes before a -> y; listed, a -> y
        // moved last still continues x's chain, and w -> a stays last.
        let ay = g.connections.remove(1);
        g.connections.push(ay);
        assert_eq!(
            print_click_listed(&g),
            "x :: S;\na :: T;\ny :: D;\nw :: S;\n\nx -> a\n    -> y;\nw -> a;\n"
        );
        let w_first: Vec<_> = g.connections.iter().rev().cloned().collect();
        g.connections = w_first;
        assert_eq!(
            print_click_listed(&g),
            "x :: S;\na :: T;\ny :: D;\nw :: S;\n\nw -> a\n    -> y;\nx -> a;\n"
        );
        assert_eq!(print_click(&g).lines().last(), Some("w -> a;"));
    }

    fn click_of(text: &str) -> String {
        let src = crate::Source {
            name: "t".into(),
            text: text.into(),
        };
        print_click(&crate::parse_config(&src, &[]).unwrap())
    }

    #[test]
    fn flatconfig_prints_connections_in_chains() {
        // A chain goes on from input 0 through output 0; other ports start
        // chains of their own, in the order of their destinations.
        assert_eq!(
            click_of("a :: S; t :: T; d :: D; e :: D; a -> t; t [1] -> e; t -> d; t [2] -> [1] d;"),
            "a :: S;\nt :: T;\nd :: D;\ne :: D;\n\n\
             a -> t\n    -> d;\nt [2] -> [1] d;\nt [1] -> e;\n"
        );
        // A chain grows backwards from its first connection: the first
        // connection sorted is the one into `a`'s input 0 (c2 -> a).
        assert_eq!(
            click_of("a :: S; c :: C; c2 :: C; a -> c -> [1] a; a [1] -> c2 -> a;"),
            "a :: S;\nc :: C;\nc2 :: C;\n\n\
             a [1] -> c2\n    -> a\n    -> c\n    -> [1] a;\n"
        );
        // Arriving at an input other than 0 ends a chain.
        assert_eq!(
            click_of("x :: S; s :: T; e :: T; f :: D; x -> s -> [1] e -> f; s [1] -> e;"),
            "x :: S;\ns :: T;\ne :: T;\nf :: D;\n\n\
             x -> s\n    -> [1] e;\ns [1] -> e\n    -> f;\n"
        );
    }

    #[test]
    fn flatconfig_lists_compound_elements_after_the_top_level() {
        assert_eq!(
            click_of(
                "require(compact_config); elementclass A { input -> N :: Null -> output } \
                 Idle -> A -> x :: Null -> Discard;"
            ),
            "require(compact_config);\n\nIdle@1 :: Idle;\nx :: Null;\nDiscard@4 :: Discard;\n\
             A@2/N :: Null;\n\nIdle@1 -> A@2/N\n    -> x\n    -> Discard@4;\n"
        );
    }

    /// The connections part of [`print_click`]'s text.
    fn chains_of(text: &str) -> String {
        let s = click_of(text);
        s.split_once("\n\n")
            .map_or(s.clone(), |(_, c)| c.to_string())
    }

    // Every expected text here is what real Click's `click -qo-` prints.
    #[test]
    fn an_element_continues_one_chain_only() {
        // Click's tools/lexer-04: `b` is fed by
        // a[0] and a[1]; only its first connection out (to p) continues a
        // chain, from the first one in (a -> b). b -> q starts a chain.
        assert_eq!(
            chains_of(
                "a, b, c :: Idle; p, q :: PullNull; a, a[1] -> b -> p, q; \
                 p -> [0]c, [1]c; q -> [2]c;"
            ),
            "a -> b\n    -> p\n    -> c;\na [1] -> b;\np -> [1] c;\nb -> q\n    -> [2] c;\n"
        );
        // A cycle entered from outside is printed from its entry.
        assert_eq!(
            chains_of("a, b, c, d :: Idle; a -> b; c -> b; b -> d; d -> a;"),
            "c -> b\n    -> d\n    -> a\n    -> b;\n"
        );
        // A connection into its own element's input 0 goes on to that
        // element's next connection out.
        assert_eq!(
            chains_of("y :: Idle; p :: PullNull; z :: Idle; y -> y; y -> p; p -> z;"),
            "y -> y\n    -> p\n    -> z;\n"
        );
        // A chain goes on into an input 0 rather than another input
        // (e1 -> [1] e0 sorts first, e1 -> e2 continues).
        assert_eq!(
            chains_of(
                "e1, e0, e3 :: Idle; e2 :: PullNull; \
                 e1 [1] -> e1; e1 -> [1] e0; e2 -> e0; e1 -> e2;"
            ),
            "e1 [1] -> e1\n    -> e2\n    -> e0;\ne1 -> [1] e0;\n"
        );
        // Cycles with no way in come after every other chain.
        assert_eq!(
            chains_of("a, b, z, y :: Idle; a -> b -> a; y -> z;"),
            "y -> z;\nb -> a\n    -> b;\n"
        );
    }
}
