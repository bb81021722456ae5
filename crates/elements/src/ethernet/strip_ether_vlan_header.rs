//! # StripEtherVLANHeader
//!
//! StripEtherVLANHeader(\[NATIVE_VLAN])
//!
//! Strips an Ethernet header, 802.1Q tag and all, keeping the tag in the
//! VLAN TCI annotation.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Checks each packet's outermost Ethernet type. If it is 0x8100 (an
//! 802.1Q tag), sets the packet's VLAN TCI annotation to the tag's control
//! information and removes the 18-byte tagged header. Otherwise the packet
//! is untagged: its VLAN TCI annotation is set to NATIVE_VLAN and the
//! 14-byte Ethernet header is removed. If NATIVE_VLAN is negative, untagged
//! packets are not accepted: they leave unchanged on output 1 if it is
//! connected, and are dropped otherwise. Packets too short for their
//! header are dropped. The MAC header annotation keeps pointing at the
//! removed header.
//!
//! Arguments:
//! - `NATIVE_VLAN` (integer -1 to 4095, default 0): the VLAN of untagged
//!   packets; negative: refuse them.
//!
//! Example:
//!
//!     FromDevice(eth0) -> StripEtherVLANHeader(-1) -> CheckIPHeader -> ...

use paraclick_runtime::prelude::*;

/// Why StripEtherVLANHeader drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["too short", "not 802.1Q"];
const SHORT: u8 = 0;
const UNTAGGED: u8 = 1;

pub struct StripEtherVLANHeader {
    /// `None`: untagged packets refused.
    native: Option<u16>,
    /// Output 1 is connected.
    reject_port: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("StripEtherVLANHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
        // 14 bytes, or 18 from a tagged frame.
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StripEtherVLANHeader, String> {
    let mut a = cx.args();
    let native = a.read_p::<i32>("NATIVE_VLAN").unwrap_or(0);
    a.complete()?;
    if native > 0xFFF {
        return Err(format!("NATIVE_VLAN: expected at most 4095, not {native}"));
    }
    Ok(StripEtherVLANHeader {
        native: u16::try_from(native).ok(),
        reject_port: cx.noutputs >= 2,
    })
}

impl Action for StripEtherVLANHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let d = p.data();
        if d.len() < 14 {
            return Verdict::DropFor(SHORT);
        }
        let (hlen, tci) = if u16::from_be_bytes([d[12], d[13]]) == 0x8100 {
            if d.len() < 18 {
                return Verdict::DropFor(SHORT);
            }
            (18, u16::from_be_bytes([d[14], d[15]]))
        } else {
            match self.native {
                Some(n) => (14, n),
                None if self.reject_port => return Verdict::Out(1),
                None => return Verdict::DropFor(UNTAGGED),
            }
        };
        p.set_mac_header(0);
        p.pull(hlen);
        p.anno_mut().vlan_tci = tci;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    const PAYLOAD: [u8; 4] = [0xAA, 0xAB, 0xAC, 0xAD];

    fn untagged() -> Vec<u8> {
        ether_frame(eth("2:2:2:2:2:2"), eth("1:1:1:1:1:1"), 0x0800, &PAYLOAD)
    }

    fn tagged(tpid: u16, tci: u16) -> Vec<u8> {
        let mut f = untagged();
        let tag: Vec<u8> = [tpid.to_be_bytes(), tci.to_be_bytes()].concat();
        f.splice(12..12, tag);
        f
    }

    #[test]
    fn strips_tagged_and_untagged_headers() {
        let h = harness("StripEtherVLANHeader", 1);
        h.push(0, vec![pkt(&tagged(0x8100, 0x2005)), pkt(&untagged())]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &PAYLOAD);
        assert_eq!(out[0].anno().vlan_tci, 0x2005);
        assert_eq!(out[0].mac_header_offset(), Some(-18));
        assert_eq!(out[1].data(), &PAYLOAD);
        assert_eq!(out[1].anno().vlan_tci, 0, "native VLAN 0 by default");

        let h = harness("StripEtherVLANHeader(7)", 1);
        // 802.1ad's 0x88A8 is not 802.1Q: the packet is untagged.
        h.push(0, vec![pkt(&untagged()), pkt(&tagged(0x88A8, 3))]);
        let out = h.output(0);
        assert_eq!(out[0].anno().vlan_tci, 7);
        assert_eq!(out[1].data().len(), 8);
        assert_eq!(out[1].anno().vlan_tci, 7);
    }

    #[test]
    fn negative_native_vlan_refuses_untagged_packets() {
        let h = harness("StripEtherVLANHeader(-1)", 2);
        h.push(0, vec![pkt(&untagged()), pkt(&tagged(0x8100, 9))]);
        assert_eq!(h.output(0).len(), 1);
        let rej = h.output(1);
        assert_eq!(rej.len(), 1);
        assert_eq!(rej[0].data(), &untagged()[..], "refused packets unchanged");

        let h = harness("StripEtherVLANHeader(-1)", 1);
        h.push(
            0,
            vec![
                pkt(&untagged()),
                pkt(&[0; 10]),
                pkt(&tagged(0x8100, 9)[..16]),
            ],
        );
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 3);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "too short 2\nnot 802.1Q 1\n"
        );
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("StripEtherVLANHeader(4096)", 1),
            "NATIVE_VLAN: expected at most 4095, not 4096",
        );
        assert_err(
            try_harness("StripEtherVLANHeader(x)", 1),
            "NATIVE_VLAN: expected integer",
        );
    }
}
