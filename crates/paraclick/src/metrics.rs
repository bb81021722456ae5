//! `--metrics ADDR:PORT` (and `/metrics` beside the web view): the
//! router's counters for Prometheus.
//!
//! A scrape reads the router's handlers, through the same dispatch as a
//! control socket, and writes them in the text exposition format
//! (OpenMetrics' text format, which Prometheus reads; the encoding is the
//! `prometheus-client` crate's), with labels rather than one name per
//! element:
//!
//! - `paraclick_element_packets_total{element,class}` and
//!   `paraclick_element_bytes_total{element,class}`: an element's `count`
//!   and `byte_count` handlers (Counter, sources, ...).
//! - `paraclick_element_drops_total{element,class,reason}`: its
//!   `drop_reasons` (every element that dropped, one series per reason).
//! - `paraclick_queue_length{element,class}`, `paraclick_queue_capacity`
//!   and `paraclick_queue_drops_total`: every element with `length` and
//!   `capacity` handlers (the queues).
//! - `paraclick_thread_polls_total{thread}`,
//!   `paraclick_thread_idle_polls_total{thread}` and
//!   `paraclick_thread_busy_cycles_total{thread}`: the `threads` handler;
//!   a thread's load is `1 - rate(idle_polls) / rate(polls)`.
//! - `paraclick_elements`: how many elements the running configuration
//!   has (it follows a hot swap).
//! - In a substrate (`paraclick substrate FILE --metrics PORT`), every
//!   element series of an element of slice S (named `S/...`) also has the
//!   label `slice="S"`, and each slice has its totals, from the `slices`
//!   handler: `paraclick_slice_rx_packets_total{slice}`,
//!   `paraclick_slice_tx_packets_total`, `paraclick_slice_rx_bytes_total`,
//!   `paraclick_slice_tx_bytes_total` and `paraclick_slice_drops_total`.
//!
//! Nothing here is written: the server answers `GET /metrics` and refuses
//! every other method (405) and path (404), reads no request body (a
//! request announcing one is refused), takes at most 8 KiB of request
//! head within 5 seconds, serves at most 8 connections at once (503
//! beyond) and one request on each. Bound to loopback, its `Host` must be
//! a loopback address or `localhost` (as the web view's: a DNS-rebinding
//! page reads nothing). It listens on loopback unless given an address
//! and `--metrics-any-address`.

use paraclick_runtime::control::Backend;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The content type of a scrape's answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const MAX_HEAD: usize = 8 * 1024;
const MAX_CONNS: usize = 8;
const DEADLINE: Duration = Duration::from_secs(5);

