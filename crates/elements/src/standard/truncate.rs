//! # Truncate
//!
//! Truncate(LENGTH [, keyword EXTRA_LENGTH])
//!
//! Limits packet length.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Shortens packets to at most LENGTH bytes; shorter packets pass
//! unchanged.
//!
//! Arguments:
//! - `LENGTH` (integer, mandatory): the largest length let through.
//! - `EXTRA_LENGTH` (boolean, default true): add the bytes removed to the
//!   packet's extra length annotation.
//!
//! Handlers:
//! - `length` (read/write): LENGTH.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Truncate(96) -> ToDump(headers.pcap);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Truncate {
    len: AtomicUsize,
    extra: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Truncate", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Truncate, String> {
    let mut a = cx.args();
    let len = a.read_mp::<usize>("LENGTH");
    let extra = a.read("EXTRA_LENGTH").unwrap_or(true);
    a.complete()?;
    Ok(Truncate {
        len: AtomicUsize::new(len),
        extra,
    })
}

impl Action for Truncate {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "length",
        |e, _| e.len.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.len.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let max = self.len.load(Ordering::Relaxed);
        if p.len() > max {
            let cut = p.len() - max;
            p.take(cut);
            if self.extra {
                let a = p.anno_mut();
                a.extra_length = a.extra_length.saturating_add(cut as u32);
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn shortens_and_counts_extra_length() {
        let h = harness("Truncate(3)", 1);
        let mut long = pkt(&[1, 2, 3, 4, 5]);
        long.anno_mut().extra_length = 10;
        h.push(0, vec![long, pkt(&[7, 8])]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[1, 2, 3]);
        assert_eq!(out[0].anno().extra_length, 12);
        assert_eq!(out[1].data(), &[7, 8]);
        assert_eq!(out[1].anno().extra_length, 0);
        h.write("length", "1").unwrap();
        h.push(0, vec![pkt(&[7, 8])]);
        assert_eq!(h.output(0)[0].data(), &[7]);
    }

    #[test]
    fn extra_length_off_and_bad_config() {
        let h = harness("Truncate(0, EXTRA_LENGTH false)", 1);
        h.push(0, vec![pkt(&[1, 2])]);
        let out = h.output(0);
        assert!(out[0].is_empty());
        assert_eq!(out[0].anno().extra_length, 0);
        assert_err(
            try_harness("Truncate", 1),
            "e :: Truncate: missing mandatory LENGTH argument",
        );
        assert_err(
            try_harness("Truncate(-1)", 1),
            "e :: Truncate: LENGTH: expected unsigned integer",
        );
    }
}
