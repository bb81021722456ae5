//! # SetVLANAnno
//!
//! SetVLANAnno(VLAN_TCI [, VLAN_PCP], keywords VLAN_ID, VLAN_PCP)
//!
//! Sets packets' VLAN TCI annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets each passing packet's VLAN TCI annotation (read by VLANEncap and
//! EtherVLANEncap given `ANNO`) to the configured value. Give the whole
//! 16-bit tag control information as VLAN_TCI, or its parts: the 12-bit
//! VLAN_ID and the 3-bit priority code point VLAN_PCP. A VLAN_PCP given
//! with VLAN_TCI replaces the TCI's top three bits, so
//! `SetVLANAnno(2, 1)` sets 0x2002.
//!
//! Arguments:
//! - `VLAN_TCI` (integer 0 to 0xFFFF).
//! - `VLAN_ID` (integer 0 to 0xFFF): instead of VLAN_TCI.
//! - `VLAN_PCP` (integer 0 to 7, default 0).
//!
//! Handlers:
//! - `vlan_tci` (read/write): the whole TCI.
//! - `vlan_id` (read/write): its 12-bit VLAN ID (writing keeps the PCP).
//! - `vlan_pcp` (read/write): its priority code point (writing keeps the ID).
//!
//! Example:
//!
//!     ... -> SetVLANAnno(VLAN_ID 12, VLAN_PCP 3) -> VLANEncap(ANNO) -> ...

use paraclick_runtime::prelude::*;
use std::sync::atomic::{AtomicU16, Ordering};

pub struct SetVLANAnno {
    tci: AtomicU16,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetVLANAnno", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetVLANAnno, String> {
    let mut a = cx.args();
    let tci = a.read_p::<u16>("VLAN_TCI");
    let pcp = a.read_p::<u8>("VLAN_PCP");
    let id = a.read::<u16>("VLAN_ID");
    a.complete()?;
    if let Some(p) = pcp.filter(|&p| p > 7) {
        return Err(format!("VLAN_PCP: expected 0-7, not {p}"));
    }
    let base = match (tci, id) {
        (Some(_), Some(_)) => return Err("VLAN_TCI and VLAN_ID are mutually exclusive".into()),
        (Some(t), None) => t,
        (None, Some(i)) if i > 0xFFF => return Err(format!("VLAN_ID: expected 0-4095, not {i}")),
        (None, Some(i)) => i,
        (None, None) => return Err("missing VLAN_TCI or VLAN_ID".into()),
    };
    let tci = match pcp {
        Some(p) => (base & 0x1FFF) | (u16::from(p) << 13),
        None => base,
    };
    Ok(SetVLANAnno {
        tci: AtomicU16::new(tci),
    })
}

impl SetVLANAnno {
    fn get(&self) -> u16 {
        self.tci.load(Ordering::Relaxed)
    }
}

impl Action for SetVLANAnno {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("vlan_tci", |e: &SetVLANAnno, _| e.get().to_string()).write_with(
            |e, v, hx| {
                e.tci.store(hx.arg::<u16>(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("vlan_id", |e: &SetVLANAnno, _| {
            (e.get() & 0x0FFF).to_string()
        })
        .write_with(|e, v, hx| {
            let id = hx.arg::<u16>(v)?;
            if id > 0xFFF {
                return Err(format!("expected 0-4095, not {id}"));
            }
            e.tci.store((e.get() & 0xF000) | id, Ordering::Relaxed);
            Ok(())
        }),
        Handler::read("vlan_pcp", |e: &SetVLANAnno, _| (e.get() >> 13).to_string()).write_with(
            |e, v, hx| {
                let p = hx.arg::<u16>(v)?;
                if p > 7 {
                    return Err(format!("expected 0-7, not {p}"));
                }
                e.tci
                    .store((e.get() & 0x1FFF) | (p << 13), Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.anno_mut().vlan_tci = self.get();
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn tci_after(decl: &str) -> u16 {
        let h = harness(decl, 1);
        h.push(0, vec![pkt(&[1, 2, 3, 4])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &[1, 2, 3, 4], "data untouched");
        out[0].anno().vlan_tci
    }

    #[test]
    fn sets_the_annotation_from_tci_id_and_pcp() {
        assert_eq!(tci_after("SetVLANAnno(0x1234)"), 0x1234);
        assert_eq!(tci_after("SetVLANAnno(2, 1)"), 0x2002);
        assert_eq!(tci_after("SetVLANAnno(VLAN_ID 12, VLAN_PCP 3)"), 0x600C);
        assert_eq!(
            tci_after("SetVLANAnno(VLAN_TCI 0xFFFF, VLAN_PCP 0)"),
            0x1FFF
        );
    }

    #[test]
    fn handlers_change_the_parts() {
        let h = harness("SetVLANAnno(VLAN_ID 5, VLAN_PCP 2)", 1);
        assert_eq!(h.read("vlan_tci").unwrap(), (0x4005).to_string());
        h.write("vlan_id", "7").unwrap();
        assert_eq!(h.read("vlan_pcp").unwrap(), "2");
        h.write("vlan_pcp", "1").unwrap();
        assert_eq!(h.read("vlan_tci").unwrap(), (0x2007).to_string());
        assert!(h.write("vlan_pcp", "8").is_err());
        assert!(h.write("vlan_id", "4096").is_err());
        h.push(0, vec![pkt(&[0])]);
        assert_eq!(h.output(0)[0].anno().vlan_tci, 0x2007);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("SetVLANAnno", 1),
            "e :: SetVLANAnno: missing VLAN_TCI or VLAN_ID",
        );
        assert_err(
            try_harness("SetVLANAnno(1, VLAN_ID 2)", 1),
            "VLAN_TCI and VLAN_ID are mutually exclusive",
        );
        assert_err(
            try_harness("SetVLANAnno(1, 8)", 1),
            "VLAN_PCP: expected 0-7, not 8",
        );
        assert_err(
            try_harness("SetVLANAnno(VLAN_ID 4096)", 1),
            "VLAN_ID: expected 0-4095, not 4096",
        );
    }
}