/// An element series' labels: `slice` (in a substrate), `element`,
/// `class`, and for drops `reason`, in that order.
type ElementLabels = Vec<(&'static str, String)>;
type ReasonLabels = ElementLabels;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SliceLabels {
    slice: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThreadLabels {
    thread: String,
}

/// One number from a handler's value (its first word; `None` if it is
/// not an unsigned integer).
fn number(v: &str) -> Option<u64> {
    v.split_whitespace().next()?.parse().ok()
}

/// The metrics of the router behind `b`, in the text exposition format.
pub fn render(b: &dyn Backend) -> String {
    let read = |h: &str| b.read(h, None).ok();
    let mut reg = Registry::with_prefix("paraclick");
    let packets = Family::<ElementLabels, Counter>::default();
    let bytes = Family::<ElementLabels, Counter>::default();
    let drops = Family::<ReasonLabels, Counter>::default();
    let qlen = Family::<ElementLabels, Gauge>::default();
    let qcap = Family::<ElementLabels, Gauge>::default();
    let qdrops = Family::<ElementLabels, Counter>::default();
    let polls = Family::<ThreadLabels, Counter>::default();
    let idle = Family::<ThreadLabels, Counter>::default();
    let busy = Family::<ThreadLabels, Counter>::default();
    let elements = Gauge::<i64>::default();
    // `list`: the count, then one name a line.
    let names: Vec<String> = read("list")
        .map(|l| l.lines().skip(1).map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    elements.set(names.len() as i64);
    // A substrate's slices (`slice NAME state ...` lines, then its
    // totals); none for a plain router.
    let report = read("slices").unwrap_or_default();
    let slice_names: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("slice "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for name in &names {
        let class = read(&format!("{name}.class"))
            .map(|c| c.trim().to_string())
            .unwrap_or_default();
        let has: Vec<String> = read(&format!("{name}.handlers"))
            .map(|t| {
                t.lines()
                    .filter(|l| l.split('\t').nth(1).is_some_and(|m| m.contains('r')))
                    .map(|l| l.split('\t').next().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default();
        let has = |h: &str| has.iter().any(|x| x == h);
        let value = |h: &str| {
            if has(h) {
                read(&format!("{name}.{h}")).and_then(|v| number(&v))
            } else {
                None
            }
        };
        let mut labels: ElementLabels = Vec::with_capacity(4);
        if let Some(s) = name
            .split_once('/')
            .map(|(s, _)| s)
            .filter(|s| slice_names.contains(s))
        {
            labels.push(("slice", s.to_string()));
        }
        labels.push(("element", name.clone()));
        labels.push(("class", class.clone()));
        if let Some(n) = value("count") {
            packets.get_or_create(&labels).inc_by(n);
        }
        if let Some(n) = value("byte_count") {
            bytes.get_or_create(&labels).inc_by(n);
        }
        // `REASON COUNT` lines; a reason may have spaces.
        for l in read(&format!("{name}.drop_reasons"))
            .unwrap_or_default()
            .lines()
        {
            if let Some((reason, n)) = l.trim().rsplit_once(' ') {
                if let Ok(n) = n.parse::<u64>() {
                    let mut l: ReasonLabels = labels.clone();
                    l.push(("reason", reason.trim().to_string()));
                    drops.get_or_create(&l).inc_by(n);
                }
            }
        }
        if let (Some(len), Some(cap)) = (value("length"), value("capacity")) {
            qlen.get_or_create(&labels).set(len as i64);
            qcap.get_or_create(&labels).set(cap as i64);
            qdrops
                .get_or_create(&labels)
                .inc_by(value("drops").unwrap_or(0));
        }
    }
    // Per slice: `rx_packets N rx_bytes N tx_packets N tx_bytes N drops N`
    // on the lines after its `slice NAME` line.
    let slice_totals: Vec<Family<SliceLabels, Counter>> =
        (0..5).map(|_| Family::default()).collect();
    let mut cur: Option<String> = None;
    for l in report.lines() {
        if let Some(r) = l.strip_prefix("slice ") {
            cur = r.split_whitespace().next().map(str::to_string);
            continue;
        }
        let (Some(s), w) = (&cur, l.split_whitespace().collect::<Vec<_>>()) else {
            continue;
        };
        if w.first() != Some(&"rx_packets") {
            continue;
        }
        for (k, key) in ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "drops"]
            .iter()
            .enumerate()
        {
            let v = w
                .iter()
                .position(|x| x == key)
                .and_then(|i| w.get(i + 1))
                .and_then(|v| v.parse::<u64>().ok());
            if let Some(v) = v {
                slice_totals[k]
                    .get_or_create(&SliceLabels { slice: s.clone() })
                    .inc_by(v);
            }
        }
    }
    // `thread T POLLS IDLE_POLLS BUSY_CYCLES` lines.
    for l in read("threads").unwrap_or_default().lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 5 && w[0] == "thread" {
            let t = ThreadLabels {
                thread: w[1].to_string(),
            };
            let n = |i: usize| w[i].parse::<u64>().unwrap_or(0);
            polls.get_or_create(&t).inc_by(n(2));
            idle.get_or_create(&t).inc_by(n(3));
            busy.get_or_create(&t).inc_by(n(4));
        }
    }
    reg.register(
        "element_packets",
        "Packets counted by an element's count handler",
        packets,
    );
    reg.register(
        "element_bytes",
        "Bytes counted by an element's byte_count handler",
        bytes,
    );
    reg.register(
        "element_drops",
        "Packets an element dropped, by reason",
        drops,
    );
    reg.register("queue_length", "Packets in a queue", qlen);
    reg.register("queue_capacity", "A queue's capacity", qcap);
    reg.register("queue_drops", "Packets a queue dropped when full", qdrops);
    reg.register("thread_polls", "Task polls of a worker thread", polls);
    reg.register(
        "thread_idle_polls",
        "Task polls of a worker thread that found no work",
        idle,
    );
    reg.register(
        "thread_busy_cycles",
        "Cycles a worker thread spent in polls that found work",
        busy,
    );
    reg.register(
        "elements",
        "Elements of the running configuration",
        elements,
    );
    if !slice_names.is_empty() {
        let mut t = slice_totals.into_iter();
        for (name, help) in [
            (
                "slice_rx_packets",
                "Packets a slice received on its metalinks",
            ),
            ("slice_rx_bytes", "Bytes a slice received on its metalinks"),
            ("slice_tx_packets", "Packets a slice sent on its metalinks"),
            ("slice_tx_bytes", "Bytes a slice sent on its metalinks"),
            ("slice_drops", "Packets the elements of a slice dropped"),
        ] {
            if let Some(f) = t.next() {
                reg.register(name, help, f);
            }
        }
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// `--metrics` value: `PORT` (127.0.0.1) or `ADDR:PORT`; an address
/// other than loopback only with `any_address`.
pub fn addr(spec: &str, any_address: bool) -> Result<SocketAddr, String> {
    let a = match spec.parse::<u16>() {
        Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
        Err(_) => spec
            .parse::<SocketAddr>()
            .map_err(|_| format!("--metrics: expected PORT or ADDRESS:PORT, not '{spec}'"))?,
    };
    if !a.ip().is_loopback() && !any_address {
        return Err(format!(
            "--metrics {a}: not a loopback address; every host that reaches it \
             would read the router's counters (add --metrics-any-address to allow it)"
        ));
    }
    Ok(a)
}

/// A running metrics server.
pub struct Metrics {
    /// Where it listens.
    pub addr: SocketAddr,
}

/// Starts the metrics server on `addr`.
pub fn start(addr: SocketAddr, backend: Arc<dyn Backend>) -> Result<Metrics, String> {
    let l = TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: {e}"))?;
    let local = l.local_addr().map_err(|e| e.to_string())?;
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("paraclick-metrics".into())
        .spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = respond(&mut s, 503, "text/plain", b"too many connections\n");
                    continue;
                }
                let (b, active) = (backend.clone(), active.clone());
                let a2 = active.clone();
                let spawned = std::thread::Builder::new()
                    .name("paraclick-metrics-conn".into())
                    .spawn(move || {
                        serve(s, &*b, local);
                        active.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    a2.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(Metrics { addr: local })
}

fn respond(s: &mut TcpStream, code: u16, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let allow = if code == 405 { "Allow: GET\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n\
         Cross-Origin-Resource-Policy: same-origin\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}

/// The request's head (up to the empty line), read by the deadline;
/// `Err(status)` if too long, late or closed.
fn read_head(s: &mut TcpStream) -> Result<String, u16> {
    let deadline = Instant::now() + DEADLINE;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if i > MAX_HEAD {
                return Err(431);
            }
            buf.truncate(i);
            return String::from_utf8(buf).map_err(|_| 400);
        }
        if buf.len() > MAX_HEAD {
            return Err(431);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(408);
        }
        s.set_read_timeout(Some(left)).map_err(|_| 400u16)?;
        match s.read(&mut chunk) {
            Ok(0) => return Err(400),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(408),
        }
    }
}

fn serve(mut s: TcpStream, b: &dyn Backend, local: SocketAddr) {
    let _ = s.set_write_timeout(Some(DEADLINE));
    let text = "text/plain";
    let head = match read_head(&mut s) {
        Ok(h) => h,
        Err(code) => {
            let _ = respond(&mut s, code, text, b"bad request\n");
            return;
        }
    };
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let hosts: Vec<&str> = headers
        .iter()
        .filter(|(k, _)| k == "host")
        .map(|(_, v)| v.as_str())
        .collect();
    if hosts.len() != 1 || !crate::web::host_ok(local, hosts[0]) {
        let _ = respond(&mut s, 421, text, b"misdirected request\n");
        return;
    }
    // No body is read: a request that has one is refused, not left
    // half-read.
    let body = headers
        .iter()
        .any(|(k, v)| (k == "content-length" && v != "0") || k == "transfer-encoding");
    let path = target.split('?').next().unwrap_or("");
    let r = match (method, path) {
        (_, "/metrics") if method != "GET" => respond(&mut s, 405, text, b"method not allowed\n"),
        (_, "/metrics") if body => respond(&mut s, 400, text, b"a scrape has no body\n"),
        (_, "/metrics") => respond(&mut s, 200, CONTENT_TYPE, render(b).as_bytes()),
        _ => respond(
            &mut s,
            404,
            text,
            b"not found; the metrics are at /metrics\n",
        ),
    };
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::control::CsError;
    use std::collections::HashMap;

    /// Handlers with fixed values.
    struct Fake(HashMap<String, String>);

    impl Backend for Fake {
        fn read(&self, h: &str, _: Option<&str>) -> Result<String, CsError> {
            self.0
                .get(h)
                .cloned()
                .ok_or_else(|| CsError::new(511, "no handler"))
        }
        fn write(&self, _: &str, _: &str) -> Result<(), CsError> {
            panic!("metrics wrote a handler")
        }
        fn check(&self, h: &str, _: bool) -> Result<(), CsError> {
            self.read(h, None).map(|_| ())
        }
    }

    fn fake() -> Fake {
        let mut m = HashMap::new();
        let mut set = |k: &str, v: &str| {
            m.insert(k.to_string(), v.to_string());
        };
        set("list", "3\nc\nq\nchk\n");
        set("c.class", "Counter\n");
        set(
            "c.handlers",
            "count\tr\nbyte_count\tr\nreset\tw\ndrop_reasons\tr\n",
        );
        set("c.count", "17\n");
        set("c.byte_count", "1088\n");
        set("c.drop_reasons", "");
        set("q.class", "Queue\n");
        set(
            "q.handlers",
            "length\tr\ncapacity\trw\ndrops\tr\ndrop_reasons\tr\n",
        );
        set("q.length", "3\n");
        set("q.capacity", "200\n");
        set("q.drops", "5\n");
        set("q.drop_reasons", "overflow 5\n");
        set("chk.class", "CheckIPHeader\n");
        set("chk.handlers", "drops\tr\ndrop_reasons\tr\n");
        set("chk.drop_reasons", "bad checksum 2\nbad version 1\n");
        set(
            "threads",
            "thread 0 100 40 5000\nthread 1 10 10 0\ntask c 0 0 60\n",
        );
        Fake(m)
    }

    #[test]
    fn handlers_become_labelled_series() {
        let t = render(&fake());
        for want in [
            "# TYPE paraclick_element_packets counter",
            "paraclick_element_packets_total{element=\"c\",class=\"Counter\"} 17",
            "paraclick_element_bytes_total{element=\"c\",class=\"Counter\"} 1088",
            "paraclick_element_drops_total{element=\"q\",class=\"Queue\",reason=\"overflow\"} 5",
            "paraclick_element_drops_total{element=\"chk\",class=\"CheckIPHeader\",reason=\"bad checksum\"} 2",
            "paraclick_element_drops_total{element=\"chk\",class=\"CheckIPHeader\",reason=\"bad version\"} 1",
            "paraclick_queue_length{element=\"q\",class=\"Queue\"} 3",
            "paraclick_queue_capacity{element=\"q\",class=\"Queue\"} 200",
            "paraclick_queue_drops_total{element=\"q\",class=\"Queue\"} 5",
            "paraclick_thread_polls_total{thread=\"0\"} 100",
            "paraclick_thread_idle_polls_total{thread=\"1\"} 10",
            "paraclick_thread_busy_cycles_total{thread=\"0\"} 5000",
            "paraclick_elements 3",
            "# EOF",
        ] {
            assert!(t.lines().any(|l| l == want), "{want}:\n{t}");
        }
        // Not a queue, no count: no such series for it.
        assert!(!t.contains("queue_length{element=\"c\""), "{t}");
        assert!(!t.contains("packets_total{element=\"q\""), "{t}");
    }

    #[test]
    fn a_substrates_series_are_labelled_with_their_slice() {
        let mut f = fake();
        let mut set = |k: &str, v: &str| {
            f.0.insert(k.to_string(), v.to_string());
        };
        set("list", "3\nc\ns1/q\ns2/chk\n");
        for (k, v) in [("q", "s1/q"), ("chk", "s2/chk")] {
            for h in [
                "class",
                "handlers",
                "length",
                "capacity",
                "drops",
                "drop_reasons",
            ] {
                if let Some(x) = fake().0.get(&format!("{k}.{h}")) {
                    set(&format!("{v}.{h}"), x);
                }
            }
        }
        set(
            "slices",
            "slice s1 state running\n  cores 1 threads 0 cpu_used 0.100 sharing strict\n  \
             rx_packets 40 rx_bytes 2400 tx_packets 35 tx_bytes 2100 drops 5\n  metalink m\n\
             slice s2 state running\n  cores 1 threads 1 cpu_used 0.000 sharing strict\n  \
             rx_packets 3 rx_bytes 180 tx_packets 0 tx_bytes 0 drops 3\n",
        );
        let t = render(&f);
        for want in [
            "paraclick_element_packets_total{element=\"c\",class=\"Counter\"} 17",
            "paraclick_queue_length{slice=\"s1\",element=\"s1/q\",class=\"Queue\"} 3",
            "paraclick_element_drops_total{slice=\"s1\",element=\"s1/q\",class=\"Queue\",reason=\"overflow\"} 5",
            "paraclick_element_drops_total{slice=\"s2\",element=\"s2/chk\",class=\"CheckIPHeader\",reason=\"bad checksum\"} 2",
            "paraclick_slice_rx_packets_total{slice=\"s1\"} 40",
            "paraclick_slice_tx_bytes_total{slice=\"s1\"} 2100",
            "paraclick_slice_drops_total{slice=\"s1\"} 5",
            "paraclick_slice_drops_total{slice=\"s2\"} 3",
            "paraclick_slice_rx_bytes_total{slice=\"s2\"} 180",
        ] {
            assert!(t.lines().any(|l| l == want), "{want}:\n{t}");
        }
        // Without slices: no slice label, no slice series.
        let plain = render(&fake());
        assert!(!plain.contains("slice"), "{plain}");
    }

    #[test]
    fn addresses_other_than_loopback_need_allowing() {
        assert_eq!(addr("9100", false).unwrap().to_string(), "127.0.0.1:9100");
        assert_eq!(addr("[::1]:9100", false).unwrap().to_string(), "[::1]:9100");
        let e = addr("0.0.0.0:9100", false).unwrap_err();
        assert!(e.contains("--metrics-any-address"), "{e}");
        assert!(addr("192.0.2.1:9100", false).is_err());
        assert_eq!(
            addr("0.0.0.0:9100", true).unwrap().to_string(),
            "0.0.0.0:9100"
        );
        assert!(addr("x", true).is_err());
    }

    fn raw(port: u16, req: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(req);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn status(r: &str) -> u16 {
        r.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
    }

    #[test]
    fn only_a_get_of_metrics_is_answered() {
        let m = start("127.0.0.1:0".parse().unwrap(), Arc::new(fake())).unwrap();
        let port = m.addr.port();
        let get = |extra: &str| {
            raw(
                port,
                format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n")
                    .as_bytes(),
            )
        };
        let r = get("");
        assert_eq!(status(&r), 200, "{r}");
        assert!(r.contains(&format!("Content-Type: {CONTENT_TYPE}")), "{r}");
        assert!(r.contains("paraclick_element_packets_total"), "{r}");
        for method in ["POST", "PUT", "DELETE", "OPTIONS", "HEAD"] {
            let r = raw(
                port,
                format!(
                    "{method} /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
                     Content-Length: 2\r\n\r\nxx"
                )
                .as_bytes(),
            );
            assert_eq!(status(&r), 405, "{method}: {r}");
            assert!(r.contains("Allow: GET\r\n"), "{r}");
        }
        assert_eq!(status(&get("Content-Length: 5\r\n")), 400);
        assert_eq!(status(&get("Transfer-Encoding: chunked\r\n")), 400);
        let r = raw(
            port,
            format!("GET /api/write?h=stop HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
        );
        assert_eq!(status(&r), 404, "{r}");
        // A DNS-rebinding page's name, or none: nothing.
        let r = raw(
            port,
            format!("GET /metrics HTTP/1.1\r\nHost: evil.example:{port}\r\n\r\n").as_bytes(),
        );
        assert_eq!(status(&r), 421, "{r}");
        assert!(!r.contains("paraclick_"), "{r}");
        assert_eq!(status(&raw(port, b"GET /metrics HTTP/1.0\r\n\r\n")), 421);
        // A head beyond 8 KiB.
        let big = format!(
            "GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "a".repeat(MAX_HEAD + 10)
        );
        assert_eq!(status(&raw(port, big.as_bytes())), 431);
    }

    #[test]
    fn connections_beyond_the_bound_are_turned_away() {
        let m = start("127.0.0.1:0".parse().unwrap(), Arc::new(fake())).unwrap();
        let port = m.addr.port();
        // Every slot held by a client that sends nothing.
        let held: Vec<TcpStream> = (0..MAX_CONNS)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let r = raw(
            port,
            format!("GET /metrics HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes(),
        );
        assert_eq!(status(&r), 503, "{r}");
        drop(held);
        // Freed: served again.
        let t0 = Instant::now();
        loop {
            let r = raw(
                port,
                format!("GET /metrics HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes(),
            );
            if status(&r) == 200 {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "{r}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
