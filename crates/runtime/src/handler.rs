//! Handlers: named read and write operations on elements (`c.count`,
//! `q.reset`), Click's interface for inspecting and controlling a router.
//!
//! This module owns handler dispatch: resolving `element.handler` names
//! (relative to the caller's compound first), the handlers every element
//! has ([`BUILTIN`]), the router-wide ones ([`GLOBAL_READ`],
//! [`GLOBAL_WRITE`]), and calls into an element's own table.

use crate::core::Core;
pub use crate::cx::HandlerCx;
use crate::element::{HandlerCall, HandlerInfo};
use paraclick_lang::check::PortKind;

/// Read handlers every element has, after its own: Click's `name`,
/// `class`, `config`, `ports` and `handlers`, `home_thread` (as in
/// Click's multithreaded builds: the element's thread, see
/// `home_thread_text`), and `drop_reasons`, the packets the element
/// dropped per reason, one `REASON COUNT` line per reason with drops (its
/// class's reasons in their order, then `unspecified`; empty if nothing
/// dropped; see [`crate::drops`]).
pub const BUILTIN: &[&str] = &[
    "name",
    "class",
    "config",
    "ports",
    "handlers",
    "home_thread",
    "drop_reasons",
];

/// The `home_thread` handler: the thread element `i`'s tasks run on now
/// (its first task's, which StaticThreadSched pins and the balancer may
/// move); for an element without tasks, the thread its timers run on
/// (that of the tasks whose packets reach it when they share one, else
/// 0: [`crate::plan`]). Click instead answers 0 for an element without
/// tasks unless StaticThreadSched named it.
pub(crate) fn home_thread_text(core: &Core, i: usize) -> String {
    use std::sync::atomic::Ordering;
    let t = match core.slots[i].tasks.first() {
        Some(&t) => core.tasks[t].thread.load(Ordering::Relaxed) % core.nthreads.max(1),
        None => core.home_thread(i),
    };
    t.to_string()
}

/// The read handler every element with a task has, after its own:
/// Click's `scheduled`, `true` while one of its tasks is on its thread's
/// task list, `false` while all are off it (asleep until a notifier wakes
/// them: an empty queue upstream, a full one downstream).
pub const TASK_READ: &str = "scheduled";

fn scheduled_text(core: &Core, i: usize) -> String {
    use std::sync::atomic::Ordering;
    let on = core.slots[i].tasks.iter().any(|&t| {
        let t = &core.tasks[t];
        !t.asleep.load(Ordering::Acquire) && t.blocked.load(Ordering::Acquire) == 0
    });
    on.to_string()
}

/// The built-in read handlers of element `i`.
fn builtins(core: &Core, i: usize) -> impl Iterator<Item = &'static str> + '_ {
    BUILTIN
        .iter()
        .copied()
        .chain((!core.slots[i].tasks.is_empty()).then_some(TASK_READ))
}

/// Router-wide read handlers (`-h list`, a Script's `read version`).
/// Click's, and paraclick's `nthreads`, `threads`, `drops` (every element
/// and reason with drops, largest first: [`crate::drops`]), `trace`
/// (the traced packets' paths: [`crate::trace`]) and `trace_status`
/// (whether tracing is on, marks left, marked packets alive, workers
/// looking at packets; reading it turns a finished trace off) and
/// `memory` (the process's peak and current resident memory, and the
/// current split into anonymous memory and mapped files, from
/// `/proc/self/status`: [`memory_text`]); see also [`crate::control`].
pub const GLOBAL_READ: &[&str] = &[
    "version",
    "list",
    "classes",
    "config",
    "flatconfig",
    "packages",
    "requirements",
    "driver",
    "nthreads",
    "threads",
    "drops",
    "trace",
    "trace_status",
    "capture",
    "capture_data",
    "timewarp",
    "memory",
];

/// Router-wide write handlers: `stop`, the tracer's `trace_add`
/// (`N [FILTER]`) and `trace_clear`, `capture`, Click's `timewarp`
/// (real time only: a speed factor > 0, router time then moving that
/// many times as fast as real time, or `nowait`, time jumping to the next
/// timer instead of waiting; read, it is the factor, `nowait`, or
/// `simulation` under simulated time), and `hotconfig` (with `-R`: a new
/// configuration replaces the running one, see [`crate::hot`]).
pub const GLOBAL_WRITE: &[&str] = &[
    "stop",
    "trace_add",
    "trace_clear",
    "capture",
    "timewarp",
    "hotconfig",
];

