//! # RatedSplitter
//!
//! RatedSplitter(RATE, [keywords BURST_DURATION, BURST_SIZE])
//!
//! Splits a flow of packets at a rate in packets per second.
//!
//! Incoming packets up to RATE packets per second go out output 0; the
//! rest go out output 1, or are dropped (counted, reason `over rate`)
//! when output 1 is not connected. Unlike Meter, RATE packets per
//! second still go out output 0 when the input rate is higher. The rate
//! is Click's token bucket, as RatedUnqueue's: starting full, holding 20
//! ms worth of tokens unless BURST_DURATION or BURST_SIZE says otherwise
//! (a whole number of packets, at least one), refilled once a
//! millisecond by the rate's share rounded down (see `paraclick doc
//! RatedUnqueue`).
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! Arguments:
//! - `RATE` (real, packets per second, >= 0): token bucket fill rate.
//! - `BURST_DURATION` (time): the bucket holds RATE * BURST_DURATION.
//! - `BURST_SIZE` (integer): the bucket holds this many packets.
//!
//! Handlers:
//! - `rate` (read/write): the rate of splitting.
//!
//! Example:
//!
//!     elementclass RatedSampler {
//!       input -> rs :: RatedSplitter(2000);
//!       rs[0] -> t :: Tee; t[0] -> [0]output; t[1] -> [1]output;
//!       rs[1] -> [0]output;
//!     }

use super::rate::{check_rate, read_burst, Unit};
use super::rated_unqueue::Rated;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, Verdict};

/// RatedSplitter and BandwidthRatedSplitter.
pub struct RatedSplitter {
    bucket: Rated,
    /// What becomes of a packet over the rate: output 1, or a drop.
    over: Verdict,
}

/// The splitters' drop reasons (a packet over the rate, output 1 absent).
pub(crate) const REASONS: &[&str] = &["over rate"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("RatedSplitter", "1/1-2", "h", make_packets)
        .shared("a rate or schedule shared by all flows")
        .drop_reasons(REASONS)
        .metadata_only()
}

fn make_packets(cx: &mut ConfigCx<'_>) -> Result<RatedSplitter, String> {
    make(cx, Unit::Packets)
}

