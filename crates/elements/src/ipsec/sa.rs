//! Security associations and ESP tunnel mode (RFC 4303), independent of
//! the element API.
//!
//! A [`SecurityAssociation`] holds one direction of a tunnel: SPI,
//! algorithm and keys, tunnel endpoints, the next outbound sequence number
//! (from 1; several threads encrypt with one SA, each taking numbers from
//! a block of 16 it reserved, see [`seq`]: the numbers a receiver sees
//! have gaps and never repeat), the inbound anti-replay window (lock-free,
//! shared by the threads, see [`super::replay`]), and per-thread counters.
//!
//! Algorithms (strongSwan's names):
//! - `aes128gcm16`, `aes256gcm16`: AES-GCM with a 16-byte ICV (RFC 4106);
//!   the key is the AES key followed by a 4-byte salt; the 8-byte explicit
//!   IV is the packet's 64-bit sequence counter (unique per SA, as RFC 4106
//!   §3.1 allows).
//! - `aes128-sha1`, `aes256-sha1`, `aes128-sha256`, `aes256-sha256`,
//!   `3des-sha1`, `3des-sha256`: CBC encryption (RFC 3602, RFC 2451) with
//!   HMAC-SHA1-96 (RFC 2404) or HMAC-SHA256-128 (RFC 4868), encrypt then
//!   MAC; the key is the cipher key followed by the HMAC key (20 or 32
//!   bytes). CBC IVs are the sequence counter encrypted under a random
//!   per-SA AES key: never repeated, not predictable.
//!
//! AES-GCM is ring's (AES-NI and aggregated carry-less multiplication;
//! RustCrypto's `aes-gcm`, with a block-at-a-time GHASH, measured about 8
//! cycles per byte here against ring's 1-2). CBC ciphers and HMACs are
//! RustCrypto's (`aes`, which uses AES-NI when the CPU has it, `cbc`,
//! `des`, `hmac`, `sha1`, `sha2`); integrity is compared with `subtle`
//! (hmac's `verify_truncated_left`) or ring's constant-time tag check.

use super::replay::{ReplayVerdict, ReplayWindow};
use aes::cipher::{
    block_padding::NoPadding, BlockDecryptMut, BlockEncrypt, BlockEncryptMut, InnerIvInit, KeyInit,
};
use hmac::{Hmac, Mac};
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::PerThreadCount;
use sha1::Sha1;
use sha2::Sha256;
use std::fmt;
use std::net::Ipv4Addr;

pub mod seq;
pub mod steps;

/// IP protocol number of ESP.
pub const IPPROTO_ESP: u8 = 50;
/// ESP next-header value of a tunnelled IPv4 packet.
pub const NEXT_IPV4: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integ {
    /// HMAC-SHA1-96.
    Sha1,
    /// HMAC-SHA256-128.
    Sha256,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// AES-GCM with a 16-byte ICV; key length 16 or 32.
    AesGcm { key_len: usize },
    /// AES-CBC, key length 16 or 32, with an HMAC.
    AesCbc { key_len: usize, integ: Integ },
    /// 3DES-EDE-CBC with an HMAC.
    Des3Cbc { integ: Integ },
}

impl Alg {
    /// Parses a strongSwan ESP proposal name.
    pub fn parse(s: &str) -> Result<Alg, String> {
        let s = s.trim().to_ascii_lowercase();
        let integ = |t: &str| match t {
            "sha1" | "sha1_96" => Ok(Integ::Sha1),
            "sha256" | "sha2_256" => Ok(Integ::Sha256),
            _ => Err(()),
        };
        let r = match s.as_str() {
            "aes128gcm16" | "aes128gcm128" => Ok(Alg::AesGcm { key_len: 16 }),
            "aes256gcm16" | "aes256gcm128" => Ok(Alg::AesGcm { key_len: 32 }),
            _ => match s.split_once('-') {
                Some(("aes128", i)) => integ(i).map(|integ| Alg::AesCbc { key_len: 16, integ }),
                Some(("aes256", i)) => integ(i).map(|integ| Alg::AesCbc { key_len: 32, integ }),
                Some(("3des", i)) => integ(i).map(|integ| Alg::Des3Cbc { integ }),
                _ => Err(()),
            },
        };
        r.map_err(|_| {
            format!(
                "unknown ESP algorithm '{s}' (expected aes128gcm16, aes256gcm16, aes128-sha1, \
                 aes256-sha1, aes128-sha256, aes256-sha256, 3des-sha1 or 3des-sha256)"
            )
        })
    }

    /// Bytes of cipher key and of what follows it (salt or HMAC key).
    pub fn key_lens(&self) -> (usize, usize) {
        match *self {
            Alg::AesGcm { key_len } => (key_len, 4),
            Alg::AesCbc { key_len, integ } => (key_len, integ.key_len()),
            Alg::Des3Cbc { integ } => (24, integ.key_len()),
        }
    }

    pub fn iv_len(&self) -> usize {
        match self {
            Alg::AesGcm { .. } | Alg::Des3Cbc { .. } => 8,
            Alg::AesCbc { .. } => 16,
        }
    }

    /// The cipher's block size, to which the ciphertext is padded (4 for
    /// GCM, ESP's minimum alignment).
    pub fn block_len(&self) -> usize {
        match self {
            Alg::AesGcm { .. } => 4,
            Alg::AesCbc { .. } => 16,
            Alg::Des3Cbc { .. } => 8,
        }
    }

    pub fn icv_len(&self) -> usize {
        match self {
            Alg::AesGcm { .. } => 16,
            Alg::AesCbc { integ, .. } | Alg::Des3Cbc { integ } => integ.icv_len(),
        }
    }
}

impl Integ {
    fn key_len(self) -> usize {
        match self {
            Integ::Sha1 => 20,
            Integ::Sha256 => 32,
        }
    }
    fn icv_len(self) -> usize {
        match self {
            Integ::Sha1 => 12,
            Integ::Sha256 => 16,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Integ::Sha1 => "sha1",
            Integ::Sha256 => "sha256",
        }
    }
}

impl fmt::Display for Alg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Alg::AesGcm { key_len } => write!(f, "aes{}gcm16", key_len * 8),
            Alg::AesCbc { key_len, integ } => write!(f, "aes{}-{}", key_len * 8, integ.name()),
            Alg::Des3Cbc { integ } => write!(f, "3des-{}", integ.name()),
        }
    }
}

