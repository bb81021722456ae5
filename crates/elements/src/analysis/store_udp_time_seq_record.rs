//! # StoreUDPTimeSeqRecord
//!
//! StoreUDPTimeSeqRecord([keywords OFFSET, DELTA])
//!
//! Stores a timestamp and a sequence number in UDP packets' payloads, to
//! measure end-to-end delays.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Writes a record at the start of the UDP payload of each packet and
//! updates the UDP checksum incrementally (a zero IPv4 UDP checksum, which
//! means none, stays zero). A second StoreUDPTimeSeqRecord further on, with
//! DELTA true, stores the time elapsed since the first stamped the packet;
//! a capture of the packets then tells each one's delay. The record is five
//! 32-bit words in network byte order:
//!
//!     seq_num, initial_second, initial_nano_second,
//!     difference_second, difference_nano_second
//!
//! The IP header (IPv4 or IPv6) starts OFFSET bytes into the packet. An
//! IPv4 packet must be UDP (a first fragment); an IPv6 packet's next
//! header must be UDP (17). The packet must hold the UDP header and the
//! record (20 bytes) after it. Other packets are dropped, with reasons
//! `too short`, `not IP` and `not UDP`.
//!
//! Times come from the router's clock (simulated under `--simtime`).
//!
//! Keywords:
//! - `OFFSET` (unsigned, default 0): where the IP header starts (14 for
//!   Ethernet frames).
//! - `DELTA` (boolean, default false): if false, set seq_num to this
//!   element's packet count (1 for the first packet), the initial time to
//!   now and the difference to zero; if true, leave seq_num and the
//!   initial time as they are and set the difference to now minus the
//!   initial time (difference_nano_second is always 0 to 999999999).
//!
//! Handlers:
//! - `count` (read): packets seen (the last seq_num given).
//! - `reset` (write): sets `count` to zero.
//!
//! Example:
//!
//!     RatedSource(\<00>, LENGTH 22, RATE 1, LIMIT 100)
//!         -> UDPIPEncap(10.0.1.1, 6667, 20.0.0.2, 6667)
//!         -> EtherEncap(0x0800, 00:04:23:D0:93:63, 00:17:cb:0d:f8:db)
//!         -> StoreUDPTimeSeqRecord(OFFSET 14, DELTA false)
//!         -> DelayShaper(100msec)
//!         -> StoreUDPTimeSeqRecord(OFFSET 14, DELTA true)
//!         -> ToDump(dump.pcap);

use paraclick_packet::wire::checksum::update_u32;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU32, Ordering};

/// Why StoreUDPTimeSeqRecord drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["too short", "not IP", "not UDP"];
const SHORT: u8 = 0;
const NOT_IP: u8 = 1;
const NOT_UDP: u8 = 2;

/// The record's bytes: five 32-bit words.
const RECORD: usize = 20;

