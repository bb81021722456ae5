//! Prints a [`FlatGraph`] back as Click text.
//!
//! Every element is declared by name (`name :: Class(config);`, anonymous
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
}
