//! # GetIPAddress
//!
//! GetIPAddress(OFFSET [, ANNO, keyword IP])
//!
//! Sets the destination IP address annotation from packet data.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Copies the 4 bytes at OFFSET bytes into the packet to the destination IP
//! address annotation. OFFSET is usually 16, to fetch the destination
//! address of an IP packet whose header starts the packet.
//!
//! Instead of OFFSET you may give the IP keyword, `src` or `dst`: the
//! packet must then have its IP header annotation set, and the annotation
//! gets that header's source or destination address.
//!
//! A packet too short for the 4 bytes (or, with IP, without an IP header
//! annotation or with fewer than 20 bytes of IP header) is dropped.
//!
//! Arguments:
//! - `OFFSET` (unsigned integer): where the address is.
//! - `ANNO` (annotation, default `DST_IP`): the address annotation to set.
//!   paraclick has one address annotation, `DST_IP` (also `DST_IP_ANNO`).
//! - `IP` (keyword, `src` or `dst`): read the IP header's source or
//!   destination instead of OFFSET.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> GetIPAddress(16) -> rt :: StaticIPLookup(...);

use super::fixed_ip_header_ref;
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

/// The address annotation an `ANNO` argument names (paraclick has only the
/// destination IP annotation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DstIpAnno;

impl FromArg for DstIpAnno {
    const WHAT: &'static str = "IP address annotation";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        match s.trim() {
            "DST_IP" | "DST_IP_ANNO" => Ok(DstIpAnno),
            other => Err(format!("expected {} (DST_IP), not '{other}'", Self::WHAT)),
        }
    }
    fn placeholder() -> Self {
        DstIpAnno
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Offset(usize),
    Src,
    Dst,
}

pub struct GetIPAddress {
    source: Source,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short", "no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("GetIPAddress", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<GetIPAddress, String> {
    let mut a = cx.args();
    let ip = a.read::<String>("IP");
    let offset = a.read_p::<usize>("OFFSET");
    let _anno = a.read_p::<DstIpAnno>("ANNO");
    a.complete()?;
    let source = match (offset, ip.as_deref().map(str::trim)) {
        (Some(_), Some(_)) => return Err("give OFFSET or IP, not both".into()),
        (Some(o), None) => Source::Offset(o),
        (None, Some("src")) => Source::Src,
        (None, Some("dst")) => Source::Dst,
        (None, Some(other)) => return Err(format!("IP: expected 'src' or 'dst', not '{other}'")),
        (None, None) => return Err("missing mandatory OFFSET argument".into()),
    };
    Ok(GetIPAddress { source })
}

impl Action for GetIPAddress {
    // Always inlined into the fused hop that calls it: the call, and
    // the verdict passed back through memory, cost more than the work.
    #[inline(always)]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let addr = match self.source {
            Source::Offset(o) => match p.data().get(o..).and_then(<[u8]>::first_chunk) {
                Some(&b) => Ipv4Addr::from(b),
                None => return Verdict::DropFor(0),
            },
            Source::Src | Source::Dst => match fixed_ip_header_ref(p) {
                Some(h) if self.source == Source::Src => h.src_addr(),
                Some(h) => h.dst_addr(),
                None => return Verdict::DropFor(1),
            },
        };
        p.anno_mut().dst_ip = addr;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn from_offset() {
        let h = harness("GetIPAddress(16)", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        h.push(0, vec![pkt(&d), pkt(&d[..20]), pkt(&d[..19])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        for p in &out {
            assert_eq!(p.anno().dst_ip, ip("2.0.0.2"));
        }
        assert_eq!(out[0].data(), &d[..], "data unchanged");
        assert_eq!(h.drops(), 1);
        // An offset beyond the packet, or where offset + 4 overflows, is
        // a counted drop, not a panic.
        for decl in ["GetIPAddress(64)", "GetIPAddress(18446744073709551614)"] {
            let h = harness(decl, 1);
            h.push(0, vec![pkt(&d), pkt(&[])]);
            assert!(h.output(0).is_empty(), "{decl}");
            assert_eq!(h.drops(), 2, "{decl}");
        }
    }

    #[test]
    fn with_anno_argument() {
        let h = harness("GetIPAddress(12, DST_IP)", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        h.push(0, vec![pkt(&d)]);
        assert_eq!(h.output(0)[0].anno().dst_ip, ip("1.0.0.1"));
    }

    #[test]
    fn from_ip_header() {
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        let mut f = vec![0; 14];
        f.extend_from_slice(&d);
        let mut p = pkt(&f);
        p.set_network_header(14, 20);
        let h = harness("GetIPAddress(IP src)", 1);
        h.push(0, vec![p.clone_packet().unwrap(), pkt(&f)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().dst_ip, ip("1.0.0.1"));
        assert_eq!(h.drops(), 1, "no IP header annotation");
        let h = harness("GetIPAddress(IP dst)", 1);
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].anno().dst_ip, ip("2.0.0.2"));
    }

    #[test]
    fn bad_config() {
        for (bad, want) in [
            (
                "GetIPAddress",
                "e :: GetIPAddress: missing mandatory OFFSET argument",
            ),
            (
                "GetIPAddress(x)",
                "e :: GetIPAddress: OFFSET: expected unsigned integer",
            ),
            (
                "GetIPAddress(16, PAINT)",
                "e :: GetIPAddress: ANNO: expected IP address annotation (DST_IP), not 'PAINT'",
            ),
            (
                "GetIPAddress(IP foo)",
                "e :: GetIPAddress: IP: expected 'src' or 'dst', not 'foo'",
            ),
            (
                "GetIPAddress(16, IP src)",
                "e :: GetIPAddress: give OFFSET or IP, not both",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
