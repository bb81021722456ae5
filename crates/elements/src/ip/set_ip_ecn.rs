//! # SetIPECN
//!
//! SetIPECN(ECN)
//!
//! Sets the IP ECN field.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets with the IP header annotation set. Sets the two ECN
//! bits of the TOS byte to ECN and updates the header checksum; the DSCP
//! bits are unchanged. A packet without an IP header annotation is
//! dropped (counted).
//!
//! Arguments:
//! - `ECN` (mandatory): 0 to 3, or one of `no` (0), `ect1` (1), `ect2`
//!   (2), `ce` (3).
//!
//! Handlers:
//! - `ecn` (read/write): the ECN value, as a number.
//!
//! Example:
//!
//!     ... -> SetIPECN(ce) -> ...

use super::fixed_ip_header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU8, Ordering};

pub struct SetIPECN {
    ecn: AtomicU8,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIPECN", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn parse_ecn(s: &str) -> Result<u8, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "no" | "0" => Ok(0),
        "ect1" | "1" => Ok(1),
        "ect2" | "2" => Ok(2),
        "ce" | "3" => Ok(3),
        other => Err(format!(
            "ECN: expected 0..3, no, ect1, ect2 or ce, not '{other}'"
        )),
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIPECN, String> {
    let mut a = cx.args();
    let v = a.read_mp::<String>("ECN");
    let ecn = parse_ecn(&v).unwrap_or_else(|e| {
        a.error(e);
        0
    });
    a.complete()?;
    Ok(SetIPECN {
        ecn: AtomicU8::new(ecn),
    })
}

impl Action for SetIPECN {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "ecn",
        |e, _| e.ecn.load(Ordering::Relaxed).to_string(),
        |e, v, _| {
            e.ecn.store(parse_ecn(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::DropFor(0);
        };
        let tos = (h.tos() & !3) | self.ecn.load(Ordering::Relaxed);
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
    fn sets_ecn_keeps_dscp_and_checksum_right() {
        for (arg, v) in [("ce", 3u8), ("ect1", 1), ("2", 2), ("no", 0)] {
            let h = harness(&format!("SetIPECN({arg})"), 1);
            let d = Ip::new("1.0.0.1", "2.0.0.2", 17)
                .tos((46 << 2) | 1)
                .payload(b"x")
                .bytes();
            h.push(0, vec![marked(&d)]);
            let want = Ip::new("1.0.0.1", "2.0.0.2", 17)
                .tos((46 << 2) | v)
                .payload(b"x")
                .bytes();
            assert_eq!(h.output(0)[0].data(), &want[..], "{arg}");
            assert_eq!(h.read("ecn").unwrap(), v.to_string());
        }
    }

    #[test]
    fn handler_bad_config_and_no_header() {
        let h = harness("SetIPECN(no)", 1);
        h.write("ecn", "ce").unwrap();
        assert_eq!(h.read("ecn").unwrap(), "3");
        assert_err(
            h.write("ecn", "4"),
            "e.ecn: ECN: expected 0..3, no, ect1, ect2 or ce, not '4'",
        );
        h.push(0, vec![pkt(&[0x45; 20])]);
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("SetIPECN(4)", 1),
            "e :: SetIPECN: ECN: expected 0..3, no, ect1, ect2 or ce, not '4'",
        );
        assert_err(try_harness("SetIPECN", 1), "e :: SetIPECN: missing mandatory ECN argument; e :: SetIPECN: ECN: expected 0..3, no, ect1, ect2 or ce, not ''");
        assert_err(
            try_harness("SetIPECN(ecn)", 1),
            "e :: SetIPECN: ECN: expected 0..3, no, ect1, ect2 or ce, not 'ecn'",
        );
    }
}
