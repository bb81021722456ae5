//! # AggregateCounter
//!
//! AggregateCounter([keywords BYTES, IP_BYTES, MULTIPACKET, EXTRA_LENGTH, AGGREGATE_STOP, AGGREGATE_FREEZE, AGGREGATE_CALL, COUNT_STOP, COUNT_FREEZE, COUNT_CALL, BANNER])
//!
//! Counts packets per aggregate annotation.
//!
//! Ports: 1 or 2 inputs, 1 or 2 outputs. Processing: agnostic.
//!
//! Keeps a count of packets (or bytes) for each aggregate annotation value
//! it sees. The `write_file`, `write_text_file` and `write_ip_file`
//! handlers dump the counts.
//!
//! A frozen AggregateCounter only updates existing counters; it creates
//! none for aggregates it has not seen. The `freeze` handler and the
//! AGGREGATE_FREEZE and COUNT_FREEZE keywords freeze it. The optional
//! second input is always frozen. With two outputs, packets that were
//! counted leave on output 0 and the others (not counted because frozen
//! or inactive) on output 1; with one output every packet leaves on it.
//! Pulls on an output pull from input 0.
//!
//! Keywords:
//! - `BYTES` (boolean, default false): count bytes, not packets.
//! - `IP_BYTES` (boolean, default false): do not count bytes before the
//!   network header (the link header).
//! - `MULTIPACKET` (boolean, default true): when counting packets, add the
//!   packet count annotation (1 plus the extra packets annotation, which
//!   FromIPSummaryDump sets from its `count` field).
//! - `EXTRA_LENGTH` (boolean, default true): when counting bytes, add the
//!   extra length annotation (FromDump sets it for truncated captures).
//! - `AGGREGATE_STOP` (unsigned N): stop the router once N distinct
//!   aggregates have been seen.
//! - `AGGREGATE_FREEZE` (unsigned N): freeze once N aggregates are seen.
//! - `AGGREGATE_CALL` (`N HANDLER [VALUE]`): call the write handler once N
//!   aggregates are seen. The three AGGREGATE keywords exclude each other.
//! - `COUNT_STOP`, `COUNT_FREEZE`, `COUNT_CALL`: the same, once the total
//!   count reaches N. The three COUNT keywords exclude each other.
//! - `BANNER` (string): written at the head of every output file.
//!
//! Output files start with the line `!IPAggregate 1.0`, the banner (if
//! any) and `!num_nonzero N` (the number of aggregates).
//!
//! Handlers:
//! - `write_file` (write): a file name, or `-` for standard output. Writes
//!   the header lines, then `!packed_le` or `!packed_be` (this machine's
//!   byte order), then one 8-byte record per aggregate: the aggregate
//!   then the count, 32-bit integers in that byte order (counts above
//!   2^32-1 are written as 2^32-1).
//! - `write_text_file` (write): the header lines, then one line per
//!   aggregate: the aggregate in decimal, a space, the count in decimal.
//! - `write_ip_file` (write): as `write_text_file`, with aggregates printed
//!   as IP addresses.
//! - `freeze` (read/write): the frozen state (starts false).
//! - `active` (read/write): when false, nothing is counted (starts true).
//! - `stop` (write): set `active` false and stop the router.
//! - `counts_pdf` (write): replace the counters by their distribution:
//!   each old count becomes an aggregate whose count is how many old
//!   aggregates had it.
//! - `banner` (read/write), `aggregate_call` (read/write), `count_call`
//!   (read/write): those settings.
//! - `nagg` (read): the number of aggregates seen.
//! - `clear` (write): forget every counter.
//!
//! Aggregates are in host byte order: the aggregate for IP address
//! 128.0.0.0 is 2147483648.
//!
//! Example:
//!
//!     FromIPSummaryDump(-, STOP true) -> AggregateIP(ip dst) -> ac :: AggregateCounter -> Discard;
//!     DriverManager(wait_pause, write ac.write_text_file -);

