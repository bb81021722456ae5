//! # SetCRC32
//!
//! SetCRC32
//!
//! Computes a CRC-32 over each packet and appends it.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Appends 4 bytes to each packet: the CRC-32 of its data computed as
//! Click's does (the Ethernet polynomial 0x04C11DB7, most significant bit
//! first, initial value 0xFFFFFFFF, no final inversion), stored in little
//! endian order (as Click stores it on the x86 hosts it runs on). A packet
//! that cannot grow (no buffer room) is dropped ("out of packet buffers").
//!
//! Example:
//!
//!     ... -> SetCRC32 -> link -> CheckCRC32 -> ...
//!
//! # CheckCRC32
//!
//! CheckCRC32
//!
//! Checks the CRC-32 that SetCRC32 appended.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! If the last 4 bytes of a packet are the CRC-32 (as SetCRC32 computes
//! and stores it) of the bytes before them, removes them and passes the
//! packet on; otherwise drops it ("bad CRC", or "too short" for a packet
//! of fewer than 4 bytes).
//!
//! Handlers:
//! - `drops` (read): packets dropped.

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};

/// CRC-32 table for the MSB-first Ethernet polynomial.
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Click's CRC-32 of `data`: MSB first, initial 0xFFFFFFFF, no final xor.
pub fn crc32(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |c, &b| {
        (c << 8) ^ TABLE[usize::from(((c >> 24) as u8) ^ b)]
    })
}

pub struct SetCRC32;

pub struct CheckCRC32 {
    drops: PerThreadCount,
}

const SET_REASONS: &[&str] = &["out of packet buffers"];
const CHECK_REASONS: &[&str] = &["bad CRC", "too short"];
const BAD_CRC: u8 = 0;
const TOO_SHORT: u8 = 1;

pub fn set_spec() -> ClassSpec {
    ClassSpec::action("SetCRC32", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        cx.args().complete()?;
        Ok(SetCRC32)
    })
    .stateless()
    .drop_reasons(SET_REASONS)
}

pub fn check_spec() -> ClassSpec {
    ClassSpec::action("CheckCRC32", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        cx.args().complete()?;
        Ok(CheckCRC32 {
            drops: PerThreadCount::new(cx.nthreads),
        })
    })
    .stateless()
    .drop_reasons(CHECK_REASONS)
}

impl Action for SetCRC32 {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let c = crc32(p.data());
        let n = p.len();
        if p.put(4).is_err() {
            return Verdict::DropFor(0);
        }
        p.data_mut()[n..].copy_from_slice(&c.to_le_bytes());
        Verdict::Out(0)
    }
}

impl Action for CheckCRC32 {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let d = p.data();
        if d.len() < 4 {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(TOO_SHORT);
        }
        let (body, tail) = d.split_at(d.len() - 4);
        if crc32(body).to_le_bytes() != tail {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(BAD_CRC);
        }
        p.take(4);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::crc32;
    use crate::test_kit::*;

    #[test]
    fn the_check_value_of_the_mpeg2_crc() {
        // MSB first, init all ones, no final xor: CRC-32/MPEG-2.
        assert_eq!(crc32(b"123456789"), 0x0376_E6E7);
        assert_eq!(crc32(b""), 0xffff_ffff);
    }

    #[test]
    fn set_appends_and_check_removes() {
        let h = harness("SetCRC32", 1);
        h.push(0, vec![pkt(b"123456789")]);
        let out = h.output(0);
        assert_eq!(out[0].data(), b"123456789\xe7\xe6\x76\x03");
        let c = harness("CheckCRC32", 1);
        c.push(0, out);
        assert_eq!(c.output(0)[0].data(), b"123456789");
        assert_eq!(c.read("drops").unwrap(), "0");
    }

    #[test]
    fn check_drops_corrupted_and_short_packets() {
        let c = harness("CheckCRC32", 1);
        let mut rng = Rng::new(5);
        let mut good = Vec::new();
        let mut bad = Vec::new();
        for _ in 0..50 {
            let n = 1 + rng.below(100);
            let mut d = rng.bytes(n);
            let crc = crc32(&d).to_le_bytes();
            d.extend_from_slice(&crc);
            good.push(pkt(&d));
            let i = rng.below(d.len());
            d[i] ^= 1 << rng.below(8);
            bad.push(pkt(&d));
        }
        c.push(0, good);
        assert_eq!(c.output(0).len(), 50);
        c.push(0, bad);
        c.push(0, vec![pkt(b"abc")]);
        assert!(c.output(0).is_empty());
        assert_eq!(c.read("drops").unwrap(), "51");
        assert_eq!(c.read("drop_reasons").unwrap(), "bad CRC 50\ntoo short 1\n");
    }
}
