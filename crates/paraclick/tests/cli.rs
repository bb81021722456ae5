//! The command line as a newcomer meets it: help, suggestions, reports
//! and warnings.

mod common;

use common::paraclick;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn every_subcommand_answers_help() {
    for sub in [
        "check",
        "graph",
        "bench",
        "make-ip-conf",
        "model",
        "parallelize",
        "ctl",
        "doc",
    ] {
        // None of these has a -h of its own (the top-level run's -h reads
        // handlers, as Click's does).
        for flag in ["--help", "-h"] {
            let out = paraclick(&[sub, flag]);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "paraclick {sub} {flag}: {:?}\n{}",
                out.status,
                text(&out.stderr)
            );
            assert!(
                stdout.contains(&format!("Usage: paraclick {sub}")),
                "paraclick {sub} {flag} printed no usage:\n{stdout}"
            );
        }
    }
}

#[test]
fn top_level_keeps_h_for_handlers_and_answers_help() {
    let out = paraclick(&["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("Usage: paraclick"));
    let out = paraclick(&[
        "-q",
        "-e",
        "Idle -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "c.count:\n0\n");
}

#[test]
fn doc_suggests_the_class_meant() {
    // Class names are case-sensitive: a case-insensitive match comes first,
    // then the nearest by edit distance.
    for (asked, meant) in [("queue", "Queue"), ("Cuonter", "Counter")] {
        let out = paraclick(&["doc", asked]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("unknown element class '{asked}'"))
                && err.contains(&format!("did you mean '{meant}'?")),
            "paraclick doc {asked}: {err}"
        );
    }
    // Nothing close: no suggestion.
    let out = paraclick(&["doc", "Zzzzzzzzzzzzzzzz"]);
    assert!(!out.status.success());
    assert!(!text(&out.stderr).contains("did you mean"));
}
