// Flow identifiers, reading them from packets, and rewriting packets to a
// new identifier with incremental checksum updates (RFC 1624).

use paraclick_packet::wire::checksum::{fix_zero, fold, update_u16};
use paraclick_packet::Packet;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::net::Ipv4Addr;

pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const ICMP: u8 = 1;
/// Key kinds of the address rewriters (not IP protocol numbers in use).
pub const ADDR_SRC: u8 = 0xFD;
pub const ADDR_DST: u8 = 0xFE;
pub const ADDR_PAIR: u8 = 0xFF;

/// Which fields a mapping sets.
pub const M_SA: u8 = 1;
pub const M_SP: u8 = 2;
pub const M_DA: u8 = 4;
pub const M_DP: u8 = 8;
pub const M_ALL: u8 = 15;

/// Source address and port, destination address and port (for ICMP echo
/// both ports are the identifier).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct FlowId {
    pub saddr: u32,
    pub daddr: u32,
    pub sport: u16,
    pub dport: u16,
}

impl FlowId {
    pub fn new(sa: Ipv4Addr, sp: u16, da: Ipv4Addr, dp: u16) -> FlowId {
        FlowId {
            saddr: sa.into(),
            daddr: da.into(),
            sport: sp,
            dport: dp,
        }
    }

    /// The identifier of the other direction of this flow.
    #[inline]
    pub fn reverse(self) -> FlowId {
        FlowId {
            saddr: self.daddr,
            daddr: self.saddr,
            sport: self.dport,
            dport: self.sport,
        }
    }

    /// `self` with the fields of `to` that `mask` names.
    #[inline]
    pub fn with(self, to: FlowId, mask: u8) -> FlowId {
        FlowId {
            saddr: if mask & M_SA != 0 {
                to.saddr
            } else {
                self.saddr
            },
            sport: if mask & M_SP != 0 {
                to.sport
            } else {
                self.sport
            },
            daddr: if mask & M_DA != 0 {
                to.daddr
            } else {
                self.daddr
            },
            dport: if mask & M_DP != 0 {
                to.dport
            } else {
                self.dport
            },
        }
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "({}, {}, {}, {})",
            Ipv4Addr::from(self.saddr),
            self.sport,
            Ipv4Addr::from(self.daddr),
            self.dport
        )
    }
}

/// A table key: a flow identifier and its protocol (or address-key kind).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FlowKey {
    pub id: FlowId,
    pub proto: u8,
}

impl Hash for FlowKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from(self.id.saddr) << 32 | u64::from(self.id.daddr));
        state.write_u64(
            u64::from(self.id.sport) << 32 | u64::from(self.id.dport) << 16 | u64::from(self.proto),
        );
    }
}

/// The flow table's hasher: foldhash with a random seed per table. Flow
/// keys are chosen by remote peers (addresses and ports), so the seed
/// keeps them from choosing keys that collide. Its `quality` variant: the
/// map takes a shard, a bucket and a signature from different bits of one
/// hash, and the `fast` variant maps keys that differ in one field (a port)
/// almost linearly onto the low bits.
#[derive(Clone)]
pub struct FlowHasher(foldhash::quality::SeedableRandomState);

impl FlowHasher {
    pub fn new() -> FlowHasher {
        FlowHasher(foldhash::quality::SeedableRandomState::random())
    }

    /// A hasher with a fixed seed (loom's model runs must repeat).
    #[cfg(loom)]
    pub fn with_seed(seed: u64) -> FlowHasher {
        FlowHasher(foldhash::quality::SeedableRandomState::with_seed(
            seed,
            foldhash::SharedSeed::global_fixed(),
        ))
    }
}

impl Default for FlowHasher {
    fn default() -> Self {
        FlowHasher::new()
    }
}

