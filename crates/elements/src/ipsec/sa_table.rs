//! # IPsecSATable
//!
//! IPsecSATable(SA1, SA2, ...)
//!
//! The security association table the Click-style IPsec elements share
//! (the role of Click's SATable, which Click keeps inside
//! RadixIPsecLookup).
//!
//! Ports: none.
//!
//! Each argument is one security association, `SPI ALG KEY [SRC DST]
//! [REPLAY N]`: the SPI (hex with `0x`, or decimal, 256 or more), the
//! algorithm by strongSwan's name and the hex key, as for
//! IPsecESPTunnelEncap (`aes128gcm16`, `aes256gcm16`, `aes128-sha1`,
//! `aes256-sha1`, `aes128-sha256`, `aes256-sha256`, `3des-sha1`,
//! `3des-sha256`; the key is the cipher key followed by the GCM salt or
//! the HMAC key), optionally the tunnel endpoints (which IPsecEncap uses
//! when it is given no addresses), and the anti-replay window (0 to 128,
//! default 64). SPIs must differ.
//!
//! An SA serves both directions, as in Click: outbound, RadixIPsecLookup
//! routes name it by SPI (its sequence numbers come from an atomic
//! counter, so any number of threads may use it); inbound, an ESP
//! packet's SPI selects it (its anti-replay window is shared by the
//! threads too). A tunnel normally has two SAs, one each way.
//!
//! The elements pass the SA between them in packet annotations, never as
//! a pointer: user annotation bytes 8 to 11 hold the SA's index in this
//! table plus one (0: none), byte 12 the steps already done (ESP header
//! added, encrypted, authenticated; inbound: verified, decrypted), so each
//! element can refuse a packet that skipped a step (`out_of_order`).
//!
//! Elements find the table by the keyword `SATABLE` (an element name) or,
//! without it, as the only IPsecSATable of the configuration.
//!
//! Handlers:
//! - `table` (read): one line per SA: SPI, algorithm, then `packets`,
//!   `bytes`, `seq` (highest sent), `rx_seq` (highest accepted) and every
//!   drop reason with its count.
//! - `packets`, `bytes`, `seq`, `rx_seq`, `replay_drops`,
//!   `auth_failures`, `bad_padding`, `truncated`, `not_esp`, `drops`
//!   (read with a parameter, the SPI: `sat.packets 0x1001`).
//! - `unknown_spi` (read): inbound ESP packets whose SPI is in no SA
//!   (counted by RadixIPsecLookup).
//! - `reset` (write): zeroes every counter.
//!
//! Example:
//!
//!     IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213,
//!                  0x2002 aes128gcm16 0xf0e0d0c0b0a090807060504030201000a1a2a3a4 REPLAY 128)

use super::read_sa_handler;
use super::sa::{parse_hex_key, parse_spi, Alg, SaConfig, SecurityAssociation};
use paraclick_packet::Packet;
use paraclick_runtime::{
    ArgEnv, ClassSpec, ConfigCx, Element, FromArg, Handler, InitCx, PerThreadCount,
};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

/// User annotation bytes holding the SA index plus one (u32, little-endian).
pub const IPSEC_SA_ANNO: std::ops::Range<usize> = 8..12;
/// User annotation byte holding the transform steps done ([`state`]).
pub const IPSEC_STATE_ANNO: usize = 12;

/// Bits of the state annotation.
pub mod state {
    /// Outbound: IPsecESPEncap added the ESP header and trailer.
    pub const ENCAP: u8 = 1;
    /// Outbound: encrypted.
    pub const ENCRYPTED: u8 = 2;
    /// Outbound: ICV added (or AES-GCM's tag).
    pub const AUTHED: u8 = 4;
    /// Inbound: the SA was chosen by the packet's SPI.
    pub const INBOUND: u8 = 8;
    /// Inbound: ICV verified and the sequence number recorded.
    pub const VERIFIED: u8 = 16;
    /// Inbound: decrypted.
    pub const DECRYPTED: u8 = 32;
}

/// The SA annotation: `(index, state)` or `None`.
#[inline]
pub fn sa_anno(p: &Packet) -> Option<(u32, u8)> {
    let u = &p.anno().user;
    let mut b = [0u8; 4];
    b.copy_from_slice(&u[IPSEC_SA_ANNO]);
    let v = u32::from_le_bytes(b);
    (v != 0).then(|| (v - 1, u[IPSEC_STATE_ANNO]))
}

