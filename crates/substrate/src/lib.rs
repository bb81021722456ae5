//! Virtual routers on one substrate: slices.
//!
//! A substrate file ([`spec`]) names the physical interfaces and the
//! slices; each slice is an ordinary Click configuration whose device
//! names are its metalinks, given dedicated cores (or a share of the
//! substrate's own) and a provisioned rate per metalink. [`compose`]
//! makes them one router graph, every slice's elements under its name
//! (`s1/c`), so the runtime's machinery serves slices unchanged: a
//! change of slice is a hot swap of the whole graph in which every other
//! slice's elements take their own state back (no packet of theirs is
//! lost), handlers are read by the slice's prefix (`s1/c.count`), the
//! metalinks' token buckets and the interfaces' deficit round robin are
//! the ordinary `BandwidthRatedUnqueue` and `DRRSched`, and each slice
//! is a fault domain of the runtime ([`paraclick_runtime::fault`]): an
//! element of it that panics stops it alone.
//!
//! [`Substrate`] runs one and answers the control socket's `slices`,
//! `slice.add`, `slice.remove` and `NAME.hotconfig` (see
//! docs/SLICES.md).

#![forbid(unsafe_code)]

pub mod compose;
pub mod spec;

use paraclick_lang::{render, Diagnostic, ParseOptions, SourceSet};
use paraclick_runtime::control::{Backend, CsError};
use paraclick_runtime::hot::Hot;
use paraclick_runtime::{BuildOptions, Registry, Router};
use spec::{show_rate, ConfigFiles, Spec};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

pub use spec::{parse, SliceSpec};

/// The most errors a refusal lists.
const MAX_REPLY_ERRORS: usize = 50;

struct State {
    spec: Spec,
    /// The substrate file's text (for messages about it).
    text: String,
    /// Each slice's dedicated worker threads.
    threads: BTreeMap<String, Vec<usize>>,
    /// Each metalink's (`SLICE/METALINK`) transmitted bytes when the
    /// current router started (counters carry over swaps; the router's
    /// clock starts again).
    tx_base: BTreeMap<String, u64>,
}

/// A running substrate: the router of its slices, and what changes them.
pub struct Substrate {
    hot: Arc<Hot>,
    state: Mutex<State>,
    /// Whether the control socket may change slices (`-R`).
    allow_changes: bool,
    me: Weak<Substrate>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Gives each slice with cores its threads, keeping those already given
/// (`old`), new ones taking the lowest free threads from 1 (thread 0 is
/// the substrate's own).
fn allocate(spec: &Spec, old: &BTreeMap<String, Vec<usize>>) -> BTreeMap<String, Vec<usize>> {
    let mut out = BTreeMap::new();
    let mut taken = vec![false; spec.cores];
    if let Some(t) = taken.first_mut() {
        *t = true;
    }
    for s in &spec.slices {
        if let Some(ts) = old.get(&s.name) {
            if ts.len() == s.cores && ts.iter().all(|&t| t < spec.cores && !taken[t]) {
                for &t in ts {
                    taken[t] = true;
                }
                out.insert(s.name.clone(), ts.clone());
            }
        }
    }
    for s in &spec.slices {
        if s.cores == 0 || out.contains_key(&s.name) {
            continue;
        }
        let mut ts = Vec::new();
        for (t, used) in taken.iter_mut().enumerate() {
            if ts.len() == s.cores {
                break;
            }
            if !*used {
                *used = true;
                ts.push(t);
            }
        }
        out.insert(s.name.clone(), ts);
    }
    out
}

fn rendered(d: &[Diagnostic], sources: &SourceSet) -> String {
    let mut d = d.to_vec();
    if d.len() > MAX_REPLY_ERRORS {
        let more = d.len() - MAX_REPLY_ERRORS;
        d.truncate(MAX_REPLY_ERRORS);
        d.push(Diagnostic::error(
            None,
            format!("{more} more errors not shown"),
        ));
    }
    render(&d, sources).trim_end().to_string()
}

/// The build options of a substrate's router: one worker per core, each
/// slice a fault domain.
fn substrate_options(base: &BuildOptions, spec: &Spec) -> BuildOptions {
    BuildOptions {
        threads: spec.cores,
        fault_domains: spec.slices.iter().map(|s| s.name.clone()).collect(),
        cpu_shares: spec::cpu_shares(spec),
        ..base.clone()
    }
}

/// Builds the router of `spec` (not yet running); errors rendered.
pub fn build_router(
    spec: &Spec,
    text: &str,
    reg: &Registry,
    base: &BuildOptions,
) -> Result<(Router, BTreeMap<String, Vec<usize>>), String> {
    let threads = allocate(spec, &BTreeMap::new());
    let opts = substrate_options(base, spec);
    let c = compose::compose(spec, text, &threads, &opts.parse_options())
        .map_err(|(d, s)| rendered(&d, &s))?;
    let r = Router::from_graph(c.graph, &c.summary, reg, &opts)
        .map_err(|d| rendered(&d, &c.sources))?;
    Ok((r, threads))
}

impl Substrate {
    /// Builds a substrate from its file's text. `dir` is where its
    /// slices' `config` files are looked for; `base` gives the options
    /// (simulated time, ...; the threads are the file's cores).
    /// `allow_changes`: the control socket may add, remove and change
    /// slices (`-R`).
    pub fn build(
        file: &str,
        text: &str,
        dir: &std::path::Path,
        reg: Arc<Registry>,
        base: &BuildOptions,
        allow_changes: bool,
    ) -> Result<Arc<Substrate>, String> {
        let spec = spec::parse(file, text, &ConfigFiles::Dir(dir.to_path_buf()))
            .map_err(|e| e.join("\n"))?;
        // The operator's file may read any file; a change sent through the
        // control socket reads as `base.files` allows.
        let first = BuildOptions {
            files: paraclick_lang::FilePolicy::Any,
            ..base.clone()
        };
        let (router, threads) = build_router(&spec, text, &reg, &first)?;
        // Slices are changed through this substrate, never by a whole
        // `hotconfig`, which would replace the substrate itself.
        let hot = Hot::new(router, reg, substrate_options(base, &spec), false);
        let tx_base = BTreeMap::new();
        let s = Arc::new_cyclic(|me| Substrate {
            hot,
            state: Mutex::new(State {
                spec,
                text: text.to_string(),
                threads,
                tx_base,
            }),
            allow_changes,
            me: me.clone(),
        });
        Ok(s)
    }

