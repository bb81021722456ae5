//! # IPsecESPTunnelUnencap
//!
//! IPsecESPTunnelUnencap(SPI, ALG, KEY [, SRC, DST, keywords REPLAY])
//!
//! Authenticates and decrypts ESP tunnel packets (RFC 4303 tunnel mode)
//! of one inbound security association, leaving the inner IPv4 packet.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! A paraclick element in the style of Click's IPsecESPUnencap, which
//! needs IPsecAES or IPsecDES and IPsecAuthHMACSHA1 in front of it and
//! knows only 3DES/AES-CBC with HMAC-SHA1: this one does the whole inbound
//! transform, with modern algorithms, and interoperates with Linux (`ip
//! xfrm`) and strongSwan.
//!
//! Expects an IPv4 ESP packet at the data start (the outer header; the
//! outer addresses are not compared, the SPI selects the SA). In order, as
//! RFC 4303 §3.4 says: a packet whose SPI is not this SA's is dropped
//! (`unknown_spi`); one too short for its headers or whose ciphertext is
//! not a whole number of blocks (`truncated`); one whose sequence number
//! the anti-replay window has already seen or left behind
//! (`replay_drops`); one whose ICV does not match, compared in constant
//! time before anything is decrypted (`auth_failures`). Then the packet is
//! decrypted, its sequence number recorded in the window, and the trailer
//! checked: padding bytes must be 1, 2, 3, ... and fit (`bad_padding`),
//! the next header must be 4 and the inner packet a sound IPv4 header
//! (`not_esp`, which also counts outer packets that are not ESP or are
//! fragments). The output is the inner packet, trimmed to its total
//! length, with the network header annotation set.
//!
//! The window (RFC 4303 §3.4.3) holds REPLAY packets. Several threads may
//! decrypt with one element: the window takes no lock (a number is
//! recorded by one compare-and-swap on an atomic bitmap word, so of two
//! threads given the same packet exactly one accepts it).
//!
//! Arguments: `SPI`, `ALG`, `KEY` as for IPsecESPTunnelEncap (the peer's
//! outbound SA). `SRC`, `DST` (optional) document the tunnel. Keyword
//! `REPLAY` (0 to 128, default 64): the anti-replay window; 0 disables it.
//!
//! Handlers (per SA):
//! - `packets`, `bytes` (read): packets decrypted and their inner bytes.
//! - `seq` (read): the highest sequence number accepted.
//! - `replay_drops`, `auth_failures`, `bad_padding`, `truncated`,
//!   `unknown_spi`, `not_esp` (read): drops by reason; `drops` (read) lists
//!   every reason with its count, one a line.
//! - `spi`, `alg` (read): the SA's SPI (hex) and algorithm.
//! - `reset` (write): zeroes the counters (not the replay window).
//!
//! Example:
//!
//!     FromDump(esp.pcap) -> Strip(14) -> CheckIPHeader
//!       -> IPClassifier(ip proto 50)
//!       -> IPsecESPTunnelUnencap(0x2002, aes128gcm16,
//!            0x0123456789abcdef0123456789abcdef01020304)
//!       -> CheckIPHeader -> ...

