//! # StaticThreadSched
//!
//! StaticThreadSched(ELEMENT THREAD, ...)
//!
//! Specifies element and thread scheduling parameters: statically binds
//! elements' tasks to threads.
//!
//! Each argument names an element and a thread number; the element's
//! tasks run on that thread and the adaptive scheduler never moves them.
//! If more than one StaticThreadSched is given, they all apply, in
//! configuration order; a later one overrides an earlier one for the same
//! element. Elements without tasks are accepted and unaffected.
//!
//! ELEMENT may name a compound element (an instance of an
//! `elementclass`): the binding then applies to every element inside it.
//!
//! Thread numbers are taken modulo the number of threads (`-j`), so a
//! configuration written for 4 threads still runs on 2: thread 3 becomes
//! thread 1. (Click instead warns and uses thread 0.) Negative numbers are
//! an error: Click's -1 (a task that never runs) is not supported. An
//! element name that does not exist is an error.
//!
//! Ports: none.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     src0 :: FastUDPFlows(...) -> ...; src1 :: FastUDPFlows(...) -> ...;
//!     StaticThreadSched(src0 0, src1 1);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, InitCx, Kind};

pub struct StaticThreadSched {
    /// (element name, thread) in configuration order.
    bindings: Vec<(String, usize)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("StaticThreadSched", "0/0", "a", make)
        .stateless()
        .kind(Kind::ThreadSched)
}

fn parse_binding(arg: &str) -> Result<(String, usize), String> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    let [name, thread] = words[..] else {
        return Err(format!("expected 'ELEMENT THREAD', not '{}'", arg.trim()));
    };
    let t: i64 = thread
        .parse()
        .map_err(|_| format!("{name}: expected thread number, not '{thread}'"))?;
    if t < 0 {
        return Err(format!(
            "{name}: thread {t} not supported (threads are numbered from 0)"
        ));
    }
    Ok((name.to_string(), t as usize))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StaticThreadSched, String> {
    // Arguments are "NAME THREAD" pairs; an all-capitals element name
    // would look like a keyword, so take every argument as written.
    let args = cx.args().rest_all();
    let mut bindings = Vec::with_capacity(args.len());
    for a in args.iter().filter(|a| !a.trim().is_empty()) {
        bindings.push(parse_binding(a)?);
    }
    Ok(StaticThreadSched { bindings })
}

