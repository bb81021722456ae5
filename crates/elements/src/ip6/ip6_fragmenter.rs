//! # IP6Fragmenter
//!
//! IP6Fragmenter(MTU)
//!
//! Fragments large IPv6 packets (RFC 8200, section 4.5).
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! Expects IPv6 packets with the network header set (CheckIP6Header,
//! MarkIP6Header). A packet whose IPv6 part (from the network header to
//! the end) is at most MTU bytes goes to output 0 unchanged. A larger
//! packet is split into fragments, emitted on output 0; as Click
//! documents, the first fragment is sent last.
//!
//! Each fragment carries the packet's unfragmentable part (the IPv6
//! header and any Hop-by-Hop, Routing, and Destination Options headers
//! that precede a Routing header), a Fragment header (next header 44: the
//! original next header, the offset in 8-byte units, the more-fragments
//! flag on all but the last, and an identification shared by the
//! fragments of one packet and different for every packet fragmented),
//! and as much of the rest as fits in MTU in a multiple of 8 bytes (the
//! last fragment the remainder). Each fragment's payload length is its
//! own. Bytes after the payload length (link-layer padding) are not
//! copied. Fragments are whole IPv6 packets starting at their IPv6 header
//! (Strip link headers before IP6Fragmenter), with the network header set
//! and the packet's annotations (Click documents copying only the
//! broadcast mark; a neighbour lookup after the fragmenter needs the
//! destination annotation, so every annotation is kept).
//!
//! IPv6 has no don't-fragment bit: every packet that can be fragmented
//! is. One that cannot (it already carries a Fragment header, or MTU
//! leaves no room for 8 bytes of its data after the unfragmentable part
//! and a Fragment header) goes to output 1, ordinarily an
//! `ICMP6Error(ADDR, 2, 0)` ("packet too big"); it is dropped, counted,
//! if output 1 is not connected. A packet whose extension headers run
//! past its end is dropped ("bad IPv6 header").
//!
//! Arguments:
//! - `MTU` (unsigned, mandatory): at least 56 (a header, a Fragment
//!   header and 8 bytes); links that carry IPv6 have at least 1280.
//!
//! Handlers:
//! - `fragments` (read): fragments emitted.
//! - `drops` (read): packets too large that could not be fragmented
//!   (sent to output 1 or dropped).
//!
//! Example:
//!
//!     ... -> fr :: IP6Fragmenter(1280) -> Queue(20) -> ...
//!     fr[1] -> ICMP6Error(2001:db8::1, 2, 0) -> ...

use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{
    ClassSpec, ConfigCx, Cx, Element, FlowKey, Handler, Hop, PerThreadCount, RoutingElement,
};
use std::sync::atomic::{AtomicU32, Ordering};

/// Headroom of the fragments (the pool's default).
const HEADROOM: usize = 128;
/// The smallest MTU accepted: a header, a Fragment header and 8 bytes.
const MIN_MTU: usize = 56;

pub struct IP6Fragmenter {
    mtu: usize,
    next_id: AtomicU32,
    fragments: PerThreadCount,
    drops: PerThreadCount,
    too_big_output: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::routing("IP6Fragmenter", "1/1-2", "h", make)
        .per_flow()
        .flow_key(FlowKey::Addresses)
        .drop_reasons(REASONS)
}

/// Why IP6Fragmenter drops a packet (its `drop_reasons`).
const REASONS: &[&str] = &[
    "cannot fragment",
    "bad IPv6 header",
    "out of packet buffers",
];
const CANNOT: u8 = 0;
const BAD_HEADER: u8 = 1;
const NO_BUFFERS: u8 = 2;

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6Fragmenter, String> {
    let mut a = cx.args();
    let mtu = a.read_mp::<u32>("MTU") as usize;
    a.complete()?;
    if mtu < MIN_MTU {
        return Err(format!("MTU {mtu} is too small (at least {MIN_MTU})"));
    }
    Ok(IP6Fragmenter {
        mtu,
        next_id: AtomicU32::new(1),
        fragments: PerThreadCount::new(cx.nthreads),
        drops: PerThreadCount::new(cx.nthreads),
        too_big_output: cx.noutputs > 1,
    })
}

#[inline]
fn ip6_len(p: &Packet) -> usize {
    match p.network_header() {
        Some(h) => h.len(),
        None => p.len(),
    }
}

/// The end of the unfragmentable part and the offset of the next-header
/// byte that names what follows it, for the IPv6 packet `d` (payload
/// length already checked); Err(reason) if it cannot be fragmented.
fn unfragmentable(d: &[u8]) -> Result<(usize, usize), u8> {
    // Walk the extension headers; the part ends after the last Hop-by-Hop
    // or Routing header (a Destination Options header counts only when a
    // Routing header follows it).
    let (mut end, mut nh_at) = (40, 6);
    let (mut pos, mut at) = (40, 6);
    loop {
        match d[at] {
            44 => return Err(CANNOT),
            0 | 43 | 60 => {
                let Some(&l) = d.get(pos + 1) else {
                    return Err(BAD_HEADER);
                };
                let len = (usize::from(l) + 1) * 8;
                if pos + len > d.len() {
                    return Err(BAD_HEADER);
                }
                let kind = d[at];
                at = pos;
                pos += len;
                if kind != 60 {
                    end = pos;
                    nh_at = at;
                }
            }
            _ => return Ok((end, nh_at)),
        }
    }
}

impl IP6Fragmenter {
    /// Splits `p` (larger than the MTU): the fragments into `out`, first
    /// fragment last. Err(reason) gives the packet back.
    fn fragment(&self, p: Packet, out: &mut Batch) -> Result<(), (Packet, u8)> {
        let Some(d) = p.network_header() else {
            return Err((p, BAD_HEADER));
        };
        if d.len() < 40 || d[0] >> 4 != 6 {
            return Err((p, BAD_HEADER));
        }
        let total = 40 + usize::from(u16::from_be_bytes([d[4], d[5]]));
        if total > d.len() {
            return Err((p, BAD_HEADER));
        }
        let d = &d[..total];
        let (ulen, nh_at) = match unfragmentable(d) {
            Ok(u) => u,
            Err(r) => return Err((p, r)),
        };
        let room = self.mtu.saturating_sub(ulen + 8) & !7;
        if total <= self.mtu {
            // Only link-layer padding made it too long: drop the padding.
            let mut p = p;
            let extra = ip6_len(&p) - total;
            p.take(extra);
            out.push(p);
            return Ok(());
        }
        if room == 0 {
            return Err((p, CANNOT));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let next = d[nh_at];
        let body = &d[ulen..];
        let mut pieces = Batch::new();
        let mut first = None;
        let mut off = 0;
        while off < body.len() {
            let len = room.min(body.len() - off);
            let more = off + len < body.len();
            let flen = ulen + 8 + len;
            let Some(mut q) = Packet::make(HEADROOM, flen, 0) else {
                return Err((p, NO_BUFFERS));
            };
            {
                let f = q.data_mut();
                f[..ulen].copy_from_slice(&d[..ulen]);
                f[nh_at] = 44;
                f[4..6].copy_from_slice(&((flen - 40) as u16).to_be_bytes());
                f[ulen] = next;
                f[ulen + 1] = 0;
                let word = ((off / 8) as u16) << 3 | u16::from(more);
                f[ulen + 2..ulen + 4].copy_from_slice(&word.to_be_bytes());
                f[ulen + 4..ulen + 8].copy_from_slice(&id.to_be_bytes());
                f[ulen + 8..].copy_from_slice(&body[off..off + len]);
            }
            *q.anno_mut() = *p.anno();
            q.set_trace(p.trace());
            q.set_network_header(0, 40);
            if off == 0 {
                first = Some(q);
            } else {
                pieces.push(q);
            }
            off += len;
        }
        out.append(&mut pieces);
        if let Some(q) = first {
            out.push(q);
        }
        Ok(())
    }
}

impl Element for IP6Fragmenter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("fragments", |e, _| e.fragments.get().to_string()),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
    ];

    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        self.push(cx, port, Batch::one(p))
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        if batch.iter().all(|p| ip6_len(p) <= self.mtu) {
            if !batch.is_empty() {
                cx.push(0, batch);
            }
            return;
        }
        let mut out = Batch::new();
        let mut too_big = Batch::new();
        for p in batch.drain() {
            if ip6_len(&p) <= self.mtu {
                out.push(p);
                continue;
            }
            let before = out.len();
            match self.fragment(p, &mut out) {
                Ok(()) => {
                    let n = out.len() - before;
                    if n > 1 {
                        self.fragments.add(cx.thread(), n as u64);
                    }
                }
                Err((p, CANNOT)) => {
                    self.drops.inc(cx.thread());
                    too_big.push(p);
                }
                Err((p, reason)) => cx.drop_packet_for(reason, p),
            }
        }
        if !out.is_empty() {
            cx.push(0, out);
        }
        if !too_big.is_empty() {
            if self.too_big_output {
                cx.push(1, too_big);
            } else {
                cx.drop_batch_for(CANNOT, too_big);
            }
        }
    }
}

