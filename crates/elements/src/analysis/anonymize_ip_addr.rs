//! # AnonymizeIPAddr
//!
//! AnonymizeIPAddr([keywords CLASS, PRESERVE_8, SEED])
//!
//! Anonymizes top-level IP addresses in passing packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Replaces the source and destination addresses of passing IPv4 packets
//! (which need their IP header annotation) with anonymized addresses. The
//! mapping is prefix-preserving: if two input addresses share a p-bit
//! prefix, so do their outputs. It is also one-to-one, and the same for
//! every packet while the element lives. 0.0.0.0 and 255.255.255.255
//! always map to themselves.
//!
//! The header checksum is updated incrementally, so it is correct exactly
//! when it was correct before. Only the header the IP header annotation
//! points to is changed (not headers inside ICMP errors or IP-in-IP), and
//! TCP and UDP checksums are left as they were.
//!
//! Click derives its mapping from tcpdpriv's `-A50` tree with random bits;
//! paraclick uses the Crypto-PAn construction instead, with AES-128 (the
//! RustCrypto `aes` crate): output bit i is input bit i flipped by one bit
//! of AES applied to the input's first i bits, so the outputs share
//! exactly the prefixes the inputs share. The few addresses whose image
//! would be 0.0.0.0 or 255.255.255.255 are moved on by applying the
//! mapping again, which keeps it one-to-one.
//!
//! Keywords:
//! - `CLASS` (integer 0-32, default 0): preserve this many leading one
//!   bits. CLASS 1 keeps class A (an output is in class A exactly when
//!   its input is), 2 keeps classes A and B, 3 A, B and C, 4 A to D.
//! - `PRESERVE_8` (space-separated integers 0-255): keep these /8
//!   networks: an output is in 18.0.0.0/8 exactly when its input is, with
//!   `PRESERVE_8 18`. Prefix preservation then fixes nearby networks too
//!   (net 19 maps to 19; nets 16 and 17 map to each other or themselves).
//! - `SEED` (integer; a paraclick extension): derive the AES key from
//!   this number, so runs give the same mapping. Without it the key is
//!   random.
//!
//! Handlers:
//! - `map` (read with parameter, `map ADDR`): the address ADDR maps to.
//!
//! Example:
//!
//!     FromDump(f.pcap, FORCE_IP true) -> AnonymizeIPAddr(CLASS 4, PRESERVE_8 10) -> ToDump(g.pcap)

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThread, Verdict};
use sha2::{Digest, Sha256};
use std::net::Ipv4Addr;

/// A prefix-preserving permutation of IPv4 addresses.
pub struct Anonymizer {
    cipher: Aes128,
    pad: [u8; 16],
    class: u32,
    /// Bit i set: the i-bit prefix (of the value in `preserve_prefix`)
    /// must not be flipped. One entry per preserved net.
    preserve_8: Vec<u8>,
}

impl Anonymizer {
    pub fn new(key: [u8; 32], class: u32, preserve_8: Vec<u8>) -> Anonymizer {
        let cipher = Aes128::new_from_slice(&key[..16]).expect("16-byte key");
        let mut pad = [0u8; 16];
        pad.copy_from_slice(&key[16..]);
        let mut block = aes::Block::from(pad);
        cipher.encrypt_block(&mut block);
        pad.copy_from_slice(&block);
        Anonymizer {
            cipher,
            pad,
            class,
            preserve_8,
        }
    }

    /// Whether bit `i` (from the top) of an address whose top `i` bits
    /// are those of `a` must keep its value.
    fn fixed(&self, a: u32, i: u32) -> bool {
        let prefix = |v: u32| if i == 0 { 0 } else { v >> (32 - i) };
        if i < self.class && prefix(a) == prefix(u32::MAX) {
            return true;
        }
        i < 8
            && self
                .preserve_8
                .iter()
                .any(|&n| prefix(a) == prefix(u32::from(n) << 24))
    }

