//! # BalancedThreadSched
//!
//! BalancedThreadSched(\[INTERVAL, INCREASING])
//!
//! Bin-packs tasks onto threads by their measured load.
//!
//! paraclick's adaptive scheduler (`--sched adaptive`, the default) is
//! this bin packer: it samples the cycles each task spends, and every
//! interval places the tasks longest-first on the least-loaded thread,
//! keeping tasks joined by a queue together when the load allows, and
//! moving tasks only when that cuts the busiest thread's load by more
//! than 15%. Tasks that StaticThreadSched pins stay where they are. A
//! BalancedThreadSched sets how often it rebalances; without one, it
//! rebalances every 50 ms. It does nothing with one thread (`-j 1`) or
//! under `--sched static`, whose command line wins.
//!
//! Arguments:
//! - `INTERVAL` (integer milliseconds, default 1000, at least 1): the
//!   time between two rebalancings.
//! - `INCREASING` (boolean, default true): Click's order of the tasks
//!   before packing. Accepted for compatibility: paraclick always packs
//!   the most expensive tasks first, which bounds the busiest thread's
//!   load better (LPT).
//!
//! Ports: none.
//!
//! Handlers:
//! - `interval` (read): INTERVAL, in milliseconds.
//!
//! Example:
//!
//!     BalancedThreadSched(100);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, InitCx, Kind};
use std::time::Duration;

pub struct BalancedThreadSched {
    interval_ms: u32,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("BalancedThreadSched", "0/0", "a", make)
        .stateless()
        .kind(Kind::ThreadSched)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<BalancedThreadSched, String> {
    let mut a = cx.args();
    let interval_ms = a.read_p::<u32>("INTERVAL").unwrap_or(1000);
    let _increasing = a.read_p::<bool>("INCREASING").unwrap_or(true);
    a.complete()?;
    if interval_ms == 0 {
        return Err("INTERVAL must be at least 1 millisecond".into());
    }
    Ok(BalancedThreadSched { interval_ms })
}

impl Element for BalancedThreadSched {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("interval", |e, _| e.interval_ms.to_string())];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.set_balance_interval(Duration::from_millis(u64::from(self.interval_ms)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::BuildOptions;
    use std::time::Duration;

    fn two_threads(conf: &str) -> paraclick_runtime::Router {
        let opts = BuildOptions {
            threads: 2,
            pin: false,
            ..BuildOptions::default()
        };
        build_with(&reg(), conf, &opts)
    }

    const WORK: &str =
        "InfiniteSource(LIMIT 1000, STOP false) -> Queue -> u :: Unqueue -> Discard;";

    #[test]
    fn sets_the_adaptive_schedulers_interval() {
        let r = two_threads(WORK);
        assert_eq!(r.balance_interval(), Duration::from_millis(50));
        let r = two_threads(&format!("{WORK} b :: BalancedThreadSched(250, false);"));
        assert_eq!(r.balance_interval(), Duration::from_millis(250));
        assert_eq!(handler(&r, "b.interval"), "250");
        let r = two_threads(&format!("{WORK} BalancedThreadSched;"));
        assert_eq!(
            r.balance_interval(),
            Duration::from_secs(1),
            "Click's default"
        );
    }

    #[test]
    fn runs_a_configuration_to_its_end() {
        let r = two_threads(
            "InfiniteSource(LIMIT 500) -> q :: Queue -> u :: Unqueue -> c :: Counter -> Discard;
             BalancedThreadSched(INTERVAL 1);",
        );
        run_until(&r, |r| handler(r, "c.count") == "500");
    }

    #[test]
    fn bad_config() {
        for (bad, want) in [
            (
                "BalancedThreadSched(0)",
                "INTERVAL must be at least 1 millisecond",
            ),
            (
                "BalancedThreadSched(x)",
                "INTERVAL: expected unsigned integer",
            ),
            (
                "BalancedThreadSched(1, maybe)",
                "INCREASING: expected boolean",
            ),
        ] {
            let e = build_err(&reg(), bad);
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