use super::aggregate;
use paraclick_packet::Packet;
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Then {
    Stop,
    Freeze,
    Call(String, String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Trigger {
    n: u64,
    then: Then,
    fired: bool,
}

impl Trigger {
    fn describe(&self) -> String {
        match &self.then {
            Then::Call(h, v) if v.is_empty() => format!("{} {h}", self.n),
            Then::Call(h, v) => format!("{} {h} {v}", self.n),
            _ => String::new(),
        }
    }
}

fn parse_call(s: &str) -> Result<(u64, String, String), String> {
    let s = s.trim().trim_matches('"').trim();
    let mut it = s.splitn(3, char::is_whitespace);
    let n = it
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| format!("expected 'N HANDLER [VALUE]', not '{s}'"))?;
    let h = it
        .next()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("expected 'N HANDLER [VALUE]', not '{s}'"))?;
    Ok((n, h.to_string(), it.next().unwrap_or("").trim().to_string()))
}

struct State {
    counts: BTreeMap<u32, u64>,
    total: u64,
    agg_trigger: Option<Trigger>,
    count_trigger: Option<Trigger>,
    banner: String,
}

pub struct AggregateCounter {
    bytes: bool,
    ip_bytes: bool,
    multipacket: bool,
    extra_length: bool,
    frozen: AtomicBool,
    active: AtomicBool,
    st: Mutex<State>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("AggregateCounter", "1-2/1-2", "a", make)
        .shared("one table of counts per aggregate for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateCounter, String> {
    let mut a = cx.args();
    let bytes = a.read("BYTES").unwrap_or(false);
    let ip_bytes = a.read("IP_BYTES").unwrap_or(false);
    let multipacket = a.read("MULTIPACKET").unwrap_or(true);
    let extra_length = a.read("EXTRA_LENGTH").unwrap_or(true);
    let agg_stop: Option<u64> = a.read("AGGREGATE_STOP");
    let agg_freeze: Option<u64> = a.read("AGGREGATE_FREEZE");
    let agg_call: Option<Raw> = a.read("AGGREGATE_CALL");
    let count_stop: Option<u64> = a.read("COUNT_STOP");
    let count_freeze: Option<u64> = a.read("COUNT_FREEZE");
    let count_call: Option<Raw> = a.read("COUNT_CALL");
    let banner: Option<String> = a.read("BANNER");
    a.complete()?;
    let trigger = |what: &str,
                   stop: Option<u64>,
                   freeze: Option<u64>,
                   call: Option<Raw>|
     -> Result<Option<Trigger>, String> {
        let n = stop.is_some() as u8 + freeze.is_some() as u8 + call.is_some() as u8;
        if n > 1 {
            return Err(format!(
                "{what}_STOP, {what}_FREEZE and {what}_CALL are mutually exclusive"
            ));
        }
        let t = |n, then| {
            Some(Trigger {
                n,
                then,
                fired: false,
            })
        };
        Ok(match (stop, freeze, call) {
            (Some(n), _, _) => t(n, Then::Stop),
            (_, Some(n), _) => t(n, Then::Freeze),
            (_, _, Some(Raw(c))) => {
                let (n, h, v) = parse_call(&c).map_err(|e| format!("{what}_CALL: {e}"))?;
                t(n, Then::Call(h, v))
            }
            _ => None,
        })
    };
    let agg_trigger = trigger("AGGREGATE", agg_stop, agg_freeze, agg_call)?;
    let count_trigger = trigger("COUNT", count_stop, count_freeze, count_call)?;
    Ok(AggregateCounter {
        bytes,
        ip_bytes,
        multipacket,
        extra_length,
        frozen: AtomicBool::new(false),
        active: AtomicBool::new(true),
        st: Mutex::new(State {
            counts: BTreeMap::new(),
            total: 0,
            agg_trigger,
            count_trigger,
            banner: banner.unwrap_or_default(),
        }),
    })
}

impl AggregateCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn amount(&self, p: &Packet) -> u64 {
        let a = p.anno();
        if self.bytes {
            let mut n = p.len() as u64;
            if self.ip_bytes {
                let off = p.network_header_offset().unwrap_or(0).max(0) as u64;
                n = n.saturating_sub(off);
            }
            if self.extra_length {
                n += u64::from(a.extra_length);
            }
            n
        } else if self.multipacket {
            1 + u64::from(a.extra_packets)
        } else {
            1
        }
    }

