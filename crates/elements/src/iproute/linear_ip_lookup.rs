//! # LinearIPLookup
//!
//! LinearIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! Simple IP routing table.
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
//! Each argument is a route: `ADDR/MASK [GW] OUT`, as for StaticIPLookup.
//! Routes can be added and removed through handlers while packets flow.
//!
//! Click's LinearIPLookup scans the table; paraclick's uses the same
//! 16-8-8 multibit trie as RadixIPLookup (at most three memory loads per
//! lookup). Only the `table` order differs: configuration order here.
//!
//! Handlers:
//! - `table` (read): the routing table, one route per line, in the order
//!   routes were added (Click's tab-separated format).
//! - `lookup ADDR` (read, with a parameter, as in Click): the route for
//!   ADDR, `OUT` or `OUT GW`, or `-1` if no route matches
//!   (`-h 'rt.lookup 10.0.0.1'`, `$(rt.lookup 10.0.0.1)` in a Script).
//!   Writing an address to `lookup` looks it up too; `lookup` and
//!   `last_lookup` read without a parameter return that last answer.
//! - `add` (write): adds a route, `ADDR/MASK [GW] OUT`; fails if a route
//!   for ADDR/MASK exists.
//! - `set` (write): adds or replaces a route.
//! - `remove` (write): removes the route for `ADDR/MASK` (if GW and OUT are
//!   given, they must match).
//! - `ctrl` (write): one `add`/`set ADDR/MASK [GW] OUT` or
//!   `remove ADDR/MASK` command per line, executed as one atomic operation:
//!   if any fails, none takes effect.
//!
//! Example:
//!
//!     rt :: LinearIPLookup(18.26.4/24 0, 0/0 18.26.4.1 1);
//!     // paraclick -h rt.table conf.click

use super::route_table::{class_spec, Linear};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    class_spec::<Linear>("LinearIPLookup")
}
