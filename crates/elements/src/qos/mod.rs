//! Quality of service: shaping, rate limiting, metering, active queue
//! management (RED), weighted schedulers and switches. The rate
//! arithmetic is one token bucket (SharedTokenBucket's) and one moving
//! average, in `rate.rs`.

use paraclick_runtime::Registry;

pub mod average_counter;
pub mod bandwidth_meter;
pub mod bandwidth_rated_splitter;
pub mod bandwidth_rated_unqueue;
pub mod bandwidth_shaper;
pub mod block;
pub mod burster;
pub mod codel;
pub mod delay_shaper;
pub mod delay_unqueue;
pub mod drr_sched;
pub mod input_switch;
pub mod link_unqueue;
pub mod meter;
pub mod pull_switch;
pub mod rate;
pub mod rated_splitter;
pub mod rated_unqueue;
pub mod red;
pub mod shaper;
pub mod stride_sched;
pub mod stride_switch;
pub mod suppressor;
#[cfg(test)]
mod test_util;
pub mod timed_unqueue;
pub mod token_bucket_test;

pub fn register(reg: &mut Registry) {
    reg.register(codel::spec());
    reg.register(shaper::spec());
    reg.register(bandwidth_shaper::spec());
    reg.register(delay_shaper::spec());
    reg.register(link_unqueue::spec());
    reg.register(rated_unqueue::spec());
    reg.register(bandwidth_rated_unqueue::spec());
    reg.register(delay_unqueue::spec());
    reg.register(timed_unqueue::spec());
    reg.register(burster::spec());
    reg.register(rated_splitter::spec());
    reg.register(bandwidth_rated_splitter::spec());
    reg.register(meter::spec());
    reg.register(bandwidth_meter::spec());
    reg.register(average_counter::spec());
    reg.register(red::spec());
    reg.register(red::adaptive_spec());
    reg.register(drr_sched::spec());
    reg.register(stride_sched::spec());
    reg.register(stride_switch::spec());
    reg.register(pull_switch::spec());
    reg.register(pull_switch::simple_spec());
    reg.register(pull_switch::static_spec());
    reg.register(input_switch::spec());
    reg.register(suppressor::spec());
    reg.register(block::spec());
    reg.register(token_bucket_test::spec());
}
