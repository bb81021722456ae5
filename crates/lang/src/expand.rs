//! Compound expansion and flattening.
//!
//! Every compound instance becomes its body's elements, named
//! `instance/inner`. The instance's `input` and `output` become *tunnels*
//! (Click's connection tunnels): a connection into input port `i` of the
//! instance goes into tunnel port `i`, and leaves it along every inside
//! connection from `input [i]`. After expansion, connections are followed
//! through tunnels from every real source to every real destination, so the
//! flat graph has no pseudo-elements.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::args::{split_args, split_keyword};
use crate::params::substitute_capped;
use crate::resolve::{Alt, AltBody, ClassBinding, CompoundClass, IrElem, IrKind, ScopeIr};
use crate::span::{Diagnostic, Span};
use crate::{FlatConnection, FlatElement};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Node {
    Real(usize),
    Tunnel(usize),
}

struct Edge {
    from: Node,
    from_port: usize,
    to: Node,
    to_port: usize,
    span: Span,
}

/// Parameter values of one scope instance, chained to the enclosing scope.
pub(crate) struct Frame {
    scope_id: usize,
    vars: HashMap<String, String>,
    parent: Option<Rc<Frame>>,
}

impl Frame {
    fn lookup(&self, name: &str) -> Option<String> {
        let mut f = Some(self);
        while let Some(fr) = f {
            if let Some(v) = fr.vars.get(name) {
                return Some(v.clone());
            }
            f = fr.parent.as_deref();
        }
        None
    }

    /// The nearest frame (this or an ancestor) of scope `id`.
    fn find(self: &Rc<Self>, id: usize) -> Rc<Frame> {
        let mut f = self.clone();
        loop {
            if f.scope_id == id {
                return f;
            }
            match &f.parent {
                Some(p) => f = p.clone(),
                None => return f,
            }
        }
    }
}

/// How an element of a scope is reached from that scope's connections.
#[derive(Clone)]
struct Ends {
    /// Node that connections *from* the element leave.
    src: Option<Node>,
    /// Node that connections *to* the element enter.
    dst: Option<Node>,
    /// For compound instances: its description and port counts.
    limits: Option<(String, usize, usize)>,
}

/// How deeply compound classes may nest by use (an instance of a class
/// whose body uses another compound class, and so on), as lexical nesting
/// is bounded by the parser: expansion recurses once per level.
pub const MAX_EXPANSION_DEPTH: usize = 100;

/// The default bound on the elements (compound instances included) of a
/// flattened configuration (`--max-elements`); connections may be
/// `CONNECTIONS_PER_ELEMENT` times as many.
pub const DEFAULT_MAX_ELEMENTS: usize = 2_000_000;

/// Connections allowed per element of `--max-elements`.
pub const CONNECTIONS_PER_ELEMENT: usize = 4;

/// The bound on the bytes of configuration strings and parameter values
/// made by `$parameter` substitution, in all and for one string.
const MAX_SUBSTITUTED_BYTES: usize = 256 << 20;
const MAX_STRING_BYTES: usize = 16 << 20;

pub(crate) struct Expander<'a> {
    pub errs: Vec<Diagnostic>,
    pub elements: Vec<FlatElement>,
    ntunnels: usize,
    edges: Vec<Edge>,
    cmdline: &'a HashMap<String, String>,
    /// Compound classes whose deferred parameter errors were reported.
    reported: HashSet<*const CompoundClass>,
    /// Bound on elements plus compound instances, and on connections.
    max_elements: usize,
    /// Elements and compound instances made so far.
    made: usize,
    /// Bytes made by parameter substitution so far.
    substituted: usize,
    /// The compound uses being expanded, outermost first: the instance's
    /// span and its description.
    uses: Vec<(Span, String)>,
    /// A bound was hit: expansion stops (its error is reported).
    stopped: bool,
}

enum BindError {
    TooMany { expected: usize, got: usize },
    TooFew { expected: usize, got: usize },
    MissingKeyword(String),
}

