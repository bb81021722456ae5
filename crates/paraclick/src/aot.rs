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
    ty: &'static str,
    /// Per output port: the compiled element it calls directly.
    calls: Vec<Option<usize>>,
}

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
    let compiled = match plan(&router, &graph, &reg) {
        Ok(c) => c,
        Err(d) => return report_errors(&src, &d),
    };
    let program = emit(&src, &defines, &compiled);
    match write_and_compile(a, &src, &program) {
        Ok(bin) => {
            eprintln!(
                "paraclick build: {} of {} elements compiled; wrote {}",
                compiled.len(),
                graph.elements.len(),
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
) -> Result<Vec<Compiled>, Vec<paraclick_lang::Diagnostic>> {
    let checked = Router::check(graph, reg)?;
    let mut at: Vec<Option<usize>> = vec![None; graph.elements.len()];
    let mut out: Vec<Compiled> = Vec::new();
    for (i, e) in graph.elements.iter().enumerate() {
        let push_in0 = checked.inputs[i].first() == Some(&PortKind::Push);
        let ty = router.rust_type_of(&e.name).filter(|t| nameable(t));
        if let (true, Some(true), Some(ty)) = (push_in0, router.element_fuses(&e.name), ty) {
            at[i] = Some(out.len());
            out.push(Compiled {
                index: i,
                name: e.name.clone(),
                ty,
                calls: vec![None; checked.outputs[i].len()],
            });
        }
    }
    for c in &graph.connections {
        let (Some(from), Some(to)) = (at[c.from], at[c.to]) else {
            continue;
        };
        let push = checked.outputs[c.from].get(c.from_port) == Some(&PortKind::Push);
        if push && c.to_port == 0 {
            let to_index = out[to].index;
            if let Some(slot) = out[from].calls.get_mut(c.from_port) {
                *slot = Some(to_index);
            }
        }
    }
    Ok(out)
}

/// The program's source.
fn emit(src: &Source, defines: &[(String, String)], compiled: &[Compiled]) -> String {
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
         use paraclick_runtime::{{CompiledPush, Cx, ElemRef, Router}};\n\
         use std::sync::Arc;\n",
        src.name
    );
    let _ = writeln!(w, "const CONF: &str = {:?};\n", src.text);
    let _ = writeln!(w, "/// The compiled elements, typed.\nstruct B {{");
    for c in compiled {
        let _ = writeln!(
            w,
            "    /// {}\n    e{}: ElemRef<{}>,",
            c.name, c.index, c.ty
        );
    }
    let _ = writeln!(w, "}}\n");
    for c in compiled {
        let i = c.index;
        let _ = writeln!(
            w,
            "/// {name}\n#[inline]\nfn e{i}(b: &B, cx: &mut Cx<'_>, mut p: Packet) {{\n    \
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
        let _ = writeln!(
            w,
            "struct X{i}(Arc<B>);\n\n\
             impl CompiledPush for X{i} {{\n    \
             fn push_packet(&self, cx: &mut Cx<'_>, p: Packet) {{\n        \
             e{i}(&self.0, cx, p)\n    }}\n}}\n"
        );
    }
    let _ = writeln!(
        w,
        "fn install(r: &mut Router) -> Result<usize, String> {{\n    let b = Arc::new(B {{"
    );
    for c in compiled {
        let _ = writeln!(
            w,
            "        e{}: bind(r, {:?}, {})?,",
            c.index, c.name, c.index
        );
    }
    let _ = writeln!(w, "    }});");
    for c in compiled {
        let _ = writeln!(
            w,
            "    r.install_compiled({:?}, Box::new(X{}(b.clone())))?;",
            c.name, c.index
        );
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
    for c in compiled {
        for (port, to) in c.calls.iter().enumerate() {
            if let Some(to) = to {
                let to_name = &compiled.iter().find(|d| d.index == *to).map(|d| &d.name);
                if let Some(n) = to_name {
                    let _ = writeln!(w, "            ({:?}, {port}, {n:?}),", c.name);
                }
            }
        }
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
fn write_and_compile(a: &BuildArgs, src: &Source, program: &str) -> Result<PathBuf, String> {
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

/// Installs a built program's compiled entries in `router`, if the
/// running configuration is what was compiled: every direct call's
/// connection present, every element of its index and type. Otherwise
/// (other defines changing a type, `--auto`'s rewrite) warns and leaves
/// the router dynamic. `PARACLICK_COMPILED=0` leaves it dynamic too (to
/// compare the two in one program).
pub(crate) fn install_built(
    b: &Built,
    router: &mut Router,
    src: &Source,
    opts: &BuildOptions,
    popts: &ParseOptions,
) {
    if std::env::var("PARACLICK_COMPILED").is_ok_and(|v| v == "0") {
        return;
    }
    let r = parse_config_with(src, &opts.defines, popts)
        .map_err(|_| "the configuration no longer parses".to_string())
        .and_then(|g| check_calls(b, &g))
        .and_then(|()| (b.install)(router));
    if let Err(e) = r {
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
