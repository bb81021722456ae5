//! # ProgressBar
//!
//! ProgressBar(POSHANDLER \[, SIZEHANDLER, keywords FIXED_SIZE, BANNER, UPDATE, ACTIVE, DELAY, CHECK_STDOUT])
//!
//! Prints a progress bar to standard error.
//!
//! Ports: none.
//!
//! Reads progress from read handlers and draws an ASCII progress bar on
//! standard error, redrawn in place every UPDATE: how much is done, how
//! much remains, and an estimate of the time left. POSHANDLER is read at
//! every redraw: the position. SIZEHANDLER is read once, at the first
//! draw: the size; the work is complete when the position reaches it.
//! Each may be a space-separated list of handlers whose values are added.
//! A handler whose value is not a nonnegative number counts as 0.
//!
//! With a size, the bar reads
//!
//!     file  74% |**************      |  23315KB    00:01 ETA
//!
//! and without one (no SIZEHANDLER or FIXED_SIZE, or a size of 0) a
//! short run of stars moves back and forth:
//!
//!     file |          ***         |   5184KB    --:-- ETA
//!
//! Amounts are in bytes, shown in KB, MB... (units of 1024) when they
//! would need more than 5 digits.
//!
//! Keyword arguments:
//! - `FIXED_SIZE` (nonnegative number): the size when no SIZEHANDLER is
//!   given.
//! - `BANNER` (string, default empty): printed before the bar.
//! - `UPDATE` (time, default 0.25 s, at least 1 ms): the redraw period.
//! - `ACTIVE` (boolean, default true): if false, the bar does not draw
//!   itself until `active` is set true.
//! - `DELAY` (time, default 0): draw nothing until DELAY has passed
//!   since the router started (no bar for work that is over at once).
//! - `CHECK_STDOUT` (boolean, default false): if true and standard output
//!   is a terminal, draw nothing.
//!
//! Handlers:
//! - `mark_stopped` (write): draws the bar a last time, as stopped short,
//!   ending the line; no more redraws.
//! - `mark_done` (write): draws the bar a last time, complete, ending the
//!   line; no more redraws.
//! - `pos` (read): the position.
//! - `size` (read/write): the size (empty if unknown).
//! - `active` (read/write): whether the bar redraws itself.
//! - `banner` (read/write): BANNER.
//! - `poshandler`, `sizehandler` (read/write): the handler lists.
//! - `reset` (write): back to the initial state: the size is read again
//!   at the next draw; ACTIVE becomes true.
//!
//! Example:
//!
//!     fd :: FromDump(big.pcap) -> ...;
//!     ProgressBar(fd.filepos, fd.filesize);

use crate::util::fmt_rate;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Characters between the bar's `|`s.
const BAR: usize = 20;
const TIMER: usize = 0;

struct State {
    pos_handlers: Vec<String>,
    size_handlers: Vec<String>,
    banner: String,
    /// Read (or fixed) size; None until read, Some(None) if unknown.
    size: Option<Option<f64>>,
    fixed_size: Option<f64>,
    active: bool,
    /// No more redraws (mark_done, mark_stopped).
    finished: bool,
    start: Option<Instant>,
    /// Redraws so far (moves the stars of a bar without a size).
    draws: u64,
}

pub struct ProgressBar {
    state: Mutex<State>,
    update: Duration,
    delay: Duration,
    check_stdout: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ProgressBar", "0/0", "a", make).stateless()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ProgressBar, String> {
    let mut a = cx.args();
    let pos = a.read_mp::<String>("POSHANDLER");
    let size = a.read_p::<String>("SIZEHANDLER");
    let fixed_size = a.read::<f64>("FIXED_SIZE");
    let banner = a.read::<String>("BANNER").unwrap_or_default();
    let update = a
        .read::<Duration>("UPDATE")
        .unwrap_or(Duration::from_millis(250));
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let delay = a.read::<Duration>("DELAY").unwrap_or(Duration::ZERO);
    let check_stdout = a.read::<bool>("CHECK_STDOUT").unwrap_or(false);
    a.complete()?;
    if update < Duration::from_millis(1) {
        return Err("UPDATE must be at least 1 millisecond".into());
    }
    if fixed_size.is_some_and(|s| !(s >= 0.0 && s.is_finite())) {
        return Err("FIXED_SIZE must be a nonnegative number".into());
    }
    Ok(ProgressBar {
        state: Mutex::new(State {
            pos_handlers: words(&pos),
            size_handlers: size.as_deref().map(words).unwrap_or_default(),
            banner,
            size: None,
            fixed_size,
            active,
            finished: false,
            start: None,
            draws: 0,
        }),
        update,
        delay,
        check_stdout,
    })
}

