//! The end of a run on SIGINT or SIGTERM. The signals are caught from the
//! start of a run, before the configuration is read: each one's handler
//! sets the signal's flag and writes a byte to a socket pair
//! (signal-hook's pipe) on which a thread waits. So a signal stops the
//! router at once, the thread costs nothing while the router runs (it
//! never wakes to look), and the end of a run does not wait for it.
//!
//! Until the router exists ([`StopWatch::arm`]) a signal is remembered
//! (and reported to the `early` callback); once armed, a remembered stop
//! stops the router at once, and a remembered signal that the
//! configuration catches itself (a Script's `TYPE SIGNAL`, which takes
//! the signal's disposition over when it initializes) is handed back to
//! be delivered to it.

use signal_hook::SigId;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub struct StopWatch {
    /// The write end: the run's end writes here (the handlers write to a
    /// clone of it).
    wake: UnixStream,
    shared: Arc<Shared>,
    /// The handlers' registrations (the flag's and the pipe's per signal).
    ids: Vec<SigId>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    /// Each watched signal and whether it arrived and is not yet taken
    /// (set by its handler before the byte is written).
    arrived: Vec<(i32, Arc<AtomicBool>)>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The run is over: the thread ends.
    done: bool,
    /// [`StopWatch::arm`] was called: a signal now calls `on_signal`.
    armed: bool,
    on_signal: Option<Box<dyn FnOnce() + Send>>,
    /// Signals that arrived before `arm`, each once, in order.
    early: Vec<i32>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The signals that arrived since they were last taken.
    fn take_arrived(&self) -> Vec<i32> {
        self.arrived
            .iter()
            .filter(|(_, f)| f.swap(false, Ordering::SeqCst))
            .map(|&(sig, _)| sig)
            .collect()
    }
}

/// Registers each signal's actions (their ids into `ids`): the flag's,
/// then the pipe's. In this order: signal-hook runs a signal's actions in
/// the order of their registration, so the flag is set before the thread
/// wakes.
fn register(shared: &Shared, tx: &UnixStream, ids: &mut Vec<SigId>) -> std::io::Result<()> {
    for (sig, flag) in &shared.arrived {
        ids.push(signal_hook::flag::register(*sig, flag.clone())?);
        ids.push(signal_hook::low_level::pipe::register(
            *sig,
            tx.try_clone()?,
        )?);
    }
    Ok(())
}

impl StopWatch {
    /// Catches `signals` from now on. Before [`StopWatch::arm`], each
    /// arrival calls `early(signal, n)` on the watch's thread, `n`
    /// counting the arrivals so far (it may end the process).
    pub fn start(
        signals: &[i32],
        early: impl Fn(i32, usize) + Send + 'static,
    ) -> std::io::Result<StopWatch> {
        let (mut rx, tx) = UnixStream::pair()?;
        let shared = Arc::new(Shared {
            arrived: signals
                .iter()
                .map(|&sig| (sig, Arc::new(AtomicBool::new(false))))
                .collect(),
            state: Mutex::new(State::default()),
        });
        let mut ids = Vec::new();
        if let Err(e) = register(&shared, &tx, &mut ids) {
            unregister(ids);
            return Err(e);
        }
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("paraclick-signals".into())
            .spawn(move || {
                let mut b = [0u8; 1];
                let mut before_arm = 0;
                loop {
                    match rx.read(&mut b) {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    }
                    let mut st = sh.lock();
                    if st.done {
                        return;
                    }
                    // Empty when `arm` took the arrival first.
                    let sigs = sh.take_arrived();
                    if sigs.is_empty() {
                        continue;
                    }
                    if st.armed {
                        if let Some(f) = st.on_signal.take() {
                            drop(st);
                            f();
                        }
                        continue;
                    }
                    for sig in sigs {
                        if !st.early.contains(&sig) {
                            st.early.push(sig);
                        }
                        before_arm += 1;
                        early(sig, before_arm);
                    }
                }
            });
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                unregister(ids);
                return Err(e);
            }
        };
        Ok(StopWatch {
            wake: tx,
            shared,
            ids,
            thread: Some(thread),
        })
    }

    /// The router exists: from now on a signal calls `on_signal` (once).
    /// Of the signals that arrived before, each for which
    /// `caught_elsewhere` is true now has another handler: they are
    /// returned, for the caller to deliver. Any other is a stop:
    /// `on_signal` is called at once.
    pub fn arm(
        &self,
        caught_elsewhere: impl Fn(i32) -> bool,
        on_signal: impl FnOnce() + Send + 'static,
    ) -> Vec<i32> {
        let mut st = self.shared.lock();
        let mut early = std::mem::take(&mut st.early);
        for sig in self.shared.take_arrived() {
            if !early.contains(&sig) {
                early.push(sig);
            }
        }
        st.armed = true;
        let (passed, stops): (Vec<i32>, Vec<i32>) =
            early.into_iter().partition(|&sig| caught_elsewhere(sig));
        if stops.is_empty() {
            st.on_signal = Some(Box::new(on_signal));
        } else {
            drop(st);
            on_signal();
        }
        passed
    }

    /// The run is over: wakes the thread, which ends without calling
    /// `on_signal`, waits for it, and unregisters the handlers' actions
    /// (the signals are then ignored until the process ends).
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for StopWatch {
    fn drop(&mut self) {
        self.shared.lock().done = true;
        let _ = (&self.wake).write_all(&[1]);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        unregister(std::mem::take(&mut self.ids));
    }
}

