//! # BandwidthMeter
//!
//! BandwidthMeter(RATE1, RATE2, ..., RATEn)
//!
//! Classifies a packet stream by its arrival rate in bytes per second.
//!
//! Measures the rate of arrival in bytes per second (a packet's length
//! plus its extra-length annotation) with an exponentially weighted
//! moving average (time constant 100 ms; the estimate at a packet's
//! arrival counts that packet), and sends each packet out the output for
//! the current rate. Each RATE is a bandwidth, such as `384kbps`; earlier
//! rates must be less than later ones. With n rates there are n+1
//! outputs: below RATE1 to output 0, at least RATE1 but below RATE2 to
//! output 1, and so on; at least RATEn to output n.
//!
//! Ports: 1 input, n+1 outputs. Processing: push.
//!
//! Arguments:
//! - `RATE1` ... `RATEn` (bandwidths, increasing).
//!
//! Handlers:
//! - `rate` (read): the current rate estimate, in bytes per second.
//!
//! Example:
//!
//!     ... -> m :: BandwidthMeter(20kBps) -> ...;
//!     m[1] -> Discard;

use super::meter::{make, Meter};
use super::rate::Unit;
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::action("BandwidthMeter", "1/2-", "h", make_bytes)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_bytes(cx: &mut ConfigCx<'_>) -> Result<Meter, String> {
    make(cx, Unit::Bytes)
}
