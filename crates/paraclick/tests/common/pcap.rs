//! pcap files written and read by the tests themselves (not by the
//! project's own reader and writer, so a bug in one does not hide a bug
//! in the other).

use std::path::Path;

/// Writes a pcap of link type `linktype` (1 Ethernet, 101 raw IP); each
/// packet with its time in milliseconds.
pub fn write_pcap_timed(path: &Path, linktype: u32, pkts: &[(u64, Vec<u8>)]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    for (ms, p) in pkts {
        f.extend_from_slice(&((ms / 1000) as u32).to_le_bytes());
        f.extend_from_slice(&(((ms % 1000) * 1000) as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    std::fs::write(path, f).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Writes a pcap of link type `linktype`, the Nth packet at N ms.
pub fn write_pcap(path: &Path, linktype: u32, pkts: &[Vec<u8>]) {
    let timed: Vec<(u64, Vec<u8>)> = pkts
        .iter()
        .enumerate()
        .map(|(i, p)| (i as u64, p.clone()))
        .collect();
    write_pcap_timed(path, linktype, &timed);
}

/// The packets of a pcap (either byte order), as captured.
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let d = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let le = d[0..4] == [0xd4, 0xc3, 0xb2, 0xa1] || d[0..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let u32at = |o: usize| {
        let b = [d[o], d[o + 1], d[o + 2], d[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= d.len() {
        let caplen = u32at(o + 8) as usize;
        out.push(d[o + 16..o + 16 + caplen].to_vec());
        o += 16 + caplen;
    }
    out
}

/// The Internet checksum of `b`.
pub fn csum(b: &[u8]) -> u16 {
    let mut s = 0u32;
    for c in b.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv4 UDP packet with a payload naming its flow and sequence
/// number ("FLOW nnnn SEQ nnnn").
pub fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flow: u32, seq: u32) -> Vec<u8> {
    let data = format!("FLOW {flow:04} SEQ {seq:04} ....");
    let len = 20 + 8 + data.len();
    let mut p = vec![
        0x45,
        0,
        (len >> 8) as u8,
        len as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let ck = csum(&p);
    p[10..12].copy_from_slice(&ck.to_be_bytes());
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(data.as_bytes());
    p
}

/// An Ethernet frame carrying IPv4 packet `ip`.
pub fn ether(dst: [u8; 6], src: [u8; 6], ip: Vec<u8>) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&[8, 0]);
    f.extend(ip);
    f
}
