//! What IPEncap and UDPIPEncap share: IP identification numbers handed out
//! without contention, IP protocol names, and the `dst` argument's
//! `DST_ANNO` form.

use paraclick_runtime::{ArgEnv, Cx, FromArg, PerThread};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Identifications a thread takes from the shared counter at a time.
const ID_BLOCK: u32 = 64;

/// IP identification numbers: a shared counter from which each thread
/// takes a block of 64 at a time, so consecutive packets of a thread get
/// consecutive numbers (one thread: 0, 1, 2, ...), no two threads hand out
/// the same number until the 16-bit space wraps, and the shared counter is
/// touched once per 64 packets rather than once per packet.
pub struct IpIds {
    shared: AtomicU32,
    local: PerThread<(u16, u32)>,
}

impl IpIds {
    pub fn new(nthreads: usize) -> IpIds {
        IpIds {
            shared: AtomicU32::new(0),
            local: PerThread::new(nthreads, |_| (0, 0)),
        }
    }

    #[inline]
    pub fn next(&self, cx: &mut Cx<'_>) -> u16 {
        let (next, left) = self.local.get(cx);
        if *left == 0 {
            *next = self.shared.fetch_add(ID_BLOCK, Ordering::Relaxed) as u16;
            *left = ID_BLOCK;
        }
        let id = *next;
        *next = next.wrapping_add(1);
        *left -= 1;
        id
    }
}

/// Parses an IP protocol: a number 0-255 or a name (`ipip`, `udp`, ...).
pub fn parse_proto(s: &str) -> Result<u8, String> {
    let s = s.trim();
    if let Ok(n) = u8::from_arg(s, &ArgEnv::default()) {
        return Ok(n);
    }
    paraclick_packet::wire::ip_proto::by_name(&s.to_ascii_lowercase())
        .ok_or_else(|| format!("expected IP protocol, not '{s}'"))
}

/// An IP protocol argument, [`parse_proto`]'s way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpProto(pub u8);

impl FromArg for IpProto {
    const WHAT: &'static str = "IP protocol";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<IpProto, String> {
        parse_proto(s).map(IpProto)
    }
    fn placeholder() -> IpProto {
        IpProto(0)
    }
}

/// A `DST` argument: an address, or `DST_ANNO` (each packet's destination
/// annotation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DstArg {
    Addr(Ipv4Addr),
    Anno,
}

impl FromArg for DstArg {
    const WHAT: &'static str = "IP address or DST_ANNO";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<DstArg, String> {
        match s.trim() {
            "DST_ANNO" => Ok(DstArg::Anno),
            s => Ipv4Addr::from_arg(s, env).map(DstArg::Addr),
        }
    }
    fn placeholder() -> DstArg {
        DstArg::Anno
    }
}

/// A destination address that may be `DST_ANNO` (use each packet's
/// destination annotation), changeable through a handler.
pub struct Dst {
    addr: AtomicU32,
    anno: AtomicBool,
}

impl Dst {
    pub fn new(d: DstArg) -> Dst {
        let dst = Dst {
            addr: AtomicU32::new(0),
            anno: AtomicBool::new(false),
        };
        dst.set(d);
        dst
    }

    pub fn set(&self, d: DstArg) {
        match d {
            DstArg::Anno => self.anno.store(true, Ordering::Relaxed),
            DstArg::Addr(a) => {
                self.addr.store(u32::from(a), Ordering::Relaxed);
                self.anno.store(false, Ordering::Relaxed);
            }
        }
    }

    /// The destination for a packet whose annotation is `anno`.
    #[inline]
    pub fn get(&self, anno: Ipv4Addr) -> Ipv4Addr {
        if self.anno.load(Ordering::Relaxed) {
            anno
        } else {
            Ipv4Addr::from(self.addr.load(Ordering::Relaxed))
        }
    }

    pub fn text(&self) -> String {
        if self.anno.load(Ordering::Relaxed) {
            "DST_ANNO".to_string()
        } else {
            Ipv4Addr::from(self.addr.load(Ordering::Relaxed)).to_string()
        }
    }
}

/// An address changeable through a handler.
pub struct Addr(AtomicU32);

impl Addr {
    pub fn new(a: Ipv4Addr) -> Addr {
        Addr(AtomicU32::new(u32::from(a)))
    }

    #[inline]
    pub fn get(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.0.load(Ordering::Relaxed))
    }

    pub fn set(&self, a: Ipv4Addr) {
        self.0.store(u32::from(a), Ordering::Relaxed);
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
pub fn write_ip_header(
    h: &mut [u8; 20],
    tos: u8,
    total_len: u16,
    id: u16,
    df: bool,
    ttl: u8,
    proto: u8,
    src: Ipv4Addr,
    dst: Ipv4Addr,
) {
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&total_len.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&(if df { 0x4000u16 } else { 0 }).to_be_bytes());
    h[8] = ttl;
    h[9] = proto;
    h[10] = 0;
    h[11] = 0;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = !paraclick_packet::wire::checksum::sum_array(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn protocols() {
        assert_eq!(parse_proto("4"), Ok(4));
        assert_eq!(parse_proto("ipip"), Ok(4));
        assert_eq!(parse_proto("UDP"), Ok(17));
        assert_eq!(parse_proto("0x2f"), Ok(47));
        assert_err(parse_proto("256"), "expected IP protocol, not '256'");
        assert_err(parse_proto("bogus"), "expected IP protocol, not 'bogus'");
    }

    #[test]
    fn header_checksum_verifies() {
        let mut h = [0u8; 20];
        write_ip_header(
            &mut h,
            0,
            0x73,
            0,
            true,
            64,
            17,
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 199),
        );
        // The classic example header, checksum b861.
        assert_eq!(
            h,
            [
                0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
                0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7
            ]
        );
    }
}
