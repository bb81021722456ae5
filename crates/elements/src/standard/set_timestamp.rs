//! # SetTimestamp
//!
//! SetTimestamp([TIMESTAMP, keywords FIRST, DELTA])
//!
//! Stores the time in each packet's timestamp annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets the timestamp annotation to TIMESTAMP, or, without TIMESTAMP, to
//! the system time at which the packet reached SetTimestamp (read once per
//! batch: the packets of a batch arrive together).
//!
//! Arguments:
//! - `TIMESTAMP` (seconds since the epoch, `SEC.FRAC`): a fixed time.
//! - `FIRST` (boolean, default false): set the packet's "first timestamp"
//!   annotation instead of its timestamp annotation.
//! - `DELTA` (boolean, default false): set the timestamp annotation to its
//!   difference from the first timestamp annotation.
//!
//! paraclick keeps the first timestamp annotation in user annotation
//! bytes 16..24 (nanoseconds, little-endian); see
//! [`first_timestamp`] and [`set_first_timestamp`].
//!
//! Example:
//!
//!     FromDevice(eth0) -> SetTimestamp -> Queue -> ...

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

/// Where the first timestamp annotation lives in the user annotation area.
pub const FIRST_TIMESTAMP_ANNO: std::ops::Range<usize> = 16..24;

/// The packet's "first timestamp" annotation (zero if unset).
#[inline]
pub fn first_timestamp(p: &Packet) -> Timestamp {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p.anno().user[FIRST_TIMESTAMP_ANNO]);
    Timestamp(i64::from_le_bytes(b))
}

#[inline]
pub fn set_first_timestamp(p: &mut Packet, t: Timestamp) {
    p.anno_mut().user[FIRST_TIMESTAMP_ANNO].copy_from_slice(&t.0.to_le_bytes());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Now,
    Time(Timestamp),
    FirstNow,
    FirstTime(Timestamp),
    Delta,
}

pub struct SetTimestamp {
    action: Action,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("SetTimestamp", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetTimestamp, String> {
    let mut a = cx.args();
    let ts = match a.read_p::<String>("TIMESTAMP") {
        Some(s) => Some(
            Timestamp::parse(&s)
                .ok_or_else(|| format!("TIMESTAMP: expected timestamp, not '{s}'"))?,
        ),
        None => None,
    };
    let first = a.read::<bool>("FIRST").unwrap_or(false);
    let delta = a.read::<bool>("DELTA").unwrap_or(false);
    a.complete()?;
    let action = match (delta, first, ts) {
        (true, false, None) => Action::Delta,
        (true, _, _) => return Err("DELTA cannot be combined with FIRST or TIMESTAMP".into()),
        (false, false, None) => Action::Now,
        (false, false, Some(t)) => Action::Time(t),
        (false, true, None) => Action::FirstNow,
        (false, true, Some(t)) => Action::FirstTime(t),
    };
    Ok(SetTimestamp { action })
}

impl SetTimestamp {
    #[inline]
    fn apply(&self, cx: &Cx<'_>, b: &mut Batch) {
        match self.action {
            Action::Now => {
                let t = cx.timestamp();
                b.iter_mut().for_each(|p| p.set_timestamp(t));
            }
            Action::Time(t) => b.iter_mut().for_each(|p| p.set_timestamp(t)),
            Action::FirstNow => {
                let t = cx.timestamp();
                b.iter_mut().for_each(|p| set_first_timestamp(p, t));
            }
            Action::FirstTime(t) => b.iter_mut().for_each(|p| set_first_timestamp(p, t)),
            Action::Delta => b.iter_mut().for_each(|p| {
                let d = p.timestamp().0.wrapping_sub(first_timestamp(p).0);
                p.set_timestamp(Timestamp(d));
            }),
        }
    }
}

impl Element for SetTimestamp {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        self.apply(cx, &mut batch);
        cx.push(0, batch);
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let mut b = cx.pull(0, max)?;
        self.apply(cx, &mut b);
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;

    #[test]
    fn now() {
        let h = harness("SetTimestamp", 1);
        let before = Timestamp::now();
        h.push(0, vec![pkt(&[1]), pkt(&[2])]);
        let after = Timestamp::now();
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        for p in &out {
            assert!(p.timestamp() >= before && p.timestamp() <= after);
            assert_eq!(first_timestamp(p), Timestamp::ZERO);
        }
    }

    #[test]
    fn fixed_time() {
        let h = harness("SetTimestamp(1000000000.5)", 1);
        h.push(0, vec![pkt(&[1])]);
        let p = &h.output(0)[0];
        assert_eq!(
            p.timestamp(),
            Timestamp::from_parts(1_000_000_000, 500_000_000)
        );
        assert_eq!(p.timestamp().to_string(), "1000000000.500000");
    }

    #[test]
    fn first_and_delta() {
        let h = harness("SetTimestamp(2.25, FIRST true)", 1);
        let mut p = pkt(&[1]);
        p.set_timestamp(Timestamp::from_parts(5, 0));
        h.push(0, vec![p]);
        let p = h.output(0).pop().unwrap();
        assert_eq!(first_timestamp(&p), Timestamp::from_parts(2, 250_000_000));
        assert_eq!(p.timestamp(), Timestamp::from_parts(5, 0), "untouched");
        let h = harness("SetTimestamp(DELTA true)", 1);
        h.push(0, vec![p]);
        let p = h.output(0).pop().unwrap();
        assert_eq!(p.timestamp(), Timestamp::from_parts(2, 750_000_000));
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("SetTimestamp(yesterday)", 1),
            "e :: SetTimestamp: TIMESTAMP: expected timestamp, not 'yesterday'",
        );
        assert_err(
            try_harness("SetTimestamp(1, DELTA true)", 1),
            "e :: SetTimestamp: DELTA cannot be combined with FIRST or TIMESTAMP",
        );
        assert_err(
            try_harness("SetTimestamp(FIRST maybe)", 1),
            "e :: SetTimestamp: FIRST: expected boolean (true or false)",
        );
    }
}