/// Why a packet was not encapsulated or decapsulated. Each is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Inbound SPI matches no SA.
    UnknownSpi,
    /// Sequence number already seen or left of the window.
    Replay,
    /// ICV (or GCM tag) mismatch.
    Auth,
    /// Pad length, padding bytes or next header wrong after decryption.
    BadPadding,
    /// Too short for its headers, or ciphertext not a whole number of blocks.
    Truncated,
    /// Not an IPv4 ESP packet, or the tunnelled packet is not IPv4.
    NotEsp,
    /// The 32-bit sequence number space is used up: the SA must be rekeyed.
    SeqOverflow,
    /// No buffer room for the headers, or the result would exceed 65535 bytes.
    NoRoom,
}

/// The drop reasons of the IPsec elements (their `drop_reasons`): those
/// of [`DropReason::ALL`], in its order, then the elements' own:
/// [`NO_SA`], [`OUT_OF_ORDER`], [`NO_ADDRESS`], [`NO_ROUTE`].
pub const REASONS: &[&str] = &[
    "unknown SPI",
    "replay",
    "auth failed",
    "bad padding",
    "truncated",
    "not ESP",
    "sequence number overflow",
    "no room",
    "no SA",
    "steps out of order",
    "no tunnel address",
    "no route",
];
/// No SA annotation (or no default SA).
pub const NO_SA: u8 = 8;
/// An IPsec step that comes before another already done on the packet.
pub const OUT_OF_ORDER: u8 = 9;
/// IPsecEncap: no tunnel source or destination, or no room for it.
pub const NO_ADDRESS: u8 = 10;
/// RadixIPsecLookup: no route for the destination.
pub const NO_ROUTE: u8 = 11;

impl DropReason {
    /// The drop of a packet for this reason (see [`REASONS`]).
    #[inline]
    pub fn verdict(self) -> paraclick_runtime::Verdict {
        paraclick_runtime::Verdict::DropFor(self as u8)
    }

    pub const ALL: [DropReason; 8] = [
        DropReason::UnknownSpi,
        DropReason::Replay,
        DropReason::Auth,
        DropReason::BadPadding,
        DropReason::Truncated,
        DropReason::NotEsp,
        DropReason::SeqOverflow,
        DropReason::NoRoom,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::UnknownSpi => "unknown_spi",
            DropReason::Replay => "replay",
            DropReason::Auth => "auth",
            DropReason::BadPadding => "bad_padding",
            DropReason::Truncated => "truncated",
            DropReason::NotEsp => "not_esp",
            DropReason::SeqOverflow => "seq_overflow",
            DropReason::NoRoom => "no_room",
        }
    }

    fn index(self) -> usize {
        DropReason::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// Per-SA counters, one slot per thread.
pub struct SaStats {
    pub packets: PerThreadCount,
    pub bytes: PerThreadCount,
    drops: [PerThreadCount; 8],
}

impl SaStats {
    fn new(n: usize) -> SaStats {
        SaStats {
            packets: PerThreadCount::new(n),
            bytes: PerThreadCount::new(n),
            drops: std::array::from_fn(|_| PerThreadCount::new(n)),
        }
    }
    pub fn drops(&self, r: DropReason) -> u64 {
        self.drops[r.index()].get()
    }
    pub fn count_drop(&self, thread: usize, r: DropReason) {
        self.drops[r.index()].inc(thread);
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().map(|c| c.get()).sum()
    }
    pub fn reset(&self) {
        self.packets.reset();
        self.bytes.reset();
        self.drops.iter().for_each(|c| c.reset());
    }
}

enum Crypto {
    Gcm(Box<ring::aead::LessSafeKey>, [u8; 4]),
    Cbc(Box<CbcCipher>, Hmacs, Box<aes::Aes128>),
}

#[allow(clippy::large_enum_variant)] // one per SA, boxed by its owner
enum CbcCipher {
    Aes128(aes::Aes128),
    Aes256(aes::Aes256),
    Des3(des::TdesEde3),
}

enum Hmacs {
    Sha1(Hmac<Sha1>),
    Sha256(Hmac<Sha256>),
}

/// What a security association is made from.
#[derive(Debug, Clone)]
pub struct SaConfig {
    pub spi: u32,
    pub alg: Alg,
    /// Cipher key followed by the GCM salt or the HMAC key.
    pub key: Vec<u8>,
    /// Tunnel endpoints: outer source and destination.
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// Anti-replay window in packets (0 disables it; at most 128).
    pub replay_window: u32,
}

pub struct SecurityAssociation {
    pub spi: u32,
    pub alg: Alg,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    crypto: Crypto,
    /// Outbound sequence numbers.
    seqs: seq::SeqAlloc,
    replay: ReplayWindow,
    pub stats: SaStats,
}

/// Parses a hex key (`0x` prefix optional, `:` separators allowed).
pub fn parse_hex_key(s: &str) -> Result<Vec<u8>, String> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let t: String = t.chars().filter(|c| *c != ':').collect();
    if t.is_empty() || !t.len().is_multiple_of(2) || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("bad hex key '{s}'"));
    }
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

/// Parses an SPI: hex with `0x`, or decimal.
pub fn parse_spi(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse::<u32>(),
    };
    match r {
        Ok(v) if v >= 256 => Ok(v),
        Ok(v) => Err(format!(
            "SPI {v} is reserved (RFC 4303: 1-255 are reserved, 0 is invalid)"
        )),
        Err(_) => Err(format!("bad SPI '{s}'")),
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if getrandom::getrandom(&mut b).is_err() {
        // No entropy source: fall back to time and address bits. The IV
        // key only has to be unknown to outsiders, and the IVs it makes
        // stay unique whatever it is.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let x = t ^ (&b as *const _ as usize as u128).rotate_left(64);
        for (i, v) in b.iter_mut().enumerate() {
            *v = (x >> ((i % 16) * 8)) as u8;
        }
    }
    b
}

