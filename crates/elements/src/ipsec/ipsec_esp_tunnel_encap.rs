//! # IPsecESPTunnelEncap
//!
//! IPsecESPTunnelEncap(SPI, ALG, KEY, SRC, DST [, keywords REPLAY])
//!
//! Encrypts IPv4 packets into an ESP tunnel (RFC 4303 tunnel mode) with
//! one outbound security association.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! A paraclick element in the style of Click's IPsec elements, which split
//! this work over IPsecESPEncap, IPsecAES or IPsecDES, IPsecAuthHMACSHA1 and
//! IPsecEncap and know only 3DES/AES-CBC with HMAC-SHA1: this one does the
//! whole outbound transform in one pass, with modern algorithms, and
//! interoperates with Linux (`ip xfrm`) and strongSwan.
//!
//! Expects an IPv4 packet at the data start. Appends the ESP trailer
//! (padding 1, 2, 3, ... to the cipher's block size, pad length, next
//! header 4), encrypts, prepends the ESP header (SPI, sequence number) and
//! IV, appends the ICV, and prepends an outer IPv4 header from SRC to DST
//! (protocol 50, TTL 64, TOS copied from the inner header, header checksum
//! set); the network header annotation is set on the outer header.
//! Sequence numbers start at 1. Several threads may encrypt with one
//! element: each reserves 16 numbers at a time from the SA's shared
//! counter (one write of a shared cache line per 16 packets), so with
//! more than one thread the peer sees gaps (RFC 4303 allows them) but
//! never a number twice; a thread's block that fell more than 32 below
//! the newest reserved number (the thread was idle) is dropped for a
//! fresh one, so a peer's replay window of 32 or more accepts every
//! thread's packets. When the 32-bit sequence space is
//! used up, packets are dropped (`seq_overflow`): the SA must be replaced.
//! A packet that is not IPv4 is dropped (`not_esp`).
//!
//! Arguments (positional or keyword):
//! - `SPI`: the security parameter index, hex with `0x` or decimal (256 or more).
//! - `ALG`: the algorithm, by strongSwan's name: `aes128gcm16`,
//!   `aes256gcm16` (AES-GCM, RFC 4106, 16-byte ICV, 8-byte IV from the
//!   sequence counter), `aes128-sha1`, `aes256-sha1`, `aes128-sha256`,
//!   `aes256-sha256` (AES-CBC with HMAC-SHA1-96 or HMAC-SHA256-128),
//!   `3des-sha1`, `3des-sha256` (3DES-CBC with the same HMACs).
//! - `KEY`: hex, the encryption key followed by the GCM salt (4 bytes) or
//!   the HMAC key (20 bytes for SHA1, 32 for SHA256).
//! - `SRC`, `DST`: the tunnel endpoints (outer source and destination).
//! - `REPLAY` (keyword, unused outbound): accepted for symmetry.
//!
//! Handlers (per SA):
//! - `packets`, `bytes` (read): packets encrypted and their ESP bytes.
//! - `seq` (read): the highest sequence number sent (with one thread, the
//!   number of packets sent; with several, that plus the gaps).
//! - `replay_drops`, `auth_failures` (read): always 0 outbound.
//! - `not_esp`, `seq_overflow`, `no_room` (read): drops by reason; `drops`
//!   (read) lists every reason with its count, one a line.
//! - `spi`, `alg` (read): the SA's SPI (hex) and algorithm.
//! - `reset` (write): zeroes the counters (not the sequence number).
//!
//! Example:
//!
//!     FromDump(plain.pcap) -> Strip(14) -> CheckIPHeader
//!       -> IPsecESPTunnelEncap(0x1001, aes128gcm16,
//!            0x0123456789abcdef0123456789abcdef01020304, 192.0.2.1, 198.51.100.1)
//!       -> EtherEncap(0x0800, 2:0:0:0:0:1, 2:0:0:0:0:2) -> ToDump(esp.pcap);