    /// The flip for bit `i` given the top `i` bits of `a`.
    fn flip(&self, a: u32, i: u32) -> u32 {
        if self.fixed(a, i) {
            return 0;
        }
        let keep: u128 = if i == 0 { 0 } else { (u128::MAX) << (128 - i) };
        let input = (u128::from(a) << 96) & keep | (u128::from_be_bytes(self.pad) & !keep);
        let mut block = aes::Block::from(input.to_be_bytes());
        self.cipher.encrypt_block(&mut block);
        u32::from(block[0] >> 7)
    }

    /// The Crypto-PAn permutation (no special addresses).
    fn raw(&self, a: u32) -> u32 {
        let mut out = 0;
        for i in 0..32 {
            out |= self.flip(a, i) << (31 - i);
        }
        a ^ out
    }

    /// The anonymized address.
    pub fn map(&self, a: u32) -> u32 {
        if a == 0 || a == u32::MAX {
            return a;
        }
        let mut y = self.raw(a);
        // Cycle-walk past the two fixed points' images.
        while y == 0 || y == u32::MAX {
            y = self.raw(y);
        }
        y
    }
}

const CACHE: usize = 1024;

pub struct AnonymizeIPAddr {
    anon: Anonymizer,
    /// Per-thread direct-mapped cache of recent mappings.
    cache: PerThread<Vec<(u32, u32)>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AnonymizeIPAddr", "1/1", "a", make)
        .shared("one prefix-preserving address map for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AnonymizeIPAddr, String> {
    let mut a = cx.args();
    let class: u32 = a.read("CLASS").unwrap_or(0);
    let preserve: Option<Raw> = a.read("PRESERVE_8");
    let seed: Option<u64> = a.read("SEED");
    a.complete()?;
    if class > 32 {
        return Err("CLASS must be between 0 and 32".into());
    }
    let mut nets = Vec::new();
    if let Some(Raw(s)) = preserve {
        for w in s.trim_matches('"').split_whitespace() {
            nets.push(
                w.parse::<u8>()
                    .map_err(|_| format!("PRESERVE_8: '{w}' is not an integer 0-255"))?,
            );
        }
    }
    let mut key = [0u8; 32];
    match seed {
        Some(s) => key.copy_from_slice(&Sha256::digest(s.to_be_bytes())),
        None => getrandom::getrandom(&mut key).map_err(|e| format!("random key: {e}"))?,
    }
    Ok(AnonymizeIPAddr {
        anon: Anonymizer::new(key, class, nets),
        cache: PerThread::new(cx.nthreads, |_| vec![(0, 0); CACHE]),
    })
}

impl AnonymizeIPAddr {
    #[inline]
    fn lookup(&self, cx: &mut Cx<'_>, a: u32) -> u32 {
        let c = self.cache.get(cx);
        let slot = (a.wrapping_mul(0x9e37_79b1) >> 22) as usize % CACHE;
        // Entry (0, 0) is right for address 0 too.
        if c[slot].0 == a {
            return c[slot].1;
        }
        let m = self.anon.map(a);
        c[slot] = (a, m);
        m
    }
}

impl Action for AnonymizeIPAddr {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read_param("map", |e, param, hx| {
        let a: Ipv4Addr = hx.arg(param.unwrap_or(""))?;
        Ok(Ipv4Addr::from(e.anon.map(u32::from(a))).to_string())
    })];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(h) = p.network_header() else {
            return Verdict::Out(0);
        };
        if h.len() < 20 || h[0] >> 4 != 4 {
            return Verdict::Out(0);
        }
        let src = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
        let dst = u32::from_be_bytes([h[16], h[17], h[18], h[19]]);
        let nsrc = self.lookup(cx, src);
        let ndst = self.lookup(cx, dst);
        let Some(h) = p.network_header_mut() else {
            return Verdict::Out(0);
        };
        let mut sum = u16::from_be_bytes([h[10], h[11]]);
        sum = checksum::update_u32(sum, src, nsrc);
        sum = checksum::update_u32(sum, dst, ndst);
        h[12..16].copy_from_slice(&nsrc.to_be_bytes());
        h[16..20].copy_from_slice(&ndst.to_be_bytes());
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;
    use crate::test_kit::{ip_checksum_ok, Rng};
    use paraclick_runtime::testing::assert_err;
    use std::collections::HashSet;

