//! # IPRewriter
//!
//! IPRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TCP_TIMEOUT, TCP_DONE_TIMEOUT, TCP_NODATA_TIMEOUT, UDP_TIMEOUT, UDP_STREAMING_TIMEOUT, TIMEOUT, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO])
//!
//! Rewrites TCP and UDP packets' addresses and ports (network
//! address/port translation, NAPT).
//!
//! Ports: 1 or more inputs (one per INPUTSPEC), 1-256 outputs.
//! Processing: push.
//!
//! Keeps a mapping table indexed by flow identifier, the quintuple
//! (source address, source port, destination address, destination port,
//! protocol). A mapping is written
//!
//!     (SA, SP, DA, DP, PROTO) => (SA', SP', DA', DP') [OUTPUT]
//!
//! A packet whose flow has a mapping is rewritten to the new identifier
//! (addresses, ports, IP and TCP/UDP checksums, updated incrementally as
//! RFC 1624 says; a UDP checksum of 0, meaning none, stays 0) and emitted
//! on the mapping's output. Otherwise the INPUTSPEC of the input it
//! arrived on decides:
//!
//! - `drop` or `discard`: drop the packet.
//! - `pass OUTPUT`: send it unchanged to OUTPUT; install nothing.
//! - `keep FOUTPUT ROUTPUT`: install a mapping that leaves the flow as it
//!   is, sending its packets to FOUTPUT and packets of the reply flow to
//!   ROUTPUT.
//! - `pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT`: rewrite by the
//!   pattern. Each field is a value or `-` (keep the packet's). SADDR may
//!   be a range `L-H` or a prefix `ADDR/LEN`, SPORT a range `L-H`: the new
//!   flow gets a choice not used by any live flow toward the same peer
//!   (the reply flow must be unique), chosen at random, or sequentially if
//!   the range ends in `#`, or the packet's own value first if it ends in
//!   `?`. Installs the forward mapping (to FOUTPUT) and the reply mapping
//!   `(DA', DP', SA', SP') => (DA, DP, SA, SP)` (to ROUTPUT).
//! - `PATTERNNAME FOUTPUT ROUTPUT`: a pattern named by an
//!   IPRewriterPatterns element.
//! - `ELEMENTNAME`: a mapper element (RoundRobinIPMapper,
//!   SourceIPHashMapper) chooses the pattern and outputs.
//!
//! When no choice is free, or the table holds CAPACITY flows, the packet
//! is dropped and counted in `mapping_failures`; the table never grows
//! past CAPACITY. Non-TCP/UDP packets, non-first fragments (put an
//! IPReassembler first) and malformed packets are dropped and counted
//! (`bad_packets`). The packet's IP header annotation must be set
//! (CheckIPHeader).
//!
//! Mappings expire after a time without packets: TCP_TIMEOUT for TCP
//! flows with data seen both ways, TCP_NODATA_TIMEOUT for others,
//! TCP_DONE_TIMEOUT once both sides sent FIN or either sent RST;
//! UDP_TIMEOUT, or UDP_STREAMING_TIMEOUT once packets went both ways. An
//! expired flow is forgotten when next looked up, when its public port is
//! wanted, when the table is full, and every REAP_INTERVAL.
//!
//! Multicore: one table shared by all threads, a concurrent hash map whose
//! lookups take no lock; a mapping made on one thread serves replies on any
//! other, and the reply key is claimed atomically, so no two live flows
//! get one public address and port toward one peer. A batch's packets are
//! looked up 32 at a time, their cache misses overlapped once the table
//! outgrows the caches (measured: a lookup among a million flows costs
//! about 1.3 times one among a thousand).
//!
//! Keywords:
//! - `TCP_TIMEOUT` (time, default 24 hours), `TCP_DONE_TIMEOUT` (default
//!   4 minutes), `TCP_NODATA_TIMEOUT` (default 5 minutes), `UDP_TIMEOUT`
//!   (default 5 minutes), `UDP_STREAMING_TIMEOUT` (default UDP_TIMEOUT);
//!   `TIMEOUT` sets all but TCP_DONE_TIMEOUT at once. `TCP_GUARANTEE`,
//!   `UDP_GUARANTEE` are accepted and ignored.
//! - `REAP_INTERVAL` (time, default 15 minutes).
//! - `CAPACITY` or `MAPPING_CAPACITY` (integer, default 2097152): most
//!   flows held.
//! - `DST_ANNO` (boolean, default true): set the destination address
//!   annotation to the rewritten destination.
//!
//! Handlers:
//! - `tcp_table`, `udp_table` (read): the live TCP or UDP mappings, each
//!   flow's forward then reply mapping, one a line, as Click prints them:
//!   `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*FOUTPUT ROUTPUT] iINPUT
//!   expSECONDS` (the starred output is this mapping's; INPUT the input
//!   whose specification made it; SECONDS until it expires if idle).
//! - `table`, `mappings` (read): both, each line beginning with its
//!   protocol (`TCP `, `UDP `). (Click 2.1's IPRewriter has no such
//!   handler.)
//! - `nmappings`, `size` (read): flows in the table.
//! - `capacity` (read/write): CAPACITY (Click's default is unlimited;
//!   here it is bounded).
//! - `mapping_failures` (read): flows that got no mapping.
//! - `patterns` (read): one line per INPUTSPEC, as Click prints them: a
//!   pattern as `SADDR SPORT DADDR DPORT [FLOWS]` (ranges as `L-H`, FLOWS
//!   its live flows), else `<drop>`, `<pass>`, `<keep>`, `<MAPPER>`.
//! - `bad_packets` (read): packets dropped as untranslatable.
//! - `clear` (write): removes every mapping.
//!
//! Example:
//!
//!     rw :: IPRewriter(pattern 192.0.2.1 1024-65535# - - 0 1, drop);
//!     private -> CheckIPHeader -> [0]rw;  public -> CheckIPHeader -> [1]rw;
//!     rw[0] -> to_public;  rw[1] -> to_private;

use super::rewriter::{make, Class, Rewriter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPRewriter", "1-/1-256", "h/h", mk)
        .shared("NAT: one port allocator and mapping table for all flows (and both directions)")
        .drop_reasons(super::rewriter::REASONS)
}

fn mk(cx: &mut ConfigCx<'_>) -> Result<Rewriter, String> {
    make(cx, Class::Ip)
}