/// Sets the SA annotation to SA `index` with `st` steps done.
#[inline]
pub fn set_sa_anno(p: &mut Packet, index: u32, st: u8) {
    let u = &mut p.anno_mut().user;
    u[IPSEC_SA_ANNO].copy_from_slice(&(index + 1).to_le_bytes());
    u[IPSEC_STATE_ANNO] = st;
}

/// Sets the state bits of the SA annotation.
#[inline]
pub fn set_state(p: &mut Packet, st: u8) {
    p.anno_mut().user[IPSEC_STATE_ANNO] = st;
}

/// Clears the SA annotation (the transform is finished).
#[inline]
pub fn clear_sa_anno(p: &mut Packet) {
    let u = &mut p.anno_mut().user;
    u[IPSEC_SA_ANNO].fill(0);
    u[IPSEC_STATE_ANNO] = 0;
}

/// The SAs, in configuration order (the annotation's index), and an
/// index by SPI.
pub struct SaTable {
    sas: Vec<SecurityAssociation>,
    by_spi: HashMap<u32, u32>,
    /// Inbound ESP packets whose SPI matched no SA.
    pub unknown_spi: PerThreadCount,
}

impl SaTable {
    pub fn new(sas: Vec<SecurityAssociation>, nthreads: usize) -> Result<SaTable, String> {
        let mut by_spi = HashMap::new();
        for (i, sa) in sas.iter().enumerate() {
            if by_spi.insert(sa.spi, i as u32).is_some() {
                return Err(format!("SPI 0x{:08x} appears twice", sa.spi));
            }
        }
        Ok(SaTable {
            sas,
            by_spi,
            unknown_spi: PerThreadCount::new(nthreads),
        })
    }

    #[inline]
    pub fn get(&self, index: u32) -> Option<&SecurityAssociation> {
        self.sas.get(index as usize)
    }

    #[inline]
    pub fn index_of(&self, spi: u32) -> Option<u32> {
        self.by_spi.get(&spi).copied()
    }

    pub fn by_spi(&self, spi: u32) -> Option<&SecurityAssociation> {
        self.index_of(spi).and_then(|i| self.get(i))
    }

    pub fn len(&self) -> usize {
        self.sas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sas.is_empty()
    }

    fn dump(&self) -> String {
        let mut s = String::new();
        for sa in &self.sas {
            let st = &sa.stats;
            let _ = write!(
                s,
                "0x{:08x} {} packets {} bytes {} seq {} rx_seq {}",
                sa.spi,
                sa.alg,
                st.packets.get(),
                st.bytes.get(),
                sa.seq(),
                sa.replay_top()
            );
            for r in super::sa::DropReason::ALL {
                let _ = write!(s, " {} {}", r.name(), st.drops(r));
            }
            s.push('\n');
        }
        s
    }
}

/// One `SPI ALG KEY [SRC DST] [REPLAY N]` argument.
struct SaSpec(SaConfig);

impl FromArg for SaSpec {
    const WHAT: &'static str = "security association";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<SaSpec, String> {
        let w: Vec<&str> = s.split_whitespace().collect();
        let usage = "expected 'SPI ALG KEY [SRC DST] [REPLAY N]'";
        if w.len() < 3 {
            return Err(usage.into());
        }
        let mut rest = &w[3..];
        let mut replay_window = 64;
        if rest.len() >= 2 && rest[rest.len() - 2].eq_ignore_ascii_case("REPLAY") {
            replay_window = rest[rest.len() - 1]
                .parse::<u32>()
                .map_err(|_| format!("bad REPLAY '{}'", rest[rest.len() - 1]))?;
            rest = &rest[..rest.len() - 2];
        }
        let (src, dst) = match rest {
            [] => (Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED),
            [a, b] => (Ipv4Addr::from_arg(a, env)?, Ipv4Addr::from_arg(b, env)?),
            _ => return Err(usage.into()),
        };
        Ok(SaSpec(SaConfig {
            spi: parse_spi(w[0])?,
            alg: Alg::parse(w[1])?,
            key: parse_hex_key(w[2]).map_err(|e| format!("KEY: {e}"))?,
            src,
            dst,
            replay_window,
        }))
    }
    fn placeholder() -> SaSpec {
        SaSpec(SaConfig {
            spi: 256,
            alg: Alg::AesGcm { key_len: 16 },
            key: Vec::new(),
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            replay_window: 64,
        })
    }
}

