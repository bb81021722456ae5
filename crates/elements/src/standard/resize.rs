//! # Resize
//!
//! Resize(\[HEAD, TAIL], keywords HEAD, TAIL)
//!
//! Adjusts packet length.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Adds HEAD bytes in front of each packet and TAIL bytes at its end. If
//! either number is negative, bytes are removed instead of added (at most
//! the whole packet). Bytes added at the front hold whatever the buffer's
//! headroom held (for instance a header Strip removed); bytes added at the
//! end are zero. No copy of the packet is made if the added bytes fit in
//! its existing headroom and tailroom. A packet that no buffer can grow to
//! hold the added bytes is dropped.
//!
//! Arguments:
//! - `HEAD` (integer, default 0): bytes to add (or, if negative, remove)
//!   at the front.
//! - `TAIL` (integer, default 0): bytes to add (or remove) at the end.
//!
//! Either may be left out (`Resize(HEAD -2)` only strips two bytes);
//! `Resize()` passes packets unchanged.
//!
//! Example:
//!
//!     ... -> Resize(-14, 4) -> ...  // strip an Ethernet header, room for a trailer

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct Resize {
    head: i32,
    tail: i32,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom", "no tailroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("Resize", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        // HEAD bytes, given by keyword or left out (and a strip stops at
        // the packet's end).
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Resize, String> {
    let mut a = cx.args();
    let head = a.read_p::<i32>("HEAD").unwrap_or(0);
    let tail = a.read_p::<i32>("TAIL").unwrap_or(0);
    a.complete()?;
    // Keep growth bounded: a packet buffer cannot exceed 64 KiB by much.
    for (n, v) in [("HEAD", head), ("TAIL", tail)] {
        if v > 65535 {
            return Err(format!("{n}: at most 65535 bytes may be added, not {v}"));
        }
    }
    Ok(Resize { head, tail })
}

impl Action for Resize {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let h = self.head.unsigned_abs() as usize;
        if self.head >= 0 {
            if p.push(h).is_err() {
                return Verdict::DropFor(0);
            }
        } else {
            p.pull(h);
        }
        let t = self.tail.unsigned_abs() as usize;
        if self.tail >= 0 {
            if p.put(t).is_err() {
                return Verdict::DropFor(1);
            }
        } else {
            p.take(t);
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn grows_and_shrinks() {
        let h = harness("Resize(-2, 3)", 1);
        h.push(0, vec![pkt(&[1, 2, 3, 4])]);
        assert_eq!(h.output(0)[0].data(), &[3, 4, 0, 0, 0]);

        let h = harness("Resize(0, -1)", 1);
        h.push(0, vec![pkt(&[1, 2, 3]), pkt(&[])]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[1, 2]);
        assert!(out[1].is_empty());

        let h = harness("Resize(-10, -10)", 1);
        h.push(0, vec![pkt(&[1, 2, 3])]);
        assert!(h.output(0)[0].is_empty(), "removal clamps to the packet");
    }

    #[test]
    fn head_growth_restores_stripped_bytes() {
        let h = harness("Resize(2, 0)", 1);
        let mut p = pkt(&[7, 8, 9, 10]);
        p.pull(2);
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].data(), &[7, 8, 9, 10]);

        // Beyond the headroom: the packet is reallocated, length grows.
        let h = harness("Resize(1000, 2000)", 1);
        h.push(0, vec![pkt(&[5; 10])]);
        let out = h.output(0);
        assert_eq!(out[0].len(), 3010);
        assert_eq!(&out[0].data()[1000..1010], &[5; 10]);
        assert_eq!(&out[0].data()[1010..], &[0; 2000][..]);
    }

    #[test]
    fn either_size_may_be_left_out() {
        let h = harness("Resize(HEAD -2)", 1);
        h.push(0, vec![pkt(&[1, 2, 3, 4])]);
        assert_eq!(h.output(0)[0].data(), &[3, 4]);
        let h = harness("Resize(TAIL 2)", 1);
        h.push(0, vec![pkt(&[1, 2])]);
        assert_eq!(h.output(0)[0].data(), &[1, 2, 0, 0]);
        let h = harness("Resize(-1)", 1);
        h.push(0, vec![pkt(&[1, 2])]);
        assert_eq!(h.output(0)[0].data(), &[2], "a lone positional is HEAD");
        let h = harness("Resize()", 1);
        h.push(0, vec![pkt(&[1, 2])]);
        assert_eq!(h.output(0)[0].data(), &[1, 2]);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("Resize(x, 1)", 1),
            "e :: Resize: HEAD: expected integer",
        );
        assert_err(
            try_harness("Resize(1, 70000)", 1),
            "e :: Resize: TAIL: at most 65535 bytes may be added, not 70000",
        );
    }
}
