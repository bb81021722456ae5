//! # GetIP6Address
//!
//! GetIP6Address(OFFSET)
//!
//! Sets the IPv6 destination annotation from packet data.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Copies the 16 bytes at OFFSET in the packet into the destination IPv6
//! address annotation (`DST_IP6`). OFFSET 24 is the destination field of
//! an IPv6 header at the start of the packet. A packet shorter than
//! OFFSET + 16 bytes is dropped.
//!
//! Example:
//!
//!     ... -> CheckIP6Header -> GetIP6Address(24) -> LookupIP6Route(...);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv6Addr;

pub struct GetIP6Address {
    offset: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("GetIP6Address", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<GetIP6Address, String> {
    let mut a = cx.args();
    // A packet offset (u16): 2^64-1 overflowed OFFSET + 16 per packet.
    let offset = usize::from(a.read_mp::<u16>("OFFSET"));
    a.complete()?;
    Ok(GetIP6Address { offset })
}

impl Action for GetIP6Address {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(b) = p.data().get(self.offset..self.offset + 16) else {
            return Verdict::DropFor(0);
        };
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        p.anno_mut().set_dst_ip6(Ipv6Addr::from(a));
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn copies_destination() {
        let h = harness("GetIP6Address(24)", 1);
        let d = Ip6::new("2001:db8::1", "2001:db8::2", 59).bytes();
        h.push(0, vec![pkt(&d), pkt(&d[..39])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().dst_ip6(), a6("2001:db8::2"));
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("GetIP6Address", 1),
            "e :: GetIP6Address: missing mandatory OFFSET argument",
        );
        // 2^64-1 overflowed OFFSET + 16 on the first packet.
        assert_err(
            try_harness("GetIP6Address(18446744073709551615)", 1),
            "e :: GetIP6Address: OFFSET: 18446744073709551615 out of range",
        );
    }
}