impl SecurityAssociation {
    pub fn new(cfg: &SaConfig, nthreads: usize) -> Result<SecurityAssociation, String> {
        let (el, il) = cfg.alg.key_lens();
        if cfg.key.len() != el + il {
            return Err(format!(
                "{} needs a {}-byte key ({} bytes of cipher key and {} of {}), not {} bytes",
                cfg.alg,
                el + il,
                el,
                il,
                if matches!(cfg.alg, Alg::AesGcm { .. }) {
                    "salt"
                } else {
                    "integrity key"
                },
                cfg.key.len()
            ));
        }
        if cfg.replay_window > super::replay::MAX_WINDOW {
            return Err(format!(
                "replay window {} is larger than {}",
                cfg.replay_window,
                super::replay::MAX_WINDOW
            ));
        }
        let (ek, ik) = cfg.key.split_at(el);
        let bad = |_| "bad key length".to_string();
        let mac = |integ: Integ| -> Result<Hmacs, String> {
            Ok(match integ {
                Integ::Sha1 => Hmacs::Sha1(<Hmac<Sha1> as Mac>::new_from_slice(ik).map_err(bad)?),
                Integ::Sha256 => {
                    Hmacs::Sha256(<Hmac<Sha256> as Mac>::new_from_slice(ik).map_err(bad)?)
                }
            })
        };
        let iv_key = || Box::new(aes::Aes128::new(&random_bytes::<16>().into()));
        let crypto = match cfg.alg {
            Alg::AesGcm { key_len } => {
                let mut salt = [0u8; 4];
                salt.copy_from_slice(ik);
                Crypto::Gcm(Box::new(gcm_key(ek, key_len)?), salt)
            }
            Alg::AesCbc { key_len, integ } => {
                let c = if key_len == 16 {
                    CbcCipher::Aes128(aes::Aes128::new_from_slice(ek).map_err(bad)?)
                } else {
                    CbcCipher::Aes256(aes::Aes256::new_from_slice(ek).map_err(bad)?)
                };
                Crypto::Cbc(Box::new(c), mac(integ)?, iv_key())
            }
            Alg::Des3Cbc { integ } => Crypto::Cbc(
                Box::new(CbcCipher::Des3(
                    des::TdesEde3::new_from_slice(ek).map_err(bad)?,
                )),
                mac(integ)?,
                iv_key(),
            ),
        };
        Ok(SecurityAssociation {
            spi: cfg.spi,
            alg: cfg.alg,
            src: cfg.src,
            dst: cfg.dst,
            crypto,
            seqs: seq::SeqAlloc::new(nthreads),
            replay: ReplayWindow::new(cfg.replay_window),
            stats: SaStats::new(nthreads),
        })
    }

    /// The highest outbound sequence number used (0 if none). With one
    /// thread it is the number of packets sent; with several, whose
    /// numbers are reserved in blocks, it can exceed that by the gaps
    /// (numbers reserved but not sent).
    pub fn seq(&self) -> u64 {
        self.seqs.last()
    }

    /// Sets the next outbound sequence number (tests, and resuming an SA;
    /// not while packets are being sent).
    pub fn set_next_seq(&self, n: u64) {
        self.seqs.set_next(n)
    }

    /// A fresh outbound sequence number for `thread`, or `SeqOverflow`
    /// once 2^32 - 1 has been used (RFC 4303 §3.3.3: no wrap).
    #[inline]
    fn next_seq(&self, thread: usize) -> Result<u64, DropReason> {
        self.seqs.next(thread).ok_or(DropReason::SeqOverflow)
    }

    /// The highest inbound sequence number accepted.
    pub fn replay_top(&self) -> u32 {
        self.replay.top()
    }

    /// ESP overhead added to an inner packet of `len` bytes, without the
    /// outer IP header.
    pub fn esp_len(&self, len: usize) -> usize {
        let b = self.alg.block_len();
        let padded = (len + 2).div_ceil(b) * b;
        8 + self.alg.iv_len() + padded + self.alg.icv_len()
    }

    /// Tunnel-mode encapsulation: `p`'s data is an IPv4 packet; afterwards
    /// it is outer IPv4 header, ESP header, IV, ciphertext, ICV, with the
    /// network header annotation on the outer header. On error the packet
    /// is unchanged apart from possibly its buffer, and the drop is counted.
    pub fn encapsulate(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.encapsulate_inner(thread, p);
        match r {
            Ok(()) => {
                self.stats.packets.inc(thread);
                self.stats.bytes.add(thread, p.len() as u64);
            }
            Err(e) => self.stats.count_drop(thread, e),
        }
        r
    }

