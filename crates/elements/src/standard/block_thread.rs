//! # BlockThread
//!
//! BlockThread()
//!
//! A test element, as in Click's suite: its `block` handler holds up the
//! thread that writes it.
//!
//! Ports: none. Processing: none.
//!
//! Handlers:
//! - `block` (write): a time (`0.01s`, `10ms`, a number of seconds); the
//!   writer's thread sleeps that long before the write returns. Written
//!   by a Script on a worker, it stalls that worker (and so every task
//!   on it), which is what tests of signals and of threads arriving late
//!   need; written over a control socket, only that connection waits. At
//!   most 10 seconds (more is an error), so a stray write cannot hang a
//!   router for good.
//!
//! Example:
//!
//!     bt :: BlockThread;
//!     Script(TYPE SIGNAL USR1, write bt.block 0.01s);

use paraclick_runtime::args::parse_duration_checked;
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};
use std::time::Duration;

/// The longest a write may block.
pub const MAX_BLOCK: Duration = Duration::from_secs(10);

pub struct BlockThread;

pub fn spec() -> ClassSpec {
    ClassSpec::element("BlockThread", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<BlockThread, String> {
    cx.args().complete()?;
    Ok(BlockThread)
}

fn block(v: &str) -> Result<(), String> {
    let d = parse_duration_checked(v.trim())?;
    if d > MAX_BLOCK {
        return Err(format!(
            "at most {} seconds, not '{}'",
            MAX_BLOCK.as_secs(),
            v.trim()
        ));
    }
    std::thread::sleep(d);
    Ok(())
}

impl Element for BlockThread {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::write("block", |_, v, _| block(v))];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use std::time::{Duration, Instant};

    #[test]
    fn block_holds_the_writer_for_the_time_given() {
        let r = build(&reg(), "bt :: BlockThread");
        let t0 = Instant::now();
        r.write_handler("bt.block", "0.05s").unwrap();
        assert!(
            t0.elapsed() >= Duration::from_millis(50),
            "{:?}",
            t0.elapsed()
        );
        for (bad, want) in [("11s", "at most 10 seconds"), ("soon", "")] {
            let e = r.write_handler("bt.block", bad).unwrap_err();
            assert!(e.contains("bt.block") && e.contains(want), "{bad}: {e}");
        }
    }
}
