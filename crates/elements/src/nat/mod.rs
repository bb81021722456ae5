//! Network address translation: Click's rewriter family (IPRewriter,
//! TCPRewriter, UDPRewriter, IPAddrRewriter, IPAddrPairRewriter,
//! ICMPPingRewriter, ICMPRewriter), its mappers (RoundRobinIPMapper,
//! SourceIPHashMapper), named patterns (IPRewriterPatterns) and
//! FTPPortMapper.
//!
//! The logic lives in plain modules: `flow` (flow identifiers, reading and
//! rewriting packets with incremental checksums), `pattern` (patterns,
//! input specifications, candidate allocation), `table` (the concurrent
//! flow table: both directions, timeouts, capacity), `map` (its concurrent
//! hash map, with batched prefetching lookups), `mapper`; `rewriter`
//! is the element engine every rewriter class shares.

use paraclick_runtime::Registry;

pub mod flow;
pub mod ftp_port_mapper;
pub mod icmp_ping_rewriter;
pub mod icmp_rewriter;
pub mod ip_addr_pair_rewriter;
pub mod ip_addr_rewriter;
pub mod ip_rewriter;
pub mod ip_rewriter_patterns;
pub mod map;
pub mod mapper;
pub mod pattern;
pub mod rewriter;
pub mod round_robin_ip_mapper;
pub mod source_ip_hash_mapper;
pub mod table;
pub mod tcp_rewriter;
pub mod udp_rewriter;

#[cfg(test)]
mod tests;

pub fn register(reg: &mut Registry) {
    reg.register(ip_rewriter::spec());
    reg.register(tcp_rewriter::spec());
    reg.register(udp_rewriter::spec());
    reg.register(ip_addr_rewriter::spec());
    reg.register(ip_addr_pair_rewriter::spec());
    reg.register(icmp_ping_rewriter::spec());
    reg.register(icmp_rewriter::spec());
    reg.register(round_robin_ip_mapper::spec());
    reg.register(source_ip_hash_mapper::spec());
    reg.register(ip_rewriter_patterns::spec());
    reg.register(ftp_port_mapper::spec());
}
