//! # MarkIPCE
//!
//! MarkIPCE(\[FORCE])
//!
//! Sets IP packets' ECN field to Congestion Experienced.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets (with their network header annotation set). Sets each
//! packet's ECN field (the low 2 bits of the TOS byte) to Congestion
//! Experienced (3), updates the IP checksum incrementally, and passes the
//! packet to output 0. Packets whose ECN field is zero (not ECN-capable)
//! are dropped unless FORCE is true. A packet without an IP header
//! annotation, or with fewer than 20 bytes of IP header, is dropped.
//!
//! Arguments:
//! - `FORCE` (boolean, default false): mark packets that are not
//!   ECN-capable too.
//!
//! Handlers:
//! - `drops` (read): packets dropped for not being ECN-capable (or not IP).
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> MarkIPCE -> ...;

use super::fixed_ip_header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};

pub struct MarkIPCE {
    force: bool,
    drops: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IP header", "not ECN-capable"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("MarkIPCE", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MarkIPCE, String> {
    let mut a = cx.args();
    let force = a.read_p::<bool>("FORCE").unwrap_or(false);
    a.complete()?;
    Ok(MarkIPCE {
        force,
        drops: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for MarkIPCE {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(mut h) = fixed_ip_header(p) else {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(0);
        };
        let tos = h.tos();
        match tos & 3 {
            3 => {}
            0 if !self.force => {
                self.drops.inc(cx.thread());
                return Verdict::DropFor(1);
            }
            _ => h.update_tos(tos | 3),
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn with_ecn(ecn: u8) -> Vec<u8> {
        Ip::new("1.0.0.1", "2.0.0.2", 9).tos(0xb8 | ecn).bytes()
    }

    #[test]
    fn marks_ect_drops_not_ect() {
        let h = harness("MarkIPCE", 1);
        h.push(
            0,
            vec![
                marked(&with_ecn(0)),
                marked(&with_ecn(1)),
                marked(&with_ecn(2)),
                marked(&with_ecn(3)),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        for p in &out {
            assert_eq!(p.data(), &with_ecn(3)[..]);
        }
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drops").unwrap(), "1");
    }

    #[test]
    fn force_marks_everything() {
        let h = harness("MarkIPCE(true)", 1);
        h.push(0, vec![marked(&with_ecn(0)), marked(&with_ecn(2))]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &with_ecn(3)[..]);
        assert_eq!(out[1].data(), &with_ecn(3)[..]);
        let h = harness("MarkIPCE(FORCE true)", 1);
        h.push(0, vec![marked(&with_ecn(0)), pkt(&with_ecn(1))]);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 1, "no IP header annotation");
    }

    #[test]
    fn incremental_matches_full_recomputation() {
        let h = harness("MarkIPCE(FORCE true)", 1);
        let mut rng = Rng::new(31);
        for _ in 0..2000 {
            let d = rng.datagram().bytes();
            h.push(0, vec![marked(&d)]);
            let hlen = usize::from(d[0] & 15) * 4;
            let mut want = d.clone();
            want[1] |= 3;
            let c = ip_header_checksum(&want[..hlen]);
            want[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(h.output(0)[0].data(), &want[..]);
        }
    }
}