/// Binds compound arguments to formals: arguments whose keyword matches a
/// keyword formal bind to it; the others bind to positional formals in
/// order, then to `__REST__`.
fn bind(alt: &AltBody, args: &[String]) -> Result<HashMap<String, String>, BindError> {
    let positional: Vec<&str> = alt
        .formals
        .iter()
        .filter(|f| f.keyword.is_none())
        .map(|f| f.name.as_str())
        .collect();
    let mut vars = HashMap::new();
    let mut next = 0;
    let mut rest = Vec::new();
    let mut got_positional = 0;
    for arg in args {
        if let Some((kw, val)) = split_keyword(arg) {
            if let Some(f) = alt
                .formals
                .iter()
                .find(|f| f.keyword.as_deref() == Some(kw))
            {
                vars.insert(f.name.clone(), val.to_string());
                continue;
            }
        }
        got_positional += 1;
        if next < positional.len() {
            vars.insert(positional[next].to_string(), arg.clone());
            next += 1;
        } else if alt.rest.is_some() {
            rest.push(arg.clone());
        }
    }
    if got_positional > positional.len() && alt.rest.is_none() {
        return Err(BindError::TooMany {
            expected: positional.len(),
            got: got_positional,
        });
    }
    if next < positional.len() {
        return Err(BindError::TooFew {
            expected: positional.len(),
            got: got_positional,
        });
    }
    for f in &alt.formals {
        if let Some(kw) = &f.keyword {
            if !vars.contains_key(&f.name) {
                return Err(BindError::MissingKeyword(kw.clone()));
            }
        }
    }
    if let Some(r) = &alt.rest {
        vars.insert(r.clone(), rest.join(", "));
    }
    Ok(vars)
}

/// An element's full name for a message: its last three components
/// after `.../` when there are more (names grow with every level of
/// compound use).
fn short(name: &str) -> String {
    let parts: Vec<&str> = name.rsplitn(4, '/').collect();
    if parts.len() == 4 {
        format!(".../{}/{}/{}", parts[2], parts[1], parts[0])
    } else {
        name.to_string()
    }
}

fn count(n: usize, what: &str) -> String {
    match n {
        0 => format!("no {what}s"),
        1 => format!("1 {what}"),
        _ => format!("{n} {what}s"),
    }
}

impl<'a> Expander<'a> {
    pub(crate) fn new(cmdline: &'a HashMap<String, String>) -> Self {
        Expander {
            errs: Vec::new(),
            elements: Vec::new(),
            ntunnels: 0,
            edges: Vec::new(),
            cmdline,
            reported: HashSet::new(),
            max_elements: DEFAULT_MAX_ELEMENTS,
            made: 0,
            substituted: 0,
            uses: Vec::new(),
            stopped: false,
        }
    }

    /// The bound on connections: four per element (inside compounds, the
    /// connections through their inputs and outputs count too).
    fn max_connections(&self) -> usize {
        self.max_elements.saturating_mul(CONNECTIONS_PER_ELEMENT)
    }

    pub(crate) fn with_max_elements(mut self, n: usize) -> Self {
        self.max_elements = n.max(1);
        self
    }

    /// Counts one more element or compound instance `what` at `span`;
    /// false (the error reported, expansion stopped) beyond the bound.
    fn count_made(&mut self, span: &Span, what: &str) -> bool {
        if self.stopped {
            return false;
        }
        self.made += 1;
        if self.made <= self.max_elements {
            return true;
        }
        let max = self.max_elements;
        self.stop(
            Some(span),
            format!(
                "configuration too large: {what} would be element {} after compound expansion (at most {max}; compound instances count; see --max-elements)",
                max + 1
            ),
        );
        false
    }

    /// Reports a bound hit at `span` and stops expansion. The note names
    /// the outermost compound use being expanded, the one written at the
    /// top level.
    fn stop(&mut self, span: Option<&Span>, msg: String) {
        self.stopped = true;
        let mut d = Diagnostic::error(span.cloned(), msg);
        if let Some((top, desc)) = self.uses.first() {
            d = d.with_note(Some(top.clone()), format!("while expanding {desc}"));
        }
        self.errs.push(d);
    }

    /// Substitutes parameters into `text` within the bounds on
    /// substituted bytes; `None` (the error reported) beyond them.
    fn substitute(
        &mut self,
        text: &str,
        span: Option<&Span>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        if self.stopped {
            return None;
        }
        let left = MAX_SUBSTITUTED_BYTES.saturating_sub(self.substituted);
        match substitute_capped(text, lookup, left.min(MAX_STRING_BYTES)) {
            Ok(v) => {
                self.substituted += v.len();
                Some(v)
            }
            Err(n) => {
                let msg = if n > MAX_STRING_BYTES {
                    format!(
                        "parameter substitution makes a string of more than {} bytes (at most {MAX_STRING_BYTES})",
                        n
                    )
                } else {
                    format!(
                        "parameter substitution makes more than {MAX_SUBSTITUTED_BYTES} bytes of configuration strings in all"
                    )
                };
                self.stop(span, msg);
                None
            }
        }
    }

