//! # Clipboard
//!
//! Clipboard(RANGE_1, ..., RANGE_N)
//!
//! Copies data from one packet to another.
//!
//! Ports: 2 inputs, 2 outputs. Processing: agnostic (each input/output
//! pair works in a push or a pull context).
//!
//! Takes one or more byte ranges to copy, each of the form `x/n`: `n`
//! bytes at offset `x`. When a packet arrives on input 0, Clipboard copies
//! the selected bytes into its clipboard buffer and emits the packet
//! unchanged on output 0. When a packet arrives on input 1, Clipboard
//! overwrites its selected bytes with those in the buffer and emits the
//! modified packet on output 1. So data from one packet can be copied to
//! zero or more packets. It can also copy data from one place in a packet
//! to another, by looping the packet back through Clipboard with Strip and
//! Unstrip to move the offset.
//!
//! The buffer starts out zero. A range a packet is too short for is left
//! alone: not copied from an input 0 packet (the buffer keeps its old
//! bytes), not written into an input 1 packet.
//!
//! Example: give stream b's frames the Ethernet source address last seen
//! on stream a
//!
//!     cb :: Clipboard(6/6);
//!     a -> [0]cb[0] -> ...;
//!     b -> [1]cb[1] -> ...;

use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler};
use std::sync::Mutex;

pub struct Clipboard {
    /// (offset, length, offset in the buffer).
    ranges: Vec<(usize, usize, usize)>,
    buf: Mutex<Vec<u8>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Clipboard", "2/2", "a", make)
        .shared("copies data from one packet into later ones, across flows")
}

fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let s = s.trim();
    let bad = || format!("RANGE: expected 'offset/length', not '{s}'");
    let (x, n) = s.split_once('/').ok_or_else(bad)?;
    let x = x.trim().parse::<usize>().map_err(|_| bad())?;
    let n = n.trim().parse::<usize>().map_err(|_| bad())?;
    if n == 0 || n > 65535 || x > 65535 {
        return Err(format!("RANGE '{s}': length 1-65535 at offset up to 65535"));
    }
    Ok((x, n))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Clipboard, String> {
    let mut a = cx.args();
    let raw = a.rest();
    a.complete()?;
    if raw.is_empty() {
        return Err("expected at least one RANGE".into());
    }
    let mut ranges = Vec::new();
    let mut total = 0;
    for r in &raw {
        let (x, n) = parse_range(r)?;
        ranges.push((x, n, total));
        total += n;
    }
    Ok(Clipboard {
        ranges,
        buf: Mutex::new(vec![0; total]),
    })
}

impl Clipboard {
    fn process(&self, port: usize, p: &mut Packet) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        for &(x, n, at) in &self.ranges {
            if p.len() < x + n {
                continue;
            }
            if port == 0 {
                buf[at..at + n].copy_from_slice(&p.data()[x..x + n]);
            } else {
                p.data_mut()[x..x + n].copy_from_slice(&buf[at..at + n]);
            }
        }
    }

    fn batch(&self, port: usize, b: &mut Batch) {
        for p in b.iter_mut() {
            self.process(port, p);
        }
    }
}

impl Element for Clipboard {
    const HANDLERS: &'static [Handler<Self>] = &[];

    fn push(&self, cx: &mut Cx<'_>, port: usize, mut batch: Batch) {
        self.batch(port, &mut batch);
        cx.push(port, batch)
    }

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let mut b = cx.pull(port, max)?;
        self.batch(port, &mut b);
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn copies_ranges_between_packets() {
        let h = harness_io("Clipboard(1/2, 5/1)", 2, 2);
        h.push(1, vec![pkt(&[9; 8])]);
        assert_eq!(
            h.output(1)[0].data(),
            &[9, 0, 0, 9, 9, 0, 9, 9],
            "zero at first"
        );
        h.push(0, vec![pkt(&[0, 1, 2, 3, 4, 5, 6, 7])]);
        assert_eq!(
            h.output(0)[0].data(),
            &[0, 1, 2, 3, 4, 5, 6, 7],
            "input 0 unchanged"
        );
        h.push(1, vec![pkt(&[9; 8]), pkt(&[9; 4])]);
        let out = h.output(1);
        assert_eq!(out[0].data(), &[9, 1, 2, 9, 9, 5, 9, 9]);
        assert_eq!(
            out[1].data(),
            &[9, 1, 2, 9],
            "range past the end left alone"
        );
        // A short source updates only the ranges it holds.
        h.push(0, vec![pkt(&[7, 7, 7])]);
        h.push(1, vec![pkt(&[0; 6])]);
        assert_eq!(h.output(1)[0].data(), &[0, 7, 7, 0, 0, 5]);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness_io("Clipboard", 2, 2),
            "e :: Clipboard: expected at least one RANGE",
        );
        assert_err(
            try_harness_io("Clipboard(3)", 2, 2),
            "e :: Clipboard: RANGE: expected 'offset/length', not '3'",
        );
        assert_err(
            try_harness_io("Clipboard(1/0)", 2, 2),
            "e :: Clipboard: RANGE '1/0': length 1-65535 at offset up to 65535",
        );
        assert_err(
            try_harness_io("Clipboard(a/2)", 2, 2),
            "e :: Clipboard: RANGE: expected 'offset/length', not 'a/2'",
        );
    }
}
