//! `paraclick build`: a program for one configuration, ahead of time.
//!
//! The router is built for the configuration (checking only: nothing
//! opened), its graph walked, and a Rust program written in which every
//! element the dynamic router fuses on input 0 (an action, or an element
//! routing single packets) has a function: it makes the element the
//! running one, calls its action with the element's concrete type, and
//! for each output connected to another such element calls that one's
//! function directly; anything else goes back to the dynamic router
//! (`Cx::forward_code`). Each such function is installed as the
//! element's compiled entry (`Router::install_compiled`). The program is
//! the ordinary command line ([`crate::run_built`]) with those entries.
//!
//! The program is compiled with `rustc` against the libraries the
//! paraclick workspace already built (its target directory, the chosen
//! profile's `deps`), so only the program itself compiles. A crate for
//! it (its own `[workspace]`, the workspace's profiles and lock file,
//! path dependencies) is written beside it, for `cargo build` by hand;
//! cargo itself is not used because a path dependency outside the
//! building workspace gets another metadata hash, which rebuilt every
//! paraclick crate (seven minutes here) for each new build directory.

use crate::{fail, load, report_errors, Built, Input};
use clap::Args;
use paraclick_lang::check::PortKind;
use paraclick_lang::{parse_config_with, FlatGraph, ParseOptions, Source};
use paraclick_runtime::{BuildOptions, Registry, Router};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(Args)]
pub(crate) struct BuildArgs {
    #[command(flatten)]
    input: Input,
    /// Write the program to BIN.
    #[arg(short = 'o', long = "output", value_name = "BIN", required = true)]
    output: String,
    /// Write the generated crate to DIR and keep it (default: a
    /// directory under the target directory, replaced at each build).
    #[arg(long = "keep", value_name = "DIR")]
    keep: Option<String>,
    /// The cargo profile whose built libraries the program links with
    /// (and whose settings it is compiled with): release, ci, dev...
    #[arg(long = "profile", default_value = "release")]
    profile: String,
    /// The paraclick source tree (default: where this paraclick was
    /// built from).
    #[arg(long = "source", value_name = "DIR")]
    source: Option<String>,
    /// Link without paraclick's code order (text-order.ld): about 2 s
    /// less linking, and runs of the program map about 2 MB more of it.
    #[arg(long = "no-code-order")]
    no_code_order: bool,
}

/// One element the program compiles.
struct Compiled {
    index: usize,
    name: String,
    /// Per output port: the element whose function it calls directly (a
    /// compiled one's or a direct push's, see [`Plan::pushed`]).
    calls: Vec<Option<usize>>,
    /// Whether it has a compiled entry: some push into its input 0 is
    /// not a direct call from the program (its other pushes are).
    entry: bool,
    /// The direct calls of its function in the program: with one, the
    /// function is inlined there (`#[inline(always)]`), so that a chain
    /// is one function; with more, it stays a function of its own.
    callers: usize,
}

