//! # TCPRewriter
//!
//! TCPRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TCP_TIMEOUT, TCP_DONE_TIMEOUT, TCP_NODATA_TIMEOUT, TIMEOUT, TCP_GUARANTEE, GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites TCP packets' addresses and ports.
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! An IPRewriter for TCP only (see `paraclick doc IPRewriter` for the
//! INPUTSPECs, timeouts, guarantees and capacity); other packets are
//! dropped and counted in `bad_packets`.
//!
//! It can also change a connection's sequence numbers, as FTPPortMapper
//! asks when it changes a command's length: from a point of one
//! direction's stream on, a number of bytes more or fewer. Later sequence
//! numbers of that direction shift by it, and the other direction's
//! acknowledgement numbers and SACK blocks past the point shift back; the
//! TCP checksum follows. Changes build up; a point more than 2^30 (the
//! largest TCP window) behind a packet's sequence number is forgotten,
//! its change applying to every earlier number from then on. A new
//! mapping has no change.
//!
//! Handlers: `table` (the mappings, as Click prints them, without a
//! protocol column), `mappings`, `tcp_table`, `lookup` (TCP flows, as
//! IPRewriter's `tcp_lookup`), `nmappings`, `table_size`, `size`,
//! `capacity`, `mapping_failures`, `patterns`, `patternN`,
//! `bad_packets`, `clear`, as IPRewriter's.
//!
//! Example:
//!
//!     TCPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, drop)

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("TCPRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one port allocator and mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Tcp)
}
