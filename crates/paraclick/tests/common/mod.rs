//! Shared helpers for end-to-end tests.
#![allow(dead_code)]

pub mod ctl;
pub mod pcap;
pub mod proc;

use paraclick_runtime::Router;
use std::path::PathBuf;
use std::process::Command;

pub fn registry() -> paraclick_runtime::Registry {
    paraclick_io::full_registry()
}

/// Builds a router from `text` on `threads` threads, or panics with the
/// rendered errors.
pub fn router(text: &str, threads: usize) -> Router {
    match Router::from_str(text, &registry(), threads) {
        Ok(r) => r,
        Err(d) => panic!(
            "configuration failed:\n{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

pub fn read_u64(r: &Router, h: &str) -> u64 {
    let v = r
        .read_handler(h)
        .unwrap_or_else(|e| panic!("reading {h}: {e}"));
    v.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{h} is not a number: {v:?}"))
}

/// The repository's root (this crate lives in `crates/paraclick`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One heavy or timing-sensitive router at a time in this test binary
/// (each keeps a core busy, or bounds a rate, a time or a count of task
/// runs that a second router on the same cores would disturb); a test that
/// panicked holding it does not poison it.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The paraclick binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_paraclick"))
}

pub fn paraclick(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
        .output()
        .expect("run paraclick")
}

/// Runs paraclick with `input` on standard input.
pub fn with_stdin(args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run paraclick");
    child
        .stdin
        .take()
        .expect("a pipe to its standard input")
        .write_all(input.as_bytes())
        .expect("write its standard input");
    child.wait_with_output().expect("its output")
}

/// Runs the router with a watchdog: panics if it does not stop by itself
/// within `secs` seconds (so a hang fails the test instead of blocking
/// the suite).
pub fn run_with_timeout(r: &Router, secs: u64) {
    paraclick_runtime::testing::run_within(r, std::time::Duration::from_secs(secs));
}
