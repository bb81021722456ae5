//! Facts about element classes the planner reads: which it may
//! replicate, which are queues, how they move the IP header. Each is
//! declared by its class ([`paraclick_runtime::ClassSpec`]), not listed
//! here by name, so a new class that declares one is planned for as the
//! classes that already do.

use super::*;
use std::sync::{OnceLock, RwLock};

/// The classes the planner knows: the full registry's, and those of each
/// registry a [`Graph`] was built with ([`learn_classes`]).
fn known() -> &'static RwLock<Registry> {
    static KNOWN: OnceLock<RwLock<Registry>> = OnceLock::new();
    KNOWN.get_or_init(|| RwLock::new(paraclick_io::full_registry()))
}

/// Makes the classes of `reg` the planner does not know yet known to it
/// (a program's own classes, a test's): their facts then count as the
/// full registry's do. A class it knows keeps its facts.
pub fn learn_classes(reg: &Registry) {
    let names = reg.names();
    {
        let k = known().read().unwrap_or_else(|e| e.into_inner());
        if names.iter().all(|n| k.get(n).is_some()) {
            return;
        }
    }
    let mut k = known().write().unwrap_or_else(|e| e.into_inner());
    for n in names {
        if k.get(n).is_some() {
            continue;
        }
        let Some(spec) = reg.get(n) else { continue };
        let target = spec.name;
        if k.get(target).is_none() {
            k.register(spec.clone());
        }
        if target != n {
            k.alias(n, target);
        }
    }
}

/// The facts `class` declares ([`paraclick_runtime::ClassSpec`]); None
/// for a class the planner does not know.
fn class_spec(class: &str) -> Option<paraclick_runtime::ClassSpec> {
    known()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(class)
        .cloned()
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

/// [`replicable`] for one element of the configuration: one given a
/// keyword its class says makes it keep state all flows share
/// ([`paraclick_runtime::ClassSpec::shared_when`]) is kept whole (a
/// Counter with COUNT_CALL: each replica's count would reach N on its
/// own).
pub fn replicable_el(e: &FlatElement) -> Result<(), String> {
    if let Some(c) = class_spec(&e.class) {
        let given: Vec<String> = paraclick_lang::args::split_args(&e.config)
            .iter()
            .filter_map(|a| paraclick_lang::args::split_keyword(a).map(|(k, _)| k.to_string()))
            .collect();
        if let Some((_, why)) = c
            .shared_when
            .iter()
            .find(|(k, _)| given.iter().any(|g| g == k))
        {
            return Err((*why).into());
        }
    }
    replicable(&e.class)
}

pub(crate) fn is_queue(class: &str) -> bool {
    class_spec(class).is_some_and(|c| c.kind == paraclick_runtime::Kind::Queue)
}

/// Classes of a pull path a scheduler replication may copy, and the
/// puller it may copy with them: those that say so
/// ([`paraclick_runtime::ClassSpec::replicable_with_queues`]), keeping
/// no rate (each replica schedules its own flow groups; a shaper's or a
/// rated scheduler's rate would have to be shared out).
pub(crate) fn replicable_with_queues(class: &str) -> bool {
    class_spec(class).is_some_and(|c| c.replicable_with_queues)
}

/// Whether replicas of `class` are named in the original's `REPLICAS`
/// keyword, so its handlers report the sums
/// ([`paraclick_runtime::ClassSpec::sums_replicas`]).
pub fn sums_replicas(class: &str) -> bool {
    class_spec(class).is_some_and(|c| c.sums_replicas)
}

/// How many bytes from the IP header's source address a flow split may
/// hash when it replicates elements of `classes`: 12 (addresses and
/// ports), or 8 (the addresses) where one's per-flow state is keyed by
/// the addresses only ([`paraclick_runtime::FlowKey`]: IPReassembler).
pub fn flow_hash_len<'a>(classes: impl IntoIterator<Item = &'a str>) -> usize {
    let by_addresses = classes.into_iter().any(|c| {
        class_spec(c).is_some_and(|c| c.flow_key == paraclick_runtime::FlowKey::Addresses)
    });
    if by_addresses {
        8
    } else {
        12
    }
}

/// Where the IP header starts after element `e`, given where it starts in
/// the packets entering it (`before`), as its class declares
/// ([`paraclick_runtime::HeaderChange`]); None where that is not known.
pub fn ip_offset_after(e: &FlatElement, before: i64) -> Option<i64> {
    use paraclick_runtime::HeaderChange;
    let arg = || e.config.trim().parse::<i64>().ok();
    match class_spec(&e.class).map_or(HeaderChange::Keeps, |c| c.header_change) {
        HeaderChange::Keeps => Some(before),
        HeaderChange::StripsArg => arg().map(|n| before - n),
        HeaderChange::UnstripsArg => arg().map(|n| before + n),
        HeaderChange::Prepends(n) => i64::try_from(n).ok().map(|n| before + n),
        HeaderChange::Strips(n) => i64::try_from(n).ok().map(|n| before - n),
        HeaderChange::Unknown => None,
    }
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
