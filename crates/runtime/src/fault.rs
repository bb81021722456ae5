//! Fault domains: a panic in an element stops that element's domain, not
//! the router.
//!
//! A router built with [`BuildOptions::fault_domains`] (a substrate's
//! slices: element-name prefixes such as `s1`) runs each task of an
//! element in a domain (named `s1/...`) under `catch_unwind`. A panic
//! there marks the domain failed: its tasks leave every worklist, its
//! timers no longer run, the fault is recorded ([`Router::faults`]) and
//! reported on stderr; the other domains and the elements outside any
//! domain keep running. Packets sent to a failed domain wait in the
//! queues at its edge and are dropped there, counted, once those fill.
//! The packets in the hands of the failing task's elements when it
//! panicked are freed with the unwinding and counted as dropped by the
//! element whose task it was, for the reason [`STOPPED`] (its
//! `drop_reasons`, the router's `drops`): nothing is lost unaccounted.
//!
//! A panic outside every domain (or in a router without domains) ends
//! the worker as before.
//!
//! [`BuildOptions::fault_domains`]: crate::BuildOptions::fault_domains
//! [`Router::faults`]: crate::Router::faults

use crate::core::Core;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The drop reason of the packets freed when a domain's element panicked.
pub const STOPPED: &str = "slice stopped";

/// A domain's failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The domain (a prefix of element names).
    pub domain: String,
    /// The element whose task (or timer) was running when it panicked.
    pub element: String,
    /// The panic's message.
    pub message: String,
}

/// The domains of a router's elements.
pub(crate) struct Domains {
    /// Per element slot: its domain's index, or `u32::MAX` for none.
    of: Box<[u32]>,
    names: Vec<String>,
    failed: Box<[AtomicBool]>,
    faults: Mutex<Vec<Fault>>,
    /// Per domain: its CPU share on the threads it shares (0: none, it is
    /// not share-scheduled; see [`crate::share`]).
    pub(crate) share: Box<[f64]>,
    /// Per domain: the cycles the share scheduler charged it (every run
    /// of its tasks and timers on a share-scheduled thread).
    pub(crate) charged: Box<[AtomicU64]>,
    /// Per element slot: packets freed when a task of it panicked
    /// (counted as its drops, reason [`STOPPED`]).
    pub(crate) stopped: Box<[AtomicU64]>,
}

impl Domains {
    /// `None` if there are no domains. An element is in domain `d` if its
    /// name is `d/...`.
    /// `shares`: a CPU share per domain name (those not named have none).
    pub(crate) fn new<'a>(
        domains: &[String],
        shares: &[(String, f64)],
        names: impl Iterator<Item = &'a str>,
    ) -> Option<Box<Domains>> {
        if domains.is_empty() {
            return None;
        }
        let of: Box<[u32]> = names
            .map(|n| {
                domains
                    .iter()
                    .position(|d| {
                        n.len() > d.len()
                            && n.starts_with(d.as_str())
                            && n.as_bytes()[d.len()] == b'/'
                    })
                    .map_or(u32::MAX, |i| i as u32)
            })
            .collect();
        Some(Box::new(Domains {
            names: domains.to_vec(),
            failed: domains.iter().map(|_| AtomicBool::new(false)).collect(),
            faults: Mutex::new(Vec::new()),
            share: domains
                .iter()
                .map(|d| {
                    shares.iter().find(|(n, _)| n == d).map_or(0.0, |&(_, s)| {
                        if s.is_finite() && s > 0.0 {
                            s
                        } else {
                            0.0
                        }
                    })
                })
                .collect(),
            charged: domains.iter().map(|_| AtomicU64::new(0)).collect(),
            stopped: (0..of.len()).map(|_| AtomicU64::new(0)).collect(),
            of,
        }))
    }

    /// Packets element `elem` dropped as [`STOPPED`].
    pub(crate) fn stopped(&self, elem: usize) -> u64 {
        self.stopped
            .get(elem)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Whether any domain has a CPU share (its threads share-schedule).
    pub(crate) fn has_shares(&self) -> bool {
        self.share.iter().any(|&s| s > 0.0)
    }

    /// The number of domains.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// Per domain: its name and the cycles the share scheduler charged it.
    pub(crate) fn charged(&self) -> Vec<(String, u64)> {
        self.names
            .iter()
            .zip(self.charged.iter())
            .map(|(n, c)| (n.clone(), c.load(Ordering::Relaxed)))
            .collect()
    }

    pub(crate) fn domain(&self, elem: usize) -> Option<usize> {
        let d = self.of[elem];
        (d != u32::MAX).then_some(d as usize)
    }

    /// Whether `elem` is in a failed domain.
    pub(crate) fn failed(&self, elem: usize) -> bool {
        self.domain(elem)
            .is_some_and(|d| self.failed[d].load(Ordering::Acquire))
    }

    /// Whether domain `name` failed.
    pub(crate) fn domain_failed(&self, name: &str) -> Option<bool> {
        let d = self.names.iter().position(|n| n == name)?;
        Some(self.failed[d].load(Ordering::Acquire))
    }

    pub(crate) fn faults(&self) -> Vec<Fault> {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The message of a panic's payload.
fn message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// Runs `f` (a task or a timer of element `elem`) under the router's
/// fault domains: not at all if `elem`'s domain failed; if `f` panics
/// and `elem` is in a domain, fails the domain and returns `default`.
/// A panic outside every domain goes on unwinding.
#[inline]
pub(crate) fn guarded<R>(
    core: &Core,
    doms: &Domains,
    elem: usize,
    default: R,
    f: impl FnOnce() -> R,
) -> R {
    if doms.failed(elem) {
        return default;
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => match doms.domain(elem) {
            None => std::panic::resume_unwind(p),
            Some(d) => {
                // The packets the unwinding freed: dropped, counted.
                let lost = paraclick_packet::pool::take_unwound();
                if lost > 0 {
                    doms.stopped[elem].fetch_add(lost, Ordering::Relaxed);
                }
                fail(core, doms, d, elem, message(&*p));
                default
            }
        },
    }
}

/// Marks domain `d` failed, records why, and takes its tasks off every
/// worklist.
#[cold]
fn fail(core: &Core, doms: &Domains, d: usize, elem: usize, msg: String) {
    if doms.failed[d].swap(true, Ordering::AcqRel) {
        return;
    }
    let f = Fault {
        domain: doms.names[d].clone(),
        element: core.slots[elem].name.clone(),
        message: msg,
    };
    eprintln!(
        "paraclick: {} stopped: a panic in the task of {}: {}; the rest runs on",
        f.domain, f.element, f.message
    );
    doms.faults
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(f);
    let _m = core.migrating.lock().unwrap_or_else(|e| e.into_inner());
    for (id, t) in core.tasks.iter().enumerate() {
        if doms.domain(t.elem) == Some(d) {
            for ts in core.threads.iter() {
                ts.remove_task(id);
            }
        }
    }
}
