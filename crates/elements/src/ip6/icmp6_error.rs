//! # ICMP6Error
//!
//! ICMP6Error(SRC, TYPE [, CODE, keywords MTU, PMTU, SET_FIX_ANNO])
//!
//! Generates ICMPv6 error packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Turns each incoming IPv6 packet (network header annotation set) into an
//! ICMPv6 error (RFC 4443) of type TYPE and code CODE, from SRC to the
//! packet's source. The error carries as much of the invoking packet as
//! fits in an MTU-byte packet (1280 by default: the IPv6 minimum MTU, as
//! RFC 4443 §2.4 (c) asks). The output is a fresh IPv6 packet (hop limit
//! 255, traffic class 0) with its network header set, its destination
//! IPv6 annotation set to its destination, and its timestamp set to now;
//! an error about a traced packet carries its trace mark. Connect the output to the routing lookup, as if the error had arrived
//! on an interface, preferably through a rate limiter (RFC 4443 §2.4 (f)).
//!
//! TYPE is an integer or a name: `unreachable` (1), `packettoobig` (2),
//! `timeexceeded` (3), `parameterproblem` (4). CODE (default 0) is an
//! integer or a name: for `unreachable`, `noroute` 0, `admin` 1, `scope`
//! 2, `addr` (or `host`) 3, `port` 4; for `timeexceeded`, `hoplimit` (or
//! `transit`) 0, `reassembly` 1; for `parameterproblem`, `header` 0,
//! `nextheader` 1, `option` 2. `packettoobig` carries PMTU as its MTU;
//! `parameterproblem` takes its pointer from the ICMP_PARAMPROB
//! annotation.
//!
//! As RFC 4443 §2.4 (e) requires, no error is generated (the packet is
//! dropped) in reply to: an ICMPv6 error message (or a packet too short to
//! tell); a packet whose destination is a multicast address, or that
//! arrived as a link-level multicast or broadcast, except for packet too
//! big and for a parameter problem code 2 (unrecognized option); a packet
//! whose source is unspecified, multicast or loopback. A packet without a
//! valid IPv6 header is dropped too.
//!
//! Arguments:
//! - `SRC` (IPv6 address): source of the errors.
//! - `TYPE`, `CODE`: as above.
//! - `MTU` (unsigned, default 1280): the largest error packet generated.
//! - `PMTU` (unsigned, default 1280): the MTU reported by packet too big.
//!
//! Handlers:
//! - `src`, `pmtu` (read/write): the arguments of those names.
//!
//! Example:
//!
//!     dh :: DecIP6HLIM;
//!     dh[1] -> ICMP6Error(2001:db8:1::1, timeexceeded) -> rt;
//!     cl :: CheckLength(1400);
//!     cl[1] -> ICMP6Error(2001:db8:2::1, packettoobig, PMTU 1400) -> rt;

use paraclick_packet::wire::icmpv6::{icmpv6_type, Icmpv6Header};
use paraclick_packet::wire::ipv6::{addr, next_header, ExtHeaderIter};
use paraclick_packet::wire::{Ipv6Header, Ipv6Repr};
use paraclick_packet::{Packet, PacketType, Timestamp};
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::RwLock;

pub struct ICMP6Error {
    src: RwLock<Ipv6Addr>,
    ty: u8,
    code: u8,
    mtu: usize,
    pmtu: AtomicU32,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no error packet made"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMP6Error", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

const TYPES: &[(&str, u8)] = &[
    ("unreachable", icmpv6_type::DEST_UNREACH),
    ("packettoobig", icmpv6_type::PACKET_TOO_BIG),
    ("timeexceeded", icmpv6_type::TIME_EXCEEDED),
    ("parameterproblem", icmpv6_type::PARAM_PROBLEM),
];

fn codes(ty: u8) -> &'static [(&'static str, u8)] {
    match ty {
        icmpv6_type::DEST_UNREACH => &[
            ("noroute", 0),
            ("admin", 1),
            ("scope", 2),
            ("addr", 3),
            ("host", 3),
            ("port", 4),
        ],
        icmpv6_type::TIME_EXCEEDED => &[("hoplimit", 0), ("transit", 0), ("reassembly", 1)],
        icmpv6_type::PARAM_PROBLEM => &[("header", 0), ("nextheader", 1), ("option", 2)],
        _ => &[],
    }
}