    fn encapsulate_inner(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let inner = p.data();
        if inner.len() < 20 || inner[0] >> 4 != 4 {
            return Err(DropReason::NotEsp);
        }
        let tos = inner[1];
        let len = inner.len();
        let iv_len = self.alg.iv_len();
        let icv_len = self.alg.icv_len();
        let b = self.alg.block_len();
        let padded = (len + 2).div_ceil(b) * b;
        let pad = padded - len - 2;
        let total = 20 + 8 + iv_len + padded + icv_len;
        if total > 65535 {
            return Err(DropReason::NoRoom);
        }
        let seq = self.next_seq(thread)?;
        let head = 20 + 8 + iv_len;
        p.push(head).map_err(|_| DropReason::NoRoom)?;
        if p.put(pad + 2 + icv_len).is_err() {
            p.pull(head);
            return Err(DropReason::NoRoom);
        }
        let d = p.data_mut();
        // Outer IPv4 header (RFC 4303 tunnel mode; TOS copied from inside).
        let id = (seq as u16).to_be_bytes();
        d[..20].copy_from_slice(&[
            0x45,
            tos,
            0,
            0,
            id[0],
            id[1],
            0,
            0,
            64,
            IPPROTO_ESP,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ]);
        d[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        d[12..16].copy_from_slice(&self.src.octets());
        d[16..20].copy_from_slice(&self.dst.octets());
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        // ESP header.
        d[20..24].copy_from_slice(&self.spi.to_be_bytes());
        d[24..28].copy_from_slice(&(seq as u32).to_be_bytes());
        // Trailer: default padding 1, 2, 3, ... (RFC 4303 §2.4).
        let tr = head + len;
        for i in 0..pad {
            d[tr + i] = (i + 1) as u8;
        }
        d[tr + pad] = pad as u8;
        d[tr + pad + 1] = NEXT_IPV4;
        let (hdr, rest) = d[20..].split_at_mut(8 + iv_len);
        let (body, icv) = rest.split_at_mut(padded);
        let (esp_hdr, iv) = hdr.split_at_mut(8);
        match &self.crypto {
            Crypto::Gcm(g, salt) => {
                iv.copy_from_slice(&seq.to_be_bytes());
                let t = gcm_seal(g, &gcm_nonce(salt, iv), esp_hdr, body)?;
                icv.copy_from_slice(&t);
            }
            Crypto::Cbc(c, mac, iv_key) => {
                let mut blk = aes::Block::from((seq as u128).to_be_bytes());
                iv_key.encrypt_block(&mut blk);
                iv.copy_from_slice(&blk[..iv_len]);
                c.encrypt(iv, body)?;
                let auth = &d[20..20 + 8 + iv_len + padded];
                let full = mac_of(mac, auth);
                d[20 + 8 + iv_len + padded..].copy_from_slice(&full[..icv_len]);
            }
        }
        p.set_network_header(0, 20);
        Ok(())
    }

    /// Tunnel-mode decapsulation: `p`'s data begins with the outer IPv4
    /// header of an ESP packet for this SA (the SPI is not compared here:
    /// the caller chose the SA by it). Afterwards the data is the inner
    /// IPv4 packet with its network header annotation set.
    pub fn decapsulate(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.decapsulate_inner(p);
        match r {
            Ok(()) => {
                self.stats.packets.inc(thread);
                self.stats.bytes.add(thread, p.len() as u64);
            }
            Err(e) => self.stats.count_drop(thread, e),
        }
        r
    }

    fn decapsulate_inner(&self, p: &mut Packet) -> Result<(), DropReason> {
        let (hlen, esp_end) = esp_bounds(p.data())?;
        let iv_len = self.alg.iv_len();
        let icv_len = self.alg.icv_len();
        let b = self.alg.block_len();
        let d = &mut p.data_mut()[..esp_end];
        if d.len() < hlen + 8 + iv_len + b + icv_len {
            return Err(DropReason::Truncated);
        }
        let body_len = d.len() - hlen - 8 - iv_len - icv_len;
        if !body_len.is_multiple_of(b) {
            return Err(DropReason::Truncated);
        }
        let seq = u32::from_be_bytes([d[hlen + 4], d[hlen + 5], d[hlen + 6], d[hlen + 7]]);
        if self.replay.check(seq) != ReplayVerdict::Ok {
            return Err(DropReason::Replay);
        }
        match &self.crypto {
            Crypto::Gcm(g, salt) => {
                let n = gcm_nonce(salt, &d[hlen + 8..hlen + 8 + iv_len]);
                let mut aad = [0u8; 8];
                aad.copy_from_slice(&d[hlen..hlen + 8]);
                // Ciphertext and tag are contiguous: ring opens them as one.
                gcm_open(g, &n, &aad, &mut d[hlen + 8 + iv_len..])?;
            }
            Crypto::Cbc(c, mac, _) => {
                // Integrity first, in constant time (hmac's verify).
                let auth = &d[hlen..hlen + 8 + iv_len + body_len];
                let icv = &d[hlen + 8 + iv_len + body_len..];
                if !mac_verify(mac, auth, icv) {
                    return Err(DropReason::Auth);
                }
                let (iv, body) = d[hlen + 8..hlen + 8 + iv_len + body_len].split_at_mut(iv_len);
                c.decrypt(iv, body)?;
            }
        }
        if self.replay.update(seq) != ReplayVerdict::Ok {
            return Err(DropReason::Replay);
        }
        let start = hlen + 8 + iv_len;
        let nh = d[start + body_len - 1];
        let pad = usize::from(d[start + body_len - 2]);
        if pad + 2 > body_len {
            return Err(DropReason::BadPadding);
        }
        let inner_len = body_len - 2 - pad;
        let pads = &d[start + inner_len..start + inner_len + pad];
        if pads.iter().enumerate().any(|(i, &v)| v != (i + 1) as u8) {
            return Err(DropReason::BadPadding);
        }
        if nh != NEXT_IPV4 {
            // 59 (no next header) is a dummy packet (RFC 4303 §2.6); other
            // protocols are not tunnelled by this gateway.
            return Err(DropReason::NotEsp);
        }
        let inner = &d[start..start + inner_len];
        if inner_len < 20 || inner[0] >> 4 != 4 {
            return Err(DropReason::NotEsp);
        }
        let ihl = usize::from(inner[0] & 15) * 4;
        let tot = usize::from(u16::from_be_bytes([inner[2], inner[3]]));
        if ihl < 20 || tot < ihl || tot > inner_len {
            return Err(DropReason::NotEsp);
        }
        let cut = p.len() - (start + tot);
        p.take(cut);
        p.pull(start);
        p.set_network_header(0, ihl);
        Ok(())
    }

    pub fn reset_stats(&self) {
        self.stats.reset();
    }
}

/// Checks that `d` is an IPv4 ESP packet; returns its header length and
/// the end of the IP datagram (its total length, which may be less than
/// `d.len()` when link-layer padding follows).
pub fn esp_bounds(d: &[u8]) -> Result<(usize, usize), DropReason> {
    if d.len() < 20 {
        return Err(DropReason::Truncated);
    }
    if d[0] >> 4 != 4 || d[9] != IPPROTO_ESP {
        return Err(DropReason::NotEsp);
    }
    let hlen = usize::from(d[0] & 15) * 4;
    let tot = usize::from(u16::from_be_bytes([d[2], d[3]]));
    if hlen < 20 || tot < hlen + 8 || tot > d.len() {
        return Err(DropReason::Truncated);
    }
    if u16::from_be_bytes([d[6], d[7]]) & 0x3fff != 0 {
        // A fragment: this gateway does not reassemble.
        return Err(DropReason::NotEsp);
    }
    Ok((hlen, tot))
}

/// The SPI of an IPv4 ESP packet (data at the IP header).
pub fn esp_spi(d: &[u8]) -> Result<u32, DropReason> {
    let (hlen, _) = esp_bounds(d)?;
    Ok(u32::from_be_bytes([
        d[hlen],
        d[hlen + 1],
        d[hlen + 2],
        d[hlen + 3],
    ]))
}

/// An AES-GCM key for ring (whose AES-GCM uses AES-NI with aggregated
/// carry-less multiplication: several times faster than a block-at-a-time
/// GHASH).
fn gcm_key(key: &[u8], key_len: usize) -> Result<ring::aead::LessSafeKey, String> {
    let alg = if key_len == 16 {
        &ring::aead::AES_128_GCM
    } else {
        &ring::aead::AES_256_GCM
    };
    ring::aead::UnboundKey::new(alg, key)
        .map(ring::aead::LessSafeKey::new)
        .map_err(|_| "bad AES-GCM key length".to_string())
}

/// Encrypts `buf` in place; returns the 16-byte tag.
fn gcm_seal(
    k: &ring::aead::LessSafeKey,
    nonce: &[u8; 12],
    aad: &[u8],
    buf: &mut [u8],
) -> Result<[u8; 16], DropReason> {
    let n = ring::aead::Nonce::assume_unique_for_key(*nonce);
    let t = k
        .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), buf)
        .map_err(|_| DropReason::NoRoom)?;
    let mut out = [0u8; 16];
    out.copy_from_slice(t.as_ref());
    Ok(out)
}

/// Authenticates and decrypts `ct_and_tag` (ciphertext, then the 16-byte
/// tag) in place. ring compares the tag in constant time and returns no
/// plaintext unless it matches; the caller drops the packet on error.
fn gcm_open(
    k: &ring::aead::LessSafeKey,
    nonce: &[u8; 12],
    aad: &[u8],
    ct_and_tag: &mut [u8],
) -> Result<(), DropReason> {
    let n = ring::aead::Nonce::assume_unique_for_key(*nonce);
    k.open_in_place(n, ring::aead::Aad::from(aad), ct_and_tag)
        .map(|_| ())
        .map_err(|_| DropReason::Auth)
}

