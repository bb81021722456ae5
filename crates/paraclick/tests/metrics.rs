//! `--metrics` scraped by a real Prometheus server (Debian's
//! `prometheus` package, installed by scripts/bootstrap.sh --tests),
//! started here on loopback with a configuration that scrapes paraclick
//! every second; its HTTP API is asked for a counter's rate. Without
//! prometheus the test fails: it is not skipped.

mod common;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One GET; the status and body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let code = out.get(9..12)?.parse().ok()?;
    let (_, body) = out.split_once("\r\n\r\n")?;
    // Prometheus answers chunked: the JSON is between the chunk sizes.
    Some((code, body.to_string()))
}

/// A paraclick run and its stderr.
fn router(args: &[&str]) -> (Kill, Arc<Mutex<String>>) {
    let mut c = Command::new(common::bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = Arc::new(Mutex::new(String::new()));
    let mut stderr = c.stderr.take().unwrap();
    let e2 = err.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut b) {
            if n == 0 {
                break;
            }
            e2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&b[..n]));
        }
    });
    (Kill(c), err)
}

/// The rest of the stderr line after `prefix`, waiting for it.
fn after(err: &Mutex<String>, prefix: &str) -> String {
    let t0 = Instant::now();
    loop {
        {
            let e = err.lock().unwrap();
            if let Some(i) = e.find(prefix) {
                if let Some((v, _)) = e[i + prefix.len()..].split_once('\n') {
                    return v.trim().to_string();
                }
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no '{prefix}': {}",
            err.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first JSON object in a (possibly chunked) body.
fn json_in(body: &str) -> Option<Value> {
    let start = body.find('{')?;
    let end = body.rfind('}')?;
    serde_json::from_str(&body[start..=end]).ok()
}

#[test]
fn prometheus_scrapes_the_counters_and_computes_a_rate() {
    let prom = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or_else(|| {
            panic!(
                "this test needs a Prometheus server: apt-get install prometheus \
                 (scripts/bootstrap.sh --tests installs it)"
            )
        });
    // 2000 packets/s through c, a queue, and drops in a CheckIPHeader
    // (64-byte packets of zeros: not IPv4).
    let (_r, err) = router(&[
        "--no-pin",
        "--metrics",
        "127.0.0.1:0",
        "--web",
        "127.0.0.1:0",
        "-e",
        "src :: RatedSource(LENGTH 64, RATE 2000) -> c :: Counter -> q :: Queue(100) \
         -> uq :: Unqueue -> t :: Tee; t[0] -> Discard; \
         t[1] -> chk :: CheckIPHeader -> Discard;",
    ]);
    let url = after(&err, "paraclick: metrics on http://");
    let (addr, _) = url.split_once('/').unwrap();
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    let mport: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    // Our own scrape first: the series are there (a drop's series once
    // the first packet has been dropped, a few milliseconds in).
    let wants = [
        "paraclick_element_packets_total{element=\"c\",class=\"Counter\"}",
        "paraclick_queue_length{element=\"q\",class=\"Queue\"}",
        "paraclick_element_drops_total{element=\"chk\",class=\"CheckIPHeader\",reason=",
        "paraclick_thread_polls_total{thread=\"0\"}",
    ];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, text) = get(mport, "/metrics").unwrap();
        assert_eq!(code, 200, "{text}");
        match wants.iter().find(|w| !text.contains(*w)) {
            None => break,
            Some(want) if Instant::now() > deadline => panic!("{want}: {text}"),
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // The web view serves the same.
    let web = after(&err, "paraclick: web view on http://");
    let wport: u16 = web
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (code, text) = get(wport, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(text.contains("paraclick_element_packets_total{element=\"c\""));

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: paraclick\n    static_configs:\n\
             \x20     - targets: ['127.0.0.1:{mport}']\n"
        ),
    )
    .unwrap();
    let pport = free_port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let _p = Kill(
        Command::new(prom)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let query = |q: &str| -> Option<Value> {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (code, body) = get(pport, &format!("/api/v1/query?query={enc}"))?;
        if code != 200 {
            return None;
        }
        let v = json_in(&body)?;
        let r = v["data"]["result"].as_array()?.first()?.clone();
        Some(r)
    };
    let t0 = Instant::now();
    let rate = loop {
        let r = query("rate(paraclick_element_packets_total{element=\"c\"}[5s])");
        if let Some(r) = r {
            let x: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
            if x > 0.0 {
                assert_eq!(r["metric"]["class"], "Counter", "{r}");
                assert_eq!(r["metric"]["job"], "paraclick", "{r}");
                break x;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "Prometheus computed no rate; its log: {}",
            std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("Prometheus: rate of c's count {rate:.0} packets/s (source at 2000)");
    // The source's rate, within generous bounds (a loaded machine).
    assert!((200.0..20_000.0).contains(&rate), "{rate}");
    // The drops, by reason, and the scrape itself.
    let up = query("up{job=\"paraclick\"}").unwrap();
    assert_eq!(up["value"][1], "1", "{up}");
    let drops = query("sum(paraclick_element_drops_total{element=\"chk\"})").unwrap();
    let d: f64 = drops["value"][1].as_str().unwrap().parse().unwrap();
    assert!(d > 0.0, "{drops}");
}

#[test]
fn metrics_on_another_address_must_be_allowed() {
    let out = common::paraclick(&["--metrics", "0.0.0.0:0", "-e", "Idle -> Discard;"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("not a loopback address") && e.contains("--metrics-any-address"),
        "{e}"
    );
    // Allowed: it listens there.
    let (_r, err) = router(&[
        "--metrics",
        "0.0.0.0:0",
        "--metrics-any-address",
        "-e",
        "Idle -> Discard;",
    ]);
    let url = after(&err, "paraclick: metrics on http://");
    assert!(url.starts_with("0.0.0.0:"), "{url}");
}
