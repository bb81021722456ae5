//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Vocabulary used here:
//!
//! - a *sum* is the 16-bit one's complement sum of a run of big-endian
//!   16-bit words, folded but **not** complemented ([`sum`], [`combine`],
//!   [`pseudo_header_sum`]);
//! - a *checksum* is the complement of a sum, the value stored in a header
//!   ([`checksum`], [`update_u16`], [`update_u32`]).
//!
//! A header whose checksum is correct sums to `0xFFFF` including its
//! checksum field; [`verify`] tests exactly that.
//!
//! [`sum`] runs once per packet on the hot path: it adds the data as native
//! 32-bit words into a 64-bit accumulator (no carry handling in the loop, so
//! the compiler vectorizes it), folds once at the end and swaps the bytes if
//! the machine is little-endian. The one's complement sum commutes with byte
//! swapping (RFC 1071 §2(B)), which is what makes this correct.

use core::net::Ipv4Addr;

/// Folds a 64-bit accumulator of 16-bit words into a 16-bit one's complement
/// sum. A nonzero accumulator never folds to 0.
#[inline]
pub const fn fold(mut acc: u64) -> u16 {
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    acc as u16
}

/// One's complement sum of `data`, read as big-endian 16-bit words; an odd
/// final byte is padded with a zero byte. Folded, not complemented.
///
/// Correct for buffers up to 16 GiB (2^32 words of 4 bytes), far beyond any
/// packet.
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    let mut words = data.chunks_exact(4);
    let mut acc: u64 = 0;
    for w in &mut words {
        acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // The remainder starts at an offset that is a multiple of 4, so
        // padding it with zeros keeps every byte in its place within its
        // 16-bit word (and pads an odd final byte as RFC 1071 says).
        let mut tail = [0u8; 4];
        tail[..rest.len()].copy_from_slice(rest);
        acc += u64::from(u32::from_ne_bytes(tail));
    }
    // The folded value is the sum of native-order words: swap to network
    // order on little-endian machines.
    u16::from_be(fold(acc))
}

/// The 64-bit accumulator of a fixed-size block: its bytes added as
/// native 32-bit words (a short final word padded with zeros), unfolded.
/// Unrolled by the compiler for small headers of known size.
#[inline]
const fn acc_array<const N: usize>(data: &[u8; N]) -> u64 {
    let mut acc: u64 = 0;
    let mut i = 0;
    while i + 4 <= N {
        acc += u32::from_ne_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]) as u64;
        i += 4;
    }
    let mut tail = [0u8; 4];
    let mut j = 0;
    while i < N {
        tail[j] = data[i];
        i += 1;
        j += 1;
    }
    acc + u32::from_ne_bytes(tail) as u64
}

/// [`sum`] of a fixed-size block, unrolled by the compiler: cheaper than
/// [`sum`] for small headers of known size (an option-less IPv4 header is
/// `sum_array::<20>`), where the general loop's setup dominates.
#[inline]
pub fn sum_array<const N: usize>(data: &[u8; N]) -> u16 {
    u16::from_be(fold(acc_array(data)))
}

/// Whether an accumulator of native-order words folds to `0xFFFF`, without
/// folding it. Each 16-bit carry of the fold adds `2^16 - 1` less than it
/// removes, so the folded sum is congruent to `acc` modulo `0xFFFF`; and a
/// nonzero accumulator folds into 1..=0xFFFF, of which only `0xFFFF` is a
/// multiple of `0xFFFF`. Byte order does not matter: a swapped `0xFFFF` is
/// `0xFFFF`. One remainder by a constant (a multiply and a few shifts)
/// instead of four folding steps and a swap.
#[inline]
const fn acc_is_ffff(acc: u64) -> bool {
    acc != 0 && acc.is_multiple_of(0xffff)
}

/// [`verify`] for a fixed-size block (an option-less IPv4 header is
/// `verify_array::<20>`): `sum_array(data) == 0xFFFF`, computed without
/// folding.
#[inline]
pub fn verify_array<const N: usize>(data: &[u8; N]) -> bool {
    acc_is_ffff(acc_array(data))
}

