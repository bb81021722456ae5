//! The Click configuration language for paraclick.
//!
//! [`parse_config`] takes a configuration text through lexing, parsing,
//! compound (`elementclass`) expansion and flattening, and returns a
//! [`FlatGraph`]: named elements with their class and configuration string,
//! and the connections between them, every one with its source span.
//! [`check::check_graph`] then checks the graph against the element classes'
//! port counts and processing codes, as Click does. [`args`] holds Click's
//! configuration-argument utilities, [`span`] the diagnostics and their
//! rendering, [`dot`] a Graphviz view of a graph, [`mod@print`] a graph
//! written back as text (Click's flattened form or a plain one), and
//! [`landmarks`] where a file's top-level connections are written (for
//! tools that change a user's file in place).
//!
//! This crate knows element *names*, not their behaviour.
//!
//! ```
//! use paraclick_lang::{parse_config, span::Source};
//!
//! let src = Source::new("<expr>", "src :: InfiniteSource(LIMIT 5) -> Counter -> Discard;");
//! let g = parse_config(&src, &[]).unwrap();
//! assert_eq!(g.elements[1].name, "Counter@2");
//! assert_eq!(g.connections.len(), 2);
//! ```

#![forbid(unsafe_code)]

pub mod args;
pub mod check;
pub mod dot;
mod expand;
pub mod files;
pub mod landmarks;
mod lexer;
mod library;
mod params;
mod parser;
pub mod print;
mod resolve;
pub mod span;
pub mod xform;

use std::collections::{HashMap, HashSet};

pub use check::{check_graph, CheckedGraph, ClassSpec, PortKind};
pub use expand::{DEFAULT_MAX_ELEMENTS, MAX_EXPANSION_DEPTH};
pub use files::FilePolicy;
pub use library::ParseOptions;
pub use print::{print_click, print_click_listed, print_flat, same_graph};
pub use span::{render, render_click, router_not_initialized, Diagnostic, Source, SourceSet, Span};

/// A router configuration with compounds expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlatGraph {
    pub elements: Vec<FlatElement>,
    pub connections: Vec<FlatConnection>,
    pub requirements: Vec<Requirement>,
}

impl FlatGraph {
    /// Index of the element called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.elements.iter().position(|e| e.name == name)
    }
}

/// One element of a [`FlatGraph`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatElement {
    /// Full name: `compound/inner` inside compounds; `Class@N` if anonymous.
    pub name: String,
    pub class: String,
    /// The raw configuration string between the parentheses, with
    /// `$parameters` substituted; `""` if none.
    pub config: String,
    /// The element's class name and configuration in the source.
    pub span: Span,
    pub anonymous: bool,
}

/// A connection from output `from_port` of element `from` to input `to_port`
/// of element `to` (indices into [`FlatGraph::elements`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatConnection {
    pub from: usize,
    pub from_port: usize,
    pub to: usize,
    pub to_port: usize,
    pub span: Span,
}

/// One `require(...)` argument: `require(package foo)` gives
/// `["package", "foo"]`, `require(foo)` gives `["foo"]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub words: Vec<String>,
    pub span: Span,
}

/// Lexes, parses, expands compounds and flattens a configuration.
///
/// `defines` are command-line `NAME=value` settings; they override the
/// configuration's top-level `define($NAME ...)` (a leading `$` on NAME is
/// optional). Every error found is returned, in source order.
pub fn parse_config(
    src: &Source,
    defines: &[(String, String)],
) -> Result<FlatGraph, Vec<Diagnostic>> {
    parse_config_with(src, defines, &ParseOptions::default())
}

/// [`parse_config`] with options: where `require(library FILE)` looks
/// (the configuration's own directory, when `src.name` is a file, comes
/// first), which files it may read, and the bound on the elements and
/// connections compound expansion may make. Expansion stops with a
/// located error at a compound used [`MAX_EXPANSION_DEPTH`] levels deep,
/// and at the element or compound instance beyond `opts.max_elements`,
/// before anything more is allocated.
pub fn parse_config_with(
    src: &Source,
    defines: &[(String, String)],
    opts: &ParseOptions,
) -> Result<FlatGraph, Vec<Diagnostic>> {
    parse_inner(src, defines, opts).0
}