impl BuildHasher for FlowHasher {
    type Hasher = foldhash::quality::FoldHasher<'static>;
    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// What a packet's headers say about its flow.
#[derive(Clone, Copy, Debug)]
pub struct PacketFlow {
    pub proto: u8,
    pub id: FlowId,
    /// Offset of the IP header in the packet data.
    pub ip: usize,
    /// Offset of the transport header (0 if there is none to rewrite:
    /// a non-first fragment).
    pub th: usize,
    /// TCP flags (FIN 1, SYN 2, RST 4), 0 for other protocols.
    pub tcp_flags: u8,
    /// Whether the packet carries transport payload.
    pub has_data: bool,
}

/// Why a packet cannot be translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// No IP header annotation, or headers too short.
    Malformed,
    /// A protocol this element does not translate.
    Protocol,
    /// A non-first fragment (no ports to look up).
    Fragment,
}

/// Reads the IP header at offset `ip` of `d` (IHL, protocol, addresses,
/// fragment fields).
#[inline]
fn ip_fields(d: &[u8], ip: usize) -> Result<(usize, u8, u32, u32, bool, bool), Reject> {
    let h = d.get(ip..ip + 20).ok_or(Reject::Malformed)?;
    if h[0] >> 4 != 4 {
        return Err(Reject::Malformed);
    }
    let hlen = usize::from(h[0] & 15) * 4;
    if hlen < 20 || d.len() < ip + hlen {
        return Err(Reject::Malformed);
    }
    let frag = u16::from_be_bytes([h[6], h[7]]);
    let offset_nonzero = frag & 0x1fff != 0;
    let is_frag = offset_nonzero || frag & 0x2000 != 0;
    let sa = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
    let da = u32::from_be_bytes([h[16], h[17], h[18], h[19]]);
    Ok((hlen, h[9], sa, da, is_frag, offset_nonzero))
}

/// The flow of an IP packet whose header starts at `ip`. `ports` says
/// whether the flow has ports (TCP, UDP, ICMP echo); `accept` filters
/// protocols. Address-only flows accept every protocol.
#[inline(always)]
pub fn packet_flow(d: &[u8], ip: usize, ports: bool, accept: &[u8]) -> Result<PacketFlow, Reject> {
    let (hlen, proto, sa, da, _is_frag, later_frag) = ip_fields(d, ip)?;
    let th = ip + hlen;
    let mut f = PacketFlow {
        proto,
        id: FlowId {
            saddr: sa,
            daddr: da,
            sport: 0,
            dport: 0,
        },
        ip,
        th: if later_frag { 0 } else { th },
        tcp_flags: 0,
        has_data: false,
    };
    if !ports {
        if !later_frag && (proto == TCP || proto == UDP) {
            let need = if proto == TCP { 20 } else { 8 };
            if d.len() < th + need {
                f.th = 0;
            } else {
                // Ports stay as they are, but rewriting needs them.
                f.id.sport = u16::from_be_bytes([d[th], d[th + 1]]);
                f.id.dport = u16::from_be_bytes([d[th + 2], d[th + 3]]);
            }
        } else {
            f.th = 0;
        }
        return Ok(f);
    }
    if !accept.contains(&proto) {
        return Err(Reject::Protocol);
    }
    if later_frag {
        return Err(Reject::Fragment);
    }
    let t = &d[th..];
    match proto {
        TCP => {
            if t.len() < 20 {
                return Err(Reject::Malformed);
            }
            f.id.sport = u16::from_be_bytes([t[0], t[1]]);
            f.id.dport = u16::from_be_bytes([t[2], t[3]]);
            f.tcp_flags = t[13] & 7;
            let off = usize::from(t[12] >> 4) * 4;
            let total = usize::from(u16::from_be_bytes([d[ip + 2], d[ip + 3]]));
            f.has_data = total > hlen + off;
        }
        UDP => {
            if t.len() < 8 {
                return Err(Reject::Malformed);
            }
            f.id.sport = u16::from_be_bytes([t[0], t[1]]);
            f.id.dport = u16::from_be_bytes([t[2], t[3]]);
            f.has_data = true;
        }
        ICMP => {
            // Echo request (8) and reply (0) only: the identifier is the port.
            if t.len() < 8 || (t[0] != 8 && t[0] != 0) {
                return Err(Reject::Protocol);
            }
            let ident = u16::from_be_bytes([t[4], t[5]]);
            f.id.sport = ident;
            f.id.dport = ident;
            f.has_data = true;
        }
        _ => return Err(Reject::Protocol),
    }
    Ok(f)
}

