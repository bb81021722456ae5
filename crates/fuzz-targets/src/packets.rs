//! Every packet element of the robustness list against arbitrary packets
//! with arbitrary annotations.

use arbitrary::{Result, Unstructured};
use paraclick_elements::robust::PACKET_ELEMENTS;
use paraclick_packet::wire::{
    checksum, ip_proto, EtherAddr, EthernetFrame, EthernetRepr, IcmpHeader, Ipv4Header, Ipv4Repr,
    TcpHeader, UdpHeader, UdpRepr,
};
use paraclick_packet::{pool, Packet, PacketType, Timestamp};
use paraclick_runtime::testing::Harness;
use std::net::Ipv4Addr;

/// Picks an element of [`PACKET_ELEMENTS`], pushes fuzz-made packets into
/// it (one at a time and in batches) and checks:
///
/// - conservation: for elements that neither keep nor make packets, the
///   packets out plus the counted drops equal the packets in;
/// - every packet that comes out has header annotations inside its data
///   (reading them does not panic);
/// - no pool buffer is leaked: once the outputs and the router are
///   dropped, this thread's pool holds as many buffers in use as before.
pub fn packet_elements(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(which) = u.choose_index(PACKET_ELEMENTS.len()) else {
        return;
    };
    let (decl, nout, one_for_one) = PACKET_ELEMENTS[which];
    let before = pool::local_stats().in_use();
    {
        let h = Harness::new(crate::registry(), &format!("{decl}; Idle -> e"), nout)
            .unwrap_or_else(|e| panic!("{decl}: {e}"));
        let mut pushed = 0u64;
        let mut out = 0u64;
        let mut made = 0u64;
        while !u.is_empty() && pushed < 64 {
            let n = u.int_in_range(1..=8).unwrap_or(1);
            let mut batch = Vec::with_capacity(n);
            for _ in 0..n {
                match packet(&mut u) {
                    Ok(Some(p)) => batch.push(p),
                    _ => break,
                }
            }
            if batch.is_empty() {
                break;
            }
            pushed += batch.len() as u64;
            if decl == "PaintSwitch" {
                // Paint 255 means every output: nout - 1 copies made.
                let all = batch.iter().filter(|p| p.anno().paint == 255).count();
                made += (all * (nout - 1)) as u64;
            }
            h.push(0, batch);
            for o in 0..nout {
                for p in h.output(o) {
                    inspect(&p);
                    out += 1;
                }
            }
        }
        if one_for_one {
            assert_eq!(
                out + h.drops(),
                pushed + made,
                "{decl}: {out} out + {} dropped of {pushed} in and {made} copies",
                h.drops()
            );
        }
    }
    let after = pool::local_stats().in_use();
    assert_eq!(
        after,
        before,
        "{decl}: {} pool buffers leaked",
        after - before
    );
}

/// Reads every header annotation of an output packet.
fn inspect(p: &Packet) {
    let len = p.len();
    for h in [p.mac_header(), p.network_header(), p.transport_header()]
        .into_iter()
        .flatten()
    {
        assert!(h.len() <= len + p.headroom(), "header beyond the packet");
    }
    let _ = p.network_header_length();
}

/// One packet: raw bytes, or a valid Ethernet/IPv4/UDP|TCP|ICMP frame
/// from fuzz-chosen fields then mutated; with fuzz-chosen header marks and
/// annotations.
fn packet(u: &mut Unstructured<'_>) -> Result<Option<Packet>> {
    let mut d = if u.ratio(1, 2)? {
        let n = u.int_in_range(0..=1600)?;
        u.bytes(n.min(u.len()))?.to_vec()
    } else {
        valid_frame(u)?
    };
    // Mutations: overwrite bytes, truncate.
    for _ in 0..u.int_in_range(0..=4)? {
        if d.is_empty() {
            break;
        }
        let k = u.choose_index(d.len())?;
        d[k] = u.arbitrary()?;
    }
    if u.ratio(1, 6)? && !d.is_empty() {
        let n = u.choose_index(d.len())?;
        d.truncate(n);
    }
    let Some(mut p) = Packet::from_slice(&d) else {
        return Ok(None);
    };
    match u.int_in_range(0..=3)? {
        0 => {}
        1 => {
            // The IP header right at the start, length from its IHL.
            let hl = d.first().map_or(20, |b| usize::from(b & 0xf) * 4);
            p.set_network_header(0, hl.min(d.len()));
        }
        2 => {
            p.set_mac_header(0);
            if d.len() >= 14 {
                let hl = d.get(14).map_or(20, |b| usize::from(b & 0xf) * 4);
                p.set_network_header(14, hl.min(d.len() - 14));
            }
        }
        _ => {
            // Anywhere inside the data.
            if !d.is_empty() {
                let off = u.choose_index(d.len())?;
                let hl = u.int_in_range(0..=60usize)?.min(d.len() - off);
                p.set_network_header(off, hl);
            }
        }
    }
    if u.ratio(1, 2)? {
        let a = p.anno_mut();
        a.timestamp = Timestamp(u.arbitrary()?);
        a.dst_ip = Ipv4Addr::from(u.arbitrary::<u32>()?);
        a.flow_hash = u.arbitrary()?;
        a.paint = u.arbitrary()?;
        a.packet_type = *u.choose(&[
            PacketType::Host,
            PacketType::Broadcast,
            PacketType::Multicast,
            PacketType::OtherHost,
            PacketType::Outgoing,
            PacketType::Loopback,
            PacketType::FastRoute,
        ])?;
        a.fix_ip_src = u.arbitrary()?;
        a.icmp_param_off = u.arbitrary()?;
        a.device = u.arbitrary()?;
        a.vlan_tci = u.arbitrary()?;
        a.extra_packets = u.arbitrary()?;
        a.extra_length = u.arbitrary()?;
        a.seq = u.arbitrary()?;
        a.user = u.arbitrary()?;
    }
    Ok(Some(p))
}

