//! # UDPRewriter
//!
//! UDPRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords UDP_TIMEOUT, UDP_STREAMING_TIMEOUT, TIMEOUT, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO])
//!
//! Rewrites UDP packets' addresses and ports.
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! An IPRewriter for UDP only (see `paraclick doc IPRewriter` for the
//! INPUTSPECs, timeouts and capacity); other packets are dropped and
//! counted in `bad_packets`. A UDP checksum of 0 (none) stays 0.
//!
//! Handlers: `table`, `mappings`, `udp_table`, `nmappings`, `size`,
//! `capacity`, `mapping_failures`, `patterns`, `bad_packets`, `clear`, as
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
