//! # IPEncap
//!
//! IPEncap(PROTO, SRC, DST, keywords TTL, DSCP, ECT, CE, TOS, DF)
//!
//! Encapsulates packets in a static IP header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends to each packet a 20-byte IP header (no options) with protocol
//! PROTO, source SRC and destination DST, a total length covering the
//! whole packet, a fresh identification and a correct checksum; marks it
//! as the packet's network header and sets the destination IP annotation
//! to DST. This is most useful for IP-in-IP encapsulation; StripIPHeader
//! removes the header again. The header goes into the packet's headroom (a
//! packet without enough headroom is copied into a larger buffer). A packet
//! that would exceed 65535 bytes is dropped, counted.
//!
//! PROTO is a number or a name (`ipip`, `tcp`, `udp`, `icmp`, `gre`,
//! `esp`, ...). If DST is `DST_ANNO`, each packet's destination is its
//! destination IP annotation.
//!
//! Identifications: each thread takes blocks of 64 consecutive numbers from
//! a shared counter, so one thread numbers its packets 0, 1, 2, ... and
//! threads never reuse each other's numbers before the counter wraps.
//!
//! Keyword arguments:
//! - `TTL` (byte, default 250): time to live.
//! - `DSCP` (0-63, default 0): the DSCP bits of the TOS byte.
//! - `ECT` (boolean or `2`, default false): ECN-capable transport: true
//!   (or `1`, `yes`) sets the ECN bits to 1, `2` sets them to 2.
//! - `CE` (boolean, default false): sets the ECN bits to 3.
//! - `TOS` (byte, default 0): the whole TOS byte; not with DSCP, ECT or CE.
//! - `DF` (boolean, default false): sets the don't-fragment bit.
//!
//! Handlers:
//! - `src` (read/write): the source address.
//! - `dst` (read/write): the destination address, or `DST_ANNO`.
//!
//! Example:
//!
//!     // IP-in-IP from 18.26.4.24 to 140.247.60.147
//!     IPEncap(4, 18.26.4.24, 140.247.60.147)
//!     IPEncap(ipip, 18.26.4.24, DST_ANNO, TTL 64, DF true)

use super::encap::{write_ip_header, Addr, Dst, DstArg, IpIds, IpProto};
use paraclick_packet::Packet;
use paraclick_runtime::args::{FromArg, Raw};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;

