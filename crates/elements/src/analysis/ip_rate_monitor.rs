//! # IPRateMonitor
//!
//! IPRateMonitor(TYPE, RATIO, THRESH [, MEMORY, ANNO])
//!
//! Measures coming and going IP traffic rates.
//!
//! Ports: 1 or 2 inputs, 1 or 2 outputs. Processing: push. A packet
//! leaves on the output of the same number as its input (output 0 if
//! there is only one).
//!
//! Monitors packet or byte rates (per second) from and to addresses. A
//! packet on input 0 counts towards the forward rate of its source
//! address; a packet on input 1 counts towards the reverse rate of its
//! destination address. Rates are kept per /8 first (the address's first
//! byte); when the forward or reverse rate of an address group exceeds
//! THRESH, rates are also kept for the groups one byte longer within it
//! (/16, then /24, then single hosts). Packets need an IP header
//! annotation (CheckIPHeader or MarkIPHeader); others pass uncounted.
//!
//! Rates are exponentially weighted moving averages over 10 ms ticks
//! ("jiffies", 100 a second), each tick's weight 1/16, scaled to a rate
//! per second.
//!
//! Arguments:
//! - `TYPE`: `PACKETS` or `BYTES`: what is counted.
//! - `RATIO` (real, 0 to 1): the chance that a packet updates the rates
//!   (each counted packet then weighs 1/RATIO, so rates stay unbiased).
//! - `THRESH` (integer): the rate above which a group is split, given as
//!   if RATIO were 1.
//! - `MEMORY` (integer, kilobytes, default 0): the most memory the rate
//!   tables may take; at least 100 (smaller values are raised to 100); 0
//!   means no limit. Groups are not split once it is used.
//! - `ANNO` (boolean, default true): accepted for compatibility. Click
//!   stores the rates in packet annotations that paraclick's packets do
//!   not have, so nothing is annotated.
//!
//! Handlers:
//! - `look` (read): the rates. The first line is the number of jiffies
//!   (1/100 s) since the last reset; then one line per address group with
//!   a non-zero rate, depth first: the group (`18.*.*.*`, `18.26.*.*`,
//!   `18.26.4.*`, `18.26.4.24`), a tab, the forward rate, a tab, the
//!   reverse rate (integers per second). Click documents only the first
//!   line; the rest of paraclick's format is its own.
//! - `thresh` (read): THRESH.
//! - `reset` (write): forgets every rate and split; the jiffies restart.
//! - `anno_level` (write): `ADDR LEVEL WHEN`: stop splitting groups of ADDR
//!   below LEVEL (0 to 3: 0 keeps only ADDR's /8, 2 stops at ADDR's /24)
//!   for the next WHEN seconds. Groups already split stay split.
//!
//! Example:
//!
//!     IPRateMonitor(PACKETS, 0.5, 256, 600);
//!
//! monitors packet rates in at most 600 KB; when the rate of a group (say
//! 18.26.*.*) exceeds 256 packets per second, it keeps rates for the
//! groups within it (18.26.4.* ...).

use crate::ip::fixed_ip_header_ref;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Weight of one jiffy's count in the moving average.
const WEIGHT: f64 = 1.0 / 16.0;

/// An exponentially weighted moving average of counts per jiffy, kept as
/// a rate per second.
#[derive(Clone, Copy, Default)]
struct Ewma {
    rate: f64,
    jiffy: u64,
}

impl Ewma {
    fn decay_to(&mut self, now: u64) {
        if now > self.jiffy {
            let n = (now - self.jiffy).min(10_000) as i32;
            self.rate *= (1.0 - WEIGHT).powi(n);
            self.jiffy = now;
        }
    }

    fn add(&mut self, now: u64, amount: f64) {
        self.decay_to(now);
        self.rate += amount * WEIGHT * 100.0;
    }

    fn at(&self, now: u64) -> f64 {
        let mut e = *self;
        e.decay_to(now);
        e.rate
    }
}

#[derive(Default)]
struct Entry {
    fwd: Ewma,
    rev: Ewma,
    child: Option<Box<Table>>,
}

struct Table {
    entries: Vec<Entry>,
}

impl Table {
    fn new() -> Box<Table> {
        Box::new(Table {
            entries: (0..256).map(|_| Entry::default()).collect(),
        })
    }

