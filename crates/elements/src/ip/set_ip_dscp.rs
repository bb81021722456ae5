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
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU8, Ordering};

pub struct SetIPDSCP {
    dscp: AtomicU8,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIPDSCP", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

/// A DSCP value: 0..63 (SetIP6DSCP's check too).
pub(crate) fn check_dscp(d: u8) -> Result<u8, String> {
    if d <= 63 {
        Ok(d)
    } else {
        Err(format!("DSCP: expected integer 0..63, not {d}"))
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIPDSCP, String> {
    Ok(SetIPDSCP {
        dscp: read_dscp(cx)?,
    })
}

/// The one argument, DSCP, of SetIPDSCP and SetIP6DSCP.
pub(crate) fn read_dscp(cx: &mut ConfigCx<'_>) -> Result<AtomicU8, String> {
    let mut a = cx.args();
    let dscp = a.read_mp::<u8>("DSCP");
    if let Err(e) = check_dscp(dscp) {
        a.error(e);
    }
    a.complete()?;
    Ok(AtomicU8::new(dscp))
}

impl Action for SetIPDSCP {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "dscp",
        |e, _| e.dscp.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.dscp.store(check_dscp(hx.arg(v)?)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::DropFor(0);
        };
        let tos = (self.dscp.load(Ordering::Relaxed) << 2) | h.ecn();
        if tos != h.tos() {
            h.update_tos(tos);
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

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
        assert_err(
            h.write("dscp", "64"),
            "e.dscp: DSCP: expected integer 0..63, not 64",
        );
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
        for (bad, want) in [
            (
                "SetIPDSCP",
                "e :: SetIPDSCP: missing mandatory DSCP argument",
            ),
            (
                "SetIPDSCP(64)",
                "e :: SetIPDSCP: DSCP: expected integer 0..63, not 64",
            ),
            (
                "SetIPDSCP(-1)",
                "e :: SetIPDSCP: DSCP: expected unsigned integer",
            ),
            (
                "SetIPDSCP(x)",
                "e :: SetIPDSCP: DSCP: expected unsigned integer",
            ),
            (
                "SetIPDSCP(1, 2)",
                "e :: SetIPDSCP: too many arguments ('2')",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
