//! `paraclick undead`, `combine` and `uncombine` from the command line,
//! with Click's options, as Click's tools/undead-01 and combine-01 run
//! click-undead, click-combine and click-uncombine.

mod common;
use common::paraclick;

fn out(args: &[&str]) -> String {
    let o = paraclick(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn undead_reads_a_file_or_expression_and_writes_output() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.click");
    std::fs::write(
        &conf,
        "fa::FromDevice(a) -> arpq::ARPQuerier(1.0.0.1, 0:1:2:3:4:5) -> td::ToDump(x);
         fb::FromDevice(b) -> [1]arpq; Idle -> Counter -> td2 :: ToDump(y);",
    )
    .unwrap();
    let o = dir.path().join("o.click");
    let conf = conf.display().to_string();
    assert_eq!(out(&["undead", &conf, "-o", &o.display().to_string()]), "");
    let text = std::fs::read_to_string(&o).unwrap();
    assert!(
        text.ends_with("fa -> arpq\n    -> td;\nfb -> [1] arpq;\n"),
        "{text}"
    );
    assert!(!text.contains("Counter"), "{text}");
    assert_eq!(
        out(&["undead", "-e", "InfiniteSource -> Null -> d :: ToDump(x)"]),
        "InfiniteSource@1 :: InfiniteSource;\nd :: ToDump(x);\n\nInfiniteSource@1 -> d;\n"
    );
}

#[test]
fn combine_then_uncombine_gives_the_routers_back() {
    // Click's tools/combine-01.
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    std::fs::write(p("AI"), "x::ThisIsA -> y::ToDevice(eth1)").unwrap();
    std::fs::write(p("BI"), "x::FromDevice(eth0) -> y::ThisIsB").unwrap();
    let (ai, bi, c) = (p("AI"), p("BI"), p("C"));
    let args = ["combine", "-n", "A", "-f", &ai, "-n", "B", "-f", &bi];
    let o = out(&[&args[..], &["A.eth1=B.eth0", "-o", &c]].concat());
    assert_eq!(o, "");
    let a = out(&["uncombine", &c, "A"]);
    assert_eq!(a, "x :: ThisIsA;\ny :: ToDevice(eth1);\n\nx -> y;\n");
    let b = out(&["uncombine", "-f", &c, "-n", "B"]);
    assert_eq!(b, "y :: ThisIsB;\nx :: FromDevice(eth0);\n\nx -> y;\n");
    assert_eq!(out(&["flatten", "--config", "-e", &b]), b);
    // NAME=FILE and -l give the same combination.
    let same = out(&[
        "combine",
        &format!("A={ai}"),
        &format!("B={bi}"),
        "-l",
        "A.eth1=B.eth0",
    ]);
    assert_eq!(same, std::fs::read_to_string(&c).unwrap());
    // A component that is not there, a link to nowhere: errors.
    assert!(!paraclick(&["uncombine", &c, "Z"]).status.success());
    let bad = paraclick(&["combine", &format!("A={ai}"), "A.eth7=A.eth0"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("eth7"));
}
