//! Software fallbacks for the offloads a Linux device hands to a packet
//! socket: partial checksums (`VIRTIO_NET_HDR_F_NEEDS_CSUM`) are completed
//! and GSO super-frames (TCP over IPv4/IPv6, UDP segmentation over
//! IPv4/IPv6) are cut into wire-sized packets, using the virtio-net header
//! a `PACKET_VNET_HDR` socket receives with every frame. Not an element.
//!
//! A veth pair passes on what its sender built: a host whose veth has
//! TSO/GSO and checksum offload on sends 64 KB TCP super-frames whose
//! checksum covers only the pseudo-header. Forwarded as they are, such
//! frames would be too big for the next link and arrive with a broken
//! checksum; here they become the packets the sender's device would have
//! put on a wire.

use paraclick_packet::wire::checksum;
use paraclick_packet::{Batch, Packet};
use std::net::Ipv4Addr;

pub const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
pub const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;
pub const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
/// UDP fragmentation offload: not cut (see [`segment`]).
#[cfg(test)]
pub const VIRTIO_NET_HDR_GSO_UDP: u8 = 3;
pub const VIRTIO_NET_HDR_GSO_TCPV6: u8 = 4;
pub const VIRTIO_NET_HDR_GSO_UDP_L4: u8 = 5;
pub const VIRTIO_NET_HDR_GSO_ECN: u8 = 0x80;

/// `struct virtio_net_hdr`, in the byte order a packet socket uses (the
/// host's: legacy virtio on a little-endian machine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..10)?;
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    #[inline]
    pub fn needs_csum(&self) -> bool {
        self.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0
    }

    #[inline]
    pub fn is_gso(&self) -> bool {
        self.gso_type & !VIRTIO_NET_HDR_GSO_ECN != VIRTIO_NET_HDR_GSO_NONE
    }
}

/// Why a frame could not be made into wire packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadError {
    /// A GSO type or header layout this code does not segment (UFO, IPv6
    /// extension headers, a mismatch between GSO type and protocol).
    Unsupported,
    /// Headers inconsistent with the frame.
    Malformed,
    /// The packet pool is exhausted.
    NoBuffer,
}

/// Where the network header starts (after up to two VLAN tags) and the
/// ethertype found there.
fn l3_of(frame: &[u8]) -> Option<(usize, u16)> {
    let mut off = 12;
    for _ in 0..3 {
        let t = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
        if t == 0x8100 || t == 0x88a8 {
            off += 4;
        } else {
            return Some((off + 2, t));
        }
    }
    None
}

/// The end of the IP datagram in `frame` (link padding excluded), if the
/// frame holds a consistent IPv4 or IPv6 header; else the frame's end.
fn ip_end(frame: &[u8]) -> usize {
    let Some((l3, et)) = l3_of(frame) else {
        return frame.len();
    };
    let len = match et {
        0x0800 if frame.len() >= l3 + 20 => {
            u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize
        }
        0x86dd if frame.len() >= l3 + 40 => {
            40 + u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) as usize
        }
        _ => return frame.len(),
    };
    if len == 0 || l3 + len > frame.len() {
        frame.len()
    } else {
        l3 + len
    }
}

/// Completes a partial checksum in place: the 16-bit field at
/// `start + offset` holds the pseudo-header sum; the checksum over
/// `start` to the end of the IP datagram replaces it (0 becomes 0xFFFF, as
/// the kernel does, so a UDP checksum never reads as "none").
pub fn complete_csum(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let end = ip_end(frame);
    let pos = start + offset;
    if start >= end || pos + 2 > end {
        return false;
    }
    let c = !checksum::sum(&frame[start..end]);
    let c = if c == 0 { 0xffff } else { c };
    frame[pos..pos + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Sum of the transport pseudo-header of the IP header at `l3`.
fn pseudo_sum(f: &[u8], l3: usize, v6: bool, proto: u8, l4len: usize) -> u16 {
    if v6 {
        checksum::combine(&[
            checksum::sum(&f[l3 + 8..l3 + 40]),
            (l4len >> 16) as u16,
            l4len as u16,
            proto as u16,
        ])
    } else {
        let a = |o: usize| Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]);
        checksum::pseudo_header_sum(a(l3 + 12), a(l3 + 16), proto, l4len as u16)
    }
}

