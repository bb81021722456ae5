//! Helpers for the IPv6 elements' tests: a registry and packet builders.

#![allow(dead_code)] // helpers some tests do not use yet

pub use crate::test_kit::*;
use paraclick_packet::wire::ipv6::upper_layer_checksum;
use std::net::Ipv6Addr;

/// An IPv6 datagram under construction.
#[derive(Clone, Debug)]
pub struct Ip6 {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub nh: u8,
    pub hlim: u8,
    pub class: u8,
    pub flow: u32,
    pub payload: Vec<u8>,
}

impl Ip6 {
    pub fn new(src: &str, dst: &str, nh: u8) -> Ip6 {
        Ip6 {
            src: a6(src),
            dst: a6(dst),
            nh,
            hlim: 64,
            class: 0,
            flow: 0,
            payload: Vec::new(),
        }
    }

    pub fn hlim(mut self, h: u8) -> Ip6 {
        self.hlim = h;
        self
    }

    pub fn payload(mut self, d: &[u8]) -> Ip6 {
        self.payload = d.to_vec();
        self
    }

    /// A UDP payload with a correct checksum.
    pub fn udp(mut self, sport: u16, dport: u16, data: &[u8]) -> Ip6 {
        let mut seg = Vec::new();
        seg.extend_from_slice(&sport.to_be_bytes());
        seg.extend_from_slice(&dport.to_be_bytes());
        seg.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        seg.extend_from_slice(&[0, 0]);
        seg.extend_from_slice(data);
        let c = upper_layer_checksum(&self.src, &self.dst, 17, &seg);
        seg[6..8].copy_from_slice(&c.to_be_bytes());
        self.nh = 17;
        self.payload = seg;
        self
    }

    /// An ICMPv6 payload with a correct checksum.
    pub fn icmp6(mut self, ty: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Ip6 {
        let mut m = vec![ty, code, 0, 0];
        m.extend_from_slice(&rest);
        m.extend_from_slice(data);
        let c = upper_layer_checksum(&self.src, &self.dst, 58, &m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        self.nh = 58;
        self.payload = m;
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40 + self.payload.len());
        let w0 = (6u32 << 28) | (u32::from(self.class) << 20) | (self.flow & 0xf_ffff);
        v.extend_from_slice(&w0.to_be_bytes());
        v.extend_from_slice(&(self.payload.len() as u16).to_be_bytes());
        v.push(self.nh);
        v.push(self.hlim);
        v.extend_from_slice(&self.src.octets());
        v.extend_from_slice(&self.dst.octets());
        v.extend_from_slice(&self.payload);
        v
    }

    /// The datagram behind an Ethernet header.
    pub fn ether(&self, dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut v = dst.to_vec();
        v.extend_from_slice(&src);
        v.extend_from_slice(&[0x86, 0xdd]);
        v.extend_from_slice(&self.bytes());
        v
    }
}

/// True if the ICMPv6/UDP/TCP checksum of the datagram verifies.
pub fn upper_checksum_ok(d: &[u8]) -> bool {
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&d[8..24]).unwrap());
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&d[24..40]).unwrap());
    upper_layer_checksum(&src, &dst, d[6], &d[40..]) == 0
}
