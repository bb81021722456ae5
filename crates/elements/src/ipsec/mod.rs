//! IPsec ESP in tunnel mode (RFC 4303): security associations, the
//! anti-replay window, and the elements that encrypt and decrypt.
//!
//! The logic (`sa`, `replay`) is plain Rust, independent of the element
//! API; the element files are thin wrappers over it.

use paraclick_runtime::args::Args;
use paraclick_runtime::Registry;
use sa::{parse_hex_key, parse_spi, Alg, DropReason, SaConfig, SecurityAssociation};
use std::net::Ipv4Addr;

pub mod ipsec_auth;
pub mod ipsec_cipher;
pub mod ipsec_encap;
pub mod ipsec_esp_encap;
pub mod ipsec_esp_tunnel_encap;
pub mod ipsec_esp_tunnel_unencap;
pub mod ipsec_esp_unencap;
pub mod radix_ipsec_lookup;
pub mod replay;
pub mod sa;
pub mod sa_table;

pub fn register(reg: &mut Registry) {
    reg.register(ipsec_esp_tunnel_encap::spec());
    reg.register(ipsec_esp_tunnel_unencap::spec());
    // Click's split elements, sharing an IPsecSATable.
    reg.register(sa_table::spec());
    reg.register(radix_ipsec_lookup::spec());
    reg.register(ipsec_esp_encap::spec());
    reg.register(ipsec_esp_unencap::spec());
    reg.register(ipsec_cipher::aes_spec());
    reg.register(ipsec_cipher::des_spec());
    reg.register(ipsec_auth::sha1_spec());
    reg.register(ipsec_auth::sha256_spec());
    reg.register(ipsec_encap::spec());
}

/// Reads the arguments every SA-configured element shares: `SPI`, `ALG`,
/// `KEY` (positional or keyword, mandatory), `SRC`, `DST` (the tunnel's
/// outer addresses; mandatory when `need_addrs`) and `REPLAY` (window).
pub(crate) fn read_sa_args(a: &mut Args<'_>, need_addrs: bool) -> Result<SaConfig, String> {
    let spi: String = a.read_mp("SPI");
    let alg: String = a.read_mp("ALG");
    let key: String = a.read_mp("KEY");
    let (src, dst) = if need_addrs {
        (a.read_mp::<Ipv4Addr>("SRC"), a.read_mp::<Ipv4Addr>("DST"))
    } else {
        (
            a.read_p::<Ipv4Addr>("SRC").unwrap_or(Ipv4Addr::UNSPECIFIED),
            a.read_p::<Ipv4Addr>("DST").unwrap_or(Ipv4Addr::UNSPECIFIED),
        )
    };
    let replay_window = a.read::<u32>("REPLAY").unwrap_or(64);
    Ok(SaConfig {
        spi: parse_spi(&spi)?,
        alg: Alg::parse(&alg)?,
        key: parse_hex_key(&key).map_err(|e| format!("KEY: {e}"))?,
        src,
        dst,
        replay_window,
    })
}

pub(crate) fn new_sa(cfg: &SaConfig, nthreads: usize) -> Result<SecurityAssociation, String> {
    SecurityAssociation::new(cfg, nthreads)
}

/// Reads a per-SA handler shared by the IPsec elements. `seq` is the highest sequence number sent
/// (`outbound`) or the highest accepted (inbound).
pub(crate) fn read_sa_handler(
    sa: &SecurityAssociation,
    name: &str,
    outbound: bool,
) -> Option<String> {
    let s = &sa.stats;
    Some(match name {
        "spi" => format!("0x{:08x}", sa.spi),
        "alg" => sa.alg.to_string(),
        "packets" => s.packets.get().to_string(),
        "bytes" => s.bytes.get().to_string(),
        "seq" => {
            if outbound {
                sa.seq().to_string()
            } else {
                sa.replay_top().to_string()
            }
        }
        "replay_drops" => s.drops(DropReason::Replay).to_string(),
        "auth_failures" => s.drops(DropReason::Auth).to_string(),
        "bad_padding" => s.drops(DropReason::BadPadding).to_string(),
        "truncated" => s.drops(DropReason::Truncated).to_string(),
        "unknown_spi" => s.drops(DropReason::UnknownSpi).to_string(),
        "not_esp" => s.drops(DropReason::NotEsp).to_string(),
        "seq_overflow" => s.drops(DropReason::SeqOverflow).to_string(),
        "no_room" => s.drops(DropReason::NoRoom).to_string(),
        "drops" => DropReason::ALL
            .iter()
            .map(|r| format!("{} {}", r.name(), s.drops(*r)))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    })
}

#[cfg(test)]
mod click_style_tests;
