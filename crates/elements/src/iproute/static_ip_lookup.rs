//! # StaticIPLookup
//!
//! StaticIPLookup(ADDR1/MASK1 \[GW1] OUT1, ADDR2/MASK2 \[GW2] OUT2, ...)
//!
//! Simple static IP routing table (also known as LookupIPRoute).
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
//! for the same prefix replaces an earlier one. The table cannot change
//! after configuration (use RadixIPLookup for that).
//!
//! Unlike Click's StaticIPLookup, whose lookups scan the table, paraclick's
//! uses the same 16-8-8 multibit trie as RadixIPLookup: at most three
//! memory loads per lookup whatever the table size.
//!
//! Handlers:
//! - `table` (read): the routing table, one route per line, in
//!   configuration order: `ADDR/LEN`, gateway or `-`, output, separated by
//!   tabs (Click's format).
//! - `lookup ADDR` (read, with a parameter, as in Click): the route for
//!   ADDR, `OUT` or `OUT GW`, or `-1` if no route matches
//!   (`-h 'rt.lookup 10.0.0.1'`, `$(rt.lookup 10.0.0.1)` in a Script).
//!   Writing an address to `lookup` looks it up too; `lookup` and
//!   `last_lookup` read without a parameter return that last answer.
//!
//! Example:
//!
//!     ... -> GetIPAddress(16) -> rt;
//!     rt :: StaticIPLookup(18.26.4.24/32 0,
//!                          18.26.4.255/32 0,
//!                          18.26.4.0/32 0,
//!                          18.26.4/24 1,
//!                          0/0 18.26.4.1 1);
//!     rt[0] -> ToHost;
//!     rt[1] -> ... -> ToDevice(eth0);

use super::route_table::{class_spec, Static};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    class_spec::<Static>("StaticIPLookup")
}
