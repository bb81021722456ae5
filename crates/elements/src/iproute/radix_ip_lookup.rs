//! # RadixIPLookup
//!
//! RadixIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! IP lookup using a multibit trie, for large routing tables.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Looks up each packet's destination in its routing table, using
//! longest-prefix match, sets the destination annotation to the route's
//! gateway (if it has one), and emits the packet on the route's output.
//! The destination is the destination IP annotation (as GetIPAddress sets
//! it) or, when that is 0.0.0.0, the destination of the IP header (the
//! network header must be set, as CheckIPHeader or MarkIPHeader do).
//! Packets that match no route are dropped (counted).
//!
//! Each argument is a route: a destination prefix (`18.26.4/24`,
//! `18.26.4.0/255.255.255.0`, `0/0`; a bare address is a /32), an optional
//! gateway (an address, or `-` for none) and an output port. A later route
//! for the same prefix replaces an earlier one.
//!
//! The table is a 16-8-8 multibit trie with leaf pushing over one flat
//! array (Click's RadixIPLookup uses a radix trie with 256-way first level
//! and 16-way levels after it): a lookup costs at most three memory loads
//! whatever the size of the table, and a full Internet table of 1M prefixes
//! is fine. The table is shared by all threads: each batch is looked up
//! under one (per-thread sharded) read lock, and handler updates take the
//! write lock, so packets see every update either wholly or not at all.
//!
//! Handlers:
//! - `table` (read): the routing table, one route per line, sorted by
//!   address: `ADDR/LEN`, gateway or `-`, output, separated by tabs
//!   (Click's format).
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
//!     rt :: RadixIPLookup(18.26.4.24/32 0,
//!                         18.26.4/24 1,
//!                         0/0 18.26.4.1 1);
//!     rt[0] -> ToHost;
//!     rt[1] -> ... -> ToDevice(eth0);
//!     // paraclick -h rt.table conf.click
//!     // write rt.add "10.0.0.0/8 18.26.4.2 1"

use super::route_table::{class_spec, Radix};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    class_spec::<Radix>("RadixIPLookup")
}