pub(crate) fn make(cx: &mut ConfigCx<'_>, unit: Unit) -> Result<RatedSplitter, String> {
    let mut a = cx.args();
    let rate = unit.read_rate(&mut a);
    let (dur, size) = read_burst(unit, &mut a);
    a.complete()?;
    let rate = check_rate(rate)?;
    Ok(RatedSplitter {
        bucket: Rated::new(unit, rate, dur, size),
        over: if cx.noutputs > 1 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

impl Action for RatedSplitter {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "rate",
        |e, _| e.bucket.show_rate(),
        |e, v, hx| e.bucket.write_rate(v, hx),
    )];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.bucket.start(ix.now());
        Ok(())
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let now = cx.now();
        let ok = match &self.bucket {
            Rated::Packets(b) => b.take_one(now),
            Rated::Bytes(b) => b.take_if_ready(now, Unit::Bytes.cost(p) as u64),
        };
        if ok {
            Verdict::Out(0)
        } else {
            self.over
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{pkts, reg};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::Harness;
    use std::time::Duration;

    #[test]
    fn the_bucket_goes_to_output_0_and_the_rest_to_1() {
        // RATE 0.001: the full bucket (one packet) and then nothing for
        // 1000 s.
        let h = Harness::new(&reg(), "RatedSplitter(0.001)", 2).unwrap();
        h.push(0, pkts(10, 60));
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.output(1).len(), 9);
        let h = Harness::new(&reg(), "RatedSplitter(1, BURST_SIZE 4)", 2).unwrap();
        h.push(0, pkts(10, 60));
        assert_eq!(h.output(0).len(), 4);
        assert_eq!(h.output(1).len(), 6);
        assert_eq!(h.read("rate").unwrap(), "1");
        h.write("rate", "2.5").unwrap();
        assert_eq!(h.read("rate").unwrap(), "2.5");
        assert_err(h.write("rate", "many"), "e.rate: expected real number");
    }

    #[test]
    fn without_output_1_the_packets_over_the_rate_are_dropped() {
        // Click's splitters run with output 1 unconnected: the packets
        // over the rate are dropped, counted with their reason.
        for conf in ["RatedSplitter(0.001)", "BandwidthRatedSplitter(8bps)"] {
            let h = Harness::new(&reg(), conf, 1).unwrap();
            h.push(0, pkts(10, 100));
            assert_eq!(h.output(0).len(), 1, "{conf}");
            assert_eq!(h.drops(), 9, "{conf}");
            assert_eq!(h.read("drop_reasons").unwrap(), "over rate 9\n", "{conf}");
        }
    }

    #[test]
    fn the_bucket_refills_by_whole_ticks_rounded_down() {
        // Simulated time. RATE 2, a one-packet bucket: its share of a
        // 1 ms tick is a hair under 1/500 of a packet, so the second
        // packet passes at 501 ms, not 500 (Click's arithmetic).
        let h = Harness::simulated(&reg(), "RatedSplitter(2)", 1, 2).unwrap();
        h.push(0, pkts(2, 60));
        assert_eq!((h.output(0).len(), h.output(1).len()), (1, 1));
        h.advance(Duration::from_millis(500));
        h.push(0, pkts(1, 60));
        assert_eq!((h.output(0).len(), h.output(1).len()), (0, 1));
        h.advance(Duration::from_millis(1));
        h.push(0, pkts(1, 60));
        assert_eq!((h.output(0).len(), h.output(1).len()), (1, 0));
    }

    #[test]
    fn a_new_rate_counts_from_the_routers_moment() {
        // Simulated time. RatedSplitter(1000) holds 20 packets (20 ms); a
        // second later the rate becomes 2000 (40 deep): the second passed
        // at the old rate, so the bucket holds the old 20, and the new
        // rate adds 20.5 in 10.25 ms.
        let h = Harness::simulated(&reg(), "RatedSplitter(1000)", 1, 2).unwrap();
        h.advance(Duration::from_secs(1));
        h.write("rate", "2000").unwrap();
        h.push(0, pkts(60, 60));
        assert_eq!(h.output(0).len(), 20);
        assert_eq!(h.output(1).len(), 40);
        h.advance(Duration::from_micros(10_250));
        h.push(0, pkts(30, 60));
        assert_eq!(h.output(0).len(), 20);
        assert_eq!(h.output(1).len(), 10);
    }

    #[test]
    fn bandwidth_splitter_counts_bytes() {
        // 1 byte/s (8bps), bucket of 250 bytes: 100-byte packets. A packet
        // goes while the bucket is not in debt, so the third goes on the
        // 50 bytes left, and the bucket is then in debt.
        let h = Harness::new(&reg(), "BandwidthRatedSplitter(8bps, BURST_BYTES 250)", 2).unwrap();
        h.push(0, pkts(6, 100));
        assert_eq!(h.output(0).len(), 3);
        assert_eq!(h.output(1).len(), 3);
        // A packet larger than the bucket passes on a full bucket.
        let h = Harness::new(&reg(), "BandwidthRatedSplitter(8bps, BURST_BYTES 50)", 2).unwrap();
        h.push(0, pkts(2, 100));
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.output(1).len(), 1);
        assert_eq!(h.read("rate").unwrap(), "1Bps");
        assert_err(
            Harness::new(&reg(), "BandwidthRatedSplitter(1Mbps, BURST_SIZE 3)", 2),
            "e :: BandwidthRatedSplitter: unknown keyword BURST_SIZE",
        );
    }

    #[test]
    fn a_big_packet_leaves_a_debt_repaid_before_the_next() {
        // Simulated time. 1000 bytes/s, a 100-byte bucket: a 1000-byte
        // packet goes on the full bucket and leaves about 900 bytes of
        // debt, repaid at a byte a millisecond; the next packet goes as
        // soon as it is (under 900 ms), not when the bucket is full again.
        let h = Harness::simulated(
            &reg(),
            "BandwidthRatedSplitter(1000Bps, BURST_BYTES 100)",
            1,
            2,
        )
        .unwrap();
        h.push(0, pkts(1, 1000));
        assert_eq!((h.output(0).len(), h.output(1).len()), (1, 0));
        h.advance(Duration::from_millis(880));
        h.push(0, pkts(1, 60));
        assert_eq!((h.output(0).len(), h.output(1).len()), (0, 1));
        h.advance(Duration::from_millis(20));
        h.push(0, pkts(2, 60));
        assert_eq!((h.output(0).len(), h.output(1).len()), (1, 1));
    }
}