/// A task the program runs itself ([`TASK_TYPES`]).
struct TaskRun {
    index: usize,
    kind: TaskKind,
    /// A source: the function its output 0 calls. A puller: the compiled
    /// pull from its input 0 (element and output port).
    peer: Option<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum TaskKind {
    /// Pushes one packet a run (`run_task_with(cx, push)`).
    Source,
    /// Pulls one packet a run (`run_task_with(cx, pull)`).
    Puller,
}

/// An element a compiled pull takes a packet from: a queue, or an action
/// pulling from its own input 0 (`from`: the compiled pull there, if any).
struct Pull {
    index: usize,
    port: usize,
    queue: bool,
    from: Option<usize>,
}

/// What the program compiles.
struct Plan {
    /// Every element the program names, by index: its name and type.
    bound: std::collections::BTreeMap<usize, (String, &'static str)>,
    /// The fused elements, with their compiled entries.
    compiled: Vec<Compiled>,
    /// The other push elements (a queue, a sink) a compiled function
    /// pushes into directly: input 0, through the element's own
    /// `Element::push_packet`, as the dynamic router's last hop does.
    pushed: Vec<usize>,
    tasks: Vec<TaskRun>,
    pulls: Vec<Pull>,
    /// Every connection the code calls along (checked when installing):
    /// from, output port, to (input 0).
    calls: Vec<(usize, usize, usize)>,
}

/// The task elements whose one-packet run the program compiles, by Rust
/// type: each has a public `run_task_with` taking the push of its output
/// 0 (a source) or the pull of its input 0 (a puller).
const TASK_TYPES: &[(&str, TaskKind)] = &[
    (
        "paraclick_elements::sources::infinite_source::InfiniteSource",
        TaskKind::Source,
    ),
    (
        "paraclick_elements::standard::discard::Discard",
        TaskKind::Puller,
    ),
];

/// The queues a compiled pull takes packets from directly
/// (`QueueElement::pull_packet` of the concrete type).
const QUEUE_TYPES: &[&str] = &["paraclick_elements::standard::queue::Queue"];

pub(crate) fn build_cmd(a: &BuildArgs) -> ExitCode {
    let (src, defines) = match load(&a.input) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let reg = crate::registry();
    let opts = BuildOptions {
        defines: defines.clone(),
        check_only: true,
        pin: false,
        clickpath: a.input.clickpath.clone(),
        max_elements: a.input.max_elements,
        ..BuildOptions::default()
    };
    let router = match Router::build(&src, &reg, &opts) {
        Ok(r) => r,
        Err(d) => return report_errors(&src, &d),
    };
    let graph = match parse_config_with(&src, &defines, &opts.parse_options()) {
        Ok(g) => g,
        Err(d) => return report_errors(&src, &d),
    };
    let plan = match plan(&router, &graph, &reg) {
        Ok(c) => c,
        Err(d) => return report_errors(&src, &d),
    };
    let program = emit(&src, &defines, &plan);
    let mut classes: Vec<&'static str> = graph
        .elements
        .iter()
        .filter_map(|e| router.rust_type_of(&e.name))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    match write_and_compile(a, &src, &program, &classes) {
        Ok(bin) => {
            eprintln!(
                "paraclick build: {} of {} elements compiled, {} pushed into directly, \
                 {} task runs and {} pulls compiled; wrote {}",
                plan.compiled.len(),
                graph.elements.len(),
                plan.pushed.len(),
                plan.tasks.len(),
                plan.pulls.len(),
                bin.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("build: {e}")),
    }
}

/// Whether `ty` (a `type_name`) can be written as a path in the program.
fn nameable(ty: &str) -> bool {
    !ty.is_empty() && !ty.contains(['{', '(', '&', '[', '*']) && !ty.contains("dyn ")
}

/// The elements to compile and, for each, which outputs call another.
fn plan(
    router: &Router,
    graph: &FlatGraph,
    reg: &Registry,
) -> Result<Plan, Vec<paraclick_lang::Diagnostic>> {
    let checked = Router::check(graph, reg)?;
    let n = graph.elements.len();
    let ty_of = |i: usize| {
        router
            .rust_type_of(&graph.elements[i].name)
            .filter(|t| nameable(t))
    };
    let push_in0 = |i: usize| checked.inputs[i].first() == Some(&PortKind::Push);
    let pull_in0 = |i: usize| checked.inputs[i].first() == Some(&PortKind::Pull);
    let push_out = |i: usize, port: usize| checked.outputs[i].get(port) == Some(&PortKind::Push);
    let mut p = Plan {
        bound: Default::default(),
        compiled: Vec::new(),
        pushed: Vec::new(),
        tasks: Vec::new(),
        pulls: Vec::new(),
        calls: Vec::new(),
    };
    let mut fused_at: Vec<Option<usize>> = vec![None; n];
    for (i, e) in graph.elements.iter().enumerate() {
        let Some(ty) = ty_of(i) else { continue };
        if push_in0(i) && router.element_fuses(&e.name) == Some(true) {
            fused_at[i] = Some(p.compiled.len());
            p.compiled.push(Compiled {
                index: i,
                name: e.name.clone(),
                calls: vec![None; checked.outputs[i].len()],
                entry: false,
                callers: 0,
            });
            p.bound.insert(i, (e.name.clone(), ty));
        }
    }
    // What compiled code can call at input 0 of `i`: a compiled
    // function, or a push element that is not fused, by its own push
    // (not a router of single packets: those are fused) when its type is
    // nameable.
    let callable = |i: usize| {
        fused_at[i].is_some()
            || (push_in0(i)
                && router.element_fuses(&graph.elements[i].name) == Some(false)
                && ty_of(i).is_some())
    };
    // The elements called by their own push (all of them callable).
    let mut pushed = vec![false; n];
    for c in &graph.connections {
        let Some(from) = fused_at[c.from] else {
            continue;
        };
        if !push_out(c.from, c.from_port) || c.to_port != 0 {
            continue;
        }
        if !callable(c.to) {
            continue;
        }
        let to = c.to;
        pushed[to] |= fused_at[to].is_none();
        if let Some(slot) = p.compiled[from].calls.get_mut(c.from_port) {
            *slot = Some(to);
            p.calls.push((c.from, c.from_port, to));
        }
    }
    // Task runs: a source's output 0, a puller's input 0.
    for (i, e) in graph.elements.iter().enumerate() {
        let Some(ty) = ty_of(i) else { continue };
        let Some(&(_, kind)) = TASK_TYPES.iter().find(|(t, _)| *t == ty) else {
            continue;
        };
        let peer = match kind {
            TaskKind::Source if push_out(i, 0) => {
                let c = graph
                    .connections
                    .iter()
                    .find(|c| c.from == i && c.from_port == 0);
                match c {
                    Some(c) if c.to_port == 0 && callable(c.to) => {
                        pushed[c.to] |= fused_at[c.to].is_none();
                        p.calls.push((i, 0, c.to));
                        Some(c.to)
                    }
                    _ => None,
                }
            }
            TaskKind::Puller if pull_in0(i) => pull_chain(router, graph, &ty_of, &mut p, i, 0),
            _ => continue,
        };
        p.bound.insert(i, (e.name.clone(), ty));
        p.tasks.push(TaskRun {
            index: i,
            kind,
            peer,
        });
    }
    for (i, &yes) in pushed.iter().enumerate() {
        if let (true, Some(ty)) = (yes, ty_of(i)) {
            p.pushed.push(i);
            p.bound.insert(i, (graph.elements[i].name.clone(), ty));
        }
    }
    // Which pushes into a compiled element are direct calls: the others
    // (from an element run dynamically) need its entry.
    let direct = |c: &paraclick_lang::FlatConnection| {
        let from_compiled = fused_at[c.from]
            .is_some_and(|f| p.compiled[f].calls.get(c.from_port) == Some(&Some(c.to)));
        let from_task = p.tasks.iter().any(|t| {
            t.index == c.from
                && t.kind == TaskKind::Source
                && t.peer == Some(c.to)
                && c.from_port == 0
        });
        from_compiled || from_task
    };
    let mut entry = vec![false; n];
    let mut callers = vec![0usize; n];
    for c in &graph.connections {
        if c.to_port != 0 || !push_out(c.from, c.from_port) {
            continue;
        }
        if direct(c) {
            callers[c.to] += 1;
        } else {
            entry[c.to] = true;
        }
    }
    for c in &mut p.compiled {
        c.entry = entry[c.index];
        c.callers = callers[c.index];
    }
    Ok(p)
}

/// The compiled pull into input `port` of element `to`, if its peer is a
/// queue or an action (itself pulling from a queue or an action, or
/// dynamically): the index of the element pulled from. `depth` bounds
/// the chain.
fn pull_chain(
    router: &Router,
    graph: &FlatGraph,
    ty_of: &dyn Fn(usize) -> Option<&'static str>,
    p: &mut Plan,
    to: usize,
    depth: usize,
) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    let c = graph
        .connections
        .iter()
        .find(|c| c.to == to && c.to_port == 0)?;
    let from = c.from;
    let ty = ty_of(from)?;
    let name = &graph.elements[from].name;
    if let Some(done) = p.pulls.iter().find(|q| q.index == from) {
        // Pulled by two elements (a queue with two outputs, say): one
        // function per element and port.
        if done.port != c.from_port {
            return None;
        }
        p.calls.push((from, c.from_port, to));
        return Some(from);
    }
    let queue = QUEUE_TYPES.contains(&ty);
    let upstream = if queue {
        None
    } else if router.element_acts(name) == Some(true) && c.from_port == 0 {
        pull_chain(router, graph, ty_of, p, from, depth + 1)
    } else {
        return None;
    };
    p.bound.insert(from, (name.clone(), ty));
    p.pulls.push(Pull {
        index: from,
        port: c.from_port,
        queue,
        from: upstream,
    });
    p.calls.push((from, c.from_port, to));
    Some(from)
}

/// The program's source.
fn emit(src: &Source, defines: &[(String, String)], plan: &Plan) -> String {
    let compiled = &plan.compiled;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "//! Written by `paraclick build` for {:?}: its per-packet elements\n\
         //! compiled to straight-line calls, installed as compiled entries.\n\
         //! Do not edit: build it again.\n\n\
         #![forbid(unsafe_code)]\n\n\
         extern crate alloc;\n\n\
         use paraclick::built::{{bind, Hop1, ViaAction as _, ViaRouting as _}};\n\
         #[allow(unused_imports)]\n\
         use paraclick::built::{{paraclick_elements, paraclick_io, paraclick_packet, paraclick_runtime}};\n\
         use paraclick_packet::Packet;\n\
         #[allow(unused_imports)]\n\
         use paraclick_runtime::{{CompiledPush, CompiledTasks, Cx, ElemRef, Element, QueueElement, Router}};\n\
         use std::sync::Arc;\n",
        src.name
    );
    let _ = writeln!(w, "const CONF: &str = {:?};\n", src.text);
    let _ = writeln!(w, "/// The elements the program names, typed.\nstruct B {{");
    for (i, (name, ty)) in &plan.bound {
        let _ = writeln!(w, "    /// {name}\n    e{i}: ElemRef<{ty}>,");
    }
    let _ = writeln!(w, "}}\n");
    for c in compiled {
        let i = c.index;
        let inline = if c.callers == 1 && !c.entry {
            "#[inline(always)]"
        } else {
            "#[inline]"
        };
        let _ = writeln!(
            w,
            "/// {name}\n{inline}\nfn e{i}(b: &B, cx: &mut Cx<'_>, mut p: Packet) {{\n    \
             cx.run_as({i});\n    \
             let code = (&Hop1(b.e{i}.get())).hop(cx, &mut p);\n    \
             match code {{",
            name = c.name
        );
        for (port, to) in c.calls.iter().enumerate() {
            if let Some(to) = to {
                let _ = writeln!(w, "        {port} => e{to}(b, cx, p),");
            }
        }
        let _ = writeln!(
            w,
            "        _ => cx.forward_code({i}, code, p),\n    }}\n}}\n"
        );
        if !c.entry {
            continue;
        }
        let _ = writeln!(
            w,
            "struct X{i}(Arc<B>);\n\n\
             impl CompiledPush for X{i} {{\n    \
             fn push_packet(&self, cx: &mut Cx<'_>, p: Packet) {{\n        \
             e{i}(&self.0, cx, p)\n    }}\n}}\n"
        );
    }
    for &i in &plan.pushed {
        let _ = writeln!(
            w,
            "/// {name}: its own push.\n#[inline]\nfn e{i}(b: &B, cx: &mut Cx<'_>, p: Packet) {{\n    \
             cx.run_as({i});\n    \
             Element::push_packet(b.e{i}.get(), cx, 0, p)\n}}\n",
            name = plan.bound[&i].0
        );
    }
    for q in &plan.pulls {
        let i = q.index;
        let _ = writeln!(
            w,
            "/// A packet pulled from {name}[{port}].\n#[inline]\nfn p{i}(b: &B, cx: &mut Cx<'_>) -> Option<Packet> {{\n    \
             let saved = cx.enter_pull({i});",
            name = plan.bound[&i].0,
            port = q.port
        );
        if q.queue {
            let _ = writeln!(
                w,
                "    let p = QueueElement::pull_packet(b.e{i}.get(), cx, {});",
                q.port
            );
        } else {
            let upstream = match q.from {
                Some(f) => format!("p{f}(b, cx)"),
                None => "cx.pull_packet(0)".to_string(),
            };
            let _ = writeln!(
                w,
                "    let p = match {upstream} {{\n        \
                 Some(mut p) => match (&Hop1(b.e{i}.get())).hop(cx, &mut p) {{\n            \
                 0 => Some(p),\n            \
                 code => {{\n                \
                 cx.forward_code({i}, code, p);\n                \
                 None\n            }}\n        }},\n        \
                 None => None,\n    }};"
            );
        }
        let _ = writeln!(w, "    cx.run_as(saved);\n    p\n}}\n");
    }
    for t in &plan.tasks {
        let i = t.index;
        let body = match (t.kind, t.peer) {
            (TaskKind::Source, Some(to)) => {
                format!("|cx, p| {{\n        e{to}(b, cx, p);\n        cx.run_as({i});\n    }}")
            }
            (TaskKind::Source, None) => "|cx, p| cx.push_packet(0, p)".to_string(),
            (TaskKind::Puller, Some(from)) => format!("|cx| p{from}(b, cx)"),
            (TaskKind::Puller, None) => "|cx| cx.pull_packet(0)".to_string(),
        };
        let _ = writeln!(
            w,
            "/// {name}'s task run.\n#[inline]\nfn t{i}(b: &B, cx: &mut Cx<'_>) -> bool {{\n    \
             b.e{i}.get().run_task_with(cx, {body})\n}}\n",
            name = plan.bound[&i].0
        );
    }
    if !plan.tasks.is_empty() {
        let _ = writeln!(
            w,
            "struct T(Arc<B>);\n\n\
             impl CompiledTasks for T {{\n    \
             fn run_task(&self, cx: &mut Cx<'_>, task: usize) -> bool {{\n        \
             if task == 0 && !cx.observing() {{\n            \
             let b = &*self.0;\n            \
             match cx.element_index() {{"
        );
        for t in &plan.tasks {
            let _ = writeln!(w, "                {i} => return t{i}(b, cx),", i = t.index);
        }
        let _ = writeln!(
            w,
            "                _ => {{}}\n            }}\n        }}\n        cx.run_own_task(task)\n    }}\n}}\n"
        );
    }
    let _ = writeln!(
        w,
        "fn install(r: &mut Router) -> Result<usize, String> {{\n    let b = Arc::new(B {{"
    );
    for (i, (name, _)) in &plan.bound {
        let _ = writeln!(w, "        e{i}: bind(r, {name:?}, {i})?,");
    }
    let _ = writeln!(w, "    }});");
    for c in compiled.iter().filter(|c| c.entry) {
        let _ = writeln!(
            w,
            "    r.install_compiled({:?}, Box::new(X{}(b.clone())))?;",
            c.name, c.index
        );
    }
    if !plan.tasks.is_empty() {
        let _ = writeln!(w, "    r.install_compiled_tasks(Box::new(T(b.clone())))?;");
    }
    let _ = writeln!(w, "    Ok({})\n}}\n", compiled.len());
    let _ = writeln!(w, "fn main() -> std::process::ExitCode {{");
    let _ = writeln!(w, "    paraclick::run_built(paraclick::Built {{");
    let _ = writeln!(w, "        conf: CONF,\n        name: {:?},", src.name);
    let _ = write!(w, "        defines: &[");
    for (k, v) in defines {
        let _ = write!(w, "({k:?}, {v:?}), ");
    }
    let _ = writeln!(w, "],\n        calls: &[");
    for &(from, port, to) in &plan.calls {
        let _ = writeln!(
            w,
            "            ({:?}, {port}, {:?}),",
            plan.bound[&from].0, plan.bound[&to].0
        );
    }
    let _ = writeln!(w, "        ],\n        install,\n    }})\n}}");
    s
}

/// Where the paraclick source tree is.
fn source_dir(a: &BuildArgs) -> Result<PathBuf, String> {
    let dir = match &a.source {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let ok = dir.join("Cargo.toml").is_file() && dir.join("crates/paraclick/Cargo.toml").is_file();
    if !ok {
        return Err(format!(
            "{}: not the paraclick source tree (the build needs it: give --source DIR)",
            dir.display()
        ));
    }
    dir.canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// The settings of cargo profile `name` in the workspace manifest, with
/// what it inherits: (key, value) pairs, the profile's own last.
fn profile_settings(manifest: &toml::Table, name: &str) -> Result<toml::Table, String> {
    let profiles = manifest.get("profile").and_then(|p| p.as_table());
    let mut chain = Vec::new();
    let mut at = name.to_string();
    loop {
        let own = profiles.and_then(|p| p.get(&at)).and_then(|t| t.as_table());
        chain.push(own.cloned().unwrap_or_default());
        match own.and_then(|t| t.get("inherits")).and_then(|v| v.as_str()) {
            Some(parent) if chain.len() < 8 => at = parent.to_string(),
            Some(_) => return Err(format!("profile {name}: inherits too deep")),
            None if ["release", "dev", "bench", "test"].contains(&at.as_str()) => break,
            None if own.is_none() => {
                return Err(format!("no cargo profile '{name}' in the workspace"))
            }
            None => return Err(format!("profile {name}: inherits nothing")),
        }
    }
    // The built-in base: release-like unless the chain ends at dev/test.
    let mut merged = toml::Table::new();
    let release = at == "release" || at == "bench";
    merged.insert("opt-level".into(), (if release { 3 } else { 0 }).into());
    merged.insert("debug-assertions".into(), (!release).into());
    merged.insert("overflow-checks".into(), (!release).into());
    for t in chain.into_iter().rev() {
        for (k, v) in t {
            merged.insert(k, v);
        }
    }
    Ok(merged)
}

/// rustc's codegen options for a cargo profile's settings.
fn rustc_flags(p: &toml::Table) -> Vec<String> {
    let mut f = Vec::new();
    let mut c = |s: String| {
        f.push("-C".to_string());
        f.push(s);
    };
    match p.get("opt-level") {
        Some(toml::Value::Integer(n)) => c(format!("opt-level={n}")),
        Some(toml::Value::String(s)) => c(format!("opt-level={s}")),
        _ => {}
    }
    match p.get("debug") {
        Some(toml::Value::Boolean(true)) => c("debuginfo=2".into()),
        Some(toml::Value::Integer(n)) if *n > 0 => c(format!("debuginfo={n}")),
        Some(toml::Value::String(s)) if s != "none" => c(format!("debuginfo={s}")),
        _ => {}
    }
    if let Some(n) = p.get("codegen-units").and_then(|v| v.as_integer()) {
        c(format!("codegen-units={n}"));
    }
    match p.get("lto") {
        Some(toml::Value::String(s)) if s == "thin" || s == "fat" => c(format!("lto={s}")),
        Some(toml::Value::Boolean(true)) => c("lto=fat".into()),
        _ => {}
    }
    if p.get("panic").and_then(|v| v.as_str()) == Some("abort") {
        c("panic=abort".into());
    }
    for (key, opt) in [
        ("overflow-checks", "overflow-checks"),
        ("debug-assertions", "debug-assertions"),
    ] {
        if let Some(b) = p.get(key).and_then(|v| v.as_bool()) {
            c(format!("{opt}={}", if b { "on" } else { "off" }));
        }
    }
    f
}

/// The newest `libparaclick-*.rlib` in `deps`.
fn newest_rlib(deps: &Path) -> Option<PathBuf> {
    let rd = std::fs::read_dir(deps).ok()?;
    rd.filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("libparaclick-") && n.ends_with(".rlib")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
}

/// A name usable as a crate and file name, from the configuration's.
fn crate_name(src: &Source) -> String {
    let stem = Path::new(&src.name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut n: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if n.is_empty() || !n.starts_with(|c: char| c.is_ascii_alphabetic()) {
        n.insert_str(0, "conf_");
    }
    format!("built_{n}")
}

/// Writes the program's crate, compiles it and copies it to `a.output`.
/// `classes`: the Rust types of the configuration's elements.
fn write_and_compile(
    a: &BuildArgs,
    src: &Source,
    program: &str,
    classes: &[&str],
) -> Result<PathBuf, String> {
    let source = source_dir(a)?;
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if !t.is_empty() => PathBuf::from(t),
        _ => source.join("target"),
    };
    let manifest_text = std::fs::read_to_string(source.join("Cargo.toml"))
        .map_err(|e| format!("{}: {e}", source.join("Cargo.toml").display()))?;
    let manifest: toml::Table = manifest_text
        .parse()
        .map_err(|e| format!("{}: {e}", source.join("Cargo.toml").display()))?;
    let settings = profile_settings(&manifest, &a.profile)?;
    let profile_dir = match a.profile.as_str() {
        "dev" | "test" => "debug",
        "bench" => "release",
        p => p,
    };
    let deps = target.join(profile_dir).join("deps");
    let Some(rlib) = newest_rlib(&deps) else {
        return Err(format!(
            "no paraclick library built for profile {} in {}: run `cargo build --profile {} \
             -p paraclick` in {} first",
            a.profile,
            deps.display(),
            a.profile,
            source.display()
        ));
    };
    let name = crate_name(src);
    let dir = match &a.keep {
        Some(d) => PathBuf::from(d),
        None => target.join("paraclick-build").join(&name),
    };
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let main_rs = dir.join("src/main.rs");
    std::fs::write(&main_rs, program).map_err(|e| format!("{}: {e}", main_rs.display()))?;
    write_manifest(&dir, &name, &source, &manifest)?;
    let out = dir.join(&name);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = Command::new(&rustc);
    cmd.args([
        "--edition",
        "2021",
        "--crate-type",
        "bin",
        "--crate-name",
        &name,
    ])
    .arg(&main_rs)
    .arg("-o")
    .arg(&out)
    .args(rustc_flags(&settings))
    .arg("-L")
    .arg(format!("dependency={}", deps.display()))
    .arg("--extern")
    .arg(format!("paraclick={}", rlib.display()));
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        // As the paraclick binary (its build script): packed relocations.
        cmd.args(["-C", "link-arg=-Wl,-z,pack-relative-relocs"]);
    }
    let rustflags = std::env::var("RUSTFLAGS").unwrap_or_default();
    let script = (!a.no_code_order)
        .then(|| text_order_script(&source, &rustflags))
        .flatten();
    let script = match script {
        Some(s) => Some(program_order_script(&s, &dir, &name, classes)?),
        None => None,
    };
    if let Some(script) = script {
        // And the functions runs execute first in the text: without it
        // the code a run executes lies scattered over the program's text
        // and a run maps about 2 MB more of it (docs/PERFORMANCE.md).
        // Passed as separate linker arguments: a path may hold a comma.
        cmd.args(["-C", "link-arg=-Xlinker", "-C", "link-arg=-T"]);
        cmd.args(["-C", "link-arg=-Xlinker"]);
        cmd.arg("-C").arg(format!("link-arg={}", script.display()));
    }
    cmd.args(rustflags.split_whitespace());
    let status = cmd.status().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("{rustc}: not found (the build needs the Rust toolchain that built paraclick)")
        } else {
            format!("{rustc}: {e}")
        }
    })?;
    if !status.success() {
        return Err(format!(
            "compiling {} failed (with {}); the crate is in {}",
            main_rs.display(),
            rlib.display(),
            dir.display()
        ));
    }
    std::fs::copy(&out, &a.output).map_err(|e| format!("{}: {e}", a.output))?;
    Ok(PathBuf::from(&a.output))
}

