//! # LookupIP6Route
//!
//! LookupIP6Route(ROUTE, ...)
//!
//! IPv6 routing lookup (also registered as RadixIP6Lookup and
//! DirectIP6Lookup, which are the same element here).
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Each argument is a route: `ADDR/LEN [GW] OUT`, or Click's older form
//! `ADDR MASK GW OUT` with MASK written as an IPv6 address
//! (`ffff:ffff:ffff:ffff::`). GW is an IPv6 address (`::` or `::0`, or
//! leaving it out, means none) and OUT the output port. Addresses may be
//! AddressInfo names. A later route for the same prefix replaces an
//! earlier one.
//!
//! The destination looked up is the packet's destination IPv6 annotation
//! (`DST_IP6`), or the IPv6 header's destination when the annotation is
//! `::`. On a match the annotation is set to the route's gateway (or to the
//! destination, when the route has none) and the packet goes to the
//! route's output; a packet without a match or without an IPv6 header is
//! dropped (counted).
//!
//! The table is a binary search on prefix lengths over per-length hash
//! tables (see the `lpm6` module): a lookup costs at most 8 hash probes
//! whatever the number of routes (200,000 routes are routine). It sits
//! behind a sharded reader-writer lock: packets take a read lock once per
//! batch, handler updates the write lock.
//!
//! Handlers:
//! - `table` (read): the routes, `ADDR/LEN GW OUT` per line (GW `::` when
//!   none), sorted by address.
//! - `lookup` (read with a parameter, or write then read): `rt.lookup
//!   ADDR` gives `OUT GW`, or `-1` when no route matches.
//! - `add` (write): adds a route; an existing route for the prefix is an
//!   error.
//! - `set` (write): adds or replaces a route.
//! - `remove` (write): removes the route for `ADDR/LEN` (GW and OUT, if
//!   given, must match).
//! - `count` (read): the number of routes.
//!
//! In a hot reconfiguration (`hotconfig`), an element of the same name
//! and configuration keeps the routes the handlers left (those to outputs
//! it still has); one whose configuration changed starts from its own.
//!
//! Example:
//!
//!     rt :: LookupIP6Route(2001:db8:1::1/128 0, 2001:db8:1::/64 1,
//!                          2001:db8:2::/64 2, ::/0 2001:db8:2::2 2);

use super::lpm6::{Lpm6, Route6};
use crossbeam_utils::sync::ShardedLock;
use paraclick_packet::wire::ipv6::mask128;
use paraclick_packet::wire::Ipv6Prefix;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, Hop, RoutingElement, StateCx};
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::Mutex;

