//! # AddressTranslator
//!
//! AddressTranslator(NSTATIC, [STATIC_PORTS, MAP1, ..., MAPn,] DYNAMIC [, DYNAMIC_PORTS, DIRECTION, MAPPED...])
//!
//! Rewrites the addresses and ports of IPv6 packets.
//!
//! The address translator of Click's IPv6/IPv4 translation gateway (with
//! ProtocolTranslator64 and ProtocolTranslator46), as Click's element of
//! that name.
//!
//! Ports: 2 inputs, 2 outputs. Processing: push.
//!
//! Input 0 takes outward packets (from the inner hosts): their source
//! address (and port) is replaced by its mapped address (and port); they
//! leave on output 0. Input 1 takes inward packets: their destination,
//! a mapped address (and port), is replaced by the inner one; they leave
//! on output 1. The IPv6 header is at the network header annotation,
//! else at the start of the data. Ports are TCP's and UDP's, and the
//! identifier of ICMPv6 echo requests and replies. TCP, UDP and ICMPv6
//! checksums are recomputed. A packet with no mapping, when none can be
//! made, is dropped and counted (`drops`); so is one shorter than its
//! headers.
//!
//! Arguments, in Click's order (all positional):
//! - NSTATIC (integer): the number of static mappings.
//! - if NSTATIC > 0: STATIC_PORTS (boolean), whether static mappings map
//!   ports too; then NSTATIC mappings `IADDR MADDR`, or with ports
//!   `IADDR IPORT MADDR MPORT`.
//! - DYNAMIC (boolean): whether mappings are made for new flows. If
//!   true:
//! - DYNAMIC_PORTS (boolean): false maps addresses: the remaining
//!   arguments are mapped addresses, each bound to the first inner
//!   address that needs one (for good: mappings do not expire); true maps
//!   addresses and ports: one remaining argument `MADDR PORTLOW PORTHIGH`,
//!   and each new (protocol, inner address, inner port) gets MADDR and the
//!   next free port of the range.
//! - DIRECTION (boolean): which side makes new mappings: false, outward
//!   packets (the usual NAT); true, inward packets, whose unmapped
//!   destination then binds to the next address of the list as the inner
//!   address (with DYNAMIC_PORTS false only).
//!
//! Static mappings are looked up first. With DYNAMIC_PORTS true a packet
//! without ports (another protocol) is dropped.
//!
//! Handlers:
//! - `mappings` (read): one line per mapping, `IADDR[.IPORT] <-> MADDR[.MPORT]`,
//!   static ones first, then dynamic ones (with the protocol for port
//!   mappings).
//! - `drops` (read).
//!
//! Difference from Click: Click keeps all mappings in one list searched
//! in order; paraclick looks them up by hash. Click's timestamps for
//! expiring dynamic mappings are unused there too.
//!
//! Example (ip64-nat.click): one IPv4-compatible address for the IPv6
//! hosts, mapped dynamically:
//!
//!     at :: AddressTranslator(0, 1, 0, 0, ::1.0.0.1);

