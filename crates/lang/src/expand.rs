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
use crate::params::substitute;
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

pub(crate) struct Expander<'a> {
    pub errs: Vec<Diagnostic>,
    pub elements: Vec<FlatElement>,
    ntunnels: usize,
    edges: Vec<Edge>,
    cmdline: &'a HashMap<String, String>,
    /// Compound classes whose deferred parameter errors were reported.
    reported: HashSet<*const CompoundClass>,
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
            let v = substitute(value, &|n| {
                self.cmdline.get(n).cloned().or_else(|| frame.lookup(n))
            });
            frame.vars.insert(name.clone(), v);
        }
        for (k, v) in self.cmdline {
            frame.vars.insert(k.clone(), v.clone());
        }
        self.expand_scope(top, "", &Rc::new(frame), None, None);
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
                IrKind::Class(ClassBinding::Primitive(class)) => {
                    let config = self.config(e, frame);
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

    fn config(&self, e: &IrElem, frame: &Rc<Frame>) -> String {
        match &e.config {
            Some(c) => substitute(&c.text, &|n| frame.lookup(n)),
            None => String::new(),
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
        let args_text = self.config(e, frame);
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
            let v = substitute(value, &|n| f.lookup(n));
            f.vars.insert(name.clone(), v);
        }
        let tin = self.new_tunnel();
        let tout = self.new_tunnel();
        self.expand_scope(
            &body.scope,
            &format!("{full}/"),
            &Rc::new(f),
            Some(tin),
            Some(tout),
        );
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
        for e in &self.edges {
            let Node::Real(from) = e.from else { continue };
            let mut visited = HashSet::new();
            let mut stack = vec![(e.to, e.to_port)];
            let mut reached = Vec::new();
            while let Some((node, port)) = stack.pop() {
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