pub struct LookupIP6Route {
    table: ShardedLock<Lpm6>,
    noutputs: usize,
    env: ArgEnv,
    last_lookup: Mutex<String>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no route"];

pub fn spec() -> ClassSpec {
    ClassSpec::routing("LookupIP6Route", "1/-", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

/// A parsed route; `port` is `None` when left out (only `remove`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSpec6 {
    pub addr: u128,
    pub len: u8,
    pub gw: u128,
    pub port: Option<i64>,
}

fn is_port(w: &str) -> bool {
    let d = w.strip_prefix('-').unwrap_or(w);
    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
}

/// Parses `ADDR/LEN [GW] OUT` or `ADDR MASK GW OUT`.
pub fn parse_route6(s: &str, env: &ArgEnv, remove: bool) -> Result<RouteSpec6, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let Some(&first) = words.first() else {
        return Err("empty route".into());
    };
    let (prefix, mut rest) = if first.contains('/') || words.len() < 3 {
        (Ipv6Prefix::from_arg(first, env)?, &words[1..])
    } else {
        // ADDR MASK GW OUT, or ADDR GW OUT.
        let addr = Ipv6Addr::from_arg(first, env)?;
        match words.get(1).map(|m| m.parse::<Ipv6Addr>()) {
            Some(Ok(m)) if words.len() >= 4 => {
                let m = u128::from(m);
                let len = m.leading_ones();
                if m.checked_shl(len).unwrap_or(0) != 0 {
                    return Err(format!("'{}' is not a prefix mask", words[1]));
                }
                (
                    Ipv6Prefix {
                        addr,
                        len: len as u8,
                    },
                    &words[2..],
                )
            }
            _ => (Ipv6Prefix::host(addr), &words[1..]),
        }
    };
    let mut gw = 0u128;
    if let Some(&w) = rest.first() {
        if !is_port(w) {
            if w != "-" {
                gw = u128::from(Ipv6Addr::from_arg(w, env)?);
            }
            rest = &rest[1..];
        }
    }
    let port = match rest.first() {
        Some(w) => Some(
            w.parse::<i64>()
                .map_err(|_| format!("expected output port, not '{w}'"))?,
        ),
        None if remove => None,
        None => return Err("missing output port".into()),
    };
    if rest.len() > 1 {
        return Err(format!("too many words in route '{s}'"));
    }
    let len = prefix.len.min(128);
    Ok(RouteSpec6 {
        addr: u128::from(prefix.addr) & mask128(len),
        len,
        gw,
        port,
    })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<LookupIP6Route, String> {
    let args = cx.args().rest_all();
    let env = cx.env.clone();
    let mut routes = Vec::new();
    let mut errs = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a.trim().is_empty() {
            continue;
        }
        match parse_route6(a, &env, false) {
            Err(e) => errs.push(format!("argument {}: {e}", i + 1)),
            Ok(r) => match r.port {
                Some(p) if p >= 0 && (p as usize) < cx.noutputs => {
                    routes.push(Route6::new(r.addr, r.len, r.gw, p as u32))
                }
                _ => errs.push(format!(
                    "argument {}: bad output in '{}' ({} outputs)",
                    i + 1,
                    a.trim(),
                    cx.noutputs
                )),
            },
        }
    }
    if !errs.is_empty() {
        return Err(errs.join("; "));
    }
    Ok(LookupIP6Route {
        table: ShardedLock::new(Lpm6::from_routes(routes)),
        noutputs: cx.noutputs,
        env,
        last_lookup: Mutex::new(String::new()),
    })
}

fn route_line(out: &mut String, r: &Route6) {
    let _ = writeln!(
        out,
        "{}/{}\t{}\t{}",
        Ipv6Addr::from(r.addr),
        r.len,
        Ipv6Addr::from(r.gw),
        r.port
    );
}

impl LookupIP6Route {
    #[inline(always)]
    fn destination(p: &Packet) -> u128 {
        let d = u128::from(p.anno().dst_ip6());
        if d != 0 {
            return d;
        }
        match p.network_header().and_then(|h| h.get(24..40)) {
            Some(b) => u128::from_be_bytes(b.try_into().unwrap_or([0; 16])),
            None => 0,
        }
    }

    fn read_table(&self) -> crossbeam_utils::sync::ShardedLockReadGuard<'_, Lpm6> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// `(port, gateway)` for `addr`, as a packet would be routed.
    pub fn lookup(&self, addr: Ipv6Addr) -> Option<(u32, Ipv6Addr)> {
        self.read_table()
            .lookup(u128::from(addr))
            .map(|r| (r.port, Ipv6Addr::from(r.gw)))
    }

    fn lookup_text(&self, v: &str) -> Result<String, String> {
        let a = Ipv6Addr::from_arg(v, &self.env)?;
        Ok(match self.lookup(a) {
            Some((port, gw)) => format!("{port} {gw}"),
            None => "-1".into(),
        })
    }

