//! The configurations paraclick writes (`-o`, and every candidate
//! `paraclick parallelize` prints or emits) parse back to what the input
//! meant. A reference left in an argument after substitution (a compound
//! parameter's default that is itself a reference, `${y-${r-X}}`, leaves
//! `${r-X}`; a literal `$x` outside any compound stays `$x`) is text:
//! written as is, reading the output again would substitute it (`X`).

mod common;

use std::path::{Path, PathBuf};

/// A define used inside a compound, a compound parameter's default that
/// holds a reference, and a literal `$x` in a string argument.
const CONF: &str = r#"// $ references that must survive being written back out.
define($N 5);
elementclass Tag { $n | input -> Print("$n ${y-${r-X}}", MAXLENGTH 0) -> output }
src :: InfiniteSource(LIMIT $N) -> Tag($N) -> Print("$x", MAXLENGTH 0)
  -> c :: Counter -> Discard;
Script(label check, wait 1ms, goto check $(lt $(c.count) $N), stop);
"#;

/// A scratch directory under the test target's temporary directory,
/// removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("printer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ok(args: &[&str]) -> (String, String) {
    // parallelize's line-term cache under target/tmp, not the user's.
    let terms = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("printer-line-terms-{}.json", std::process::id()));
    let o = std::process::Command::new(common::bin())
        .args(args)
        .env("PARACLICK_LINE_TERMS", &terms)
        .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
        .output()
        .expect("run paraclick");
    let _ = std::fs::remove_file(&terms);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "paraclick {args:?}: {out}{err}");
    (out, err)
}

/// `file` flattened (`-o -`; the configuration then runs, and stops by
/// itself).
fn flattened(file: &Path) -> String {
    ok(&["-o", "-", &file.display().to_string()]).0
}

/// `text` (a flattened configuration) flattened again.
fn flattened_text(dir: &Scratch, text: &str) -> String {
    let f = dir.0.join("again.click");
    std::fs::write(&f, text).unwrap();
    flattened(&f)
}

/// What a run of `file` on `threads` threads prints: the counter's value
/// and the Print lines, sorted (threads may interleave them).
fn run(file: &Path, threads: usize) -> (String, Vec<String>) {
    let f = file.display().to_string();
    let j = threads.to_string();
    let (out, err) = ok(&["-j", &j, "-h", "c.count", &f]);
    let mut lines: Vec<String> = err
        .lines()
        .filter(|l| l.contains(':') && !l.starts_with("paraclick"))
        .map(str::to_string)
        .collect();
    lines.sort();
    (out, lines)
}

#[test]
fn written_configurations_keep_dollar_references_as_text() {
    let dir = Scratch::new("dollar");
    let conf = dir.0.join("dollar.click");
    std::fs::write(&conf, CONF).unwrap();
    let (count, prints) = run(&conf, 1);
    assert_eq!(count, "5\n");
    assert_eq!(prints.len(), 10, "{prints:?}");
    assert!(
        prints.iter().any(|l| l.starts_with("5 ${r-X}:")),
        "{prints:?}"
    );
    assert!(prints.iter().any(|l| l.starts_with("$x:")), "{prints:?}");

    // -o: the written file parses back to the same graph and runs to the
    // same output.
    let flat = dir.0.join("flat.click");
    ok(&[
        "-o",
        &flat.display().to_string(),
        &conf.display().to_string(),
    ]);
    let text = std::fs::read_to_string(&flat).unwrap();
    assert_eq!(flattened(&flat), text);
    assert_eq!(run(&flat, 1), (count.clone(), prints.clone()), "{text}");

    // parallelize: its output and every candidate it emits.
    let emit = dir.0.join("emit");
    let (plan, _) = ok(&[
        "parallelize",
        "-j",
        "2",
        "--duration",
        "0.1",
        "--emit-all",
        &emit.display().to_string(),
        &conf.display().to_string(),
    ]);
    let out = dir.0.join("plan.click");
    std::fs::write(&out, &plan).unwrap();
    let mut files = vec![out];
    for e in std::fs::read_dir(&emit).unwrap() {
        files.push(e.unwrap().path());
    }
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let flat = flattened(f);
        assert_eq!(flattened_text(&dir, &flat), flat, "{text}");
        assert_eq!(
            run(f, 2),
            (count.clone(), prints.clone()),
            "{}",
            f.display()
        );
    }
}
