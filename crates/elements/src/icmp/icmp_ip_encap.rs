//! # ICMPIPEncap
//!
//! ICMPIPEncap(SRC, DST, TYPE [, CODE, keyword IDENTIFIER])
//!
//! Encapsulates packets in ICMP/IP headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Encapsulates each packet in an ICMP header and a 20-byte IP header,
//! with source IP address SRC, destination IP address DST, ICMP type TYPE
//! and code CODE. The packet's data becomes the ICMP data. If the ICMP
//! type's header has identifier and sequence fields (echo, echo-reply,
//! timestamp, timestamp-reply, inforeq, inforeq-reply, maskreq,
//! maskreq-reply), the identifier is IDENTIFIER and the sequence number
//! advances by one for each packet, starting at 1 (both in network byte
//! order); for other types the four bytes after the checksum are zero.
//! The IP header has TTL 255, no options, and an ID that advances with each
//! packet; both checksums are computed. The result's IP header annotation
//! is set, and its destination IP annotation is DST. A packet whose result
//! would exceed 65535 bytes, or that no buffer can grow to hold the
//! headers, is dropped.
//!
//! Arguments:
//! - `SRC`, `DST` (IP addresses).
//! - `TYPE` (integer 0-255, or a name: `echo-reply` 0, `unreachable` 3,
//!   `sourcequench` 4, `redirect` 5, `echo` 8, `routeradvert` 9,
//!   `routersolicit` 10, `timeexceeded` 11, `parameterproblem` 12,
//!   `timestamp` 13, `timestamp-reply` 14, `inforeq` 15, `inforeq-reply`
//!   16, `maskreq` 17, `maskreq-reply` 18).
//! - `CODE` (integer 0-255, default 0).
//! - `IDENTIFIER` (integer 0-65535, default 0).
//!
//! Handlers:
//! - `src`, `dst` (read/write): the SRC and DST arguments.
//!
//! Example:
//!
//!     InfiniteSource(LIMIT 5) -> ICMPIPEncap(10.0.0.1, 10.0.0.2, echo) -> ...

use paraclick_packet::wire::{checksum, icmp_type, ip_proto};
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};

pub struct ICMPIPEncap {
    src: AtomicU32,
    dst: AtomicU32,
    ty: u8,
    code: u8,
    ident: u16,
    seq: AtomicU16,
    ip_id: AtomicU16,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too long", "no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMPIPEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .shared("one ICMP sequence and IP ID counter for all packets")
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

const TYPES: &[(&str, u8)] = &[
    ("echo-reply", icmp_type::ECHO_REPLY),
    ("unreachable", icmp_type::DEST_UNREACH),
    ("sourcequench", icmp_type::SOURCE_QUENCH),
    ("redirect", icmp_type::REDIRECT),
    ("echo", icmp_type::ECHO_REQUEST),
    ("routeradvert", icmp_type::ROUTER_ADVERT),
    ("routersolicit", icmp_type::ROUTER_SOLICIT),
    ("timeexceeded", icmp_type::TIME_EXCEEDED),
    ("parameterproblem", icmp_type::PARAM_PROBLEM),
    ("timestamp", icmp_type::TIMESTAMP),
    ("timestamp-reply", icmp_type::TIMESTAMP_REPLY),
    ("inforeq", icmp_type::INFO_REQUEST),
    ("inforeq-reply", icmp_type::INFO_REPLY),
    ("maskreq", icmp_type::MASK_REQUEST),
    ("maskreq-reply", icmp_type::MASK_REPLY),
];

fn parse_type(s: &str) -> Result<u8, String> {
    let s = s.trim();
    if let Some(&(_, v)) = TYPES.iter().find(|(n, _)| *n == s) {
        return Ok(v);
    }
    u8::from_arg(s, &ArgEnv::default())
        .map_err(|_| format!("TYPE: expected 0-255 or an ICMP type name, not '{s}'"))
}

/// Whether the type's header carries an identifier and a sequence number.
fn has_seq(ty: u8) -> bool {
    matches!(ty, 0 | 8 | 13..=18)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ICMPIPEncap, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let dst = a.read_mp::<Ipv4Addr>("DST");
    let ty = a.read_mp::<String>("TYPE");
    let code = a.read_p::<u8>("CODE").unwrap_or(0);
    let ident = a.read::<u16>("IDENTIFIER").unwrap_or(0);
    a.complete()?;
    Ok(ICMPIPEncap::new(src, dst, parse_type(&ty)?, code, ident))
}

impl ICMPIPEncap {
    pub(crate) fn new(src: Ipv4Addr, dst: Ipv4Addr, ty: u8, code: u8, ident: u16) -> Self {
        ICMPIPEncap {
            src: AtomicU32::new(src.into()),
            dst: AtomicU32::new(dst.into()),
            ty,
            code,
            ident,
            seq: AtomicU16::new(1),
            ip_id: AtomicU16::new(1),
        }
    }