    /// Expands the top-level scope and returns the flat connections.
    pub(crate) fn expand_top(&mut self, top: &ScopeIr) -> Vec<FlatConnection> {
        // Top-level definitions, overridden by the command line.
        let mut frame = Frame {
            scope_id: top.id,
            vars: HashMap::new(),
            parent: None,
        };
        for (name, value) in &top.defines {
            if self.cmdline.contains_key(name) {
                continue;
            }
            let cmdline = self.cmdline;
            let v = self.substitute(value, None, &|n| {
                cmdline.get(n).cloned().or_else(|| frame.lookup(n))
            });
            frame.vars.insert(name.clone(), v.unwrap_or_default());
        }
        for (k, v) in self.cmdline {
            frame.vars.insert(k.clone(), v.clone());
        }
        self.expand_scope(top, "", &Rc::new(frame), None, None);
        if self.stopped {
            return Vec::new();
        }
        self.check_unique_names();
        self.flatten()
    }

    fn expand_scope(
        &mut self,
        scope: &ScopeIr,
        prefix: &str,
        frame: &Rc<Frame>,
        tin: Option<usize>,
        tout: Option<usize>,
    ) {
        let n = scope.elements.len();
        let mut used_in = vec![0usize; n];
        let mut used_out = vec![0usize; n];
        for c in &scope.conns {
            used_out[c.from] = used_out[c.from].max(c.from_port + 1);
            used_in[c.to] = used_in[c.to].max(c.to_port + 1);
        }
        let mut ends = Vec::with_capacity(n);
        for (i, e) in scope.elements.iter().enumerate() {
            if self.stopped {
                return;
            }
            let end = match &e.kind {
                IrKind::Input => Ends {
                    src: tin.map(Node::Tunnel),
                    dst: None,
                    limits: None,
                },
                IrKind::Output => Ends {
                    src: None,
                    dst: tout.map(Node::Tunnel),
                    limits: None,
                },
                // Removed with their connections joined when resolved.
                IrKind::Tunnel => Ends {
                    src: None,
                    dst: None,
                    limits: None,
                },
                IrKind::Class(ClassBinding::Primitive(class)) => {
                    if !self.count_made(
                        &e.span,
                        &format!("'{}'", short(&format!("{prefix}{}", e.name))),
                    ) {
                        return;
                    }
                    let Some(config) = self.config(e, frame) else {
                        return;
                    };
                    let r = self.add_real(prefix, e, class, config);
                    Ends {
                        src: Some(r),
                        dst: Some(r),
                        limits: None,
                    }
                }
                IrKind::Class(ClassBinding::Compound(cls)) => {
                    self.instantiate(e, cls, prefix, frame, used_in[i], used_out[i])
                }
            };
            ends.push(end);
        }
        for c in &scope.conns {
            if self.stopped {
                return;
            }
            let (Some(src), Some(dst)) = (ends[c.from].src, ends[c.to].dst) else {
                continue;
            };
            let mut ok = true;
            if let Some((desc, _, nout)) = &ends[c.from].limits {
                if c.from_port >= *nout {
                    self.range_error(
                        desc,
                        "output",
                        c.from_port,
                        *nout,
                        &c.span,
                        &scope.elements[c.from],
                    );
                    ok = false;
                }
            }
            if let Some((desc, nin, _)) = &ends[c.to].limits {
                if c.to_port >= *nin {
                    self.range_error(
                        desc,
                        "input",
                        c.to_port,
                        *nin,
                        &c.span,
                        &scope.elements[c.to],
                    );
                    ok = false;
                }
            }
            if ok && self.edges.len() >= self.max_connections() {
                let max = self.max_connections();
                self.stop(
                    Some(&c.span),
                    format!(
                        "configuration too large: more than {max} connections after compound expansion (see --max-elements)"
                    ),
                );
                return;
            }
            if ok {
                self.edges.push(Edge {
                    from: src,
                    from_port: c.from_port,
                    to: dst,
                    to_port: c.to_port,
                    span: c.span.clone(),
                });
            }
        }
    }

