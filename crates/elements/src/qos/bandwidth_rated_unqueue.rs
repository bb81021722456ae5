//! # BandwidthRatedUnqueue
//!
//! BandwidthRatedUnqueue(RATE, [keywords BURST_DURATION, BURST_BYTES])
//!
//! Pull-to-push converter at a bandwidth.
//!
//! Pulls packets at the given RATE (a bandwidth) from its input and pushes
//! them out its output, one packet at a time while its token bucket of
//! bytes is not in debt, each then taking its size from the bucket; a
//! packet larger than what is left still goes, and leaves a debt that is
//! repaid before the next one goes. This is Click's bucket: it starts
//! full, holds 20 ms worth of bytes unless BURST_DURATION or BURST_BYTES
//! says otherwise, keeps a reserve of 128 KiB below that burst (the most
//! debt a packet can leave), and is refilled once a millisecond by the
//! rate's share rounded down (as RatedUnqueue's, see `paraclick doc
//! RatedUnqueue`). A packet's size is its length plus its extra-length
//! annotation. When the bucket holds enough that a whole burst would go
//! one packet at a time whatever the packets' sizes (up to 128 KiB each),
//! it pulls the burst at once (up to 32 packets a run), with one refill
//! and one charge: the packets that go are the same, at a fraction of the
//! cost per packet on a fast link.
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
