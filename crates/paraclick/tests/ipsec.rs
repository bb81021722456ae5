//! End-to-end tests of the ESP gateway conf/vpn-pcap.click against scapy's
//! independent ESP implementation (tests/ipsec/esp.py): for every
//! algorithm, scapy decrypts what paraclick encrypts, paraclick decrypts
//! what scapy encrypts (delivered slightly out of order), and a replay, a
//! bad ICV, an unknown SPI and a truncated packet are counted drops.
//! scapy and python3-cryptography are required (`apt-get install
//! python3-scapy python3-cryptography` or `pip install scapy
//! cryptography`); without them the tests fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ipsec/esp.py")
}

/// A python3 that has scapy's IPsec layer (the system one if the first on
/// PATH lacks it).
fn python() -> &'static str {
    for py in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(py)
            .args(["-c", "import scapy.layers.ipsec, cryptography"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return py;
        }
    }
    panic!(
        "no python3 with scapy and cryptography: these tests need them \
         (apt-get install python3-scapy python3-cryptography)"
    )
}

fn esp_py(cmd: &str, dir: &Path, alg: &str, keys: &(String, String)) {
    let out = Command::new(python())
        .arg(script())
        .arg(cmd)
        .arg(dir)
        .args([alg, "0x1001", &keys.0, "0x2002", &keys.1, LOCAL, PEER])
        .output()
        .expect("run esp.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "esp.py {cmd} {alg} failed:\n{text}");
}

const LOCAL: &str = "192.0.2.1";
const PEER: &str = "198.51.100.1";

fn key(len: usize, seed: u8) -> String {
    let mut x = u32::from(seed).wrapping_mul(2654435761).wrapping_add(1);
    let mut s = String::from("0x");
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        s.push_str(&format!("{:02x}", x as u8));
    }
    s
}

fn key_len(alg: &str) -> usize {
    match alg {
        "aes128gcm16" => 20,
        "aes256gcm16" => 36,
        "aes128-sha1" => 36,
        "aes256-sha1" => 52,
        "aes128-sha256" => 48,
        "aes256-sha256" => 64,
        "3des-sha1" => 44,
        "3des-sha256" => 56,
        _ => unreachable!(),
    }
}

/// Runs the gateway on scapy's pcaps; returns the handler values.
fn run(alg: &str, threads: usize) -> Vec<(String, String)> {
    let handlers = [
        "enc.packets",
        "enc.seq",
        "dec.packets",
        "dec.seq",
        "dec.replay_drops",
        "dec.auth_failures",
        "dec.unknown_spi",
        "dec.truncated",
        "dec.bad_padding",
    ];
    run_conf("conf/vpn-pcap.click", alg, threads, &handlers)
}

/// Runs configuration `conf` (with vpn-pcap.click's parameters) on
/// scapy's pcaps, has scapy check its output, and returns the values of
/// `handlers`.
fn run_conf(conf: &str, alg: &str, threads: usize, handlers: &[&str]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let keys = (key(key_len(alg), 1), key(key_len(alg), 2));
    esp_py("gen", dir.path(), alg, &keys);
    let d = |f: &str| dir.path().join(f).display().to_string();
    let mut cmd = Command::new(common::bin());
    cmd.arg(common::root().join(conf))
        .args(["--no-pin", "-j", &threads.to_string()])
        .arg(format!("PLAIN_IN={}", d("plain-in.pcap")))
        .arg(format!("PLAIN_OUT={}", d("plain-out.pcap")))
        .arg(format!("ESP_IN={}", d("esp-in.pcap")))
        .arg(format!("ESP_OUT={}", d("esp-out.pcap")))
        .arg(format!("LOCAL={LOCAL}"))
        .arg(format!("PEER={PEER}"))
        .arg("SPI_OUT=0x1001")
        .arg("SPI_IN=0x2002")
        .arg(format!("ALG={alg}"))
        .arg(format!("KEY_OUT={}", keys.0))
        .arg(format!("KEY_IN={}", keys.1));
    for h in handlers {
        cmd.args(["-h", h]);
    }
    let out = cmd.output().expect("run paraclick");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "paraclick failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    esp_py("check", dir.path(), alg, &keys);
    // `-h` output: "NAME:\nVALUE\n\n".
    let mut vals = Vec::new();
    let mut lines = stdout.lines();
    while let Some(l) = lines.next() {
        if let Some(h) = l.strip_suffix(':').filter(|h| handlers.contains(h)) {
            vals.push((h.to_string(), lines.next().unwrap_or("").to_string()));
        }
    }
    vals
}