    fn range_error(
        &mut self,
        desc: &str,
        dir: &str,
        port: usize,
        n: usize,
        span: &Span,
        e: &IrElem,
    ) {
        self.errs.push(
            Diagnostic::error(
                Some(span.clone()),
                format!(
                    "{desc} has no {dir} {port} (the compound has {})",
                    count(n, dir)
                ),
            )
            .with_note(
                Some(e.decl_span.clone()),
                format!("'{}' declared here", e.name),
            ),
        );
    }

    fn config(&mut self, e: &IrElem, frame: &Rc<Frame>) -> Option<String> {
        match &e.config {
            Some(c) => self.substitute(&c.text, Some(&e.span), &|n| frame.lookup(n)),
            None => Some(String::new()),
        }
    }

    fn add_real(&mut self, prefix: &str, e: &IrElem, class: &str, config: String) -> Node {
        self.elements.push(FlatElement {
            name: format!("{prefix}{}", e.name),
            class: class.to_string(),
            config,
            span: e.span.clone(),
            anonymous: e.anonymous,
        });
        Node::Real(self.elements.len() - 1)
    }

    fn new_tunnel(&mut self) -> usize {
        self.ntunnels += 1;
        self.ntunnels - 1
    }

    fn instantiate(
        &mut self,
        e: &IrElem,
        cls: &Rc<CompoundClass>,
        prefix: &str,
        frame: &Rc<Frame>,
        used_in: usize,
        used_out: usize,
    ) -> Ends {
        let none = Ends {
            src: None,
            dst: None,
            limits: None,
        };
        if self.reported.insert(Rc::as_ptr(cls)) {
            self.errs.extend(cls.param_errs.iter().cloned());
        }
        let full = format!("{prefix}{}", e.name);
        let desc = cls.describe_elem(&full);
        if self.uses.len() >= MAX_EXPANSION_DEPTH {
            self.stop(
                Some(&e.span),
                format!(
                    "compound classes nested too deeply by use: {} would be compound level {} (at most {MAX_EXPANSION_DEPTH})",
                    cls.describe_elem(&short(&full)),
                    self.uses.len() + 1
                ),
            );
            return none;
        }
        if !self.count_made(&e.span, &cls.describe_elem(&short(&full))) {
            return none;
        }
        let Some(args_text) = self.config(e, frame) else {
            return none;
        };
        let args = split_args(&args_text);

        // Choose the definition: exact port counts first, then any that fits.
        let mut chosen: Option<&Alt> = None;
        let bodies = || {
            cls.alts.iter().filter_map(|a| match a {
                Alt::Body(b) => Some((a, b)),
                Alt::Primitive(_) => None,
            })
        };
        if cls.alts.len() == 1 {
            chosen = cls.alts.first();
        } else {
            for (a, b) in bodies() {
                if b.ninputs == used_in && b.noutputs == used_out && bind(b, &args).is_ok() {
                    chosen = Some(a);
                    break;
                }
            }
            if chosen.is_none() {
                for (a, b) in bodies() {
                    if used_in <= b.ninputs && used_out <= b.noutputs && bind(b, &args).is_ok() {
                        chosen = Some(a);
                        break;
                    }
                }
            }
            if chosen.is_none() {
                chosen = cls.alts.iter().find(|a| matches!(a, Alt::Primitive(_)));
            }
        }
        let Some(alt) = chosen else {
            let mut d = Diagnostic::error(
                Some(e.span.clone()),
                format!(
                    "no definition of {} matches {desc} ({}, {}, {})",
                    cls.describe(),
                    count(args.len(), "argument"),
                    count(used_in, "input"),
                    count(used_out, "output")
                ),
            );
            for (_, b) in bodies() {
                d = d.with_note(
                    Some(cls.span.clone()),
                    format!(
                        "candidate: {}, {}, {}",
                        b.signature(),
                        count(b.ninputs, "input"),
                        count(b.noutputs, "output")
                    ),
                );
            }
            self.errs.push(d);
            return none;
        };
        let body = match alt {
            Alt::Primitive(p) => {
                let r = self.add_real(prefix, e, p, args_text);
                return Ends {
                    src: Some(r),
                    dst: Some(r),
                    limits: None,
                };
            }
            Alt::Body(b) => b,
        };
        let vars = match bind(body, &args) {
            Ok(v) => v,
            Err(err) => {
                let msg = match err {
                    BindError::TooMany { expected, got } => {
                        format!("too many arguments for {desc}: expected {expected}, got {got}")
                    }
                    BindError::TooFew { expected, got } => {
                        format!("too few arguments for {desc}: expected {expected}, got {got}")
                    }
                    BindError::MissingKeyword(kw) => {
                        format!("missing keyword argument '{kw}' for {desc}")
                    }
                };
                self.errs
                    .push(Diagnostic::error(Some(e.span.clone()), msg).with_note(
                        Some(cls.span.clone()),
                        format!("{} takes {}", cls.describe(), body.signature()),
                    ));
                return none;
            }
        };
        let parent = frame.find(body.parent_scope);
        let mut f = Frame {
            scope_id: body.scope.id,
            vars,
            parent: Some(parent),
        };
        for (name, value) in &body.scope.defines {
            if f.vars.contains_key(name) {
                continue;
            }
            let Some(v) = self.substitute(value, Some(&e.span), &|n| f.lookup(n)) else {
                return none;
            };
            f.vars.insert(name.clone(), v);
        }
        let tin = self.new_tunnel();
        let tout = self.new_tunnel();
        self.uses.push((e.span.clone(), desc.clone()));
        self.expand_scope(
            &body.scope,
            &format!("{full}/"),
            &Rc::new(f),
            Some(tin),
            Some(tout),
        );
        self.uses.pop();
        Ends {
            src: Some(Node::Tunnel(tout)),
            dst: Some(Node::Tunnel(tin)),
            limits: Some((desc, body.ninputs, body.noutputs)),
        }
    }