/// `element.handler` → (element, handler); no dot is a global handler.
fn split_spec(spec: &str) -> (Option<&str>, &str) {
    match spec.rsplit_once('.') {
        Some((e, h)) => (Some(e), h),
        None => (None, spec),
    }
}

/// The element a handler name refers to, relative to `from`'s compound
/// first (as in Click); `None` for a global handler.
fn resolve(core: &Core, elem: Option<&str>, from: Option<usize>) -> Result<Option<usize>, String> {
    let Some(name) = elem else {
        return Ok(None);
    };
    if let Some(&i) = core.names.get(name) {
        return Ok(Some(i));
    }
    if let Some(f) = from {
        let me = &core.slots[f].name;
        if let Some((prefix, _)) = me.rsplit_once('/') {
            if let Some(&i) = core.names.get(&format!("{prefix}/{name}")) {
                return Ok(Some(i));
            }
        }
    }
    Err(format!("no element named '{name}'"))
}

/// Reads `spec`: `element.handler`, `element.handler PARAM` (the parameter
/// follows the first space; it may hold dots, as an address does), or a
/// global handler.
pub(crate) fn read(core: &Core, spec: &str, from: Option<usize>) -> Result<String, String> {
    let spec = spec.trim();
    let (spec, param) = match spec.split_once(char::is_whitespace) {
        Some((s, p)) => (s, Some(p.trim())),
        None => (spec, None),
    };
    let (e, h) = split_spec(spec);
    let found = match resolve(core, e, from) {
        Ok(f) => f,
        // The driver's own control sockets (`click_driver@@ControlSocket`).
        Err(err) => {
            return match crate::control::driver_read(spec) {
                Some(_) if param.is_some() => {
                    Err(format!("read handler '{spec}' takes no parameter"))
                }
                Some(v) => Ok(v),
                None => Err(err),
            }
        }
    };
    let Some(i) = found else {
        if param.is_some() {
            return Err(format!("read handler '{h}' takes no parameter"));
        }
        return read_global(core, h);
    };
    let s = &core.slots[i];
    let hx = HandlerCx { core, elem: i };
    match s.element.read_handler(h, param, &hx) {
        HandlerCall::Done(r) => return r,
        HandlerCall::NoParam => {
            return Err(format!(
                "read handler '{}.{}' takes no parameter",
                s.name, h
            ))
        }
        HandlerCall::Missing => {}
    }
    let builtin = BUILTIN.contains(&h) || (h == TASK_READ && !s.tasks.is_empty());
    if param.is_some() && builtin {
        return Err(format!(
            "read handler '{}.{}' takes no parameter",
            s.name, h
        ));
    }
    match h {
        "name" => Ok(s.name.clone()),
        "class" => Ok(s.class.clone()),
        "config" => Ok(s
            .live_config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| s.config.clone())),
        "ports" => Ok(ports_text(core, i)),
        "handlers" => Ok(handlers_text(core, i)),
        "drop_reasons" => Ok(crate::drops::handler_text(core, i)),
        "home_thread" => Ok(home_thread_text(core, i)),
        TASK_READ if builtin => Ok(scheduled_text(core, i)),
        _ => Err(format!("no read handler '{}.{}'", s.name, h)),
    }
}

/// Writes `spec` (`element.handler` or a global handler).
pub(crate) fn write(
    core: &Core,
    spec: &str,
    value: &str,
    from: Option<usize>,
) -> Result<(), String> {
    let (e, h) = split_spec(spec.trim());
    let Some(i) = resolve(core, e, from)? else {
        return match h {
            "stop" => {
                core.stop_now();
                Ok(())
            }
            "trace_add" => {
                // Every worker reads the tracer's flags at the top of its
                // loop: this waits until each has turned tracing on.
                core.tracer.add_and_wait(core, value)
            }
            "trace_clear" => {
                core.tracer.clear();
                crate::crossing::barrier(core);
                Ok(())
            }
            "capture" => {
                crate::capture::write(core, value).map_err(|e| format!("capture: {e}"))?;
                // Workers read the capture's flag when the epoch moves,
                // as the tracer's; the capture reads `running` once they
                // all have.
                crate::crossing::barrier(core);
                crate::capture::armed(core);
                Ok(())
            }
            "timewarp" if !core.clock.is_simulated() => {
                let w = match value.trim() {
                    "nowait" => crate::time::TimeWarp::NoWait,
                    v => crate::time::TimeWarp::Linear(
                        v.parse::<f64>()
                            .map_err(|_| "expected double".to_string())?,
                    ),
                };
                core.clock.set_warp(w)?;
                // Workers napping until a timer wake up to wait anew.
                crate::notifier::unpark_all(core);
                Ok(())
            }
            // A hot swap (`-R`): built now, swapped once the writer (an
            // element of this router) has returned.
            "hotconfig" => {
                let hot = core.hot.lock().unwrap_or_else(|e| e.into_inner()).upgrade();
                match hot {
                    Some(hot) => hot.hotconfig_from_router(value).map_err(|e| e.msg),
                    None => Err("hotconfig: hot reconfiguration not enabled (run with -R)".into()),
                }
            }
            _ => Err(format!("no write handler '{h}'")),
        };
    };
    let s = &core.slots[i];
    let hx = HandlerCx { core, elem: i };
    match s.element.write_handler(h, value, &hx) {
        HandlerCall::Done(r) => {
            // A task that waits for a write (an inactive source) looks
            // again, whatever the write did.
            core.handler_written();
            r.map_err(|e| format!("{}.{}: {}", s.name, h, e))
        }
        _ => Err(format!("no write handler '{}.{}'", s.name, h)),
    }
}

