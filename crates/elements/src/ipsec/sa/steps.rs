//! The ESP transform cut into Click's steps, for the split elements
//! (IPsecESPEncap, IPsecAES / IPsecDES, IPsecAuthHMACSHA1 /
//! IPsecAuthHMACSHA256, IPsecEncap, IPsecESPUnencap). Each step works on
//! the packet as the previous one left it; together they produce the same
//! ESP packets as [`SecurityAssociation::encapsulate`] and accept what it
//! accepts. Data positions:
//!
//! - outbound: `esp_encap` takes the inner IPv4 packet and leaves ESP
//!   header, IV, plaintext and trailer; `esp_encrypt` encrypts after the
//!   IV (AES-GCM also appends its tag); `esp_auth_compute` appends the
//!   HMAC ICV (CBC suites); the outer IP header is IPsecEncap's.
//! - inbound (data at the ESP header, the outer header stripped):
//!   `esp_auth_verify` checks the window and the HMAC, in constant time,
//!   before anything is decrypted, and removes the ICV (CBC suites);
//!   `esp_decrypt` decrypts (AES-GCM: checks the window, authenticates,
//!   decrypts and removes the tag); `esp_unencap` checks the trailer and
//!   leaves the inner packet.
//!
//! Every failure is counted in the SA's drop counters and returned.

use super::{
    gcm_nonce, gcm_open, gcm_seal, mac_of, mac_verify, Alg, Crypto, DropReason, Integ,
    SecurityAssociation, NEXT_IPV4,
};
use crate::ipsec::replay::ReplayVerdict;
use aes::cipher::BlockEncrypt;
use paraclick_packet::Packet;

/// Which cipher element handles an SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CipherKind {
    /// AES-GCM or AES-CBC: IPsecAES.
    Aes,
    /// 3DES-CBC: IPsecDES.
    Des3,
}

impl SecurityAssociation {
    /// The cipher family (which of IPsecAES and IPsecDES acts on this SA).
    pub fn cipher_kind(&self) -> CipherKind {
        match self.alg {
            Alg::AesGcm { .. } | Alg::AesCbc { .. } => CipherKind::Aes,
            Alg::Des3Cbc { .. } => CipherKind::Des3,
        }
    }

    /// The HMAC of a CBC suite; `None` for AES-GCM, whose integrity is part
    /// of the cipher.
    pub fn integ(&self) -> Option<Integ> {
        match self.alg {
            Alg::AesGcm { .. } => None,
            Alg::AesCbc { integ, .. } | Alg::Des3Cbc { integ } => Some(integ),
        }
    }

    fn counted<T>(&self, thread: usize, r: Result<T, DropReason>) -> Result<T, DropReason> {
        if let Err(e) = &r {
            self.stats.count_drop(thread, *e);
        }
        r
    }

    /// Counts a packet sent through the tunnel (`len`: its ESP bytes).
    pub fn count_sent(&self, thread: usize, len: usize) {
        self.stats.packets.inc(thread);
        self.stats.bytes.add(thread, len as u64);
    }

    /// Outbound step 1: inner IPv4 packet -> ESP header (SPI, next
    /// sequence number), IV, the packet, padding 1, 2, 3, ..., pad length
    /// and next header 4.
    pub fn esp_encap(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.esp_encap_inner(thread, p);
        self.counted(thread, r)
    }

