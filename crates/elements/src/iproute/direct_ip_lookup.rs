//! # DirectIPLookup
//!
//! DirectIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! IP routing lookup using direct-indexed tables.
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
//!
//! Click's DirectIPLookup implements DIR-24-8-BASIC (Gupta, Lin and
//! McKeown): one or two memory accesses per lookup, 33 MB of tables, at
//! most 2^16 /24s holding longer prefixes. paraclick's shares
//! RadixIPLookup's direct-indexed 16-8-8 trie: at most three accesses per
//! lookup, memory in proportion to the table, and no capacity limit but
//! memory.
//!
//! Handlers:
//! - `table` (read): the routing table, one route per line, sorted by
//!   address (Click's tab-separated format).
//! - `lookup ADDR` (read, with a parameter, as in Click): the route for
//!   ADDR, `OUT` or `OUT GW`, or `-1` if no route matches
//!   (`-h 'rt.lookup 10.0.0.1'`, `$(rt.lookup 10.0.0.1)` in a Script).
//!   Writing an address to `lookup` looks it up too; `lookup` and
//!   `last_lookup` read without a parameter return that last answer.
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
//!     rt :: DirectIPLookup(18.26.4/24 0, 0/0 18.26.4.1 1);

use super::route_table::{class_spec, Direct};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    class_spec::<Direct>("DirectIPLookup")
}
