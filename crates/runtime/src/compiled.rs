//! Compiled entries: what an ahead-of-time build (`paraclick build`)
//! installs in the ordinary router.
//!
//! The dynamic router runs a chain of per-packet elements (actions and
//! single-input routing elements) in its fused loop: a hop is an indirect
//! call through the element's [`FusedAction`](crate::element::FusedAction)
//! and a lookup in the next output table. A program written for one
//! configuration knows every element's type and every connection, so it
//! can run the same chain as straight-line code: element `i`'s function
//! calls its action with the concrete type (through an [`ElemRef`]),
//! matches the coded result and calls the next element's function
//! directly. Whatever it does not compile (an element that is not
//! per-packet, a drop, a push to the element itself, an unconnected port)
//! goes back to the dynamic router through [`Cx::forward_code`] or
//! [`Cx::push_packet_into`], which do exactly what the fused loop does.
//!
//! The program installs such a function as a [`CompiledPush`] at an
//! element's input 0 ([`Router::install_compiled`]) before the router
//! runs. The one-packet path tests for one once per push (not per hop):
//! a push whose first hop leads to an element with an entry runs the
//! entry instead of the fused loop. Batches keep the dynamic path; so do
//! packets a tracer records or a capture sees, and a router built to
//! profile (which needs every hop) ignores entries.
//!
//! A build may also run the tasks itself ([`CompiledTasks`],
//! [`Router::install_compiled_tasks`]): a worker then calls it for each
//! plain task run instead of the element's `run_task`, one indirect call
//! with one target; the program tests the running element's index and
//! runs the source's or the puller's step with the push or pull it
//! compiled (`InfiniteSource::run_task_with`, `Discard::run_task_with`).
//!
//! ```ignore
//! struct Chain { c: ElemRef<Counter>, s: ElemRef<Strip> }
//! impl CompiledPush for Chain {
//!     fn push_packet(&self, cx: &mut Cx<'_>, mut p: Packet) {
//!         cx.run_as(self.c.index());
//!         match Action::action(self.c.get(), cx, &mut p).code() {
//!             0 => {}
//!             code => return cx.forward_code(self.c.index(), code, p),
//!         }
//!         cx.run_as(self.s.index());
//!         let code = Action::action(self.s.get(), cx, &mut p).code();
//!         cx.forward_code(self.s.index(), code, p)
//!     }
//! }
//! ```

use crate::cx::Cx;
use crate::element::Node;
use crate::router::Router;
use paraclick_lang::check::PortKind;
use paraclick_packet::Packet;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A typed handle on an element of a built router: [`ElemRef::get`] is
/// one load, with no check, because the handle keeps the element alive
/// (it holds the element's `Arc`).
pub struct ElemRef<T> {
    /// Keeps `ptr`'s element alive.
    _node: Arc<dyn Node>,
    ptr: NonNull<T>,
    index: usize,
}

// SAFETY: an `ElemRef<T>` gives out only `&T` (elements are shared
// immutably, across worker threads, by the router itself), and its `Arc`
// is `Send + Sync` (`Node: Send + Sync`).
unsafe impl<T: Sync> Send for ElemRef<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for ElemRef<T> {}

impl<T> Clone for ElemRef<T> {
    fn clone(&self) -> Self {
        ElemRef {
            _node: self._node.clone(),
            ptr: self.ptr,
            index: self.index,
        }
    }
}

impl<T: 'static> ElemRef<T> {
    /// The element.
    #[inline(always)]
    pub fn get(&self) -> &T {
        // SAFETY: `ptr` points at the element inside `_node`'s allocation
        // (what its `as_any` gave), which lives while `_node` does; it is
        // only ever shared immutably.
        unsafe { self.ptr.as_ref() }
    }

    /// The element's index in the router (for [`Cx::run_as`],
    /// [`Cx::forward_code`]).
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.index
    }
}

/// The one-packet entry an ahead-of-time build installs at an element's
/// input 0 ([`Router::install_compiled`]): called, with the element
/// running, for each single packet pushed into it.
pub trait CompiledPush: Send + Sync + 'static {
    fn push_packet(&self, cx: &mut Cx<'_>, p: Packet);
}

/// The task runs of an ahead-of-time build ([`Router::install_compiled_tasks`]):
/// a worker calls it for every task it runs (always the same call, so the
/// task dispatch is one well-predicted indirect call; the program then
/// tests the running element's index), with the task's element running
/// ([`Cx::element_index`]). A task it does not compile runs the element's
/// own ([`Cx::run_own_task`]); so does every task while somebody observes
/// ([`Cx::observing`]). Not called in a router built to profile, under
/// fault domains or CPU shares, nor in simulated time: those keep the
/// dynamic task runs.
pub trait CompiledTasks: Send + Sync + 'static {
    /// Task `task` of the running element, as its `run_task`: whether it
    /// did work.
    fn run_task(&self, cx: &mut Cx<'_>, task: usize) -> bool;
}

