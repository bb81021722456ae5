//! # DropBroadcasts
//!
//! DropBroadcasts
//!
//! Drops link-level broadcast and multicast packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Drops packets that arrived as link-level broadcasts or multicasts, as
//! the packet type annotation (set by FromDevice and HostEtherFilter) says:
//! they leave on output 1 if it is connected, and are dropped otherwise.
//! Other packets go to output 0. Used to implement the requirement that IP
//! routers not forward link-level broadcasts (RFC 1812 5.3.4).
//!
//! Handlers:
//! - `drops` (read): broadcast and multicast packets seen.
//!
//! Example:
//!
//!     FromDevice(eth0) -> ... -> Strip(14) -> CheckIPHeader -> DropBroadcasts -> ...;

use paraclick_packet::{Packet, PacketType};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};

pub struct DropBroadcasts {
    drops: PerThreadCount,
    error_out: Verdict,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["link-level broadcast"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("DropBroadcasts", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<DropBroadcasts, String> {
    cx.args().complete()?;
    Ok(DropBroadcasts {
        drops: PerThreadCount::new(cx.nthreads),
        error_out: if cx.noutputs >= 2 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

impl Action for DropBroadcasts {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.anno().packet_type {
            PacketType::Broadcast | PacketType::Multicast => {
                self.drops.inc(cx.thread());
                self.error_out
            }
            _ => Verdict::Out(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::{Packet, PacketType};

    fn typed(tag: u8, t: PacketType) -> Packet {
        let mut p = pkt(&[tag, 0x45]);
        p.anno_mut().packet_type = t;
        p
    }

    fn all() -> Vec<Packet> {
        vec![
            typed(0, PacketType::Host),
            typed(1, PacketType::Broadcast),
            typed(2, PacketType::Multicast),
            typed(3, PacketType::OtherHost),
            typed(4, PacketType::Outgoing),
        ]
    }

    #[test]
    fn splits_on_packet_type() {
        let h = harness("DropBroadcasts", 2);
        h.push(0, all());
        assert_eq!(tags(&h.output(0)), [0, 3, 4]);
        assert_eq!(tags(&h.output(1)), [1, 2]);
        assert_eq!(h.read("drops").unwrap(), "2");
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn drops_without_output_1() {
        let h = harness("DropBroadcasts()", 1);
        h.push(0, all());
        assert_eq!(tags(&h.output(0)), [0, 3, 4]);
        assert_eq!(h.drops(), 2);
        assert_err(
            try_harness("DropBroadcasts(1)", 1),
            "e :: DropBroadcasts: too many arguments ('1')",
        );
    }
}