    /// Bytes one table takes (for MEMORY).
    fn size() -> usize {
        std::mem::size_of::<Table>() + 256 * std::mem::size_of::<Entry>()
    }
}

struct State {
    root: Box<Table>,
    tables: usize,
    reset_at: Option<Instant>,
    /// (address, level, until): no split of ADDR's groups below LEVEL.
    holds: Vec<(u32, u8, Instant)>,
    rng: u64,
}

pub struct IPRateMonitor {
    bytes: bool,
    ratio: f64,
    thresh: u32,
    /// Most tables (MEMORY), or `usize::MAX`.
    max_tables: usize,
    state: Mutex<State>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPRateMonitor", "1-2/1-2", "h/h", make)
        .shared("one rate table for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPRateMonitor, String> {
    let mut a = cx.args();
    let ty = a.read_mp::<String>("TYPE");
    let ratio = a.read_mp::<f64>("RATIO");
    let thresh = a.read_mp::<u32>("THRESH");
    let memory = a.read_p::<usize>("MEMORY").unwrap_or(0);
    let _anno = a.read_p::<bool>("ANNO").unwrap_or(true);
    a.complete()?;
    let bytes = match ty.trim() {
        "PACKETS" => false,
        "BYTES" => true,
        other => return Err(format!("TYPE: expected PACKETS or BYTES, not '{other}'")),
    };
    if !(ratio > 0.0 && ratio <= 1.0) {
        return Err(format!("RATIO: must be above 0 and at most 1, not {ratio}"));
    }
    let max_tables = match memory {
        0 => usize::MAX,
        kb => (kb.max(100) * 1024 / Table::size()).max(1),
    };
    Ok(IPRateMonitor {
        bytes,
        ratio,
        thresh,
        max_tables,
        state: Mutex::new(State {
            root: Table::new(),
            tables: 1,
            reset_at: None,
            holds: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15,
        }),
    })
}

impl IPRateMonitor {
    fn jiffies(st: &State, now: Instant) -> u64 {
        st.reset_at.map_or(0, |r| {
            (now.saturating_duration_since(r).as_millis() / 10) as u64
        })
    }

    /// Counts `amount` for `addr`, forward (input 0) or reverse.
    fn count(&self, st: &mut State, now: Instant, addr: u32, fwd: bool, amount: f64) {
        if st.reset_at.is_none() {
            st.reset_at = Some(now);
        }
        if self.ratio < 1.0 {
            // xorshift64: the sampling needs no quality beyond that.
            st.rng ^= st.rng << 13;
            st.rng ^= st.rng >> 7;
            st.rng ^= st.rng << 17;
            if (st.rng >> 11) as f64 / (1u64 << 53) as f64 >= self.ratio {
                return;
            }
        }
        let amount = amount / self.ratio;
        let j = Self::jiffies(st, now);
        st.holds.retain(|h| h.2 > now);
        let holds = std::mem::take(&mut st.holds);
        let mut tables = st.tables;
        let mut t: &mut Table = &mut st.root;
        for level in 0..4u8 {
            let byte = (addr >> (24 - 8 * u32::from(level))) as u8;
            let e = &mut t.entries[usize::from(byte)];
            let ewma = if fwd { &mut e.fwd } else { &mut e.rev };
            ewma.add(j, amount);
            if level == 3 {
                break;
            }
            if e.child.is_none() {
                let hot = e.fwd.at(j).max(e.rev.at(j)) > f64::from(self.thresh);
                let held = holds
                    .iter()
                    .any(|&(a, l, _)| level >= l && prefix(a, level) == prefix(addr, level));
                if !hot || held || tables >= self.max_tables {
                    break;
                }
                e.child = Some(Table::new());
                tables += 1;
            }
            match e.child.as_deref_mut() {
                Some(c) => t = c,
                None => break,
            }
        }
        st.tables = tables;
        st.holds = holds;
    }

