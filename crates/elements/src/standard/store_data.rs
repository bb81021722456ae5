//! # StoreData
//!
//! StoreData(OFFSET, DATA [, MASK, keyword GROW])
//!
//! Changes packet data.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Writes DATA into each packet starting OFFSET bytes in. With MASK, only
//! the bits set in MASK change (a mask shorter than DATA leaves the rest of
//! DATA unmasked). Bytes that would fall past the end of the packet are
//! not written, unless GROW is true: then the packet is extended (with
//! zeros) to hold all of DATA, or dropped (counted) if no buffer is
//! available.
//!
//! Arguments:
//! - `OFFSET` (integer, mandatory): where to write.
//! - `DATA` (data, mandatory): the bytes; `\<FF 02>` writes hex.
//! - `MASK` (data): which bits of DATA to store.
//! - `GROW` (boolean, default false): extend short packets.
//!
//! Example:
//!
//!     StoreData(1, \<FF>, MASK \<02>);

use paraclick_packet::Packet;
use paraclick_runtime::args::Bytes;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct StoreData {
    offset: usize,
    data: Vec<u8>,
    mask: Vec<u8>,
    grow: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no tailroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StoreData", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StoreData, String> {
    let mut a = cx.args();
    let offset = a.read_mp::<usize>("OFFSET");
    let data = a.read_mp::<Bytes>("DATA").0;
    let mask = a.read_p::<Bytes>("MASK").map(|b| b.0).unwrap_or_default();
    let grow = a.read("GROW").unwrap_or(false);
    a.complete()?;
    if offset > 1 << 20 {
        return Err("OFFSET too large".into());
    }
    Ok(StoreData {
        offset,
        data,
        mask,
        grow,
    })
}

impl Action for StoreData {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let end = self.offset + self.data.len();
        if self.grow && p.len() < end && p.set_len(end).is_err() {
            return Verdict::DropFor(0);
        }
        let d = p.data_mut();
        for (i, &b) in self.data.iter().enumerate() {
            let Some(x) = d.get_mut(self.offset + i) else {
                break;
            };
            let m = self.mask.get(i).copied().unwrap_or(0xff);
            *x = (*x & !m) | (b & m);
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn stores_masks_and_clips() {
        let h = harness("StoreData(1, \\<FF 00 AA>, MASK \\<0F>)", 1);
        h.push(0, vec![pkt(&[1, 0x30, 0x55, 0x66, 9]), pkt(&[1, 2])]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[1, 0x3f, 0, 0xaa, 9]);
        assert_eq!(out[1].data(), &[1, 0x0f], "past the end: not written");
    }

    #[test]
    fn grow_extends_and_bad_config() {
        let h = harness("StoreData(3, ab, GROW true)", 1);
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(h.output(0)[0].data(), &[1, 0, 0, b'a', b'b']);
        assert_err(
            try_harness("StoreData(1)", 1),
            "e :: StoreData: missing mandatory DATA argument",
        );
        assert_err(
            try_harness("StoreData(x, ab)", 1),
            "e :: StoreData: OFFSET: expected unsigned integer",
        );
    }
}