    /// Counts `p`; whether it was counted, and what to do afterwards.
    fn count(&self, p: &Packet, frozen_input: bool, todo: &mut Vec<Then>) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            return false;
        }
        let frozen = frozen_input || self.frozen.load(Ordering::Relaxed);
        let amount = self.amount(p);
        let agg = aggregate(p);
        let mut st = self.lock();
        match st.counts.get_mut(&agg) {
            Some(c) => *c += amount,
            None if frozen => return false,
            None => {
                st.counts.insert(agg, amount);
            }
        }
        st.total += amount;
        let (nagg, total) = (st.counts.len() as u64, st.total);
        let st = &mut *st;
        for (t, v) in [
            (st.agg_trigger.as_mut(), nagg),
            (st.count_trigger.as_mut(), total),
        ] {
            if let Some(t) = t {
                if !t.fired && v >= t.n {
                    t.fired = true;
                    todo.push(t.then.clone());
                }
            }
        }
        true
    }

    fn carry_out(&self, todo: Vec<Then>, hx: &HandlerCx<'_>, stop: &mut bool) {
        for t in todo {
            match t {
                Then::Stop => *stop = true,
                Then::Freeze => self.frozen.store(true, Ordering::Relaxed),
                Then::Call(h, v) => {
                    let h = if h.contains('.') {
                        h
                    } else {
                        format!("{}.{h}", hx.element_name())
                    };
                    let _ = hx.write(&h, &v);
                }
            }
        }
    }

    fn header(&self, st: &State) -> String {
        let mut s = String::from("!IPAggregate 1.0\n");
        if !st.banner.is_empty() {
            s.push_str(&st.banner);
            if !st.banner.ends_with('\n') {
                s.push('\n');
            }
        }
        s.push_str(&format!("!num_nonzero {}\n", st.counts.len()));
        s
    }

    fn output(&self, file: &str, data: &[u8]) -> Result<(), String> {
        let file = file.trim();
        if file.is_empty() {
            return Err("expected a file name, or '-'".into());
        }
        if file == "-" {
            let mut o = std::io::stdout().lock();
            o.write_all(data).and_then(|_| o.flush())
        } else {
            std::fs::write(file, data)
        }
        .map_err(|e| format!("{file}: {e}"))
    }

    fn write_text(&self, file: &str, ip: bool) -> Result<(), String> {
        let st = self.lock();
        let mut s = self.header(&st);
        for (a, c) in &st.counts {
            if ip {
                s.push_str(&format!("{} {c}\n", Ipv4Addr::from(*a)));
            } else {
                s.push_str(&format!("{a} {c}\n"));
            }
        }
        drop(st);
        self.output(file, s.as_bytes())
    }

    fn write_binary(&self, file: &str) -> Result<(), String> {
        let st = self.lock();
        let mut d = self.header(&st).into_bytes();
        let le = cfg!(target_endian = "little");
        d.extend_from_slice(if le { b"!packed_le\n" } else { b"!packed_be\n" });
        for (a, c) in &st.counts {
            let c = u32::try_from(*c).unwrap_or(u32::MAX);
            d.extend_from_slice(&a.to_ne_bytes());
            d.extend_from_slice(&c.to_ne_bytes());
        }
        drop(st);
        self.output(file, &d)
    }

    fn set_call(&self, which: bool, v: &str) -> Result<(), String> {
        let t = if v.trim().is_empty() {
            None
        } else {
            let (n, h, val) = parse_call(v)?;
            Some(Trigger {
                n,
                then: Then::Call(h, val),
                fired: false,
            })
        };
        let mut st = self.lock();
        if which {
            st.agg_trigger = t;
        } else {
            st.count_trigger = t;
        }
        Ok(())
    }

    /// Counts a batch from `port`; returns (counted, not counted).
    fn process(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) -> (Vec<Packet>, Vec<Packet>) {
        let mut todo = Vec::new();
        let mut yes = Vec::with_capacity(batch.len());
        let mut no = Vec::new();
        let mut stop = false;
        for p in batch {
            if self.count(&p, port == 1, &mut todo) {
                yes.push(p);
            } else {
                no.push(p);
            }
            // A trigger takes effect before the next packet is counted.
            if !todo.is_empty() {
                self.carry_out(std::mem::take(&mut todo), &cx.handler_cx(), &mut stop);
            }
        }
        if stop {
            cx.request_stop();
        }
        (yes, no)
    }
}

