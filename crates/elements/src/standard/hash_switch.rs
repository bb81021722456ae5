//! # HashSwitch
//!
//! HashSwitch(OFFSET, LENGTH)
//!
//! Classifies packets by a hash of their contents.
//!
//! Ports: 1 input, 1 or more outputs. Processing: push.
//!
//! Chooses each packet's output from a hash of the LENGTH bytes starting
//! at OFFSET, so packets with the same bytes there always take the same
//! output (e.g. stochastic fair queuing per destination). The hash is the
//! sum S of those bytes; with 2, 4 or 8 outputs the output is
//! `(S ^ (S >> 4)) & (N - 1)`, otherwise `S mod N`. Packets too short to
//! hold the bytes are dropped (counted).
//!
//! Arguments:
//! - `OFFSET` (integer, mandatory): where the hashed bytes start.
//! - `LENGTH` (integer, mandatory, at least 1): how many bytes to hash.
//!
//! Example:
//!
//!     HashSwitch(16, 4)    // by IP destination address (no Ethernet header)

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct HashSwitch {
    offset: usize,
    end: usize,
    noutputs: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("HashSwitch", "1/1-", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<HashSwitch, String> {
    let mut a = cx.args();
    let offset = a.read_mp::<u32>("OFFSET") as usize;
    let length = a.read_mp::<u32>("LENGTH") as usize;
    a.complete()?;
    if length == 0 {
        return Err("LENGTH must be at least 1".into());
    }
    Ok(HashSwitch {
        offset,
        end: offset + length,
        noutputs: cx.noutputs.max(1),
    })
}

/// The output for `bytes` among `n` outputs.
#[inline]
pub fn hash_output(bytes: &[u8], n: usize) -> usize {
    let s: usize = bytes.iter().map(|&b| b as usize).sum();
    match n {
        2 | 4 | 8 => (s ^ (s >> 4)) & (n - 1),
        _ => s % n,
    }
}

impl Action for HashSwitch {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.data().get(self.offset..self.end) {
            Some(b) => Verdict::Out(hash_output(b, self.noutputs)),
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;

    #[test]
    fn hash_function() {
        assert_eq!(hash_output(&[1, 2], 3), 0);
        assert_eq!(hash_output(&[1, 3], 3), 1);
        assert_eq!(hash_output(&[0x10], 2), 1);
        assert_eq!(hash_output(&[0x11], 2), 0);
        assert_eq!(hash_output(&[0xff, 0xff], 1), 0);
    }

    #[test]
    fn same_bytes_same_output() {
        let h = harness("HashSwitch(1, 2)", 3);
        // bytes 1..3: [1,2] -> 3 % 3 = 0; [1,3] -> 1; [2,3] -> 2
        h.push(
            0,
            vec![
                pkt(&[10, 1, 2, 0xee]),
                pkt(&[11, 1, 3]),
                pkt(&[12, 2, 3, 9, 9]),
                pkt(&[13, 1, 2]),
                pkt(&[14, 1]),
            ],
        );
        assert_eq!(tags(&h.output(0)), vec![10, 13]);
        assert_eq!(tags(&h.output(1)), vec![11]);
        assert_eq!(tags(&h.output(2)), vec![12]);
        assert_eq!(h.drops(), 1, "too short");
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("HashSwitch(1)", 2),
            "e :: HashSwitch: missing mandatory LENGTH argument",
        );
        assert_err(
            try_harness("HashSwitch(1, 0)", 2),
            "e :: HashSwitch: LENGTH must be at least 1",
        );
        assert_err(
            try_harness("HashSwitch(-1, 2)", 2),
            "e :: HashSwitch: OFFSET: expected unsigned integer",
        );
    }
}