/// Removes the handlers' actions [`register`] added.
fn unregister(ids: Vec<SigId>) {
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
}

#[cfg(test)]
mod tests {
    use super::StopWatch;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Voluntary context switches of thread `tid` of this process.
    fn switches_of(tid: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// The task id of the watcher thread: the thread of this process,
    /// not in `before`, named paraclick-signals (cut to 15 bytes).
    fn watcher_tid(before: &[String]) -> String {
        let t0 = std::time::Instant::now();
        loop {
            for e in std::fs::read_dir("/proc/self/task").unwrap() {
                let tid = e.unwrap().file_name().to_string_lossy().into_owned();
                if before.contains(&tid) {
                    continue;
                }
                let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .unwrap_or_default();
                if comm.trim() == "paraclick-signa" {
                    return tid;
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no watcher thread");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn tids() -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// Sends `sig` to this process.
    fn raise(sig: i32) {
        // SAFETY: raise sends a signal to this thread; the caller has a
        // watch catching it (its handler is a flag store and a pipe
        // write).
        assert_eq!(unsafe { libc::raise(sig) }, 0);
    }

    fn no_early(_: i32, _: usize) {
        panic!("no signal before arm");
    }

    // Each test its own signal (tests run at once, in one process): real-
    // time signals no other test of this binary uses. signal-hook keeps
    // its handler installed; with the watch gone it does nothing.

    #[test]
    fn waits_without_waking_stops_on_a_signal_and_ends_at_once() {
        let sig = libc::SIGRTMIN() + 7;
        let before = tids();
        let (tx, rx) = mpsc::channel();
        let w = StopWatch::start(&[sig], no_early).unwrap();
        assert!(w.arm(|_| false, move || tx.send(()).unwrap()).is_empty());
        let tid = watcher_tid(&before);
        // Blocked in its read: over 300 ms it is not scheduled at all. A
        // thread that polled (a sleep of 20 ms in a loop) would switch
        // about 15 times.
        std::thread::sleep(Duration::from_millis(20));
        let s0 = switches_of(&tid);
        std::thread::sleep(Duration::from_millis(300));
        let s1 = switches_of(&tid);
        assert!(s1 - s0 <= 1, "the watcher woke {} times", s1 - s0);
        w.finish();
        assert!(rx.try_recv().is_err(), "finish is not a signal");

        // A signal calls the stop.
        let (tx, rx) = mpsc::channel();
        let w = StopWatch::start(&[sig], no_early).unwrap();
        w.arm(|_| false, move || tx.send(()).unwrap());
        raise(sig);
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the signal stops the run");
        w.finish();
    }

    /// A watch of `sig` that `sig` reached before `arm`.
    fn signalled_early(sig: i32) -> StopWatch {
        let (etx, erx) = mpsc::channel();
        let w = StopWatch::start(&[sig], move |s, n| etx.send((s, n)).unwrap()).unwrap();
        raise(sig);
        assert_eq!(erx.recv_timeout(Duration::from_secs(30)), Ok((sig, 1)));
        w
    }

    #[test]
    fn a_signal_before_arm_is_kept_and_stops_at_arm() {
        let w = signalled_early(libc::SIGRTMIN() + 8);
        let (tx, rx) = mpsc::channel();
        assert!(w.arm(|_| false, move || tx.send(()).unwrap()).is_empty());
        // Called by arm itself, before it returned.
        assert_eq!(rx.try_recv(), Ok(()), "the early signal stops the run");
        w.finish();
    }

    #[test]
    fn a_signal_before_arm_that_is_caught_elsewhere_is_handed_back() {
        let sig = libc::SIGRTMIN() + 9;
        let w = signalled_early(sig);
        let (tx, rx) = mpsc::channel();
        assert_eq!(
            w.arm(|s| s == sig, move || tx.send(()).unwrap()),
            vec![sig],
            "for its catcher"
        );
        assert!(rx.try_recv().is_err(), "not a stop");
        w.finish();
        assert!(rx.try_recv().is_err(), "finish is not a signal");
    }
}
