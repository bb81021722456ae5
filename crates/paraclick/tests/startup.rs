//! Start-up: the process registers for the notifiers' heavy fence
//! (`membarrier(2)`, private expedited) before it starts its first
//! thread. With one thread the kernel only marks the process; with
//! several it waits for an RCU grace period (12 ms on the machine this
//! was written on, most of a short run's wall time; Click's
//! userlevel/timewarp-01, which times whole runs from outside, missed its
//! window by it). strace is installed by `scripts/bootstrap.sh --tests`;
//! without it the test fails, saying so.

mod common;

use std::process::Command;

/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`, as strace names it (or
/// its value, for a strace that does not know the name).
fn is_register(line: &str) -> bool {
    line.contains("membarrier(")
        && (line.contains("REGISTER_PRIVATE_EXPEDITED") || line.contains("membarrier(0x10"))
}

fn is_thread_start(line: &str) -> bool {
    line.contains("clone3(") || line.contains("clone(")
}

#[test]
fn the_fence_is_registered_before_the_first_thread_starts() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log = dir.path().join("strace.log");
    let status = Command::new("strace")
        .args(["-f", "-e", "trace=membarrier,clone,clone3", "-o"])
        .arg(&log)
        .arg(common::bin())
        .args([
            "-e",
            "InfiniteSource(LIMIT 10, STOP true) -> c :: Counter -> Discard",
        ])
        .args(["-h", "c.count"])
        .output()
        .unwrap_or_else(|e| {
            panic!("strace could not be run ({e}): scripts/bootstrap.sh --tests installs it")
        });
    assert!(status.status.success(), "{status:?}");
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(out.lines().any(|l| l.trim() == "10"), "{out}");
    let trace = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let register = lines.iter().position(|l| is_register(l));
    let first_thread = lines.iter().position(|l| is_thread_start(l));
    let register = register.unwrap_or_else(|| panic!("no registration in:\n{trace}"));
    let first_thread = first_thread.unwrap_or_else(|| panic!("no thread started in:\n{trace}"));
    assert!(
        register < first_thread,
        "the registration came after a thread started:\n{trace}"
    );
}
