//! # ICMPPingRewriter
//!
//! ICMPPingRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TIMEOUT, GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites ICMP echo requests and replies.
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! An IPRewriter for ICMP echo (type 8) and echo reply (type 0) packets,
//! whose identifier plays the part of the ports: in a pattern
//! `SADDR SPORT DADDR DPORT`, SPORT (a value or range) gives the new
//! identifier and DPORT must be `-`. Replies are mapped back to the
//! original address and identifier; the ICMP checksum is updated
//! incrementally. Other packets are dropped and counted (`bad_packets`).
//!
//! Keywords: `TIMEOUT` (time, default 5 minutes), `REAP_INTERVAL`,
//! `CAPACITY`, `DST_ANNO`, as IPRewriter's.
//!
//! Handlers: as IPRewriter's (`table`, `mappings`, `nmappings`, `size`,
//! `capacity`, `mapping_failures`, `patterns`, `bad_packets`, `clear`).
//!
//! Example:
//!
//!     ICMPPingRewriter(pattern 192.0.2.1 - - - 0 1, drop)

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("ICMPPingRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one port allocator and mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Ping)
}
