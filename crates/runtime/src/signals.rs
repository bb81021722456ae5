//! Process-wide signal catching, for elements that react to signals
//! (Script's `TYPE SIGNAL`).
//!
//! A signal is caught while at least one holder has [`catch`]ed it and
//! not yet [`release`]d it; the last release puts back the disposition
//! the signal had before the first catch (normally the default action, so
//! a signal nobody catches any more does what it would have done without
//! paraclick). The handler does one thing, which is async-signal-safe: it
//! adds one to the signal's generation counter. Holders poll
//! [`generation`] and compare it with the last value they saw, so every
//! holder sees every delivery, and deliveries that arrive before a holder
//! looks are coalesced into one (as a blocked POSIX signal is).
//!
//! Signals whose default action is a fault report (SEGV, BUS, FPE, ILL,
//! TRAP, SYS) and those that cannot be caught (KILL, STOP) are refused:
//! catching a fault would turn a crash into a loop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Signals are numbered 1..LIMIT.
const LIMIT: usize = 65;

static GEN: [AtomicU64; LIMIT] = [const { AtomicU64::new(0) }; LIMIT];

struct Slot {
    holders: usize,
    /// The disposition before the first catch.
    old: Option<libc::sigaction>,
}

// SAFETY: `libc::sigaction` is plain data (a handler address, a signal
// mask, flags); nothing in it is tied to a thread.
unsafe impl Send for Slot {}

static SLOTS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

/// Names Click and the shell use, without the `SIG` prefix.
const NAMES: &[(&str, libc::c_int)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ABRT", libc::SIGABRT),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("SEGV", libc::SIGSEGV),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("SYS", libc::SIGSYS),
];

/// Parses a signal: a number, or a name with or without `SIG` (`INT`,
/// `SIGINT`, `USR1`). Any signal a process may send (for `kill`).
pub fn parse(s: &str) -> Result<i32, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return if (1..LIMIT as i64).contains(&n) {
            Ok(n as i32)
        } else {
            Err(format!("bad signal number {n}"))
        };
    }
    let name = s.strip_prefix("SIG").unwrap_or(s);
    NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .ok_or_else(|| format!("unknown signal '{s}'"))
}

/// Parses a signal that may be caught (see the module's documentation).
pub fn parse_catchable(s: &str) -> Result<i32, String> {
    let sig = parse(s)?;
    if [
        libc::SIGKILL,
        libc::SIGSTOP,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGFPE,
        libc::SIGILL,
        libc::SIGTRAP,
        libc::SIGSYS,
    ]
    .contains(&sig)
    {
        return Err(format!("signal '{}' cannot be caught", s.trim()));
    }
    Ok(sig)
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one atomic add, nothing else.
    if let Some(g) = usize::try_from(sig).ok().and_then(|i| GEN.get(i)) {
        g.fetch_add(1, Ordering::SeqCst);
    }
}

fn slots() -> std::sync::MutexGuard<'static, Vec<Slot>> {
    let mut s = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
    if s.is_empty() {
        s.extend((0..LIMIT).map(|_| Slot {
            holders: 0,
            old: None,
        }));
    }
    s
}

/// Catches `sig` for one more holder (installing the handler for the
/// first).
pub fn catch(sig: i32) -> Result<(), String> {
    parse_catchable(&sig.to_string())?;
    let mut slots = slots();
    let slot = &mut slots[sig as usize];
    if slot.holders == 0 {
        // SAFETY: a zeroed sigaction is a valid value (no handler, empty
        // mask, no flags); every field used is set below.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        // SAFETY: `new.sa_mask` is a valid sigset_t to initialize.
        unsafe { libc::sigemptyset(&mut new.sa_mask) };
        // SAFETY: as above.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `sig` is a catchable signal number; both pointers are
        // to live sigaction values; the handler only touches atomics.
        if unsafe { libc::sigaction(sig, &new, &mut old) } != 0 {
            return Err(format!(
                "cannot catch signal {sig}: {}",
                std::io::Error::last_os_error()
            ));
        }
        slot.old = Some(old);
    }
    slot.holders += 1;
    Ok(())
}

