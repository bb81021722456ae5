//! # DecIPTTL
//!
//! DecIPTTL([keywords ACTIVE, MULTICAST])
//!
//! Decrements the IP time-to-live, and sends expired packets aside.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects IP packets (with their network header annotation set). If the
//! TTL is 1 or 0 (the packet has expired), sends the packet unchanged to
//! output 1, or drops it if output 1 is not connected. Otherwise decrements
//! the TTL, updates the header checksum incrementally (RFC 1624), and sends
//! the packet to output 0. A packet without an IP header annotation, or with
//! fewer than 20 bytes of IP header, is dropped.
//!
//! Ordinarily output 1 is connected to an ICMP error generator.
//!
//! Keywords:
//! - `ACTIVE` (boolean, default true): if false, pass every packet through
//!   unchanged.
//! - `MULTICAST` (boolean, default true): if false, do not decrement the
//!   TTL of packets to multicast destinations (they still expire).
//!
//! Handlers:
//! - `drops` (read): expired packets seen.
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> dt :: DecIPTTL -> ...;
//!     dt[1] -> ICMPError(18.26.4.24, timeexceeded) -> ...;

use super::{fixed_ip_header, is_multicast};
use paraclick_runtime::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct DecIPTTL {
    active: AtomicBool,
    multicast: bool,
    drops: PerThreadCount,
    /// Whether output 1 (expired packets) is connected.
    expired_output: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("DecIPTTL", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

/// Why DecIPTTL drops a packet (its `drop_reasons`).
pub(crate) const REASONS: &[&str] = &["no IP header", "expired"];
pub(crate) const NO_HEADER: u8 = 0;
pub(crate) const EXPIRED: u8 = 1;

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<DecIPTTL, String> {
    let mut a = cx.args();
    let active = a.read("ACTIVE").unwrap_or(true);
    let multicast = a.read("MULTICAST").unwrap_or(true);
    a.complete()?;
    Ok(DecIPTTL {
        active: AtomicBool::new(active),
        multicast,
        drops: PerThreadCount::new(cx.nthreads),
        expired_output: cx.noutputs > 1,
    })
}

impl Action for DecIPTTL {
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
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::DropFor(NO_HEADER);
        };
        let ttl = h.ttl();
        if ttl <= 1 {
            self.drops.inc(cx.thread());
            return if self.expired_output {
                Verdict::Out(1)
            } else {
                Verdict::DropFor(EXPIRED)
            };
        }
        if self.multicast || !is_multicast(h.dst_addr()) {
            h.decrement_ttl();
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn decrements_and_updates_checksum() {
        let h = harness("DecIPTTL", 2);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .ttl(64)
            .payload(b"x")
            .bytes();
        h.push(0, vec![marked(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        // The builder computes the checksum in full.
        let want = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .ttl(63)
            .payload(b"x")
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(
            &out[0].data()[10..12],
            &ip_header_checksum(&want[..20]).to_be_bytes()
        );
    }

    #[test]
    fn ttl_1_and_0_expire_unchanged() {
        let h = harness("DecIPTTL", 2);
        let t1 = Ip::new("1.0.0.1", "2.0.0.2", 17).ttl(1).bytes();
        let t0 = Ip::new("1.0.0.1", "2.0.0.2", 17).ttl(0).bytes();
        let t2 = Ip::new("1.0.0.1", "2.0.0.2", 17).ttl(2).bytes();
        h.push(0, vec![marked(&t1), marked(&t0), marked(&t2)]);
        let exp = h.output(1);
        assert_eq!(exp.len(), 2);
        assert_eq!(exp[0].data(), &t1[..]);
        assert_eq!(exp[1].data(), &t0[..]);
        let ok = h.output(0);
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].data()[8], 1);
        assert!(ip_checksum_ok(ok[0].data()));
        assert_eq!(h.read("drops").unwrap(), "2");
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn expired_dropped_without_output_1() {
        let h = harness("DecIPTTL", 1);
        h.push(
            0,
            vec![marked(&Ip::new("1.0.0.1", "2.0.0.2", 17).ttl(1).bytes())],
        );
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.read("drop_reasons").unwrap(), "expired 1\n");
    }

    #[test]
    fn no_header_or_truncated_is_dropped() {
        let h = harness("DecIPTTL", 2);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        let mut short = marked(&d);
        short.take(1);
        h.push(0, vec![pkt(&d), short]);
        assert!(h.output(0).is_empty());
        assert!(h.output(1).is_empty());
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("drop_reasons").unwrap(), "no IP header 2\n");
    }

    #[test]
    fn options_fragments_and_multicast() {
        let h = harness("DecIPTTL(MULTICAST false)", 2);
        let opt = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .options(&[1, 1, 1, 0])
            .frag(0x2000 | 10)
            .ttl(9)
            .bytes();
        let mc = Ip::new("1.0.0.1", "224.0.0.9", 17).ttl(9).bytes();
        let mc1 = Ip::new("1.0.0.1", "224.0.0.9", 17).ttl(1).bytes();
        h.push(0, vec![marked(&opt), marked(&mc), marked(&mc1)]);
        let ok = h.output(0);
        assert_eq!(ok.len(), 2);
        let want = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .options(&[1, 1, 1, 0])
            .frag(0x2000 | 10)
            .ttl(8)
            .bytes();
        assert_eq!(ok[0].data(), &want[..]);
        assert_eq!(ok[1].data(), &mc[..], "multicast untouched");
        assert_eq!(h.output(1).len(), 1);
    }

    #[test]
    fn inactive_passes_everything() {
        let h = harness("DecIPTTL(ACTIVE false)", 2);
        let t1 = Ip::new("1.0.0.1", "2.0.0.2", 17).ttl(1).bytes();
        h.push(0, vec![marked(&t1)]);
        assert_eq!(h.output(0)[0].data(), &t1[..]);
        assert_eq!(h.read("active").unwrap(), "false");
        h.write("active", "true").unwrap();
        h.push(0, vec![marked(&t1)]);
        assert_eq!(h.output(1).len(), 1);
        assert_err(
            h.write("active", "maybe"),
            "e.active: expected boolean (true or false)",
        );
    }

    #[test]
    fn incremental_matches_full_recomputation() {
        let h = harness("DecIPTTL", 2);
        let mut rng = Rng::new(11);
        let mut sent = Vec::new();
        for _ in 0..3000 {
            let d = rng.datagram().bytes();
            sent.push(d.clone());
            h.push(0, vec![marked(&d)]);
        }
        let ok = h.output(0);
        let expired = h.output(1);
        assert_eq!(ok.len() + expired.len(), sent.len());
        let mut i = 0;
        for d in &sent {
            if d[8] <= 1 {
                continue;
            }
            let out = ok[i].data();
            i += 1;
            let hlen = usize::from(d[0] & 15) * 4;
            let mut want = d.clone();
            want[8] -= 1;
            let c = ip_header_checksum(&want[..hlen]);
            want[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(out, &want[..]);
        }
        assert_eq!(i, ok.len());
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("DecIPTTL(1)", 1),
            "e :: DecIPTTL: too many arguments ('1')",
        );
        assert_err(
            try_harness("DecIPTTL(ACTIVE x)", 1),
            "e :: DecIPTTL: ACTIVE: expected boolean (true or false)",
        );
    }
}
