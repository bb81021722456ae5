//! Graphviz view of a configuration.

use crate::check::{CheckedGraph, PortKind};
use crate::FlatGraph;

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Renders the graph as Graphviz DOT: one box per element labelled
/// `name :: Class`, one edge per connection labelled with its ports
/// (`[0] -> [1]`). With `checked`, edges from pull outputs are dashed.
pub fn to_dot(g: &FlatGraph, checked: Option<&CheckedGraph>) -> String {
    let mut out = String::from(
        "digraph paraclick {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n",
    );
    for (i, e) in g.elements.iter().enumerate() {
        out.push_str(&format!(
            "  n{i} [label=\"{} :: {}\"];\n",
            escape(&e.name),
            escape(&e.class)
        ));
    }
    for c in &g.connections {
        let pull = checked
            .and_then(|k| k.outputs.get(c.from))
            .and_then(|ports| ports.get(c.from_port))
            == Some(&PortKind::Pull);
        out.push_str(&format!(
            "  n{} -> n{} [label=\"[{}] -> [{}]\"{}];\n",
            c.from,
            c.to,
            c.from_port,
            c.to_port,
            if pull { ", style=dashed" } else { "" }
        ));
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Source;

    #[test]
    fn dot_output() {
        let src = Source::new("t", "s :: Src(\"a\") -> q :: Queue -> [1] d :: Dst;");
        let g = crate::parse_config(&src, &[]).unwrap();
        let plain = to_dot(&g, None);
        assert!(plain.contains("n0 [label=\"s :: Src\"];"), "{plain}");
        assert!(
            plain.contains("n1 -> n2 [label=\"[0] -> [1]\"];"),
            "{plain}"
        );
        assert!(plain.starts_with("digraph paraclick {"));
        assert!(plain.ends_with("}\n"));
        let checked = CheckedGraph {
            inputs: vec![
                vec![],
                vec![PortKind::Push],
                vec![PortKind::Pull, PortKind::Pull],
            ],
            outputs: vec![vec![PortKind::Push], vec![PortKind::Pull], vec![]],
        };
        let d = to_dot(&g, Some(&checked));
        assert!(d.contains("n0 -> n1 [label=\"[0] -> [0]\"];"), "{d}");
        assert!(
            d.contains("n1 -> n2 [label=\"[0] -> [1]\", style=dashed];"),
            "{d}"
        );
        assert_eq!(escape("a\"b\\c"), "a\\\"b\\\\c");
    }
}
