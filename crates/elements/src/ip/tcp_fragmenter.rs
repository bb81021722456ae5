//! # TCPFragmenter
//!
//! TCPFragmenter(MTU [, keyword MTU_ANNO])
//!
//! Fragments TCP packets to a maximum TCP payload size.
//!
//! Ports: 1 input, 1 output. Processing: push.
//!
//! Expects IPv4 packets with the network header set (CheckIPHeader,
//! MarkIPHeader). A TCP packet whose payload is longer than the MTU is
//! split into packets each carrying at most MTU bytes of it, in order.
//! Each is a copy of the input packet (whatever comes before the IP
//! header, such as an Ethernet header, the IP header with its options,
//! the TCP header with its options, the annotations) except for the IP
//! total length and checksum, the TCP checksum, the TCP sequence number
//! (advanced by the payload before it) and the FIN flag, which only the
//! last piece keeps. Every other packet (not TCP, an IP fragment, a
//! payload that fits) passes unchanged; bytes after the IP total length
//! (link-layer padding) are not copied into the pieces. A TCP packet too
//! short for the header lengths it claims is dropped ("bad TCP header").
//!
//! Arguments:
//! - `MTU` (unsigned, default 0): if nonzero, fragment every payload
//!   larger than MTU.
//! - `MTU_ANNO` (offset below 23 in the user annotation area): if given
//!   and the two bytes there (little-endian) are nonzero, they are the
//!   MTU for that packet when smaller than MTU or when MTU is 0.
//!
//! One of MTU or MTU_ANNO must be given.
//!
//! Handlers:
//! - `count` (read): packets seen.
//! - `fragmented_count` (read): packets fragmented.
//! - `fragments` (read): pieces emitted by fragmenting.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> TCPFragmenter(1400) -> ...

use paraclick_packet::anno::USER_ANNO_SIZE;
use paraclick_packet::wire::{Ipv4Header, TcpHeader};
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, PerThreadCount};

pub struct TCPFragmenter {
    mtu: usize,
    mtu_anno: Option<usize>,
    count: PerThreadCount,
    fragmented: PerThreadCount,
    fragments: PerThreadCount,
}

const REASONS: &[&str] = &["bad TCP header", "out of packet buffers"];
const BAD_TCP: u8 = 0;
const NO_BUFFERS: u8 = 1;