/// The code order script the paraclick binary was linked with
/// (crates/paraclick/build.rs), in the source tree, if the program links
/// as paraclick did: LLD, unless `rustflags` choose another linker.
fn text_order_script(source: &Path, rustflags: &str) -> Option<PathBuf> {
    if env!("PARACLICK_TEXT_ORDER_LINKED") != "1" {
        return None;
    }
    if (rustflags.contains("linker") || rustflags.contains("fuse-ld"))
        && !(rustflags.contains("fuse-ld=lld") || rustflags.contains("linker-features=+lld"))
    {
        return None;
    }
    let script = source.join("crates/paraclick/text-order.ld");
    script.is_file().then_some(script)
}

/// The program's own code order, written to `dir`: paraclick's
/// (`base`, text-order.ld) with, first, the code only this program has,
/// which paraclick's runs cannot have been trained on: the functions its
/// crate `name` compiles (its element functions, `install`, the generic
/// instances it makes: about 100 kB, most of it run), what only built
/// programs run (`run_built`, the runtime's `compiled` entries: trained
/// on one built program, they sat just past the front once paraclick's
/// own run grew), and the constructors of the configuration's element classes (`classes`, Rust
/// types; a class the training runs did not use has its constructor
/// anywhere in the text). Without them a run of Click's fake IP router
/// executed code in 40 of the text's 64-KiB stretches, where 17 would
/// hold it.
fn program_order_script(
    base: &Path,
    dir: &Path,
    name: &str,
    classes: &[&str],
) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(base).map_err(|e| format!("{}: {e}", base.display()))?;
    let open = "  .text : {\n";
    let Some(at) = text.find(open).map(|i| i + open.len()) else {
        return Err(format!("{}: no `.text : {{` line", base.display()));
    };
    let mut rules = String::new();
    // The crate's object files, by name: rustc calls them
    // `NAME.NAME.HASH-cgu.N.rcgu.o` (the upstream crates' that thin LTO
    // writes are `NAME.CRATE-HASH...`). `name` is letters, digits and `_`.
    let _ = writeln!(
        rules,
        "    /* This program's own code, what only built programs run (their\n       \
         start-up, the compiled task runs' entry), then its element\n       \
         classes' constructors. */\n    \
         */{name}.{name}.*(.text .text.*)\n    \
         *(.text._ZN9paraclick9run_built* .text._ZN17paraclick_runtime8compiled*)"
    );
    for prefix in classes.iter().filter_map(|t| module_symbol_prefix(t)) {
        let _ = writeln!(
            rules,
            "    *(.text.{prefix}*make* .text.{prefix}*configure* \
             .text.unlikely.{prefix}*make* .text.unlikely.{prefix}*configure*)"
        );
    }
    let script = dir.join("code-order.ld");
    let out = format!("{}{rules}{}", &text[..at], &text[at..]);
    std::fs::write(&script, out).map_err(|e| format!("{}: {e}", script.display()))?;
    Ok(script)
}