impl Element for AggregateCounter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("write_file", |e, v, _| e.write_binary(v)),
        Handler::write("write_text_file", |e, v, _| e.write_text(v, false)),
        Handler::write("write_ip_file", |e, v, _| e.write_text(v, true)),
        Handler::rw(
            "freeze",
            |e, _| e.frozen.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.frozen.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::write("stop", |e, _, hx| {
            e.active.store(false, Ordering::Relaxed);
            hx.request_stop();
            Ok(())
        }),
        Handler::write("counts_pdf", |e, _, _| {
            let mut st = e.lock();
            let mut pdf: BTreeMap<u32, u64> = BTreeMap::new();
            for &c in st.counts.values() {
                *pdf.entry(u32::try_from(c).unwrap_or(u32::MAX)).or_default() += 1;
            }
            st.total = pdf.values().sum();
            st.counts = pdf;
            Ok(())
        }),
        Handler::write("clear", |e, _, _| {
            let mut st = e.lock();
            st.counts.clear();
            st.total = 0;
            Ok(())
        }),
        Handler::rw(
            "banner",
            |e, _| e.lock().banner.clone(),
            |e, v, _| {
                e.lock().banner = v.to_string();
                Ok(())
            },
        ),
        Handler::rw(
            "aggregate_call",
            |e, _| {
                e.lock()
                    .agg_trigger
                    .as_ref()
                    .map(Trigger::describe)
                    .unwrap_or_default()
            },
            |e, v, _| e.set_call(true, v),
        ),
        Handler::rw(
            "count_call",
            |e, _| {
                e.lock()
                    .count_trigger
                    .as_ref()
                    .map(Trigger::describe)
                    .unwrap_or_default()
            },
            |e, v, _| e.set_call(false, v),
        ),
        Handler::read("nagg", |e, _| e.lock().counts.len().to_string()),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let (yes, no) = self.process(cx, port, batch);
        if cx.noutputs() > 1 {
            if !yes.is_empty() {
                cx.push(0, Batch::from(yes));
            }
            if !no.is_empty() {
                cx.push(1, Batch::from(no));
            }
        } else {
            let mut all = yes;
            all.extend(no);
            if !all.is_empty() {
                cx.push(0, Batch::from(all));
            }
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(0, max)?;
        let (mut yes, no) = self.process(cx, 0, b);
        yes.extend(no);
        (!yes.is_empty()).then(|| Batch::from(yes))
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use crate::test_kit::*;
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::Harness;

    fn agg(a: u32, len: usize) -> Packet {
        let mut p = pkt(&vec![0u8; len]);
        set_aggregate(&mut p, a);
        p
    }

    fn text(h: &Harness, handler: &str) -> String {
        let dir = tempfile_dir();
        let f = dir.join("out");
        h.write(handler, f.to_str().unwrap()).unwrap();
        let t = std::fs::read_to_string(&f).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        t
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "paraclick-aggc-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn counts_packets_and_bytes_per_aggregate() {
        let h = harness("AggregateCounter(BANNER \"!hello\")", 1);
        let mut multi = agg(7, 10);
        multi.anno_mut().extra_packets = 2;
        h.push(0, vec![agg(7, 10), agg(0x80000000, 20), multi]);
        assert_eq!(h.output(0).len(), 3);
        assert_eq!(h.read("nagg").unwrap(), "2");
        assert_eq!(
            text(&h, "write_text_file"),
            "!IPAggregate 1.0\n!hello\n!num_nonzero 2\n7 4\n2147483648 1\n"
        );
        assert!(text(&h, "write_ip_file").ends_with("0.0.0.7 4\n128.0.0.0 1\n"));
        let h = harness("AggregateCounter(BYTES true)", 1);
        let mut e = agg(1, 10);
        e.anno_mut().extra_length = 5;
        h.push(0, vec![e, agg(1, 20)]);
        assert!(text(&h, "write_text_file").ends_with("1 35\n"));
    }

    #[test]
    fn binary_file_format() {
        let h = harness("AggregateCounter", 1);
        h.push(0, vec![agg(3, 1), agg(3, 1), agg(9, 1)]);
        let dir = tempfile_dir();
        let f = dir.join("bin");
        h.write("write_file", f.to_str().unwrap()).unwrap();
        let d = std::fs::read(&f).unwrap();
        let marker = if cfg!(target_endian = "little") {
            "!packed_le\n"
        } else {
            "!packed_be\n"
        };
        let head = format!("!IPAggregate 1.0\n!num_nonzero 2\n{marker}");
        assert!(d.starts_with(head.as_bytes()));
        let rec = &d[head.len()..];
        assert_eq!(rec.len(), 16);
        let w = |i: usize| u32::from_ne_bytes(rec[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!((w(0), w(1), w(2), w(3)), (3, 2, 9, 1));
        assert_err(
            h.write("write_file", "/nonexistent-dir/x"),
            "e.write_file: /nonexistent-dir/x: No such file or directory (os error 2)",
        );
    }

    #[test]
    fn freeze_second_input_and_two_outputs() {
        let h = Harness::new(&reg(), "AggregateCounter; Idle -> [0]e; Idle -> [1]e", 2).unwrap();
        h.push(0, vec![agg(1, 1)]);
        // Input 1 is frozen: an existing aggregate counts, a new one does not.
        h.push(1, vec![agg(1, 1), agg(2, 1)]);
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.output(1).len(), 1);
        h.write("freeze", "true").unwrap();
        h.push(0, vec![agg(3, 1)]);
        assert_eq!(h.output(1).len(), 1);
        assert_eq!(h.read("nagg").unwrap(), "1");
        h.write("active", "false").unwrap();
        h.push(0, vec![agg(1, 1)]);
        assert_eq!(h.output(1).len(), 1);
        h.write("counts_pdf", "").unwrap();
        // Aggregate 1 had count 2: the pdf has one aggregate "2" with count 1.
        assert!(text(&h, "write_text_file").ends_with("2 1\n"));
    }

    #[test]
    fn triggers() {
        let h = harness("AggregateCounter(AGGREGATE_FREEZE 2)", 1);
        h.push(0, vec![agg(1, 1), agg(2, 1), agg(3, 1)]);
        assert_eq!(h.read("nagg").unwrap(), "2");
        assert_eq!(h.read("freeze").unwrap(), "true");
        let h = harness("AggregateCounter(COUNT_CALL 3 freeze true)", 1);
        assert_eq!(h.read("count_call").unwrap(), "3 freeze true");
        h.push(0, vec![agg(1, 1), agg(2, 1), agg(3, 1), agg(4, 1)]);
        assert_eq!(h.read("nagg").unwrap(), "3");
        let h = harness("AggregateCounter(COUNT_STOP 2)", 1);
        h.push(0, vec![agg(1, 1), agg(1, 1)]);
        assert!(!h.router.is_running());
        for (bad, want) in [
            ("AggregateCounter(AGGREGATE_STOP 1, AGGREGATE_FREEZE 1)", "e :: AggregateCounter: AGGREGATE_STOP, AGGREGATE_FREEZE and AGGREGATE_CALL are mutually exclusive"),
            ("AggregateCounter(COUNT_CALL x)", "e :: AggregateCounter: COUNT_CALL: expected 'N HANDLER [VALUE]', not 'x'"),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