/// Releases one holder's catch of `sig`; the last one puts back the
/// disposition from before the first catch, unless something else
/// installed a handler since (then that one stays).
pub fn release(sig: i32) {
    let mut slots = slots();
    let Some(slot) = usize::try_from(sig).ok().and_then(|i| slots.get_mut(i)) else {
        return;
    };
    if slot.holders == 0 {
        return;
    }
    slot.holders -= 1;
    if slot.holders > 0 {
        return;
    }
    let Some(old) = slot.old.take() else {
        return;
    };
    // SAFETY: as in `catch`.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `cur`.
    let ok = unsafe { libc::sigaction(sig, std::ptr::null(), &mut cur) } == 0;
    let ours = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    if ok && cur.sa_sigaction == ours {
        // SAFETY: `old` is the disposition sigaction gave us for `sig`.
        unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
    }
}

/// How many times `sig` has been delivered while caught.
pub fn generation(sig: i32) -> u64 {
    usize::try_from(sig)
        .ok()
        .and_then(|i| GEN.get(i))
        .map_or(0, |g| g.load(Ordering::SeqCst))
}

/// Whether some holder catches `sig` now.
pub fn caught(sig: i32) -> bool {
    usize::try_from(sig)
        .ok()
        .and_then(|i| slots().get(i).map(|s| s.holders > 0))
        .unwrap_or(false)
}

/// Sends `sig` to process `pid`. Only positive process ids: 0 and
/// negative ids (a process group, every process) are refused.
///
/// A caught signal sent to this process is delivered before `kill`
/// returns, as POSIX promises a single-threaded process: Linux may run
/// the handler on another thread, so `kill` waits (up to 100 ms) until
/// the delivery is counted. A script that signals itself and then
/// waits sees its signal scripts run first, as in Click.
pub fn kill(sig: i32, pid: i64) -> Result<(), String> {
    if pid <= 0 || pid > i64::from(i32::MAX) {
        return Err(format!("bad process id {pid}"));
    }
    if !(1..LIMIT as i32).contains(&sig) {
        return Err(format!("bad signal number {sig}"));
    }
    let own = pid == i64::from(std::process::id()) && caught(sig);
    let before = generation(sig);
    // SAFETY: kill has no memory effects; pid and sig are in range.
    if unsafe { libc::kill(pid as libc::pid_t, sig) } != 0 {
        return Err(format!("kill {pid}: {}", std::io::Error::last_os_error()));
    }
    if own {
        let t0 = std::time::Instant::now();
        while generation(sig) == before && t0.elapsed() < std::time::Duration::from_millis(100) {
            std::thread::yield_now();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(parse("INT"), Ok(libc::SIGINT));
        assert_eq!(parse("SIGUSR1"), Ok(libc::SIGUSR1));
        assert_eq!(parse(" 10 "), Ok(10));
        assert!(parse("0").is_err());
        assert!(parse("65").is_err());
        assert!(parse("FROB").is_err());
        assert!(parse_catchable("KILL").is_err());
        assert!(parse_catchable("SEGV").is_err());
        assert!(parse_catchable("USR2").is_ok());
    }

    #[test]
    fn caught_deliveries_count_and_the_last_release_restores() {
        // A real-time signal no other test uses; its default action
        // would end the test process, so it is caught around the kill.
        let sig = libc::SIGRTMIN() + 3;
        catch(sig).unwrap();
        catch(sig).unwrap();
        assert!(caught(sig));
        let g = generation(sig);
        kill(sig, i64::from(std::process::id())).unwrap();
        // Counted before kill returned, whichever thread ran the handler.
        assert_eq!(generation(sig), g + 1);
        release(sig);
        assert!(caught(sig));
        release(sig);
        assert!(!caught(sig));
        // SAFETY: reads the disposition only.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::sigaction(sig, std::ptr::null(), &mut cur) };
        assert_eq!(cur.sa_sigaction, libc::SIG_DFL);
    }

    #[test]
    fn kill_refuses_groups_and_everyone() {
        assert!(kill(libc::SIGUSR1, 0).is_err());
        assert!(kill(libc::SIGUSR1, -1).is_err());
        assert!(kill(0, 1).is_err());
        assert!(catch(libc::SIGKILL).is_err());
    }
}
