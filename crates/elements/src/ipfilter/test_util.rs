//! The IP filter language's test helpers, used by this folder alone: an
//! argument environment with the names the tests use, and patterns
//! compiled and run on raw datagrams (`compile`, `class`, `matches`, `ids`)
//! through this folder's private parser and program. The rest comes from
//! the crate's one kit ([`crate::test_kit`]).

#![allow(dead_code)] // helpers some tests do not use

use super::lang::parse_pattern;
use super::program::{Action, Program};
use paraclick_packet::Packet;
use paraclick_runtime::args::{AddrEntry, ArgEnv};
use paraclick_runtime::Verdict;
use std::net::Ipv4Addr;

/// The argument environment of the tests: INTERNALNET 10.0.0.0/8,
/// BASTION 10.1.0.1, mauer 10.0.0.1/24.
pub fn env() -> ArgEnv {
    let mut env = ArgEnv::default();
    let mut add = |n: &str, ip: [u8; 4], len: Option<u8>| {
        env.names.insert(
            n.into(),
            AddrEntry {
                ip: Some(Ipv4Addr::from(ip)),
                prefix_len: len,
                ether: None,
                ..Default::default()
            },
        );
    };
    add("INTERNALNET", [10, 0, 0, 0], Some(8));
    add("BASTION", [10, 1, 0, 1], None);
    add("mauer", [10, 0, 0, 1], Some(24));
    env
}

/// Compiles IPClassifier-style patterns (pattern i → output i).
pub fn compile(pats: &[&str]) -> Program {
    let env = env();
    let rules: Vec<_> = pats
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let e = parse_pattern(p, &env).unwrap_or_else(|m| panic!("{p}: {m}"));
            (e, Action::Out(i))
        })
        .collect();
    Program::compile(&rules)
}

/// The output index of the first of `pats` matching `ip`.
pub fn class(pats: &[&str], ip: &[u8]) -> Option<usize> {
    match compile(pats).run(ip) {
        Verdict::Out(k) => Some(k),
        Verdict::Drop | Verdict::DropFor(_) => None,
    }
}

/// Whether one pattern matches.
pub fn matches(pat: &str, ip: &[u8]) -> bool {
    class(&[pat], ip) == Some(0)
}

/// The first byte after the IP header of each packet (tests tag TCP/UDP
/// packets by their source port's low byte instead, see callers).
pub fn ids(ps: &[Packet]) -> Vec<u16> {
    ps.iter()
        .map(|p| {
            let d = p.network_header().unwrap_or(p.data());
            d.get(4..6).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
        })
        .collect()
}