fn check_counts(alg: &str, threads: usize) {
    let v = run(alg, threads);
    let get = |h: &str| {
        v.iter()
            .find(|(k, _)| k == h)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {h} in {v:?}"))
    };
    // esp.py: 40 packets out, 30 in, then one of each rejection.
    assert_eq!(get("enc.packets"), "40", "{alg}");
    assert_eq!(get("enc.seq"), "40", "{alg}");
    assert_eq!(get("dec.packets"), "30", "{alg}");
    assert_eq!(get("dec.seq"), "30", "{alg}");
    assert_eq!(get("dec.replay_drops"), "1", "{alg}");
    assert_eq!(get("dec.auth_failures"), "1", "{alg}");
    assert_eq!(get("dec.unknown_spi"), "1", "{alg}");
    assert_eq!(get("dec.truncated"), "1", "{alg}");
    assert_eq!(get("dec.bad_padding"), "0", "{alg}");
}

#[test]
fn scapy_aes128gcm16() {
    check_counts("aes128gcm16", 1);
}

#[test]
fn scapy_aes256gcm16() {
    check_counts("aes256gcm16", 1);
}

#[test]
fn scapy_aes128_sha1() {
    check_counts("aes128-sha1", 1);
}

#[test]
fn scapy_aes256_sha256() {
    check_counts("aes256-sha256", 1);
}

#[test]
fn scapy_3des_sha1() {
    check_counts("3des-sha1", 1);
}

#[test]
fn scapy_other_combinations() {
    for alg in ["aes256-sha1", "aes128-sha256", "3des-sha256"] {
        check_counts(alg, 1);
    }
}

#[test]
fn scapy_two_threads() {
    for alg in ["aes128gcm16", "3des-sha1"] {
        check_counts(alg, 2);
    }
}

/// conf/vpn-click-style-pcap.click: the same gateway from Click's split
/// elements (RadixIPsecLookup, IPsecESPEncap, IPsecAES/IPsecDES,
/// IPsecAuthHMACSHA1/SHA256, IPsecEncap; StripIPHeader, the HMAC, the
/// cipher, IPsecESPUnencap inbound). scapy decrypts what it sends and it
/// decrypts what scapy sends, with the same rejections counted per SA.
fn check_click_style(alg: &str, threads: usize) {
    let handlers = [
        "sat.packets 0x1001",
        "sat.seq 0x1001",
        "sat.packets 0x2002",
        "sat.rx_seq 0x2002",
        "sat.replay_drops 0x2002",
        "sat.auth_failures 0x2002",
        "sat.truncated 0x2002",
        "sat.bad_padding 0x2002",
        "sat.unknown_spi",
    ];
    let v = run_conf("conf/vpn-click-style-pcap.click", alg, threads, &handlers);
    let got: Vec<&str> = handlers
        .iter()
        .map(|h| {
            v.iter()
                .find(|(k, _)| k == h)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("no {h} in {v:?}"))
        })
        .collect();
    assert_eq!(
        got,
        ["40", "40", "30", "30", "1", "1", "1", "0", "1"],
        "{alg} -j{threads}"
    );
}

#[test]
fn scapy_click_style_elements() {
    for alg in [
        "aes128gcm16",
        "aes256gcm16",
        "aes128-sha1",
        "aes256-sha256",
        "3des-sha1",
        "3des-sha256",
    ] {
        check_click_style(alg, 1);
    }
}

#[test]
fn scapy_click_style_two_threads() {
    for alg in ["aes128gcm16", "3des-sha1"] {
        check_click_style(alg, 2);
    }
}
