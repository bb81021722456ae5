//! # VLANEncap
//!
//! VLANEncap([VLAN_TCI, VLAN_PCP], keywords VLAN_ID, VLAN_PCP, ETHERTYPE, NATIVE_VLAN)
//!
//! Pushes an 802.1Q header onto Ethernet packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Inserts a 4-byte VLAN tag after the Ethernet destination and source
//! addresses: ETHERTYPE (the tag protocol identifier, default 0x8100)
//! followed by the tag control information, the 3-bit priority VLAN_PCP
//! and the 12-bit VLAN_ID. The packet's original Ethernet type follows
//! the tag. The VLAN TCI annotation is set to the tag's TCI and the MAC
//! header annotation to the start of the packet.
//!
//! VLAN_TCI (or VLAN_ID) may be `ANNO`: the tag then takes the packet's
//! VLAN TCI annotation. Without VLAN_TCI or VLAN_ID the tag is VLAN 0
//! (with VLAN_PCP), as in Click. If the VLAN ID equals NATIVE_VLAN
//! (default 0; -1 for none), the packet leaves untagged, as on a trunk's
//! native VLAN: so by default packets of VLAN 0 are not tagged. Packets
//! shorter than an Ethernet header are dropped.
//!
//! Arguments:
//! - `VLAN_TCI` (integer 0-65535, or `ANNO`): the whole tag control field.
//! - `VLAN_ID` (integer 0-4095, or `ANNO`), `VLAN_PCP` (integer 0-7,
//!   default 0): the tag as its parts.
//! - `ETHERTYPE` (integer, default 0x8100).
//! - `NATIVE_VLAN` (integer -1-4095, default 0; -1: none).
//!
//! Handlers: `vlan_tci`, `vlan_id`, `vlan_pcp` (read).
//!
//! Example:
//!
//!     ... -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> VLANEncap(VLAN_ID 12, VLAN_PCP 3) -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct VLANEncap {
    /// `None`: from the annotation.
    tci: Option<u16>,
    ethertype: u16,
    /// `None`: no native VLAN.
    native: Option<u16>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short", "no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("VLANEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn num_or_anno(s: &str, max: u32, what: &str) -> Result<Option<u16>, String> {
    if s == "ANNO" {
        return Ok(None);
    }
    let v = if let Some(h) = s.strip_prefix("0x") {
        u32::from_str_radix(h, 16).ok()
    } else {
        s.parse::<u32>().ok()
    };
    match v {
        Some(v) if v <= max => Ok(Some(v as u16)),
        _ => Err(format!(
            "{what}: expected integer 0-{max} or ANNO, not '{s}'"
        )),
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<VLANEncap, String> {
    let mut a = cx.args();
    let tci = a.read_p::<String>("VLAN_TCI");
    let pcp_p = a.read_p::<u8>("VLAN_PCP");
    let id = a.read::<String>("VLAN_ID");
    let ethertype = a.read::<u16>("ETHERTYPE").unwrap_or(0x8100);
    let native = a.read::<i32>("NATIVE_VLAN").unwrap_or(0);
    a.complete()?;
    let pcp = pcp_p.unwrap_or(0);
    if pcp > 7 {
        return Err(format!("VLAN_PCP: expected 0-7, not {pcp}"));
    }
    if !(-1..=4095).contains(&native) {
        return Err(format!("NATIVE_VLAN: expected -1-4095, not {native}"));
    }
    let native = u16::try_from(native).ok();
    let tci = match (tci, id) {
        (Some(_), Some(_)) => return Err("VLAN_TCI and VLAN_ID are mutually exclusive".into()),
        (Some(t), None) => {
            let t = num_or_anno(&t, 0xFFFF, "VLAN_TCI")?;
            match (t, pcp_p) {
                (Some(t), Some(p)) => Some((t & 0x1FFF) | (u16::from(p) << 13)),
                (t, _) => t,
            }
        }
        (None, Some(i)) => num_or_anno(&i, 4095, "VLAN_ID")?.map(|i| i | (u16::from(pcp) << 13)),
        (None, None) => Some(u16::from(pcp) << 13),
    };
    Ok(VLANEncap {
        tci,
        ethertype,
        native,
    })
}

impl Action for VLANEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("vlan_tci", |e, _| {
            e.tci.map_or("ANNO".into(), |t| t.to_string())
        }),
        Handler::read("vlan_id", |e, _| {
            e.tci.map_or("ANNO".into(), |t| (t & 0x0FFF).to_string())
        }),
        Handler::read("vlan_pcp", |e, _| {
            e.tci.map_or("ANNO".into(), |t| (t >> 13).to_string())
        }),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < 14 {
            return Verdict::DropFor(0);
        }
        let tci = self.tci.unwrap_or(p.anno().vlan_tci);
        p.anno_mut().vlan_tci = tci;
        if self.native == Some(tci & 0x0FFF) {
            return Verdict::Out(0);
        }
        if p.push(4).is_err() {
            return Verdict::DropFor(1);
        }
        let d = p.data_mut();
        d.copy_within(4..16, 0);
        d[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
        d[14..16].copy_from_slice(&tci.to_be_bytes());
        p.set_mac_header(0);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn frame() -> Vec<u8> {
        let mut f = vec![1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0x08, 0x00];
        f.extend_from_slice(b"payload");
        f
    }

    #[test]
    fn tags_after_the_addresses() {
        let h = harness("VLANEncap(VLAN_ID 12, VLAN_PCP 3)", 1);
        h.push(0, vec![pkt(&frame()), pkt(&[0; 10])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1, "a runt is dropped");
        let d = out[0].data();
        assert_eq!(&d[..12], &frame()[..12]);
        assert_eq!(&d[12..16], &[0x81, 0x00, 0x60, 0x0C]);
        assert_eq!(&d[16..], &frame()[12..]);
        assert_eq!(out[0].anno().vlan_tci, 0x600C);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("vlan_id").unwrap(), "12");
        assert_eq!(h.read("vlan_pcp").unwrap(), "3");
    }

    #[test]
    fn vlan_0_is_native_by_default_and_the_default_tag() {
        // No VLAN argument: VLAN 0, which is the native VLAN by default,
        // so the packet leaves untagged whatever its annotation says.
        let h = harness("VLANEncap", 1);
        let mut p = pkt(&frame());
        p.anno_mut().vlan_tci = 9;
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].data(), &frame()[..]);
        let h = harness("VLANEncap(VLAN_PCP 3, NATIVE_VLAN -1)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(&h.output(0)[0].data()[12..16], &[0x81, 0x00, 0x60, 0x00]);
        let h = harness("VLANEncap(0x2000)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(
            h.output(0)[0].data(),
            &frame()[..],
            "VLAN 0 with a priority"
        );
    }

    #[test]
    fn tci_anno_ethertype_and_native_vlan() {
        let h = harness("VLANEncap(0x2005, ETHERTYPE 0x88a8)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(&h.output(0)[0].data()[12..16], &[0x88, 0xa8, 0x20, 0x05]);

        let h = harness("VLANEncap(ANNO)", 1);
        let mut p = pkt(&frame());
        p.anno_mut().vlan_tci = 7;
        h.push(0, vec![p]);
        assert_eq!(&h.output(0)[0].data()[12..16], &[0x81, 0x00, 0, 7]);

        let h = harness("VLANEncap(VLAN_ID 5, NATIVE_VLAN 5)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(h.output(0)[0].data(), &frame()[..], "native VLAN: untagged");

        for (bad, want) in [
            (
                "VLANEncap(NATIVE_VLAN -2)",
                "e :: VLANEncap: NATIVE_VLAN: expected -1-4095, not -2",
            ),
            (
                "VLANEncap(VLAN_ID 4096)",
                "e :: VLANEncap: VLAN_ID: expected integer 0-4095 or ANNO, not '4096'",
            ),
            (
                "VLANEncap(1, VLAN_ID 2)",
                "e :: VLANEncap: VLAN_TCI and VLAN_ID are mutually exclusive",
            ),
            (
                "VLANEncap(VLAN_ID 1, VLAN_PCP 8)",
                "e :: VLANEncap: VLAN_PCP: expected 0-7, not 8",
            ),
            (
                "VLANEncap(x)",
                "e :: VLANEncap: VLAN_TCI: expected integer 0-65535 or ANNO, not 'x'",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
