//! # Meter
//!
//! Meter(RATE1, RATE2, ..., RATEn)
//!
//! Classifies a packet stream by its rate (packets per second).
//!
//! Measures the rate of packet arrival in packets per second with an
//! exponentially weighted moving average (time constant 100 ms; the
//! estimate at a packet's arrival counts that packet), and sends each
//! packet out the output that corresponds to the current rate. With n
//! RATE arguments (each less than the next) there are n+1 outputs: a rate
//! below RATE1 goes to output 0, at least RATE1 but below RATE2 to output
//! 1, and so on; at least RATEn to output n. The whole stream goes to one
//! output at a time; to split it at a rate, use RatedSplitter.
//!
//! Ports: 1 input, n+1 outputs. Processing: push.
//!
//! Arguments:
//! - `RATE1` ... `RATEn` (real, packets per second, increasing).
//!
//! Handlers:
//! - `rate` (read): the current rate estimate.
//!
//! Example:
//!
//!     ... -> m :: Meter(10000) -> ...;
//!     m[1] -> Discard;

use super::rate::{check_rate, Ewma, Unit, METER_TAU};
use paraclick_packet::Packet;
use paraclick_runtime::args::Bandwidth;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::Mutex;
use std::time::Instant;

/// Meter and BandwidthMeter.
pub struct Meter {
    unit: Unit,
    rates: Vec<f64>,
    avg: Mutex<Ewma>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Meter", "1/2-", "h", make_packets)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_packets(cx: &mut ConfigCx<'_>) -> Result<Meter, String> {
    make(cx, Unit::Packets)
}

pub(crate) fn make(cx: &mut ConfigCx<'_>, unit: Unit) -> Result<Meter, String> {
    let mut a = cx.args();
    let raw = a.rest();
    a.complete()?;
    if raw.is_empty() {
        return Err("expected at least one RATE".into());
    }
    let mut rates = Vec::new();
    for r in &raw {
        let v = match unit {
            Unit::Packets => r
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("RATE '{r}' is not a number"))?,
            Unit::Bytes => paraclick_runtime::FromArg::from_arg(r, cx.env)
                .map(|b: Bandwidth| b.0)
                .map_err(|e| format!("RATE '{r}': {e}"))?,
        };
        rates.push(check_rate(v)?);
    }
    if rates.windows(2).any(|w| w[0] >= w[1]) {
        return Err("rates must be increasing".into());
    }
    if cx.noutputs != rates.len() + 1 {
        return Err(format!(
            "{} rates need {} outputs, not {}",
            rates.len(),
            rates.len() + 1,
            cx.noutputs
        ));
    }
    Ok(Meter {
        unit,
        rates,
        avg: Mutex::new(Ewma::new(METER_TAU)),
    })
}

impl Meter {
    /// The output for a rate.
    fn output(&self, r: f64) -> usize {
        self.rates.iter().take_while(|&&x| r >= x).count()
    }

    /// Records a packet of `cost` at `now`; its output.
    fn classify(&self, now: Instant, cost: f64) -> usize {
        let r = self
            .avg
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .update(now, cost);
        self.output(r)
    }
}

impl Action for Meter {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("rate", |e, hx| {
        // The estimate decays on the router's clock, as arrivals count.
        let r = e
            .avg
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read(hx.now());
        crate::util::fmt_rate((r * 1000.0).round() / 1000.0)
    })];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        Verdict::Out(self.classify(cx.now(), self.unit.cost(p)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use super::*;
    use std::time::Duration;

    fn meter(r: &paraclick_runtime::Router) -> &Meter {
        r.element::<Meter>("m").unwrap()
    }

    #[test]
    fn classifies_by_the_measured_rate() {
        let r = conf(
            "Idle -> m :: Meter(100, 1000); m[0] -> Discard; m[1] -> Discard; m[2] -> Discard;",
        );
        let m = meter(&r);
        let t0 = Instant::now();
        // 50 pkt/s for 2 s: output 0; then 500 pkt/s: output 1 once the
        // average catches up; then 5000 pkt/s: output 2.
        let mut t = t0;
        let mut last = 9;
        for _ in 0..100 {
            t += Duration::from_millis(20);
            last = m.classify(t, 1.0);
        }
        assert_eq!(last, 0);
        for _ in 0..1000 {
            t += Duration::from_millis(2);
            last = m.classify(t, 1.0);
        }
        assert_eq!(last, 1);
        for _ in 0..10000 {
            t += Duration::from_micros(200);
            last = m.classify(t, 1.0);
        }
        assert_eq!(last, 2);
        assert_eq!(m.output(99.9), 0);
        assert_eq!(m.output(100.0), 1);
        assert_eq!(m.output(1000.0), 2);
    }

    #[test]
    fn the_rate_handler_decays_on_the_routers_clock() {
        // Simulated time: 10 packets at one moment read 10 / 100 ms = 100
        // pkt/s then, and e^-1 of it one time constant (100 ms) later.
        let h = paraclick_runtime::testing::Harness::simulated(
            &crate::test_kit::reg(),
            "Meter(1000)",
            1,
            2,
        )
        .unwrap();
        h.push(0, crate::test_kit::pkts(10, 60));
        assert_eq!(h.output(0).len(), 10);
        assert_eq!(h.read("rate").unwrap(), "100");
        h.advance(Duration::from_millis(100));
        assert_eq!(h.read("rate").unwrap(), "36.788");
    }

    #[test]
    fn bandwidth_meter_and_bad_configs() {
        let r = conf("Idle -> m :: BandwidthMeter(20kBps); m[0] -> Discard; m[1] -> Discard;");
        let m = meter(&r);
        let mut t = Instant::now();
        let mut last = 9;
        // 1000-byte packets every 100 ms: 10 kB/s.
        for _ in 0..50 {
            t += Duration::from_millis(100);
            last = m.classify(t, 1000.0);
        }
        assert_eq!(last, 0);
        // Every 20 ms: 50 kB/s.
        for _ in 0..100 {
            t += Duration::from_millis(20);
            last = m.classify(t, 1000.0);
        }
        assert_eq!(last, 1);
        assert!(bad("Idle -> m :: Meter; m[0] -> Discard;"));
        assert!(bad(
            "Idle -> m :: Meter(10, 5); m[0] -> Discard; m[1] -> Discard; m[2] -> Discard;"
        ));
        assert!(bad(
            "Idle -> m :: Meter(10, 20); m[0] -> Discard; m[1] -> Discard;"
        ));
        assert!(bad(
            "Idle -> m :: BandwidthMeter(fast); m[0] -> Discard; m[1] -> Discard;"
        ));
    }
}