pub fn spec() -> ClassSpec {
    ClassSpec::element("TCPFragmenter", "1/1", "h", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TCPFragmenter, String> {
    let mut a = cx.args();
    let mtu = a.read_p::<u32>("MTU").unwrap_or(0) as usize;
    let mtu_anno = a.read::<usize>("MTU_ANNO");
    a.complete()?;
    if mtu_anno.is_some_and(|o| o + 2 > USER_ANNO_SIZE) {
        return Err(format!(
            "MTU_ANNO: expected an offset below {}",
            USER_ANNO_SIZE - 1
        ));
    }
    if mtu == 0 && mtu_anno.is_none() {
        return Err("specify MTU or MTU_ANNO".into());
    }
    Ok(TCPFragmenter {
        mtu,
        mtu_anno,
        count: PerThreadCount::new(cx.nthreads),
        fragmented: PerThreadCount::new(cx.nthreads),
        fragments: PerThreadCount::new(cx.nthreads),
    })
}

/// Where a whole TCP segment lies: (network header offset, IP header
/// length, TCP header length, IP total length).
struct Layout {
    nh: usize,
    hlen: usize,
    thlen: usize,
    total: usize,
}

enum Look {
    Pass,
    Bad,
    Split(Layout),
}

impl TCPFragmenter {
    fn mtu_for(&self, p: &Packet) -> usize {
        let mut mtu = self.mtu;
        if let Some(o) = self.mtu_anno {
            let u = &p.anno().user;
            let a = usize::from(u16::from_le_bytes([u[o], u[o + 1]]));
            if a != 0 && (mtu == 0 || a < mtu) {
                mtu = a;
            }
        }
        mtu
    }

    fn look(&self, p: &Packet, mtu: usize) -> Look {
        let (Some(off), Some(nh)) = (p.network_header_offset(), p.network_header()) else {
            return Look::Pass;
        };
        let Ok(h) = Ipv4Header::new_checked(nh) else {
            return Look::Pass;
        };
        if h.protocol() != 6 || h.is_fragment() || mtu == 0 {
            return Look::Pass;
        }
        let (hlen, total) = (h.header_len(), usize::from(h.total_len()));
        let seg = &nh[hlen..total];
        if seg.len() < 20 {
            return Look::Bad;
        }
        let thlen = usize::from(seg[12] >> 4) * 4;
        if thlen < 20 || thlen > seg.len() {
            return Look::Bad;
        }
        if seg.len() - thlen <= mtu || off < 0 {
            return Look::Pass;
        }
        Look::Split(Layout {
            nh: off as usize,
            hlen,
            thlen,
            total,
        })
    }

    /// The pieces of `p`, in order; None if the pool ran dry.
    fn split(&self, p: &Packet, l: &Layout, mtu: usize, out: &mut Batch) -> Option<usize> {
        let d = p.data();
        let head = l.nh + l.hlen + l.thlen;
        let end = l.nh + l.total;
        let payload = end - head;
        let seq = u32::from_be_bytes([
            d[head - l.thlen + 4],
            d[head - l.thlen + 5],
            d[head - l.thlen + 6],
            d[head - l.thlen + 7],
        ]);
        let mut pieces = Batch::new();
        let mut off = 0;
        while off < payload {
            let len = mtu.min(payload - off);
            let mut q = Packet::make(p.headroom(), head + len, 0)?;
            {
                let f = q.data_mut();
                f[..head].copy_from_slice(&d[..head]);
                f[head..].copy_from_slice(&d[head + off..head + off + len]);
                let ip = &mut f[l.nh..];
                let mut h = Ipv4Header::new_unchecked(&mut ip[..]);
                h.set_total_len((l.hlen + l.thlen + len) as u16);
                h.fill_checksum();
                let (src, dst) = (h.src_addr(), h.dst_addr());
                let mut t = TcpHeader::new_unchecked(&mut ip[l.hlen..]);
                t.set_seq_number(seq.wrapping_add(off as u32));
                if off + len < payload {
                    t.set_flags(t.flags() & !1);
                }
                t.fill_checksum(src, dst);
            }
            *q.anno_mut() = *p.anno();
            q.set_trace(p.trace());
            if let Some(m) = p.mac_header_offset().filter(|&m| m >= 0) {
                q.set_mac_header(m as usize);
            }
            q.set_network_header(l.nh, l.hlen);
            pieces.push(q);
            off += len;
        }
        let n = pieces.len();
        out.append(&mut pieces);
        Some(n)
    }
}

impl Element for TCPFragmenter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("fragmented_count", |e, _| e.fragmented.get().to_string()),
        Handler::read("fragments", |e, _| e.fragments.get().to_string()),
    ];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        self.count.add(cx.thread(), batch.len() as u64);
        let mut out = Batch::new();
        for p in batch.drain() {
            let mtu = self.mtu_for(&p);
            match self.look(&p, mtu) {
                Look::Pass => out.push(p),
                Look::Bad => cx.drop_packet_for(BAD_TCP, p),
                Look::Split(l) => match self.split(&p, &l, mtu, &mut out) {
                    Some(n) => {
                        self.fragmented.inc(cx.thread());
                        self.fragments.add(cx.thread(), n as u64);
                    }
                    None => cx.drop_packet_for(NO_BUFFERS, p),
                },
            }
        }
        if !out.is_empty() {
            cx.push(0, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    const FIN: u8 = 1;
    const PSH: u8 = 8;
    const ACK: u8 = 16;

    fn segment(data: &[u8], flags: u8) -> Vec<u8> {
        Ip::new("10.0.0.1", "10.0.0.2", 6)
            .id(77)
            .tcp_full(1000, 80, 5000, 9, flags, 512, &[1, 1, 1, 0], data)
            .bytes()
    }

    fn with_ether(ip: &[u8]) -> paraclick_packet::Packet {
        let f = ether_frame(eth("0:1:2:3:4:5"), eth("0:a:b:c:d:e"), 0x0800, ip);
        let mut p = pkt(&f);
        p.set_network_header(14, usize::from(ip[0] & 15) * 4);
        p
    }

    #[test]
    fn splits_payload_keeps_headers_advances_seq() {
        let data: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
        let h = harness("TCPFragmenter(100)", 1);
        h.push(0, vec![with_ether(&segment(&data, PSH | ACK | FIN))]);
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        let mut got = Vec::new();
        for (i, p) in out.iter().enumerate() {
            let d = p.data();
            assert_eq!(d[..14], with_ether(&segment(&[], 0)).data()[..14]);
            let ipd = &d[14..];
            let len = [100, 100, 50][i];
            let want = segment(
                &data[i * 100..i * 100 + len],
                if i == 2 { PSH | ACK | FIN } else { PSH | ACK },
            );
            let mut want_seq = want.clone();
            // Sequence number advanced by the payload before the piece.
            let seq = 5000 + (i as u32) * 100;
            want_seq[24..28].copy_from_slice(&seq.to_be_bytes());
            let seg = &mut want_seq[20..];
            seg[16..18].copy_from_slice(&[0, 0]);
            let c = transport_checksum(ip("10.0.0.1"), ip("10.0.0.2"), 6, seg);
            seg[16..18].copy_from_slice(&c.to_be_bytes());
            assert_eq!(ipd, &want_seq[..], "piece {i}");
            assert!(ip_checksum_ok(ipd));
            assert_eq!(p.network_header().unwrap().len(), ipd.len());
            got.extend_from_slice(&ipd[44..]);
        }
        assert_eq!(got, data);
        assert_eq!(h.read("count").unwrap(), "1");
        assert_eq!(h.read("fragmented_count").unwrap(), "1");
        assert_eq!(h.read("fragments").unwrap(), "3");
    }

    #[test]
    fn others_pass_unchanged() {
        let h = harness("TCPFragmenter(10)", 1);
        let small = segment(b"0123456789", ACK);
        let udp = Ip::new("10.0.0.1", "10.0.0.2", 17)
            .udp(1, 2, &[7; 100])
            .bytes();
        let frag = Ip::new("10.0.0.1", "10.0.0.2", 6)
            .frag(0x2000)
            .payload(&[0; 100])
            .bytes();
        h.push(
            0,
            vec![
                marked(&small),
                marked(&udp),
                marked(&frag),
                pkt(&segment(&[1; 50], 0)),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].data(), &small[..]);
        assert_eq!(out[1].data(), &udp[..]);
        assert_eq!(out[2].data(), &frag[..]);
        assert_eq!(h.read("fragmented_count").unwrap(), "0");
    }

    #[test]
    fn mtu_annotation_lowers_the_mtu() {
        let h = harness("TCPFragmenter(1000, MTU_ANNO 4)", 1);
        let mut p = marked(&segment(&[3; 300], ACK));
        p.anno_mut().user[4..6].copy_from_slice(&120u16.to_le_bytes());
        let q = marked(&segment(&[3; 300], ACK));
        h.push(0, vec![p, q]);
        let out = h.output(0);
        assert_eq!(out.len(), 4, "120, 120, 60 and the unannotated one whole");
        assert_eq!(out[3].len(), 20 + 24 + 300);
        let h = harness("TCPFragmenter(MTU_ANNO 0)", 1);
        h.push(0, vec![marked(&segment(&[3; 300], ACK))]);
        assert_eq!(h.output(0).len(), 1, "annotation 0: no MTU");
    }

    #[test]
    fn bad_tcp_header_dropped() {
        let h = harness("TCPFragmenter(10)", 1);
        let mut long_header = segment(&[0; 10], ACK);
        long_header[20 + 12] = 0xf0; // a 60-byte TCP header in 34 bytes
        let short = Ip::new("10.0.0.1", "10.0.0.2", 6).payload(&[0; 10]).bytes();
        h.push(0, vec![marked(&long_header), marked(&short)]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("drop_reasons").unwrap(), "bad TCP header 2\n");
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("TCPFragmenter", 1),
            "e :: TCPFragmenter: specify MTU or MTU_ANNO",
        );
        assert_err(
            try_harness("TCPFragmenter(MTU_ANNO 23)", 1),
            "e :: TCPFragmenter: MTU_ANNO: expected an offset below 23",
        );
    }
}
