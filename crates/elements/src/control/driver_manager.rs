//! # DriverManager
//!
//! DriverManager(INSTRUCTIONS..., [keywords TYPE])
//!
//! A Script that manages driver stop events.
//!
//! Ports: none (with TYPE PACKET, as Script). Processing: as Script.
//!
//! DriverManager is a Script whose default TYPE is DRIVER; it takes every
//! Script instruction and has every Script handler.
//!
//! Elements ask the router to stop with driver stop events (usually a
//! `STOP true` keyword, as on InfiniteSource when it reaches its LIMIT).
//! Without a driver, the first stop event stops the router. With a
//! DriverManager, each stop event steps its script instead: it lets the
//! script past a `pause` (one step of `pause COUNT`) or cuts a `wait TIME`
//! short. The router stops only when the script ends (an implicit end
//! follows the last instruction) or executes `stop`; a stop event that
//! finds the script already ended stops the router too. A DriverManager
//! with no instructions is `DriverManager(pause)`: it stops the router at
//! the first stop event. A router has at most one driver (DriverManager or
//! Script TYPE DRIVER).
//!
//! Instructions include `pause [COUNT]` (also `wait_stop [COUNT]`): wait for
//! COUNT stop events; `wait TIME` (also `wait_time TIME`); `read`, `write`,
//! `print`, `set`, `label`, `goto`, `loop`, `stop`. See Script.
//!
//! Handlers: as Script (`step`, `run`, `goto`, ...).
//!
//! Differences from Click: the script starts when the router starts
//! running, not during initialization.
//!
//! Example:
//!
//!     // Wait for the first stop event, let k clean up, stop 0.1 s later.
//!     DriverManager(pause, write k.cleanup, wait 0.1s, stop);
//!
//!     // Run until both sources have sent their LIMIT.
//!     InfiniteSource(LIMIT 1000, STOP true) -> Discard;
//!     InfiniteSource(LIMIT 5000, STOP true) -> Discard;
//!     DriverManager(pause, pause, stop);

use super::script::{make_with, Script, ScriptType};
use paraclick_runtime::prelude::*;

pub fn spec() -> ClassSpec {
    ClassSpec::driver("DriverManager", "-/-", "ah/ah", make).shared("one for the whole router")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Script, String> {
    make_with(cx, ScriptType::Driver)
}

#[cfg(test)]
mod tests {
    use crate::control::script::tests::{build, build_threads, read, run};
    use std::time::Duration;

    /// Source `a` asks to stop at once; source `b` starts 50 ms later and
    /// asks to stop after 100 packets.
    const TWO_SOURCES: &str = "
        a :: InfiniteSource(LIMIT 5, STOP true) -> ca :: Counter -> Discard;
        b :: InfiniteSource(LIMIT 100, ACTIVE false, STOP true) -> cb :: Counter -> Discard;
        Script(wait 0.05, write b.active true);";

    #[test]
    fn without_a_driver_the_first_stop_request_stops() {
        let r = build(TWO_SOURCES);
        run(&r);
        assert_eq!(read(&r, "ca.count"), "5");
        assert_eq!(read(&r, "cb.count"), "0");
    }

    #[test]
    fn consumes_two_stop_requests_before_stopping() {
        for (dm, threads) in [
            ("DriverManager(pause, pause, stop)", 1),
            ("DriverManager(wait_stop 2)", 1),
            ("DriverManager(pause, pause, stop)", 3),
        ] {
            let r = build_threads(&format!("{TWO_SOURCES} {dm};"), threads);
            run(&r);
            assert_eq!(read(&r, "ca.count"), "5", "{dm}");
            assert_eq!(read(&r, "cb.count"), "100", "{dm}");
        }
    }

    #[test]
    fn an_empty_driver_manager_stops_at_the_first_request() {
        let r = build(&format!("{TWO_SOURCES} DriverManager();"));
        run(&r);
        assert_eq!(read(&r, "ca.count"), "5");
        assert_eq!(read(&r, "cb.count"), "0");
    }

    #[test]
    fn a_stop_request_cuts_a_wait_short() {
        let r = build(&format!(
            "{TWO_SOURCES} d :: DriverManager(export phase 0, pause, set phase 1, wait 10s, set phase 2);"
        ));
        let took = run(&r);
        assert!(took < Duration::from_secs(5));
        assert_eq!(read(&r, "cb.count"), "100");
        assert_eq!(read(&r, "d.phase"), "2");
    }

    #[test]
    fn the_router_stops_when_the_script_ends() {
        let r = build(
            "src :: InfiniteSource -> c :: Counter -> Discard;
             d :: DriverManager(wait 20ms, write src.active false);",
        );
        run(&r);
        assert_eq!(read(&r, "src.active"), "false");
        // A Script's `stop` is a stop request: the driver decides.
        let r = build(
            "Script(stop); Script(wait 20ms, stop);
             d :: DriverManager(export n 0, pause, set n 1, pause, set n 2, pause, set n 3);
             Script(wait 50ms, write d.step);",
        );
        run(&r);
        assert_eq!(read(&r, "d.n"), "3");
        assert!(read(&r, "d.handlers").contains("step\tw"));
    }
}
