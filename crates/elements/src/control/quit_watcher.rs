//! # QuitWatcher
//!
//! QuitWatcher(ELEMENT, ...)
//!
//! Stops the router when one of the ELEMENTs is done.
//!
//! Ports: none.
//!
//! Stops router processing as soon as at least one of the ELEMENTs is no
//! longer scheduled: its work is over. Here that is a source that says
//! when it is done: InfiniteSource, RatedSource and TimedSource once they
//! have sent LIMIT packets, FromDump once its file has ended (whatever
//! their STOP says). Naming an element that cannot say so is an error.
//! QuitWatcher looks every 10 milliseconds.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     a :: FromDump(a.pcap, STOP false) -> ...;
//!     b :: FromDump(b.pcap, STOP false) -> ...;
//!     QuitWatcher(a, b);   // stop when the shorter trace ends

use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, InitCx};
use std::sync::OnceLock;
use std::time::Duration;

/// What an element that can end provides (through `provide`), so that
/// QuitWatcher can ask it whether its work is over.
pub trait Finishes: Send + Sync {
    /// Whether the element is done (Click: its task is no longer
    /// scheduled).
    fn finished(&self) -> bool;
}

pub struct QuitWatcher {
    names: Vec<String>,
    watched: OnceLock<Vec<usize>>,
}

const TIMER: usize = 0;
const PERIOD: Duration = Duration::from_millis(10);

pub fn spec() -> ClassSpec {
    ClassSpec::element("QuitWatcher", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<QuitWatcher, String> {
    let mut a = cx.args();
    let names = a.rest();
    a.complete()?;
    if names.is_empty() {
        return Err("expected at least one ELEMENT".into());
    }
    Ok(QuitWatcher {
        names: names.iter().map(|n| n.trim().to_string()).collect(),
        watched: OnceLock::new(),
    })
}

impl Element for QuitWatcher {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let mut v = Vec::new();
        for n in &self.names {
            let i = ix
                .find(n)
                .ok_or_else(|| format!("no element named '{n}'"))?;
            if ix.cast::<dyn Finishes>(i).is_none() {
                return Err(format!(
                    "'{n}' cannot say when it is done (a source with LIMIT or FromDump can)"
                ));
            }
            v.push(i);
        }
        let _ = self.watched.set(v);
        ix.schedule_after(TIMER, PERIOD);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let hx = cx.handler_cx();
        let done = self.watched.get().is_some_and(|w| {
            w.iter()
                .any(|&i| hx.cast::<dyn Finishes>(i).is_some_and(|f| f.finished()))
        });
        if done {
            cx.request_stop();
        } else {
            cx.schedule_after(TIMER, PERIOD);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn stops_when_the_first_watched_source_is_done() {
        let r = build(
            &reg(),
            "a :: InfiniteSource(LIMIT 5, STOP false) -> ca :: Counter -> Discard;
             b :: RatedSource(RATE 10, LIMIT 1000, STOP false) -> cb :: Counter -> Discard;
             QuitWatcher(a, b);",
        );
        run(&r);
        assert_eq!(handler(&r, "ca.count"), "5");
        assert!(handler(&r, "cb.count").parse::<u64>().unwrap() < 1000);
    }

    #[test]
    fn only_elements_that_can_end() {
        let e = build_err(&reg(), "Idle -> d :: Discard; QuitWatcher(d);");
        assert!(e.contains("'d' cannot say when it is done"), "{e}");
        let e = build_err(&reg(), "QuitWatcher(nope);");
        assert!(e.contains("no element named 'nope'"), "{e}");
        let e = build_err(&reg(), "QuitWatcher;");
        assert!(e.contains("expected at least one ELEMENT"), "{e}");
    }
}