use paraclick_packet::wire::ipv6::upper_layer_checksum;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{
    ArgEnv, ClassSpec, ConfigCx, Cx, Element, FromArg, Handler, PerThreadCount,
};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StaticMap {
    iaddr: Ipv6Addr,
    iport: Option<u16>,
    maddr: Ipv6Addr,
    mport: Option<u16>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dynamic {
    None,
    Addr { inward_allocates: bool },
    Port { maddr: Ipv6Addr, lo: u16, hi: u16 },
}

#[derive(Default)]
struct State {
    /// Dynamic address mapping: addresses not yet bound.
    pool: Vec<Ipv6Addr>,
    by_inner: HashMap<Ipv6Addr, Ipv6Addr>,
    by_mapped: HashMap<Ipv6Addr, Ipv6Addr>,
    /// Dynamic port mapping: (protocol, inner address, inner port) → port.
    out: HashMap<(u8, Ipv6Addr, u16), u16>,
    /// (protocol, mapped port) → (inner address, inner port).
    inn: HashMap<(u8, u16), (Ipv6Addr, u16)>,
    next_port: u32,
}

pub struct AddressTranslator {
    statics: Vec<StaticMap>,
    dynamic: Dynamic,
    state: Mutex<State>,
    drops: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["untranslatable"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("AddressTranslator", "2/2", "h", make)
        .drop_reasons(DROP_REASONS)
        .shared("NAT: one mapping table for all flows (and both directions)")
}

fn arg<T: FromArg>(args: &[String], i: usize, what: &str, env: &ArgEnv) -> Result<T, String> {
    let s = args
        .get(i)
        .ok_or_else(|| format!("argument {} ({what}) missing", i + 1))?;
    T::from_arg(s, env).map_err(|e| format!("argument {} ({what}): {e}", i + 1))
}

fn parse(
    args: &[String],
    env: &ArgEnv,
) -> Result<(Vec<StaticMap>, Dynamic, Vec<Ipv6Addr>), String> {
    let n: usize = arg(args, 0, "NSTATIC", env)?;
    let mut statics = Vec::new();
    let mut s = 1;
    if n > 0 {
        let ports: bool = arg(args, 1, "STATIC_PORTS", env)?;
        for i in 2..2 + n {
            let text = args
                .get(i)
                .ok_or_else(|| format!("argument {}: static mapping {} missing", i + 1, i - 1))?;
            let w: Vec<&str> = text.split_whitespace().collect();
            let bad = || {
                format!(
                    "argument {}: expected '{}', not '{text}'",
                    i + 1,
                    if ports {
                        "IADDR IPORT MADDR MPORT"
                    } else {
                        "IADDR MADDR"
                    }
                )
            };
            let addr = |s: &str| Ipv6Addr::from_arg(s, env).map_err(|_| bad());
            let port = |s: &str| u16::from_arg(s, env).map_err(|_| bad());
            statics.push(match (ports, w.as_slice()) {
                (false, [ia, ma]) => StaticMap {
                    iaddr: addr(ia)?,
                    iport: None,
                    maddr: addr(ma)?,
                    mport: None,
                },
                (true, [ia, ip, ma, mp]) => StaticMap {
                    iaddr: addr(ia)?,
                    iport: Some(port(ip)?),
                    maddr: addr(ma)?,
                    mport: Some(port(mp)?),
                },
                _ => return Err(bad()),
            });
        }
        s = n + 2;
    }
    let dynamic: bool = arg(args, s, "DYNAMIC", env)?;
    if !dynamic {
        if args.len() > s + 1 {
            return Err(format!(
                "{} arguments after DYNAMIC false: expected none",
                args.len() - s - 1
            ));
        }
        return Ok((statics, Dynamic::None, Vec::new()));
    }
    let ports: bool = arg(args, s + 1, "DYNAMIC_PORTS", env)?;
    let inward: bool = arg(args, s + 2, "DIRECTION", env)?;
    let rest = &args[(s + 3).min(args.len())..];
    if !ports {
        let mut pool = Vec::new();
        for (k, a) in rest.iter().enumerate() {
            pool.push(
                Ipv6Addr::from_arg(a, env)
                    .map_err(|e| format!("argument {} (mapped address): {e}", s + 4 + k))?,
            );
        }
        if pool.is_empty() {
            return Err("dynamic address mapping needs at least one mapped address".into());
        }
        return Ok((
            statics,
            Dynamic::Addr {
                inward_allocates: inward,
            },
            pool,
        ));
    }
    if inward {
        return Err("DIRECTION true (inward packets make mappings) is supported only with DYNAMIC_PORTS false".into());
    }
    let [one] = rest else {
        return Err(format!(
            "dynamic port mapping takes one argument 'MADDR PORTLOW PORTHIGH', not {}",
            rest.len()
        ));
    };
    let w: Vec<&str> = one.split_whitespace().collect();
    let bad = || format!("expected 'MADDR PORTLOW PORTHIGH', not '{one}'");
    let [ma, lo, hi] = w.as_slice() else {
        return Err(bad());
    };
    let maddr = Ipv6Addr::from_arg(ma, env).map_err(|_| bad())?;
    let lo = u16::from_arg(lo, env).map_err(|_| bad())?;
    let hi = u16::from_arg(hi, env).map_err(|_| bad())?;
    if lo > hi || lo == 0 {
        return Err(format!("bad port range {lo}-{hi}"));
    }
    Ok((statics, Dynamic::Port { maddr, lo, hi }, Vec::new()))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AddressTranslator, String> {
    let args = cx.args().rest_all();
    let (statics, dynamic, pool) = parse(&args, cx.env)?;
    let mut pool = pool;
    pool.reverse(); // popped from the end: the first listed goes first
    Ok(AddressTranslator {
        statics,
        dynamic,
        state: Mutex::new(State {
            pool,
            ..State::default()
        }),
        drops: PerThreadCount::new(cx.nthreads),
    })
}

/// Where a packet's IPv6 header starts and its upper layer (protocol,
/// offset), if it has one this element reads ports from.
fn layout(p: &Packet) -> Option<(usize, u8, usize)> {
    let start = p
        .network_header_offset()
        .and_then(|o| usize::try_from(o).ok())
        .unwrap_or(0);
    let d = p.data().get(start..)?;
    if d.len() < 40 || d[0] >> 4 != 6 {
        return None;
    }
    Some((start, d[6], start + 40))
}

/// The port field's offset (from the upper layer) for the source
/// (`src`) or destination side, if the protocol has one.
fn port_offset(p: &Packet, nh: u8, l4: usize, src: bool) -> Option<usize> {
    let d = p.data().get(l4..)?;
    match nh {
        6 if d.len() >= 20 => Some(if src { 0 } else { 2 }),
        17 if d.len() >= 8 => Some(if src { 0 } else { 2 }),
        58 if d.len() >= 8 && (d[0] == 128 || d[0] == 129) => Some(4),
        _ => None,
    }
}

fn read_port(p: &Packet, at: usize) -> u16 {
    let d = p.data();
    u16::from_be_bytes([d[at], d[at + 1]])
}

impl AddressTranslator {
    /// Looks up (or makes) the mapping for a packet; returns the new
    /// address and port for the rewritten side.
    fn map(
        &self,
        outward: bool,
        proto: u8,
        addr: Ipv6Addr,
        port: Option<u16>,
    ) -> Option<(Ipv6Addr, Option<u16>)> {
        for m in &self.statics {
            let (from_a, from_p, to_a, to_p) = if outward {
                (m.iaddr, m.iport, m.maddr, m.mport)
            } else {
                (m.maddr, m.mport, m.iaddr, m.iport)
            };
            if from_a == addr && (from_p.is_none() || from_p == port) {
                return Some((to_a, to_p.or(port)));
            }
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match self.dynamic {
            Dynamic::None => None,
            Dynamic::Addr { inward_allocates } => {
                let known = if outward {
                    st.by_inner.get(&addr).copied()
                } else {
                    st.by_mapped.get(&addr).copied()
                };
                if let Some(a) = known {
                    return Some((a, port));
                }
                if outward == inward_allocates {
                    return None;
                }
                let a = st.pool.pop()?;
                let (inner, mapped) = if outward { (addr, a) } else { (a, addr) };
                st.by_inner.insert(inner, mapped);
                st.by_mapped.insert(mapped, inner);
                Some((a, port))
            }
            Dynamic::Port { maddr, lo, hi } => {
                let port = port?;
                if !outward {
                    if addr != maddr {
                        return None;
                    }
                    return st.inn.get(&(proto, port)).map(|&(a, p)| (a, Some(p)));
                }
                if let Some(&mp) = st.out.get(&(proto, addr, port)) {
                    return Some((maddr, Some(mp)));
                }
                let span = u32::from(hi - lo) + 1;
                for _ in 0..span {
                    let cand = lo + (st.next_port % span) as u16;
                    st.next_port = st.next_port.wrapping_add(1);
                    if let std::collections::hash_map::Entry::Vacant(e) =
                        st.inn.entry((proto, cand))
                    {
                        e.insert((addr, port));
                        st.out.insert((proto, addr, port), cand);
                        return Some((maddr, Some(cand)));
                    }
                }
                None
            }
        }
    }

    fn listing(&self) -> String {
        let mut s = String::new();
        let ap = |a: &Ipv6Addr, p: Option<u16>| match p {
            Some(p) => format!("{a}.{p}"),
            None => a.to_string(),
        };
        for m in &self.statics {
            let _ = writeln!(
                s,
                "{} <-> {} static",
                ap(&m.iaddr, m.iport),
                ap(&m.maddr, m.mport)
            );
        }
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut dynamic: Vec<String> = st
            .by_inner
            .iter()
            .map(|(i, m)| format!("{i} <-> {m}"))
            .collect();
        if let Dynamic::Port { maddr, .. } = self.dynamic {
            dynamic.extend(
                st.out
                    .iter()
                    .map(|(&(proto, a, p), &mp)| format!("{a}.{p} <-> {maddr}.{mp} proto {proto}")),
            );
        }
        dynamic.sort();
        for l in dynamic {
            s.push_str(&l);
            s.push('\n');
        }
        s
    }

    fn translate(&self, p: &mut Packet, outward: bool) -> bool {
        let Some((start, nh, l4)) = layout(p) else {
            return false;
        };
        let addr_at = start + if outward { 8 } else { 24 };
        let mut a = [0u8; 16];
        a.copy_from_slice(&p.data()[addr_at..addr_at + 16]);
        let addr = Ipv6Addr::from(a);
        let port_at = port_offset(p, nh, l4, outward).map(|o| l4 + o);
        let port = port_at.map(|at| read_port(p, at));
        let Some((na, np)) = self.map(outward, nh, addr, port) else {
            return false;
        };
        let d = p.data_mut();
        d[addr_at..addr_at + 16].copy_from_slice(&na.octets());
        if let (Some(at), Some(np)) = (port_at, np) {
            d[at..at + 2].copy_from_slice(&np.to_be_bytes());
        }
        // Checksums over the new pseudo-header.
        let plen = usize::from(u16::from_be_bytes([d[start + 4], d[start + 5]]));
        let co = match nh {
            6 => Some(16),
            17 => Some(6),
            58 => Some(2),
            _ => None,
        };
        if let (Some(co), Some(seg)) = (co, d.get(l4..l4 + plen)) {
            if seg.len() >= co + 2 {
                let mut src = [0u8; 16];
                let mut dst = [0u8; 16];
                src.copy_from_slice(&d[start + 8..start + 24]);
                dst.copy_from_slice(&d[start + 24..start + 40]);
                let (src, dst) = (Ipv6Addr::from(src), Ipv6Addr::from(dst));
                d[l4 + co..l4 + co + 2].fill(0);
                let mut c = upper_layer_checksum(&src, &dst, nh, &d[l4..l4 + plen]);
                if nh == 17 && c == 0 {
                    c = 0xffff;
                }
                d[l4 + co..l4 + co + 2].copy_from_slice(&c.to_be_bytes());
            }
        }
        true
    }
}

impl Element for AddressTranslator {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("mappings", |e, _| e.listing()),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, mut batch: Batch) {
        let before = batch.len();
        batch.retain_mut(|p| self.translate(p, port == 0));
        let dropped = before - batch.len();
        if dropped > 0 {
            self.drops.add(cx.thread(), dropped as u64);
            cx.count_drops_for(0, dropped as u64);
        }
        if !batch.is_empty() {
            cx.push(port, batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    /// How an address prints (IPv4-compatible ones print in hex).
    fn s6(x: &str) -> String {
        x.parse::<std::net::Ipv6Addr>().unwrap().to_string()
    }

    fn udp(src: &str, dst: &str, sp: u16, dp: u16) -> Vec<u8> {
        Ip6::new(src, dst, 17).udp(sp, dp, b"data").bytes()
    }

    fn fields(d: &[u8]) -> (String, String, u16, u16) {
        let a = |r: std::ops::Range<usize>| {
            std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&d[r]).unwrap()).to_string()
        };
        (
            a(8..24),
            a(24..40),
            u16::from_be_bytes([d[40], d[41]]),
            u16::from_be_bytes([d[42], d[43]]),
        )
    }

    fn udp_ok(d: &[u8]) -> bool {
        let a = |r: std::ops::Range<usize>| {
            std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&d[r]).unwrap())
        };
        paraclick_packet::wire::ipv6::upper_layer_checksum(&a(8..24), &a(24..40), 17, &d[40..]) == 0
    }

    #[test]
    fn dynamic_address_mapping() {
        let h = harness_io("AddressTranslator(0, 1, 0, 0, ::1.0.0.1, ::1.0.0.2)", 2, 2);
        h.push(
            0,
            vec![
                pkt(&udp("3ffe::5", "::ffff:18.26.4.9", 1000, 53)),
                pkt(&udp("3ffe::6", "::ffff:18.26.4.9", 1000, 53)),
                pkt(&udp("3ffe::5", "::ffff:18.26.4.9", 1001, 53)),
                pkt(&udp("3ffe::7", "::ffff:18.26.4.9", 1000, 53)),
            ],
        );
        let out: Vec<_> = h.output(0).iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(out.len(), 3, "the third inner host finds no address");
        assert_eq!(fields(&out[0]).0, s6("::1.0.0.1"));
        assert_eq!(fields(&out[1]).0, s6("::1.0.0.2"));
        assert_eq!(
            fields(&out[2]),
            (s6("::1.0.0.1"), s6("::ffff:18.26.4.9"), 1001, 53)
        );
        assert!(out.iter().all(|d| udp_ok(d)));
        // Replies come back to the inner hosts; unmapped ones are dropped.
        h.push(
            1,
            vec![
                pkt(&udp("::ffff:18.26.4.9", "::1.0.0.2", 53, 1000)),
                pkt(&udp("::ffff:18.26.4.9", "::1.0.0.9", 53, 1000)),
            ],
        );
        let back: Vec<_> = h.output(1).iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(back.len(), 1);
        assert_eq!(fields(&back[0]).1, s6("3ffe::6"));
        assert!(udp_ok(&back[0]));
        assert_eq!(h.read("drops").unwrap(), "2");
        let m = h.read("mappings").unwrap();
        assert!(
            m.contains(&format!("3ffe::5 <-> {}\n", s6("::1.0.0.1"))),
            "{m}"
        );
    }

    #[test]
    fn dynamic_port_mapping() {
        let h = harness_io("AddressTranslator(0, 1, 1, 0, ::1.0.0.1 6000 6001)", 2, 2);
        h.push(
            0,
            vec![
                pkt(&udp("3ffe::5", "::ffff:18.26.4.9", 1000, 53)),
                pkt(&udp("3ffe::6", "::ffff:18.26.4.9", 1000, 53)),
                pkt(&udp("3ffe::5", "::ffff:18.26.4.9", 1000, 53)),
                pkt(&udp("3ffe::7", "::ffff:18.26.4.9", 1000, 53)),
            ],
        );
        let out: Vec<_> = h.output(0).iter().map(|p| fields(p.data())).collect();
        let m = s6("::1.0.0.1");
        assert_eq!(
            out.iter().map(|f| (f.0.clone(), f.2)).collect::<Vec<_>>(),
            vec![(m.clone(), 6000), (m.clone(), 6001), (m, 6000)]
        );
        h.push(
            1,
            vec![pkt(&udp("::ffff:18.26.4.9", "::1.0.0.1", 53, 6001))],
        );
        let back = h.output(1);
        assert_eq!(
            fields(back[0].data()),
            (s6("::ffff:18.26.4.9"), s6("3ffe::6"), 53, 1000)
        );
        assert!(udp_ok(back[0].data()));
    }

    #[test]
    fn static_mappings_and_bad_configurations() {
        let h = harness_io(
            "AddressTranslator(1, 0, 3ffe:1ce1:2::1 ::18.26.4.17, 0)",
            2,
            2,
        );
        h.push(0, vec![pkt(&udp("3ffe:1ce1:2::1", "::ffff:1.2.3.4", 7, 9))]);
        assert_eq!(fields(h.output(0)[0].data()).0, s6("::18.26.4.17"));
        h.push(1, vec![pkt(&udp("::ffff:1.2.3.4", "::18.26.4.17", 9, 7))]);
        assert_eq!(fields(h.output(1)[0].data()).1, s6("3ffe:1ce1:2::1"));
        let h = harness_io(
            "AddressTranslator(1, 1, 3ffe::1 80 ::1.0.0.1 8080, 0)",
            2,
            2,
        );
        h.push(
            0,
            vec![
                pkt(&udp("3ffe::1", "::1.2.3.4", 80, 9)),
                pkt(&udp("3ffe::1", "::1.2.3.4", 81, 9)),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(fields(out[0].data()).2, 8080);
        for (bad, want) in [
            ("AddressTranslator()", "e :: AddressTranslator: argument 1 (NSTATIC) missing"),
            ("AddressTranslator(x, 0)", "e :: AddressTranslator: argument 1 (NSTATIC): expected unsigned integer"),
            ("AddressTranslator(1, 0, 3ffe::1, 0)", "e :: AddressTranslator: argument 3: expected 'IADDR MADDR', not '3ffe::1'"),
            ("AddressTranslator(0, 1, 0, 0)", "e :: AddressTranslator: dynamic address mapping needs at least one mapped address"),
            ("AddressTranslator(0, 1, 1, 0, ::1 7 3)", "e :: AddressTranslator: bad port range 7-3"),
            ("AddressTranslator(0, 1, 1, 1, ::1 7 9)", "e :: AddressTranslator: DIRECTION true (inward packets make mappings) is supported only with DYNAMIC_PORTS false"),
            ("AddressTranslator(0, 0, ::1)", "e :: AddressTranslator: 1 arguments after DYNAMIC false: expected none"),
        ] {
            assert_err(try_harness_io(bad, 2, 2), want);
        }
    }
}