    fn look(&self, now: Instant) -> String {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let j = Self::jiffies(&st, now);
        let mut s = format!("{j}\n");
        fn walk(t: &Table, level: u32, base: u32, j: u64, s: &mut String) {
            for (i, e) in t.entries.iter().enumerate() {
                let addr = base | ((i as u32) << (24 - 8 * level));
                let (f, r) = (e.fwd.at(j), e.rev.at(j));
                if f < 0.5 && r < 0.5 && e.child.is_none() {
                    continue;
                }
                let o = Ipv4Addr::from(addr).octets();
                let group: Vec<String> = (0..4)
                    .map(|k| {
                        if k <= level as usize {
                            o[k].to_string()
                        } else {
                            "*".into()
                        }
                    })
                    .collect();
                let _ = writeln!(s, "{}\t{}\t{}", group.join("."), f.round(), r.round());
                if let Some(c) = &e.child {
                    walk(c, level + 1, addr, j, s);
                }
            }
        }
        walk(&st.root, 0, 0, j, &mut s);
        s
    }
}

/// The first `level + 1` bytes of `a`.
fn prefix(a: u32, level: u8) -> u32 {
    a & (u32::MAX << (24 - 8 * u32::from(level)))
}

impl Element for IPRateMonitor {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("look", |e, hx| e.look(hx.now())),
        Handler::read("thresh", |e, _| e.thresh.to_string()),
        Handler::write("reset", |e, _, hx| {
            let mut st = e.state.lock().unwrap_or_else(|e| e.into_inner());
            st.root = Table::new();
            st.tables = 1;
            st.reset_at = Some(hx.now());
            Ok(())
        }),
        Handler::write("anno_level", |e, v, hx| {
            let w: Vec<&str> = v.split_whitespace().collect();
            let [a, l, t] = w[..] else {
                return Err("expected 'ADDR LEVEL WHEN'".into());
            };
            let addr: Ipv4Addr = hx.arg(a)?;
            let level: u8 = hx.arg(l)?;
            if level > 3 {
                return Err(format!("LEVEL must be 0 to 3, not {level}"));
            }
            // A time argument: 1e300 panicked in Duration::from_secs_f64.
            let when: Duration = hx
                .arg(t)
                .map_err(|e| format!("WHEN must be a number of seconds ({e})"))?;
            let until = hx.now() + when;
            let mut st = e.state.lock().unwrap_or_else(|e| e.into_inner());
            st.holds.push((u32::from(addr), level, until));
            Ok(())
        }),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let now = cx.now();
        let fwd = port == 0;
        {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            for p in batch.iter() {
                let Some(h) = fixed_ip_header_ref(p) else {
                    continue;
                };
                let addr = if fwd { h.src_addr() } else { h.dst_addr() };
                let amount = if self.bytes { p.len() as f64 } else { 1.0 };
                self.count(&mut st, now, u32::from(addr), fwd, amount);
            }
        }
        let out = port.min(cx.noutputs().saturating_sub(1));
        cx.push(out, batch);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn from(src: &str, dst: &str, n: usize) -> Vec<Packet> {
        (0..n)
            .map(|_| {
                let d = Ip::new(src, dst, 17).payload(&[0; 12]).bytes();
                let mut p = pkt(&d);
                p.set_network_header(0, 20);
                p
            })
            .collect()
    }

    /// The forward and reverse rates of a `look` line.
    fn rates(line: &str) -> (f64, f64) {
        let w: Vec<f64> = line
            .split('\t')
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        (w[0], w[1])
    }

