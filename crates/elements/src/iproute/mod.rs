//! IP routing: route lookup (StaticIPLookup/LookupIPRoute, LinearIPLookup,
//! RadixIPLookup, DirectIPLookup over one shared multibit trie),
//! fragmentation and reassembly, and IP / UDP encapsulation.

use paraclick_runtime::Registry;

pub mod direct_ip_lookup;
pub mod dynamic_udp_ip_encap;
pub mod encap;
pub mod ip_encap;
pub mod ip_fragmenter;
pub mod ip_reassembler;
pub mod linear_ip_lookup;
pub mod lookup_ip_route_mp;
pub mod lpm;
pub mod radix_ip_lookup;
pub mod range_ip_lookup;
pub mod route_table;
pub mod sorted_ip_lookup;
pub mod static_ip_lookup;
pub mod udp_ip_encap;

pub fn register(reg: &mut Registry) {
    reg.register(static_ip_lookup::spec());
    reg.alias("LookupIPRoute", "StaticIPLookup");
    reg.register(linear_ip_lookup::spec());
    reg.register(radix_ip_lookup::spec());
    reg.register(direct_ip_lookup::spec());
    reg.register(range_ip_lookup::spec());
    reg.register(sorted_ip_lookup::spec());
    reg.register(lookup_ip_route_mp::spec());
    reg.register(ip_fragmenter::spec());
    reg.register(ip_reassembler::spec());
    reg.register(ip_encap::spec());
    reg.register(udp_ip_encap::spec());
    reg.register(dynamic_udp_ip_encap::spec());
}
