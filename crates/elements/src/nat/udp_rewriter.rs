//! # UDPRewriter
//!
//! UDPRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TIMEOUT, STREAMING_TIMEOUT, GUARANTEE, UDP_TIMEOUT, UDP_STREAMING_TIMEOUT, UDP_GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites UDP (and TCP) packets' addresses and ports.
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! An IPRewriter for datagram flows (see `paraclick doc IPRewriter` for
//! the INPUTSPECs, guarantees and capacity). As Click's, it rewrites TCP
//! packets too, as it does UDP: its mappings are keyed by the quadruple
//! (addresses and ports, no protocol) and every flow, TCP or UDP, has
//! UDP's timeouts: TIMEOUT (default 5 minutes), or STREAMING_TIMEOUT
//! (default TIMEOUT) once it streams (three packets or more, both ways);
//! GUARANTEE (default 5 seconds). Other packets are dropped and counted
//! in `bad_packets`. A UDP checksum of 0 (none) stays 0.
//!
//! Handlers: `table` (the mappings, as Click prints them, without a
//! protocol column), `mappings`, `udp_table`, `lookup` (as IPRewriter's
//! `udp_lookup`), `nmappings`, `table_size`, `size`, `capacity`,
//! `mapping_failures`, `patterns`, `patternN`, `bad_packets`, `clear`, as
//! IPRewriter's.
//!
//! Example:
//!
//!     UDPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, drop)

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("UDPRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one port allocator and mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Udp)
}
