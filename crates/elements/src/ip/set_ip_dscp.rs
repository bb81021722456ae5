//! # SetIPDSCP
//!
//! SetIPDSCP(DSCP)
//!
//! Sets IP packets' DSCP fields.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets (with their network header annotation set) and sets
//! their Differentiated Services Code Point, the upper 6 bits of the TOS
//! byte, to DSCP, keeping the ECN bits. Updates the IP checksum
//! incrementally and passes the packet to output 0. A packet without an IP
//! header annotation, or with fewer than 20 bytes of IP header, is dropped.
//!
//! Arguments:
//! - `DSCP` (integer 0..63, mandatory): the code point.
//!
//! Handlers:
//! - `dscp` (read/write): the code point.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> SetIPDSCP(46) -> ...;

use super::fixed_ip_header;
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, HandlerCx, HandlerInfo, Verdict};
use std::sync::atomic::{AtomicU8, Ordering};

pub struct SetIPDSCP {
    dscp: AtomicU8,
}

pub fn spec() -> ClassSpec {
    ClassSpec::new("SetIPDSCP", "1/1", "a", make)
}

fn parse_dscp(s: &str) -> Result<u8, String> {
    match u8::from_arg(s, &ArgEnv::default()) {
        Ok(v) if v <= 63 => Ok(v),
        _ => Err(format!("DSCP: expected integer 0..63, not '{}'", s.trim())),
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
    let mut a = cx.args();
    let raw = a.read_mp::<String>("DSCP")?;
    a.complete()?;
    Ok(Box::new(SetIPDSCP {
        dscp: AtomicU8::new(parse_dscp(&raw)?),
    }))
}

const HANDLERS: &[HandlerInfo] = &[HandlerInfo::rw("dscp")];

impl Element for SetIPDSCP {
    fn action_only(&self) -> bool {
        true
    }

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::Drop;
        };
        let tos = (self.dscp.load(Ordering::Relaxed) << 2) | h.ecn();
        if tos != h.tos() {
            h.update_tos(tos);
        }
        Verdict::Out(0)
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        (name == "dscp").then(|| self.dscp.load(Ordering::Relaxed).to_string())
    }

    fn write_handler(
        &self,
        name: &str,
        v: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        (name == "dscp").then(|| parse_dscp(v).map(|d| self.dscp.store(d, Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;

    #[test]
    fn sets_dscp_keeps_ecn() {
        let h = harness("SetIPDSCP(46)", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .tos(0x03)
            .payload(b"x")
            .bytes();
        h.push(0, vec![marked(&d)]);
        let want = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .tos((46 << 2) | 3)
            .payload(b"x")
            .bytes();
        assert_eq!(h.output(0)[0].data(), &want[..]);
    }

    #[test]
    fn handler_read_write() {
        let h = harness("SetIPDSCP(DSCP 10)", 1);
        assert_eq!(h.read("dscp").unwrap(), "10");
        h.write("dscp", "2").unwrap();
        assert_eq!(h.read("dscp").unwrap(), "2");
        assert!(h.write("dscp", "64").is_err());
        assert_eq!(h.read("dscp").unwrap(), "2");
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).tos(0xfd).bytes();
        h.push(0, vec![marked(&d)]);
        let want = Ip::new("1.0.0.1", "2.0.0.2", 17).tos(0x09).bytes();
        assert_eq!(h.output(0)[0].data(), &want[..]);
    }

    #[test]
    fn unmarked_or_short_dropped() {
        let h = harness("SetIPDSCP(1)", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        h.push(0, vec![pkt(&d), marked(&d[..19])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn incremental_matches_full_recomputation() {
        let h = harness("SetIPDSCP(0x2e)", 1);
        let mut rng = Rng::new(21);
        for _ in 0..2000 {
            let d = rng.datagram().bytes();
            h.push(0, vec![marked(&d)]);
            let out = h.output(0);
            let hlen = usize::from(d[0] & 15) * 4;
            let mut want = d.clone();
            want[1] = (0x2e << 2) | (d[1] & 3);
            let c = ip_header_checksum(&want[..hlen]);
            want[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(out[0].data(), &want[..]);
        }
    }

    #[test]
    fn bad_config() {
        for bad in [
            "SetIPDSCP",
            "SetIPDSCP(64)",
            "SetIPDSCP(-1)",
            "SetIPDSCP(x)",
            "SetIPDSCP(1, 2)",
        ] {
            assert!(try_harness(bad, 1).is_err(), "{bad}");
        }
    }
}