    /// The hot-swappable router (run it with [`Hot::run`]).
    pub fn hot(&self) -> &Arc<Hot> {
        &self.hot
    }

    /// The router running now.
    pub fn router(&self) -> Arc<Router> {
        self.hot.current()
    }

    /// The slices' names.
    pub fn slices(&self) -> Vec<String> {
        lock(&self.state)
            .spec
            .slices
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// Swaps in the router of `spec`: refused, everything left running,
    /// if it is over-provisioned or does not build.
    fn change(&self, st: &mut State, spec: Spec) -> Result<(), CsError> {
        let errs = spec::provisioning(&spec);
        if !errs.is_empty() {
            return Err(CsError::new(520, errs.join("\n")));
        }
        let threads = allocate(&spec, &st.threads);
        let opts = substrate_options(self.hot.build_options(), &spec);
        let c = compose::compose(&spec, &st.text, &threads, &opts.parse_options())
            .map_err(|(d, s)| CsError::new(520, rendered(&d, &s)))?;
        // The transmitted bytes so far, to measure rates from the swap.
        let old = self.router();
        self.hot
            .hotconfig_graph(c.graph, &c.summary, &c.sources, &opts)?;
        let mut base = BTreeMap::new();
        for s in &spec.slices {
            for m in &s.metalinks {
                base.insert(
                    format!("{}/{}", s.name, m.name),
                    tx_bytes(&old, &s.name, &m.name),
                );
            }
        }
        st.tx_base = base;
        st.threads = threads;
        st.spec = spec;
        Ok(())
    }

    fn allowed(&self) -> Result<(), CsError> {
        if self.allow_changes {
            Ok(())
        } else {
            Err(CsError::new(
                530,
                "slice changes not enabled (run the substrate with -R)",
            ))
        }
    }

    /// Adds the slices of `text` (TOML: `[slice.NAME]` tables, their
    /// configurations inline).
    pub fn add_slices(&self, text: &str) -> Result<(), CsError> {
        self.allowed()?;
        let mut st = lock(&self.state);
        let new = spec::parse_slices("slice.add", text, &st.spec)
            .map_err(|e| CsError::new(520, e.join("\n")))?;
        let mut spec = st.spec.clone();
        for s in new {
            if spec.slice(&s.name).is_some() {
                return Err(CsError::new(
                    520,
                    format!(
                        "slice.add: slice {} exists already (remove it, or write {}.hotconfig)",
                        s.name, s.name
                    ),
                ));
            }
            spec.slices.push(s);
        }
        self.change(&mut st, spec)
    }

    /// Removes slice `name`.
    pub fn remove_slice(&self, name: &str) -> Result<(), CsError> {
        self.allowed()?;
        let name = name.trim();
        let mut st = lock(&self.state);
        let mut spec = st.spec.clone();
        let before = spec.slices.len();
        spec.slices.retain(|s| s.name != name);
        if spec.slices.len() == before {
            return Err(CsError::new(
                520,
                format!("slice.remove: no slice '{name}'"),
            ));
        }
        self.change(&mut st, spec)
    }

    /// Replaces slice `name`'s configuration with `text`.
    pub fn reconfigure_slice(&self, name: &str, text: &str) -> Result<(), CsError> {
        self.allowed()?;
        if text.len() > spec::MAX_CONFIG_BYTES {
            return Err(CsError::new(
                521,
                format!(
                    "{name}.hotconfig: {} bytes; at most {}",
                    text.len(),
                    spec::MAX_CONFIG_BYTES
                ),
            ));
        }
        let mut st = lock(&self.state);
        let mut spec = st.spec.clone();
        let Some(s) = spec.slices.iter_mut().find(|s| s.name == name) else {
            return Err(CsError::new(510, format!("no slice '{name}'")));
        };
        s.source = paraclick_lang::Source {
            name: format!("{name}.hotconfig"),
            text: text.to_string(),
        };
        self.change(&mut st, spec)
    }

    /// Per-slice figures: one line per slice, then one per metalink, of
    /// `key value` pairs (see docs/SLICES.md).
    pub fn report(&self) -> String {
        let st = lock(&self.state);
        let r = self.router();
        let secs = r.now_ns() as f64 / 1e9;
        let costs = r.cost_data();
        let drops = r.drops();
        let faults = r.faults();
        let charged = r.domain_cycles();
        let shares = spec::cpu_shares(&st.spec);
        let mut out = String::new();
        for s in &st.spec.slices {
            let prefix = format!("{}/", s.name);
            let read = |h: &str| -> u64 {
                r.read_handler(h)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            let (mut rxp, mut rxb, mut txp, mut txb) = (0, 0, 0, 0);
            for m in &s.metalinks {
                let p = format!("{}/@{}", s.name, m.name);
                rxp += read(&format!("{p}/rx.count"));
                rxb += read(&format!("{p}/rx.byte_count"));
                txp += read(&format!("{p}/tx.count"));
                txb += read(&format!("{p}/tx.byte_count"));
            }
            let d: u64 = drops
                .iter()
                .filter(|(n, _)| n.starts_with(&prefix))
                .map(|(_, d)| d)
                .sum();
            let cycles: u64 = costs
                .tasks
                .iter()
                .filter(|t| t.element.starts_with(&prefix))
                .map(|t| t.cycles)
                .sum();
            let cpu = if secs > 0.0 && costs.hz > 0.0 {
                cycles as f64 / (costs.hz * secs)
            } else {
                0.0
            };
            let state = match faults.iter().find(|f| f.domain == s.name) {
                Some(f) => format!(
                    "failed (a panic in the task of {}: {})",
                    f.element,
                    f.message.replace('\n', " ")
                ),
                None => "running".to_string(),
            };
            let threads = st
                .threads
                .get(&s.name)
                .map(|t| {
                    t.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_else(|| "0 (shared)".into());
            let share = match shares.iter().find(|(n, _)| *n == s.name) {
                Some((_, sh)) => format!(
                    " cpu_share {sh:.3} cpu_cycles {}",
                    charged
                        .iter()
                        .find(|(n, _)| *n == s.name)
                        .map_or(0, |(_, c)| *c)
                ),
                None => String::new(),
            };
            out.push_str(&format!(
                "slice {} state {state}\n  cores {} threads {threads} cpu_used {cpu:.3} sharing {}{share}\n  rx_packets {rxp} rx_bytes {rxb} tx_packets {txp} tx_bytes {txb} drops {d}\n",
                s.name,
                s.cores,
                if s.strict { "strict" } else { "work-conserving" },
            ));
            // Its drops by reason, over all its elements (largest first).
            let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
            for (n, _) in drops.iter().filter(|(n, _)| n.starts_with(&prefix)) {
                for (reason, k) in r.drop_reasons(n).unwrap_or_default() {
                    *reasons.entry(reason).or_default() += k;
                }
            }
            if !reasons.is_empty() {
                let mut v: Vec<(&str, u64)> = reasons.into_iter().collect();
                v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                let v: Vec<String> = v.iter().map(|(r, k)| format!("{r} {k}")).collect();
                out.push_str(&format!("  drops_by_reason: {}\n", v.join("; ")));
            }
            for m in &s.metalinks {
                let p = format!("{}/@{}", s.name, m.name);
                let base = st
                    .tx_base
                    .get(&format!("{}/{}", s.name, m.name))
                    .copied()
                    .unwrap_or(0);
                let b = read(&format!("{p}/tx.byte_count")).saturating_sub(base);
                let rate = if secs > 0.0 { b as f64 / secs } else { 0.0 };
                out.push_str(&format!(
                    "  metalink {} on {} {} rate {} provisioned {} ({:.1}%) queue_drops {}\n",
                    m.name,
                    m.interface,
                    spec::describe_tag(&m.tag),
                    show_rate(rate),
                    show_rate(m.rate),
                    100.0 * rate / m.rate,
                    drops
                        .iter()
                        .filter(|(n, _)| n.starts_with(&format!("{p}/")))
                        .map(|(_, d)| d)
                        .sum::<u64>()
                ));
            }
        }
        out
    }

    /// The control plane's view: the router's handlers (read by a
    /// slice's prefix, `s1/c.count`), plus `slices` (read), `slice.add`,
    /// `slice.remove` and `NAME.hotconfig` (write); a whole `hotconfig`
    /// is refused. (It does not keep the substrate alive.)
    pub fn backend(&self) -> Arc<dyn Backend> {
        Arc::new(SubstrateBackend {
            sub: self.me.clone(),
            inner: self.hot.backend(),
        })
    }
}

/// Metalink `m` of slice `s`: the bytes it transmitted on `r`.
fn tx_bytes(r: &Router, s: &str, m: &str) -> u64 {
    r.read_handler(&format!("{s}/@{m}/tx.byte_count"))
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

struct SubstrateBackend {
    sub: Weak<Substrate>,
    inner: Arc<dyn Backend>,
}

impl SubstrateBackend {
    fn sub(&self) -> Result<Arc<Substrate>, CsError> {
        self.sub
            .upgrade()
            .ok_or_else(|| CsError::new(540, "No router installed"))
    }

    /// `NAME.hotconfig` for a slice NAME.
    fn slice_hotconfig<'a>(&self, sub: &Substrate, h: &'a str) -> Option<&'a str> {
        let name = h.strip_suffix(".hotconfig")?;
        lock(&sub.state).spec.slice(name).map(|_| name)
    }
}

const WRITES: &[&str] = &["slice.add", "slice.remove"];

impl Backend for SubstrateBackend {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError> {
        let sub = self.sub()?;
        if h == "slices" {
            return Ok(sub.report());
        }
        if WRITES.contains(&h) || h == "hotconfig" || self.slice_hotconfig(&sub, h).is_some() {
            return Err(CsError::new(530, format!("Handler '{h}' is write-only")));
        }
        self.inner.read(h, param)
    }

    fn write(&self, h: &str, value: &str) -> Result<(), CsError> {
        let sub = self.sub()?;
        match h {
            "slice.add" => sub.add_slices(value),
            "slice.remove" => sub.remove_slice(value),
            "slices" => Err(CsError::new(530, "Handler 'slices' is read-only")),
            "hotconfig" => Err(CsError::new(
                530,
                "hotconfig: a substrate changes slice by slice (slice.add, slice.remove, NAME.hotconfig)",
            )),
            _ => match self.slice_hotconfig(&sub, h) {
                Some(name) => sub.reconfigure_slice(name, value),
                None => self.inner.write(h, value),
            },
        }
    }

    fn check(&self, h: &str, write: bool) -> Result<(), CsError> {
        let sub = self.sub()?;
        let slice_h = self.slice_hotconfig(&sub, h).is_some();
        match (h, write) {
            ("slices", false) => Ok(()),
            ("slices", true) => Err(CsError::new(530, "Handler 'slices' is read-only")),
            (_, true) if WRITES.contains(&h) || slice_h => sub.allowed(),
            (_, false) if WRITES.contains(&h) || slice_h => {
                Err(CsError::new(530, format!("Handler '{h}' is write-only")))
            }
            _ => self.inner.check(h, write),
        }
    }

    fn stop(&self) {
        self.inner.stop();
    }

    fn llrpc(&self, e: &str, cmd: u32, data: &[u8]) -> Result<Vec<u8>, CsError> {
        self.inner.llrpc(e, cmd, data)
    }
}

/// The options of the language front end for a slice's configuration
/// sent through the control socket: the substrate's.
pub fn parse_options(opts: &BuildOptions) -> ParseOptions {
    opts.parse_options()
}