fn named(s: &str, names: &[(&str, u8)], what: &str) -> Result<u8, String> {
    let s = s.trim();
    if let Some(&(_, v)) = names.iter().find(|(n, _)| *n == s) {
        return Ok(v);
    }
    u8::from_arg(s, &ArgEnv::default()).map_err(|_| format!("{what}: unknown name '{s}'"))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ICMP6Error, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv6Addr>("SRC");
    let ty = a.read_mp::<String>("TYPE");
    let code = a.read_p::<String>("CODE");
    let mtu = a.read::<u32>("MTU").unwrap_or(1280);
    let pmtu = a.read::<u32>("PMTU").unwrap_or(1280);
    let _ = a.read::<bool>("SET_FIX_ANNO");
    a.complete()?;
    let ty = named(&ty, TYPES, "TYPE")?;
    if !(1..=4).contains(&ty) {
        return Err(format!(
            "ICMPv6 type {ty} is not an error type this element makes"
        ));
    }
    let code = match code {
        Some(c) => named(&c, codes(ty), "CODE")?,
        None => 0,
    };
    if !(96..=65535).contains(&mtu) {
        return Err(format!("MTU must be between 96 and 65535, not {mtu}"));
    }
    Ok(ICMP6Error {
        src: RwLock::new(src),
        ty,
        code,
        mtu: mtu as usize,
        pmtu: AtomicU32::new(pmtu),
    })
}

impl ICMP6Error {
    /// Multicast destinations (and link-level multicast) may get only
    /// these errors (RFC 4443 §2.4 (e.3), (e.4)).
    fn allowed_to_multicast(&self) -> bool {
        self.ty == icmpv6_type::PACKET_TOO_BIG
            || (self.ty == icmpv6_type::PARAM_PROBLEM && self.code == 2)
    }

    fn error_for(&self, p: &Packet) -> Option<Packet> {
        let nh = p.network_header()?;
        let h = Ipv6Header::new_checked(nh).ok()?;
        if h.version() != 6 {
            return None;
        }
        let (src, dst) = (h.src_addr(), h.dst_addr());
        if src.is_unspecified() || src.is_loopback() || addr::is_multicast(&src) {
            return None;
        }
        let link_mc = matches!(
            p.anno().packet_type,
            PacketType::Broadcast | PacketType::Multicast
        );
        if (addr::is_multicast(&dst) || link_mc) && !self.allowed_to_multicast() {
            return None;
        }
        // Never about an ICMPv6 error (nor when the chain hides whether it is).
        let mut it = ExtHeaderIter::new(h.next_header(), h.payload());
        for item in it.by_ref() {
            item.ok()?;
        }
        if it.next_header() == next_header::ICMPV6 {
            let ty = *h.payload().get(it.offset())?;
            if ty < 128 {
                return None;
            }
        }
        let orig = &nh[..40 + usize::from(h.payload_len())];
        let xlen = orig.len().min(self.mtu - 48);
        let len = 48 + xlen;
        let mut q = Packet::new(len)?;
        let src_me = *self.src.read().unwrap_or_else(|e| e.into_inner());
        let d = q.data_mut();
        Ipv6Repr {
            src_addr: src_me,
            dst_addr: src,
            next_header: next_header::ICMPV6,
            payload_len: 8 + xlen,
            hop_limit: 255,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Header::new_unchecked(&mut d[..40]));
        let mut m = Icmpv6Header::new_unchecked(&mut d[40..]);
        m.set_msg_type(self.ty);
        m.set_code(self.code);
        m.set_rest_of_header(match self.ty {
            icmpv6_type::PACKET_TOO_BIG => self.pmtu.load(Ordering::Relaxed),
            icmpv6_type::PARAM_PROBLEM => u32::from(p.anno().icmp_param_off),
            _ => 0,
        });
        m.payload_mut().copy_from_slice(&orig[..xlen]);
        m.fill_checksum(&src_me, &src);
        q.set_network_header(0, 40);
        let a = q.anno_mut();
        a.set_dst_ip6(src);
        a.timestamp = Timestamp::now();
        // An error about a traced packet is traced too, under its number.
        q.set_trace(p.trace());
        Some(q)
    }
}

