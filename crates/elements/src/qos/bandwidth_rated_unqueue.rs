//! # BandwidthRatedUnqueue
//!
//! BandwidthRatedUnqueue(RATE, [keywords BURST_DURATION, BURST_BYTES])
//!
//! Pull-to-push converter at a bandwidth.
//!
//! Pulls packets at the given RATE (a bandwidth) from its input and pushes
//! them out its output. The rate is a token bucket of bytes (the one
//! SharedTokenBucket uses), which starts full and holds 20 ms worth of
//! bytes unless BURST_DURATION or BURST_BYTES says otherwise. A packet's
//! size is its length plus its extra-length annotation. A packet is pulled
//! while the bucket is not in debt and its size is then taken, so a packet
//! larger than what is left passes and leaves the bucket in debt: the
//! long-term rate is exact for any packet size.
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `RATE` (bandwidth, such as `10Mbps` or `125kBps`; a bare number is
//!   bytes per second): token bucket fill rate.
//! - `BURST_DURATION` (time): the bucket holds RATE * BURST_DURATION.
//! - `BURST_BYTES` (integer): the bucket holds this many bytes.
//!
//! Handlers:
//! - `rate` (read/write): the RATE, in bytes per second (`...Bps`).
//! - `count` (read): packets moved.
//!
//! Example:
//!
//!     ... -> Queue -> BandwidthRatedUnqueue(20Mbps) -> ToDevice(eth0);

use super::rate::Unit;
use super::rated_unqueue::{make, RatedUnqueue};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("BandwidthRatedUnqueue", "1/1", "l/h", make_bytes)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_bytes(cx: &mut ConfigCx<'_>) -> Result<RatedUnqueue, String> {
    make(cx, Unit::Bytes)
}