/// The Internet checksum of `data`: the complement of [`sum`].
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// True if `data`, which contains its own checksum field, sums to `0xFFFF`.
#[inline]
pub fn verify(data: &[u8]) -> bool {
    sum(data) == 0xffff
}

/// One's complement addition of two sums.
#[inline]
pub const fn add(a: u16, b: u16) -> u16 {
    fold(a as u64 + b as u64)
}

/// One's complement sum of several partial sums.
///
/// Partial sums combine exactly only if every part but the last has an even
/// length (each part starts on a 16-bit word boundary of the whole).
#[inline]
pub fn combine(sums: &[u16]) -> u16 {
    let mut acc: u64 = 0;
    for &s in sums {
        acc += u64::from(s);
    }
    fold(acc)
}

/// Sum of the IPv4 pseudo-header used by TCP and UDP checksums (RFC 768,
/// RFC 793): source, destination, zero byte, protocol, and the length of the
/// transport header plus data.
#[inline]
pub fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u16 {
    let s = u32::from(src);
    let d = u32::from(dst);
    fold(
        u64::from(s >> 16)
            + u64::from(s & 0xffff)
            + u64::from(d >> 16)
            + u64::from(d & 0xffff)
            + u64::from(protocol)
            + u64::from(length),
    )
}

/// Incremental update of a checksum after a 16-bit field (at an even offset
/// of the checksummed data) changes from `old` to `new` (RFC 1624, eqn. 3:
/// `HC' = ~(~HC + ~m + m')`).
///
/// For a checksum originally computed over the whole data, the result equals
/// a full recomputation, except when the data has become all zeros (a full
/// recomputation then gives `0xFFFF`, this gives `0x0000`).
#[inline]
pub const fn update_u16(old_cksum: u16, old: u16, new: u16) -> u16 {
    !fold(!old_cksum as u64 + !old as u64 + new as u64)
}

/// Corrects the one case where [`update_u16`] and [`update_u32`] differ
/// from a full recomputation: `data` (the checksummed bytes, the new
/// checksum `cksum` already stored in them) has become all zeros, whose
/// checksum is `0xFFFF` (`~+0`), not `0x0000` (`~-0`, which fails
/// verification). A zero ICMP echo (type 0, identifier 0, sequence 0, no
/// data) is such a packet. Only looks at `data` when `cksum` is 0.
#[inline]
pub fn fix_zero(cksum: u16, data: &[u8]) -> u16 {
    if cksum == 0 && data.iter().all(|&b| b == 0) {
        0xFFFF
    } else {
        cksum
    }
}

/// Incremental update of a checksum after a 32-bit field (at an even offset,
/// e.g. an IPv4 address) changes from `old` to `new`.
#[inline]
pub const fn update_u32(old_cksum: u16, old: u32, new: u32) -> u16 {
    let old = !old;
    !fold(
        !old_cksum as u64
            + (old >> 16) as u64
            + (old & 0xffff) as u64
            + (new >> 16) as u64
            + (new & 0xffff) as u64,
    )
}

