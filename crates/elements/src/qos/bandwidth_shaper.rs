//! # BandwidthShaper
//!
//! BandwidthShaper(RATE)
//!
//! Shapes traffic to a maximum bandwidth (bytes per second).
//!
//! A pull element that lets at most RATE of traffic through: each pull
//! returns only the packets the rate allows at that moment (possibly
//! none). If it receives many evenly spaced pulls, it emits packets at
//! RATE with low burstiness (a token bucket 2 ms deep). A packet's size
//! is its length plus its extra-length annotation. A packet larger than
//! the bucket passes when the bucket is full and leaves it in debt, so the
//! long-term rate holds for any packet size. As Shaper, a pull the rate
//! turns away tells the pulling task when the bucket will next allow a
//! packet, so that its worker sleeps until then instead of polling.
//!
//! Ports: 1 input, 1 output. Processing: pull.
//!
//! Arguments:
//! - `RATE` (bandwidth, such as `384kbps` or `125kBps`; a bare number is
//!   bytes per second).
//!
//! Handlers:
//! - `rate` (read/write): the RATE, in bytes per second (`...Bps`).
//! - `reset` (write): starts the token bucket again, full.
//!
//! Example:
//!
//!     ... -> Queue -> BandwidthShaper(1Mbps) -> ToDevice(eth0);

use super::rate::Unit;
use super::shaper::{make, Shaper};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("BandwidthShaper", "1/1", "l", make_bytes)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_bytes(cx: &mut ConfigCx<'_>) -> Result<Shaper, String> {
    make(cx, Unit::Bytes)
}