fn gcm_nonce(salt: &[u8; 4], iv: &[u8]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(salt);
    n[4..].copy_from_slice(iv);
    n
}

fn mac_of(mac: &Hmacs, data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    match mac {
        Hmacs::Sha1(m) => {
            let mut m = m.clone();
            m.update(data);
            out[..20].copy_from_slice(&m.finalize().into_bytes());
        }
        Hmacs::Sha256(m) => {
            let mut m = m.clone();
            m.update(data);
            out.copy_from_slice(&m.finalize().into_bytes());
        }
    }
    out
}

/// Constant-time comparison of a truncated HMAC (hmac's
/// `verify_truncated_left` compares with `subtle`).
fn mac_verify(mac: &Hmacs, data: &[u8], icv: &[u8]) -> bool {
    match mac {
        Hmacs::Sha1(m) => {
            let mut m = m.clone();
            m.update(data);
            m.verify_truncated_left(icv).is_ok()
        }
        Hmacs::Sha256(m) => {
            let mut m = m.clone();
            m.update(data);
            m.verify_truncated_left(icv).is_ok()
        }
    }
}

impl CbcCipher {
    fn encrypt(&self, iv: &[u8], body: &mut [u8]) -> Result<(), DropReason> {
        let n = body.len();
        let r = match self {
            CbcCipher::Aes128(c) => cbc::Encryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.encrypt_padded_mut::<NoPadding>(body, n).is_ok()),
            CbcCipher::Aes256(c) => cbc::Encryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.encrypt_padded_mut::<NoPadding>(body, n).is_ok()),
            CbcCipher::Des3(c) => cbc::Encryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.encrypt_padded_mut::<NoPadding>(body, n).is_ok()),
        };
        match r {
            Ok(true) => Ok(()),
            _ => Err(DropReason::Truncated),
        }
    }

    fn decrypt(&self, iv: &[u8], body: &mut [u8]) -> Result<(), DropReason> {
        let r = match self {
            CbcCipher::Aes128(c) => cbc::Decryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.decrypt_padded_mut::<NoPadding>(body).is_ok()),
            CbcCipher::Aes256(c) => cbc::Decryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.decrypt_padded_mut::<NoPadding>(body).is_ok()),
            CbcCipher::Des3(c) => cbc::Decryptor::inner_iv_slice_init(c.clone(), iv)
                .map(|e| e.decrypt_padded_mut::<NoPadding>(body).is_ok()),
        };
        match r {
            Ok(true) => Ok(()),
            _ => Err(DropReason::Truncated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    fn hex(s: &str) -> Vec<u8> {
        parse_hex_key(&s.replace([' ', '\n'], "")).unwrap()
    }

    fn inner(len: usize, seed: u8) -> Vec<u8> {
        let mut d = vec![0u8; len];
        d[0] = 0x45;
        d[1] = 0x10;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[8] = 64;
        d[9] = 17;
        d[12..16].copy_from_slice(&[10, 0, 0, 1]);
        d[16..20].copy_from_slice(&[10, 0, 1, 2]);
        for (i, v) in d[20..].iter_mut().enumerate() {
            *v = (i as u8).wrapping_mul(31).wrapping_add(seed);
        }
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    const ALGS: [&str; 8] = [
        "aes128gcm16",
        "aes256gcm16",
        "aes128-sha1",
        "aes256-sha256",
        "3des-sha1",
        "aes256-sha1",
        "aes128-sha256",
        "3des-sha256",
    ];

    fn sa(alg: &str, spi: u32) -> SecurityAssociation {
        let alg = Alg::parse(alg).unwrap();
        let (a, b) = alg.key_lens();
        let key: Vec<u8> = (0..a + b).map(|i| (i as u8) ^ 0x5a).collect();
        SecurityAssociation::new(
            &SaConfig {
                spi,
                alg,
                key,
                src: Ipv4Addr::new(192, 0, 2, 1),
                dst: Ipv4Addr::new(198, 51, 100, 1),
                replay_window: 64,
            },
            2,
        )
        .unwrap()
    }

    #[test]
    fn names_and_lengths() {
        for a in ALGS {
            assert_eq!(Alg::parse(a).unwrap().to_string(), a);
        }
        assert_err(Alg::parse("aes192-md5"), "unknown ESP algorithm 'aes192-md5' (expected aes128gcm16, aes256gcm16, aes128-sha1, aes256-sha1, aes128-sha256, aes256-sha256, 3des-sha1 or 3des-sha256)");
        assert_err(Alg::parse(""), "unknown ESP algorithm '' (expected aes128gcm16, aes256gcm16, aes128-sha1, aes256-sha1, aes128-sha256, aes256-sha256, 3des-sha1 or 3des-sha256)");
        assert_eq!(Alg::parse("AES128GCM16").unwrap().key_lens(), (16, 4));
        assert_eq!(Alg::parse("3des-sha1").unwrap().key_lens(), (24, 20));
        assert_eq!(Alg::parse("aes256-sha256").unwrap().icv_len(), 16);
        assert_eq!(parse_spi("0x1001").unwrap(), 0x1001);
        assert_eq!(parse_spi("4097").unwrap(), 4097);
        assert_err(
            parse_spi("5"),
            "SPI 5 is reserved (RFC 4303: 1-255 are reserved, 0 is invalid)",
        );
        assert_err(parse_spi("0xzz"), "bad SPI '0xzz'");
        assert_eq!(parse_hex_key("0xAb:01").unwrap(), vec![0xab, 1]);
        assert_err(parse_hex_key("0xabc"), "bad hex key '0xabc'");
    }

    #[test]
    fn wrong_key_length_is_an_error() {
        let e = SecurityAssociation::new(
            &SaConfig {
                spi: 300,
                alg: Alg::parse("aes128gcm16").unwrap(),
                key: vec![0; 16],
                src: Ipv4Addr::LOCALHOST,
                dst: Ipv4Addr::LOCALHOST,
                replay_window: 64,
            },
            1,
        )
        .err()
        .unwrap();
        assert!(e.contains("20-byte key"), "{e}");
    }

    #[test]
    fn round_trip_every_algorithm_and_length() {
        for a in ALGS {
            let tx = sa(a, 0x1001);
            let rx = sa(a, 0x1001);
            for len in [20usize, 21, 28, 64, 100, 1400, 1480] {
                let d = inner(len, len as u8);
                let mut p = Packet::from_slice(&d).unwrap();
                tx.encapsulate(0, &mut p).unwrap();
                let o = p.data();
                assert_eq!(o.len(), 20 + tx.esp_len(len), "{a} {len}");
                assert_eq!(o[9], IPPROTO_ESP);
                assert!(checksum::verify(&o[..20]));
                assert_eq!(&o[12..16], &[192, 0, 2, 1]);
                assert_eq!(esp_spi(o).unwrap(), 0x1001);
                let ct = &o[28 + tx.alg.iv_len()..];
                assert!(
                    len < 36 || !ct.windows(16).any(|w| w == &d[20..36]),
                    "{a}: plaintext visible"
                );
                assert_eq!(
                    (o.len() - 28 - tx.alg.iv_len() - tx.alg.icv_len()) % tx.alg.block_len(),
                    0
                );
                rx.decapsulate(1, &mut p).unwrap();
                assert_eq!(p.data(), &d[..], "{a} {len}");
                assert_eq!(p.network_header_offset(), Some(0));
            }
            assert_eq!(tx.seq(), 7);
            assert_eq!(rx.replay_top(), 7);
            assert_eq!(rx.stats.packets.get(), 7);
            assert_eq!(rx.stats.total_drops(), 0);
        }
    }

    #[test]
    fn sequence_numbers_and_ivs_never_repeat() {
        for a in ["aes128gcm16", "aes128-sha1", "3des-sha1"] {
            let tx = sa(a, 0x2002);
            let mut ivs = std::collections::HashSet::new();
            for i in 1..=500u32 {
                let mut p = Packet::from_slice(&inner(60, 0)).unwrap();
                tx.encapsulate(0, &mut p).unwrap();
                let d = p.data();
                assert_eq!(u32::from_be_bytes([d[24], d[25], d[26], d[27]]), i);
                assert!(
                    ivs.insert(d[28..28 + tx.alg.iv_len()].to_vec()),
                    "{a} IV repeated"
                );
            }
        }
    }

    #[test]
    fn every_rejection_is_counted() {
        for a in ALGS {
            let tx = sa(a, 0x3003);
            let rx = sa(a, 0x3003);
            let enc = |len| {
                let mut p = Packet::from_slice(&inner(len, 7)).unwrap();
                tx.encapsulate(0, &mut p).unwrap();
                p.data().to_vec()
            };
            let good = enc(80);
            let mut p = Packet::from_slice(&good).unwrap();
            rx.decapsulate(0, &mut p).unwrap();
            // Replay.
            let mut p = Packet::from_slice(&good).unwrap();
            assert_eq!(rx.decapsulate(0, &mut p), Err(DropReason::Replay));
            assert_eq!(p.data(), &good[..], "dropped packet untouched");
            // A flipped bit anywhere after the outer header: ICV fails
            // (the SPI and sequence number are authenticated too).
            let fresh = enc(80);
            for pos in [20, 25, 30, fresh.len() / 2, fresh.len() - 1] {
                let mut bad = fresh.clone();
                bad[pos] ^= 0x40;
                let mut p = Packet::from_slice(&bad).unwrap();
                let r = rx.decapsulate(0, &mut p);
                assert!(
                    r == Err(DropReason::Auth) || (pos == 25 && r == Err(DropReason::Replay)),
                    "{a} pos {pos}: {r:?}"
                );
            }
            // Truncated: cut the ICV short, and a body not a whole block.
            let mut short = fresh.clone();
            short.truncate(20 + 8 + 4);
            let n = short.len() as u16;
            short[2..4].copy_from_slice(&n.to_be_bytes());
            let mut p = Packet::from_slice(&short).unwrap();
            assert_eq!(rx.decapsulate(0, &mut p), Err(DropReason::Truncated));
            let mut odd = fresh.clone();
            odd.pop();
            let n = odd.len() as u16;
            odd[2..4].copy_from_slice(&n.to_be_bytes());
            let mut p = Packet::from_slice(&odd).unwrap();
            let r = rx.decapsulate(0, &mut p);
            assert!(
                matches!(r, Err(DropReason::Truncated | DropReason::Auth)),
                "{r:?}"
            );
            // Not ESP at all.
            let mut p = Packet::from_slice(&inner(60, 1)).unwrap();
            assert_eq!(rx.decapsulate(0, &mut p), Err(DropReason::NotEsp));
            // The fresh one still decrypts: failures did not advance the window.
            let mut p = Packet::from_slice(&fresh).unwrap();
            rx.decapsulate(0, &mut p).unwrap();
            assert_eq!(rx.stats.drops(DropReason::Replay), 1);
            assert!(rx.stats.drops(DropReason::Auth) >= 4);
            assert!(rx.stats.drops(DropReason::Truncated) >= 1);
            assert_eq!(rx.stats.drops(DropReason::NotEsp), 1);
            assert_eq!(rx.stats.packets.get(), 2);
        }
    }

    #[test]
    fn bad_padding_detected_after_authentication() {
        // Build a packet whose trailer is wrong but whose ICV is right, by
        // encrypting through a sender whose plaintext we corrupt: encrypt a
        // packet, decrypt it by hand, damage the padding, re-encrypt with
        // the same sequence number.
        let a = "aes128-sha1";
        let tx = sa(a, 0x4004);
        let rx = sa(a, 0x4004);
        for (damage, want) in [
            (0usize, DropReason::BadPadding), // a padding byte
            (1, DropReason::BadPadding),      // the pad length
            (2, DropReason::NotEsp),          // the next header
        ] {
            // A 27-byte inner packet: 27 + 2 = 29, padded to 32 with 1, 2, 3.
            let d = inner(27, 3);
            let mut p = Packet::from_slice(&d).unwrap();
            tx.encapsulate(0, &mut p).unwrap();
            let seq = tx.seq();
            // Re-encrypt a damaged plaintext under the same IV and seq with
            // a cloned SA state: simplest is a raw CBC round through the
            // helpers.
            let Crypto::Cbc(c, mac, _) = &tx.crypto else {
                unreachable!()
            };
            let mut o = p.data().to_vec();
            let (iv, body) = o[28..28 + 16 + 32].split_at_mut(16);
            let iv = iv.to_vec();
            c.decrypt(&iv, body).unwrap();
            match damage {
                0 => body[27] = 9,
                1 => body[30] = 30,
                _ => body[31] = 41,
            }
            c.encrypt(&iv, body).unwrap();
            let full = mac_of(mac, &o[20..28 + 16 + 32]);
            let n = o.len();
            o[n - 12..].copy_from_slice(&full[..12]);
            let mut p = Packet::from_slice(&o).unwrap();
            assert_eq!(
                rx.decapsulate(0, &mut p),
                Err(want),
                "damage {damage} seq {seq}"
            );
        }
        assert_eq!(rx.stats.drops(DropReason::BadPadding), 2);
        assert_eq!(rx.stats.drops(DropReason::NotEsp), 1);
    }

    #[test]
    fn sequence_overflow_stops_the_sa() {
        let tx = sa("aes128gcm16", 0x5005);
        tx.set_next_seq(u64::from(u32::MAX));
        let mut p = Packet::from_slice(&inner(40, 0)).unwrap();
        tx.encapsulate(0, &mut p).unwrap();
        let mut p = Packet::from_slice(&inner(40, 0)).unwrap();
        assert_eq!(tx.encapsulate(0, &mut p), Err(DropReason::SeqOverflow));
        assert_eq!(p.data(), &inner(40, 0)[..]);
        assert_eq!(tx.stats.drops(DropReason::SeqOverflow), 1);
    }

    /// RFC 4106 has no test vectors of its own; its IPsec vectors are in
    /// the GCM spec (McGrew & Viega, "The Galois/Counter Mode of
    /// Operation", test case 4 with a 4-byte salt as the nonce's start),
    /// reproduced by draft-mcgrew-gcm-test-01 case 2 for ESP. Here: GCM
    /// spec test case 4 (AES-128) and 16 (AES-256), through the same
    /// AEAD calls the SA makes, with salt = IV[0..4] and explicit IV =
    /// IV[4..12].
    #[test]
    fn gcm_spec_vectors() {
        let pt = hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
             1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
        );
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let iv = hex("cafebabefacedbaddecaf888");
        let cases = [
            (
                "feffe9928665731c6d6a8f9467308308",
                "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e
                 21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
                "5bc94fbc3221a5db94fae95ae7121a47",
            ),
            (
                "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
                 8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
                "76fc6ece0f4e1768cddf8853bb2d551b",
            ),
        ];
        for (k, ct, tag) in cases {
            let k = hex(k);
            let mut buf = pt.clone();
            let n: [u8; 12] = gcm_nonce(&iv[..4].try_into().unwrap(), &iv[4..]);
            let t = gcm_seal(&gcm_key(&k, k.len()).unwrap(), &n, &aad, &mut buf).unwrap();
            assert_eq!(buf, hex(ct));
            assert_eq!(t.to_vec(), hex(tag));
        }
    }

    /// An ESP packet assembled by hand (with RustCrypto's aes-gcm, an
    /// implementation independent of ring, which the SA uses) in RFC 4106's layout (AAD = SPI and
    /// sequence number, nonce = salt then the 8-byte explicit IV, 16-byte
    /// tag after the ciphertext) with the GCM spec's test-case-4 key, salt
    /// and IV decapsulates, and the SA's own output for that sequence
    /// number is the same bytes.
    #[test]
    fn esp_gcm_layout_by_hand() {
        use aes_gcm::aead::AeadInPlace;
        use aes_gcm::{Aes128Gcm, KeyInit};
        let key = hex("feffe9928665731c6d6a8f9467308308 cafebabe");
        let cfg = SaConfig {
            spi: 0xa5f8,
            alg: Alg::AesGcm { key_len: 16 },
            key,
            src: Ipv4Addr::new(192, 0, 2, 1),
            dst: Ipv4Addr::new(198, 51, 100, 1),
            replay_window: 64,
        };
        let rx = SecurityAssociation::new(&cfg, 1).unwrap();
        let tx = SecurityAssociation::new(&cfg, 1).unwrap();
        let seq: u64 = 0xfacedbaddecaf888;
        let plain_ip = inner(0x48, 9);
        // Trailer: 72 + 2 = 74, padded to 76: padding 01 02, pad length 2,
        // next header 4.
        let mut plain = plain_ip.clone();
        plain.extend_from_slice(&[1, 2, 2, 4]);
        let g = Aes128Gcm::new_from_slice(&hex("feffe9928665731c6d6a8f9467308308")).unwrap();
        let aad = [0, 0, 0xa5, 0xf8, 0xde, 0xca, 0xf8, 0x88];
        let n = hex("cafebabefacedbaddecaf888");
        let n: [u8; 12] = n.try_into().unwrap();
        let mut ct = plain.clone();
        let tag = g
            .encrypt_in_place_detached(&n.into(), &aad, &mut ct)
            .unwrap();
        let mut esp = vec![0u8; 20];
        esp.extend_from_slice(&aad);
        esp.extend_from_slice(&seq.to_be_bytes());
        esp.extend_from_slice(&ct);
        esp.extend_from_slice(&tag);
        esp[0] = 0x45;
        let n = esp.len() as u16;
        esp[2..4].copy_from_slice(&n.to_be_bytes());
        esp[9] = 50;
        let mut p = Packet::from_slice(&esp).unwrap();
        rx.decapsulate(0, &mut p).unwrap();
        assert_eq!(p.data(), &plain_ip[..]);
        assert_eq!(rx.replay_top(), 0xdecaf888);
        tx.set_next_seq(seq);
        let mut p = Packet::from_slice(&plain_ip).unwrap();
        assert_eq!(tx.encapsulate(0, &mut p), Err(DropReason::SeqOverflow));
        tx.set_next_seq(0xdecaf888);
        let mut p = Packet::from_slice(&plain_ip).unwrap();
        tx.encapsulate(0, &mut p).unwrap();
        // Same ESP payload once the explicit IV is the same 64-bit counter.
        assert_eq!(&p.data()[20..24], &esp[20..24]);
        assert_eq!(&p.data()[28..36], &[0, 0, 0, 0, 0xde, 0xca, 0xf8, 0x88]);
        let mut want = esp.clone();
        let n2: [u8; 12] = hex("cafebabe00000000decaf888").try_into().unwrap();
        let mut ct2 = plain.clone();
        let tag2 = g
            .encrypt_in_place_detached(&n2.into(), &aad, &mut ct2)
            .unwrap();
        want.truncate(36);
        want[28..36].copy_from_slice(&[0, 0, 0, 0, 0xde, 0xca, 0xf8, 0x88]);
        want.extend_from_slice(&ct2);
        want.extend_from_slice(&tag2);
        assert_eq!(&p.data()[20..], &want[20..]);
    }

    /// RFC 2202 HMAC-SHA1 test cases 1, 2, 3 and 6 (the MAC the CBC
    /// suites use), and the 96-bit truncation.
    #[test]
    fn rfc2202_hmac_sha1() {
        let cases: [(Vec<u8>, Vec<u8>, &str); 4] = [
            (
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b617318655057264e28bc0b6fb378c8ef146be00",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                vec![0xaa; 20],
                vec![0xdd; 50],
                "125d7342b9ac11cd91a39af48aa17b4f63f175d3",
            ),
            (
                vec![0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "aa4ae5e15272d00e95705637ce8a3b55ed402112",
            ),
        ];
        for (k, data, want) in cases {
            let m = Hmacs::Sha1(<Hmac<Sha1> as Mac>::new_from_slice(&k).unwrap());
            let full = mac_of(&m, &data);
            assert_eq!(full[..20].to_vec(), hex(want));
            assert!(mac_verify(&m, &data, &hex(want)[..12]));
            let mut bad = hex(want);
            bad[11] ^= 1;
            assert!(!mac_verify(&m, &data, &bad[..12]));
        }
        // RFC 4231 test case 2 for HMAC-SHA256.
        let m = Hmacs::Sha256(<Hmac<Sha256> as Mac>::new_from_slice(b"Jefe").unwrap());
        assert_eq!(
            mac_of(&m, b"what do ya want for nothing?").to_vec(),
            hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
    }

    /// RFC 3602 case 2: AES-128-CBC, two blocks (the cipher the CBC
    /// suites use, through the same calls).
    #[test]
    fn rfc3602_aes_cbc() {
        let c = CbcCipher::Aes128(
            aes::Aes128::new_from_slice(&hex("c286696d887c9aa0611bbb3e2025a45a")).unwrap(),
        );
        let iv = hex("562e17996d093d28ddb3ba695a2e6f58");
        let pt = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        let mut b = pt.clone();
        c.encrypt(&iv, &mut b).unwrap();
        assert_eq!(
            b,
            hex("d296cd94c2cccf8a3a863028b5e1dc0a7586602d253cfff91b8266bea6d61ab1")
        );
        c.decrypt(&iv, &mut b).unwrap();
        assert_eq!(b, pt);
    }

    #[test]
    fn threads_share_one_sa() {
        let tx = std::sync::Arc::new(sa("aes128gcm16", 0x6006));
        let rx = sa("aes128gcm16", 0x6006);
        let hs: Vec<_> = (0..2)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    (0..2000)
                        .map(|_| {
                            let mut p = Packet::from_slice(&inner(64, t as u8)).unwrap();
                            tx.encapsulate(t, &mut p).unwrap();
                            p.data().to_vec()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<Vec<u8>> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let mut seqs: Vec<u32> = all
            .iter()
            .map(|d| u32::from_be_bytes([d[24], d[25], d[26], d[27]]))
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), 4000, "each number once");
        // Out of order within the window still decrypts.
        all.sort_by_key(|d| u32::from_be_bytes([d[24], d[25], d[26], d[27]]));
        for ch in all.chunks_mut(32) {
            ch.reverse();
            for d in ch.iter() {
                let mut p = Packet::from_slice(d).unwrap();
                rx.decapsulate(0, &mut p).unwrap();
            }
        }
        assert_eq!(tx.stats.packets.get(), 4000);
        assert_eq!(rx.stats.packets.get(), 4000);
    }

    #[test]
    fn two_threads_never_repeat_a_number_or_pass_the_limit() {
        // Two threads encrypt through one SA that has 1000 numbers left:
        // every number sent is distinct, none is above 2^32 - 1, then
        // both are refused.
        for a in ["aes128gcm16", "aes128-sha1"] {
            let tx = std::sync::Arc::new(sa(a, 0x7007));
            let first = u64::from(u32::MAX) - 999;
            tx.set_next_seq(first);
            let hs: Vec<_> = (0..2)
                .map(|t| {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        let mut got = vec![];
                        for _ in 0..2000 {
                            let mut p = Packet::from_slice(&inner(64, t as u8)).unwrap();
                            match tx.encapsulate(t, &mut p) {
                                Ok(()) => got.push(p.data().to_vec()),
                                Err(e) => assert_eq!(e, DropReason::SeqOverflow),
                            }
                        }
                        got
                    })
                })
                .collect();
            let all: Vec<Vec<u8>> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
            let iv = tx.alg.iv_len();
            let mut seqs: Vec<u64> = all
                .iter()
                .map(|d| u64::from(u32::from_be_bytes([d[24], d[25], d[26], d[27]])))
                .collect();
            let mut ivs: Vec<&[u8]> = all.iter().map(|d| &d[28..28 + iv]).collect();
            let n = seqs.len();
            assert!(n > 900 && n <= 1000, "{a}: {n} sent");
            seqs.sort_unstable();
            seqs.dedup();
            ivs.sort_unstable();
            ivs.dedup();
            assert_eq!(
                (seqs.len(), ivs.len()),
                (n, n),
                "{a}: a number or IV repeated"
            );
            assert!(seqs[0] >= first && seqs[n - 1] <= u64::from(u32::MAX));
            assert_eq!(tx.stats.drops(DropReason::SeqOverflow), 4000 - n as u64);
            assert!(tx.seq() <= u64::from(u32::MAX) && tx.seq() >= seqs[n - 1]);
        }
    }

    #[test]
    fn two_threads_delivering_the_same_packets_accept_each_once() {
        use std::sync::{Arc, Barrier};
        let tx = sa("aes128gcm16", 0x8008);
        let esp: Vec<Vec<u8>> = (0..2000)
            .map(|i| {
                let mut p = Packet::from_slice(&inner(64, i as u8)).unwrap();
                tx.encapsulate(0, &mut p).unwrap();
                p.data().to_vec()
            })
            .collect();
        let esp = Arc::new(esp);
        let rx = Arc::new(sa("aes128gcm16", 0x8008));
        let bar = Arc::new(Barrier::new(2));
        let hs: Vec<_> = (0..2)
            .map(|t| {
                let (esp, rx, bar) = (esp.clone(), rx.clone(), bar.clone());
                std::thread::spawn(move || {
                    let mut ok = 0u64;
                    // Runs of 32 (within the window of 64); thread 1 also
                    // re-sends the previous run's second half.
                    for (r, ch) in esp.chunks(32).enumerate() {
                        let mut v: Vec<&Vec<u8>> = ch.iter().collect();
                        if t == 1 {
                            v.reverse();
                            if r > 0 {
                                v.extend(&esp[r * 32 - 16..r * 32]);
                            }
                        }
                        for d in v {
                            let mut p = Packet::from_slice(d).unwrap();
                            match rx.decapsulate(t, &mut p) {
                                Ok(()) => ok += 1,
                                Err(e) => assert_eq!(e, DropReason::Replay),
                            }
                        }
                        bar.wait();
                    }
                    ok
                })
            })
            .collect();
        let ok: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(ok, 2000);
        assert_eq!(rx.stats.packets.get(), 2000);
        assert_eq!(rx.stats.drops(DropReason::Replay), 2000 + 62 * 16);
        assert_eq!(rx.replay_top(), 2000);
    }
}