use super::sa::{esp_spi, DropReason, SecurityAssociation};
use super::{new_sa, read_sa_args, read_sa_handler};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct IPsecESPTunnelUnencap {
    sa: SecurityAssociation,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPsecESPTunnelUnencap", "1/1", "a", make)
        .shared("ESP: one security association's replay window for all flows")
        .drop_reasons(super::sa::REASONS)
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecESPTunnelUnencap, String> {
    let mut a = cx.args();
    let cfg = read_sa_args(&mut a, false)?;
    a.complete()?;
    Ok(IPsecESPTunnelUnencap {
        sa: new_sa(&cfg, cx.nthreads)?,
    })
}

impl IPsecESPTunnelUnencap {
    pub fn sa(&self) -> &SecurityAssociation {
        &self.sa
    }
}

impl Action for IPsecESPTunnelUnencap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("spi", |e, _| {
            read_sa_handler(&e.sa, "spi", false).unwrap_or_default()
        }),
        Handler::read("alg", |e, _| {
            read_sa_handler(&e.sa, "alg", false).unwrap_or_default()
        }),
        Handler::read("packets", |e, _| {
            read_sa_handler(&e.sa, "packets", false).unwrap_or_default()
        }),
        Handler::read("bytes", |e, _| {
            read_sa_handler(&e.sa, "bytes", false).unwrap_or_default()
        }),
        Handler::read("seq", |e, _| {
            read_sa_handler(&e.sa, "seq", false).unwrap_or_default()
        }),
        Handler::read("replay_drops", |e, _| {
            read_sa_handler(&e.sa, "replay_drops", false).unwrap_or_default()
        }),
        Handler::read("auth_failures", |e, _| {
            read_sa_handler(&e.sa, "auth_failures", false).unwrap_or_default()
        }),
        Handler::read("bad_padding", |e, _| {
            read_sa_handler(&e.sa, "bad_padding", false).unwrap_or_default()
        }),
        Handler::read("truncated", |e, _| {
            read_sa_handler(&e.sa, "truncated", false).unwrap_or_default()
        }),
        Handler::read("unknown_spi", |e, _| {
            read_sa_handler(&e.sa, "unknown_spi", false).unwrap_or_default()
        }),
        Handler::read("not_esp", |e, _| {
            read_sa_handler(&e.sa, "not_esp", false).unwrap_or_default()
        }),
        Handler::read("drops", |e, _| {
            read_sa_handler(&e.sa, "drops", false).unwrap_or_default()
        }),
        Handler::write("reset", |e, _, _| {
            e.sa.reset_stats();
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        match esp_spi(p.data()) {
            Ok(spi) if spi == self.sa.spi => {}
            Ok(_) => {
                self.sa.stats.count_drop(t, DropReason::UnknownSpi);
                return DropReason::UnknownSpi.verdict();
            }
            Err(e) => {
                self.sa.stats.count_drop(t, e);
                return e.verdict();
            }
        }
        match self.sa.decapsulate(t, p) {
            Ok(()) => Verdict::Out(0),
            Err(r) => r.verdict(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;

    fn ip(len: usize, fill: u8) -> Vec<u8> {
        let mut d = vec![fill; len];
        d[0] = 0x45;
        d[1] = 0;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[6] = 0;
        d[7] = 0;
        d[8] = 64;
        d[9] = 17;
        d
    }

    #[test]
    fn decrypts_what_encap_encrypts_and_counts_rejections() {
        for alg in [
            "aes128gcm16",
            "aes256gcm16",
            "aes128-sha1",
            "aes256-sha256",
            "3des-sha1",
        ] {
            let (el, il) = super::super::sa::Alg::parse(alg).unwrap().key_lens();
            let key: String = (0..el + il)
                .map(|i| format!("{:02x}", (i * 7) % 256))
                .collect();
            let key = format!("0x{key}");
            let enc = harness(
                &format!("IPsecESPTunnelEncap(0x2002, {alg}, {key}, 192.0.2.1, 198.51.100.1)"),
                1,
            );
            let dec = harness(
                &format!("IPsecESPTunnelUnencap(0x2002, {alg}, {key}, REPLAY 32)"),
                1,
            );
            let other = harness(&format!("IPsecESPTunnelUnencap(0x2003, {alg}, {key})"), 1);
            let plain: Vec<Vec<u8>> = (0..5).map(|i| ip(40 + 97 * i, i as u8)).collect();
            enc.push(
                0,
                plain
                    .iter()
                    .map(|d| Packet::from_slice(d).unwrap())
                    .collect(),
            );
            let esp: Vec<Vec<u8>> = enc.output(0).iter().map(|p| p.data().to_vec()).collect();
            // Ethernet-style trailing bytes after the datagram are ignored.
            let mut padded = esp[0].clone();
            padded.extend_from_slice(&[0; 6]);
            let mut bad = esp[1].clone();
            let n = bad.len();
            bad[n - 1] ^= 1;
            let mut batch = vec![padded];
            batch.push(bad);
            batch.extend(esp[2..].iter().cloned());
            batch.push(esp[2].clone()); // replay
            batch.push(esp[1][..30].to_vec()); // truncated (total length > data)
            dec.push(
                0,
                batch
                    .iter()
                    .map(|d| Packet::from_slice(d).unwrap())
                    .collect(),
            );
            let out = dec.output(0);
            let got: Vec<Vec<u8>> = out.iter().map(|p| p.data().to_vec()).collect();
            assert_eq!(
                got,
                vec![
                    plain[0].clone(),
                    plain[2].clone(),
                    plain[3].clone(),
                    plain[4].clone()
                ],
                "{alg}"
            );
            assert_eq!(dec.read("packets").unwrap(), "4");
            assert_eq!(dec.read("auth_failures").unwrap(), "1");
            assert_eq!(dec.read("replay_drops").unwrap(), "1");
            assert_eq!(dec.read("truncated").unwrap(), "1");
            assert_eq!(dec.read("seq").unwrap(), "5");
            assert_eq!(dec.drops(), 3);
            assert_eq!(
                dec.read("drop_reasons").unwrap(),
                "replay 1\nauth failed 1\ntruncated 1\n",
                "{alg}"
            );
            other.push(0, vec![Packet::from_slice(&esp[0]).unwrap()]);
            assert_eq!(other.read("unknown_spi").unwrap(), "1");
            assert_eq!(other.read("drop_reasons").unwrap(), "unknown SPI 1\n");
            assert!(other.output(0).is_empty());
        }
    }

    #[test]
    fn bad_configurations() {
        assert_err(
            try_harness("IPsecESPTunnelUnencap(0x2002, aes128gcm16)", 1),
            "e :: IPsecESPTunnelUnencap: KEY: bad hex key ''",
        );
        assert_err(try_harness(
            "IPsecESPTunnelUnencap(0x2002, aes128gcm16, 0x000102030405060708090a0b0c0d0e0f10111213, REPLAY 500)",
            1
        ), "e :: IPsecESPTunnelUnencap: replay window 500 is larger than 128");
    }
}