impl Element for StaticThreadSched {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let n = ix.nthreads().max(1);
        for (name, thread) in &self.bindings {
            let found = ix.find_elements(name);
            if found.is_empty() {
                return Err(format!("no element named '{name}'"));
            }
            for i in found {
                ix.prefer_thread(i, thread % n);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    const SOURCES: &str = "a :: InfiniteSource -> Discard; b :: InfiniteSource -> Discard; \
                           c :: InfiniteSource -> Discard;";

    fn threads(conf: &str, nthreads: usize) -> Vec<(String, usize)> {
        let r = Router::from_str(conf, &reg(), nthreads).unwrap_or_else(|d| panic!("{d:?}"));
        let mut v: Vec<_> = r
            .task_threads()
            .into_iter()
            .map(|(name, _, t)| (name, t))
            .collect();
        v.sort();
        v
    }

    fn names(v: &[(&str, usize)]) -> Vec<(String, usize)> {
        v.iter().map(|&(n, t)| (n.to_string(), t)).collect()
    }

    #[test]
    fn binds_tasks_to_threads() {
        let conf = format!("{SOURCES} StaticThreadSched(a 3, b 3, c 0);");
        assert_eq!(threads(&conf, 4), names(&[("a", 3), ("b", 3), ("c", 0)]));
    }

    #[test]
    fn thread_numbers_wrap() {
        let conf = format!("{SOURCES} StaticThreadSched(a 3, b 4, c 5);");
        assert_eq!(threads(&conf, 2), names(&[("a", 1), ("b", 0), ("c", 1)]));
        assert_eq!(threads(&conf, 1), names(&[("a", 0), ("b", 0), ("c", 0)]));
    }

    #[test]
    fn later_bindings_override() {
        let conf = format!("{SOURCES} StaticThreadSched(a 1, a 2); StaticThreadSched(b 1);");
        let t = threads(&conf, 3);
        assert_eq!(t[0], ("a".to_string(), 2));
        assert_eq!(t[1], ("b".to_string(), 1));
    }

    #[test]
    fn errors() {
        for (bad, why) in [
            ("nosuch 1", "no element named 'nosuch'"),
            ("a -1", "thread -1 not supported"),
            ("a", "expected 'ELEMENT THREAD', not 'a'"),
            ("a x", "expected thread number, not 'x'"),
            ("a 1 2", "expected 'ELEMENT THREAD'"),
        ] {
            let conf = format!("{SOURCES} StaticThreadSched({bad});");
            let e = Router::from_str(&conf, &reg(), 2).err().expect(bad);
            assert!(e[0].message.contains(why), "{bad}: {e:?}");
        }
        let conf = format!("{SOURCES} StaticThreadSched(a 1) -> Discard;");
        assert_err(Router::from_str(&conf, &reg(), 2), "<config>:1:97: 'StaticThreadSched@7' :: StaticThreadSched has no output 0 (StaticThreadSched has no outputs)");
    }

    #[test]
    fn capital_names_and_empty() {
        let conf =
            "SRC :: InfiniteSource -> Discard; StaticThreadSched(SRC 1); StaticThreadSched();";
        assert_eq!(threads(conf, 2), names(&[("SRC", 1)]));
    }

    /// Each element's `home_thread` handler says where StaticThreadSched
    /// put it (Click's threads/StaticThreadSched-01 and -02): a source,
    /// the pull Discard after its queue, and in compounds the inner
    /// StaticThreadSched (later in configuration order) over the outer.
    #[test]
    fn home_thread_reads_the_binding() {
        let home = |r: &Router, names: &[&str]| -> Vec<String> {
            names
                .iter()
                .map(|n| r.read_handler(&format!("{n}.home_thread")).unwrap())
                .collect()
        };
        let conf = "StaticThreadSched(rs1 0, d1 0, rs2 1, d2 1);
            rs1 :: RatedSource -> q1 :: Queue -> d1 :: Discard;
            rs2 :: RatedSource -> q2 :: Queue -> d2 :: Discard;";
        let r = Router::from_str(conf, &reg(), 2).unwrap_or_else(|d| panic!("{d:?}"));
        // The queues' timers go where the tasks touching them are.
        assert_eq!(
            home(&r, &["rs1", "d1", "rs2", "d2", "q1", "q2"]),
            ["0", "0", "1", "1", "0", "1"]
        );
        let conf = "StaticThreadSched(sub0 1);
            sub0, sub1 :: {
                src :: RatedSource -> q :: Queue -> d :: Discard;
                StaticThreadSched(d 0);
            }";
        let r = Router::from_str(conf, &reg(), 2).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(
            home(&r, &["sub0/src", "sub0/d", "sub1/src", "sub1/d"]),
            ["1", "0", "0", "0"]
        );
        // An element no task reaches is on thread 0; every element lists it.
        let r = Router::from_str("i :: Idle; StaticThreadSched(i 1);", &reg(), 2)
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(home(&r, &["i"]), ["0"]);
        assert!(r
            .read_handler("i.handlers")
            .unwrap()
            .contains("home_thread\tr\n"));
    }

    #[test]
    fn compound_names_bind_their_elements() {
        let conf = "elementclass Gen { s1 :: InfiniteSource -> output; \
                        s2 :: InfiniteSource -> output }
                    g :: Gen -> Discard; other :: InfiniteSource -> Discard;
                    StaticThreadSched(g 1, other 0);";
        assert_eq!(
            threads(conf, 2),
            names(&[("g/s1", 1), ("g/s2", 1), ("other", 0)])
        );
        // A name that is neither an element nor a compound is still an error.
        let bad = "elementclass Gen { s1 :: InfiniteSource -> output }
                   g :: Gen -> Discard; StaticThreadSched(gg 1);";
        assert_err(
            Router::from_str(bad, &reg(), 2),
            "<config>:2:41: StaticThreadSched@3 :: StaticThreadSched: no element named 'gg'",
        );
    }
}
