//! Packet sources.

use paraclick_runtime::Registry;

pub mod fast_tcp_flows;
pub mod fast_udp_flows;
pub mod fast_udp_source;
pub mod gen;
pub mod infinite_source;
pub mod random_source;
pub mod rated_source;
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

/// The longest packet a source makes from DATA and LENGTH: an IPv4
/// datagram of 65535 bytes behind an Ethernet header. A LENGTH of 10^10
/// aborted the process allocating the data.
pub const MAX_DATA_LEN: usize = udp_gen::MAX_LEN;

/// The most headroom a source's HEADROOM may ask for.
pub const MAX_HEADROOM: usize = 65535;

/// The payload a source sends: DATA, cut or zero-padded to LENGTH if given;
/// an error if LENGTH is more than [`MAX_DATA_LEN`].
pub fn source_data(data: Option<Vec<u8>>, length: Option<i64>) -> Result<Vec<u8>, String> {
    let mut d = data.unwrap_or_else(|| DEFAULT_DATA.to_vec());
    if let Some(l) = length.filter(|&l| l >= 0) {
        let l = check_length(u64::try_from(l).unwrap_or(u64::MAX))?;
        d.resize(l, 0);
    }
    Ok(d)
}

/// DATA as given, LENGTH, and the packet contents they make.
pub(crate) struct Contents {
    pub data: Vec<u8>,
    pub length: i64,
    pub packet: Vec<u8>,
}

impl Contents {
    pub fn new(data: Vec<u8>, length: i64) -> Result<Contents, String> {
        let packet = source_data(Some(data.clone()), Some(length))?;
        Ok(Contents {
            data,
            length,
            packet,
        })
    }
}

/// A packet LENGTH: at most [`MAX_DATA_LEN`], or an error.
pub fn check_length(l: u64) -> Result<usize, String> {
    match usize::try_from(l) {
        Ok(l) if l <= MAX_DATA_LEN => Ok(l),
        _ => Err(format!(
            "LENGTH {l} is more than the maximum, {MAX_DATA_LEN}"
        )),
    }
}

/// HEADROOM: at most [`MAX_HEADROOM`], or an error.
pub fn check_headroom(h: Option<usize>) -> Result<Option<usize>, String> {
    match h {
        Some(h) if h > MAX_HEADROOM => Err(format!(
            "HEADROOM {h} is more than the maximum, {MAX_HEADROOM}"
        )),
        h => Ok(h),
    }
}