/// A valid frame built with the wire module's emitters: Ethernet (or
/// none), IPv4 with fuzz-chosen fields, then UDP, TCP or ICMP with correct
/// lengths and checksums.
fn valid_frame(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let eth = u.arbitrary::<bool>()?;
    let proto = *u.choose(&[ip_proto::UDP, ip_proto::TCP, ip_proto::ICMP])?;
    let payload_len = u.int_in_range(0..=200usize)?;
    let l4_len = match proto {
        ip_proto::UDP => 8,
        ip_proto::TCP => 20,
        _ => 8,
    } + payload_len;
    let src = Ipv4Addr::from(u.arbitrary::<u32>()?);
    let dst = Ipv4Addr::from(u.arbitrary::<u32>()?);
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: proto,
        payload_len: l4_len,
        ttl: u.arbitrary()?,
        tos: u.arbitrary()?,
        ident: u.arbitrary()?,
        dont_frag: u.arbitrary()?,
        more_frags: u.ratio(1, 8)?,
        frag_offset: if u.ratio(1, 8)? {
            u.int_in_range(0..=8191u16)? * 8
        } else {
            0
        },
    };
    let l2 = if eth { 14 } else { 0 };
    let mut d = vec![0u8; l2 + ip.buffer_len()];
    if eth {
        let e = EthernetRepr {
            src_addr: EtherAddr(u.arbitrary()?),
            dst_addr: EtherAddr(u.arbitrary()?),
            ethertype: 0x0800,
        };
        e.emit(&mut EthernetFrame::new_unchecked(&mut d[..14]));
    }
    let (iph, rest) = d[l2..].split_at_mut(20);
    ip.emit(&mut Ipv4Header::new_unchecked(&mut *iph));
    let payload = u.bytes(payload_len.min(u.len()))?;
    match proto {
        ip_proto::UDP => {
            rest[8..8 + payload.len()].copy_from_slice(payload);
            let r = UdpRepr {
                src_port: u.arbitrary()?,
                dst_port: u.arbitrary()?,
                payload_len,
            };
            let mut h = UdpHeader::new_unchecked(&mut *rest);
            r.emit(&mut h);
            h.fill_checksum(src, dst);
        }
        ip_proto::TCP => {
            rest[20..20 + payload.len()].copy_from_slice(payload);
            let mut h = TcpHeader::new_unchecked(&mut *rest);
            h.set_src_port(u.arbitrary()?);
            h.set_dst_port(u.arbitrary()?);
            h.set_seq_number(u.arbitrary()?);
            h.set_ack_number(u.arbitrary()?);
            h.set_header_len(20);
            h.set_flags(u.int_in_range(0..=0x1ffu16)?);
            h.set_window_len(u.arbitrary()?);
            h.fill_checksum(src, dst);
        }
        _ => {
            rest[8..8 + payload.len()].copy_from_slice(payload);
            let mut h = IcmpHeader::new_unchecked(&mut *rest);
            let any: u8 = u.arbitrary()?;
            h.set_msg_type(*u.choose(&[0u8, 3, 5, 8, 11, 12, 13, 14, any])?);
            h.set_code(u.int_in_range(0..=16)?);
            h.set_rest_of_header(u.arbitrary()?);
            h.fill_checksum();
        }
    }
    debug_assert!(checksum::verify(&d[l2..l2 + 20]));
    Ok(d)
}
