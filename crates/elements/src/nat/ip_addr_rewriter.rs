//! # IPAddrRewriter
//!
//! IPAddrRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TIMEOUT, GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites IP packets' addresses (Basic NAT).
//!
//! Ports: 1 or more inputs, 1-256 outputs. Processing: push.
//!
//! Works on any IP protocol. Looks a packet up by its source address,
//! then by its destination address; a mapping `SA => SA'` rewrites the
//! source of forward packets, and its reply mapping `SA' => SA` the
//! destination of packets coming back. TCP and UDP checksums follow the
//! addresses (their pseudo-header), also in first fragments; later
//! fragments get their IP header changed only.
//!
//! INPUTSPECs as IPRewriter's (`drop`, `pass OUTPUT`, `keep FOUTPUT
//! ROUTPUT`, named patterns, mapper elements) and `pattern SADDR -
//! FOUTPUT ROUTPUT`, where SADDR may be an address, a range `L-H` or a
//! prefix `ADDR/LEN` (suffix `#` sequential, `?` own address first;
//! default random) and the destination must be `-`. A source with no
//! free address is dropped and counted in `mapping_failures`.
//!
//! Keywords: `TIMEOUT` (time, default 5 minutes without packets),
//! `REAP_INTERVAL`, `CAPACITY`, `DST_ANNO`, as IPRewriter's.
//!
//! Handlers: `table`/`mappings` (`SA => SA' [OUTPUT]` and
//! `SA' => SA [*ROUTPUT]` lines), `nmappings`, `size`, `capacity`,
//! `mapping_failures`, `patterns`, `bad_packets`, `clear`.
//!
//! Example:
//!
//!     IPAddrRewriter(pattern 192.0.2.16/28 - 0 1, drop)

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPAddrRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Addr)
}
