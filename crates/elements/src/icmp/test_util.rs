//! Helpers for this folder's element tests.

pub use crate::ethernet::test_util::{ip, ipv4, pkt};
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::testing::Harness;
use paraclick_runtime::{Registry, Router};
use std::net::Ipv4Addr;

/// A registry with this folder's classes, the standard ones and the test
/// sinks.
pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::standard::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

/// The element under test (`e`) with `ninputs` inputs fed by
/// `TestSource`s (the test pushes into them directly) and `noutputs`
/// outputs into `TestSink`s `o0`, `o1`, ...; extra configuration may
/// follow `decl` after a `;`.
pub fn try_harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Result<Harness, String> {
    let mut conf = format!("e :: {decl};\n");
    for i in 0..ninputs {
        conf.push_str(&format!("TestSource -> [{i}]e;\n"));
    }
    for i in 0..noutputs {
        conf.push_str(&format!("e[{i}] -> o{i} :: TestSink;\n"));
    }
    let router = Router::from_str(&conf, &reg(), 1).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    Ok(Harness { router })
}

pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    try_harness_io(decl, 1, noutputs)
}

pub fn harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Harness {
    try_harness_io(decl, ninputs, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    harness_io(decl, 1, noutputs)
}

/// An ICMP message (checksum filled): type, code, the 4 bytes after the
/// checksum, and a body.
pub fn icmp(ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut v = vec![ty, code, 0, 0];
    v.extend(rest);
    v.extend(body);
    let c = checksum::checksum(&v);
    v[2..4].copy_from_slice(&c.to_be_bytes());
    v
}

/// An IP datagram with its network header annotation set.
pub fn ip_pkt(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Packet {
    let mut p = pkt(&ipv4(src, dst, proto, payload));
    p.set_network_header(0, 20);
    p
}