impl Action for ICMP6Error {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| e.src.read().unwrap_or_else(|e| e.into_inner()).to_string(),
            |e, v, hx| {
                *e.src.write().unwrap_or_else(|e| e.into_inner()) = hx.arg(v)?;
                Ok(())
            },
        ),
        Handler::rw(
            "pmtu",
            |e, _| e.pmtu.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.pmtu.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.error_for(p) {
            Some(q) => {
                *p = q;
                Verdict::Out(0)
            }
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::PacketType;

    #[test]
    fn time_exceeded_carries_the_packet() {
        let h = harness("ICMP6Error(2001:db8::1, timeexceeded, hoplimit)", 1);
        let d = Ip6::new("2001:db8:1::5", "2001:db8:2::5", 17)
            .hlim(1)
            .udp(1, 2, b"payload")
            .bytes();
        h.push(0, vec![marked(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        let e = out[0].data();
        assert_eq!(e.len(), 48 + d.len());
        assert_eq!(e[6], 58);
        assert_eq!(e[7], 255);
        assert_eq!(&e[8..24], &a6("2001:db8::1").octets());
        assert_eq!(&e[24..40], &a6("2001:db8:1::5").octets());
        assert_eq!((e[40], e[41]), (3, 0));
        assert_eq!(&e[48..], &d[..]);
        assert!(upper_checksum_ok(e));
        assert_eq!(out[0].anno().dst_ip6(), a6("2001:db8:1::5"));
        assert_eq!(out[0].network_header().unwrap().len(), e.len());
    }

    #[test]
    fn packet_too_big_with_mtu_and_truncation() {
        let h = harness("ICMP6Error(2001:db8::1, packettoobig, PMTU 1400)", 1);
        let d = Ip6::new("2001:db8:1::5", "2001:db8:2::5", 17)
            .udp(1, 2, &[7u8; 1452])
            .bytes();
        h.push(0, vec![marked(&d)]);
        let out = h.output(0);
        let e = out[0].data();
        assert_eq!(e.len(), 1280);
        assert_eq!((e[40], e[41]), (2, 0));
        assert_eq!(u32::from_be_bytes([e[44], e[45], e[46], e[47]]), 1400);
        assert_eq!(&e[48..], &d[..1232]);
        assert!(upper_checksum_ok(e));
        h.write("pmtu", "1300").unwrap();
        assert_eq!(h.read("pmtu").unwrap(), "1300");
        // Packet too big may answer multicast.
        let mc = Ip6::new("2001:db8:1::5", "ff0e::1", 17)
            .udp(1, 2, b"x")
            .bytes();
        h.push(0, vec![marked(&mc)]);
        assert_eq!(h.output(0).len(), 1);
    }

    #[test]
    fn never_in_reply_to_errors_or_multicast() {
        let h = harness("ICMP6Error(2001:db8::1, unreachable, noroute)", 1);
        let err = Ip6::new("2001:db8:1::5", "2001:db8:2::5", 58)
            .icmp6(1, 0, [0; 4], &[0; 8])
            .bytes();
        let echo = Ip6::new("2001:db8:1::5", "2001:db8:2::5", 58)
            .icmp6(128, 0, [0; 4], b"hi")
            .bytes();
        let mc = Ip6::new("2001:db8:1::5", "ff02::1", 17)
            .udp(1, 2, b"x")
            .bytes();
        let unspec = Ip6::new("::", "2001:db8:2::5", 17).udp(1, 2, b"x").bytes();
        let msrc = Ip6::new("ff02::1", "2001:db8:2::5", 17)
            .udp(1, 2, b"x")
            .bytes();
        let mut link_mc = marked(&Ip6::new("2001:db8:1::5", "2001:db8:2::5", 59).bytes());
        link_mc.anno_mut().packet_type = PacketType::Multicast;
        // An ICMPv6 error behind a destination options header.
        let hidden = Ip6::new("2001:db8:1::5", "2001:db8:2::5", 60)
            .payload(&[58, 0, 1, 4, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0])
            .bytes();
        h.push(
            0,
            vec![
                marked(&err),
                marked(&mc),
                marked(&unspec),
                marked(&msrc),
                link_mc,
                marked(&hidden),
                pkt(&echo),
                marked(&echo[..30]),
                marked(&echo),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1, "only the echo request gets an error");
        assert_eq!(out[0].data()[40], 1);
        assert_eq!(h.drops(), 8);
    }

    #[test]
    fn parameter_problem_pointer_and_config_errors() {
        let h = harness("ICMP6Error(2001:db8::1, parameterproblem, 0)", 1);
        let mut p = marked(&Ip6::new("2001:db8:1::5", "2001:db8:2::5", 59).bytes());
        p.anno_mut().icmp_param_off = 6;
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].data()[47], 6);
        assert_err(
            try_harness("ICMP6Error(2001:db8::1, 128)", 1),
            "e :: ICMP6Error: ICMPv6 type 128 is not an error type this element makes",
        );
        assert_err(
            try_harness("ICMP6Error(1.2.3.4, 1)", 1),
            "e :: ICMP6Error: SRC: expected IPv6 address, not '1.2.3.4'",
        );
        assert_err(
            try_harness("ICMP6Error(::1, timeexceeded, bogus)", 1),
            "e :: ICMP6Error: CODE: unknown name 'bogus'",
        );
        assert_err(
            try_harness("ICMP6Error(::1, 1, MTU 50)", 1),
            "e :: ICMP6Error: MTU must be between 96 and 65535, not 50",
        );
    }
}
