//! `require(library FILE)`, `-C/--clickpath` and `require(package NAME)`,
//! with Click's search order: the requiring file's directory, then each
//! CLICKPATH directory and its `conf` subdirectory.

mod common;
use common::paraclick;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const LIB: &str = "elementclass Tagged { $label | input -> Print($label) -> output }
                   elementclass Twice { input -> t :: Tee -> output; t[1] -> output }\n";

#[test]
fn library_next_to_the_configuration_defines_classes() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "classes.click", LIB);
    let conf = write(
        dir.path(),
        "main.click",
        "require(library classes.click);
         InfiniteSource(LIMIT 2, STOP true) -> Twice -> Tagged(seen) -> c :: Counter -> Discard;",
    );
    // Run from elsewhere: the library is found beside the configuration.
    let out = paraclick(&[&conf, "-h", "c.count"]);
    assert!(out.status.success(), "{}", err(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("4")
    );
    assert_eq!(err(&out).matches("seen:").count(), 4, "{}", err(&out));
}

#[test]
fn clickpath_option_and_environment_and_conf_subdirectory() {
    let dir = tempfile::tempdir().unwrap();
    let libdir = dir.path().join("libs");
    write(&libdir, "conf/classes.click", LIB);
    let conf = "require(library classes.click); Idle -> Twice -> Discard;";
    let out = paraclick(&["check", "-e", conf]);
    assert!(!out.status.success());
    assert!(
        err(&out).contains("library 'classes.click' not found in CLICKPATH/conf"),
        "{}",
        err(&out)
    );
    let path = format!("/nonexistent:{}", libdir.display());
    let out = paraclick(&["check", "-C", &path, "-e", conf]);
    assert!(out.status.success(), "{}", err(&out));
    let out = paraclick(&["check", "--clickpath", &path, "-e", conf]);
    assert!(out.status.success(), "{}", err(&out));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paraclick"))
        .args(["check", "-e", conf])
        .env("CLICKPATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", err(&out));
}

#[test]
fn libraries_nest_are_included_once_and_errors_are_located_in_them() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.click",
        "require(library b.click); elementclass A { input -> B -> output }",
    );
    // b requires a back: the cycle is included once.
    write(
        dir.path(),
        "b.click",
        "require(library a.click);\nelementclass B { input -> Counter -> output }",
    );
    let conf = write(
        dir.path(),
        "main.click",
        "require(library a.click, library b.click); Idle -> A -> B -> Discard;",
    );
    let out = paraclick(&["check", &conf]);
    assert!(out.status.success(), "{}", err(&out));

    let bad = write(
        dir.path(),
        "bad.click",
        "// a library\nelementclass C { input -> Cuonter -> output }",
    );
    let conf = write(
        dir.path(),
        "main2.click",
        "require(library bad.click);\nIdle -> C -> Discard -> Nothing;",
    );
    let out = paraclick(&["check", &conf]);
    assert!(!out.status.success());
    let e = err(&out);
    assert!(
        e.contains(&format!("{bad}:2:27: undeclared element 'Cuonter'")),
        "{e}"
    );
    assert!(
        e.contains("elementclass C { input -> Cuonter"),
        "excerpt of the library: {e}"
    );
}

#[test]
fn unknown_package_is_a_clear_error() {
    let out = paraclick(&[
        "check",
        "-e",
        "require(package nosuchpackage); Idle -> Discard;",
    ]);
    assert!(!out.status.success());
    assert!(
        err(&out).contains("requirement 'nosuchpackage' not available"),
        "{}",
        err(&out)
    );
}
