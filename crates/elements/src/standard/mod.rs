//! Basic elements: counting, discarding, queueing, copying, painting.

use paraclick_runtime::Registry;

pub mod counter;
pub mod discard;
pub mod idle;
pub mod null;
pub mod queue;
pub mod unqueue;

pub fn register(reg: &mut Registry) {
    reg.register(counter::spec());
    reg.register(discard::spec());
    reg.register(idle::spec());
    reg.register(null::spec());
    reg.register(queue::spec());
    reg.register(unqueue::spec());
}
