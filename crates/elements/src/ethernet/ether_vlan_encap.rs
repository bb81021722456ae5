//! # EtherVLANEncap
//!
//! EtherVLANEncap(ETHERTYPE, SRC, DST, VLAN_TCI [, VLAN_PCP], keywords VLAN_ID, VLAN_PCP, NATIVE_VLAN)
//!
//! Encapsulates packets in an 802.1Q VLAN Ethernet header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends to each packet the 18-byte 802.1Q header its arguments
//! specify: DST, SRC, the type 0x8100, the tag control information (the
//! 3-bit priority VLAN_PCP and the 12-bit VLAN ID), then the encapsulated
//! Ethernet type ETHERTYPE (in host order). The MAC header annotation is
//! set to the new header and the VLAN TCI annotation to the TCI.
//!
//! VLAN_TCI is the whole 16-bit TCI, or `ANNO`: the TCI is then read from
//! each packet's VLAN TCI annotation. Instead you may give VLAN_ID (0 to
//! 0xFFF, or `ANNO`) and VLAN_PCP as keywords; exactly one of VLAN_TCI and
//! VLAN_ID must be set. If the packet's VLAN ID equals NATIVE_VLAN, the
//! packet is encapsulated in a conventional 14-byte Ethernet header
//! instead. A packet that no buffer can grow to hold the header is
//! dropped.
//!
//! Arguments:
//! - `ETHERTYPE` (integer, 0 to 0xFFFF): the encapsulated Ethernet type.
//! - `SRC`, `DST` (Ethernet addresses).
//! - `VLAN_TCI` (integer 0 to 0xFFFF, or `ANNO`).
//! - `VLAN_ID` (integer 0 to 0xFFF, or `ANNO`).
//! - `VLAN_PCP` (integer 0 to 7, default 0): the priority code point.
//! - `NATIVE_VLAN` (integer -1 to 0xFFF, default 0): the native VLAN; -1
//!   for none.
//!
//! Handlers:
//! - `src`, `dst` (read/write): the SRC and DST addresses.
//! - `ethertype` (read): the ETHERTYPE, in decimal.
//! - `vlan_tci`, `vlan_id`, `vlan_pcp` (read): the tag (`ANNO` in ANNO
//!   mode).
//!
//! Example:
//!
//!     EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 12, VLAN_PCP 3)

