//! Basic elements: counting, discarding, queueing, copying, painting,
//! classifying, switching, stripping, timestamps, printing, address names.

use paraclick_runtime::Registry;

pub mod address_info;
pub mod align;
pub mod alignment_info;
pub mod bypass;
pub mod check_length;
pub mod check_paint;
pub mod classifier;
pub mod clicky_info;
pub mod clipboard;
pub mod counter;
pub mod discard;
pub mod discard_no_free;
pub mod front_drop_queue;
pub mod hash_switch;
pub mod hub;
pub mod idle;
pub mod message;
pub mod mixed_queue;
pub mod notifier_queue;
pub mod null;
pub mod pad;
pub mod paint;
pub mod paint_switch;
pub mod paint_tee;
pub mod port_info;
pub mod print;
pub mod push_pull_null;
pub mod queue;
pub mod quick_note_queue;
pub mod random_bit_errors;
pub mod random_sample;
pub mod random_switch;
pub mod resize;
pub mod round_robin_switch;
pub mod schedule_info;
pub mod set_anno_byte;
pub mod set_timestamp;
pub mod simple_queue;
pub mod static_switch;
pub mod store_data;
pub mod strip;
pub mod strip_to_network_header;
pub mod switch;
pub mod tee;
pub mod thread_safe_queue;
pub mod timed_sink;
pub mod truncate;
pub mod unqueue;
pub mod unstrip;
pub mod work_package;

#[cfg(test)]
mod test_util;

#[cfg(test)]
mod queue_family_tests;

pub fn register(reg: &mut Registry) {
    reg.register(address_info::spec());
    reg.register(align::spec());
    reg.register(alignment_info::spec());
    reg.register(clicky_info::spec());
    reg.register(clipboard::spec());
    reg.register(bypass::spec());
    reg.register(check_length::spec());
    reg.register(check_paint::spec());
    reg.register(classifier::spec());
    reg.register(counter::spec());
    reg.register(discard::spec());
    reg.register(discard_no_free::spec());
    reg.register(hash_switch::spec());
    reg.register(hub::spec());
    reg.register(idle::spec());
    reg.register(message::spec());
    reg.register(message::error_spec());
    reg.register(null::spec());
    reg.register(pad::spec());
    reg.register(paint::spec());
    reg.register(paint_switch::spec());
    reg.register(paint_tee::spec());
    reg.register(port_info::spec());
    reg.register(print::spec());
    reg.register(push_pull_null::push_spec());
    reg.register(push_pull_null::pull_spec());
    reg.register(queue::spec());
    reg.register(queue::full_note_spec());
    reg.register(simple_queue::spec());
    reg.register(notifier_queue::spec());
    reg.register(thread_safe_queue::spec());
    reg.register(quick_note_queue::spec());
    reg.register(front_drop_queue::spec());
    reg.register(mixed_queue::spec());
    reg.register(random_bit_errors::spec());
    reg.register(random_sample::spec());
    reg.register(random_switch::spec());
    reg.register(resize::spec());
    reg.register(round_robin_switch::spec());
    reg.register(schedule_info::spec());
    reg.register(set_anno_byte::spec());
    reg.register(set_timestamp::spec());
    reg.register(static_switch::spec());
    reg.register(store_data::spec());
    reg.register(strip::spec());
    reg.register(strip_to_network_header::spec());
    reg.register(switch::spec());
    reg.register(tee::spec());
    reg.register(tee::pull_spec());
    reg.register(timed_sink::spec());
    reg.register(truncate::spec());
    reg.register(unqueue::spec());
    reg.register(work_package::spec());
    reg.register(unstrip::spec());
}
