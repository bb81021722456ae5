//! # IPRewriter
//!
//! IPRewriter(INPUTSPEC1, ..., INPUTSPECn [, keywords TCP_TIMEOUT, TCP_DONE_TIMEOUT, TCP_NODATA_TIMEOUT, UDP_TIMEOUT, UDP_STREAMING_TIMEOUT, TIMEOUT, TCP_GUARANTEE, UDP_GUARANTEE, GUARANTEE, REAP_INTERVAL, CAPACITY, MAPPING_CAPACITY, DST_ANNO, REPLY_ANNO])
//!
//! Rewrites TCP and UDP packets' addresses and ports (network
//! address/port translation, NAPT).
//!
//! Ports: 1 or more inputs (one per INPUTSPEC: as many as there are
//! INPUTSPECs must be connected), 1-256 outputs.
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
//! - `pass [OUTPUT]` or `nochange [OUTPUT]`: send it unchanged to OUTPUT
//!   (default 0); install nothing.
//! - `keep FOUTPUT ROUTPUT`: install a mapping that leaves the flow as it
//!   is, sending its packets to FOUTPUT and packets of the reply flow to
//!   ROUTPUT.
//! - `pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT`: rewrite by the
//!   pattern. Each field is a value or `-` (keep the packet's). SADDR may
//!   be a range `L-H` or a prefix `ADDR/LEN`, SPORT a range `L-H`: the new
//!   flow gets a choice not used by any live flow toward the same peer
//!   (the reply flow must be unique): the packet's own source port first
//!   if it is in the range, else one at random; at random always if the
//!   range ends in `?`; sequentially if it ends in `#`. An address range
//!   alone is searched from a random point. Installs the forward mapping
//!   (to FOUTPUT) and the reply mapping `(DA', DP', SA', SP') => (DA, DP,
//!   SA, SP)` (to ROUTPUT). The pattern may also be written `SADDR DADDR`
//!   (addresses only) or `SADDR DADDR SPORT`. A flow rewritten to its
//!   own reverse (source and destination the same) has one mapping, the
//!   reply's: its first packet goes to FOUTPUT, later ones to ROUTPUT.
//! - `pattern PATTERNNAME FOUTPUT ROUTPUT` (or without `pattern`): a
//!   pattern named by an IPRewriterPatterns element.
//! - `ELEMENTNAME`: a mapper element (RoundRobinIPMapper,
//!   SourceIPHashMapper) chooses the pattern and outputs.
//!
//! When no choice is free the packet is dropped and counted in
//! `mapping_failures`. When the table holds CAPACITY flows, a new flow
//! (its rewritten flow already chosen: a sequential range moves on)
//! evicts the flow that would expire first among those past their
//! guarantee, or is dropped and counted if every flow is guaranteed; the
//! table never grows past CAPACITY. A flow is guaranteed for TCP_GUARANTEE
//! (UDP_GUARANTEE, GUARANTEE) after each of its packets; with a
//! TCP_GUARANTEE of 0, a TCP connection with data seen both ways and not
//! closed is guaranteed until it times out (as in Click). Non-TCP/UDP packets, non-first fragments (put an
//! IPReassembler first) and malformed packets are dropped and counted
//! (`bad_packets`). The packet's IP header annotation must be set
//! (CheckIPHeader).
//!
//! Mappings expire after a time without packets: TCP_TIMEOUT for TCP
//! flows with data seen both ways, TCP_NODATA_TIMEOUT for others,
//! TCP_DONE_TIMEOUT once both sides sent FIN or either sent RST;
//! UDP_TIMEOUT, or UDP_STREAMING_TIMEOUT once the flow is streaming (three
//! packets or more, both ways). Times are the router's (simulated under
//! `--simtime`). An
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
//!   `TIMEOUT` sets all but TCP_DONE_TIMEOUT at once.
//!   `UDP_STREAMING_TIMEOUT` is also spelled `STREAMING_TIMEOUT`.
//! - `TCP_GUARANTEE`, `UDP_GUARANTEE` (time, default 5 seconds); `GUARANTEE`
//!   sets both (and that of other flows): see above.
//! - `REAP_INTERVAL` (time, default 15 minutes).
//! - `CAPACITY` or `MAPPING_CAPACITY` (integer, default 2097152): most
//!   flows held. MAPPING_CAPACITY may instead name another rewriter: the
//!   two then share that one's capacity (one count of flows, eviction
//!   among all of them; `size` and `capacity` are the shared ones).
//! - `DST_ANNO` (boolean, default true): set the destination address
//!   annotation to the rewritten destination.
//! - `REPLY_ANNO` (one-byte annotation, as Paint's `ANNO`): each flow
//!   keeps the value its first packet had in this annotation, and sets it
//!   on the packets of its reply direction (ICMPRewriter can do the same
//!   for errors).
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
//! - `tcp_lookup`, `udp_lookup` (read with `SADDR SPORT DADDR DPORT`):
//!   that flow as its mapping (either direction) rewrites it, in the same
//!   form, or nothing if there is none.
//! - `nmappings`, `table_size` (read): flows in the table; `size` (read):
//!   flows in the flow set (more when rewriters share a capacity).
//! - `capacity` (read/write): CAPACITY (Click's default is unlimited;
//!   here it is bounded). Lowering it evicts the flows that expire first.
//! - `mapping_failures` (read): flows that got no mapping.
//! - `patterns` (read): one line per INPUTSPEC, as Click prints them: a
//!   pattern as `SADDR SPORT DADDR DPORT` (ranges as `L-H`, a port range
//!   of every port as `-`, a `SADDR DADDR` pattern in that form), followed
//!   by ` [FLOWS]` while it has live flows; else `<drop>`, `<nochange>`,
//!   `<keep>`, `<mapper>`.
//! - `pattern0`, `pattern1`, ... (write): replaces that input's INPUTSPEC
//!   (any form above); the flows its old one made are removed.
//! - `bad_packets` (read): packets dropped as untranslatable.
//! - `clear` (write): removes every mapping.
//!
//! Errors in INPUTSPECs are reported one a line in Click's words
//! (`input spec 0: bad source port`, `output port out of range`, ...).
//!
//! A batch whose packets go to different outputs leaves in pieces, in
//! the packets' arrival order.
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