/// Whether `spec` names a handler that exists, as seen from element
/// `from` (for elements that will call it later).
pub(crate) fn exists(core: &Core, spec: &str, from: usize) -> bool {
    let (e, h) = split_spec(spec);
    match resolve(core, e, Some(from)) {
        Ok(Some(i)) => {
            builtins(core, i).any(|b| b == h)
                || core.slots[i]
                    .element
                    .handler_list()
                    .iter()
                    .any(|x| x.name == h)
        }
        Ok(None) => GLOBAL_READ.contains(&h) || GLOBAL_WRITE.contains(&h),
        Err(_) => crate::control::driver_read(spec).is_some(),
    }
}

fn read_global(core: &Core, h: &str) -> Result<String, String> {
    match h {
        "version" => Ok(env!("CARGO_PKG_VERSION").to_string()),
        "list" => {
            let mut s = format!("{}\n", core.slots.len());
            for slot in core.slots.iter() {
                s.push_str(&slot.name);
                s.push('\n');
            }
            Ok(s)
        }
        "config" => Ok(crate::control::config_text(core)),
        "nthreads" => Ok(core.nthreads.to_string()),
        "drops" => Ok(crate::drops::router_text(core)),
        "trace" => Ok(core.tracer.show(core)),
        "trace_status" => Ok(core.tracer.status(core)),
        "capture" => Ok(crate::capture::read(core)),
        "capture_data" => Ok(crate::capture::data(core)),
        "memory" => memory_text(),
        "timewarp" => Ok(match core.clock.time_warp() {
            _ if core.clock.is_simulated() => "simulation".to_string(),
            crate::time::TimeWarp::NoWait => "nowait".to_string(),
            crate::time::TimeWarp::Linear(s) => s.to_string(),
        }),
        _ => crate::control::read_global(core, h)
            .ok_or_else(|| format!("no global read handler '{h}'")),
    }
}

/// The `memory` handler: `peak`, `resident`, `anon` and `file`, one a
/// line, in kB, from the kernel's `VmHWM`, `VmRSS`, `RssAnon` and
/// `RssFile`. `anon` (heap, packet pools, stacks) is what the router
/// allocates and does not depend on the page cache; `file` is the pages
/// of the binary and its libraries mapped in (docs/PERFORMANCE.md).
pub fn memory_text() -> Result<String, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("memory: /proc/self/status: {e}"))?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .ok_or_else(|| format!("memory: no {key} in /proc/self/status"))
    };
    Ok(format!(
        "peak {} kB\nresident {} kB\nanon {} kB\nfile {} kB\n",
        field("VmHWM:")?,
        field("VmRSS:")?,
        field("RssAnon:")?,
        field("RssFile:")?
    ))
}

