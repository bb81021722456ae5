//! `paraclick substrate FILE`: the worked example (conf/substrate.toml)
//! runs without devices and its slices answer on their VLANs; through an
//! authenticated control socket a slice is added, read by its prefix,
//! and removed, and the writes need the token; `--metrics` serves each
//! slice's series, labelled with it, scraped over HTTP.

mod common;

use common::ctl::Client;
use common::proc::Proc;
use std::io::{Read, Write};
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

/// Two slices, each sent a fixed number of frames on its VLAN (an ARP
/// request, as in conf/substrate.toml), with no STOP: the counts settle.
const TWO_SLICES: &str = r#"
cores = 1
[interface.p0]
rate = "100Mbps"
input = 'RatedSource(DATA "\<ffffffffffff0200000001028100000a080600010800060400010200000001020a0001020000000000000a000101>", RATE 2000, LIMIT 300)'
output = "Discard"
[interface.p1]
rate = "100Mbps"
input = 'RatedSource(DATA "\<ffffffffffff02000000020281000014080600010800060400010200000002020a0002020000000000000a000201>", RATE 2000, LIMIT 200)'
output = "Discard"
[slice.a]
text = "FromDevice(m) -> c :: Counter -> q :: Queue -> ToDevice(m);"
[slice.a.metalink.m]
interface = "p0"
vlan = 10
rate = "1Mbps"
[slice.b]
text = "FromDevice(m) -> c :: Counter -> q :: Queue -> ToDevice(m);"
[slice.b.metalink.m]
interface = "p1"
vlan = 20
rate = "1Mbps"
"#;

/// One `GET /metrics`: the body (empty if it failed).
fn scrape(port: u16) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let _ = s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// The value of the series `name{labels}` in a scrape.
fn series(text: &str, name_labels: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_labels)?.trim().parse().ok())
}

#[test]
fn metrics_label_each_slices_series_and_match_its_handlers() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("substrate-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.toml");
    std::fs::write(&file, TWO_SLICES).unwrap();
    let mut p = Proc::start(&[
        "substrate",
        file.to_str().unwrap(),
        "-p",
        "0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let line = p.wait_line("control socket listening on ");
    let port: u16 = line
        .split_whitespace()
        .next()
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let url = p.wait_line("paraclick: metrics on http://");
    let mport: u16 = url
        .split('/')
        .next()
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("{url}"));
    // Waits for the event (every frame counted), bounded only against a
    // hang.
    let want = [("a", 300u64), ("b", 200u64)];
    let mut text = String::new();
    for _ in 0..3000 {
        text = scrape(mport);
        let done = want.iter().all(|(s, n)| {
            series(
                &text,
                &format!(
                    "paraclick_element_packets_total{{slice=\"{s}\",element=\"{s}/c\",class=\"Counter\"}}"
                ),
            ) == Some(*n)
        });
        if done {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut c = Client::tcp(port);
    // A slice's totals, from its `slices` entry.
    let totals = |slices: &str, s: &str| -> Vec<(&'static str, u64)> {
        let entry: Vec<String> = slices
            .split(&format!("slice {s} "))
            .nth(1)
            .unwrap_or_else(|| panic!("no slice {s}: {slices}"))
            .lines()
            .skip(1)
            .find(|l| l.trim_start().starts_with("rx_packets"))
            .unwrap_or_else(|| panic!("no totals for {s}: {slices}"))
            .split_whitespace()
            .map(str::to_string)
            .collect();
        ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"]
            .into_iter()
            .map(|key| {
                let v = entry
                    .iter()
                    .position(|w| w == key)
                    .and_then(|i| entry.get(i + 1))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{key} of {s}: {slices}"));
                (key, v)
            })
            .collect()
    };
    let agree = |slices: &str, text: &str| {
        want.iter().all(|(s, _)| {
            totals(slices, s).iter().all(|(key, v)| {
                series(
                    text,
                    &format!("paraclick_slice_{key}_total{{slice=\"{s}\"}}"),
                ) == Some(*v)
            })
        })
    };
    // The last frames may still be on their way out: the handler and the
    // scrape agree once they are.
    let mut slices = c.read("slices");
    for _ in 0..3000 {
        if agree(&slices, &text) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        text = scrape(mport);
        slices = c.read("slices");
    }
    for (s, n) in want {
        let counter = format!(
            "paraclick_element_packets_total{{slice=\"{s}\",element=\"{s}/c\",class=\"Counter\"}}"
        );
        assert_eq!(series(&text, &counter), Some(n), "{counter} in:\n{text}");
        assert_eq!(c.count(&format!("{s}/c.count")), n, "the handler agrees");
        for (key, v) in totals(&slices, s) {
            assert!(v > 0, "{key} of {s}: {slices}");
            let m = format!("paraclick_slice_{key}_total{{slice=\"{s}\"}}");
            assert_eq!(series(&text, &m), Some(v), "{m}: {slices}\n{text}");
        }
    }
    let (code, _) = c.write_data("stop", "");
    assert_eq!(code, 200);
    assert_eq!(p.wait_exit(30), 0, "{}", p.stderr());
    std::fs::remove_dir_all(&dir).unwrap();
}
