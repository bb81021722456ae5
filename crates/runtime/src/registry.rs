//! Element classes: what a class name means.

use crate::args::{ArgEnv, Args};
use crate::element::{Action, ActionNode, Element, ElementNode, Node};
use paraclick_lang::check::PortKind;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Creates an element, wrapped in its adapter, from its configuration.
pub type MakeFn = Arc<dyn Fn(&mut ConfigCx<'_>) -> Result<Box<dyn Node>, String> + Send + Sync>;

/// An element class: Click's port-count and processing strings, its
/// configure phase (lower first; AddressInfo configures before users of
/// its names), its documentation, and its constructor.
#[derive(Clone)]
pub struct ClassSpec {
    pub name: &'static str,
    pub port_count: &'static str,
    pub processing: &'static str,
    pub phase: i32,
    pub doc: &'static str,
    /// Whether the class's elements read (or write) packet data, beyond
    /// a packet's buffer header, length and annotations. The performance
    /// model charges a crossing queue's consumer the data lines of the
    /// packets it takes when an element on its side reads data. True
    /// unless the class says [`ClassSpec::metadata_only`].
    pub reads_data: bool,
    /// Why the class's elements drop packets: a drop names a reason by its
    /// index here ([`crate::Verdict::DropFor`]). Empty unless the class
    /// says [`ClassSpec::drop_reasons`](method@ClassSpec::drop_reasons).
    pub drop_reasons: &'static [&'static str],
    pub make: MakeFn,
}

impl ClassSpec {
    /// A per-packet element class: `make` configures an [`Action`], which
    /// the framework's batch adapter runs (and fuses into push chains).
    pub fn action<A: Action>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<A, String>,
    ) -> ClassSpec {
        Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|a| Box::new(ActionNode(a)) as Box<dyn Node>)
        })
    }

    /// An element class with its own push, pull or tasks.
    pub fn element<E: Element>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|e| Box::new(ElementNode(e)) as Box<dyn Node>)
        })
    }

    /// A class whose constructor picks the kind itself (wrap the result
    /// with [`crate::element::ActionNode`] or [`crate::element::ElementNode`]).
    pub fn node(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: impl Fn(&mut ConfigCx<'_>) -> Result<Box<dyn Node>, String> + Send + Sync + 'static,
    ) -> ClassSpec {
        ClassSpec {
            name,
            port_count,
            processing,
            phase: 0,
            doc: "",
            reads_data: true,
            drop_reasons: &[],
            make: Arc::new(make),
        }
    }

    pub fn phase(mut self, phase: i32) -> ClassSpec {
        self.phase = phase;
        self
    }

    pub fn doc(mut self, doc: &'static str) -> ClassSpec {
        self.doc = doc;
        self
    }

    /// The class's elements touch only packets' metadata (buffer header,
    /// length, annotations) or pass packets on untouched: a Counter, a
    /// queue, a scheduler, a Strip.
    pub fn metadata_only(mut self) -> ClassSpec {
        self.reads_data = false;
        self
    }
}

impl ClassSpec {
    /// The reasons the class's elements drop packets for, at most
    /// [`crate::drops::MAX_REASONS`] (VPP's per-node error strings): a
    /// drop names one by its index, `Verdict::DropFor(i)` (or
    /// [`crate::Cx::drop_packet_for`]), and each has its own count,
    /// printed by the `drop_reasons` handler. Short lowercase phrases:
    /// `&["bad IP version", "bad IP checksum"]`.
    pub fn drop_reasons(mut self, reasons: &'static [&'static str]) -> ClassSpec {
        self.drop_reasons = reasons;
        self
    }
}

/// The set of known element classes and requirements.
#[derive(Clone, Default)]
pub struct Registry {
    classes: BTreeMap<&'static str, ClassSpec>,
    aliases: BTreeMap<&'static str, &'static str>,
    requirements: Vec<&'static str>,
}

impl Registry {
    pub fn new() -> Registry {
        let mut r = Registry::default();
        for req in [
            "paraclick",
            "userlevel",
            "smpclick",
            "ip",
            "standard",
            "batch",
        ] {
            r.requirements.push(req);
        }
        r
    }

