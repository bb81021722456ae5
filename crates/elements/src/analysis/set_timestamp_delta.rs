//! # SetTimestampDelta
//!
//! SetTimestampDelta([keyword TYPE])
//!
//! Replaces packet timestamps with deltas.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Replaces each nonzero timestamp annotation with a difference. Zero
//! timestamps pass unchanged.
//!
//! Keywords:
//! - `TYPE` (default `RANGE`): `RANGE` means the delta from the first
//!   nonzero timestamp this element saw; `NOW` the delta from the
//!   packet's timestamp to the current time (now minus timestamp);
//!   `FIRST` the delta from the packet's first timestamp annotation to its
//!   timestamp (timestamp minus first timestamp).
//!
//! Handlers:
//! - `first` (read): the earliest nonzero timestamp seen (TYPE RANGE), or
//!   `0.000000`.
//! - `reset` (write): forget it; later timestamps are measured from the
//!   next nonzero timestamp.
//!
//! Example:
//!
//!     FromDump(f.pcap) -> SetTimestampDelta -> IPPrint(TIMESTAMP true) -> Discard

use super::fmt_time;
use crate::standard::set_timestamp::first_timestamp;
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Range,
    Now,
    First,
}

/// "No first timestamp yet".
const UNSET: i64 = i64::MIN;

pub struct SetTimestampDelta {
    kind: Kind,
    first: AtomicI64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetTimestampDelta", "1/1", "a", make)
        .shared("timestamps relative to the first packet of all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetTimestampDelta, String> {
    let mut a = cx.args();
    let kind: Option<String> = a.read("TYPE");
    a.complete()?;
    let kind = match kind.as_deref().map(str::to_ascii_uppercase).as_deref() {
        None | Some("RANGE") => Kind::Range,
        Some("NOW") => Kind::Now,
        Some("FIRST") => Kind::First,
        Some(k) => return Err(format!("TYPE: expected RANGE, NOW or FIRST, not '{k}'")),
    };
    Ok(SetTimestampDelta {
        kind,
        first: AtomicI64::new(UNSET),
    })
}

impl Action for SetTimestampDelta {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("first", |e, _| match e.first.load(Ordering::Relaxed) {
            UNSET => fmt_time(0),
            t => fmt_time(t),
        }),
        Handler::write("reset", |e, _, _| {
            e.first.store(UNSET, Ordering::Relaxed);
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = p.timestamp();
        if t.is_zero() {
            return Verdict::Out(0);
        }
        let d = match self.kind {
            Kind::Range => {
                let mut first = self.first.load(Ordering::Relaxed);
                while first == UNSET || t.0 < first {
                    // Packets may come from several threads: keep the minimum.
                    match self.first.compare_exchange_weak(
                        first,
                        t.0,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            first = t.0;
                            break;
                        }
                        Err(cur) => first = cur,
                    }
                }
                t.0 - first
            }
            Kind::Now => Timestamp::now().0.saturating_sub(t.0),
            Kind::First => t.0.saturating_sub(first_timestamp(p).0),
        };
        p.set_timestamp(Timestamp(d));
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::standard::set_timestamp::set_first_timestamp;
    use crate::test_kit::*;
    use paraclick_packet::Timestamp;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn range_deltas_from_first_nonzero() {
        let h = harness("SetTimestampDelta", 1);
        assert_eq!(h.read("first").unwrap(), "0.000000");
        h.push(0, vec![at(1, 0.0), at(2, 100.0), at(3, 101.25)]);
        let ts: Vec<i64> = h.output(0).iter().map(|p| p.timestamp().0).collect();
        assert_eq!(ts, vec![0, 0, 1_250_000_000]);
        assert_eq!(h.read("first").unwrap(), "100.000000");
        h.write("reset", "").unwrap();
        h.push(0, vec![at(4, 200.0), at(5, 200.5)]);
        let ts: Vec<i64> = h.output(0).iter().map(|p| p.timestamp().0).collect();
        assert_eq!(ts, vec![0, 500_000_000]);
    }

    #[test]
    fn first_and_now_types() {
        let h = harness("SetTimestampDelta(TYPE FIRST)", 1);
        let mut p = at(1, 10.0);
        set_first_timestamp(&mut p, Timestamp(4_000_000_000));
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].timestamp(), Timestamp(6_000_000_000));
        let h = harness("SetTimestampDelta(TYPE NOW)", 1);
        let now = Timestamp::now();
        let mut p = at(1, 0.0);
        p.set_timestamp(Timestamp(now.0 - 3_000_000_000));
        h.push(0, vec![p]);
        let d = h.output(0)[0].timestamp().0;
        assert!(
            (3_000_000_000..3_000_000_000 + 60_000_000_000).contains(&d),
            "{d}"
        );
        assert_err(
            try_harness("SetTimestampDelta(TYPE LATER)", 1),
            "e :: SetTimestampDelta: TYPE: expected RANGE, NOW or FIRST, not 'LATER'",
        );
    }
}