    fn update(&self, name: &str, v: &str) -> Result<(), String> {
        let r = parse_route6(v, &self.env, name == "remove")?;
        if let Some(p) = r.port {
            if p < -1 || p >= self.noutputs as i64 || (p < 0 && name != "remove") {
                return Err(format!("bad output {p}"));
            }
        }
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        match name {
            "add" if t.get(r.addr, r.len).is_some() => Err(format!(
                "a route for {}/{} exists",
                Ipv6Addr::from(r.addr),
                r.len
            )),
            "add" | "set" => {
                t.insert(Route6::new(r.addr, r.len, r.gw, r.port.unwrap_or(0) as u32));
                Ok(())
            }
            _ => {
                let found = t.get(r.addr, r.len).filter(|old| match r.port {
                    Some(p) if p >= 0 => old.port == p as u32 && old.gw == r.gw,
                    _ => true,
                });
                match found {
                    Some(old) => {
                        t.remove(old.addr, old.len);
                        Ok(())
                    }
                    None => Err(format!(
                        "route {}/{} not found",
                        Ipv6Addr::from(r.addr),
                        r.len
                    )),
                }
            }
        }
    }
}

impl Element for LookupIP6Route {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| {
            let mut s = String::new();
            for r in e.read_table().routes_sorted() {
                route_line(&mut s, &r);
            }
            s
        }),
        Handler::<Self>::read_param("lookup", |e, p, _| match p {
            Some(p) => e.lookup_text(p),
            None => Ok(e
                .last_lookup
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()),
        })
        .write_with(|e, v, _| {
            let s = e.lookup_text(v)?;
            *e.last_lookup.lock().unwrap_or_else(|e| e.into_inner()) = s;
            Ok(())
        }),
        Handler::write("add", |e, v, _| e.update("add", v)),
        Handler::write("set", |e, v, _| e.update("set", v)),
        Handler::write("remove", |e, v, _| e.update("remove", v)),
        Handler::read("count", |e, _| e.read_table().len().to_string()),
    ];

    /// Hot reconfiguration, as the IPv4 route tables: when the element's
    /// configuration is the same in the new router, the old table (with
    /// the routes handlers added, changed or removed since) replaces the
    /// one just configured, less routes to outputs the new router does not
    /// have; when it differs, the new configuration's routes stand.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        if !sx.same_config() {
            return;
        }
        let routes = old.read_table().routes_sorted();
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        t.clear();
        for r in routes {
            if (r.port as usize) < self.noutputs {
                t.insert(r);
            }
        }
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        if batch.is_empty() {
            return;
        }
        let mut ports: [u32; 64] = [u32::MAX; 64];
        let mut uniform = true;
        let n = batch.len();
        if n <= 64 {
            let t = self.read_table();
            for (i, p) in batch.iter_mut().enumerate() {
                let dst = Self::destination(p);
                let port = match (dst != 0).then(|| t.lookup(dst)).flatten() {
                    Some(r) => {
                        let hop = if r.gw != 0 { r.gw } else { dst };
                        p.anno_mut().set_dst_ip6(Ipv6Addr::from(hop));
                        r.port
                    }
                    None => u32::MAX,
                };
                ports[i] = port;
                uniform &= port == ports[0];
            }
        } else {
            uniform = false;
        }
        if uniform {
            match ports[0] {
                u32::MAX => cx.drop_batch_for(0, batch),
                p => cx.push(p as usize, batch),
            }
            return;
        }
        // Mixed (or oversized) batch: route packet by packet. Where two
        // outputs' paths meet again downstream (an ICMPv6 error path back
        // into this table, say), each run of one port goes on before the
        // next begins, so they meet in arrival order.
        let ordered = cx.splits_in_order();
        let mut last = u32::MAX;
        let mut outs: Vec<Batch> = (0..self.noutputs).map(|_| Batch::new()).collect();
        let big = n > 64;
        for (i, mut p) in batch.drain().enumerate() {
            let port = if big {
                let dst = Self::destination(&p);
                match self.read_table().lookup(dst) {
                    Some(r) if dst != 0 => {
                        let hop = if r.gw != 0 { r.gw } else { dst };
                        p.anno_mut().set_dst_ip6(Ipv6Addr::from(hop));
                        r.port
                    }
                    _ => u32::MAX,
                }
            } else {
                ports[i]
            };
            if (port as usize) >= outs.len() {
                cx.drop_packet_for(0, p);
                continue;
            }
            if ordered && port != last && last != u32::MAX && !outs[last as usize].is_empty() {
                let b = std::mem::take(&mut outs[last as usize]);
                cx.push(last as usize, b);
            }
            last = port;
            outs[port as usize].push(p);
        }
        for (port, b) in outs.into_iter().enumerate() {
            if !b.is_empty() {
                cx.push(port, b);
            }
        }
    }
}

