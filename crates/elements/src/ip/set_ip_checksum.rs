//! # SetIPChecksum
//!
//! SetIPChecksum()
//!
//! Sets IP packets' header checksums.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets (with their network header annotation set).
//! Calculates the IP header's checksum over the header length its IHL field
//! gives, and stores it in the checksum field. A packet without an IP
//! header annotation, with a header length below 20, or with a header
//! longer than the packet is dropped (counted; a message is printed the
//! first time).
//!
//! You will not normally need SetIPChecksum: elements that modify an IP
//! header, like DecIPTTL and SetIPDSCP, update the checksum incrementally.
//!
//! Handlers:
//! - `drops` (read): packets dropped as malformed.
//!
//! Example:
//!
//!     ... -> StoreIPAddress(10.0.0.1, 12) -> SetIPChecksum -> ...;

use super::{warn_once, IP_MIN_HLEN};
use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::sync::atomic::AtomicBool;

pub struct SetIPChecksum {
    drops: PerThreadCount,
    warned: AtomicBool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["bad IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIPChecksum", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIPChecksum, String> {
    cx.args().complete()?;
    Ok(SetIPChecksum {
        drops: PerThreadCount::new(cx.nthreads),
        warned: AtomicBool::new(false),
    })
}

impl Action for SetIPChecksum {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let header = p.network_header_mut().and_then(|nh| {
            let hlen = usize::from(*nh.first()? & 0x0f) * 4;
            if hlen < IP_MIN_HLEN {
                return None;
            }
            nh.get_mut(..hlen)
        });
        match header {
            Some(bytes) => {
                // The view is exactly the header: fill_checksum sums it all.
                Ipv4Header::new_unchecked(bytes).fill_checksum();
                Verdict::Out(0)
            }
            None => {
                self.drops.inc(cx.thread());
                warn_once(&self.warned, cx, "bad input packet");
                Verdict::DropFor(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn sets_checksum_with_options() {
        let h = harness("SetIPChecksum", 1);
        let good = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .options(&[1, 1, 1, 1, 1, 1, 1, 0])
            .payload(b"data")
            .bytes();
        let mut bad = good.clone();
        bad[10] = 0xde;
        bad[11] = 0xad;
        h.push(0, vec![marked(&bad)]);
        assert_eq!(h.output(0)[0].data(), &good[..]);
    }

    #[test]
    fn header_only_no_total_length_check() {
        // The total length field is not the element's business.
        let h = harness("SetIPChecksum", 1);
        let mut d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        d[2] = 0xff;
        h.push(0, vec![marked(&d)]);
        assert!(ip_checksum_ok(h.output(0)[0].data()));
    }

    #[test]
    fn malformed_dropped() {
        let h = harness("SetIPChecksum", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .options(&[1, 1, 1, 1])
            .bytes();
        let mut ihl4 = d.clone();
        ihl4[0] = 0x44;
        h.push(
            0,
            vec![
                pkt(&d),
                marked(&d[..23]),
                marked(&ihl4),
                pkt(&[]),
                marked(&d),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 4);
        assert_eq!(h.read("drops").unwrap(), "4");
    }
}