/// Cuts the GSO super-frame `frame` (link header first) into packets of at
/// most `gso_size` payload bytes each, appended to `out` with their data
/// starting at the link header. Every segment gets its own IP length (and
/// IPv4 ID and header checksum), TCP sequence number and flags (FIN and PSH
/// on the last segment only, CWR on the first only) or UDP length, and a
/// complete transport checksum. Returns the number of packets added.
pub fn segment(frame: &[u8], v: &VnetHdr, out: &mut Batch) -> Result<usize, OffloadError> {
    let gso = v.gso_type & !VIRTIO_NET_HDR_GSO_ECN;
    let (l3, et) = l3_of(frame).ok_or(OffloadError::Malformed)?;
    let v6 = match et {
        0x0800 => false,
        0x86dd => true,
        _ => return Err(OffloadError::Unsupported),
    };
    let want_proto = match (gso, v6) {
        (VIRTIO_NET_HDR_GSO_TCPV4, false) | (VIRTIO_NET_HDR_GSO_TCPV6, true) => 6,
        (VIRTIO_NET_HDR_GSO_UDP_L4, _) => 17,
        // UDP fragmentation offload (VIRTIO_NET_HDR_GSO_UDP) and anything
        // newer: not cut.
        _ => return Err(OffloadError::Unsupported),
    };
    let (l4, end, proto) = if v6 {
        if frame.len() < l3 + 40 || frame[l3] >> 4 != 6 {
            return Err(OffloadError::Malformed);
        }
        let plen = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) as usize;
        let end = if plen == 0 {
            frame.len()
        } else {
            l3 + 40 + plen
        };
        (l3 + 40, end, frame[l3 + 6])
    } else {
        if frame.len() < l3 + 20 || frame[l3] >> 4 != 4 {
            return Err(OffloadError::Malformed);
        }
        let ihl = (frame[l3] & 0x0f) as usize * 4;
        let tot = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
        let end = if tot == 0 { frame.len() } else { l3 + tot };
        if ihl < 20 || tot != 0 && tot < ihl {
            return Err(OffloadError::Malformed);
        }
        (l3 + ihl, end, frame[l3 + 9])
    };
    if proto != want_proto {
        return Err(OffloadError::Unsupported);
    }
    if end > frame.len() || l4 > end {
        return Err(OffloadError::Malformed);
    }
    let hdrs = if proto == 6 {
        let thl = (*frame.get(l4 + 12).ok_or(OffloadError::Malformed)? >> 4) as usize * 4;
        l4 + thl
    } else {
        l4 + 8
    };
    if hdrs > end || (proto == 6 && hdrs < l4 + 20) {
        return Err(OffloadError::Malformed);
    }
    let mss = v.gso_size as usize;
    if mss == 0 {
        return Err(OffloadError::Malformed);
    }
    let payload = &frame[hdrs..end];
    let nseg = payload.len().div_ceil(mss).max(1);
    let id0 = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]);
    let seq0 = if proto == 6 {
        u32::from_be_bytes([frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]])
    } else {
        0
    };
    let mut made = 0;
    for i in 0..nseg {
        let chunk = &payload[(i * mss).min(payload.len())..((i + 1) * mss).min(payload.len())];
        let mut p = match Packet::new(hdrs + chunk.len()) {
            Some(p) => p,
            None => {
                // Keep what was made; the rest is lost.
                return if made > 0 {
                    Ok(made)
                } else {
                    Err(OffloadError::NoBuffer)
                };
            }
        };
        let d = p.data_mut();
        d[..hdrs].copy_from_slice(&frame[..hdrs]);
        d[hdrs..].copy_from_slice(chunk);
        let l4len = hdrs - l4 + chunk.len();
        if v6 {
            d[l3 + 4..l3 + 6].copy_from_slice(&((l4len) as u16).to_be_bytes());
        } else {
            let ihl = l4 - l3;
            d[l3 + 2..l3 + 4].copy_from_slice(&((ihl + l4len) as u16).to_be_bytes());
            d[l3 + 4..l3 + 6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
            d[l3 + 10..l3 + 12].fill(0);
            let c = checksum::checksum(&d[l3..l4]);
            d[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
        let csum_pos = if proto == 6 {
            let seq = seq0.wrapping_add((i * mss) as u32);
            d[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if i + 1 < nseg {
                d[l4 + 13] &= !0x09; // FIN, PSH
            }
            if i > 0 {
                d[l4 + 13] &= !0x80; // CWR
            }
            l4 + 16
        } else {
            d[l4 + 4..l4 + 6].copy_from_slice(&(l4len as u16).to_be_bytes());
            l4 + 6
        };
        d[csum_pos..csum_pos + 2].fill(0);
        let s = checksum::combine(&[pseudo_sum(d, l3, v6, proto, l4len), checksum::sum(&d[l4..])]);
        let c = !s;
        let c = if c == 0 && proto == 17 { 0xffff } else { c };
        d[csum_pos..csum_pos + 2].copy_from_slice(&c.to_be_bytes());
        out.push(p);
        made += 1;
    }
    Ok(made)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP frame with `payload`, its checksum field
    /// holding only the pseudo-header sum (as a sender with checksum
    /// offload leaves it).
    pub(crate) fn tcp4_frame(payload: &[u8], flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let tot = (40 + payload.len()) as u16;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&tot.to_be_bytes());
        f[18..20].copy_from_slice(&0x1234u16.to_be_bytes());
        f[20] = 0x40; // DF
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 1, 2]);
        f[30..34].copy_from_slice(&[10, 0, 2, 2]);
        let c = checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&40000u16.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f[38..42].copy_from_slice(&0xfffffff0u32.to_be_bytes());
        f[42..46].copy_from_slice(&77u32.to_be_bytes());
        f[46] = 5 << 4;
        f[47] = flags;
        f[48..50].copy_from_slice(&65535u16.to_be_bytes());
        f.extend_from_slice(payload);
        let ps = checksum::pseudo_header_sum(
            Ipv4Addr::new(10, 0, 1, 2),
            Ipv4Addr::new(10, 0, 2, 2),
            6,
            (20 + payload.len()) as u16,
        );
        f[50..52].copy_from_slice(&ps.to_be_bytes());
        f
    }

    fn ipv4_addrs(d: &[u8]) -> (Ipv4Addr, Ipv4Addr) {
        (
            Ipv4Addr::new(d[26], d[27], d[28], d[29]),
            Ipv4Addr::new(d[30], d[31], d[32], d[33]),
        )
    }

    /// Whether the IPv4 segment in `d` has a valid header checksum and a
    /// valid transport checksum.
    pub(crate) fn ipv4_valid(d: &[u8]) -> bool {
        let ihl = (d[14] & 15) as usize * 4;
        let tot = u16::from_be_bytes([d[16], d[17]]) as usize;
        let (s, t) = ipv4_addrs(d);
        let l4 = &d[14 + ihl..14 + tot];
        checksum::verify(&d[14..14 + ihl])
            && checksum::combine(&[
                checksum::pseudo_header_sum(s, t, d[23], l4.len() as u16),
                checksum::sum(l4),
            ]) == 0xffff
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn vnet_header_fields() {
        let mut b = [0u8; 10];
        b[0] = 1;
        b[1] = 0x81;
        b[4..6].copy_from_slice(&1000u16.to_ne_bytes());
        let v = VnetHdr::parse(&b).unwrap();
        assert!(v.needs_csum() && v.is_gso());
        assert_eq!(
            v.gso_type & !VIRTIO_NET_HDR_GSO_ECN,
            VIRTIO_NET_HDR_GSO_TCPV4
        );
        assert_eq!(v.gso_size, 1000);
        assert!(VnetHdr::parse(&b[..9]).is_none());
        assert!(!VnetHdr::default().is_gso());
    }

    #[test]
    fn partial_checksums_are_completed() {
        let mut f = tcp4_frame(&payload(101), 0x18);
        assert!(!ipv4_valid(&f));
        assert!(complete_csum(&mut f, 34, 16));
        assert!(ipv4_valid(&f));
        // Link padding after the datagram is not summed.
        let mut g = tcp4_frame(&payload(3), 0x18);
        g.extend_from_slice(&[0xee; 7]);
        assert!(complete_csum(&mut g, 34, 16));
        assert!(ipv4_valid(&g));
        // Offsets outside the frame are refused, nothing written.
        let mut h = tcp4_frame(&payload(10), 0x18);
        let before = h.clone();
        assert!(!complete_csum(&mut h, 34, 100));
        assert!(!complete_csum(&mut h, 500, 0));
        assert_eq!(h, before);
    }

    #[test]
    fn tcp_super_frames_become_valid_segments() {
        let data = payload(3500);
        // SYN-less data with PSH|FIN|CWR|ACK set on the super-frame.
        let f = tcp4_frame(&data, 0x80 | 0x10 | 0x08 | 0x01);
        let v = VnetHdr {
            flags: 1,
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            hdr_len: 54,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(3));
        let segs: Vec<Vec<u8>> = out.iter().map(|p| p.data().to_vec()).collect();
        let lens: Vec<usize> = segs.iter().map(|s| s.len() - 54).collect();
        assert_eq!(lens, vec![1448, 1448, 604]);
        let mut joined = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            assert!(ipv4_valid(s), "segment {i} checksums");
            assert_eq!(u16::from_be_bytes([s[16], s[17]]) as usize, s.len() - 14);
            assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1234 + i as u16);
            let seq = u32::from_be_bytes([s[38], s[39], s[40], s[41]]);
            assert_eq!(seq, 0xfffffff0u32.wrapping_add((i * 1448) as u32));
            let flags = s[47];
            assert_eq!(flags & 0x10, 0x10, "ACK everywhere");
            assert_eq!(flags & 0x80 != 0, i == 0, "CWR on the first only");
            assert_eq!(flags & 0x09 != 0, i == 2, "FIN/PSH on the last only");
            assert_eq!(
                &s[..34],
                &f[..34]
                    .iter()
                    .enumerate()
                    .map(|(j, &b)| {
                        // Only length, ID and checksum differ in the IP header.
                        if (16..20).contains(&j) || (24..26).contains(&j) {
                            s[j]
                        } else {
                            b
                        }
                    })
                    .collect::<Vec<u8>>()[..]
            );
            joined.extend_from_slice(&s[54..]);
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn a_super_frame_that_fits_is_one_segment() {
        let f = tcp4_frame(&payload(500), 0x18);
        let v = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 1448,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(1));
        let s = out.pop().unwrap();
        assert!(ipv4_valid(s.data()));
        assert_eq!(s.len(), f.len());
    }

    #[test]
    fn udp_segmentation_makes_datagrams() {
        // Ethernet + IPv4 + UDP, 2500 bytes of payload, gso_size 1000.
        let data = payload(2500);
        let mut f = tcp4_frame(&[], 0);
        f.truncate(34);
        f[23] = 17;
        let tot = (20 + 8 + data.len()) as u16;
        f[16..18].copy_from_slice(&tot.to_be_bytes());
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 0, 0, 0]);
        f.extend_from_slice(&data);
        let v = VnetHdr {
            flags: 1,
            gso_type: VIRTIO_NET_HDR_GSO_UDP_L4,
            gso_size: 1000,
            csum_start: 34,
            csum_offset: 6,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(3));
        let mut joined = Vec::new();
        for (i, p) in out.iter().enumerate() {
            let s = p.data();
            // The IP header checksum is recomputed; check everything.
            assert!(ipv4_valid(s), "datagram {i}");
            let ulen = u16::from_be_bytes([s[38], s[39]]) as usize;
            assert_eq!(ulen, s.len() - 34);
            assert_eq!(ulen - 8, if i < 2 { 1000 } else { 500 });
            joined.extend_from_slice(&s[42..]);
        }
        assert_eq!(joined, data);
    }

    /// An Ethernet + IPv6 frame (fd00::1 -> fd00::2) carrying transport
    /// header + `payload` of protocol `proto`, its checksum field (at
    /// `csum_at` in the transport header) holding only the pseudo-header
    /// sum, as a sender with checksum offload leaves it.
    fn ip6_frame(proto: u8, l4hdr: &[u8], csum_at: usize, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        let plen = l4hdr.len() + payload.len();
        f[18..20].copy_from_slice(&(plen as u16).to_be_bytes());
        f[20] = proto;
        f[21] = 64;
        f[22..38].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f[38..54].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(l4hdr);
        f.extend_from_slice(payload);
        let ps = pseudo_sum(&f, 14, true, proto, plen);
        f[54 + csum_at..56 + csum_at].copy_from_slice(&ps.to_be_bytes());
        f
    }

    /// Whether the IPv6 packet in `d` has a valid transport checksum.
    fn ipv6_l4_valid(d: &[u8]) -> bool {
        let plen = u16::from_be_bytes([d[18], d[19]]) as usize;
        let l4 = &d[54..54 + plen];
        checksum::combine(&[pseudo_sum(d, 14, true, d[20], plen), checksum::sum(l4)]) == 0xffff
    }

    #[test]
    fn ipv6_partial_checksums_are_completed() {
        let mut tcp = [0u8; 20];
        tcp[12] = 5 << 4;
        tcp[13] = 0x18;
        let mut f = ip6_frame(6, &tcp, 16, &payload(333));
        assert!(!ipv6_l4_valid(&f));
        assert!(complete_csum(&mut f, 54, 16));
        assert!(ipv6_l4_valid(&f));
        // UDP, with link padding after the datagram (not summed).
        let udp = [0x30, 0x39, 0x00, 0x35, 0, 8 + 17, 0, 0];
        let mut g = ip6_frame(17, &udp, 6, &payload(17));
        g.extend_from_slice(&[0xee; 9]);
        assert!(complete_csum(&mut g, 54, 6));
        assert!(ipv6_l4_valid(&g));
        // A checksum that sums to 0 is written 0xFFFF (UDP over IPv6 must
        // carry one, RFC 8200 8.1): whatever the payload, never 0.
        assert_ne!(&g[60..62], &[0, 0]);
    }

    #[test]
    fn udp_over_ipv6_is_segmented() {
        let data = payload(2500);
        let f = ip6_frame(17, &[0x30, 0x39, 0x00, 0x35, 0, 0, 0, 0], 6, &data);
        let v = VnetHdr {
            flags: 1,
            gso_type: VIRTIO_NET_HDR_GSO_UDP_L4,
            gso_size: 1000,
            csum_start: 54,
            csum_offset: 6,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(3));
        let mut joined = Vec::new();
        for (i, p) in out.iter().enumerate() {
            let s = p.data();
            let plen = u16::from_be_bytes([s[18], s[19]]) as usize;
            assert_eq!(plen, s.len() - 54, "datagram {i}");
            let ulen = u16::from_be_bytes([s[58], s[59]]) as usize;
            assert_eq!(ulen, plen);
            assert_eq!(ulen - 8, if i < 2 { 1000 } else { 500 });
            assert!(ipv6_l4_valid(s), "datagram {i}");
            joined.extend_from_slice(&s[62..]);
        }
        assert_eq!(joined, data);
        // A TCPv4 GSO type on an IPv6 frame is refused, not cut wrongly.
        let bad = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 1000,
            ..VnetHdr::default()
        };
        assert_eq!(
            segment(&f, &bad, &mut Batch::new()),
            Err(OffloadError::Unsupported)
        );
    }

    #[test]
    fn tcp_over_ipv6_is_segmented() {
        let data = payload(3000);
        let mut f = vec![0u8; 14 + 40 + 20];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        f[20] = 6;
        f[21] = 64;
        f[22..38].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f[38..54].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f[66] = 5 << 4;
        f[67] = 0x18;
        f.extend_from_slice(&data);
        let v = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV6,
            gso_size: 1400,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(3));
        let mut joined = Vec::new();
        for p in out.iter() {
            let s = p.data();
            let plen = u16::from_be_bytes([s[18], s[19]]) as usize;
            assert_eq!(plen, s.len() - 54);
            let l4 = &s[54..];
            let ps = pseudo_sum(s, 14, true, 6, l4.len());
            assert_eq!(checksum::combine(&[ps, checksum::sum(l4)]), 0xffff);
            joined.extend_from_slice(&s[74..]);
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn vlan_tagged_frames_are_segmented_after_the_tag() {
        let data = payload(2000);
        let plain = tcp4_frame(&data, 0x10);
        let mut f = plain[..12].to_vec();
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        f.extend_from_slice(&plain[12..]);
        let v = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 1000,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        assert_eq!(segment(&f, &v, &mut out), Ok(2));
        for p in out.iter() {
            let s = p.data();
            assert_eq!(&s[12..16], &[0x81, 0x00, 0x00, 0x05]);
            let mut untagged = s[..12].to_vec();
            untagged.extend_from_slice(&s[16..]);
            assert!(ipv4_valid(&untagged));
        }
    }

    #[test]
    fn bad_super_frames_are_refused() {
        let f = tcp4_frame(&payload(3000), 0x10);
        let tcp = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4,
            gso_size: 1000,
            ..VnetHdr::default()
        };
        let mut out = Batch::new();
        // UFO is not segmented; TCPV6 on an IPv4 frame is a mismatch.
        for t in [VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_TCPV6] {
            let v = VnetHdr { gso_type: t, ..tcp };
            assert_eq!(segment(&f, &v, &mut out), Err(OffloadError::Unsupported));
        }
        // UDP_L4 on a TCP packet.
        let v = VnetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_UDP_L4,
            ..tcp
        };
        assert_eq!(segment(&f, &v, &mut out), Err(OffloadError::Unsupported));
        // gso_size 0; IP total length beyond the frame; bad TCP offset;
        // truncated frames; not IP.
        let v = VnetHdr { gso_size: 0, ..tcp };
        assert_eq!(segment(&f, &v, &mut out), Err(OffloadError::Malformed));
        let mut g = f.clone();
        g[16..18].copy_from_slice(&60000u16.to_be_bytes());
        assert_eq!(segment(&g, &tcp, &mut out), Err(OffloadError::Malformed));
        let mut g = f.clone();
        g[46] = 2 << 4;
        assert_eq!(segment(&g, &tcp, &mut out), Err(OffloadError::Malformed));
        for cut in [0, 5, 13, 14, 20, 33, 40] {
            assert_eq!(
                segment(&f[..cut], &tcp, &mut out),
                Err(OffloadError::Malformed),
                "cut {cut}"
            );
        }
        let mut g = f.clone();
        g[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(segment(&g, &tcp, &mut out), Err(OffloadError::Unsupported));
        assert!(out.is_empty());
    }
}
