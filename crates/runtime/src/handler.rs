//! Handlers: named read and write operations on elements (`c.count`,
//! `q.reset`), Click's interface for inspecting and controlling a router.
//!
//! This module owns handler dispatch: resolving `element.handler` names
//! (relative to the caller's compound first), the handlers every element
//! has ([`BUILTIN`]), the router-wide ones ([`GLOBAL_READ`],
//! [`GLOBAL_WRITE`]), and calls into an element's own table.

pub use crate::cx::HandlerCx;
use crate::element::{HandlerCall, HandlerInfo};
use crate::router::Core;
use paraclick_lang::check::PortKind;

/// Read handlers every element has, after its own: Click's `name`,
/// `class`, `config`, `ports` and `handlers`, and `drop_reasons`, the
/// packets the element dropped per reason, one `REASON COUNT` line per
/// reason with drops (its class's reasons in their order, then
/// `unspecified`; empty if nothing dropped; see [`crate::drops`]).
pub const BUILTIN: &[&str] = &[
    "name",
    "class",
    "config",
    "ports",
    "handlers",
    "drop_reasons",
];

/// Router-wide read handlers (`-h list`, a Script's `read version`).
/// Click's, and `nthreads` (paraclick's); see also [`crate::control`].
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
];

/// Router-wide write handlers.
pub const GLOBAL_WRITE: &[&str] = &["stop"];

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
    let Some(i) = resolve(core, e, from)? else {
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
    if param.is_some() && BUILTIN.contains(&h) {
        return Err(format!(
            "read handler '{}.{}' takes no parameter",
            s.name, h
        ));
    }
    match h {
        "name" => Ok(s.name.clone()),
        "class" => Ok(s.class.clone()),
        "config" => Ok(s.config.clone()),
        "ports" => Ok(ports_text(core, i)),
        "handlers" => Ok(handlers_text(core, i)),
        "drop_reasons" => Ok(crate::drops::handler_text(core, i)),
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
            _ => Err(format!("no write handler '{h}'")),
        };
    };
    let s = &core.slots[i];
    let hx = HandlerCx { core, elem: i };
    match s.element.write_handler(h, value, &hx) {
        HandlerCall::Done(r) => r.map_err(|e| format!("{}.{}: {}", s.name, h, e)),
        _ => Err(format!("no write handler '{}.{}'", s.name, h)),
    }
}

/// Whether `spec` names a handler that exists, as seen from element
/// `from` (for elements that will call it later).
pub(crate) fn exists(core: &Core, spec: &str, from: usize) -> bool {
    let (e, h) = split_spec(spec);
    match resolve(core, e, Some(from)) {
        Ok(Some(i)) => {
            BUILTIN.contains(&h)
                || core.slots[i]
                    .element
                    .handler_list()
                    .iter()
                    .any(|x| x.name == h)
        }
        Ok(None) => GLOBAL_READ.contains(&h) || GLOBAL_WRITE.contains(&h),
        Err(_) => false,
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
        "config" => Ok(core.source.to_string()),
        "nthreads" => Ok(core.nthreads.to_string()),
        _ => crate::control::read_global(core, h)
            .ok_or_else(|| format!("no global read handler '{h}'")),
    }
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
    for g in BUILTIN {
        if !own.iter().any(|h| h.name == *g) {
            out.push_str(&format!("{g}\tr\n"));
        }
    }
    out
}

/// Every handler of element `i`, its own and the built-in ones.
pub(crate) fn list(core: &Core, i: usize) -> Vec<HandlerInfo> {
    let mut v = core.slots[i].element.handler_list();
    for g in BUILTIN {
        if !v.iter().any(|h| h.name == *g) {
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