    /// A declared name can equal a name made by compound expansion
    /// (`c/x :: X` beside compound `c` with inner `x`): report it.
    fn check_unique_names(&mut self) {
        let mut first: HashMap<&str, usize> = HashMap::new();
        for (i, e) in self.elements.iter().enumerate() {
            if let Some(&j) = first.get(e.name.as_str()) {
                self.errs.push(
                    Diagnostic::error(
                        Some(e.span.clone()),
                        format!(
                            "two elements are named '{}' after compound expansion",
                            e.name
                        ),
                    )
                    .with_note(Some(self.elements[j].span.clone()), "the other one"),
                );
            } else {
                first.insert(&e.name, i);
            }
        }
    }

    /// Follows connections through tunnels; returns real-to-real connections
    /// without duplicates.
    fn flatten(&mut self) -> Vec<FlatConnection> {
        let mut tunnel_out: Vec<Vec<(usize, Node, usize)>> = vec![Vec::new(); self.ntunnels];
        for e in &self.edges {
            if let Node::Tunnel(t) = e.from {
                tunnel_out[t].push((e.from_port, e.to, e.to_port));
            }
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        // Following tunnels may take many steps per connection (a long
        // chain of compounds that only pass packets on): bounded too.
        let mut steps_left = self.max_elements.saturating_mul(64);
        for e in &self.edges {
            let Node::Real(from) = e.from else { continue };
            let mut visited = HashSet::new();
            let mut stack = vec![(e.to, e.to_port)];
            let mut reached = Vec::new();
            while let Some((node, port)) = stack.pop() {
                steps_left = steps_left.saturating_sub(1);
                if steps_left == 0 {
                    let msg = "configuration too large: following connections through compounds takes too long (see --max-elements)";
                    self.errs.push(Diagnostic::error(Some(e.span.clone()), msg));
                    return out;
                }
                match node {
                    Node::Real(r) => reached.push((r, port)),
                    Node::Tunnel(t) => {
                        if visited.insert((t, port)) {
                            // push in reverse so that targets come out in order
                            for &(p, n2, p2) in tunnel_out[t].iter().rev() {
                                if p == port {
                                    stack.push((n2, p2));
                                }
                            }
                        }
                    }
                }
            }
            for (to, to_port) in reached {
                if out.len() >= self.max_connections() {
                    let max = self.max_connections();
                    self.errs.push(Diagnostic::error(
                        Some(e.span.clone()),
                        format!(
                            "configuration too large: more than {max} connections after compound expansion (see --max-elements)"
                        ),
                    ));
                    return out;
                }
                if seen.insert((from, e.from_port, to, to_port)) {
                    out.push(FlatConnection {
                        from,
                        from_port: e.from_port,
                        to,
                        to_port,
                        span: e.span.clone(),
                    });
                }
            }
        }
        out
    }
}