pub struct IPEncap {
    proto: u8,
    src: Addr,
    dst: Dst,
    tos: u8,
    ttl: u8,
    df: bool,
    ids: IpIds,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .shared("one IP ID sequence for all packets")
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPEncap, String> {
    let mut a = cx.args();
    let proto = a.read_mp::<IpProto>("PROTO").0;
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let dst = Dst::new(a.read_mp::<DstArg>("DST"));
    let ttl = a.read::<u8>("TTL").unwrap_or(250);
    let dscp = a.read::<u8>("DSCP");
    let ect = a.read::<Raw>("ECT");
    let ce = a.read::<bool>("CE");
    let tos = a.read::<u8>("TOS");
    let df = a.read::<bool>("DF").unwrap_or(false);
    a.complete()?;
    let ect = match ect.as_ref().map(|r| r.0.trim()) {
        None => 0,
        Some("2") => 2,
        Some(s) => match bool::from_arg(s, cx.env) {
            Ok(b) => u8::from(b),
            Err(_) => return Err(format!("ECT: expected boolean or 2, not '{s}'")),
        },
    };
    let ce = ce.unwrap_or(false);
    let tos = match tos {
        Some(t) => {
            if dscp.is_some() || ect != 0 || ce {
                return Err("TOS cannot be combined with DSCP, ECT or CE".into());
            }
            t
        }
        None => {
            let dscp = dscp.unwrap_or(0);
            if dscp > 63 {
                return Err("DSCP must be between 0 and 63".into());
            }
            if ect != 0 && ce {
                return Err("ECT and CE are mutually exclusive".into());
            }
            (dscp << 2) | if ce { 3 } else { ect }
        }
    };
    Ok(IPEncap {
        proto,
        src: Addr::new(src),
        dst,
        tos,
        ttl,
        df,
        ids: IpIds::new(cx.nthreads),
    })
}

impl Action for IPEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| e.src.get().to_string(),
            |e, v, hx| {
                e.src.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| e.dst.text(),
            |e, v, hx| {
                e.dst.set(hx.arg(v)?);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let total = p.len() + 20;
        if total > 65535 || p.push(20).is_err() {
            return Verdict::DropFor(0);
        }
        let id = self.ids.next(cx);
        let dst = self.dst.get(p.anno().dst_ip);
        let Some(h) = p.data_mut().first_chunk_mut::<20>() else {
            return Verdict::DropFor(0);
        };
        write_ip_header(
            h,
            self.tos,
            total as u16,
            id,
            self.df,
            self.ttl,
            self.proto,
            self.src.get(),
            dst,
        );
        p.set_network_header(0, 20);
        p.anno_mut().dst_ip = dst;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{harness, header, ip, try_harness};
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn prepends_a_valid_header() {
        let h = harness("IPEncap(ipip, 18.26.4.24, 140.247.60.147)", 1);
        let inner = [0xabu8; 40];
        let mut p = Packet::from_slice(&inner).unwrap();
        p.anno_mut().paint = 2;
        h.push(0, vec![p, Packet::from_slice(&inner[..10]).unwrap()]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        let q = &out[0];
        assert_eq!(q.len(), 60);
        assert_eq!(&q.data()[20..], &inner);
        assert_eq!(q.network_header_offset(), Some(0));
        assert_eq!(q.transport_header_offset(), Some(20));
        assert_eq!(q.anno().dst_ip, ip("140.247.60.147"));
        assert_eq!(q.anno().paint, 2);
        let hd = header(q);
        assert!(hd.verify_checksum());
        assert_eq!(hd.version(), 4);
        assert_eq!(hd.header_len(), 20);
        assert_eq!(hd.total_len(), 60);
        assert_eq!(hd.protocol(), 4);
        assert_eq!(hd.ttl(), 250);
        assert_eq!(hd.tos(), 0);
        assert!(!hd.dont_frag());
        assert_eq!(hd.src_addr(), ip("18.26.4.24"));
        assert_eq!(hd.dst_addr(), ip("140.247.60.147"));
        assert_eq!(hd.ident(), 0);
        assert_eq!(header(&out[1]).ident(), 1);
        assert_eq!(header(&out[1]).total_len(), 30);
    }

    #[test]
    fn keywords_and_dst_anno() {
        let h = harness(
            "IPEncap(17, 1.1.1.1, DST_ANNO, TTL 64, DF true, DSCP 10, CE true)",
            1,
        );
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.anno_mut().dst_ip = ip("9.8.7.6");
        h.push(0, vec![p]);
        let out = h.output(0);
        let hd = header(&out[0]);
        assert_eq!(hd.dst_addr(), ip("9.8.7.6"));
        assert_eq!(hd.ttl(), 64);
        assert!(hd.dont_frag());
        assert_eq!(hd.tos(), (10 << 2) | 3);
        assert!(hd.verify_checksum());
        assert_eq!(h.read("dst").unwrap(), "DST_ANNO");
        let h = harness("IPEncap(gre, 1.1.1.1, 2.2.2.2, ECT 2)", 1);
        h.push(0, vec![Packet::from_slice(&[0; 4]).unwrap()]);
        assert_eq!(header(&h.output(0)[0]).tos(), 2);
        let h = harness("IPEncap(gre, 1.1.1.1, 2.2.2.2, TOS 0xb8)", 1);
        h.push(0, vec![Packet::from_slice(&[0; 4]).unwrap()]);
        assert_eq!(header(&h.output(0)[0]).tos(), 0xb8);
    }

    #[test]
    fn handlers_change_addresses() {
        let h = harness("IPEncap(4, 1.1.1.1, 2.2.2.2)", 1);
        assert_eq!(h.read("src").unwrap(), "1.1.1.1");
        assert_eq!(h.read("dst").unwrap(), "2.2.2.2");
        h.write("src", "3.3.3.3").unwrap();
        h.write("dst", "4.4.4.4").unwrap();
        assert_err(
            h.write("dst", "nonsense"),
            "e.dst: expected IP address, not 'nonsense'",
        );
        h.push(0, vec![Packet::from_slice(&[0; 8]).unwrap()]);
        let out = h.output(0);
        let hd = header(&out[0]);
        assert_eq!(hd.src_addr(), ip("3.3.3.3"));
        assert_eq!(hd.dst_addr(), ip("4.4.4.4"));
        assert!(hd.verify_checksum());
    }

    #[test]
    fn no_headroom_reallocates_and_too_big_drops() {
        let h = harness("IPEncap(4, 1.1.1.1, 2.2.2.2)", 1);
        let p = Packet::make(0, 100, 0).unwrap();
        assert_eq!(p.headroom(), 0);
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out[0].len(), 120);
        assert!(header(&out[0]).verify_checksum());
        let big = Packet::make(128, 65520, 0).unwrap();
        h.push(0, vec![big]);
        assert_eq!(h.output(0).len(), 0);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn bad_arguments() {
        for (conf, want) in [
            (
                "IPEncap(4, 1.1.1.1)",
                "e :: IPEncap: missing mandatory DST argument",
            ),
            (
                "IPEncap(frob, 1.1.1.1, 2.2.2.2)",
                "e :: IPEncap: PROTO: expected IP protocol, not 'frob'",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.2, TOS 1, DSCP 2)",
                "e :: IPEncap: TOS cannot be combined with DSCP, ECT or CE",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.2, DSCP 64)",
                "e :: IPEncap: DSCP must be between 0 and 63",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.2, ECT 3)",
                "e :: IPEncap: ECT: expected boolean or 2, not '3'",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.2, ECT true, CE true)",
                "e :: IPEncap: ECT and CE are mutually exclusive",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.x)",
                "e :: IPEncap: DST: expected IP address, not '2.2.2.x'",
            ),
            (
                "IPEncap(4, 1.1.1.1, 2.2.2.2, TTL 256)",
                "e :: IPEncap: TTL: 256 out of range",
            ),
        ] {
            assert_err(try_harness(conf, 1), want);
        }
    }
}
