//! `paraclick substrate FILE`: the worked example (conf/substrate.toml)
//! runs without devices and its slices answer on their VLANs; through an
//! authenticated control socket a slice is added, read by its prefix,
//! and removed, and the writes need the token.

mod common;

use common::ctl::Client;
use common::proc::Proc;
use std::os::unix::fs::PermissionsExt;

#[test]
fn the_worked_example_runs_its_three_slices() {
    let root = common::root();
    let conf = root.join("conf/substrate.toml");
    let mut p = Proc::start(&[
        "substrate",
        conf.to_str().unwrap(),
        "--simtime",
        "--report",
        "slices",
        "-h",
        "v4/@r0/tx.count",
        "-h",
        "nat/@r1/tx.count",
    ]);
    assert_eq!(p.wait_exit(120), 0, "{}", p.stderr());
    // The IPv4 router answered the ARP requests of VLAN 10 on p0, the NAT
    // gateway those of VLAN 31 on p1 (each with its own AddressInfo's
    // if0 and if1, its own element names); the answers left tagged.
    assert!(p.printed("v4/@r0/tx.count") >= 1900, "{}", p.stderr());
    assert!(p.printed("nat/@r1/tx.count") >= 1900, "{}", p.stderr());
    let err = p.stderr();
    for want in [
        "slice v4 state running",
        "slice v6 state running",
        "slice nat state running",
        "metalink r0 on p0 vlan 10",
        "cores 1 threads 1",
    ] {
        assert!(err.contains(want), "no '{want}' in: {err}");
    }
}

const SUBSTRATE: &str = r#"
cores = 1
[interface.p0]
rate = "10Mbps"
input = "RatedSource(RATE 100)"
output = "Discard"
[slice.a]
text = "FromDevice(m) -> c :: Counter -> q :: Queue -> ToDevice(m);"
[slice.a.metalink.m]
interface = "p0"
vlan = 10
rate = "1Mbps"
"#;

const ADD: &str = r#"[slice.b]
text = "FromDevice(x) -> c :: Counter -> q :: Queue -> ToDevice(x);"
[slice.b.metalink.x]
interface = "p0"
udp = 4001
local = "10.0.0.1"
remote = "10.0.0.2"
rate = "2Mbps"
"#;

#[test]
fn slices_are_changed_through_an_authenticated_socket() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("substrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.toml");
    std::fs::write(&file, SUBSTRATE).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "0123456789abcdef0123").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut p = Proc::start(&[
        "substrate",
        file.to_str().unwrap(),
        "-R",
        "-p",
        "0",
        "--control-token",
        token.to_str().unwrap(),
    ]);
    // `127.0.0.1:PORT (AUTH token required)`
    let line = p.wait_line("control socket listening on ");
    assert!(line.ends_with("(AUTH token required)"), "{line}");
    let port: u16 = line
        .split_whitespace()
        .next()
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // Without the token: refused, nothing added.
    let mut c = Client::tcp(port);
    let (code, _) = c.write_data("slice.add", ADD);
    assert_eq!(code, 530);
    let mut c = Client::tcp(port);
    assert_eq!(c.code("AUTH 0123456789abcdef0123"), 200);
    let (code, text) = c.write_data("slice.add", ADD);
    assert_eq!(code, 200, "{text:?}");
    let slices = c.read("slices");
    assert!(slices.contains("slice b state running"), "{slices}");
    assert!(
        slices.contains("metalink x on p0 udp port 4001"),
        "{slices}"
    );
    c.count("b/c.count");
    // Over the link's rate: refused, located, b still there.
    let (code, text) = c.write_data(
        "slice.add",
        &ADD.replace("[slice.b", "[slice.d")
            .replace("4001", "4002")
            .replace("2Mbps", "8Mbps"),
    );
    assert_eq!(code, 520);
    assert!(text.join("\n").contains("more than its rate"), "{text:?}");
    let (code, text) = c.write_data("slice.remove", "b");
    assert_eq!(code, 200, "{text:?}");
    assert!(!c.read("slices").contains("slice b"));
    // a ran all along, read by its prefix.
    let _ = c.count("a/c.count");
    let (code, _) = c.write_data("stop", "");
    assert_eq!(code, 200);
    assert_eq!(p.wait_exit(30), 0, "{}", p.stderr());
    std::fs::remove_dir_all(&dir).unwrap();
}
