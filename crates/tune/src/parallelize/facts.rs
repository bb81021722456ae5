//! Which classes the planner may replicate, and which are queues and
//! schedulers: facts about element classes, kept here together.

use super::*;

/// The facts `class` declares ([`paraclick_runtime::ClassSpec`]), from
/// the full registry (built once); None for a class it does not know.
fn class_spec(class: &str) -> Option<&'static paraclick_runtime::ClassSpec> {
    static REG: std::sync::OnceLock<paraclick_runtime::Registry> = std::sync::OnceLock::new();
    REG.get_or_init(paraclick_io::full_registry).get(class)
}

/// Whether instances of `class` may be replicated in a flow split, and if
/// not, why: the flow state its class declares
/// ([`paraclick_runtime::FlowState`]). A shared class's reason is its own
/// ("a queue: one FIFO for all flows").
pub fn replicable(class: &str) -> Result<(), String> {
    use paraclick_runtime::FlowState;
    match class_spec(class).map(|c| c.flow_state) {
        // Per flow: each replica keeps its flows' state. Counter: each
        // replica counts its flows; the original's handlers report the
        // sums (Counter's REPLICAS, written by the rewrite): the name the
        // user reads keeps its meaning. Not with calls ([`replicable_el`]).
        Some(FlowState::Stateless | FlowState::PerFlow) => Ok(()),
        Some(FlowState::Shared(why)) => Err(why.into()),
        Some(FlowState::Undeclared) | None => {
            Err("not known to be free of state shared across flows".into())
        }
    }
}

/// [`replicable`] for one element of the configuration: a Counter with
/// COUNT_CALL or BYTE_COUNT_CALL is kept whole (each replica's count
/// would reach N on its own).
pub fn replicable_el(e: &FlatElement) -> Result<(), String> {
    if e.class == "Counter" && e.config.contains("COUNT_CALL") {
        return Err(
            "its COUNT_CALL or BYTE_COUNT_CALL fires when all flows' count reaches N".into(),
        );
    }
    replicable(&e.class)
}

pub(crate) fn is_queue(class: &str) -> bool {
    class_spec(class).is_some_and(|c| c.kind == paraclick_runtime::Kind::Queue)
}

/// Classes of a pull path a scheduler replication may copy: schedulers
/// that keep no rate (each replica schedules its own flow groups; a
/// shaper's or a rated scheduler's rate would have to be shared out).
pub(crate) fn replicable_sched(class: &str) -> bool {
    matches!(
        class,
        "PrioSched"
            | "RoundRobinSched"
            | "DRRSched"
            | "StrideSched"
            | "SimplePrioSched"
            | "SimpleRoundRobinSched"
    )
}

/// The part `class` plays ([`paraclick_runtime::Kind`]); None for a
/// class the registry does not know.
pub(crate) fn class_kind(class: &str) -> Option<paraclick_runtime::Kind> {
    class_spec(class).map(|c| c.kind)
}

/// Whether `class`'s elements can each read one queue of a PACKET_FANOUT
/// group, copies summed under the original ([`paraclick_runtime::ClassSpec::fanout_queues`]).
pub(crate) fn fans_out(class: &str) -> bool {
    class_spec(class).is_some_and(|c| c.fanout_queues)
}
