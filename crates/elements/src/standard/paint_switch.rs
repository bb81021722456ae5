//! # PaintSwitch
//!
//! PaintSwitch(\[ANNO])
//!
//! Sends each packet to the output its paint annotation names.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! A packet with paint K goes out output K; if there is no output K it is
//! dropped (counted). Paint 255 means every output: the packet is copied
//! to each output (copies first, the original to the last output). A copy
//! that cannot be made because the packet pool is exhausted is counted in
//! `drops`. PaintSwitch thus has at most 255 useful outputs.
//!
//! Arguments:
//! - `ANNO` (annotation, default `PAINT`): see Paint.
//!
//! Handlers:
//! - `drops` (read): copies that could not be made.
//!
//! Example:
//!
//!     ps :: PaintSwitch;
//!     ps[0] -> ...; ps[1] -> ...;

use super::paint::AnnoByte;
use paraclick_runtime::{
    push_verdicts, Batch, ClassSpec, ConfigCx, Cx, Element, Handler, PerThreadCount, Verdict,
};

pub struct PaintSwitch {
    anno: AnnoByte,
    noutputs: usize,
    clone_failures: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no outputs"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("PaintSwitch", "1/-", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<PaintSwitch, String> {
    let mut a = cx.args();
    let anno = a.read_p::<AnnoByte>("ANNO").unwrap_or(AnnoByte::Paint);
    a.complete()?;
    if cx.noutputs > 255 {
        return Err("PaintSwitch has at most 255 outputs".into());
    }
    Ok(PaintSwitch {
        anno,
        noutputs: cx.noutputs,
        clone_failures: PerThreadCount::new(cx.nthreads),
    })
}

impl PaintSwitch {
    #[cold]
    fn push_slow(&self, cx: &mut Cx<'_>, mut batch: Batch) {
        for p in batch.drain() {
            let k = self.anno.get(&p) as usize;
            if k != 255 {
                cx.push_one(k, p);
                continue;
            }
            if self.noutputs == 0 {
                cx.drop_packet_for(0, p);
                continue;
            }
            for port in 0..self.noutputs - 1 {
                match p.clone_packet() {
                    Some(q) => cx.push_one(port, q),
                    None => self.clone_failures.inc(cx.thread()),
                }
            }
            cx.push_one(self.noutputs - 1, p);
        }
    }
}

impl Element for PaintSwitch {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("drops", |e, _| {
        e.clone_failures.get().to_string()
    })];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        if batch.iter().any(|p| self.anno.get(p) == 255) {
            self.push_slow(cx, batch);
        } else {
            push_verdicts(cx, batch, |_, p| Verdict::Out(self.anno.get(p) as usize));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn painted(tag: u8, color: u8) -> paraclick_packet::Packet {
        let mut p = pkt(&[tag]);
        p.anno_mut().paint = color;
        p
    }

    #[test]
    fn switches_by_paint() {
        let h = harness("PaintSwitch", 3);
        h.push(
            0,
            vec![
                painted(1, 2),
                painted(2, 0),
                painted(3, 1),
                painted(4, 2),
                painted(5, 9),
            ],
        );
        assert_eq!(tags(&h.output(0)), vec![2]);
        assert_eq!(tags(&h.output(1)), vec![3]);
        assert_eq!(tags(&h.output(2)), vec![1, 4]);
        assert_eq!(h.drops(), 1, "paint 9 has no output");
    }

    #[test]
    fn paint_255_goes_everywhere() {
        let h = harness("PaintSwitch", 3);
        h.push(0, vec![painted(1, 1), painted(2, 255), painted(3, 0)]);
        assert_eq!(tags(&h.output(0)), vec![2, 3]);
        assert_eq!(tags(&h.output(1)), vec![1, 2]);
        assert_eq!(tags(&h.output(2)), vec![2]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn anno_argument() {
        let h = harness("PaintSwitch(ANNO 5)", 2);
        let mut p = painted(1, 0);
        p.anno_mut().user[5] = 1;
        h.push(0, vec![p]);
        assert_eq!(tags(&h.output(1)), vec![1]);
    }
}