    /// Adds a class (replacing one of the same name).
    pub fn register(&mut self, spec: ClassSpec) {
        self.classes.insert(spec.name, spec);
    }

    /// `alias` names the same class as `target` (e.g. LookupIPRoute).
    pub fn alias(&mut self, alias: &'static str, target: &'static str) {
        self.aliases.insert(alias, target);
    }

    /// A package name `require(package NAME)` accepts.
    pub fn provide(&mut self, requirement: &'static str) {
        self.requirements.push(requirement);
    }

    pub fn get(&self, name: &str) -> Option<&ClassSpec> {
        let name = self.aliases.get(name).copied().unwrap_or(name);
        self.classes.get(name)
    }

    /// Sets the documentation of a registered class.
    pub fn set_doc(&mut self, name: &str, doc: &'static str) {
        if let Some(c) = self.classes.get_mut(name) {
            c.doc = doc;
        }
    }

    /// The package names `require` accepts.
    pub fn packages(&self) -> &[&'static str] {
        &self.requirements
    }

    pub fn provides(&self, req: &str) -> bool {
        self.requirements.contains(&req)
    }

    /// All class names, aliases included, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .classes
            .keys()
            .copied()
            .chain(self.aliases.keys().copied())
            .collect();
        v.sort_unstable();
        v
    }

    /// The documentation of a class (its own source file's header).
    pub fn doc(&self, name: &str) -> Option<&'static str> {
        self.get(name).map(|c| c.doc)
    }
}

/// What `configure` sees: the element's name, class, configuration string,
/// its connected port counts and kinds, the thread count, and the named
/// addresses of AddressInfo elements.
pub struct ConfigCx<'a> {
    pub name: &'a str,
    pub class: &'a str,
    pub config: &'a str,
    pub ninputs: usize,
    pub noutputs: usize,
    pub input_kinds: &'a [PortKind],
    pub output_kinds: &'a [PortKind],
    pub nthreads: usize,
    pub env: &'a mut ArgEnv,
}

impl ConfigCx<'_> {
    /// Prints a configuration warning about this element on standard
    /// error (`NAME :: CLASS: warning: MESSAGE`), unless warnings are off
    /// (`-w`, [`set_warnings`]).
    pub fn warn(&self, message: &str) {
        if warnings_enabled() {
            // Warnings quote configuration text: no terminal controls.
            let esc = paraclick_lang::span::escape;
            eprintln!(
                "{} :: {}: warning: {}",
                esc(self.name),
                esc(self.class),
                esc(message)
            );
        }
    }

    /// The configuration, split into arguments.
    pub fn args(&self) -> Args<'_> {
        Args::new(self.config, self.env)
    }

    pub fn input_is_pull(&self, port: usize) -> bool {
        self.input_kinds.get(port) == Some(&PortKind::Pull)
    }

    pub fn output_is_push(&self, port: usize) -> bool {
        self.output_kinds.get(port) == Some(&PortKind::Push)
    }

    /// Whether the configuration may read the file `path` (a trace to
    /// replay, say): the path to open, or the error to return. An element
    /// that reads a file named in its configuration calls this before it
    /// opens it: `cx.allowed_file(&filename)?;`.
    ///
    /// The operator's configuration reads any file; one written through a
    /// control socket (`hotconfig`) only files under the directories the
    /// operator allows (see [`paraclick_lang::files`]), and not standard
    /// input (`-`).
    pub fn allowed_file(&self, path: &str) -> Result<std::path::PathBuf, String> {
        allowed_file(&self.env.files, path)
    }
}

pub(crate) fn allowed_file(
    policy: &paraclick_lang::FilePolicy,
    path: &str,
) -> Result<std::path::PathBuf, String> {
    if path == "-" && !policy.is_any() {
        return Err(
            "-: a configuration from a control socket may not read standard input".to_string(),
        );
    }
    policy.allowed(std::path::Path::new(path))
}

/// Whether [`ConfigCx::warn`] prints (on by default; Click's `-w` turns
/// warnings off).
static WARNINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether configuration warnings are printed.
pub fn warnings_enabled() -> bool {
    WARNINGS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Turns configuration warnings on or off for the whole process.
pub fn set_warnings(on: bool) {
    WARNINGS.store(on, std::sync::atomic::Ordering::Relaxed);
}