    pub(crate) fn encap(&self, p: &mut Packet) -> Verdict {
        let total = p.len() + 28;
        let Ok(total16) = u16::try_from(total) else {
            return Verdict::DropFor(0);
        };
        if p.push(28).is_err() {
            return Verdict::DropFor(1);
        }
        let src = self.src.load(Ordering::Relaxed);
        let dst = self.dst.load(Ordering::Relaxed);
        let id = self.ip_id.fetch_add(1, Ordering::Relaxed);
        let d = p.data_mut();
        d[..20].fill(0);
        d[0] = 0x45;
        d[2..4].copy_from_slice(&total16.to_be_bytes());
        d[4..6].copy_from_slice(&id.to_be_bytes());
        d[8] = 255;
        d[9] = ip_proto::ICMP;
        d[12..16].copy_from_slice(&src.to_be_bytes());
        d[16..20].copy_from_slice(&dst.to_be_bytes());
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let m = &mut d[20..];
        m[..8].fill(0);
        m[0] = self.ty;
        m[1] = self.code;
        if has_seq(self.ty) {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            m[4..6].copy_from_slice(&self.ident.to_be_bytes());
            m[6..8].copy_from_slice(&seq.to_be_bytes());
        }
        let c = checksum::checksum(m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        p.set_network_header(0, 20);
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        Verdict::Out(0)
    }
}

impl ICMPIPEncap {
    pub(crate) fn src(&self) -> &AtomicU32 {
        &self.src
    }

    pub(crate) fn dst(&self) -> &AtomicU32 {
        &self.dst
    }
}

pub(crate) fn show(a: &AtomicU32) -> String {
    Ipv4Addr::from(a.load(Ordering::Relaxed)).to_string()
}

impl Action for ICMPIPEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| show(&e.src),
            |e, v, hx| {
                let a: Ipv4Addr = hx.arg(v)?;
                e.src.store(a.into(), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| show(&e.dst),
            |e, v, hx| {
                let a: Ipv4Addr = hx.arg(v)?;
                e.dst.store(a.into(), Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.encap(p)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn echo_with_sequence() {
        let h = harness(
            "ICMPIPEncap(10.0.0.1, 10.0.0.2, echo, IDENTIFIER 0x1234)",
            1,
        );
        h.push(0, vec![pkt(b"abc"), pkt(b"abc")]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        for (i, p) in out.iter().enumerate() {
            let seq = i as u8 + 1;
            let want = Ip::new("10.0.0.1", "10.0.0.2", 0)
                .ttl(255)
                .id(u16::from(seq))
                .icmp(8, 0, [0x12, 0x34, 0, seq], b"abc")
                .bytes();
            assert_eq!(p.data(), &want[..]);
            assert!(ip_checksum_ok(p.data()));
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(p.anno().dst_ip, ip("10.0.0.2"));
        }
    }

    #[test]
    fn other_types_codes_and_handlers() {
        let h = harness("ICMPIPEncap(10.0.0.1, 10.0.0.2, unreachable, 3)", 1);
        h.write("dst", "10.9.9.9").unwrap();
        assert_eq!(h.read("dst").unwrap(), "10.9.9.9");
        assert_eq!(h.read("src").unwrap(), "10.0.0.1");
        h.push(0, vec![pkt(b"orig")]);
        let want = Ip::new("10.0.0.1", "10.9.9.9", 0)
            .ttl(255)
            .id(1)
            .icmp(3, 3, [0; 4], b"orig")
            .bytes();
        assert_eq!(h.output(0)[0].data(), &want[..]);
        assert_err(
            h.write("src", "nope"),
            "e.src: expected IP address, not 'nope'",
        );

        let h = harness("ICMPIPEncap(1.1.1.1, 2.2.2.2, 17)", 1);
        h.push(0, vec![pkt(b"")]);
        let d = h.output(0)[0].data().to_vec();
        assert_eq!(&d[20..22], &[17, 0]);
        assert_eq!(&d[24..28], &[0, 0, 0, 1], "maskreq has a sequence");
    }

    #[test]
    fn oversize_dropped_and_bad_config() {
        let h = harness("ICMPIPEncap(1.1.1.1, 2.2.2.2, echo)", 1);
        h.push(
            0,
            vec![pkt(&vec![0; 65535 - 28]), pkt(&vec![0; 65535 - 27])],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 65535);
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("ICMPIPEncap(1.1.1.1, 2.2.2.2)", 1),
            "e :: ICMPIPEncap: missing mandatory TYPE argument",
        );
        assert_err(
            try_harness("ICMPIPEncap(1.1.1.1, 2.2.2.2, bogus)", 1),
            "e :: ICMPIPEncap: TYPE: expected 0-255 or an ICMP type name, not 'bogus'",
        );
        assert_err(
            try_harness("ICMPIPEncap(1.1.1.1, 2.2.2.2, 256)", 1),
            "e :: ICMPIPEncap: TYPE: expected 0-255 or an ICMP type name, not '256'",
        );
        assert_err(
            try_harness("ICMPIPEncap(1.1.1.1, 2.2.2.2, 8, 256)", 1),
            "e :: ICMPIPEncap: CODE: 256 out of range",
        );
        assert_err(
            try_harness("ICMPIPEncap(1.1.1.1, x, 8)", 1),
            "e :: ICMPIPEncap: DST: expected IP address, not 'x'",
        );
    }
}