pub struct StoreUDPTimeSeqRecord {
    offset: usize,
    delta: bool,
    count: AtomicU32,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("StoreUDPTimeSeqRecord", "1/1", "a", make)
        .shared("a sequence number counting all flows' packets")
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StoreUDPTimeSeqRecord, String> {
    let mut a = cx.args();
    let offset = a.read::<u16>("OFFSET").unwrap_or(0);
    let delta = a.read::<bool>("DELTA").unwrap_or(false);
    a.complete()?;
    Ok(StoreUDPTimeSeqRecord {
        offset: usize::from(offset),
        delta,
        count: AtomicU32::new(0),
    })
}

/// Where the UDP header starts in `d` (the IP header at 0), or why not.
fn udp_at(d: &[u8]) -> Result<usize, u8> {
    match d.first().map(|b| b >> 4) {
        None => Err(SHORT),
        Some(4) => {
            let hl = usize::from(d[0] & 15) * 4;
            if d.len() < 20 || hl < 20 {
                return Err(SHORT);
            }
            let frag = u16::from_be_bytes([d[6], d[7]]) & 0x1fff;
            if d[9] != 17 || frag != 0 {
                return Err(NOT_UDP);
            }
            Ok(hl)
        }
        Some(6) => {
            if d.len() < 40 {
                return Err(SHORT);
            }
            if d[6] != 17 {
                return Err(NOT_UDP);
            }
            Ok(40)
        }
        Some(_) => Err(NOT_IP),
    }
}

fn word(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

impl Action for StoreUDPTimeSeqRecord {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.load(Ordering::Relaxed).to_string()),
        Handler::write("reset", |e, _, _| {
            e.count.store(0, Ordering::Relaxed);
            Ok(())
        }),
    ];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let now = cx.timestamp();
        let Some(d) = p.data_mut().get_mut(self.offset..) else {
            return Verdict::DropFor(SHORT);
        };
        let u = match udp_at(d) {
            Ok(u) => u,
            Err(r) => return Verdict::DropFor(r),
        };
        let rec = u + 8;
        if d.len() < rec + RECORD {
            return Verdict::DropFor(SHORT);
        }
        let n = self.count.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (sec, nsec) = (now.sec() as u32, now.nsec());
        let new: [u32; 5] = if self.delta {
            let init = paraclick_packet::Timestamp::from_parts(
                i64::from(word(d, rec + 4)),
                word(d, rec + 8).min(999_999_999),
            );
            let diff = paraclick_packet::Timestamp(now.0.saturating_sub(init.0));
            [
                word(d, rec),
                word(d, rec + 4),
                word(d, rec + 8),
                diff.sec() as u32,
                diff.nsec(),
            ]
        } else {
            [n, sec, nsec, 0, 0]
        };
        let mut sum = u16::from_be_bytes([d[u + 6], d[u + 7]]);
        let is_v4 = d[0] >> 4 == 4;
        for (i, &w) in new.iter().enumerate() {
            let at = rec + 4 * i;
            sum = update_u32(sum, word(d, at), w);
            d[at..at + 4].copy_from_slice(&w.to_be_bytes());
        }
        // IPv4's zero checksum means none; IPv6 always has one.
        let old = u16::from_be_bytes([d[u + 6], d[u + 7]]);
        if !(is_v4 && old == 0) {
            let sum = if sum == 0 { 0xffff } else { sum };
            d[u + 6..u + 8].copy_from_slice(&sum.to_be_bytes());
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::{Ipv4Header, UdpHeader};
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::Harness;
    use std::time::Duration;

    /// The record's five words, at `rec`.
    fn words(p: &Packet, rec: usize) -> [u32; 5] {
        let d = p.data();
        std::array::from_fn(|i| {
            u32::from_be_bytes(d[rec + 4 * i..rec + 4 * i + 4].try_into().unwrap())
        })
    }

    fn udp_ok(p: &Packet, off: usize) -> bool {
        let ip = Ipv4Header::new_checked(&p.data()[off..]).unwrap();
        let (s, d) = (ip.src_addr(), ip.dst_addr());
        UdpHeader::new_checked(&p.data()[off + 20..])
            .unwrap()
            .verify_checksum(s, d)
    }

    fn frame(payload: &[u8]) -> Vec<u8> {
        let ip = Ip::new("10.0.1.1", "20.0.0.2", 17)
            .udp(6667, 6667, payload)
            .bytes();
        let mut f = vec![0u8; 14];
        f.extend_from_slice(&ip);
        f
    }

    const REC: usize = 14 + 28;

    #[test]
    fn stamps_sequence_numbers_and_time() {
        let h = harness("StoreUDPTimeSeqRecord(OFFSET 14)", 1);
        h.push(0, vec![pkt(&frame(&[7; 22])), pkt(&frame(&[7; 20]))]);
        let out = h.output(0);
        let (a, b) = (words(&out[0], REC), words(&out[1], REC));
        assert_eq!((a[0], b[0]), (1, 2));
        assert!(a[1] > 1_000_000_000, "initial seconds {}", a[1]);
        assert_eq!((a[3], a[4], b[3], b[4]), (0, 0, 0, 0));
        assert!(udp_ok(&out[0], 14) && udp_ok(&out[1], 14));
        // The bytes after the record are untouched.
        assert_eq!(&out[0].data()[REC + 20..], &[7, 7]);
        assert_eq!(h.read("count").unwrap(), "2");
        h.write("reset", "").unwrap();
        h.push(0, vec![pkt(&frame(&[0; 20]))]);
        assert_eq!(words(&h.output(0)[0], REC)[0], 1);
    }

    #[test]
    fn delta_measures_time_since_the_initial_stamp() {
        let h = Harness::simulated(&reg(), "StoreUDPTimeSeqRecord(OFFSET 14, DELTA true)", 1, 1)
            .unwrap();
        // Stamped at the epoch: the difference is the clock's reading.
        let record = |w: [u32; 3]| -> Vec<u8> {
            let mut r: Vec<u8> = w.iter().flat_map(|x| x.to_be_bytes()).collect();
            r.extend_from_slice(&[0; 8]);
            r
        };
        h.push(0, vec![pkt(&frame(&record([9, 0, 0])))]);
        let now = words(&h.output(0)[0], REC);
        assert_eq!(now[0], 9, "DELTA leaves seq_num");
        assert_eq!((now[1], now[2]), (0, 0));
        // Stamped with that reading, 1.5 s later: the difference is 1.5 s.
        h.advance(Duration::from_millis(1500));
        h.push(0, vec![pkt(&frame(&record([9, now[3], now[4]])))]);
        let out = h.output(0);
        assert_eq!(words(&out[0], REC)[3..], [1, 500_000_000]);
        assert!(udp_ok(&out[0], 14));
    }

    #[test]
    fn checksums_ipv6_and_bad_packets() {
        let h = harness("StoreUDPTimeSeqRecord", 1);
        // A zero (absent) IPv4 UDP checksum stays zero.
        let mut ip = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .udp(1, 2, &[0; 20])
            .bytes();
        ip[26] = 0;
        ip[27] = 0;
        // IPv6: the record follows the 40-byte header and the UDP header.
        let ip6 = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1, 2, &[0; 20])
            .bytes();
        let tcp = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .tcp(1, 2, 0, 0, 0, 0)
            .bytes();
        let short = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .udp(1, 2, &[0; 19])
            .bytes();
        h.push(
            0,
            vec![
                pkt(&ip),
                pkt(&ip6),
                pkt(&tcp),
                pkt(&short),
                pkt(&[0x10; 60]),
                pkt(&[]),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(&out[0].data()[26..28], &[0, 0]);
        assert_eq!(words(&out[0], 28)[0], 1);
        assert_eq!(words(&out[1], 48)[0], 2);
        let d = out[1].data();
        let sum = paraclick_packet::wire::checksum::combine(&[
            paraclick_packet::wire::checksum::sum(&d[8..40]),
            17,
            (d.len() - 40) as u16,
            paraclick_packet::wire::checksum::sum(&d[40..]),
        ]);
        assert_eq!(sum, 0xffff, "IPv6 UDP checksum still verifies");
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "too short 2\nnot IP 1\nnot UDP 1\n"
        );
    }
}
