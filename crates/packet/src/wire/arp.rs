//! ARP (RFC 826) for Ethernet and IPv4.

use core::net::Ipv4Addr;

use super::ethernet::{ethertype, EtherAddr};
use super::{get_u16, set_u16, Result, WireError};

/// Hardware type for Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

/// ARP operation codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOp {
    /// 1.
    Request,
    /// 2.
    Reply,
    /// Any other value (RARP 3 and 4, InARP, ...).
    Other(u16),
}

impl ArpOp {
    /// Request (1).
    pub const REQUEST: u16 = 1;
    /// Reply (2).
    pub const REPLY: u16 = 2;
}

impl From<u16> for ArpOp {
    #[inline]
    fn from(v: u16) -> Self {
        match v {
            ArpOp::REQUEST => ArpOp::Request,
            ArpOp::REPLY => ArpOp::Reply,
            o => ArpOp::Other(o),
        }
    }
}

impl From<ArpOp> for u16 {
    #[inline]
    fn from(op: ArpOp) -> u16 {
        match op {
            ArpOp::Request => ArpOp::REQUEST,
            ArpOp::Reply => ArpOp::REPLY,
            ArpOp::Other(o) => o,
        }
    }
}

mod field {
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: usize = 8;
    pub const SPA: usize = 14;
    pub const THA: usize = 18;
    pub const TPA: usize = 24;
}