#[inline]
fn rd16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}

#[inline]
fn wr16(d: &mut [u8], o: usize, v: u16) {
    d[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline]
fn wr32(d: &mut [u8], o: usize, v: u32) {
    d[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

/// The unfolded one's complement sum that RFC 1624's incremental update
/// adds for a 32-bit field going from `old` to `new` (`~m + m'`, word by
/// word).
#[inline]
fn delta32(old: u32, new: u32) -> u64 {
    let o = !old;
    u64::from(o >> 16) + u64::from(o & 0xffff) + u64::from(new >> 16) + u64::from(new & 0xffff)
}

/// [`delta32`] for a 16-bit field.
#[inline]
fn delta16(old: u16, new: u16) -> u64 {
    u64::from(!old) + u64::from(new)
}

/// A checksum after changes whose deltas sum to `delta`: one fold for any
/// number of fields (one's complement addition is associative, so this is
/// what updating field by field gives).
#[inline]
fn apply(ck: u16, delta: u64) -> u16 {
    !fold(u64::from(!ck) + delta)
}

/// Rewrites the packet described by `f` (in `d`) to flow `new`: IP
/// addresses with the header checksum, and where a transport header is
/// present (`f.th != 0`), ports with the TCP/UDP checksum (whose
/// pseudo-header covers the addresses) or the ICMP echo identifier with
/// the ICMP checksum. A UDP checksum of 0 (none) stays 0. Incremental
/// (RFC 1624) throughout: a checksum that was wrong stays wrong.
pub fn rewrite(d: &mut [u8], f: &PacketFlow, new: FlowId) {
    let old = f.id;
    if old == new {
        return;
    }
    let ip = f.ip;
    let (ds, dd) = (delta32(old.saddr, new.saddr), delta32(old.daddr, new.daddr));
    // The transport checksum takes both deltas (as RFC 1624 field by
    // field would), the header checksum only those of changed fields.
    let addrs = ds + dd;
    let mut ip_delta = 0;
    if old.saddr != new.saddr {
        ip_delta += ds;
        wr32(d, ip + 12, new.saddr);
    }
    if old.daddr != new.daddr {
        ip_delta += dd;
        wr32(d, ip + 16, new.daddr);
    }
    if ip_delta != 0 {
        wr16(d, ip + 10, apply(rd16(d, ip + 10), ip_delta));
    }
    let th = f.th;
    if th == 0 {
        return;
    }
    match f.proto {
        TCP | UDP => {
            if d.len() >= th + 4 {
                wr16(d, th, new.sport);
                wr16(d, th + 2, new.dport);
            }
            let co = th + if f.proto == TCP { 16 } else { 6 };
            if d.len() < co + 2 {
                // A quoted header (in an ICMP error) may stop before its
                // checksum.
                return;
            }
            let mut ck = rd16(d, co);
            if f.proto == UDP && ck == 0 {
                return;
            }
            ck = apply(
                ck,
                addrs + delta16(old.sport, new.sport) + delta16(old.dport, new.dport),
            );
            if f.proto == UDP && ck == 0 {
                // A computed 0 is sent as all ones (RFC 768).
                ck = 0xffff;
            }
            wr16(d, co, ck);
        }
        ICMP if old.sport != new.sport && d.len() >= th + 6 => {
            let ck = update_u16(rd16(d, th + 2), old.sport, new.sport);
            wr16(d, th + 4, new.sport);
            wr16(d, th + 2, ck);
            // An all-zero message (a reply with identifier and sequence 0)
            // checksums to 0xFFFF, where the update gives 0x0000.
            if ck == 0 {
                wr16(d, th + 2, fix_zero(ck, &d[th..]));
            }
        }
        _ => {}
    }
}

/// Applies a TCP flow's sequence number changes (FTPPortMapper's) to the
/// packet described by `f` (in `d`), which travels in direction `dir` of
/// `flow`: its sequence number by that direction's changes, its
/// acknowledgement number and SACK blocks back by the other's; the TCP
/// checksum follows (RFC 1624).
pub fn rewrite_seq(d: &mut [u8], f: &PacketFlow, flow: &super::table::Flow, dir: u8) {
    let th = f.th;
    if f.proto != TCP || th == 0 || d.len() < th + 20 {
        return;
    }
    let rd32 = |d: &[u8], o: usize| u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]);
    let mut deltas = flow.seq_deltas();
    let (own, other) = if dir == 0 {
        let (a, b) = deltas.split_at_mut(1);
        (&mut a[0], &b[0])
    } else {
        let (a, b) = deltas.split_at_mut(1);
        (&mut b[0], &a[0])
    };
    let mut sum = 0u64;
    let mut set = |d: &mut [u8], o: usize, new: u32| {
        let old = rd32(d, o);
        if old != new {
            sum += delta32(old, new);
            wr32(d, o, new);
        }
    };
    let seq = rd32(d, th + 4);
    set(d, th + 4, own.map_seq(seq));
    if !other.is_empty() {
        let ack = rd32(d, th + 8);
        set(d, th + 8, other.map_ack(ack));
        // SACK blocks (option 5) acknowledge the other direction's data.
        let end = (th + usize::from(d[th + 12] >> 4) * 4).min(d.len());
        let mut o = th + 20;
        while o < end {
            match d[o] {
                0 => break,
                1 => o += 1,
                kind => {
                    let Some(&len) = d.get(o + 1) else { break };
                    let len = usize::from(len);
                    if len < 2 || o + len > end {
                        break;
                    }
                    if kind == 5 {
                        let mut e = o + 2;
                        while e + 4 <= o + len {
                            let v = rd32(d, e);
                            set(d, e, other.map_ack(v));
                            e += 4;
                        }
                    }
                    o += len;
                }
            }
        }
    }
    drop(deltas);
    if sum != 0 {
        let co = th + 16;
        wr16(d, co, apply(rd16(d, co), sum));
    }
}

/// Convenience for elements: the packet's IP header offset (from its
/// network header annotation).
#[inline]
pub fn ip_offset(p: &Packet) -> Option<usize> {
    let off = p.network_header_offset()?;
    usize::try_from(off).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_packet::wire::checksum;

    fn ipv4(sa: [u8; 4], da: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0];
        h.extend_from_slice(&sa);
        h.extend_from_slice(&da);
        let tl = (20 + payload.len()) as u16;
        h[2..4].copy_from_slice(&tl.to_be_bytes());
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }

    fn transport_ok(d: &[u8]) -> bool {
        let sa = Ipv4Addr::new(d[12], d[13], d[14], d[15]);
        let da = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
        let seg = &d[20..];
        let ps = checksum::pseudo_header_sum(sa, da, d[9], seg.len() as u16);
        checksum::combine(&[ps, checksum::sum(seg)]) == 0xffff
    }

    fn with_transport_checksum(mut d: Vec<u8>, at: usize) -> Vec<u8> {
        let sa = Ipv4Addr::new(d[12], d[13], d[14], d[15]);
        let da = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
        let ps = checksum::pseudo_header_sum(sa, da, d[9], (d.len() - 20) as u16);
        let c = !checksum::combine(&[ps, checksum::sum(&d[20..])]);
        d[20 + at..22 + at].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn udp(sp: u16, dp: u16, data: &[u8]) -> Vec<u8> {
        let mut u = Vec::new();
        u.extend_from_slice(&sp.to_be_bytes());
        u.extend_from_slice(&dp.to_be_bytes());
        u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(data);
        u
    }

    fn tcp(sp: u16, dp: u16, flags: u8, data: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 20];
        t[0..2].copy_from_slice(&sp.to_be_bytes());
        t[2..4].copy_from_slice(&dp.to_be_bytes());
        t[12] = 5 << 4;
        t[13] = flags;
        t.extend_from_slice(data);
        t
    }

    #[test]
    fn reverse_and_with() {
        let f = FlowId::new(
            Ipv4Addr::new(10, 0, 0, 1),
            1000,
            Ipv4Addr::new(2, 0, 0, 2),
            80,
        );
        let r = f.reverse();
        assert_eq!(r.saddr, f.daddr);
        assert_eq!(r.sport, 80);
        assert_eq!(r.reverse(), f);
        let to = FlowId::new(Ipv4Addr::new(1, 1, 1, 1), 5, Ipv4Addr::new(3, 3, 3, 3), 6);
        let w = f.with(to, M_SA | M_SP);
        assert_eq!(
            (w.saddr, w.sport, w.daddr, w.dport),
            (to.saddr, 5, f.daddr, 80)
        );
        assert_eq!(f.to_string(), "(10.0.0.1, 1000, 2.0.0.2, 80)");
    }

    /// Peers choose flow keys: each table hashes with its own random seed,
    /// so a set of keys that collides in one table does not in another.
    #[test]
    fn each_table_has_its_own_seed() {
        let f = FlowId::new(Ipv4Addr::new(10, 0, 0, 1), 1, Ipv4Addr::new(2, 0, 0, 2), 2);
        let k = FlowKey { id: f, proto: TCP };
        assert_ne!(FlowHasher::new().hash_one(k), FlowHasher::new().hash_one(k));
    }

    #[test]
    fn hash_differs_by_direction_and_proto() {
        let hb = FlowHasher::new();
        let f = FlowId::new(Ipv4Addr::new(10, 0, 0, 1), 1, Ipv4Addr::new(2, 0, 0, 2), 2);
        let a = hb.hash_one(FlowKey { id: f, proto: TCP });
        let b = hb.hash_one(FlowKey {
            id: f.reverse(),
            proto: TCP,
        });
        let c = hb.hash_one(FlowKey { id: f, proto: UDP });
        assert!(a != b && a != c && b != c);
        assert_eq!(a, hb.hash_one(FlowKey { id: f, proto: TCP }));
    }

    #[test]
    fn reads_tcp_udp_icmp_flows() {
        let d = ipv4(
            [10, 0, 0, 1],
            [2, 0, 0, 2],
            TCP,
            &tcp(1234, 80, 0x11, b"hi"),
        );
        let f = packet_flow(&d, 0, true, &[TCP, UDP]).unwrap();
        assert_eq!(
            (f.id.sport, f.id.dport, f.tcp_flags, f.has_data),
            (1234, 80, 1, true)
        );
        let d = ipv4([10, 0, 0, 1], [2, 0, 0, 2], TCP, &tcp(1234, 80, 0x10, b""));
        assert!(!packet_flow(&d, 0, true, &[TCP]).unwrap().has_data);
        assert_eq!(
            packet_flow(&d, 0, true, &[UDP]).unwrap_err(),
            Reject::Protocol
        );
        let d = ipv4(
            [10, 0, 0, 1],
            [2, 0, 0, 2],
            ICMP,
            &[8, 0, 0, 0, 0, 77, 0, 1],
        );
        let f = packet_flow(&d, 0, true, &[ICMP]).unwrap();
        assert_eq!((f.id.sport, f.id.dport), (77, 77));
        let d = ipv4([10, 0, 0, 1], [2, 0, 0, 2], ICMP, &[3, 3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            packet_flow(&d, 0, true, &[ICMP]).unwrap_err(),
            Reject::Protocol
        );
        // Truncated and non-first fragments.
        let mut d = ipv4([10, 0, 0, 1], [2, 0, 0, 2], UDP, &udp(1, 2, b"x"));
        assert_eq!(
            packet_flow(&d[..25], 0, true, &[UDP]).unwrap_err(),
            Reject::Malformed
        );
        d[6] = 0;
        d[7] = 3;
        assert_eq!(
            packet_flow(&d, 0, true, &[UDP]).unwrap_err(),
            Reject::Fragment
        );
        let a = packet_flow(&d, 0, false, &[]).unwrap();
        assert_eq!(a.th, 0);
        assert_eq!(
            packet_flow(&[0x45; 10], 0, true, &[UDP]).unwrap_err(),
            Reject::Malformed
        );
    }

    fn rewrite_and_check(d: Vec<u8>, new: FlowId) -> Vec<u8> {
        let mut d = d;
        let f = packet_flow(&d, 0, true, &[TCP, UDP, ICMP]).unwrap();
        rewrite(&mut d, &f, new);
        assert!(checksum::verify(&d[..20]), "IP header checksum");
        d
    }

    #[test]
    fn tcp_rewrite_matches_full_checksum() {
        let d = with_transport_checksum(
            ipv4([10, 0, 0, 1], [2, 0, 0, 2], TCP, &tcp(1234, 80, 2, b"abc")),
            16,
        );
        assert!(transport_ok(&d));
        let new = FlowId::new(
            Ipv4Addr::new(1, 0, 0, 1),
            40000,
            Ipv4Addr::new(2, 0, 0, 2),
            8080,
        );
        let out = rewrite_and_check(d, new);
        assert!(transport_ok(&out));
        let f = packet_flow(&out, 0, true, &[TCP]).unwrap();
        assert_eq!(f.id, new);
    }

    #[test]
    fn udp_zero_checksum_stays_zero_and_nonzero_updates() {
        let d = ipv4([10, 0, 0, 1], [2, 0, 0, 2], UDP, &udp(53, 53, b"q"));
        let new = FlowId::new(
            Ipv4Addr::new(1, 0, 0, 1),
            1024,
            Ipv4Addr::new(2, 0, 0, 2),
            53,
        );
        let out = rewrite_and_check(d, new);
        assert_eq!(&out[26..28], &[0, 0]);
        let d = with_transport_checksum(
            ipv4([10, 0, 0, 1], [2, 0, 0, 2], UDP, &udp(53, 53, b"q")),
            6,
        );
        let out = rewrite_and_check(d, new);
        assert!(transport_ok(&out));
        assert_ne!(&out[26..28], &[0, 0]);
    }

    /// The one-fold update gives, bit for bit, what updating field by field
    /// (RFC 1624, as `checksum::update_u32`/`update_u16` do) gives: random
    /// addresses, ports and checksums (right or wrong, including 0x0000 and
    /// 0xFFFF), some fields unchanged, TCP and UDP.
    #[test]
    fn one_fold_update_equals_field_by_field() {
        let mut rng = crate::test_kit::Rng::new(0x2545_f491_4f6c_dd1d);
        let mut rnd = || rng.next_u64();
        let special = [0u16, 0xffff, 1, 0xfffe];
        for i in 0..20_000 {
            let proto = if i % 2 == 0 { TCP } else { UDP };
            let r = rnd();
            let (sa, da) = ((r >> 32) as u32, r as u32);
            let r = rnd();
            let (sp, dp) = ((r >> 48) as u16, (r >> 32) as u16);
            let (ipck, l4ck) = if i % 7 == 0 {
                (
                    special[(r >> 8) as usize % 4],
                    special[(r >> 4) as usize % 4],
                )
            } else {
                ((r >> 16) as u16, r as u16)
            };
            let seg = if proto == TCP {
                tcp(sp, dp, 16, b"x")
            } else {
                udp(sp, dp, b"x")
            };
            let mut d = ipv4(sa.to_be_bytes(), da.to_be_bytes(), proto, &seg);
            d[10..12].copy_from_slice(&ipck.to_be_bytes());
            let co = 20 + if proto == TCP { 16 } else { 6 };
            d[co..co + 2].copy_from_slice(&l4ck.to_be_bytes());
            let f = packet_flow(&d, 0, true, &[TCP, UDP]).unwrap();
            let r = rnd();
            let keep = rnd();
            let new = FlowId {
                saddr: if keep & 1 != 0 { sa } else { (r >> 32) as u32 },
                daddr: if keep & 2 != 0 { da } else { r as u32 },
                sport: if keep & 4 != 0 { sp } else { (r >> 16) as u16 },
                dport: if keep & 8 != 0 { dp } else { (r >> 40) as u16 },
            };
            let mut got = d.clone();
            rewrite(&mut got, &f, new);
            // Field by field.
            let old = f.id;
            if old == new {
                assert_eq!(got, d);
                continue;
            }
            let mut ip = ipck;
            if old.saddr != new.saddr {
                ip = checksum::update_u32(ip, old.saddr, new.saddr);
            }
            if old.daddr != new.daddr {
                ip = checksum::update_u32(ip, old.daddr, new.daddr);
            }
            let mut l4 = l4ck;
            if !(proto == UDP && l4ck == 0) {
                l4 = checksum::update_u32(l4, old.saddr, new.saddr);
                l4 = checksum::update_u32(l4, old.daddr, new.daddr);
                l4 = checksum::update_u16(l4, old.sport, new.sport);
                l4 = checksum::update_u16(l4, old.dport, new.dport);
                if proto == UDP && l4 == 0 {
                    l4 = 0xffff;
                }
            }
            assert_eq!(
                u16::from_be_bytes([got[10], got[11]]),
                ip,
                "IP checksum, case {i}"
            );
            assert_eq!(
                u16::from_be_bytes([got[co], got[co + 1]]),
                l4,
                "transport checksum, case {i}"
            );
            assert_eq!(packet_flow(&got, 0, true, &[TCP, UDP]).unwrap().id, new);
        }
    }

    #[test]
    fn icmp_echo_identifier_rewrite() {
        let mut payload = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, 9, 9];
        let c = checksum::checksum(&payload);
        payload[2..4].copy_from_slice(&c.to_be_bytes());
        let d = ipv4([10, 0, 0, 1], [2, 0, 0, 2], ICMP, &payload);
        let new = FlowId::new(Ipv4Addr::new(1, 0, 0, 1), 7, Ipv4Addr::new(2, 0, 0, 2), 7);
        let out = rewrite_and_check(d, new);
        assert!(checksum::verify(&out[20..]));
        assert_eq!(&out[24..26], &[0, 7]);
    }

    #[test]
    fn random_rewrites_keep_checksums_valid() {
        let mut rng = crate::test_kit::Rng::new(0x1234_5678_9abc_def0);
        let mut next = || rng.next_u64();
        for i in 0..2000 {
            let proto = if i % 2 == 0 { TCP } else { UDP };
            let len = (next() % 40) as usize;
            let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let sa = (next() as u32).to_be_bytes();
            let da = (next() as u32).to_be_bytes();
            let (seg, at) = if proto == TCP {
                (tcp(next() as u16, next() as u16, 0x10, &data), 16)
            } else {
                (udp(next() as u16, next() as u16, &data), 6)
            };
            let d = with_transport_checksum(ipv4(sa, da, proto, &seg), at);
            if proto == UDP && d[26..28] == [0, 0] {
                continue;
            }
            let new = FlowId {
                saddr: next() as u32,
                daddr: next() as u32,
                sport: next() as u16,
                dport: next() as u16,
            };
            let out = rewrite_and_check(d, new);
            assert!(transport_ok(&out), "case {i}");
        }
    }
}
