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

/// A configuration whose task runs, queue pushes and pulls a built
/// program compiles: sources at BURST 1 (compiled) and BURST 4 (the
/// ordinary run), a Tee pushing twice a run into a queue that overflows,
/// pull chains through actions (one dropping every packet) into pull
/// Discards, one of BURST 2.
const TASKS_CONF: &str = "\
s0 :: InfiniteSource(LENGTH 60, LIMIT 3000, STOP true) -> c0 :: Counter -> t :: Tee(2);
t[0] -> q0 :: Queue(8);
t[1] -> q0;
q0 -> k0 :: Counter -> d0 :: Discard;
s1 :: InfiniteSource(LIMIT 2000, BURST 4) -> q1 :: Queue(50)
    -> Strip(14) -> CheckIPHeader -> k1 :: Counter -> d1 :: Discard(BURST 2);
s2 :: InfiniteSource(LIMIT 500) -> q2 :: Queue -> d2 :: Discard;
";

const TASKS_HANDLERS: &[&str] = &[
    "c0.count", "k0.count", "k1.count", "q0.drops", "q1.drops", "d0.count", "d1.count", "d2.count",
    "s1.count",
];

#[test]
fn built_task_runs_pushes_and_pulls_count_as_the_dynamic_router() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("tasks.click");
    std::fs::write(&conf, TASKS_CONF).unwrap();
    let program = dir.path().join("tasks");
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(&conf)
        .arg("-o")
        .arg(&program)
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run paraclick build");
    let said = text(&o.stderr);
    assert!(o.status.success(), "{said}");
    // What the program compiled: the six tasks, the pushes into the Tee
    // and the queues, the pulls from the queues and the actions after.
    assert!(
        said.contains("3 pushed into directly, 6 task runs and 7 pulls compiled"),
        "{said}"
    );
    let mut args: Vec<&str> = Vec::new();
    for h in TASKS_HANDLERS {
        args.extend(["-h", h]);
    }
    args.extend(["--report", "drops"]);
    let mut dynamic_args = vec![conf.to_str().expect("utf-8 path")];
    dynamic_args.extend(&args);
    let dynamic = run(&bin(), &dynamic_args);
    let compiled = run(&program, &args);
    assert!(
        !text(&compiled.stderr).contains("warning"),
        "the built program fell back to the dynamic router:\n{}",
        text(&compiled.stderr)
    );
    // The queue overflowed and CheckIPHeader dropped every packet of s1
    // (its default data is no IP packet).
    let counts = text(&dynamic.stdout);
    assert!(counts.contains("k1.count:\n0\n"), "{counts}");
    assert!(counts.contains("s1.count:\n2000\n"), "{counts}");
    assert!(!counts.contains("q0.drops:\n0\n"), "{counts}");
    assert_eq!(
        counts,
        text(&compiled.stdout),
        "the built program counts differently"
    );
    assert_eq!(
        text(&dynamic.stderr),
        text(&compiled.stderr),
        "the built program reports other drops"
    );
    // The dynamic router in the same program (PARACLICK_COMPILED=0).
    let o = Command::new(&program)
        .args(&args)
        .env("PARACLICK_COMPILED", "0")
        .output()
        .expect("run the router");
    assert_eq!(counts, text(&o.stdout));
}
