//! # Tee
//!
//! Tee(\[N])
//!
//! Duplicates packets.
//!
//! Ports: 1 input, 1 or more outputs. Processing: push.
//!
//! Sends a copy of each packet out each output: copies go out outputs
//! 0..N-2, in order, and the original out the last output. Copies are
//! deep (see `Packet::clone_packet`). A copy that cannot be made because
//! the packet pool is exhausted is counted in `drops` (the original still
//! goes out).
//!
//! Arguments:
//! - `N` (integer): the number of outputs expected; an error if the
//!   configuration uses a different number. Without N, Tee has however
//!   many outputs the configuration uses.
//!
//! Handlers:
//! - `drops` (read): copies that could not be made.
//!
//! Example:
//!
//!     ... -> t :: Tee -> ToDevice(eth0);
//!     t[1] -> ToDump(copy.pcap);
//!
//! # PullTee
//!
//! PullTee(\[N])
//!
//! Duplicates packets in pull context.
//!
//! Ports: 1 input, 1 or more outputs. Processing: the input and output 0
//! are pull, the other outputs push.
//!
//! Each time output 0 pulls a batch, PullTee sends a copy of each of its
//! packets out every push output (in order), then returns the originals.
//! Copies that cannot be made are counted in `drops`.
//!
//! Arguments:
//! - `N` (integer): the number of outputs expected (see Tee).
//!
//! Handlers:
//! - `drops` (read): copies that could not be made.
//!
//! Example:
//!
//!     q :: Queue -> pt :: PullTee -> ToDevice(eth0);
//!     pt[1] -> Print(sent) -> Discard;

use paraclick_runtime::prelude::*;

pub struct Tee {
    noutputs: usize,
    clone_failures: PerThreadCount,
}

pub struct PullTee {
    noutputs: usize,
    clone_failures: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Tee", "1/1-", "h", make_tee)
        .stateless()
        .dead_code(DeadCode::Tee)
}

pub fn pull_spec() -> ClassSpec {
    ClassSpec::element("PullTee", "1/1-", "l/lh", make_pull_tee)
        .stateless()
        .dead_code(DeadCode::Tee)
}

/// Reads the optional N and checks it against the outputs in use.
fn configure(cx: &mut ConfigCx<'_>) -> Result<(usize, PerThreadCount), String> {
    let mut a = cx.args();
    let n = a.read_p::<u32>("N");
    a.complete()?;
    if let Some(n) = n {
        if n as usize != cx.noutputs {
            return Err(format!(
                "expected {n} outputs, but the configuration uses {}",
                cx.noutputs
            ));
        }
    }
    Ok((cx.noutputs, PerThreadCount::new(cx.nthreads)))
}

fn make_tee(cx: &mut ConfigCx<'_>) -> Result<Tee, String> {
    let (noutputs, clone_failures) = configure(cx)?;
    Ok(Tee {
        noutputs,
        clone_failures,
    })
}

fn make_pull_tee(cx: &mut ConfigCx<'_>) -> Result<PullTee, String> {
    let (noutputs, clone_failures) = configure(cx)?;
    Ok(PullTee {
        noutputs,
        clone_failures,
    })
}

/// Deep copies of every packet of `b`; failures are counted.
#[inline]
fn copies(cx: &Cx<'_>, b: &Batch, failures: &PerThreadCount) -> Batch {
    let mut out = Batch::new();
    for p in b.iter() {
        match p.clone_packet() {
            Some(q) => out.push(q),
            None => failures.inc(cx.thread()),
        }
    }
    out
}

impl Element for Tee {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("drops", |e, _| {
        e.clone_failures.get().to_string()
    })];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let last = self.noutputs.saturating_sub(1);
        for port in 0..last {
            let c = copies(cx, &batch, &self.clone_failures);
            if !c.is_empty() {
                cx.push(port, c);
            }
        }
        cx.push(last, batch);
    }
}

impl Element for PullTee {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("drops", |e, _| {
        e.clone_failures.get().to_string()
    })];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let batch = cx.pull(0, max)?;
        for port in 1..self.noutputs {
            let c = copies(cx, &batch, &self.clone_failures);
            if !c.is_empty() {
                cx.push(port, c);
            }
        }
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::{Batch, Packet};
    use paraclick_runtime::testing::TestSink;
    use paraclick_runtime::Router;

    #[test]
    fn tee_copies_to_every_output() {
        let h = harness("Tee", 3);
        let mut p = pkt(&[1, 2, 3]);
        p.anno_mut().paint = 4;
        p.set_network_header(1, 1);
        h.push(0, vec![p, pkt(&[9])]);
        for port in 0..3 {
            let out = h.output(port);
            assert_eq!(out.len(), 2, "port {port}");
            assert_eq!(out[0].data(), &[1, 2, 3]);
            assert_eq!(out[0].anno().paint, 4);
            assert_eq!(out[0].network_header_offset(), Some(1));
            assert_eq!(out[1].data(), &[9]);
        }
        assert_eq!(h.drops(), 0);
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn tee_copies_are_independent() {
        // Output 0 gets a copy, pushed before the original goes out
        // output 1: writing into one must not show in the other.
        let h = harness("Tee(2)", 2);
        h.push(0, vec![pkt(&[5, 5])]);
        let mut a = h.output(0);
        let b = h.output(1);
        a[0].data_mut()[0] = 0;
        assert_eq!(b[0].data(), &[5, 5]);
    }

    #[test]
    fn tee_n_must_match() {
        assert!(try_harness("Tee(2)", 3)
            .err()
            .unwrap()
            .contains("expected 2 outputs"));
        assert_err(
            try_harness("Tee(x)", 1),
            "e :: Tee: N: expected unsigned integer",
        );
    }

    #[test]
    fn clone_failure_is_counted() {
        std::thread::spawn(|| {
            let h = harness("Tee", 2);
            let p = pkt(&[1]);
            // Exhaust this thread's pool so the copy cannot be made.
            let mut hog = Vec::new();
            while let Some(q) = Packet::new(1) {
                hog.push(q);
            }
            h.push(0, vec![p]);
            drop(hog);
            assert_eq!(h.output(0).len(), 0);
            assert_eq!(tags(&h.output(1)), vec![1], "the original still goes out");
            assert_eq!(h.read("drops").unwrap(), "1");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pull_tee() {
        let r = Router::from_str(
            "q :: Queue(10) -> pt :: PullTee -> Discard; pt[1] -> o1 :: TestSink;\
             pt[2] -> o2 :: TestSink; Idle -> q;",
            &reg(),
            1,
        )
        .map_err(|d| {
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap();
        r.push_into("q", 0, Batch::from(vec![pkt(&[1]), pkt(&[2])]))
            .unwrap();
        let got = r.pull_from("pt", 0, 10).unwrap().unwrap();
        assert_eq!(tags(got.as_slice()), vec![1, 2]);
        for sink in ["o1", "o2"] {
            let s = r.element::<TestSink>(sink).unwrap().take();
            assert_eq!(tags(&s), vec![1, 2], "{sink}");
        }
        assert!(r.pull_from("pt", 0, 10).unwrap().is_none());
        assert_eq!(r.read_handler("pt.drops").unwrap(), "0");
    }
}
