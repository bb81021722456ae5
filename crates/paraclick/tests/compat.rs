//! Click compatibility of the command line and of configuration forms
//! Click accepts (issue 14).

mod common;
use common::paraclick;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn device_names_and_click_address_forms_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "dev.click",
        "PollDevice(pcknodev0, METHOD LINUX) -> c :: Classifier(12/0806, -);
         c[0] -> ARPResponder(0/0 1:1:1:1:1:1, 10.0.0.1/32 10.0.0.2 00:01:02:03:04:05, lo)
              -> Discard;
         c[1] -> Strip(14) -> CheckIPHeader -> SetIPAddress(lo:bcast)
              -> q :: ARPQuerier(lo) -> EtherEncap(0x0800, lo, lo:eth) -> Discard;
         Idle -> [1]q;",
    );
    let out = paraclick(&["check", &conf]);
    assert!(out.status.success(), "{}", stderr(&out));

    let bad = write(
        &dir,
        "bad.click",
        "FromDevice(pcknodev0, METHOD SMOKE) -> Discard;",
    );
    let out = paraclick(&["check", &bad]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("METHOD"), "{}", stderr(&out));

    let bad = write(
        &dir,
        "bad2.click",
        "Idle -> SetIPAddress(nosuchdev7:gw) -> Discard;",
    );
    let out = paraclick(&["check", &bad]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nosuchdev7:gw"), "{}", stderr(&out));
}

#[test]
fn click_command_options() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "x.click",
        "c :: Counter;
         elementclass Two { input -> Counter -> output }
         InfiniteSource(LIMIT 5, STOP true) -> Two -> c -> Discard;",
    );
    // -x: the handler's value is the exit status.
    let out = paraclick(&["-x", "c.count", &conf]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    // a boolean: true is 0, false is 1
    let b = write(
        &dir,
        "b.click",
        "s :: Script(export $v false); Idle -> Discard;",
    );
    let out = paraclick(&["-q", "-x", "s.v", &b]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = paraclick(&["-q", "-x", "nosuch.count", &conf]);
    assert_eq!(out.status.code(), Some(1));

    // -o: the flattened configuration, itself a valid configuration with
    // the same elements.
    let flat = dir.path().join("flat.click");
    let out = paraclick(&["-q", "-o", flat.to_str().unwrap(), &conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&flat).unwrap();
    assert!(text.contains("c :: Counter;"), "{text}");
    assert!(text.contains("/Counter@"), "{text}");
    assert!(!text.contains("elementclass"), "{text}");
    let out = paraclick(&["-x", "c.count", flat.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));

    // -t prints the time taken; -w is accepted.
    let out = paraclick(&["-t", "-w", &conf]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("s wall"), "{}", stderr(&out));

    // -R (hot reconfiguration, tested in hotconfig.rs) is accepted.
    let out = paraclick(&["-q", "-R", &conf]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn undefined_variable_outside_compound_is_literal() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "v.click",
        "InfiniteSource(DATA \"$notdefined\", LIMIT 1, STOP true) -> c :: Counter -> Discard;",
    );
    let out = paraclick(&["-x", "c.byte_count", &conf]);
    assert_eq!(out.status.code(), Some(11), "{}", stderr(&out));
}

#[test]
fn argument_errors_reported_with_unknown_classes() {
    let out = paraclick(&[
        "check",
        "-e",
        "Foo -> Discard; Idle -> Counter(BAD 1) -> Discard; Idle -> Queue(xx) -> Foo",
    ]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("unknown element class 'Foo'"), "{e}");
    assert!(e.contains("Counter: unknown keyword BAD"), "{e}");
    assert!(e.contains("Queue: CAPACITY"), "{e}");
}
