//! Basic elements: counting, discarding, queueing, copying, painting,
//! classifying, switching, stripping, timestamps, printing, address names.

use paraclick_runtime::Registry;

pub mod check_paint;
pub mod counter;
pub mod discard;
pub mod idle;
pub mod null;
pub mod paint;
pub mod paint_switch;
pub mod paint_tee;
pub mod queue;
pub mod unqueue;

#[cfg(test)]
mod test_util;

pub fn register(reg: &mut Registry) {
    reg.register(check_paint::spec());
    reg.register(counter::spec());
    reg.register(discard::spec());
    reg.register(idle::spec());
    reg.register(null::spec());
    reg.register(paint::spec());
    reg.register(paint_switch::spec());
    reg.register(paint_tee::spec());
    reg.register(queue::spec());
    reg.register(unqueue::spec());
}