    fn esp_encap_inner(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let inner = p.data();
        if inner.len() < 20 || inner[0] >> 4 != 4 {
            return Err(DropReason::NotEsp);
        }
        let len = inner.len();
        let iv_len = self.alg.iv_len();
        let b = self.alg.block_len();
        let padded = (len + 2).div_ceil(b) * b;
        let pad = padded - len - 2;
        if 20 + 8 + iv_len + padded + self.alg.icv_len() > 65535 {
            return Err(DropReason::NoRoom);
        }
        let seq = self.next_seq(thread)?;
        let head = 8 + iv_len;
        p.push(head).map_err(|_| DropReason::NoRoom)?;
        if p.put(pad + 2).is_err() {
            p.pull(head);
            return Err(DropReason::NoRoom);
        }
        let d = p.data_mut();
        d[..4].copy_from_slice(&self.spi.to_be_bytes());
        d[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
        match &self.crypto {
            Crypto::Gcm(..) => d[8..16].copy_from_slice(&seq.to_be_bytes()),
            Crypto::Cbc(_, _, iv_key) => {
                let mut blk = aes::Block::from((seq as u128).to_be_bytes());
                iv_key.encrypt_block(&mut blk);
                d[8..head].copy_from_slice(&blk[..iv_len]);
            }
        }
        let tr = head + len;
        for i in 0..pad {
            d[tr + i] = (i + 1) as u8;
        }
        d[tr + pad] = pad as u8;
        d[tr + pad + 1] = NEXT_IPV4;
        Ok(())
    }

    /// Outbound step 2: encrypts what follows the IV (the output of
    /// `esp_encap`); AES-GCM appends its 16-byte tag.
    pub fn esp_encrypt(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.esp_encrypt_inner(p);
        self.counted(thread, r)
    }

    fn esp_encrypt_inner(&self, p: &mut Packet) -> Result<(), DropReason> {
        let iv_len = self.alg.iv_len();
        let b = self.alg.block_len();
        let start = 8 + iv_len;
        let n = p.len();
        if n < start + b || !(n - start).is_multiple_of(b) {
            return Err(DropReason::Truncated);
        }
        match &self.crypto {
            Crypto::Gcm(g, salt) => {
                p.put(16).map_err(|_| DropReason::NoRoom)?;
                let d = p.data_mut();
                let (hdr, rest) = d.split_at_mut(start);
                let (body, tag) = rest.split_at_mut(n - start);
                let t = gcm_seal(g, &gcm_nonce(salt, &hdr[8..]), &hdr[..8], body)?;
                tag.copy_from_slice(&t);
            }
            Crypto::Cbc(c, _, _) => {
                let (hdr, body) = p.data_mut().split_at_mut(start);
                c.encrypt(&hdr[8..], body)?;
            }
        }
        Ok(())
    }

    /// Outbound step 3 (CBC suites): appends the truncated HMAC of the
    /// ESP header, IV and ciphertext. Does nothing for AES-GCM.
    pub fn esp_auth_compute(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let Crypto::Cbc(_, mac, _) = &self.crypto else {
            return Ok(());
        };
        let icv_len = self.alg.icv_len();
        let n = p.len();
        if n < 8 + self.alg.iv_len() + self.alg.block_len() {
            return self.counted(thread, Err(DropReason::Truncated));
        }
        if p.put(icv_len).is_err() {
            return self.counted(thread, Err(DropReason::NoRoom));
        }
        let d = p.data_mut();
        let full = mac_of(mac, &d[..n]);
        d[n..].copy_from_slice(&full[..icv_len]);
        Ok(())
    }

    /// The lengths every inbound step checks: ESP header, IV, a whole
    /// number of blocks (at least one) and the ICV. Returns the ciphertext
    /// length.
    fn inbound_body_len(&self, len: usize, icv_len: usize) -> Result<usize, DropReason> {
        let iv_len = self.alg.iv_len();
        let b = self.alg.block_len();
        if len < 8 + iv_len + b + icv_len {
            return Err(DropReason::Truncated);
        }
        let body = len - 8 - iv_len - icv_len;
        if !body.is_multiple_of(b) {
            return Err(DropReason::Truncated);
        }
        Ok(body)
    }

    fn replay_check(&self, d: &[u8]) -> Result<u32, DropReason> {
        let seq = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
        if self.replay.check(seq) != ReplayVerdict::Ok {
            return Err(DropReason::Replay);
        }
        Ok(seq)
    }

    fn replay_update(&self, seq: u32) -> Result<(), DropReason> {
        if self.replay.update(seq) != ReplayVerdict::Ok {
            return Err(DropReason::Replay);
        }
        Ok(())
    }

    /// Inbound step 1 (CBC suites; data at the ESP header, the IP
    /// datagram's end at the data's end): checks lengths and the
    /// anti-replay window, compares the ICV in constant time, records the
    /// sequence number, and removes the ICV. Does nothing for AES-GCM.
    pub fn esp_auth_verify(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.esp_auth_verify_inner(p);
        self.counted(thread, r)
    }

    fn esp_auth_verify_inner(&self, p: &mut Packet) -> Result<(), DropReason> {
        let Crypto::Cbc(_, mac, _) = &self.crypto else {
            return Ok(());
        };
        let icv_len = self.alg.icv_len();
        self.inbound_body_len(p.len(), icv_len)?;
        let d = p.data();
        let seq = self.replay_check(d)?;
        let (auth, icv) = d.split_at(d.len() - icv_len);
        if !mac_verify(mac, auth, icv) {
            return Err(DropReason::Auth);
        }
        self.replay_update(seq)?;
        p.take(icv_len);
        Ok(())
    }

    /// Inbound step 2: decrypts what follows the IV. AES-GCM checks the
    /// lengths and the window, authenticates (tag compared in constant
    /// time; nothing is decrypted unless it matches), records the
    /// sequence number and removes the tag; CBC suites expect
    /// `esp_auth_verify` to have run.
    pub fn esp_decrypt(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.esp_decrypt_inner(p);
        self.counted(thread, r)
    }

    fn esp_decrypt_inner(&self, p: &mut Packet) -> Result<(), DropReason> {
        let iv_len = self.alg.iv_len();
        let start = 8 + iv_len;
        match &self.crypto {
            Crypto::Gcm(g, salt) => {
                self.inbound_body_len(p.len(), 16)?;
                let seq = self.replay_check(p.data())?;
                let d = p.data_mut();
                let (hdr, rest) = d.split_at_mut(start);
                gcm_open(g, &gcm_nonce(salt, &hdr[8..]), &hdr[..8], rest)?;
                self.replay_update(seq)?;
                p.take(16);
            }
            Crypto::Cbc(c, _, _) => {
                self.inbound_body_len(p.len(), 0)?;
                let (hdr, body) = p.data_mut().split_at_mut(start);
                c.decrypt(&hdr[8..], body)?;
            }
        }
        Ok(())
    }

    /// Inbound step 3: data is ESP header, IV, decrypted payload and
    /// trailer. Checks the padding (1, 2, 3, ...), the next header (4) and
    /// the inner IPv4 header; leaves the inner packet, trimmed to its
    /// total length, with its network header annotation set, and counts
    /// it.
    pub fn esp_unencap(&self, thread: usize, p: &mut Packet) -> Result<(), DropReason> {
        let r = self.esp_unencap_inner(p);
        if r.is_ok() {
            self.stats.packets.inc(thread);
            self.stats.bytes.add(thread, p.len() as u64);
        }
        self.counted(thread, r)
    }

    fn esp_unencap_inner(&self, p: &mut Packet) -> Result<(), DropReason> {
        let start = 8 + self.alg.iv_len();
        let d = p.data();
        if d.len() < start + 2 {
            return Err(DropReason::Truncated);
        }
        let body_len = d.len() - start;
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
}

#[cfg(test)]
mod tests {
    use super::super::{SaConfig, SecurityAssociation};
    use super::*;
    use paraclick_packet::wire::checksum;
    use std::net::Ipv4Addr;

    fn inner(len: usize, seed: u8) -> Vec<u8> {
        let mut d = vec![0u8; len];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[8] = 64;
        d[9] = 17;
        for (i, v) in d[20..].iter_mut().enumerate() {
            *v = (i as u8).wrapping_mul(13).wrapping_add(seed);
        }
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn sa(alg: &str) -> SecurityAssociation {
        let alg = Alg::parse(alg).unwrap();
        let (a, b) = alg.key_lens();
        SecurityAssociation::new(
            &SaConfig {
                spi: 0x1234,
                alg,
                key: (0..a + b).map(|i| (i as u8).wrapping_mul(3)).collect(),
                src: Ipv4Addr::new(192, 0, 2, 1),
                dst: Ipv4Addr::new(198, 51, 100, 1),
                replay_window: 64,
            },
            1,
        )
        .unwrap()
    }

    fn outer(esp: &[u8]) -> Vec<u8> {
        let mut d = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 50, 0, 0, 192, 0, 2, 1, 198, 51, 100, 1,
        ];
        let n = (20 + esp.len()) as u16;
        d[2..4].copy_from_slice(&n.to_be_bytes());
        d.extend_from_slice(esp);
        d
    }

    const ALGS: [&str; 5] = [
        "aes128gcm16",
        "aes256gcm16",
        "aes128-sha1",
        "aes256-sha256",
        "3des-sha1",
    ];

    /// The steps compose into packets the fused decapsulation accepts,
    /// and the fused encapsulation's packets pass the inbound steps.
    #[test]
    fn steps_and_fused_transform_interoperate() {
        for a in ALGS {
            let tx = sa(a);
            let rx = sa(a);
            for len in [20usize, 21, 64, 333, 1400] {
                let d = inner(len, len as u8);
                let mut p = Packet::from_slice(&d).unwrap();
                tx.esp_encap(0, &mut p).unwrap();
                tx.esp_encrypt(0, &mut p).unwrap();
                tx.esp_auth_compute(0, &mut p).unwrap();
                assert_eq!(p.len(), tx.esp_len(len), "{a} {len}");
                let mut q = Packet::from_slice(&outer(p.data())).unwrap();
                rx.decapsulate(0, &mut q).unwrap();
                assert_eq!(q.data(), &d[..], "{a} {len}");

                let mut p = Packet::from_slice(&d).unwrap();
                tx.encapsulate(0, &mut p).unwrap();
                p.pull(20);
                let rx2 = sa(a);
                rx2.esp_auth_verify(0, &mut p).unwrap();
                rx2.esp_decrypt(0, &mut p).unwrap();
                rx2.esp_unencap(0, &mut p).unwrap();
                assert_eq!(p.data(), &d[..], "{a} {len}");
                assert_eq!(rx2.stats.packets.get(), 1);
            }
        }
    }

    /// For AES-GCM the IV is the sequence counter, so the split steps and
    /// the fused element produce the same ESP bytes for the same number.
    #[test]
    fn gcm_steps_match_fused_bytes() {
        let a = sa("aes128gcm16");
        let b = sa("aes128gcm16");
        let d = inner(100, 5);
        let mut p = Packet::from_slice(&d).unwrap();
        a.encapsulate(0, &mut p).unwrap();
        let mut q = Packet::from_slice(&d).unwrap();
        b.esp_encap(0, &mut q).unwrap();
        b.esp_encrypt(0, &mut q).unwrap();
        b.esp_auth_compute(0, &mut q).unwrap();
        assert_eq!(&p.data()[20..], q.data());
    }

    #[test]
    fn inbound_rejections_are_counted() {
        for a in ALGS {
            let tx = sa(a);
            let rx = sa(a);
            let enc = || {
                let mut p = Packet::from_slice(&inner(80, 1)).unwrap();
                tx.esp_encap(0, &mut p).unwrap();
                tx.esp_encrypt(0, &mut p).unwrap();
                tx.esp_auth_compute(0, &mut p).unwrap();
                p.data().to_vec()
            };
            let run = |d: &[u8]| {
                let mut p = Packet::from_slice(d).unwrap();
                rx.esp_auth_verify(0, &mut p)?;
                rx.esp_decrypt(0, &mut p)?;
                rx.esp_unencap(0, &mut p)
            };
            let good = enc();
            run(&good).unwrap();
            assert_eq!(run(&good), Err(DropReason::Replay), "{a}");
            let mut bad = enc();
            let n = bad.len();
            bad[n - 3] ^= 4;
            assert_eq!(run(&bad), Err(DropReason::Auth), "{a}");
            assert_eq!(run(&good[..20]), Err(DropReason::Truncated), "{a}");
            bad[n - 3] ^= 4;
            run(&bad).unwrap(); // the failed one did not advance the window
            assert_eq!(rx.stats.drops(DropReason::Replay), 1);
            assert_eq!(rx.stats.drops(DropReason::Auth), 1);
            assert_eq!(rx.stats.drops(DropReason::Truncated), 1);
            assert_eq!(rx.stats.packets.get(), 2);
        }
    }
}