/// The sum of the handlers' values (a value that is not a nonnegative
/// number counts as 0).
fn sum(hx: &HandlerCx<'_>, hs: &[String]) -> f64 {
    hs.iter()
        .filter_map(|h| hx.read(h).ok())
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .filter(|v| *v >= 0.0 && v.is_finite())
        .sum()
}

/// An amount with a unit: at most 5 digits.
fn amount(v: f64) -> String {
    let mut v = v.max(0.0).round();
    for unit in ["B", "KB", "MB", "GB", "TB"] {
        if v < 100_000.0 || unit == "TB" {
            return format!("{:>6}{unit}", v as u64);
        }
        v = (v / 1024.0).round();
    }
    unreachable!()
}

fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 100 * 3600 {
        "--:--".into()
    } else if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// One drawing of the bar (without the leading carriage return).
/// `done`: finished (Some(true) complete, Some(false) stopped short).
fn render(
    banner: &str,
    pos: f64,
    size: Option<f64>,
    elapsed: f64,
    draws: u64,
    done: Option<bool>,
) -> String {
    let mut s = String::new();
    if !banner.is_empty() {
        s.push_str(banner);
        s.push(' ');
    }
    let pos = if done == Some(true) {
        size.unwrap_or(pos).max(pos)
    } else {
        pos
    };
    match size.filter(|&z| z > 0.0) {
        Some(size) => {
            let frac = (pos / size).clamp(0.0, 1.0);
            let stars = (frac * BAR as f64).floor() as usize;
            s.push_str(&format!(
                "{:3}% |{}{}| {}",
                (frac * 100.0).floor() as u64,
                "*".repeat(stars),
                " ".repeat(BAR - stars),
                amount(pos)
            ));
            let tail = match done {
                Some(_) => format!("{}    ", clock(elapsed)),
                None if pos > 0.0 && frac < 1.0 => {
                    format!("{} ETA", clock(elapsed * (size - pos) / pos))
                }
                None if frac >= 1.0 => format!("{}    ", clock(elapsed)),
                None => "--:-- ETA".into(),
            };
            s.push_str(&format!("    {tail}"));
        }
        None => {
            // Three stars bouncing between the bars.
            let span = (BAR - 3) as u64;
            let k = draws % (2 * span);
            let at = if k <= span { k } else { 2 * span - k } as usize;
            s.push_str(&format!(
                "|{}***{}| {}    ",
                " ".repeat(at),
                " ".repeat(BAR - 3 - at),
                amount(pos)
            ));
            s.push_str(&match done {
                Some(_) => format!("{}    ", clock(elapsed)),
                None => "--:-- ETA".into(),
            });
        }
    }
    s
}

impl ProgressBar {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Draws the bar (`done`: the last time); false if it drew nothing.
    fn draw(&self, hx: &HandlerCx<'_>, now: Instant, done: Option<bool>) -> bool {
        let mut st = self.lock();
        if st.finished || (!st.active && done.is_none()) {
            return false;
        }
        let start = *st.start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        if done.is_none() && elapsed < self.delay {
            return false;
        }
        if self.check_stdout && std::io::stdout().is_terminal() {
            return false;
        }
        if st.size.is_none() {
            let size = if st.size_handlers.is_empty() {
                st.fixed_size
            } else {
                Some(sum(hx, &st.size_handlers))
            };
            st.size = Some(size);
        }
        let pos = sum(hx, &st.pos_handlers);
        let line = render(
            &st.banner,
            pos,
            st.size.flatten(),
            elapsed.as_secs_f64(),
            st.draws,
            done,
        );
        st.draws += 1;
        if done.is_some() {
            st.finished = true;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}{}", if done.is_some() { "\n" } else { "" });
        let _ = err.flush();
        true
    }
}

