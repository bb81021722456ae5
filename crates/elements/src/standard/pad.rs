//! # Pad
//!
//! Pad([LENGTH, keyword ZERO])
//!
//! Extends packet length.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Extends packets to at least LENGTH bytes. Without LENGTH, extends each
//! packet by its extra length annotation (restoring the length a capture
//! or Truncate recorded). Output packets have extra length annotation
//! zero. A packet that cannot be extended (no buffer) is dropped
//! (counted).
//!
//! Keywords:
//! - `ZERO` (boolean, default true): fill the added bytes with zeros.
//!   paraclick always does (false is accepted: Click then leaves the bytes
//!   uninitialized, which paraclick never exposes).
//!
//! Example:
//!
//!     ... -> Pad(60) -> ToDevice(eth0);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct Pad {
    len: Option<usize>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no tailroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("Pad", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Pad, String> {
    let mut a = cx.args();
    let len = a.read_p::<usize>("LENGTH");
    let _zero: bool = a.read("ZERO").unwrap_or(true);
    a.complete()?;
    if len.is_some_and(|l| l > 1 << 20) {
        return Err("LENGTH too large".into());
    }
    Ok(Pad { len })
}

impl Action for Pad {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let want = match self.len {
            Some(l) => l.max(p.len()),
            None => p.len() + p.anno().extra_length as usize,
        };
        p.anno_mut().extra_length = 0;
        match p.set_len(want) {
            Ok(()) => Verdict::Out(0),
            Err(_) => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn pads_to_length_with_zeros() {
        let h = harness("Pad(6)", 1);
        let mut p = pkt(&[1, 2]);
        p.anno_mut().extra_length = 3;
        h.push(0, vec![p, pkt(&[9; 8])]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[1, 2, 0, 0, 0, 0]);
        assert_eq!(out[0].anno().extra_length, 0);
        assert_eq!(out[1].data(), &[9; 8]);
    }

    #[test]
    fn without_length_restores_extra_length() {
        let h = harness("Pad", 1);
        // As Truncate(2) leaves a 4-byte packet: the 2 cut bytes recorded.
        let mut p = pkt(&[5, 6]);
        p.anno_mut().extra_length = 2;
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[5, 6, 0, 0]);
        assert_eq!(out[0].anno().extra_length, 0);
        assert_err(
            try_harness("Pad(ZERO maybe)", 1),
            "e :: Pad: ZERO: expected boolean (true or false)",
        );
        assert!(try_harness("Pad(ZERO false)", 1).is_ok());
    }
}