impl Router {
    /// Installs the task runs of an ahead-of-time build (see
    /// [`CompiledTasks`]). Refused once the router has run, and when one
    /// is installed already.
    pub fn install_compiled_tasks(&mut self, tasks: Box<dyn CompiledTasks>) -> Result<(), String> {
        let core = &*self.core;
        if core.workers_started.load(Ordering::Acquire) > 0
            || core.started_ns.load(Ordering::Acquire) != 0
        {
            return Err(
                "compiled task runs: the router has started; they are installed before it runs"
                    .into(),
            );
        }
        core.compiled_tasks
            .set(tasks)
            .map_err(|_| "compiled task runs: installed already".to_string())
    }

    /// Whether compiled task runs are installed ([`CompiledTasks`]).
    pub fn has_compiled_tasks(&self) -> bool {
        self.core.compiled_tasks.get().is_some()
    }

    /// Whether element `name` is an [`crate::Action`] (fused on input 0,
    /// batches too), as opposed to an element routing single packets or
    /// any other. `None`: no such element.
    pub fn element_acts(&self, name: &str) -> Option<bool> {
        let i = *self.core.names.get(name)?;
        Some(
            self.core.slots[i]
                .element
                .fused()
                .is_some_and(|f| f.fuses_batches()),
        )
    }

    /// A typed handle on element `name`. `None`: no such element, or it
    /// is not a `T`.
    pub fn element_ref<T: 'static>(&self, name: &str) -> Option<ElemRef<T>> {
        let index = *self.core.names.get(name)?;
        let node = self.core.slots[index].element.arc.clone();
        let ptr = NonNull::from(node.as_any().downcast_ref::<T>()?);
        Some(ElemRef {
            _node: node,
            ptr,
            index,
        })
    }

    /// The Rust type of element `name` as built (`std::any::type_name`
    /// of what [`Router::element`] and [`Router::element_ref`] take):
    /// exact also for classes whose type depends on their arguments.
    pub fn rust_type_of(&self, name: &str) -> Option<&'static str> {
        let i = *self.core.names.get(name)?;
        Some(self.core.slots[i].element.rust_type())
    }

    /// Whether element `name` is one the router fuses on its input 0 (an
    /// action, or an element routing single packets): a link of the
    /// chains an ahead-of-time build compiles. `None`: no such element.
    pub fn element_fuses(&self, name: &str) -> Option<bool> {
        let i = *self.core.names.get(name)?;
        Some(self.core.slots[i].element.fused().is_some())
    }

    /// Installs `entry` at input 0 of element `name`: every push
    /// connection into that input runs it for a single packet pushed
    /// there (the BURST 1 path) instead of the dynamic hops; batches, and
    /// packets a tracer records or a capture sees, keep the dynamic path.
    /// A second entry for the same element replaces the first. A router
    /// built to profile keeps the entry but never runs it (profiling
    /// charges every hop). Refused once the router has run, and for an
    /// element without a push input 0.
    pub fn install_compiled(
        &mut self,
        name: &str,
        entry: Box<dyn CompiledPush>,
    ) -> Result<(), String> {
        let core = &*self.core;
        let Some(&elem) = core.names.get(name) else {
            return Err(format!("compiled entry for '{name}': no such element"));
        };
        if core.workers_started.load(Ordering::Acquire) > 0
            || core.started_ns.load(Ordering::Acquire) != 0
        {
            return Err(format!(
                "compiled entry for '{name}': the router has started; entries are installed before it runs"
            ));
        }
        let slot = &core.slots[elem];
        match slot.input_kinds.first() {
            None => {
                return Err(format!(
                    "compiled entry for '{name}': {} has no input",
                    slot.class
                ))
            }
            Some(PortKind::Pull) => {
                return Err(format!(
                    "compiled entry for '{name}': its input 0 is a pull input; entries take pushes"
                ))
            }
            Some(PortKind::Push) => {}
        }
        let mut kept = core.compiled.lock().unwrap_or_else(|e| e.into_inner());
        let kept_entry = Arc::new(entry);
        // Only ever read through (shared): `AtomicPtr` wants `*mut`.
        let ptr = Arc::as_ptr(&kept_entry).cast_mut();
        kept.push(kept_entry);
        if core.profile.is_some() {
            return Ok(());
        }
        core.compiled_at[elem].store(ptr, Ordering::Release);
        for ports in core.ports.iter() {
            for peer in ports.outputs.iter() {
                if peer.elem as usize == elem && peer.port == 0 {
                    peer.set_compiled(ptr);
                }
            }
        }
        Ok(())
    }

    /// Where output `port` of element `name` pushes: the element's name
    /// and its input. `None`: no such element or output, or the output
    /// is not a connected push output. What a compiled chain assumes of
    /// each connection it follows, to check in a router built for a hot
    /// swap ([`crate::hot::Hot::set_rebind`]).
    pub fn push_peer(&self, name: &str, port: usize) -> Option<(&str, usize)> {
        let i = *self.core.names.get(name)?;
        let peer = self.core.ports[i].outputs.get(port)?;
        peer.element()?;
        let to = self.core.slots.get(peer.elem as usize)?;
        Some((to.name.as_str(), usize::from(peer.port)))
    }

    /// The elements with a compiled entry in effect, by index.
    pub fn compiled_elements(&self) -> Vec<usize> {
        self.core
            .compiled_at
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.load(Ordering::Acquire).is_null())
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests;
