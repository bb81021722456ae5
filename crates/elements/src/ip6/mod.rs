//! IPv6 elements: header checks and marks, address annotations, hop limit,
//! route lookup (over [`lpm6::Lpm6`]), ICMPv6 errors, neighbour discovery,
//! printing, mirroring, encapsulation and a fast UDP source.
//!
//! Conventions: the IPv6 header is at the network header annotation (set
//! by CheckIP6Header or MarkIP6Header with a 40-byte header length); the
//! destination annotation is `Anno::dst_ip6` (Click's `DST_IP6`).

use paraclick_packet::wire::Ipv6Header;
use paraclick_packet::Packet;
use paraclick_runtime::Registry;

pub mod address_translator;
pub mod check_ip6_header;
pub mod dec_ip6_hlim;
pub mod fast_udp_source_ip6;
pub mod get_ip6_address;
pub mod icmp6_error;
pub mod ip6_encap;
pub mod ip6_fragmenter;
pub mod ip6_mirror;
pub mod ip6_nd_advertiser;
pub mod ip6_nd_solicitor;
pub mod ip6_print;
pub mod lookup_ip6_route;
pub mod lpm6;
pub mod mark_ip6_header;
mod nd;
pub mod protocol_translator;
pub mod set_ip6_address;
pub mod set_ip6_dscp;
pub mod udp_ip6_encap;

pub fn register(reg: &mut Registry) {
    reg.register(check_ip6_header::spec());
    reg.register(dec_ip6_hlim::spec());
    reg.register(fast_udp_source_ip6::spec());
    reg.register(get_ip6_address::spec());
    reg.register(icmp6_error::spec());
    reg.register(ip6_encap::spec());
    reg.register(ip6_fragmenter::spec());
    reg.register(ip6_mirror::spec());
    reg.register(ip6_nd_advertiser::spec());
    reg.register(ip6_nd_solicitor::spec());
    reg.register(ip6_print::spec());
    reg.register(lookup_ip6_route::spec());
    reg.alias("RadixIP6Lookup", "LookupIP6Route");
    reg.alias("DirectIP6Lookup", "LookupIP6Route");
    reg.register(mark_ip6_header::spec());
    reg.register(set_ip6_address::spec());
    reg.register(set_ip6_dscp::spec());
    reg.register(udp_ip6_encap::spec());
    reg.register(address_translator::spec());
    reg.register(protocol_translator::spec64());
    reg.register(protocol_translator::spec46());
}

/// A view of the fixed 40 bytes of the packet's IPv6 header (at its
/// network header annotation); `None` if the annotation is missing or
/// fewer than 40 bytes follow it. Every accessor is in bounds.
#[inline]
pub(crate) fn fixed_ip6_header(p: &mut Packet) -> Option<Ipv6Header<&mut [u8]>> {
    let nh = p.network_header_mut()?;
    Some(Ipv6Header::new_unchecked(nh.get_mut(..40)?))
}
