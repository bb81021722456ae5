//! # LookupIPRouteMP
//!
//! LookupIPRouteMP(DST1/MASK1 \[GW1] OUT1, DST2/MASK2 \[GW2] OUT2, ...)
//!
//! Simple static IP routing table, for multiprocessors.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! The same arguments, routing and handlers as LookupIPRoute
//! (StaticIPLookup): each argument is a route; each packet's destination
//! (the destination IP annotation or, when that is 0.0.0.0, the IP
//! header's destination) is looked up by longest-prefix match, the
//! annotation set to the route's gateway (if any), and the packet sent to
//! the route's output; packets that match no route are dropped (counted).
//! The table cannot change after configuration.
//!
//! Click's LookupIPRouteMP differs from LookupIPRoute only by keeping a
//! per-processor cache of recent lookups, so it is safe on several threads.
//! Every paraclick route lookup element is safe on any number of threads
//! (the table is read under a per-thread sharded lock), and the trie lookup
//! costs at most three memory loads, so there is no cache to keep: this
//! class is StaticIPLookup under Click's other name.
//!
//! Handlers:
//! - `table` (read): the routing table in configuration order (Click's
//!   tab-separated format).
//! - `lookup ADDR` (read, with a parameter): `OUT`, `OUT GW`, or `-1`.
//!
//! Example:
//!
//!     rt :: LookupIPRouteMP(18.26.4/24 0, 0/0 18.26.4.1 1);

use super::route_table::{class_spec, Kind, RouteKind};
use paraclick_runtime::ClassSpec;

/// LookupIPRouteMP: StaticIPLookup's handlers.
pub enum StaticMP {}

impl RouteKind for StaticMP {
    const KIND: Kind = Kind::Static;
}

pub fn spec() -> ClassSpec {
    class_spec::<StaticMP>("LookupIPRouteMP")
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn routes_like_static_ip_lookup() {
        super::super::range_ip_lookup::routes_like_static_ip_lookup("LookupIPRouteMP");
    }

    #[test]
    fn static_table_in_configuration_order() {
        let h = harness("LookupIPRouteMP(20/8 1, 10/8 2.2.2.2 0)", 2);
        assert_eq!(
            h.read("table").unwrap(),
            "20.0.0.0/8\t\t-\t\t1\n10.0.0.0/8\t\t2.2.2.2\t\t0\n"
        );
        assert_err(h.write("add", "30/8 1"), "no write handler 'e.add'");
        assert_err(h.write("flush", ""), "no write handler 'e.flush'");
    }

    #[test]
    fn runs_on_several_threads() {
        let conf = "s0 :: InfiniteSource(\\<45000014 00000000 4011 0000 01000001 0a000001>, LIMIT 2000, STOP false) \
                    -> MarkIPHeader -> rt :: LookupIPRouteMP(10/8 0, 0/0 1); \
                    s1 :: InfiniteSource(\\<45000014 00000000 4011 0000 01000001 14000001>, LIMIT 2000, STOP false) \
                    -> MarkIPHeader -> rt; \
                    rt[0] -> a :: Counter -> Discard; rt[1] -> b :: Counter -> Discard; \
                    StaticThreadSched(s0 0, s1 1); \
                    DriverManager(wait 0.3s, stop)";
        let r = paraclick_runtime::Router::from_str(conf, &reg(), 2).unwrap();
        r.run();
        assert_eq!(r.read_handler("a.count").unwrap(), "2000");
        assert_eq!(r.read_handler("b.count").unwrap(), "2000");
    }
}