    fn groups(look: &str) -> Vec<String> {
        look.lines()
            .skip(1)
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn busy_groups_split_down_to_hosts() {
        let h = harness_io("IPRateMonitor(PACKETS, 1, 100)", 2, 2);
        h.push(0, from("18.26.4.24", "1.1.1.1", 50));
        h.push(0, from("30.0.0.1", "1.1.1.1", 1));
        h.push(1, from("1.1.1.1", "30.0.0.1", 1));
        let look = h.read("look").unwrap();
        let g = groups(&look);
        assert_eq!(
            g,
            [
                "18.*.*.*",
                "18.26.*.*",
                "18.26.4.*",
                "18.26.4.24",
                "30.*.*.*"
            ],
            "{look}"
        );
        // 30.*: one packet forward, one reverse, each weighing 100/16.
        let l30 = look.lines().find(|l| l.starts_with("30.")).unwrap();
        let (f, r) = rates(l30);
        assert!(
            (4.0..=6.25).contains(&f) && (4.0..=6.25).contains(&r),
            "{l30}"
        );
        assert_eq!(h.output(0).len(), 51);
        assert_eq!(h.output(1).len(), 1);
        assert_eq!(h.read("thresh").unwrap(), "100");
        h.write("reset", "").unwrap();
        let look = h.read("look").unwrap();
        assert!(groups(&look).is_empty(), "{look}");
    }

    #[test]
    fn byte_rates_and_holds() {
        let h = harness("IPRateMonitor(BYTES, 1, 1000)", 1);
        h.write("anno_level", "18.26.0.0 1 100").unwrap();
        h.push(0, from("18.26.4.24", "1.1.1.1", 50));
        let look = h.read("look").unwrap();
        // Held at level 1: 18.26.*.* is kept but not split further.
        assert_eq!(groups(&look), ["18.*.*.*", "18.26.*.*"], "{look}");
        let l18 = look.lines().nth(1).unwrap();
        // 50 packets of 32 bytes, each weighing 100/16 (less what decayed
        // if a jiffy passed before the read).
        let (f, r) = rates(l18);
        assert!((7000.0..=10000.0).contains(&f) && r == 0.0, "{l18}");
        // 1e300 seconds panicked in Duration::from_secs_f64.
        for (bad, want) in [
            ("x 1 2", "e.anno_level: expected IP address, not 'x'"),
            ("1.2.3.4 4 10", "e.anno_level: LEVEL must be 0 to 3, not 4"),
            ("1.2.3.4 1", "e.anno_level: expected 'ADDR LEVEL WHEN'"),
            ("1.2.3.4 1 -3", "e.anno_level: WHEN must be a number of seconds (expected time in seconds)"),
            ("1.2.3.4 1 1e300", "e.anno_level: WHEN must be a number of seconds (time 1e300 is more than the maximum, 4294967296 seconds)"),
        ] {
            assert_err(h.write("anno_level", bad), want);
        }
    }

    #[test]
    fn memory_limits_splits_and_packets_without_headers_pass() {
        // 100 KB holds a few tables only: the split stops there.
        let h = harness("IPRateMonitor(PACKETS, 1, 1, 1)", 1);
        for a in 1..=60u8 {
            h.push(0, from(&format!("{a}.1.1.1"), "9.9.9.9", 2));
        }
        let look = h.read("look").unwrap();
        let top = groups(&look)
            .iter()
            .filter(|g| g.ends_with(".*.*.*"))
            .count();
        assert_eq!(top, 60, "every /8 listed");
        // Each table but the root lists one group here.
        let max_tables = 100 * 1024 / super::Table::size();
        let deeper = groups(&look)
            .iter()
            .filter(|g| !g.ends_with(".*.*.*"))
            .count();
        assert!(deeper > 0 && deeper < max_tables, "{deeper} {max_tables}");
        // Without a limit every /8 splits down to its host.
        let u = harness("IPRateMonitor(PACKETS, 1, 1)", 1);
        for a in 1..=60u8 {
            u.push(0, from(&format!("{a}.1.1.1"), "9.9.9.9", 2));
        }
        assert_eq!(groups(&u.read("look").unwrap()).len(), 60 * 4);
        h.push(0, vec![pkt(&[1, 2, 3])]);
        assert_eq!(h.output(0).len(), 121);
    }

    #[test]
    fn sampling_keeps_rates_unbiased() {
        let h = harness("IPRateMonitor(PACKETS, 0.5, 1000000)", 1);
        h.push(0, from("5.5.5.5", "1.1.1.1", 4000));
        let look = h.read("look").unwrap();
        let (r, _) = rates(look.lines().nth(1).unwrap());
        // 4000 packets * 100/16 = 25000 in expectation (less what decayed).
        assert!((18000.0..27500.0).contains(&r), "{look}");
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            ("IPRateMonitor", "e :: IPRateMonitor: missing mandatory TYPE argument; e :: IPRateMonitor: missing mandatory RATIO argument; e :: IPRateMonitor: missing mandatory THRESH argument"),
            ("IPRateMonitor(FRAMES, 1, 10)", "e :: IPRateMonitor: TYPE: expected PACKETS or BYTES, not 'FRAMES'"),
            ("IPRateMonitor(PACKETS, 0, 10)", "e :: IPRateMonitor: RATIO: must be above 0 and at most 1, not 0"),
            ("IPRateMonitor(PACKETS, 1.5, 10)", "e :: IPRateMonitor: RATIO: must be above 0 and at most 1, not 1.5"),
            ("IPRateMonitor(PACKETS, 1, x)", "e :: IPRateMonitor: THRESH: expected unsigned integer"),
            ("IPRateMonitor(PACKETS, 1, 10, 100, maybe)", "e :: IPRateMonitor: ANNO: expected boolean (true or false)"),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