// One packet: a lookup and a choice of output, so a single packet's hop
// runs in the loop of the per-packet elements around it, and batches
// keep whole (their order kept by `push`) where its outputs meet again.
impl RoutingElement for LookupIP6Route {
    #[inline]
    fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
        let dst = Self::destination(p);
        if dst == 0 {
            return Hop::DropFor(0);
        }
        match self.read_table().lookup(dst) {
            Some(r) if (r.port as usize) < self.noutputs => {
                let hop = if r.gw != 0 { r.gw } else { dst };
                p.anno_mut().set_dst_ip6(Ipv6Addr::from(hop));
                Hop::Out(r.port as usize)
            }
            _ => Hop::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;

    const RT: &str = "LookupIP6Route(2001:db8:1::1/128 0, 2001:db8:1::/64 1, \
                      2001:db8:2:: ffff:ffff:ffff:ffff:: ::0 2, ::/0 2001:db8:2::2 2)";

    /// Records the size of each batch it is pushed.
    struct BatchSizes(std::sync::Mutex<Vec<(usize, Vec<Ipv6Addr>)>>);

    impl Element for BatchSizes {
        fn push(&self, _cx: &mut Cx<'_>, _port: usize, batch: Batch) {
            let dsts = batch
                .iter()
                .map(|p| Ipv6Addr::from(<[u8; 16]>::try_from(&p.data()[24..40]).unwrap()))
                .collect();
            self.0.lock().unwrap().push((batch.len(), dsts));
        }
    }

    /// Where the table's outputs meet again (an ICMPv6 error path back
    /// into it, as in conf/iprouter6-veth.click, or here one sink), a
    /// batch still goes on whole, or in runs of arrival order when it
    /// splits, not a packet at a time: a ToDevice after it sent one
    /// frame per system call, 600,000 calls for 600,000 packets at -j 2.
    #[test]
    fn batches_stay_whole_where_the_outputs_meet_again() {
        let mut r = paraclick_runtime::testing::with_test_classes(&reg());
        r.register(ClassSpec::element("BatchSizes", "1/0", "h", |cx| {
            cx.args().complete()?;
            Ok(BatchSizes(std::sync::Mutex::new(Vec::new())))
        }));
        let router = paraclick_runtime::testing::build(
            &r,
            "TestSource -> e :: LookupIP6Route(2001:db8:1::/64 0, ::/0 1); \
             e[0] -> s :: BatchSizes; e[1] -> s;",
        );
        let pkt = |d: &str| marked(&Ip6::new("2001:db8:9::1", d, 59).bytes());
        let mk = |ds: &[&str]| Batch::from(ds.iter().map(|d| pkt(d)).collect::<Vec<_>>());
        let a = ["2001:db8:1::1", "2001:db8:1::2", "2001:db8:1::3"];
        router.push_into("e", 0, mk(&a)).unwrap();
        let mixed = [
            "2001:db8:1::4",
            "2001:db8:7::1",
            "2001:db8:7::2",
            "2001:db8:1::5",
            "2001:db8:1::6",
        ];
        router.push_into("e", 0, mk(&mixed)).unwrap();
        let got =
            std::mem::take(&mut *router.element::<BatchSizes>("s").unwrap().0.lock().unwrap());
        let sizes: Vec<usize> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(sizes, [3, 1, 2, 2], "one batch, then runs of one port each");
        let order: Vec<Ipv6Addr> = got.into_iter().flat_map(|(_, d)| d).collect();
        let want: Vec<Ipv6Addr> = a.iter().chain(&mixed).map(|d| d.parse().unwrap()).collect();
        assert_eq!(order, want, "arrival order");
    }

    #[test]
    fn routes_packets_and_sets_next_hop() {
        let h = harness(RT, 3);
        let to = |d: &str| marked(&Ip6::new("2001:db8:9::1", d, 59).bytes());
        h.push(0, vec![to("2001:db8:1::1")]);
        h.push(
            0,
            vec![to("2001:db8:1::7"), to("2001:db8:2::7"), to("3000::1")],
        );
        let o0 = h.output(0);
        assert_eq!(o0.len(), 1);
        assert_eq!(o0[0].anno().dst_ip6(), a6("2001:db8:1::1"));
        let o1 = h.output(1);
        assert_eq!(o1[0].anno().dst_ip6(), a6("2001:db8:1::7"));
        let o2 = h.output(2);
        assert_eq!(o2.len(), 2);
        assert_eq!(o2[0].anno().dst_ip6(), a6("2001:db8:2::7"));
        assert_eq!(o2[1].anno().dst_ip6(), a6("2001:db8:2::2"), "gateway");
        // The annotation, when set, is what is looked up.
        let mut p = to("3000::1");
        p.anno_mut().set_dst_ip6(a6("2001:db8:1::9"));
        h.push(0, vec![p]);
        assert_eq!(h.output(1).len(), 1);
    }

    #[test]
    fn no_route_or_header_drops() {
        let h = harness("LookupIP6Route(2001:db8::/32 0)", 1);
        h.push(
            0,
            vec![
                marked(&Ip6::new("::1", "3000::1", 59).bytes()),
                pkt(&[0; 60]),
                marked(&Ip6::new("::1", "2001:db8::1", 59).bytes()),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn parse_forms_and_errors() {
        let env = ArgEnv::default();
        let r = parse_route6("2001:db8::1/32 1", &env, false).unwrap();
        assert_eq!(
            (r.addr, r.len, r.gw, r.port),
            (a6("2001:db8::").into(), 32, 0, Some(1))
        );
        let r = parse_route6("2001:db8:: ffff:ffff:: fe80::1 3", &env, false).unwrap();
        assert_eq!((r.len, r.gw, r.port), (32, a6("fe80::1").into(), Some(3)));
        let r = parse_route6("2001:db8::1 2", &env, false).unwrap();
        assert_eq!(r.len, 128);
        assert_eq!(parse_route6("::/0 - 4", &env, false).unwrap().port, Some(4));
        assert_eq!(parse_route6("::/0", &env, true).unwrap().port, None);
        for (bad, want) in [
            ("", "empty route"),
            ("::/0", "missing output port"),
            ("::/129 1", "expected IPv6 prefix, not '::/129'"),
            ("x/3 1", "expected IPv6 prefix, not 'x/3'"),
            ("::/0 1 2", "too many words in route '::/0 1 2'"),
            (
                "2001:: ffff:0:ffff:: ::0 1",
                "'ffff:0:ffff::' is not a prefix mask",
            ),
        ] {
            assert_err(parse_route6(bad, &env, false), want);
        }
        assert_err(
            try_harness("LookupIP6Route(::/0 3)", 2),
            "e :: LookupIP6Route: argument 1: bad output in '::/0 3' (2 outputs)",
        );
        assert_err(
            try_harness("LookupIP6Route(::/0 1.2.3.4 0)", 1),
            "e :: LookupIP6Route: argument 1: expected IPv6 address, not '1.2.3.4'",
        );
    }

    #[test]
    fn big_batches_route_per_packet() {
        let h = harness("LookupIP6Route(2001:db8:1::/48 0, 2001:db8:2::/48 1)", 2);
        let v: Vec<_> = (0..100)
            .map(|i| {
                let d = if i % 3 == 0 {
                    "2001:db8:2::1"
                } else {
                    "2001:db8:1::1"
                };
                marked(&Ip6::new("::1", d, 59).bytes())
            })
            .collect();
        h.push(0, v);
        assert_eq!(h.output(1).len(), 34);
        assert_eq!(h.output(0).len(), 66);
    }

    #[test]
    fn routes_added_by_handler_survive_a_hot_swap() {
        let conf = "LookupIP6Route(2001:db8:1::/64 0)";
        let to = |d: &str| marked(&Ip6::new("2001:db8:9::1", d, 59).bytes());
        let old = harness(conf, 3);
        old.write("add", "2001:db8:2::/64 1").unwrap();
        old.write("set", "2001:db8:1::/64 2").unwrap();
        old.write("add", "2001:db8:3::/64 2").unwrap();
        let new = harness(conf, 3);
        new.router.take_state_from(&old.router).unwrap();
        assert_eq!(new.read("table").unwrap(), old.read("table").unwrap());
        new.push(0, vec![to("2001:db8:2::5"), to("2001:db8:1::5")]);
        assert_eq!(new.output(1).len(), 1, "the added route");
        assert_eq!(new.output(2).len(), 1, "the changed route");
        // A new router with fewer outputs keeps the routes it can use.
        let two = harness(conf, 2);
        two.router.take_state_from(&old.router).unwrap();
        assert_eq!(two.read("table").unwrap(), "2001:db8:2::/64\t::\t1\n");
        // Another configuration: its own routes stand.
        let other = harness("LookupIP6Route(2001:db8:4::/64 0)", 3);
        other.router.take_state_from(&old.router).unwrap();
        assert_eq!(other.read("count").unwrap(), "1");
        assert_eq!(other.read("lookup 2001:db8:4::1").unwrap(), "0 ::");
    }
}