use super::AtomicEther;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct EtherVLANEncap {
    ethertype: u16,
    src: AtomicEther,
    dst: AtomicEther,
    /// `None`: from the annotation.
    tci: Option<u16>,
    /// `None`: no native VLAN.
    native: Option<u16>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("EtherVLANEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn num_or_anno(s: &str, max: u32, what: &str) -> Result<Option<u16>, String> {
    let s = s.trim();
    if s == "ANNO" {
        return Ok(None);
    }
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse::<u32>().ok(),
    };
    match v {
        Some(v) if v <= max => Ok(Some(v as u16)),
        _ => Err(format!(
            "{what}: expected integer 0-{max} or ANNO, not '{s}'"
        )),
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EtherVLANEncap, String> {
    let mut a = cx.args();
    let ethertype = a.read_mp::<u16>("ETHERTYPE");
    let src = a.read_mp::<EtherAddr>("SRC");
    let dst = a.read_mp::<EtherAddr>("DST");
    let tci = a.read_p::<String>("VLAN_TCI");
    let pcp = a.read_p::<u8>("VLAN_PCP");
    let id = a.read::<String>("VLAN_ID");
    let native = a.read::<i32>("NATIVE_VLAN").unwrap_or(0);
    a.complete()?;
    if pcp.is_some_and(|p| p > 7) {
        return Err(format!("VLAN_PCP: expected 0-7, not {}", pcp.unwrap_or(0)));
    }
    if !(-1..=0xFFF).contains(&native) {
        return Err(format!("NATIVE_VLAN: expected -1 to 4095, not {native}"));
    }
    let pcp_bits = |t: u16| match pcp {
        Some(p) => (t & 0x1FFF) | (u16::from(p) << 13),
        None => t,
    };
    let tci = match (tci, id) {
        (Some(_), Some(_)) => return Err("VLAN_TCI and VLAN_ID are mutually exclusive".into()),
        (Some(t), None) => num_or_anno(&t, 0xFFFF, "VLAN_TCI")?.map(pcp_bits),
        (None, Some(i)) => num_or_anno(&i, 0xFFF, "VLAN_ID")?.map(pcp_bits),
        (None, None) => return Err("missing VLAN_TCI or VLAN_ID".into()),
    };
    Ok(EtherVLANEncap {
        ethertype,
        src: AtomicEther::new(src),
        dst: AtomicEther::new(dst),
        tci,
        native: u16::try_from(native).ok(),
    })
}

impl Action for EtherVLANEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| e.src.get().to_string(),
            |e, v, hx| {
                e.src.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| e.dst.get().to_string(),
            |e, v, hx| {
                e.dst.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::read("ethertype", |e, _| e.ethertype.to_string()),
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

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let tci = self.tci.unwrap_or(p.anno().vlan_tci);
        let native = self.native == Some(tci & 0x0FFF);
        let hlen = if native { 14 } else { 18 };
        if p.push(hlen).is_err() {
            return Verdict::DropFor(0);
        }
        p.anno_mut().vlan_tci = tci;
        let (dst, src) = (self.dst.get(), self.src.get());
        let d = p.data_mut();
        d[0..6].copy_from_slice(&dst.0);
        d[6..12].copy_from_slice(&src.0);
        if native {
            d[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
        } else {
            d[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            d[14..16].copy_from_slice(&tci.to_be_bytes());
            d[16..18].copy_from_slice(&self.ethertype.to_be_bytes());
        }
        p.set_mac_header(0);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    const HDR: [u8; 12] = [2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1];

    fn tagged(tci: u16, ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = HDR.to_vec();
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&tci.to_be_bytes());
        f.extend_from_slice(&ty.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn prepends_tagged_header() {
        let h = harness(
            "EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 12, VLAN_PCP 3)",
            1,
        );
        h.push(0, vec![pkt(b"data")]);
        let out = h.output(0);
        let tci = (3 << 13) | 12;
        assert_eq!(out[0].data(), &tagged(tci, 0x0800, b"data")[..]);
        assert_eq!(out[0].anno().vlan_tci, tci);
        assert_eq!(out[0].mac_header_offset(), Some(0));
        assert_eq!(h.read("vlan_id").unwrap(), "12");
        assert_eq!(h.read("vlan_pcp").unwrap(), "3");
        assert_eq!(h.read("vlan_tci").unwrap(), tci.to_string());
        assert_eq!(h.read("ethertype").unwrap(), "2048");
    }

    #[test]
    fn positional_tci_and_pcp_and_handlers() {
        let h = harness(
            "EtherVLANEncap(0x86dd, 1:1:1:1:1:1, 2:2:2:2:2:2, 0x0FFF, 7)",
            1,
        );
        h.write("src", "3:3:3:3:3:3").unwrap();
        h.push(0, vec![pkt(b"")]);
        let d = h.output(0)[0].data().to_vec();
        assert_eq!(d.len(), 18);
        assert_eq!(&d[6..12], &[3; 6]);
        assert_eq!(&d[14..18], &[0xEF, 0xFF, 0x86, 0xdd]);
        assert_err(
            h.write("dst", "x"),
            "e.dst: expected Ethernet address, not 'x'",
        );
    }

    #[test]
    fn anno_mode_and_native_vlan() {
        let h = harness(
            "EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, ANNO, NATIVE_VLAN 5)",
            1,
        );
        let mut a = pkt(b"a");
        a.anno_mut().vlan_tci = 0x2007;
        let mut native = pkt(b"n");
        native.anno_mut().vlan_tci = 0x4005;
        h.push(0, vec![a, native]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &tagged(0x2007, 0x0800, b"a")[..]);
        let mut plain = HDR.to_vec();
        plain.extend_from_slice(&[0x08, 0x00, b'n']);
        assert_eq!(out[1].data(), &plain[..]);
        assert_eq!(h.read("vlan_tci").unwrap(), "ANNO");

        // Default native VLAN 0; -1 tags VLAN 0 too.
        let h = harness("EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 0)", 1);
        h.push(0, vec![pkt(b"z")]);
        assert_eq!(h.output(0)[0].len(), 15);
        let h = harness(
            "EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 0, NATIVE_VLAN -1)",
            1,
        );
        h.push(0, vec![pkt(b"z")]);
        assert_eq!(h.output(0)[0].data(), &tagged(0, 0x0800, b"z")[..]);
    }

    #[test]
    fn bad_config() {
        let base = "EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2";
        assert!(try_harness(&format!("{base})"), 1).is_err());
        assert!(try_harness(&format!("{base}, 1, VLAN_ID 2)"), 1).is_err());
        assert!(try_harness(&format!("{base}, VLAN_ID 4096)"), 1).is_err());
        assert!(try_harness(&format!("{base}, 0x10000)"), 1).is_err());
        assert!(try_harness(&format!("{base}, 1, 8)"), 1).is_err());
        assert!(try_harness(&format!("{base}, 1, NATIVE_VLAN 4096)"), 1).is_err());
        assert!(try_harness(&format!("{base}, 1, NATIVE_VLAN -2)"), 1).is_err());
        assert!(try_harness(&format!("{base}, nope)"), 1).is_err());
    }
}
