//! # PaintTee
//!
//! PaintTee(COLOR [, ANNO])
//!
//! Duplicates packets with a given paint annotation.
//!
//! Ports: 1 input, 2 outputs. Processing: agnostic, but output 1 is push.
//!
//! Sends every packet through output 0. If the packet's paint annotation
//! equals COLOR, a copy also goes out output 1 (the copy is emitted first,
//! as in Click). A copy that cannot be made because the packet pool is
//! exhausted is counted in `drops`.
//!
//! Arguments:
//! - `COLOR` (integer 0..255, mandatory).
//! - `ANNO` (annotation, default `PAINT`): see Paint.
//!
//! Handlers:
//! - `drops` (read): copies that could not be made.
//!
//! Example:
//!
//!     FromDevice(eth7) -> Paint(7) -> ...
//!     rt[7] -> pt :: PaintTee(7) -> ... -> ToDevice(eth7);
//!     pt[1] -> ICMPError(18.26.4.24, redirect, host) -> [0]rt;

use super::paint::AnnoByte;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, Packet, PerThreadCount, Verdict,
};

pub struct PaintTee {
    color: u8,
    anno: AnnoByte,
    clone_failures: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("PaintTee", "1/2", "a/ah", make).stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<PaintTee, String> {
    let mut a = cx.args();
    let color = a.read_mp::<u8>("COLOR");
    let anno = a.read_p::<AnnoByte>("ANNO").unwrap_or(AnnoByte::Paint);
    a.complete()?;
    Ok(PaintTee {
        color,
        anno,
        clone_failures: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for PaintTee {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("drops", |e, _| {
        e.clone_failures.get().to_string()
    })];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if self.anno.get(p) == self.color {
            match p.clone_packet() {
                Some(q) => cx.push_one(1, q),
                None => self.clone_failures.inc(cx.thread()),
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn painted(tag: u8, color: u8) -> paraclick_packet::Packet {
        let mut p = pkt(&[tag, 0xaa]);
        p.anno_mut().paint = color;
        p
    }

    #[test]
    fn copies_matching_packets_to_output_1() {
        let h = harness("PaintTee(7)", 2);
        h.push(0, vec![painted(1, 7), painted(2, 3), painted(3, 7)]);
        assert_eq!(tags(&h.output(0)), vec![1, 2, 3]);
        let copies = h.output(1);
        assert_eq!(tags(&copies), vec![1, 3]);
        assert!(copies.iter().all(|p| p.data() == [p.data()[0], 0xaa]));
        assert!(copies.iter().all(|p| p.anno().paint == 7));
        assert_eq!(h.drops(), 0);
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn anno_argument() {
        let h = harness("PaintTee(5, 2)", 2);
        let mut p = pkt(&[1]);
        p.anno_mut().user[2] = 5;
        h.push(0, vec![p, painted(2, 5)]);
        assert_eq!(tags(&h.output(0)), vec![1, 2]);
        assert_eq!(tags(&h.output(1)), vec![1]);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("PaintTee", 2),
            "e :: PaintTee: missing mandatory COLOR argument",
        );
        assert_err(
            try_harness("PaintTee(1, 2, 3)", 2),
            "e :: PaintTee: too many arguments ('3')",
        );
    }
}