    fn anon(class: u32, nets: Vec<u8>) -> Anonymizer {
        Anonymizer::new([7; 32], class, nets)
    }

    fn common_prefix(a: u32, b: u32) -> u32 {
        (a ^ b).leading_zeros()
    }

    #[test]
    fn prefix_preserving_and_one_to_one() {
        let an = anon(0, vec![]);
        let mut rng = Rng::new(5);
        let addrs: Vec<u32> = (0..2000).map(|_| rng.next_u64() as u32).collect();
        let mut seen = HashSet::new();
        for w in addrs.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (x, y) = (an.map(a), an.map(b));
            if a != b {
                assert_eq!(common_prefix(a, b), common_prefix(x, y), "{a:x} {b:x}");
            }
        }
        for &a in &addrs {
            seen.insert((a, an.map(a)));
        }
        let outs: HashSet<u32> = seen.iter().map(|&(_, y)| y).collect();
        let ins: HashSet<u32> = seen.iter().map(|&(a, _)| a).collect();
        assert_eq!(outs.len(), ins.len());
        // Not the identity, and stable.
        assert!(addrs.iter().filter(|&&a| an.map(a) == a).count() < 10);
        assert_eq!(an.map(addrs[0]), an.map(addrs[0]));
        assert_eq!(an.map(0), 0);
        assert_eq!(an.map(u32::MAX), u32::MAX);
        // One-to-one over a whole /16-sized prefix space.
        let an = anon(0, vec![]);
        let outs: HashSet<u32> = (0..65536u32).map(|i| an.map(0x0a0b_0000 | i)).collect();
        assert_eq!(outs.len(), 65536);
    }

    #[test]
    fn class_and_preserve_8() {
        let an = anon(4, vec![18]);
        let mut rng = Rng::new(9);
        for _ in 0..2000 {
            let a = rng.next_u64() as u32;
            let y = an.map(a);
            // Leading ones preserved up to 4 (classes A-D).
            assert_eq!(a.leading_ones().min(4), y.leading_ones().min(4), "{a:x}");
            assert_eq!(a >> 24 == 18, y >> 24 == 18);
            assert_eq!(a >> 24 == 19, y >> 24 == 19);
            if (16..18).contains(&(a >> 24)) {
                assert!((16..18).contains(&(y >> 24)));
            }
            if (20..24).contains(&(a >> 24)) {
                assert!((20..24).contains(&(y >> 24)));
            }
        }
    }

    #[test]
    fn rewrites_packets_and_keeps_checksum_right() {
        let h = harness("AnonymizeIPAddr(SEED 1)", 1);
        let d = Ip::new("10.1.2.3", "10.1.9.9", 17).udp(1, 2, b"x").bytes();
        h.push(0, vec![marked(&d), marked(&d)]);
        let out = h.output(0);
        let o = out[0].data();
        assert!(ip_checksum_ok(o));
        assert_ne!(&o[12..20], &d[12..20]);
        // Same 20-bit prefix (10.1.0.0/20) in, same out.
        let s = u32::from_be_bytes([o[12], o[13], o[14], o[15]]);
        let t = u32::from_be_bytes([o[16], o[17], o[18], o[19]]);
        assert_eq!(common_prefix(s, t), common_prefix(0x0a01_0203, 0x0a01_0909));
        assert_eq!(out[1].data(), o);
        let m = h.read("map 10.1.2.3").unwrap();
        assert_eq!(m, std::net::Ipv4Addr::from(s).to_string());
        // Same seed, same mapping.
        let h2 = harness("AnonymizeIPAddr(SEED 1)", 1);
        assert_eq!(h2.read("map 10.1.2.3").unwrap(), m);
        for (bad, want) in [
            (
                "AnonymizeIPAddr(CLASS 33)",
                "e :: AnonymizeIPAddr: CLASS must be between 0 and 32",
            ),
            (
                "AnonymizeIPAddr(PRESERVE_8 300)",
                "e :: AnonymizeIPAddr: PRESERVE_8: '300' is not an integer 0-255",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
