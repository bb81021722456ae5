//! README.md as a newcomer reads it: every `paraclick` command in its sh
//! blocks names files that exist, and each that neither opens a socket
//! nor runs long is run as written and succeeds; every configuration in
//! conf/ is in its table.

mod common;

use common::root as repo;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// The commands of README's ```sh blocks that start with `paraclick`,
/// continuation lines joined.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let line = match pending.take() {
            Some(p) => p + " " + line.trim(),
            None if line.starts_with("paraclick ") => line.to_string(),
            None => continue,
        };
        match line.strip_suffix('\\') {
            Some(head) => pending = Some(head.trim_end().to_string()),
            None => out.push(line),
        }
    }
    out
}

/// Why a command is not run here, if it is not.
fn skip_reason(cmd: &str) -> Option<&'static str> {
    let words: Vec<&str> = cmd
        .split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let has = |w: &str| words.contains(&w);
    if words.get(1) == Some(&"ctl") {
        return Some("talks to a running router's control socket");
    }
    if has("-p") || has("-u") || has("--web") || has("--metrics") || has("--socket") {
        return Some("opens a socket and runs until stopped");
    }
    match words.get(1) {
        Some(&"bench") => Some("measures for tens of seconds"),
        Some(&"build") => Some("compiles a program (tests/build.rs builds and runs some)"),
        Some(&"parallelize") => Some("profiles the configuration and runs its plan"),
        Some(&"model") if !has("--system") => Some("calibrates and profiles for seconds"),
        _ if has("--auto") => Some("profiles the configuration before running it"),
        _ => None,
    }
}

/// Runs `cmd` with sh in `dir` (where conf/ and models/ are the
/// project's), the paraclick under test first on the PATH; its status.
fn run(cmd: &str, dir: &Path) -> (std::process::ExitStatus, String) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_paraclick"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::fs::File::create(dir.join("stdout")).unwrap();
    let err = std::fs::File::create(dir.join("stderr")).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("sh");
    // A guard against a hang, not a measure: these take well under a
    // second each.
    let limit = Duration::from_secs(120);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("README command did not finish within {limit:?}: {cmd}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    (status, stderr)
}

#[test]
fn readme_commands_run_as_written() {
    let cmds = commands(&readme());
    let dir = tempfile::tempdir().unwrap();
    for d in ["conf", "models"] {
        std::os::unix::fs::symlink(repo().join(d).canonicalize().unwrap(), dir.path().join(d))
            .unwrap();
    }
    let mut ran = 0;
    for cmd in &cmds {
        // Whether run or not, the files it names exist.
        for w in cmd.split(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ')') {
            if (w.starts_with("conf/") || w.starts_with("models/")) && w.contains('.') {
                assert!(repo().join(w).is_file(), "README names missing {w}: {cmd}");
            }
        }
        assert!(
            !cmd.split('#').next().unwrap().contains("..."),
            "README command ends in a literal ...: {cmd}"
        );
        if let Some(why) = skip_reason(cmd) {
            println!("not run ({why}): {cmd}");
            continue;
        }
        let (status, stderr) = run(cmd, dir.path());
        assert!(
            status.success(),
            "README command failed ({status}): {cmd}\n{stderr}"
        );
        ran += 1;
    }
    // check, graph, doc (2), make-ip-conf (2), -e, runs, model --system.
    assert!(
        ran >= 10,
        "only {ran} of {} README commands run",
        cmds.len()
    );
}

#[test]
fn continuation_lines_are_joined() {
    let text = "```sh\nparaclick a \\\n    b  # c\nnot this\n```\nparaclick outside\n";
    assert_eq!(commands(text), vec!["paraclick a b  # c"]);
}

#[test]
fn every_configuration_is_in_the_table() {
    let text = readme();
    let table: Vec<&str> = text.lines().filter(|l| l.starts_with("| `")).collect();
    for e in std::fs::read_dir(repo().join("conf")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if !name.ends_with(".click") {
            continue;
        }
        let cell = format!("`{name}`");
        assert!(
            table
                .iter()
                .any(|l| l.split('|').nth(1).is_some_and(|c| c.contains(&cell))),
            "conf/{name} is not in README's table of configurations"
        );
    }
}