/// A compound class defined at the top level of a configuration
/// ([`top_level_classes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopClass {
    pub name: String,
    /// Input and output ports of its first definition.
    pub inputs: usize,
    pub outputs: usize,
    /// How many definitions it has (more than one: overloaded).
    pub definitions: usize,
    /// Parameters of its first definition (`__REST__` counted).
    pub parameters: usize,
    /// Where it is defined.
    pub span: Span,
}

/// The compound classes `elementclass` defines at the top level of a
/// configuration, in the order defined (a name defined twice appears
/// twice), after the same checks as [`parse_config_with`].
pub fn top_level_classes(
    src: &Source,
    defines: &[(String, String)],
    opts: &ParseOptions,
) -> Result<Vec<TopClass>, Vec<Diagnostic>> {
    let (r, classes) = parse_inner(src, defines, opts);
    r.map(|_| classes)
}

fn parse_inner(
    src: &Source,
    defines: &[(String, String)],
    opts: &ParseOptions,
) -> (Result<FlatGraph, Vec<Diagnostic>>, Vec<TopClass>) {
    let mut idx = span::LineIndex::new(&src.name, &src.text);
    let mut errs = Vec::new();
    let stmts = library::parse_file(&idx, 0, &src.name, &src.text, &mut errs);
    let dir = std::path::Path::new(&src.name);
    let dir = if dir.is_file() { dir.parent() } else { None };
    let mut seen = HashSet::new();
    if let Ok(p) = std::path::Path::new(&src.name).canonicalize() {
        seen.insert(p);
    }
    let stmts = library::include(stmts, dir, &mut idx, opts, &mut seen, &mut errs, 0);

    let cmdline: HashMap<String, String> = defines
        .iter()
        .map(|(k, v)| (k.trim_start_matches('$').to_string(), v.clone()))
        .collect();
    let names: HashSet<String> = cmdline.keys().cloned().collect();
    let mut r = resolve::Resolver::new(&idx, names);
    r.max_conns = opts
        .max_elements
        .saturating_mul(expand::CONNECTIONS_PER_ELEMENT);
    let top = r.resolve_top(&stmts);
    errs.append(&mut r.errs);
    let requirements = std::mem::take(&mut r.requirements);
    let classes = top_classes(&r.top_classes);

    let mut x = expand::Expander::new(&cmdline).with_max_elements(opts.max_elements);
    let connections = x.expand_top(&top);
    errs.append(&mut x.errs);

    if errs.is_empty() {
        (
            Ok(FlatGraph {
                elements: x.elements,
                connections,
                requirements,
            }),
            classes,
        )
    } else {
        errs.sort_by_key(|d| d.span.as_ref().map_or(usize::MAX, |s| s.start));
        (Err(errs), classes)
    }
}

fn top_classes(defs: &[(String, resolve::ClassBinding)]) -> Vec<TopClass> {
    defs.iter()
        .filter_map(|(name, b)| match b {
            resolve::ClassBinding::Compound(c) => {
                let (inputs, outputs, parameters) = c
                    .alts
                    .iter()
                    .find_map(|a| match a {
                        resolve::Alt::Body(b) => Some((
                            b.ninputs,
                            b.noutputs,
                            b.formals.len() + usize::from(b.rest.is_some()),
                        )),
                        resolve::Alt::Primitive(_) => None,
                    })
                    .unwrap_or((0, 0, 0));
                Some(TopClass {
                    name: name.clone(),
                    inputs,
                    outputs,
                    definitions: c.alts.len(),
                    parameters,
                    span: c.span.clone(),
                })
            }
            resolve::ClassBinding::Primitive(_) => None,
        })
        .collect()
}