impl RoutingElement for IP6Fragmenter {
    #[inline]
    fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
        if ip6_len(p) <= self.mtu {
            Hop::Out(0)
        } else {
            Hop::Push
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn datagram(n: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1000, 2000, &data)
            .bytes()
    }

    /// Reassembles fragments (any order) into the original datagram.
    fn reassemble(frags: &[Vec<u8>]) -> Vec<u8> {
        let mut parts: Vec<(usize, bool, Vec<u8>, u8, u32)> = frags
            .iter()
            .map(|f| {
                assert_eq!(f[6], 44, "next header is Fragment");
                assert_eq!(usize::from(u16::from_be_bytes([f[4], f[5]])), f.len() - 40);
                let w = u16::from_be_bytes([f[42], f[43]]);
                let id = u32::from_be_bytes([f[44], f[45], f[46], f[47]]);
                (
                    usize::from(w >> 3) * 8,
                    w & 1 == 1,
                    f[48..].to_vec(),
                    f[40],
                    id,
                )
            })
            .collect();
        parts.sort_by_key(|p| p.0);
        let mut body = Vec::new();
        for (i, (off, more, data, _, id)) in parts.iter().enumerate() {
            assert_eq!(*off, body.len(), "contiguous");
            assert_eq!(*more, i + 1 < parts.len(), "MF on all but the last");
            assert_eq!(*id, parts[0].4, "one identification");
            if *more {
                assert_eq!(data.len() % 8, 0);
            }
            body.extend_from_slice(data);
        }
        let mut d = frags[0][..40].to_vec();
        d[6] = parts[0].3;
        d[4..6].copy_from_slice(&(body.len() as u16).to_be_bytes());
        d.extend_from_slice(&body);
        d
    }

