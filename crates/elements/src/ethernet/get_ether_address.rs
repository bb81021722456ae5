//! # GetEtherAddress
//!
//! GetEtherAddress(ANNO, OFFSET)
//!
//! Stores an Ethernet address from a packet into an annotation.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic.
//!
//! Copies the six bytes at OFFSET in each packet into the ANNO Ethernet
//! address annotation (six bytes of the user annotation area starting at
//! offset ANNO, 0 to 18, as SetEtherAddress uses). OFFSET may be `src` or
//! `dst`, equivalent to 6 and 0, the offsets of an Ethernet header's source
//! and destination addresses. A packet too short to hold the address at
//! OFFSET goes to output 1 if there is one, else is dropped.
//!
//! Arguments:
//! - `ANNO` (user annotation offset, 0 to 18).
//! - `OFFSET` (`src`, `dst` or an integer).
//!
//! Example:
//!
//!     ... -> GetEtherAddress(0, src) -> ...;

use super::set_ether_address::EtherAnno;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct GetEtherAddress {
    anno: EtherAnno,
    offset: usize,
    has_reject: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["rejected"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("GetEtherAddress", "1/1-2", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<GetEtherAddress, String> {
    let has_reject = cx.noutputs > 1;
    let mut a = cx.args();
    let anno = a.read_mp::<EtherAnno>("ANNO");
    let off = a.read_mp::<String>("OFFSET");
    a.complete()?;
    let offset = match off.as_str() {
        "src" => 6,
        "dst" => 0,
        o => o
            .parse::<usize>()
            .map_err(|_| format!("OFFSET: expected 'src', 'dst' or an offset, not '{o}'"))?,
    };
    Ok(GetEtherAddress {
        anno,
        offset,
        has_reject,
    })
}

impl Action for GetEtherAddress {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(b) = p.data().get(self.offset..self.offset.saturating_add(6)) else {
            return if self.has_reject {
                Verdict::Out(1)
            } else {
                Verdict::DropFor(0)
            };
        };
        let mut a = [0; 6];
        a.copy_from_slice(b);
        self.anno.set(p, EtherAddr(a));
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn frame() -> Vec<u8> {
        ether_frame(eth("0:1:2:3:4:5"), eth("6:7:8:9:a:b"), 0x0800, &[0; 20])
    }

    #[test]
    fn copies_src_dst_or_offset() {
        let h = harness("GetEtherAddress(0, src)", 1);
        h.push(0, vec![pkt(&frame())]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &frame()[..], "data untouched");
        assert_eq!(&out[0].anno().user[..6], &[6, 7, 8, 9, 10, 11]);

        let h = harness("GetEtherAddress(10, dst)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(&h.output(0)[0].anno().user[10..16], &[0, 1, 2, 3, 4, 5]);

        let h = harness("GetEtherAddress(18, 3)", 1);
        h.push(0, vec![pkt(&frame())]);
        assert_eq!(&h.output(0)[0].anno().user[18..], &[3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn integer_offset_and_reject_output() {
        let h = harness("GetEtherAddress(6, 2)", 2);
        h.push(
            0,
            vec![pkt(&[1, 2, 3, 4, 5, 6, 7, 8]), pkt(&[1, 2, 3, 4, 5, 6, 7])],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].anno().user[6..12], &[3, 4, 5, 6, 7, 8]);
        assert_eq!(h.output(1).len(), 1, "too short: output 1");
    }

    #[test]
    fn short_dropped_and_bad_config() {
        let h = harness("GetEtherAddress(0, src)", 1);
        h.push(0, vec![pkt(&[0; 11]), pkt(&[])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
        assert_err(try_harness("GetEtherAddress(19, src)", 1), "e :: GetEtherAddress: ANNO: expected Ethernet address annotation (a user annotation offset 0..18), not '19'");
        assert_err(
            try_harness("GetEtherAddress(0, middle)", 1),
            "e :: GetEtherAddress: OFFSET: expected 'src', 'dst' or an offset, not 'middle'",
        );
        assert_err(
            try_harness("GetEtherAddress(0)", 1),
            "e :: GetEtherAddress: missing mandatory OFFSET argument",
        );
    }
}