/// [`update_u32`] for an IPv4 address change (NAT, source rewriting).
#[inline]
pub fn update_addr(old_cksum: u16, old: Ipv4Addr, new: Ipv4Addr) -> u16 {
    update_u32(old_cksum, u32::from(old), u32::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_zero_turns_an_all_zero_update_into_ffff() {
        // An echo request with identifier and sequence 0 and no data:
        // its checksum is !0x0800; turned into a reply (type 0) the data
        // is all zeros, whose checksum is 0xFFFF.
        let req = [8u8, 0, 0, 0, 0, 0, 0, 0];
        let ck = checksum(&req);
        assert_eq!(ck, 0xF7FF);
        let upd = update_u16(ck, 0x0800, 0);
        assert_eq!(upd, 0, "the incremental update gives ~-0");
        let mut rep = [0u8; 8];
        rep[2..4].copy_from_slice(&upd.to_be_bytes());
        let fixed = fix_zero(upd, &rep);
        assert_eq!(fixed, 0xFFFF);
        rep[2..4].copy_from_slice(&fixed.to_be_bytes());
        assert!(verify(&rep));
        assert_eq!(fixed, checksum(&[0u8; 8]));
        // A zero checksum over data that is not all zeros is right as is.
        let d = [0xFFu8, 0xFF, 0, 0];
        assert_eq!(checksum(&d), 0);
        assert_eq!(fix_zero(0, &d), 0);
        assert_eq!(fix_zero(0x1234, &[0u8; 4]), 0x1234);
    }
    use crate::wire::TestRng;

    /// Straightforward reference: big-endian 16-bit words, carry folded at
    /// every step.
    fn reference_sum(data: &[u8]) -> u16 {
        let mut acc: u32 = 0;
        let mut i = 0;
        while i < data.len() {
            let hi = u32::from(data[i]) << 8;
            let lo = data.get(i + 1).map_or(0, |&b| u32::from(b));
            acc += hi | lo;
            acc = (acc & 0xffff) + (acc >> 16);
            i += 2;
        }
        acc as u16
    }

    const IPV4_EXAMPLE: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    #[test]
    fn ipv4_header_known_vector() {
        assert!(verify(&IPV4_EXAMPLE));
        let mut h = IPV4_EXAMPLE;
        h[10] = 0;
        h[11] = 0;
        assert_eq!(checksum(&h), 0xb861);
        assert!(!verify(&h));
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum(&data), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn empty_and_odd() {
        assert_eq!(sum(&[]), 0);
        assert_eq!(checksum(&[]), 0xffff);
        assert_eq!(sum(&[0xab]), 0xab00);
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
        assert_eq!(sum(&[0xff, 0xff, 0x00, 0x01]), 0x0001);
    }

    #[test]
    fn fold_never_returns_zero_for_nonzero() {
        assert_eq!(fold(0), 0);
        assert_eq!(fold(0xffff), 0xffff);
        assert_eq!(fold(0x1_0000), 1);
        assert_eq!(fold(0xffff_ffff_ffff_ffff), 0xffff);
        assert_eq!(fold(0x1_0000_0000), 1);
    }

    #[test]
    fn sum_matches_reference() {
        let mut rng = TestRng::new(1);
        for len in 0..300 {
            let data = rng.bytes(len);
            assert_eq!(sum(&data), reference_sum(&data), "len {len}");
        }
        // All-ones data exercises the carries.
        for len in 0..100 {
            let data = vec![0xffu8; len];
            assert_eq!(sum(&data), reference_sum(&data), "ones len {len}");
        }
        let big = rng.bytes(9000);
        assert_eq!(sum(&big), reference_sum(&big));
    }

    #[test]
    fn sum_array_matches_sum() {
        let mut rng = TestRng::new(5);
        for _ in 0..50 {
            let d = rng.bytes(64);
            let a20: [u8; 20] = d[..20].try_into().unwrap();
            assert_eq!(sum_array(&a20), sum(&a20));
            let a21: [u8; 21] = d[..21].try_into().unwrap();
            assert_eq!(sum_array(&a21), sum(&a21));
            let a3: [u8; 3] = d[..3].try_into().unwrap();
            assert_eq!(sum_array(&a3), sum(&a3));
            let a60: [u8; 60] = d[..60].try_into().unwrap();
            assert_eq!(sum_array(&a60), sum(&a60));
        }
        assert_eq!(sum_array(&[]), 0);
        assert_eq!(sum_array(&IPV4_EXAMPLE), 0xffff);
    }

    #[test]
    fn verify_array_is_sum_array_equal_ffff() {
        fn check<const N: usize>(a: &[u8; N]) {
            assert_eq!(verify_array(a), sum_array(a) == 0xffff, "{a:02x?}");
        }
        let mut rng = TestRng::new(9);
        for _ in 0..2000 {
            let d = rng.bytes(64);
            let mut a20: [u8; 20] = d[..20].try_into().unwrap();
            check(&a20);
            // With its checksum set it verifies; one bit off, it does not.
            a20[10..12].fill(0);
            let c = !sum_array(&a20);
            a20[10..12].copy_from_slice(&c.to_be_bytes());
            assert!(verify_array(&a20));
            check(&a20);
            a20[usize::from(d[20]) % 20] ^= 1 << (d[21] % 8);
            assert!(!verify_array(&a20));
            check(&a20);
            let a21: [u8; 21] = d[..21].try_into().unwrap();
            check(&a21);
            let a60: [u8; 60] = d[..60].try_into().unwrap();
            check(&a60);
        }
        // Sums that are multiples of 0xFFFF other than 0xFFFF itself, and
        // all zeros (sums to 0, not 0xFFFF), and all ones.
        check(&[0u8; 20]);
        check(&[0xffu8; 20]);
        check(&[0xff, 0xff, 0, 0]);
        check(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        check(&[0x80, 0x00, 0x7f, 0xff]);
        assert!(!verify_array(&[0u8; 20]));
        assert!(verify_array(&IPV4_EXAMPLE));
    }

    #[test]
    fn combine_parts() {
        let mut rng = TestRng::new(2);
        for _ in 0..200 {
            let len = rng.below(200);
            let data = rng.bytes(len);
            let cut = rng.below(len + 1) & !1;
            let whole = sum(&data);
            let parts = combine(&[sum(&data[..cut]), sum(&data[cut..])]);
            // 0x0000 and 0xffff are both zero in one's complement.
            assert_eq!(whole % 0xffff, parts % 0xffff);
            assert_eq!(add(sum(&data[..cut]), sum(&data[cut..])), parts);
        }
    }

    #[test]
    fn pseudo_header_matches_bytes() {
        let src = Ipv4Addr::new(192, 168, 0, 1);
        let dst = Ipv4Addr::new(10, 255, 3, 200);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&src.octets());
        bytes.extend_from_slice(&dst.octets());
        bytes.extend_from_slice(&[0, 17, 0x05, 0xdc]);
        assert_eq!(pseudo_header_sum(src, dst, 17, 1500), sum(&bytes));
    }

    #[test]
    fn incremental_u16_matches_full() {
        let mut rng = TestRng::new(3);
        for _ in 0..5000 {
            let len = 2 + 2 * rng.below(40);
            let mut data = rng.bytes(len);
            let cksum = checksum(&data);
            let at = 2 * rng.below(len / 2);
            let old = u16::from_be_bytes([data[at], data[at + 1]]);
            let new = match rng.below(4) {
                0 => old,
                1 => 0,
                2 => 0xffff,
                _ => rng.next_u64() as u16,
            };
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
            if data.iter().all(|&b| b == 0) {
                // The one case RFC 1624 leaves apart: all-zero data sums to
                // +0, which an incremental update cannot reach.
                continue;
            }
            let full = checksum(&data);
            let incr = update_u16(cksum, old, new);
            assert_eq!(incr, full, "data {data:02x?} at {at} {old:04x}->{new:04x}");
        }
    }

    #[test]
    fn incremental_u32_matches_full() {
        let mut rng = TestRng::new(4);
        for _ in 0..5000 {
            let len = 4 + 2 * rng.below(40);
            let mut data = rng.bytes(len);
            let cksum = checksum(&data);
            let at = 2 * rng.below((len - 2) / 2);
            let old = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let new = match rng.below(4) {
                0 => old,
                1 => 0,
                2 => 0xffff_ffff,
                _ => rng.next_u64() as u32,
            };
            data[at..at + 4].copy_from_slice(&new.to_be_bytes());
            if data.iter().all(|&b| b == 0) {
                continue;
            }
            assert_eq!(update_u32(cksum, old, new), checksum(&data));
        }
    }

    #[test]
    fn incremental_ttl_on_known_header() {
        // Decrement the TTL of the example header: the 16-bit word is
        // TTL<<8 | protocol.
        let mut h = IPV4_EXAMPLE;
        let old = u16::from_be_bytes([h[8], h[9]]);
        h[8] -= 1;
        let new = u16::from_be_bytes([h[8], h[9]]);
        let c = update_u16(0xb861, old, new);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(verify(&h));
        assert_eq!(c, 0xb961);
    }

    #[test]
    fn update_addr_matches_full() {
        let mut h = IPV4_EXAMPLE;
        let new = Ipv4Addr::new(203, 0, 113, 77);
        let c = update_addr(0xb861, Ipv4Addr::new(192, 168, 0, 1), new);
        h[12..16].copy_from_slice(&new.octets());
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(verify(&h));
    }
}