    #[test]
    fn small_packets_pass_large_ones_are_fragmented_first_last() {
        let h = harness("IP6Fragmenter(1280)", 1);
        let small = datagram(1232); // exactly 1280 bytes
        let big = datagram(3000);
        h.push(0, vec![marked(&small), marked(&big)]);
        let out: Vec<Vec<u8>> = h.output(0).iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(out[0], small);
        let frags = &out[1..];
        assert_eq!(frags.len(), 3);
        assert!(frags.iter().all(|f| f.len() <= 1280));
        // The first fragment (offset 0) is sent last.
        assert_eq!(u16::from_be_bytes([frags[2][42], frags[2][43]]) >> 3, 0);
        assert_eq!(
            frags[2].len(),
            1280,
            "1280 - 48 is a multiple of 8: a full MTU"
        );
        assert_eq!(reassemble(frags), big);
        assert_eq!(h.read("fragments").unwrap(), "3");
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn each_packet_has_its_own_identification() {
        let h = harness("IP6Fragmenter(MTU 1280)", 1);
        h.push(0, vec![marked(&datagram(2000)), marked(&datagram(2000))]);
        let out = h.output(0);
        assert_eq!(out.len(), 4);
        let id = |p: &paraclick_packet::Packet| p.data()[44..48].to_vec();
        assert_eq!(id(&out[0]), id(&out[1]));
        assert_eq!(id(&out[2]), id(&out[3]));
        assert_ne!(id(&out[0]), id(&out[2]));
    }

    #[test]
    fn unfragmentable_part_is_repeated() {
        // A Hop-by-Hop header (8 bytes of padding options) before UDP.
        let mut d = datagram(200);
        let mut hbh = vec![17, 0, 1, 4, 0, 0, 0, 0];
        d[6] = 0;
        let mut v = d[..40].to_vec();
        v.append(&mut hbh);
        v.extend_from_slice(&d[40..]);
        let plen = (v.len() - 40) as u16;
        v[4..6].copy_from_slice(&plen.to_be_bytes());
        let h = harness("IP6Fragmenter(120)", 1);
        h.push(0, vec![marked(&v)]);
        let out = h.output(0);
        assert!(out.len() > 2);
        for f in &out {
            let f = f.data();
            assert!(f.len() <= 120);
            assert_eq!(f[6], 0, "the IPv6 header still names Hop-by-Hop");
            assert_eq!(f[40], 44, "Hop-by-Hop now names the Fragment header");
            assert_eq!(f[48], 17, "the Fragment header names UDP");
        }
    }

    #[test]
    fn cannot_fragment_goes_to_output_1_or_is_dropped() {
        let h = harness("IP6Fragmenter(100)", 2);
        let mut frag = datagram(200);
        frag[6] = 44; // already a fragment
        h.push(0, vec![marked(&frag)]);
        assert_eq!(h.output(1).len(), 1);
        assert!(h.output(0).is_empty());
        assert_eq!(h.read("drops").unwrap(), "1");
        let h = harness("IP6Fragmenter(100)", 1);
        let mut bad = datagram(200);
        bad[6] = 0; // a Hop-by-Hop header claiming 2 KB
        bad[41] = 255;
        h.push(0, vec![marked(&frag), marked(&bad)]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "cannot fragment 1\nbad IPv6 header 1\n"
        );
    }

    #[test]
    fn random_sizes_reassemble() {
        let mut rng = Rng::new(38);
        let h = harness("IP6Fragmenter(576)", 1);
        for _ in 0..200 {
            let d = datagram(rng.below(4000));
            h.push(0, vec![marked(&d)]);
            let out: Vec<Vec<u8>> = h.output(0).iter().map(|p| p.data().to_vec()).collect();
            if d.len() <= 576 {
                assert_eq!(out, vec![d]);
            } else {
                assert!(out.iter().all(|f| f.len() <= 576));
                assert_eq!(reassemble(&out), d);
            }
        }
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("IP6Fragmenter", 1),
            "e :: IP6Fragmenter: missing mandatory MTU argument",
        );
        assert_err(
            try_harness("IP6Fragmenter(40)", 1),
            "e :: IP6Fragmenter: MTU 40 is too small (at least 56)",
        );
    }
}
