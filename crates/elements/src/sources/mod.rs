//! Packet sources.

use paraclick_runtime::Registry;

pub mod fast_tcp_flows;
pub mod fast_udp_flows;
pub mod fast_udp_source;
pub mod gen;
pub mod infinite_source;
pub mod random_source;
pub mod rated_source;
#[cfg(test)]
mod test_util;
pub mod timed_source;
pub mod udp_gen;

/// Click's default source data: 64 bytes of text.
pub const DEFAULT_DATA: &[u8] =
    b"Random bullshit in a packet, at least 64 bytes long. Well, now it is.";

pub fn register(reg: &mut Registry) {
    reg.register(fast_tcp_flows::spec());
    reg.register(fast_udp_flows::spec());
    reg.register(fast_udp_source::spec());
    reg.register(infinite_source::spec());
    reg.register(random_source::spec());
    reg.register(rated_source::spec());
    reg.register(timed_source::spec());
}

/// The payload a source sends: DATA, cut or zero-padded to LENGTH if given.
pub fn source_data(data: Option<Vec<u8>>, length: Option<i64>) -> Vec<u8> {
    let mut d = data.unwrap_or_else(|| DEFAULT_DATA.to_vec());
    if let Some(l) = length.filter(|&l| l >= 0) {
        d.resize(l as usize, 0);
    }
    d
}