pub struct IPsecSATable {
    table: Arc<SaTable>,
}

impl IPsecSATable {
    pub fn table(&self) -> &Arc<SaTable> {
        &self.table
    }
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPsecSATable", "0/0", "a", make).shared(
        "IPsec: one security association table (sequence numbers, replay windows) for all flows",
    )
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecSATable, String> {
    let args = cx.args().rest_all();
    let mut sas = Vec::new();
    let mut errs = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a.trim().is_empty() {
            continue;
        }
        match SaSpec::from_arg(a, cx.env)
            .and_then(|SaSpec(c)| SecurityAssociation::new(&c, cx.nthreads))
        {
            Ok(sa) => sas.push(sa),
            Err(e) => errs.push(format!("SA {}: {e}", i + 1)),
        }
    }
    if !errs.is_empty() {
        return Err(errs.join("\n"));
    }
    Ok(IPsecSATable {
        table: Arc::new(SaTable::new(sas, cx.nthreads)?),
    })
}

fn per_sa(e: &IPsecSATable, name: &str, param: Option<&str>) -> Result<String, String> {
    let spi = param.ok_or_else(|| format!("{name} needs an SPI: '{name} 0x1001'"))?;
    let spi = parse_spi(spi)?;
    let sa = e
        .table
        .by_spi(spi)
        .ok_or_else(|| format!("no SA with SPI 0x{spi:08x}"))?;
    if name == "rx_seq" {
        return Ok(sa.replay_top().to_string());
    }
    read_sa_handler(sa, name, true).ok_or_else(|| format!("no handler {name}"))
}

impl Element for IPsecSATable {
    /// Its table, to the elements that use it ([`TableRef`]).
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, IPsecSATable, Arc<SaTable> => |t| &t.table)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| e.table.dump()),
        Handler::read("unknown_spi", |e, _| e.table.unknown_spi.get().to_string()),
        Handler::read_param("packets", |e, p, _| per_sa(e, "packets", p)),
        Handler::read_param("bytes", |e, p, _| per_sa(e, "bytes", p)),
        Handler::read_param("seq", |e, p, _| per_sa(e, "seq", p)),
        Handler::read_param("rx_seq", |e, p, _| per_sa(e, "rx_seq", p)),
        Handler::read_param("replay_drops", |e, p, _| per_sa(e, "replay_drops", p)),
        Handler::read_param("auth_failures", |e, p, _| per_sa(e, "auth_failures", p)),
        Handler::read_param("bad_padding", |e, p, _| per_sa(e, "bad_padding", p)),
        Handler::read_param("truncated", |e, p, _| per_sa(e, "truncated", p)),
        Handler::read_param("not_esp", |e, p, _| per_sa(e, "not_esp", p)),
        Handler::read_param("drops", |e, p, _| per_sa(e, "drops", p)),
        Handler::write("reset", |e, _, _| {
            e.table.sas.iter().for_each(|s| s.reset_stats());
            e.table.unknown_spi.reset();
            Ok(())
        }),
    ];
}

/// How a Click-style IPsec element reaches the table: the `SATABLE`
/// keyword's element, or the configuration's only IPsecSATable, found at
/// initialization.
pub struct TableRef {
    name: Option<String>,
    table: OnceLock<Arc<SaTable>>,
}

impl TableRef {
    pub fn new(name: Option<String>) -> TableRef {
        TableRef {
            name,
            table: OnceLock::new(),
        }
    }

    /// A reference already bound to `table` (RadixIPsecLookup's inline
    /// SAs); `initialize` then does nothing.
    pub fn fixed(table: Arc<SaTable>) -> TableRef {
        let r = TableRef::new(None);
        let _ = r.table.set(table);
        r
    }

