//! # SetIP6DSCP
//!
//! SetIP6DSCP(DSCP)
//!
//! Sets IPv6 packets' DSCP fields.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IPv6 packets (with their network header annotation set, by
//! CheckIP6Header or MarkIP6Header) and sets their Differentiated
//! Services Code Point, the upper 6 bits of the 8-bit traffic class, to
//! DSCP, keeping the two ECN bits, then passes the packet to output 0.
//! IPv6 has no header checksum, so nothing else changes. A packet without
//! a network header annotation, or with fewer than 40 bytes of IPv6
//! header, is dropped ("not an IPv6 header").
//!
//! Arguments:
//! - `DSCP` (integer 0..63, mandatory): the code point (Click calls it
//!   VAL).
//!
//! Handlers:
//! - `dscp` (read/write): the code point.
//!
//! Example:
//!
//!     ... -> CheckIP6Header -> SetIP6DSCP(46) -> ...;

use super::fixed_ip6_header;
use crate::ip::set_ip_dscp::{check_dscp, read_dscp};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU8, Ordering};

pub struct SetIP6DSCP {
    dscp: AtomicU8,
}

/// Why SetIP6DSCP drops a packet.
const REASONS: &[&str] = &["not an IPv6 header"];
const NOT_IP6: u8 = 0;

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIP6DSCP", "1/1", "a", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIP6DSCP, String> {
    Ok(SetIP6DSCP {
        dscp: read_dscp(cx)?,
    })
}

impl Action for SetIP6DSCP {
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
        let Some(mut h) = fixed_ip6_header(p) else {
            return Verdict::DropFor(NOT_IP6);
        };
        let class = (self.dscp.load(Ordering::Relaxed) << 2) | (h.traffic_class() & 3);
        h.set_traffic_class(class);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn with_class(class: u8) -> Vec<u8> {
        let mut d = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1, 2, b"hello")
            .bytes();
        // Traffic class: the low nibble of byte 0 and the high nibble of byte 1.
        d[0] = 0x60 | (class >> 4);
        d[1] = (class << 4) | (d[1] & 0x0f);
        d
    }

    #[test]
    fn sets_dscp_keeps_ecn_and_flow_label() {
        let h = harness("SetIP6DSCP(46)", 1);
        let mut d = with_class(0x03);
        d[1] |= 0x0a; // flow label bits next to the traffic class
        d[3] = 0x77;
        h.push(0, vec![marked(&d)]);
        let out = h.output(0);
        let mut want = d.clone();
        let class = (46 << 2) | 3;
        want[0] = 0x60 | (class >> 4);
        want[1] = (class << 4) | 0x0a;
        assert_eq!(out[0].data(), &want[..]);
        assert!(upper_checksum_ok(out[0].data()));
    }

    #[test]
    fn handler_read_write() {
        let h = harness("SetIP6DSCP(DSCP 10)", 1);
        assert_eq!(h.read("dscp").unwrap(), "10");
        h.write("dscp", "63").unwrap();
        assert_err(
            h.write("dscp", "64"),
            "e.dscp: DSCP: expected integer 0..63, not 64",
        );
        h.push(0, vec![marked(&with_class(0xfe))]);
        assert_eq!(h.output(0)[0].data()[..2], with_class(0xfe)[..2]);
        h.write("dscp", "0").unwrap();
        h.push(0, vec![marked(&with_class(0xfd))]);
        assert_eq!(h.output(0)[0].data()[..2], with_class(0x01)[..2]);
    }

    #[test]
    fn unmarked_or_short_dropped_with_reason() {
        let h = harness("SetIP6DSCP(1)", 1);
        let d = with_class(0);
        h.push(0, vec![pkt(&d), marked(&d[..39])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("drop_reasons").unwrap(), "not an IPv6 header 2\n");
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("SetIP6DSCP", 1),
            "e :: SetIP6DSCP: missing mandatory DSCP argument",
        );
        assert_err(
            try_harness("SetIP6DSCP(64)", 1),
            "e :: SetIP6DSCP: DSCP: expected integer 0..63, not 64",
        );
    }
}
