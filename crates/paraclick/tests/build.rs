//! `paraclick build`: the program it writes counts what the dynamic
//! router counts, element by element.
//!
//! The program is compiled against the libraries this test run's
//! `paraclick` was linked from (the same target directory and profile).

mod common;

use common::{bin, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The target directory and cargo profile `paraclick` was built in
/// (`TARGET/PROFILE_DIR/paraclick`).
fn target_and_profile() -> (PathBuf, String) {
    let b = bin();
    let dir = b.parent().expect("paraclick's directory");
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(p) => p.to_string(),
        None => panic!("no profile directory in {}", b.display()),
    };
    (dir.parent().expect("target dir").to_path_buf(), profile)
}

/// `paraclick build CONF -o OUT DEFINES...`, which must succeed.
fn build(conf: &Path, out: &Path, defines: &[&str]) {
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(conf)
        .arg("-o")
        .arg(out)
        .args(["--profile", &profile])
        .args(defines)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run paraclick build");
    assert!(
        o.status.success(),
        "paraclick build {}: {:?}\n{}",
        conf.display(),
        o.status,
        text(&o.stderr)
    );
}

fn run(program: &Path, args: &[&str]) -> Output {
    let o = Command::new(program)
        .args(args)
        .output()
        .expect("run the router");
    assert!(
        o.status.success(),
        "{} {args:?}: {:?}\n{}",
        program.display(),
        o.status,
        text(&o.stderr)
    );
    o
}

/// The counts of a run: the handlers' values and the drops report.
fn counts(o: &Output) -> String {
    text(&o.stdout)
}

const FIR_HANDLERS: &[&str] = &[
    "src0.count",
    "src1.count",
    "out0.count",
    "out1.count",
    "tohost.count",
    "other.count",
    "arp_replies.count",
    "q0.drops",
    "q1.drops",
];

/// Runs `conf` in the dynamic router with `dyn_defines`, and the
/// program built for it with `built_defines`: the counts must be equal.
fn compare(
    conf: &Path,
    built: &Path,
    dyn_defines: &[&str],
    built_defines: &[&str],
    handlers: &[&str],
) {
    let mut args: Vec<&str> = Vec::new();
    for h in handlers {
        args.push("-h");
        args.push(h);
    }
    args.extend(["--report", "drops"]);
    let mut dynamic_args = vec![conf.to_str().expect("utf-8 path")];
    dynamic_args.extend(&args);
    dynamic_args.extend(dyn_defines);
    let dynamic = counts(&run(&bin(), &dynamic_args));
    args.extend(built_defines);
    let compiled_run = run(built, &args);
    assert!(
        !text(&compiled_run.stderr).contains("warning"),
        "the built program fell back to the dynamic router:\n{}",
        text(&compiled_run.stderr)
    );
    let compiled = counts(&compiled_run);
    assert!(
        dynamic.contains("out0.count"),
        "no counts printed:\n{dynamic}"
    );
    assert_eq!(
        dynamic,
        compiled,
        "{}: the built program counts differently",
        conf.display()
    );
}

#[test]
fn built_programs_count_as_the_dynamic_router() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // conf/fake-iprouter.click: the main path, at BURST 1.
    let fir = root().join("conf/fake-iprouter.click");
    let fir_bin = dir.path().join("fir");
    build(&fir, &fir_bin, &["N=20000"]);
    // The program's defines are the build's, overridable.
    compare(&fir, &fir_bin, &["N=20000"], &[], FIR_HANDLERS);
    compare(&fir, &fir_bin, &["N=3000"], &["N=3000"], FIR_HANDLERS);

    // Every branch off the main path: ICMP errors back into the routing
    // table, drops with reasons, ARP, PaintTee's copies.
    let branches = root().join("crates/paraclick/tests/build/branches.click");
    let br_bin = dir.path().join("branches");
    build(&branches, &br_bin, &[]);
    let mut handlers = FIR_HANDLERS.to_vec();
    handlers.extend(["src2.count", "src3.count", "src4.count", "src5.count"]);
    compare(&branches, &br_bin, &[], &[], &handlers);
}

#[test]
fn a_built_program_runs_only_its_configuration() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("small.click");
    std::fs::write(
        &conf,
        "InfiniteSource(LIMIT 5, STOP true) -> Strip(14) -> c :: Counter -> Discard;\n",
    )
    .unwrap();
    let program = dir.path().join("small");
    build(&conf, &program, &[]);
    // Its own file, or none, runs.
    let o = run(&program, &["-h", "c.count"]);
    assert_eq!(text(&o.stdout).trim(), "5");
    let o = run(&program, &[conf.to_str().unwrap(), "-h", "c.count"]);
    assert_eq!(text(&o.stdout).trim(), "5");
    // Another configuration is refused, clearly.
    let other = dir.path().join("other.click");
    std::fs::write(&other, "InfiniteSource(LIMIT 5, STOP true) -> Discard;\n").unwrap();
    let o = Command::new(&program).arg(&other).output().unwrap();
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("not the configuration this program was built from"),
        "{err}"
    );
    // A configuration error is reported as paraclick reports it.
    let bad = dir.path().join("bad.click");
    std::fs::write(&bad, "InfiniteSource -> NoSuchElement;\n").unwrap();
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(&bad)
        .args(["-o", dir.path().join("bad").to_str().unwrap()])
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("NoSuchElement"),
        "{}",
        text(&o.stderr)
    );
}