/// A pcap file with no packets (Ethernet).
fn empty_pcap(path: &Path) {
    let mut h = Vec::new();
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    std::fs::write(path, h).unwrap();
}

#[test]
fn check_reads_inputs_and_writes_nothing_as_the_readme_says() {
    let text = readme();
    assert!(
        text.contains("but it reads the files a configuration reads from"),
        "README does not say what check reads"
    );
    let dir = tempfile::tempdir().unwrap();
    let sh = |cmd: &str| run(cmd, dir.path());
    let (s, e) = sh("paraclick make-ip-conf eth0:10.0.1.1/24:00:11:22:33:44:55 \
                     eth1:10.0.2.1/24:00:11:22:33:44:66 > ip.click");
    assert!(s.success(), "{e}");
    // Its traces do not exist: check says so, naming them.
    let (s, e) = sh("paraclick check ip.click");
    assert!(!s.success());
    assert!(
        e.contains("eth0-in.pcap") && e.contains("eth1-in.pcap"),
        "{e}"
    );
    // With real traces (as the README shows), it passes, and writes none
    // of the outputs.
    empty_pcap(&dir.path().join("a.pcap"));
    empty_pcap(&dir.path().join("b.pcap"));
    let (s, e) = sh("paraclick check ip.click IN0=a.pcap IN1=b.pcap");
    assert!(s.success(), "{e}");
    for out in ["eth0-out.pcap", "eth1-out.pcap"] {
        assert!(!dir.path().join(out).exists(), "check wrote {out}");
    }
}

/// The Debian packages `scripts/bootstrap.sh ARGS --list` names.
fn bootstrap_packages(args: &[&str]) -> Vec<String> {
    let out = Command::new("bash")
        .arg(repo().join("scripts/bootstrap.sh"))
        .args(args)
        .arg("--list")
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_example_run_installs_no_browser() {
    // The README's two commands: the example run bootstraps what building
    // needs; the test suite also its browser and tools.
    let script = |s: &str| std::fs::read_to_string(repo().join("scripts").join(s)).unwrap();
    assert!(script("run-example.sh").contains("bash scripts/bootstrap.sh\n"));
    assert!(script("test.sh").contains("bash scripts/bootstrap.sh --tests\n"));
    let run = bootstrap_packages(&[]);
    let tests = bootstrap_packages(&["--tests"]);
    for p in ["cargo", "rustc", "libpcap-dev"] {
        assert!(run.iter().any(|x| x == p), "example run lacks {p}: {run:?}");
        assert!(tests.iter().any(|x| x == p), "tests lack {p}: {tests:?}");
    }
    // qemu: the emulated Linux IPsec peer of tests/netns/ipsec-linux.sh.
    for p in [
        "chromium",
        "chromium-driver",
        "prometheus",
        "qemu-system-x86",
    ] {
        assert!(!run.iter().any(|x| x == p), "example run installs {p}");
        assert!(tests.iter().any(|x| x == p), "tests lack {p}: {tests:?}");
    }
    // ethtool: the netns tests' offload checks; the benchmarks also need
    // it (their XDP generator), with xdp-bench's xdp-tools and a C
    // compiler, and none of the test suite's browser.
    assert!(tests.iter().any(|x| x == "ethtool"), "{tests:?}");
    let bench = bootstrap_packages(&["--bench"]);
    for p in ["ethtool", "xdp-tools", "gcc", "valgrind", "cargo"] {
        assert!(bench.iter().any(|x| x == p), "bench lacks {p}: {bench:?}");
    }
    assert!(!bench.iter().any(|x| x == "chromium"), "{bench:?}");
    // Each package once, whatever the options share.
    let both = bootstrap_packages(&["--tests", "--bench"]);
    let mut uniq = both.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), both.len(), "{both:?}");
}
