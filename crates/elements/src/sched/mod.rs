//! Packet schedulers and thread placement.

use paraclick_runtime::Registry;

pub mod balanced_thread_sched;
pub mod coordinated_unqueue;
pub mod mt_die_test;
pub mod multi_queue_unqueue;
pub mod prio_sched;
pub mod round_robin_sched;
pub mod sched_order_test;
pub mod shared_token_bucket;
pub mod static_thread_sched;
#[cfg(test)]
mod test_util;

pub fn register(reg: &mut Registry) {
    reg.register(prio_sched::spec());
    reg.register(prio_sched::simple_spec());
    reg.register(round_robin_sched::spec());
    reg.register(round_robin_sched::simple_spec());
    reg.register(round_robin_sched::named("RRSched"));
    reg.register(round_robin_sched::named("SimpleRRSched"));
    reg.register(static_thread_sched::spec());
    reg.register(balanced_thread_sched::spec());
    reg.register(shared_token_bucket::spec());
    reg.register(coordinated_unqueue::spec());
    reg.register(multi_queue_unqueue::spec());
    reg.register(sched_order_test::spec());
    reg.register(mt_die_test::spec());
}