    pub fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.initialize_inner(ix, false)
    }

    /// As `initialize`, but a configuration without any IPsecSATable (and
    /// no `SATABLE` keyword) is fine: the element then sees no SAs.
    pub fn initialize_optional(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.initialize_inner(ix, true)
    }

    fn initialize_inner(&self, ix: &mut InitCx<'_>, optional: bool) -> Result<(), String> {
        if self.table.get().is_some() {
            return Ok(());
        }
        // Whatever provides a table: an IPsecSATable, or a
        // RadixIPsecLookup holding Click-style inline SAs.
        let table_of = |ix: &InitCx<'_>, i: usize| -> Option<Arc<SaTable>> {
            ix.cast::<Arc<SaTable>>(i).cloned()
        };
        let t = match &self.name {
            Some(n) => {
                let i = ix
                    .find(n)
                    .ok_or_else(|| format!("SATABLE: no element '{n}'"))?;
                table_of(ix, i).ok_or_else(|| {
                    format!(
                        "SATABLE: '{n}' is not an IPsecSATable (or a RadixIPsecLookup with inline SAs)"
                    )
                })?
            }
            None => {
                let found: Vec<Arc<SaTable>> = (0..ix.element_count())
                    .filter_map(|i| table_of(ix, i))
                    .collect();
                match found.as_slice() {
                    [t] => t.clone(),
                    [] if optional => return Ok(()),
                    [] => return Err("no IPsecSATable in the configuration".into()),
                    _ => {
                        return Err(
                            "several IPsecSATables: say which with the SATABLE keyword".into()
                        )
                    }
                }
            }
        };
        let _ = self.table.set(t);
        Ok(())
    }

    #[inline]
    pub fn get(&self) -> Option<&SaTable> {
        self.table.get().map(|t| &**t)
    }

    /// The packet's SA and state, if it has a valid annotation.
    #[inline]
    pub fn sa_of(&self, p: &Packet) -> Option<(u32, &SecurityAssociation, u8)> {
        let (i, st) = sa_anno(p)?;
        self.get()?.get(i).map(|sa| (i, sa, st))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::assert_err;

    const T: &str = "IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213 192.0.2.1 198.51.100.1, \
        0x2002 3des-sha1 0x000102030405060708090a0b0c0d0e0f10111213141516170001020304050607080910111213141516171819 REPLAY 32)";

    #[test]
    fn parses_and_reports() {
        let rt = paraclick_runtime::Router::from_str(&format!("sat :: {T}"), &reg(), 1).unwrap();
        let t = rt.element::<super::IPsecSATable>("sat").unwrap().table();
        assert_eq!(t.len(), 2);
        assert_eq!(t.index_of(0x2002), Some(1));
        assert_eq!(t.by_spi(0x1001).unwrap().dst.to_string(), "198.51.100.1");
        let dump = rt.read_handler("sat.table").unwrap();
        assert!(
            dump.starts_with("0x00001001 aes128gcm16 packets 0"),
            "{dump}"
        );
        assert!(dump.contains("0x00002002 3des-sha1"), "{dump}");
        assert_eq!(rt.read_handler("sat.packets 0x2002").unwrap(), "0");
        assert_err(
            rt.read_handler("sat.packets 0x3003"),
            "no SA with SPI 0x00003003",
        );
    }

    #[test]
    fn bad_tables() {
        for (bad, want) in [
            ("IPsecSATable(0x1001 aes128gcm16)", "<config>:1:8: sat :: IPsecSATable: SA 1: expected 'SPI ALG KEY [SRC DST] [REPLAY N]'"),
            ("IPsecSATable(0x1001 aes128gcm16 0x00)", "<config>:1:8: sat :: IPsecSATable: SA 1: aes128gcm16 needs a 20-byte key (16 bytes of cipher key and 4 of salt), not 1 bytes"),
            ("IPsecSATable(0x1001 rot13 0x000102030405060708090a0b0c0d0e0f10111213)", "<config>:1:8: sat :: IPsecSATable: SA 1: unknown ESP algorithm 'rot13' (expected aes128gcm16, aes256gcm16, aes128-sha1, aes256-sha1, aes128-sha256, aes256-sha256, 3des-sha1 or 3des-sha256)"),
            ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213 1.2.3.4)", "<config>:1:8: sat :: IPsecSATable: SA 1: expected 'SPI ALG KEY [SRC DST] [REPLAY N]'"),
            ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213 REPLAY 999)", "<config>:1:8: sat :: IPsecSATable: SA 1: replay window 999 is larger than 128"),
            ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213, \
             0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213)", "<config>:1:8: sat :: IPsecSATable: SPI 0x00001001 appears twice"),
        ] {
            assert_err(paraclick_runtime::Router::from_str(&format!("sat :: {bad}"), &reg(), 1), want);
        }
    }
}
