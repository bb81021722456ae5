//! # RangeIPLookup
//!
//! RangeIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! IP routing lookup in a compact table.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Looks up each packet's destination in its routing table, using
//! longest-prefix match, sets the destination annotation to the route's
//! gateway (if it has one), and emits the packet on the route's output.
//! The destination is the destination IP annotation or, when that is
//! 0.0.0.0, the destination of the IP header. Packets that match no route
//! are dropped (counted).
//!
//! Each argument is a route: `ADDR/MASK [GW] OUT`, as for RadixIPLookup.
//! No prefix should occur more than once (a later route for the same
//! prefix replaces an earlier one).
//!
//! Click's RangeIPLookup expands the table into a sorted array of address
//! ranges searched by binary search (a few bytes per prefix), kept beside a
//! DirectIPLookup table used for updates. paraclick's shares RadixIPLookup's
//! and DirectIPLookup's 16-8-8 trie: at most three memory loads per lookup,
//! the same answers, memory in proportion to the table.
//!
//! Handlers (DirectIPLookup's):
//! - `table` (read): the routing table, one route per line, sorted by
//!   address (Click's tab-separated format).
//! - `lookup ADDR` (read, with a parameter): the route for ADDR, `OUT` or
//!   `OUT GW`, or `-1` if no route matches. Writing an address to `lookup`
//!   looks it up too; `lookup` and `last_lookup` read without a parameter
//!   return that last answer.
//! - `add` (write): adds a route, `ADDR/MASK [GW] OUT`; fails if a route
//!   for ADDR/MASK exists.
//! - `set` (write): adds or replaces a route.
//! - `remove` (write): removes the route for `ADDR/MASK`.
//! - `ctrl` (write): one `add`/`set ADDR/MASK [GW] OUT` or
//!   `remove ADDR/MASK` command per line, executed as one atomic operation.
//! - `flush` (write): removes every route, atomically.
//!
//! Example:
//!
//!     rt :: RangeIPLookup(18.26.4/24 0, 0/0 18.26.4.1 1);

use super::route_table::{class_spec, Kind, RouteKind};
use paraclick_runtime::ClassSpec;

/// RangeIPLookup: DirectIPLookup's handlers (with `flush`).
pub enum Range {}

impl RouteKind for Range {
    const KIND: Kind = Kind::Direct;
}

pub fn spec() -> ClassSpec {
    class_spec::<Range>("RangeIPLookup")
}

/// Checks that `class` routes random packets exactly as StaticIPLookup
/// does with the same random tables (outputs, gateways, drops).
#[cfg(test)]
pub(crate) fn routes_like_static_ip_lookup(class: &str) {
    use crate::test_kit::*;
    let mut rng = Rng::new(class.len() as u64 * 7919);
    for round in 0..20 {
        let mut routes = Vec::new();
        let mut prefixes = Vec::new();
        for _ in 0..1 + rng.below(40) {
            let len = [0, 8, 12, 16, 20, 24, 28, 32][rng.below(8)];
            let a = u32::from(rng.addr()) & u32::MAX.checked_shl(32 - len).unwrap_or(0);
            let a = std::net::Ipv4Addr::from(a);
            let gw = if rng.chance(2) {
                format!(" {}", rng.addr())
            } else {
                String::new()
            };
            routes.push(format!("{a}/{len}{gw} {}", rng.below(4)));
            prefixes.push(a);
        }
        let conf = routes.join(", ");
        let mine = harness(&format!("{class}({conf})"), 4);
        let stat = harness(&format!("StaticIPLookup({conf})"), 4);
        for _ in 0..50 {
            // Addresses inside the prefixes (a few bits changed) and random.
            let dst = if rng.chance(3) {
                rng.addr()
            } else {
                let base = u32::from(prefixes[rng.below(prefixes.len())]);
                std::net::Ipv4Addr::from(
                    base ^ (rng.next_u32() & 0xff_u32.wrapping_shl(rng.below(24) as u32)),
                )
            };
            let mut a = packet_to("1.2.3.4");
            let mut b = packet_to("1.2.3.4");
            a.anno_mut().dst_ip = dst;
            b.anno_mut().dst_ip = dst;
            mine.push(0, vec![a]);
            stat.push(0, vec![b]);
            let q = format!("lookup {dst}");
            assert_eq!(mine.read(&q), stat.read(&q), "{class} round {round}: {q}");
        }
        for port in 0..4 {
            let x: Vec<_> = mine.output(port).iter().map(|p| p.anno().dst_ip).collect();
            let y: Vec<_> = stat.output(port).iter().map(|p| p.anno().dst_ip).collect();
            assert_eq!(x, y, "{class} round {round} output {port}: {conf}");
        }
        assert_eq!(mine.drops(), stat.drops(), "{class} round {round}");
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn routes_like_static_ip_lookup() {
        super::routes_like_static_ip_lookup("RangeIPLookup");
    }

    #[test]
    fn dynamic_handlers_and_flush() {
        let h = harness("RangeIPLookup(10/8 0)", 2);
        h.write("add", "20/8 1.1.1.1 1").unwrap();
        assert_err(
            h.write("add", "20/8 1"),
            "e.add: conflict with existing route '20.0.0.0/8 1.1.1.1 1'",
        );
        assert_eq!(h.read("lookup 20.1.2.3").unwrap(), "1 1.1.1.1");
        h.push(0, vec![packet_to("20.0.0.9"), packet_to("10.0.0.9")]);
        assert_eq!(h.output(1)[0].anno().dst_ip, ip("1.1.1.1"));
        assert_eq!(h.output(0).len(), 1);
        h.write("flush", "").unwrap();
        assert_eq!(h.read("lookup 10.1.1.1").unwrap(), "-1");
        assert_eq!(h.read("table").unwrap(), "");
        h.push(0, vec![packet_to("10.0.0.9")]);
        assert_eq!(h.drops(), 1);
    }
}
