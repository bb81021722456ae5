//! # StoreTimestamp
//!
//! StoreTimestamp([keywords OFFSET, TAIL])
//!
//! Stores packet timestamps in packet data.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Writes each packet's timestamp annotation into its data as 8 bytes:
//! the seconds (32-bit) then the nanoseconds (32-bit), both in network
//! byte order. Supply exactly one of OFFSET and TAIL.
//!
//! Keywords:
//! - `OFFSET` (integer, 0 to 65535): store the timestamp starting OFFSET bytes into
//!   the packet, first lengthening the packet (with zero bytes) to at
//!   least OFFSET+8 bytes if needed.
//! - `TAIL` (boolean): if true, append the timestamp to the packet.
//!
//! A packet that cannot be lengthened (no room in its buffer) is dropped
//! and counted.
//!
//! Handlers:
//! - `drops` (read): packets dropped for lack of room.
//!
//! Example:
//!
//!     ... -> SetTimestamp -> StoreTimestamp(TAIL true) -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};

pub struct StoreTimestamp {
    /// `None`: the tail.
    offset: Option<usize>,
    drops: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no tailroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StoreTimestamp", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StoreTimestamp, String> {
    let mut a = cx.args();
    // A packet offset (u16): 10^10 aborted lengthening the packet to it.
    let offset: Option<usize> = a.read::<u16>("OFFSET").map(usize::from);
    let tail: Option<bool> = a.read("TAIL");
    a.complete()?;
    let offset = match (offset, tail) {
        (Some(o), None | Some(false)) => Some(o),
        (None, Some(true)) => None,
        _ => return Err("supply exactly one of OFFSET and TAIL".into()),
    };
    Ok(StoreTimestamp {
        offset,
        drops: PerThreadCount::new(cx.nthreads),
    })
}

/// The 8 bytes StoreTimestamp writes for a timestamp.
pub fn encode(t: paraclick_packet::Timestamp) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(t.sec() as u32).to_be_bytes());
    b[4..].copy_from_slice(&t.nsec().to_be_bytes());
    b
}

impl Action for StoreTimestamp {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let off = self.offset.unwrap_or(p.len());
        let need = off.saturating_add(8);
        if p.len() < need {
            let old = p.len();
            if p.put(need - old).is_err() {
                self.drops.inc(cx.thread());
                return Verdict::DropFor(0);
            }
            p.data_mut()[old..].fill(0);
        }
        let b = encode(p.timestamp());
        p.data_mut()[off..off + 8].copy_from_slice(&b);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn tail_and_offset() {
        let h = harness("StoreTimestamp(TAIL true)", 1);
        h.push(0, vec![at(7, 1.5)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[7, 0, 0, 0, 1, 0x1d, 0xcd, 0x65, 0][..]);
        let h = harness("StoreTimestamp(OFFSET 3)", 1);
        let mut p = pkt(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        p.set_timestamp(paraclick_packet::Timestamp(2_000_000_001));
        h.push(0, vec![p, at(9, 1.0)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[1, 2, 3, 0, 0, 0, 2, 0, 0, 0, 1, 12][..]);
        // Lengthened with zeros up to OFFSET+8.
        assert_eq!(out[1].data(), &[9, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0][..]);
        assert_err(
            try_harness("StoreTimestamp", 1),
            "e :: StoreTimestamp: supply exactly one of OFFSET and TAIL",
        );
        // 10^10 aborted lengthening the first packet to it.
        assert_err(
            try_harness("StoreTimestamp(OFFSET 10000000000)", 1),
            "e :: StoreTimestamp: OFFSET: 10000000000 out of range",
        );
        assert_err(
            try_harness("StoreTimestamp(OFFSET 1, TAIL true)", 1),
            "e :: StoreTimestamp: supply exactly one of OFFSET and TAIL",
        );
    }
}
