//! # BandwidthRatedSplitter
//!
//! BandwidthRatedSplitter(RATE, [keywords BURST_DURATION, BURST_BYTES])
//!
//! Splits a flow of packets at a bandwidth.
//!
//! Incoming packets up to RATE (a bandwidth such as `384kbps`) go out
//! output 0; the rest go out output 1, or are dropped (counted, reason
//! `over rate`) when output 1 is not connected. Unlike
//! BandwidthMeter, RATE still goes out output 0 when the input rate is
//! higher. The rate is Click's token bucket of bytes, starting full and
//! holding 20 ms worth unless BURST_DURATION or BURST_BYTES says
//! otherwise, refilled once a millisecond (see `paraclick doc
//! BandwidthRatedUnqueue`). A packet's size is its length plus its
//! extra-length annotation. A packet goes to output 0 whenever the bucket
//! is not in debt, and then takes its size: a packet larger than what is
//! left still goes, and the debt it leaves (at most 128 KiB) is repaid
//! before the next one goes.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! Arguments:
//! - `RATE` (bandwidth): token bucket fill rate.
//! - `BURST_DURATION` (time): the bucket holds RATE * BURST_DURATION.
//! - `BURST_BYTES` (integer): the bucket holds this many bytes.
//!
//! Handlers:
//! - `rate` (read/write): the rate of splitting, in bytes per second.
//!
//! Example:
//!
//!     ... -> s :: BandwidthRatedSplitter(1Mbps) -> Queue -> ...;
//!     s[1] -> Discard;

use super::rate::Unit;
use super::rated_splitter::{make, RatedSplitter};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::action("BandwidthRatedSplitter", "1/1-2", "h", make_bytes)
        .shared("a rate or schedule shared by all flows")
        .drop_reasons(super::rated_splitter::REASONS)
        .metadata_only()
}

fn make_bytes(cx: &mut ConfigCx<'_>) -> Result<RatedSplitter, String> {
    make(cx, Unit::Bytes)
}
