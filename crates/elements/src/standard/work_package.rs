//! # WorkPackage
//!
//! WorkPackage([W, keywords ROUNDS])
//!
//! Does compute-heavy work on every packet: a stand-in for expensive
//! elements (encryption, deep inspection) in benchmarks of parallel
//! configurations.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! For each packet, runs W rounds (default 10) of a keyed 64-bit mixing
//! hash over the whole packet data, and stores the result in the packet's
//! flow-hash annotation (so the work cannot be optimized away). The packet
//! data is not changed. The cost grows with W × packet length.
//!
//! Handlers:
//! - `count` (read): packets processed.
//!
//! Example:
//!
//!     FastUDPFlows(0, 1000000, 256, ...) -> HashSwitch(34, 4)
//!     hs[0] -> Queue -> Unqueue -> WorkPackage(20) -> Discard;
//!     hs[1] -> Queue -> Unqueue -> WorkPackage(20) -> Discard;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};

pub struct WorkPackage {
    rounds: u32,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("WorkPackage", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<WorkPackage, String> {
    let mut a = cx.args();
    let w = match a.read_p::<u32>("W") {
        Some(w) => w,
        None => a.read::<u32>("ROUNDS").unwrap_or(10),
    };
    a.complete()?;
    Ok(WorkPackage {
        rounds: w,
        count: PerThreadCount::new(cx.nthreads),
    })
}

/// `rounds` passes of a multiply-xorshift mix over `data`.
pub fn work(data: &[u8], rounds: u32) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for r in 0..rounds {
        h ^= r as u64;
        for chunk in data.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
        }
    }
    h
}

impl Action for WorkPackage {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("count", |e, _| e.count.get().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let h = work(p.data(), self.rounds);
        p.anno_mut().flow_hash = h as u32;
        self.count.inc(cx.thread());
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::Harness;

    #[test]
    fn work_depends_on_data_and_rounds_and_leaves_data_alone() {
        assert_ne!(work(b"abc", 1), work(b"abd", 1));
        assert_ne!(work(b"abc", 1), work(b"abc", 2));
        let h = Harness::new(&crate::registry(), "WorkPackage(3)", 1).unwrap();
        let data: Vec<u8> = (0..100).collect();
        h.push(0, vec![Packet::from_slice(&data).unwrap()]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &data[..]);
        assert_eq!(out[0].anno().flow_hash, work(&data, 3) as u32);
        assert_eq!(h.read("count").unwrap(), "1");
    }
}
