//! # VLANDecap
//!
//! VLANDecap(\[ANNO], keywords ANNO, ETHERTYPE)
//!
//! Strips an 802.1Q header from Ethernet packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! If a packet's Ethernet type is ETHERTYPE (a VLAN tag: 0x8100 by
//! default, 802.1Q customer VLANs), removes
//! the 4-byte tag that follows the addresses, so the packet's own
//! Ethernet type follows them again. If ANNO is true (the default), the
//! tag's control information goes to the VLAN TCI annotation; untagged
//! packets then get a TCI annotation of 0. Untagged packets otherwise
//! pass unchanged. Packets shorter than an Ethernet header are dropped.
//!
//! Arguments:
//! - `ANNO` (boolean, default true).
//! - `ETHERTYPE` (integer, default 0x8100): the Ethernet type that marks a
//!   tag; 0x88A8 strips 802.1ad service tags (QinQ), 0x9100 the old
//!   non-standard ones. Other types pass as untagged.
//!
//! Example:
//!
//!     FromDevice(eth0) -> VLANDecap -> Classifier(12/0800, -) -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct VLANDecap {
    anno: bool,
    ethertype: u16,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("VLANDecap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        // 4 bytes from a tagged frame, none from an untagged one.
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<VLANDecap, String> {
    let mut a = cx.args();
    let anno = a.read_p::<bool>("ANNO").unwrap_or(true);
    let ethertype = a.read::<u16>("ETHERTYPE").unwrap_or(0x8100);
    a.complete()?;
    Ok(VLANDecap { anno, ethertype })
}

impl Action for VLANDecap {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < 14 {
            return Verdict::DropFor(0);
        }
        let d = p.data();
        let tpid = u16::from_be_bytes([d[12], d[13]]);
        let tci = if tpid == self.ethertype && d.len() >= 18 {
            let tci = u16::from_be_bytes([d[14], d[15]]);
            p.data_mut().copy_within(0..12, 4);
            p.pull(4);
            p.set_mac_header(0);
            tci
        } else {
            0
        };
        if self.anno {
            p.anno_mut().vlan_tci = tci;
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn strips_the_tag_and_keeps_its_tci() {
        let untagged: Vec<u8> = [[1u8; 6], [2u8; 6]]
            .concat()
            .into_iter()
            .chain([0x08, 0x00, 0xAA, 0xBB])
            .collect();
        let mut tagged = untagged[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x60, 0x0C]);
        tagged.extend_from_slice(&untagged[12..]);
        let h = harness("VLANDecap", 1);
        h.push(0, vec![pkt(&tagged), pkt(&untagged), pkt(&[0; 6])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &untagged[..]);
        assert_eq!(out[0].anno().vlan_tci, 0x600C);
        assert_eq!(out[1].data(), &untagged[..]);
        assert_eq!(out[1].anno().vlan_tci, 0);
        assert_eq!(h.drops(), 1);

        let h = harness("VLANDecap(false)", 1);
        let mut p = pkt(&tagged);
        p.anno_mut().vlan_tci = 99;
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &untagged[..]);
        assert_eq!(
            out[0].anno().vlan_tci,
            99,
            "ANNO false leaves the annotation"
        );

        // Encap then decap is the identity.
        let enc = harness("VLANEncap(VLAN_ID 7)", 1);
        enc.push(0, vec![pkt(&untagged)]);
        let h = harness("VLANDecap", 1);
        h.push(0, enc.output(0));
        let out = h.output(0);
        assert_eq!(out[0].data(), &untagged[..]);
        assert_eq!(out[0].anno().vlan_tci, 7);
    }

    #[test]
    fn ethertype_chooses_which_tags_are_stripped() {
        let inner: Vec<u8> = [[1u8; 6], [2u8; 6]]
            .concat()
            .into_iter()
            .chain([0x08, 0x00, 0xAA])
            .collect();
        let mut qinq = inner[..12].to_vec();
        qinq.extend_from_slice(&[0x88, 0xA8, 0x12, 0x34]);
        qinq.extend_from_slice(&inner[12..]);
        let h = harness("VLANDecap", 1);
        h.push(0, vec![pkt(&qinq)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &qinq[..], "0x88A8 is not 802.1Q");
        assert_eq!(out[0].anno().vlan_tci, 0);
        let h = harness("VLANDecap(ETHERTYPE 0x88a8)", 1);
        h.push(0, vec![pkt(&qinq)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &inner[..]);
        assert_eq!(out[0].anno().vlan_tci, 0x1234);
    }
}