view! {
    /// A view of an ARP packet with Ethernet hardware and IPv4 protocol
    /// addresses (the fixed 28-byte layout).
    ///
    /// `new_checked` only checks the length, so that a view exists for any ARP
    /// packet of at least 28 bytes; [`ArpPacket::is_ethernet_ipv4`] (or
    /// [`ArpRepr::parse`]) tells whether the address fields really are Ethernet
    /// and IPv4.
    ArpPacket,
    /// Wraps `buffer`, checking that it holds 28 bytes.
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Length of an Ethernet/IPv4 ARP packet.
    pub const LEN: usize = 28;

    /// `Err(Truncated)` if the buffer is shorter than 28 bytes.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Hardware type (1 for Ethernet).
    #[inline]
    pub fn htype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::HTYPE)
    }

    /// Protocol type (an EtherType; 0x0800 for IPv4).
    #[inline]
    pub fn ptype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::PTYPE)
    }

    /// Hardware address length (6 for Ethernet).
    #[inline]
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length (4 for IPv4).
    #[inline]
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation code, raw.
    #[inline]
    pub fn oper(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::OPER)
    }

    /// Operation.
    #[inline]
    pub fn operation(&self) -> ArpOp {
        ArpOp::from(self.oper())
    }

    /// True if htype, ptype, hlen and plen describe Ethernet and IPv4.
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.htype() == HTYPE_ETHERNET
            && self.ptype() == ethertype::IPV4
            && self.hlen() == 6
            && self.plen() == 4
    }

    #[inline]
    fn ether_at(&self, at: usize) -> EtherAddr {
        let b = &self.buffer.as_ref()[at..at + 6];
        EtherAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    #[inline]
    fn ip_at(&self, at: usize) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[at..at + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Sender hardware address.
    #[inline]
    pub fn sha(&self) -> EtherAddr {
        self.ether_at(field::SHA)
    }

    /// Sender protocol address.
    #[inline]
    pub fn spa(&self) -> Ipv4Addr {
        self.ip_at(field::SPA)
    }

    /// Target hardware address.
    #[inline]
    pub fn tha(&self) -> EtherAddr {
        self.ether_at(field::THA)
    }

    /// Target protocol address.
    #[inline]
    pub fn tpa(&self) -> Ipv4Addr {
        self.ip_at(field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    #[inline]
    pub fn set_htype(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::HTYPE, v);
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_ptype(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::PTYPE, v);
    }

    /// Sets the hardware address length.
    #[inline]
    pub fn set_hlen(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets the protocol address length.
    #[inline]
    pub fn set_plen(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets the operation code, raw.
    #[inline]
    pub fn set_oper(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::OPER, v);
    }

    /// Sets the operation.
    #[inline]
    pub fn set_operation(&mut self, op: ArpOp) {
        self.set_oper(op.into());
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_sha(&mut self, a: EtherAddr) {
        self.buffer.as_mut()[field::SHA..field::SHA + 6].copy_from_slice(&a.0);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_spa(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA..field::SPA + 4].copy_from_slice(&a.octets());
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_tha(&mut self, a: EtherAddr) {
        self.buffer.as_mut()[field::THA..field::THA + 6].copy_from_slice(&a.0);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_tpa(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA..field::TPA + 4].copy_from_slice(&a.octets());
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for ArpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An Ethernet/IPv4 ARP packet as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: ArpOp,
    pub source_hardware_addr: EtherAddr,
    pub source_protocol_addr: Ipv4Addr,
    pub target_hardware_addr: EtherAddr,
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// A request: "who has `target_ip`? tell `sender_ip` at `sender_mac`".
    /// The target hardware address is zero.
    pub const fn request(sender_mac: EtherAddr, sender_ip: Ipv4Addr, target_ip: Ipv4Addr) -> Self {
        ArpRepr {
            operation: ArpOp::Request,
            source_hardware_addr: sender_mac,
            source_protocol_addr: sender_ip,
            target_hardware_addr: EtherAddr::ZERO,
            target_protocol_addr: target_ip,
        }
    }

    /// A reply: "`sender_ip` is at `sender_mac`", addressed to `target_mac`,
    /// `target_ip`.
    pub const fn reply(
        sender_mac: EtherAddr,
        sender_ip: Ipv4Addr,
        target_mac: EtherAddr,
        target_ip: Ipv4Addr,
    ) -> Self {
        ArpRepr {
            operation: ArpOp::Reply,
            source_hardware_addr: sender_mac,
            source_protocol_addr: sender_ip,
            target_hardware_addr: target_mac,
            target_protocol_addr: target_ip,
        }
    }

    /// The reply to this request from the host owning `my_mac`: it says
    /// that the requested address is at `my_mac`, and goes back to the
    /// requester.
    pub const fn reply_to(&self, my_mac: EtherAddr) -> Self {
        ArpRepr::reply(
            my_mac,
            self.target_protocol_addr,
            self.source_hardware_addr,
            self.source_protocol_addr,
        )
    }

    /// Reads a view: `Err(Truncated)` if short, `Err(Unsupported)` if it is
    /// not Ethernet/IPv4 ARP.
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<ArpRepr> {
        p.check_len()?;
        if !p.is_ethernet_ipv4() {
            return Err(WireError::Unsupported);
        }
        Ok(ArpRepr {
            operation: p.operation(),
            source_hardware_addr: p.sha(),
            source_protocol_addr: p.spa(),
            target_hardware_addr: p.tha(),
            target_protocol_addr: p.tpa(),
        })
    }

    /// Length of the emitted packet (28).
    pub const fn buffer_len(&self) -> usize {
        28
    }

    /// Writes every field, including htype, ptype, hlen and plen.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) {
        p.set_htype(HTYPE_ETHERNET);
        p.set_ptype(ethertype::IPV4);
        p.set_hlen(6);
        p.set_plen(4);
        p.set_operation(self.operation);
        p.set_sha(self.source_hardware_addr);
        p.set_spa(self.source_protocol_addr);
        p.set_tha(self.target_hardware_addr);
        p.set_tpa(self.target_protocol_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A request: who has 10.0.0.2? tell 10.0.0.1 (00-1A-2B-3C-4D-5E).
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype..oper
        0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 10, 0, 0, 1, // sha spa
        0, 0, 0, 0, 0, 0, 10, 0, 0, 2, // tha tpa
    ];

    const MAC1: EtherAddr = EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]);
    const MAC2: EtherAddr = EtherAddr([0x02, 0, 0, 0, 0, 2]);

    #[test]
    fn getters() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.htype(), 1);
        assert_eq!(p.ptype(), 0x0800);
        assert_eq!(p.hlen(), 6);
        assert_eq!(p.plen(), 4);
        assert_eq!(p.oper(), 1);
        assert_eq!(p.operation(), ArpOp::Request);
        assert!(p.is_ethernet_ipv4());
        assert_eq!(p.sha(), MAC1);
        assert_eq!(p.spa(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.tha(), EtherAddr::ZERO);
        assert_eq!(p.tpa(), Ipv4Addr::new(10, 0, 0, 2));
    }

    #[test]
    fn setters() {
        let mut buf = [0u8; 28];
        let mut p = ArpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_htype(6);
        assert_eq!(p.htype(), 6);
        p.set_ptype(0x86dd);
        assert_eq!(p.ptype(), 0x86dd);
        p.set_hlen(8);
        assert_eq!(p.hlen(), 8);
        p.set_plen(16);
        assert_eq!(p.plen(), 16);
        assert!(!p.is_ethernet_ipv4());
        p.set_oper(3);
        assert_eq!(p.operation(), ArpOp::Other(3));
        p.set_operation(ArpOp::Reply);
        assert_eq!(p.oper(), 2);
        p.set_sha(MAC2);
        assert_eq!(p.sha(), MAC2);
        p.set_spa(Ipv4Addr::new(1, 2, 3, 4));
        assert_eq!(p.spa(), Ipv4Addr::new(1, 2, 3, 4));
        p.set_tha(MAC1);
        assert_eq!(p.tha(), MAC1);
        p.set_tpa(Ipv4Addr::new(5, 6, 7, 8));
        assert_eq!(p.tpa(), Ipv4Addr::new(5, 6, 7, 8));
        assert_eq!(
            p.into_inner()[8..],
            [2, 0, 0, 0, 0, 2, 1, 2, 3, 4, 0, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 5, 6, 7, 8]
        );
    }

    #[test]
    fn truncated() {
        for len in 0..28 {
            assert_eq!(
                ArpPacket::new_checked(&REQUEST[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
    }

    #[test]
    fn op_conversions() {
        for v in 0..6u16 {
            assert_eq!(u16::from(ArpOp::from(v)), v);
        }
    }

    #[test]
    fn repr_parse_emit() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        let r = ArpRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            ArpRepr::request(MAC1, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        );
        let mut buf = [0xeeu8; 28];
        r.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST);
        assert_eq!(r.buffer_len(), 28);

        let reply = r.reply_to(MAC2);
        assert_eq!(
            reply,
            ArpRepr::reply(
                MAC2,
                Ipv4Addr::new(10, 0, 0, 2),
                MAC1,
                Ipv4Addr::new(10, 0, 0, 1)
            )
        );
        let mut buf = [0u8; 28];
        let mut v = ArpPacket::new_unchecked(&mut buf[..]);
        reply.emit(&mut v);
        assert_eq!(ArpRepr::parse(&v), Ok(reply));
        assert_eq!(v.oper(), 2);
    }

    #[test]
    fn repr_rejects_other_types() {
        let mut buf = REQUEST;
        buf[5] = 16; // plen
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..])),
            Err(WireError::Unsupported)
        );
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..20])),
            Err(WireError::Truncated)
        );
    }
}