use super::sa::SecurityAssociation;
use super::{new_sa, read_sa_args, read_sa_handler};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct IPsecESPTunnelEncap {
    sa: SecurityAssociation,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPsecESPTunnelEncap", "1/1", "a", make)
        .shared("ESP: one security association's sequence numbers for all flows")
        .drop_reasons(super::sa::REASONS)
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecESPTunnelEncap, String> {
    let mut a = cx.args();
    let cfg = read_sa_args(&mut a, true)?;
    a.complete()?;
    Ok(IPsecESPTunnelEncap {
        sa: new_sa(&cfg, cx.nthreads)?,
    })
}

impl IPsecESPTunnelEncap {
    pub fn sa(&self) -> &SecurityAssociation {
        &self.sa
    }
}

impl Action for IPsecESPTunnelEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("spi", |e, _| {
            read_sa_handler(&e.sa, "spi", true).unwrap_or_default()
        }),
        Handler::read("alg", |e, _| {
            read_sa_handler(&e.sa, "alg", true).unwrap_or_default()
        }),
        Handler::read("packets", |e, _| {
            read_sa_handler(&e.sa, "packets", true).unwrap_or_default()
        }),
        Handler::read("bytes", |e, _| {
            read_sa_handler(&e.sa, "bytes", true).unwrap_or_default()
        }),
        Handler::read("seq", |e, _| {
            read_sa_handler(&e.sa, "seq", true).unwrap_or_default()
        }),
        Handler::read("replay_drops", |e, _| {
            read_sa_handler(&e.sa, "replay_drops", true).unwrap_or_default()
        }),
        Handler::read("auth_failures", |e, _| {
            read_sa_handler(&e.sa, "auth_failures", true).unwrap_or_default()
        }),
        Handler::read("not_esp", |e, _| {
            read_sa_handler(&e.sa, "not_esp", true).unwrap_or_default()
        }),
        Handler::read("seq_overflow", |e, _| {
            read_sa_handler(&e.sa, "seq_overflow", true).unwrap_or_default()
        }),
        Handler::read("no_room", |e, _| {
            read_sa_handler(&e.sa, "no_room", true).unwrap_or_default()
        }),
        Handler::read("drops", |e, _| {
            read_sa_handler(&e.sa, "drops", true).unwrap_or_default()
        }),
        Handler::write("reset", |e, _, _| {
            e.sa.reset_stats();
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.sa.encapsulate(cx.thread(), p) {
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

    const DECL: &str = "IPsecESPTunnelEncap(0x1001, aes128gcm16, \
        0x000102030405060708090a0b0c0d0e0f10111213, 192.0.2.1, 198.51.100.1)";

    fn ip(len: usize) -> Packet {
        let mut d = vec![0u8; len];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[8] = 64;
        d[9] = 17;
        Packet::from_slice(&d).unwrap()
    }

    #[test]
    fn encrypts_and_counts() {
        let h = harness(DECL, 1);
        h.push(0, vec![ip(64), ip(100), ip(1400)]);
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        for (i, p) in out.iter().enumerate() {
            let d = p.data();
            assert_eq!(d[9], 50);
            assert_eq!(&d[16..20], &[198, 51, 100, 1]);
            assert_eq!(&d[20..24], &[0, 0, 0x10, 0x01]);
            assert_eq!(
                u32::from_be_bytes([d[24], d[25], d[26], d[27]]),
                i as u32 + 1
            );
        }
        assert_eq!(h.read("packets").unwrap(), "3");
        assert_eq!(h.read("seq").unwrap(), "3");
        assert_eq!(h.read("spi").unwrap(), "0x00001001");
        assert_eq!(h.read("alg").unwrap(), "aes128gcm16");
        let bytes: usize = out.iter().map(|p| p.len()).sum();
        assert_eq!(h.read("bytes").unwrap(), bytes.to_string());
        h.write("reset", "").unwrap();
        assert_eq!(h.read("packets").unwrap(), "0");
        assert_eq!(h.read("seq").unwrap(), "3");
    }

    #[test]
    fn non_ip_is_a_counted_drop() {
        let h = harness(DECL, 1);
        h.push(
            0,
            vec![
                Packet::from_slice(&[0x60; 40]).unwrap(),
                Packet::from_slice(&[1]).unwrap(),
            ],
        );
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("not_esp").unwrap(), "2");
        assert!(h.read("drops").unwrap().contains("not_esp 2"));
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            ("IPsecESPTunnelEncap(0x1001, aes128gcm16, 0x00, 192.0.2.1, 198.51.100.1)", "e :: IPsecESPTunnelEncap: aes128gcm16 needs a 20-byte key (16 bytes of cipher key and 4 of salt), not 1 bytes"),
            ("IPsecESPTunnelEncap(0x1001, rot13, 0x000102030405060708090a0b0c0d0e0f10111213, 192.0.2.1, 198.51.100.1)", "e :: IPsecESPTunnelEncap: unknown ESP algorithm 'rot13' (expected aes128gcm16, aes256gcm16, aes128-sha1, aes256-sha1, aes128-sha256, aes256-sha256, 3des-sha1 or 3des-sha256)"),
            ("IPsecESPTunnelEncap(7, aes128gcm16, 0x000102030405060708090a0b0c0d0e0f10111213, 192.0.2.1, 198.51.100.1)", "e :: IPsecESPTunnelEncap: SPI 7 is reserved (RFC 4303: 1-255 are reserved, 0 is invalid)"),
            ("IPsecESPTunnelEncap(0x1001, aes128gcm16, 0xzz, 192.0.2.1, 198.51.100.1)", "e :: IPsecESPTunnelEncap: KEY: bad hex key '0xzz'"),
            ("IPsecESPTunnelEncap(0x1001, aes128gcm16, 0x000102030405060708090a0b0c0d0e0f10111213, 192.0.2.1)", "e :: IPsecESPTunnelEncap: missing mandatory DST argument"),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
