//! Ethernet and ARP elements: encapsulation and rewriting of Ethernet
//! headers, host filtering, and the ARP protocol (ARPQuerier,
//! ARPResponder, ARPPrint).

use paraclick_packet::wire::EtherAddr;
use paraclick_runtime::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod arp_faker;
pub mod arp_print;
pub mod arp_querier;
pub mod arp_responder;
pub mod arp_table;
pub mod check_arp_header;
pub mod ensure_ether;
pub mod ether_encap;
pub mod ether_mirror;
pub mod ether_pause_source;
pub mod ether_rewrite;
pub mod ether_vlan_encap;
pub mod get_ether_address;
pub mod host_ether_filter;
pub mod mark_mac_header;
pub mod set_ether_address;
pub mod set_vlan_anno;
pub mod store_ether_address;
pub mod strip_ether_vlan_header;
pub mod vlan_decap;
pub mod vlan_encap;

pub fn register(reg: &mut Registry) {
    reg.register(arp_faker::spec());
    reg.register(ether_pause_source::spec());
    reg.register(arp_print::spec());
    reg.register(arp_querier::spec());
    reg.register(arp_responder::spec());
    reg.register(arp_table::spec());
    reg.register(check_arp_header::spec());
    reg.register(ensure_ether::spec());
    reg.register(ether_encap::spec());
    reg.register(ether_mirror::spec());
    reg.register(ether_rewrite::spec());
    reg.register(ether_vlan_encap::spec());
    reg.register(get_ether_address::spec());
    reg.register(host_ether_filter::spec());
    reg.register(mark_mac_header::spec());
    reg.register(set_ether_address::spec());
    reg.register(set_vlan_anno::spec());
    reg.register(store_ether_address::spec());
    reg.register(strip_ether_vlan_header::spec());
    reg.register(vlan_decap::spec());
    reg.register(vlan_encap::spec());
}

/// An Ethernet address that handlers may change while packets read it:
/// the six bytes in one atomic word (a plain load on the packet path).
pub(crate) struct AtomicEther(AtomicU64);

impl AtomicEther {
    pub fn new(a: EtherAddr) -> AtomicEther {
        AtomicEther(AtomicU64::new(Self::pack(a)))
    }

    fn pack(a: EtherAddr) -> u64 {
        let b = a.0;
        u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    #[inline]
    pub fn get(&self) -> EtherAddr {
        let b = self.0.load(Ordering::Relaxed).to_be_bytes();
        EtherAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    pub fn set(&self, a: EtherAddr) {
        self.0.store(Self::pack(a), Ordering::Relaxed);
    }
}
