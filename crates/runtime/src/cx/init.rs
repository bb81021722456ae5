//! [`InitCx`]: what `initialize` receives. Its control-plane methods
//! (`on_start`, `take_over_server`) are in [`crate::control`].

use crate::core::Core;
use std::time::{Duration, Instant};

/// What `initialize` can do: create tasks, schedule timers, find other
/// elements, and ask for tasks to run on particular threads.
pub struct InitCx<'a> {
    pub(crate) core: &'a Core,
    pub(crate) elem: usize,
    pub(crate) new_tasks: &'a mut Vec<(usize, usize, bool, bool)>,
    /// (element, one of its tasks or all of them, thread), in order.
    pub(crate) prefs: &'a mut Vec<(usize, Option<usize>, usize)>,
    pub(crate) timers: &'a mut Vec<(usize, usize, Duration)>,
    pub(crate) ntasks_here: usize,
    pub(crate) checking: bool,
}

impl InitCx<'_> {
    /// See [`crate::ConfigCx::allowed_file`].
    pub fn allowed_file(&self, path: &str) -> Result<std::path::PathBuf, String> {
        crate::registry::allowed_file(&self.core.arg_env.files, path)
    }

    /// Whether the router is only being checked (`paraclick check`): an
    /// element checks everything it would check, then returns before it
    /// opens devices or sockets, creates or truncates files, creates tap
    /// devices or changes system settings. Reading an input file is fine.
    pub fn checking(&self) -> bool {
        self.checking
    }

    /// Sets how often the adaptive scheduler rebalances tasks across
    /// threads (BalancedThreadSched's INTERVAL; at least a millisecond).
    /// The last element to ask wins. No effect under `--sched static` or
    /// with one thread, where nothing is rebalanced.
    pub fn set_balance_interval(&mut self, d: Duration) {
        let ns = d
            .max(Duration::from_millis(1))
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        self.core
            .balance_interval_ns
            .store(ns, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the adaptive scheduler runs (`--sched adaptive`, the
    /// default, with more than one thread).
    pub fn balancing(&self) -> bool {
        self.core.policy == crate::sched::SchedPolicy::Adaptive && self.core.nthreads > 1
    }

    /// Prints MESSAGE about this element on standard error while it
    /// initializes: `NAME :: CLASS: MESSAGE`, or in Click's form (see
    /// [`crate::registry::set_click_messages`]) `FILE:LINE: While
    /// initializing 'NAME :: CLASS':` and the message indented (a
    /// configuration given with `-e` is file `config`).
    pub fn message(&self, message: &str) {
        let esc = paraclick_lang::span::escape;
        let s = &self.core.slots[self.elem];
        if crate::registry::click_messages() {
            let file: &str = if &*s.span.file == "<expr>" {
                "config"
            } else {
                &s.span.file
            };
            eprintln!(
                "{}:{}: While initializing '{} :: {}':\n  {}",
                esc(file),
                s.span.line,
                esc(&s.name),
                esc(&s.class),
                esc(message)
            );
        } else {
            eprintln!("{} :: {}: {}", esc(&s.name), esc(&s.class), esc(message));
        }
    }

    /// Gives the element a task; returns its index for `run_task`.
    pub fn add_task(&mut self) -> usize {
        let idx = self.ntasks_here;
        self.ntasks_here += 1;
        self.new_tasks.push((self.elem, idx, false, false));
        idx
    }

    /// Lets task `task` of this element sleep while every queue upstream
    /// of its pull inputs is empty, until a push wakes it (Click's empty
    /// notifier; see [`crate::notifier`]). For tasks that pull and have no
    /// other work of their own.
    pub fn sleep_when_empty(&mut self, task: usize) {
        if let Some(t) = self.new_task(task) {
            t.2 = true;
        }
    }

    /// Makes task `task` of this element wait while a queue downstream of
    /// its push outputs is full, until a pull makes room (Click's full
    /// notifier). For sources that can pause.
    pub fn wait_for_room(&mut self, task: usize) {
        if let Some(t) = self.new_task(task) {
            t.3 = true;
        }
    }

    /// Task `task` of this element, as added (its flags still to set).
    fn new_task(&mut self, task: usize) -> Option<&mut (usize, usize, bool, bool)> {
        let e = self.elem;
        // this element's tasks are the last ones added
        self.new_tasks
            .iter_mut()
            .rev()
            .find(|t| t.0 == e && t.1 == task)
    }

    /// Schedules a timer of this element to fire `after` the router starts.
    pub fn schedule_after(&mut self, timer: usize, after: Duration) {
        self.timers.push((self.elem, timer, after));
    }

    /// Index of the element named `name`, as Click finds an element-name
    /// argument: from the innermost compound enclosing this element
    /// outwards (`c/d/x` asking for `rw` finds `c/d/rw`, then `c/rw`,
    /// then `rw`), so a compound's (or a slice's) names are its own.
    pub fn find(&self, name: &str) -> Option<usize> {
        let me = self.core.slots[self.elem].name.as_str();
        let mut ctx = me;
        while let Some((outer, _)) = ctx.rsplit_once('/') {
            if let Some(&i) = self.core.names.get(&format!("{outer}/{name}")) {
                return Some(i);
            }
            ctx = outer;
        }
        self.core.names.get(name).copied()
    }

    /// The elements an element-name argument means, as Click resolves
    /// them: the element named `name`, or, if `name` is a compound
    /// element, every element inside it (`name/...`, at any depth).
    /// Empty if neither exists.
    pub fn find_elements(&self, name: &str) -> Vec<usize> {
        if let Some(i) = self.find(name) {
            return vec![i];
        }
        let prefix = format!("{name}/");
        (0..self.core.slots.len())
            .filter(|&i| self.core.slots[i].name.starts_with(&prefix))
            .collect()
    }

    pub fn element_name(&self, i: usize) -> &str {
        &self.core.slots[i].name
    }

    /// The class of element `i` (for errors such as "'x' is a Queue,
    /// not an ARPTable").
    pub fn element_class(&self, i: usize) -> &str {
        &self.core.slots[i].class
    }

    pub fn element_count(&self) -> usize {
        self.core.slots.len()
    }

    /// The element at index `i`, as its concrete type.
    pub fn element<T: 'static>(&self, i: usize) -> Option<&T> {
        self.core.slots[i].element.as_any().downcast_ref()
    }

    /// What element `i` provides as `T` (Click's `cast`): a trait object
    /// type (`dyn RxClaims`) or a shared value's type (`Arc<SaTable>`);
    /// None if it provides none ([`crate::provide`](mod@crate::provide)).
    pub fn cast<T: ?Sized + 'static>(&self, i: usize) -> Option<&T> {
        crate::provide::cast(&*self.core.slots[i].element)
    }

    /// Asks that element `i`'s tasks run on `thread` (StaticThreadSched).
    pub fn prefer_thread(&mut self, i: usize, thread: usize) {
        self.prefs.push((i, None, thread));
    }

    /// Pins task `task` of this element (from [`InitCx::add_task`]) to
    /// `thread` (modulo the number of threads), as StaticThreadSched pins
    /// an element's every task; a later StaticThreadSched naming the
    /// element overrides it. For elements with a task per thread.
    pub fn pin_task(&mut self, task: usize, thread: usize) {
        self.prefs.push((self.elem, Some(task), thread));
    }

    pub fn nthreads(&self) -> usize {
        self.core.nthreads
    }

    /// This element's index.
    pub fn element_index(&self) -> usize {
        self.elem
    }

    /// The elements that element `i`'s connected push outputs feed, in
    /// output order (for elements that look downstream, like RED).
    pub fn push_peers(&self, i: usize) -> Vec<usize> {
        self.core.ports[i]
            .outputs
            .iter()
            .filter(|p| p.element().is_some())
            .map(|p| p.elem as usize)
            .collect()
    }

    /// The elements that element `i`'s connected pull inputs pull from.
    pub fn pull_peers(&self, i: usize) -> Vec<usize> {
        self.core.ports[i]
            .inputs
            .iter()
            .filter(|p| p.element().is_some())
            .map(|p| p.elem as usize)
            .collect()
    }

    /// Monotonic time from the router's clock (see [`crate::Cx::now`]).
    pub fn now(&self) -> Instant {
        self.core.clock.now()
    }

    /// Whether a handler exists (for elements that will call it later).
    pub fn has_handler(&self, spec: &str) -> bool {
        crate::handler::exists(self.core, spec, self.elem)
    }

    /// Checks a REPLICAS list (Counter's, FromDevice's): each name is an
    /// element of type `T` (`what`, for the error) that names no replicas
    /// of its own (`theirs`), so that reading the sums
    /// ([`crate::HandlerCx::sum_with`]) never goes round in a loop.
    pub fn check_replicas<T: 'static>(
        &self,
        names: &[String],
        what: &str,
        theirs: impl Fn(&T) -> &[String],
    ) -> Result<(), String> {
        for r in names {
            let e = self
                .find(r)
                .and_then(|i| self.element::<T>(i))
                .ok_or_else(|| format!("REPLICAS: no {what} named '{r}'"))?;
            if !theirs(e).is_empty() {
                return Err(format!(
                    "REPLICAS: {r} names replicas of its own (one element reports for all)"
                ));
            }
        }
        Ok(())
    }
}
