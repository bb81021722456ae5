//! # IPAddrPairRewriter
//!
//! IPAddrPairRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TIMEOUT, GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites IP packets' addresses by address pair.
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! Like IPAddrRewriter, but mappings are per (source, destination) pair:
//! `pattern SADDR DADDR FOUTPUT ROUTPUT`, either field `-` (unchanged),
//! SADDR possibly a range or prefix as in IPAddrRewriter. Any IP protocol;
//! TCP and UDP checksums follow the addresses.
//!
//! Keywords, handlers: as IPAddrRewriter's; `table` lines read
//! `(SA, DA) => (SA', DA') [OUTPUT]`.
//!
//! Example:
//!
//!     IPAddrPairRewriter(pattern 192.0.2.1 - 0 1, drop)

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPAddrPairRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Pair)
}