/// The start of the (legacy-mangled) symbol of a function in the module
/// of Rust type `ty`: `a::b::T<U>` gives `_ZN1a1b`; `None` if `ty` has no
/// module or a part that is not a plain identifier.
fn module_symbol_prefix(ty: &str) -> Option<String> {
    let path = ty.split('<').next()?;
    let mut parts: Vec<&str> = path.split("::").collect();
    parts.pop()?;
    if parts.is_empty() {
        return None;
    }
    let mut s = String::from("_ZN");
    for p in parts {
        let plain = p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return None;
        }
        let _ = write!(s, "{}{p}", p.len());
    }
    Some(s)
}

/// The crate's manifest: path dependencies on the source tree, its own
/// workspace, the source's profiles; and the source's lock file.
fn write_manifest(
    dir: &Path,
    name: &str,
    source: &Path,
    manifest: &toml::Table,
) -> Result<(), String> {
    let mut m = format!(
        "# Written by `paraclick build` (it compiles the program with rustc\n\
         # against the source tree's built libraries; `cargo build` here\n\
         # builds them again, in this crate's own workspace).\n\
         [package]\nname = {name:?}\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nparaclick = {{ path = {:?} }}\n\n[workspace]\n\n",
        source.join("crates/paraclick").display().to_string()
    );
    if let Some(p) = manifest.get("profile") {
        let mut t = toml::Table::new();
        t.insert("profile".into(), p.clone());
        m.push_str(&toml::to_string(&t).map_err(|e| e.to_string())?);
    }
    let path = dir.join("Cargo.toml");
    std::fs::write(&path, m).map_err(|e| format!("{}: {e}", path.display()))?;
    let lock = source.join("Cargo.lock");
    if lock.is_file() {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .map_err(|e| format!("{}: {e}", lock.display()))?;
    }
    Ok(())
}

