//! # DecIP6HLIM
//!
//! DecIP6HLIM([keywords ACTIVE])
//!
//! Decrements the IPv6 hop limit, and sends expired packets aside.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects IPv6 packets with their network header annotation set. If the
//! hop limit is 1 or 0 (RFC 8200 §3: a router must not forward it), sends
//! the packet unchanged to output 1, or drops it if output 1 is not
//! connected. Otherwise decrements the hop limit (IPv6 has no header
//! checksum to update) and sends the packet to output 0. A packet without
//! a 40-byte IPv6 header at its annotation is dropped.
//!
//! Ordinarily output 1 is connected to an ICMP6Error generator
//! (`timeexceeded`).
//!
//! Keywords:
//! - `ACTIVE` (boolean, default true): if false, pass every packet
//!   through unchanged.
//!
//! Handlers:
//! - `drops` (read): expired packets seen.
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     dh :: DecIP6HLIM;
//!     dh[1] -> ICMP6Error(2001:db8::1, timeexceeded, 0) -> rt;

use super::fixed_ip6_header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct DecIP6HLIM {
    active: AtomicBool,
    drops: PerThreadCount,
    /// Whether output 1 (expired packets) is connected.
    expired_output: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("DecIP6HLIM", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

/// Why DecIP6HLIM drops a packet (its `drop_reasons`).
const REASONS: &[&str] = &["no IPv6 header", "expired"];
const NO_HEADER: u8 = 0;
const EXPIRED: u8 = 1;

fn make(cx: &mut ConfigCx<'_>) -> Result<DecIP6HLIM, String> {
    let mut a = cx.args();
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    a.complete()?;
    Ok(DecIP6HLIM {
        active: AtomicBool::new(active),
        drops: PerThreadCount::new(cx.nthreads),
        expired_output: cx.noutputs > 1,
    })
}

impl Action for DecIP6HLIM {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if !self.active.load(Ordering::Relaxed) {
            return Verdict::Out(0);
        }
        let Some(mut h) = fixed_ip6_header(p) else {
            return Verdict::DropFor(NO_HEADER);
        };
        let hl = h.hop_limit();
        if hl <= 1 {
            self.drops.inc(cx.thread());
            return if self.expired_output {
                Verdict::Out(1)
            } else {
                Verdict::DropFor(EXPIRED)
            };
        }
        h.set_hop_limit(hl - 1);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn decrements_and_expires() {
        let h = harness("DecIP6HLIM", 2);
        let d = Ip6::new("::1", "::2", 59).hlim(64).bytes();
        let e1 = Ip6::new("::1", "::2", 59).hlim(1).bytes();
        let e0 = Ip6::new("::1", "::2", 59).hlim(0).bytes();
        h.push(
            0,
            vec![
                marked(&d),
                marked(&e1),
                marked(&e0),
                pkt(&d),
                marked(&d[..30]),
            ],
        );
        let ok = h.output(0);
        assert_eq!(ok.len(), 1);
        assert_eq!(
            ok[0].data(),
            &Ip6::new("::1", "::2", 59).hlim(63).bytes()[..]
        );
        let exp = h.output(1);
        assert_eq!(exp.len(), 2);
        assert_eq!(exp[0].data(), &e1[..]);
        assert_eq!(h.read("drops").unwrap(), "2");
        assert_eq!(h.drops(), 2, "no annotation, truncated");
        h.write("active", "false").unwrap();
        h.push(0, vec![marked(&e1)]);
        assert_eq!(h.output(0).len(), 1);
        assert_err(
            h.write("active", "x"),
            "e.active: expected boolean (true or false)",
        );
        assert_err(
            try_harness("DecIP6HLIM(3)", 1),
            "e :: DecIP6HLIM: too many arguments ('3')",
        );
    }
}
