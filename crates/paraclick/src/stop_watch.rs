//! The end of a run on SIGINT or SIGTERM: a thread waits on a socket pair
//! that the signal handler writes a byte to (signal-hook's pipe), and that
//! the end of the run writes to as well. So a signal stops the router at
//! once, the thread costs nothing while the router runs (it never wakes
//! to look), and the end of a run does not wait for it.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct StopWatch {
    /// The write end: the run's end writes here (the handlers write to a
    /// clone of it).
    wake: UnixStream,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StopWatch {
    /// Calls `on_signal` once, on a thread of its own, when one of
    /// `signals` arrives before [`StopWatch::finish`].
    pub fn start(
        signals: &[i32],
        on_signal: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<StopWatch> {
        let (mut rx, tx) = UnixStream::pair()?;
        for &sig in signals {
            signal_hook::low_level::pipe::register(sig, tx.try_clone()?)?;
        }
        let done = Arc::new(AtomicBool::new(false));
        let finished = done.clone();
        let thread = std::thread::Builder::new()
            .name("paraclick-signals".into())
            .spawn(move || {
                let mut b = [0u8; 1];
                loop {
                    match rx.read(&mut b) {
                        Ok(0) => return,
                        Ok(_) => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    }
                }
                if !finished.load(Ordering::Acquire) {
                    on_signal();
                }
            })?;
        Ok(StopWatch {
            wake: tx,
            done,
            thread: Some(thread),
        })
    }

    /// The run is over: wakes the thread, which ends without calling
    /// `on_signal`, and waits for it.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Release);
        let _ = (&self.wake).write_all(&[1]);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
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

    #[test]
    fn waits_without_waking_stops_on_a_signal_and_ends_at_once() {
        // A signal no other test uses; registered for good (a pipe write
        // is all its handler does).
        let sig = libc::SIGRTMIN() + 7;
        let before = tids();
        let (tx, rx) = mpsc::channel();
        let w = StopWatch::start(&[sig], move || {
            let _ = tx.send(());
        })
        .unwrap();
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
        let w = StopWatch::start(&[sig], move || {
            let _ = tx.send(());
        })
        .unwrap();
        // SAFETY: raise sends a signal to this thread; its handler (the
        // pipe write) is installed above.
        assert_eq!(unsafe { libc::raise(sig) }, 0);
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the signal stops the run");
        w.finish();
    }
}
