//! The configuration language end to end.

use paraclick_lang::{parse_config_with, print_flat, same_graph, Source};
use paraclick_runtime::{BuildOptions, Router};

/// Configuration text as bytes (invalid UTF-8 replaced).
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check_text(&text);
}

/// Checks one configuration text:
///
/// - if it parses, printing the flat graph and parsing that gives the same
///   graph (names, classes, configurations, connections);
/// - `Router::check` and a check-only `Router::build` over the full
///   registry never panic, and a graph that `check` rejects does not build.
pub(crate) fn check_text(text: &str) {
    let src = Source::new("<fuzz>", text);
    let Ok(graph) = parse_config_with(&src, &[], &crate::parse_options()) else {
        // Errors only; the check-only build must say the same.
        assert!(build(&src).is_err(), "does not parse, but builds:\n{text}");
        return;
    };
    let printed = print_flat(&graph);
    let again = parse_config_with(
        &Source::new("<printed>", printed.as_str()),
        &[],
        &crate::parse_options(),
    )
    .unwrap_or_else(|e| {
        panic!("printed graph does not parse: {e:?}\n--- input\n{text}\n--- printed\n{printed}")
    });
    assert!(
        same_graph(&graph, &again),
        "printed graph parses differently\n--- input\n{text}\n--- printed\n{printed}\n--- first\n{graph:#?}\n--- second\n{again:#?}"
    );
    let checked = Router::check(&graph, crate::registry()).is_ok();
    let built = build(&src).is_ok();
    assert!(
        checked || !built,
        "Router::check rejects a configuration that builds:\n{text}"
    );
}

fn build(src: &Source) -> Result<Router, Vec<paraclick_lang::Diagnostic>> {
    let opts = BuildOptions {
        pin: false,
        check_only: true,
        max_elements: crate::MAX_ELEMENTS,
        ..BuildOptions::default()
    };
    Router::build(src, crate::registry(), &opts)
}