impl Element for ProgressBar {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("mark_stopped", |e, _, hx| {
            e.draw(hx, hx.now(), Some(false));
            Ok(())
        }),
        Handler::write("mark_done", |e, _, hx| {
            e.draw(hx, hx.now(), Some(true));
            Ok(())
        }),
        Handler::read("pos", |e, hx| {
            let hs = e.lock().pos_handlers.clone();
            fmt_rate(sum(hx, &hs))
        }),
        Handler::rw(
            "size",
            |e, _| e.lock().size.flatten().map(fmt_rate).unwrap_or_default(),
            |e, v, hx| {
                let s: f64 = hx.arg(v)?;
                if !(s >= 0.0 && s.is_finite()) {
                    return Err("size must be a nonnegative number".into());
                }
                e.lock().size = Some(Some(s));
                Ok(())
            },
        ),
        Handler::rw(
            "active",
            |e, _| e.lock().active.to_string(),
            |e, v, hx| {
                e.lock().active = hx.arg(v)?;
                Ok(())
            },
        ),
        Handler::rw(
            "banner",
            |e, _| e.lock().banner.clone(),
            |e, v, _| {
                e.lock().banner = v.to_string();
                Ok(())
            },
        ),
        Handler::rw(
            "poshandler",
            |e, _| e.lock().pos_handlers.join(" "),
            |e, v, _| {
                e.lock().pos_handlers = words(v);
                Ok(())
            },
        ),
        Handler::rw(
            "sizehandler",
            |e, _| e.lock().size_handlers.join(" "),
            |e, v, _| {
                let mut st = e.lock();
                st.size_handlers = words(v);
                st.size = None;
                Ok(())
            },
        ),
        Handler::write("reset", |e, _, hx| {
            let mut st = e.lock();
            st.size = None;
            st.active = true;
            st.finished = false;
            st.start = None;
            st.draws = 0;
            drop(st);
            hx.schedule_after(TIMER, Duration::ZERO);
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let st = self.lock();
        for h in st.pos_handlers.iter().chain(&st.size_handlers) {
            if !ix.has_handler(h) {
                return Err(format!("no read handler '{h}'"));
            }
        }
        if st.pos_handlers.is_empty() {
            return Err("POSHANDLER: expected a read handler".into());
        }
        drop(st);
        ix.schedule_after(TIMER, Duration::ZERO);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        {
            let mut st = self.lock();
            if st.start.is_none() {
                st.start = Some(cx.now());
            }
            if st.finished {
                return;
            }
        }
        self.draw(&cx.handler_cx(), cx.now(), None);
        cx.schedule_after(TIMER, self.update);
    }
}

#[cfg(test)]
mod tests {
    use super::{amount, render};
    use crate::test_kit::*;

    #[test]
    fn a_bar_with_a_size() {
        let s = render("f", 740.0, Some(1000.0), 74.0, 0, None);
        assert_eq!(s, "f  74% |**************      |    740B    00:26 ETA");
        let s = render("", 0.0, Some(1000.0), 1.0, 0, None);
        assert_eq!(s, "  0% |                    |      0B    --:-- ETA");
        let done = render("", 400.0, Some(1000.0), 65.0, 0, Some(true));
        assert_eq!(done, "100% |********************|   1000B    01:05    ");
        let stopped = render("", 400.0, Some(1000.0), 65.0, 0, Some(false));
        assert!(
            stopped.starts_with(" 40% |********            |"),
            "{stopped}"
        );
    }

    #[test]
    fn a_bar_without_a_size_bounces() {
        let a = render("", 5184.0 * 1024.0, None, 1.0, 0, None);
        assert_eq!(a, "|***                 |   5184KB    --:-- ETA");
        let b = render("", 5184.0 * 1024.0, None, 1.0, 3, None);
        assert_eq!(b, "|   ***              |   5184KB    --:-- ETA");
        let c = render("", 1.0, None, 1.0, 17 + 2, None);
        assert_eq!(&c[..22], "|               ***  |");
    }

    #[test]
    fn amounts_keep_to_five_digits() {
        assert_eq!(amount(99_999.0), " 99999B");
        assert_eq!(amount(100_000.0), "    98KB");
        assert_eq!(amount(23_315.0 * 1024.0), " 23315KB");
        assert_eq!(amount(3.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0), "  3072GB");
        assert_eq!(
            amount(300.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
            "   300TB"
        );
    }

    #[test]
    fn handlers_read_positions_and_sizes() {
        let r = build(
            &reg(),
            "i :: InfiniteSource(LIMIT 7, STOP false) -> c :: Counter -> d :: Counter -> Discard;
             p :: ProgressBar(c.count d.count, FIXED_SIZE 20, ACTIVE false);",
        );
        run_until(&r, |r| handler(r, "d.count") == "7");
        assert_eq!(handler(&r, "p.pos"), "14");
        assert_eq!(handler(&r, "p.poshandler"), "c.count d.count");
        r.write_handler("p.size", "30").unwrap();
        assert_eq!(handler(&r, "p.size"), "30");
        assert!(r.write_handler("p.size", "-1").is_err());
        r.write_handler("p.mark_done", "").unwrap();
        let e = build_err(&reg(), "ProgressBar(nobody.count);");
        assert!(e.contains("no read handler 'nobody.count'"), "{e}");
    }
}