/// Whether a built program's compiled code fits the running
/// configuration: every direct call's connection present (the elements'
/// indices and types are checked when installing). `None`:
/// `PARACLICK_COMPILED=0`, the router stays dynamic (to compare the two
/// in one program). Called before the router is built: the second parse
/// of the configuration it takes then leaves memory the build reuses,
/// where after the build it added about 100 kB to the peak heap.
pub(crate) fn check_built(
    b: &Built,
    src: &Source,
    opts: &BuildOptions,
    popts: &ParseOptions,
) -> Option<Result<(), String>> {
    if std::env::var("PARACLICK_COMPILED").is_ok_and(|v| v == "0") {
        return None;
    }
    Some(
        parse_config_with(src, &opts.defines, popts)
            .map_err(|_| "the configuration no longer parses".to_string())
            .and_then(|g| check_calls(b, &g)),
    )
}

/// Installs a built program's compiled entries in `router` if `fits`
/// ([`check_built`]) and every element is of its index and type.
/// Otherwise (other defines changing a type, `--auto`'s rewrite) warns
/// and leaves the router dynamic.
pub(crate) fn install_built(b: &Built, fits: Result<(), String>, router: &mut Router) {
    if let Err(e) = fits.and_then(|()| (b.install)(router)) {
        eprintln!(
            "paraclick: warning: {e}: the compiled code does not fit this configuration; \
             every element runs dynamically"
        );
    }
}

/// Every connection the compiled code calls along is in `g`.
fn check_calls(b: &Built, g: &FlatGraph) -> Result<(), String> {
    for &(from, port, to) in b.calls {
        let found = g.connections.iter().any(|c| {
            c.from_port == port
                && c.to_port == 0
                && g.elements[c.from].name == from
                && g.elements[c.to].name == to
        });
        if !found {
            return Err(format!("no connection {from}[{port}] -> {to}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::module_symbol_prefix;

    #[test]
    fn a_class_module_gives_its_symbols_prefix() {
        assert_eq!(
            module_symbol_prefix("paraclick_elements::standard::tee::Tee").as_deref(),
            Some("_ZN18paraclick_elements8standard3tee")
        );
        assert_eq!(
            module_symbol_prefix("a::route_table::IPRouteLookup<a::route_table::Static>")
                .as_deref(),
            Some("_ZN1a11route_table")
        );
        assert_eq!(module_symbol_prefix("Tee"), None);
        assert_eq!(module_symbol_prefix("a::r#type::T"), None);
    }
}
