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
