//! # SortedIPLookup
//!
//! SortedIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! Simple IP routing table (deprecated: use LinearIPLookup or
//! RadixIPLookup).
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Click's SortedIPLookup is a version of LinearIPLookup that keeps its
//! routing table sorted. It has LinearIPLookup's arguments, routing and
//! handlers: each argument is a route `ADDR/MASK [GW] OUT`; each packet's
//! destination (the destination IP annotation or, when that is 0.0.0.0,
//! the IP header's destination) is looked up by longest-prefix match, the
//! annotation set to the route's gateway (if any), and the packet sent to
//! the route's output; packets that match no route are dropped (counted).
//! Its `table` lists the routes sorted by address. paraclick's looks up in
//! the same 16-8-8 trie as the other route lookup classes.
//!
//! Handlers:
//! - `table` (read): the routing table, one route per line, sorted by
//!   address (Click's tab-separated format).
//! - `lookup ADDR` (read, with a parameter): `OUT`, `OUT GW`, or `-1`.
//!   Writing an address to `lookup` looks it up too; `lookup` and
//!   `last_lookup` read without a parameter return that last answer.
//! - `add`, `set`, `remove`, `ctrl` (write): as LinearIPLookup's.
//!
//! Example:
//!
//!     rt :: SortedIPLookup(18.26.4/24 0, 0/0 18.26.4.1 1);

use super::route_table::{class_spec, Kind, RouteKind};
use paraclick_runtime::ClassSpec;

/// SortedIPLookup: LinearIPLookup's handlers, the table listed sorted (as
/// RadixIPLookup's).
pub enum Sorted {}

impl RouteKind for Sorted {
    const KIND: Kind = Kind::Radix;
}

pub fn spec() -> ClassSpec {
    class_spec::<Sorted>("SortedIPLookup")
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn routes_like_static_ip_lookup() {
        super::super::range_ip_lookup::routes_like_static_ip_lookup("SortedIPLookup");
    }

    #[test]
    fn table_is_sorted_and_changes() {
        let h = harness("SortedIPLookup(20/8 1, 10/8 2.2.2.2 0, 0/0 1)", 2);
        assert_eq!(
            h.read("table").unwrap(),
            "0.0.0.0/0\t\t-\t\t1\n10.0.0.0/8\t\t2.2.2.2\t\t0\n20.0.0.0/8\t\t-\t\t1\n"
        );
        h.write("set", "10/8 1").unwrap();
        h.write("remove", "0/0").unwrap();
        assert_eq!(h.read("lookup 10.0.0.1").unwrap(), "1");
        assert_eq!(h.read("lookup 30.0.0.1").unwrap(), "-1");
        // LinearIPLookup has no flush, nor has SortedIPLookup.
        assert_err(h.write("flush", ""), "no write handler 'e.flush'");
    }
}