fn ports_text(core: &Core, i: usize) -> String {
    let s = &core.slots[i];
    let kind = |k: &PortKind| match k {
        PortKind::Push => "push",
        PortKind::Pull => "pull",
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut out = format!(
        "{} input{}\n",
        s.input_kinds.len(),
        plural(s.input_kinds.len())
    );
    for k in &s.input_kinds {
        out.push_str(kind(k));
        out.push('\n');
    }
    out.push_str(&format!(
        "{} output{}\n",
        s.output_kinds.len(),
        plural(s.output_kinds.len())
    ));
    for k in &s.output_kinds {
        out.push_str(kind(k));
        out.push('\n');
    }
    out
}

/// Click's listing: one handler a line, its name, a tab, and `r`, `w` or
/// `rw`.
fn handlers_text(core: &Core, i: usize) -> String {
    let mut out = String::new();
    let own = core.slots[i].element.handler_list();
    for h in &own {
        let mode = match (h.read, h.write) {
            (true, true) => "rw",
            (true, false) => "r",
            _ => "w",
        };
        out.push_str(&format!("{}\t{}\n", h.name, mode));
    }
    for g in builtins(core, i) {
        if !own.iter().any(|h| h.name == g) {
            out.push_str(&format!("{g}\tr\n"));
        }
    }
    out
}

/// Every handler of element `i`, its own and the built-in ones.
pub(crate) fn list(core: &Core, i: usize) -> Vec<HandlerInfo> {
    let mut v = core.slots[i].element.handler_list();
    for g in builtins(core, i) {
        if !v.iter().any(|h| h.name == g) {
            v.push(HandlerInfo {
                name: g.to_string(),
                read: true,
                write: false,
                param: false,
            });
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::{exists, read, write};
    use crate::element::{Element, Handler};
    use crate::registry::{ClassSpec, Registry};
    use crate::{BuildOptions, Router};
    use std::sync::Mutex;

    /// `v` reads and writes a value, `r` is read-only, `w` write-only and
    /// fails on "bad", `p` takes a parameter.
    struct H {
        v: Mutex<String>,
    }

    impl Element for H {
        const HANDLERS: &'static [Handler<Self>] = &[
            Handler::rw(
                "v",
                |e, _| e.v.lock().unwrap().clone(),
                |e, v, _| {
                    *e.v.lock().unwrap() = v.to_string();
                    Ok(())
                },
            ),
            Handler::read("r", |_, _| "ro".to_string()),
            Handler::write("w", |_, v, _| {
                if v == "bad" {
                    Err("bad value".into())
                } else {
                    Ok(())
                }
            }),
            Handler::read_param("p", |_, p, _| Ok(format!("p={}", p.unwrap_or("-")))),
        ];
    }

    #[test]
    fn the_global_timewarp_handler() {
        let r = router();
        let c = &*r.core;
        assert_eq!(read(c, "timewarp", None).unwrap(), "1");
        write(c, "timewarp", "2", None).unwrap();
        assert_eq!(read(c, "timewarp", None).unwrap(), "2");
        write(c, "timewarp", "0.5", None).unwrap();
        assert_eq!(read(c, "timewarp", None).unwrap(), "0.5");
        assert_eq!(
            write(c, "timewarp", "0", None).unwrap_err(),
            "timefactor must be > 0"
        );
        assert_eq!(
            write(c, "timewarp", "fast", None).unwrap_err(),
            "expected double"
        );
        write(c, "timewarp", "nowait", None).unwrap();
        assert_eq!(read(c, "timewarp", None).unwrap(), "nowait");
        // Simulated time cannot be warped.
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        let s = crate::testing::build_simtime(&reg, "TestSource -> TestSink;");
        assert_eq!(read(&s.core, "timewarp", None).unwrap(), "simulation");
        assert_eq!(
            write(&s.core, "timewarp", "2", None).unwrap_err(),
            "no write handler 'timewarp'"
        );
    }

    fn router() -> Router {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element("H", "1/1", "h", |_| {
            Ok(H {
                v: Mutex::new("init".into()),
            })
        }));
        let conf = "elementclass C { input -> y :: H -> z :: H -> output }
            TestSource -> x :: H -> c :: C -> TestSink;";
        let src = paraclick_lang::Source::new("<t>", conf);
        let opts = BuildOptions {
            threads: 2,
            pin: false,
            ..BuildOptions::default()
        };
        Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"))
    }

    #[test]
    fn reads_go_to_the_element_then_the_builtins() {
        let r = router();
        let c = &r.core;
        assert_eq!(read(c, "x.v", None).unwrap(), "init");
        assert_eq!(read(c, "x.r", None).unwrap(), "ro");
        assert_eq!(read(c, " x.p ", None).unwrap(), "p=-");
        // The parameter follows the first space and may hold dots.
        assert_eq!(read(c, "x.p 10.0.0.1", None).unwrap(), "p=10.0.0.1");
        assert_eq!(read(c, "c/y.class", None).unwrap(), "H");
        assert_eq!(read(c, "c/y.name", None).unwrap(), "c/y");
        assert_eq!(
            read(c, "x.ports", None).unwrap(),
            "1 input\npush\n1 output\npush\n"
        );
        assert_eq!(
            read(c, "x.handlers", None).unwrap(),
            "v\trw\nr\tr\nw\tw\np\tr\nname\tr\nclass\tr\nconfig\tr\nports\tr\nhandlers\tr\nhome_thread\tr\ndrop_reasons\tr\n"
        );
    }

    #[test]
    fn bad_reads_say_what_is_wrong() {
        let r = router();
        let c = &r.core;
        assert_eq!(
            read(c, "nobody.v", None).unwrap_err(),
            "no element named 'nobody'"
        );
        assert_eq!(
            read(c, "x.nosuch", None).unwrap_err(),
            "no read handler 'x.nosuch'"
        );
        assert_eq!(read(c, "x.w", None).unwrap_err(), "no read handler 'x.w'");
        assert_eq!(
            read(c, "x.r extra", None).unwrap_err(),
            "read handler 'x.r' takes no parameter"
        );
        assert_eq!(
            read(c, "x.class extra", None).unwrap_err(),
            "read handler 'x.class' takes no parameter"
        );
        assert_eq!(
            read(c, "nthreads 3", None).unwrap_err(),
            "read handler 'nthreads' takes no parameter"
        );
        assert_eq!(
            read(c, "nosuch", None).unwrap_err(),
            "no global read handler 'nosuch'"
        );
    }

    #[test]
    fn writes_reach_the_element_and_their_errors_name_it() {
        let r = router();
        let c = &r.core;
        write(c, "x.v", "7", None).unwrap();
        assert_eq!(read(c, "x.v", None).unwrap(), "7");
        assert_eq!(
            read(c, "c/y.v", None).unwrap(),
            "init",
            "only x was written"
        );
        write(c, "x.w", "fine", None).unwrap();
        assert_eq!(write(c, "x.w", "bad", None).unwrap_err(), "x.w: bad value");
        assert_eq!(
            write(c, "x.r", "1", None).unwrap_err(),
            "no write handler 'x.r'"
        );
        assert_eq!(
            write(c, "x.class", "1", None).unwrap_err(),
            "no write handler 'x.class'"
        );
        assert_eq!(
            write(c, "nobody.v", "1", None).unwrap_err(),
            "no element named 'nobody'"
        );
        assert_eq!(
            write(c, "nosuch", "1", None).unwrap_err(),
            "no write handler 'nosuch'"
        );
        // The global stop: the router is told to stop.
        c.running.store(true, std::sync::atomic::Ordering::Release);
        write(c, "stop", "", None).unwrap();
        assert!(!c.running.load(std::sync::atomic::Ordering::Acquire));
    }

    #[test]
    fn globals_answer_for_the_router() {
        let r = router();
        let c = &r.core;
        assert_eq!(read(c, "nthreads", None).unwrap(), "2");
        assert_eq!(read(c, "version", None).unwrap(), env!("CARGO_PKG_VERSION"));
        let mem = read(c, "memory", None).unwrap();
        let names: Vec<&str> = mem.lines().filter_map(|l| l.split(' ').next()).collect();
        assert_eq!(names, ["peak", "resident", "anon", "file"], "{mem}");
        let list = read(c, "list", None).unwrap();
        let lines: Vec<&str> = list.lines().collect();
        assert_eq!(lines[0].parse::<usize>().unwrap(), lines.len() - 1);
        for n in ["x", "c/y", "c/z"] {
            assert!(lines.contains(&n), "{n} in {list:?}");
        }
        assert!(read(c, "config", None).unwrap().contains("elementclass C"));
    }

    #[test]
    fn names_resolve_in_the_callers_compound_first() {
        let r = router();
        let c = &r.core;
        let y = c.names["c/y"];
        let x = c.names["x"];
        write(c, "c/z.v", "zz", None).unwrap();
        // From c/y, "z" is its neighbour c/z; from x there is no "z".
        assert_eq!(read(c, "z.v", Some(y)).unwrap(), "zz");
        assert_eq!(read(c, "z.v", Some(x)).unwrap_err(), "no element named 'z'");
        write(c, "z.v", "again", Some(y)).unwrap();
        assert_eq!(read(c, "c/z.v", None).unwrap(), "again");
        // A name that exists at the top wins.
        assert_eq!(read(c, "x.r", Some(y)).unwrap(), "ro");
        assert!(exists(c, "z.v", y));
        assert!(exists(c, "z.class", y));
        assert!(!exists(c, "z.v", x));
        assert!(!exists(c, "z.nosuch", y));
        assert!(exists(c, "nthreads", x) && exists(c, "stop", x));
        assert!(!exists(c, "nosuch", x));
    }
}
