//! Name resolution: syntax tree to scopes of elements and connections.
//!
//! Each scope (the file, or one definition of a compound class) gets its
//! elements, in declaration order, and its connections between them. Class
//! names are resolved here, lexically: a class name means the definition
//! visible at that point, so `elementclass Queue { input -> Queue -> output }`
//! refers to the previous `Queue` inside its body. `$parameter` references are
//! checked here too, once per definition rather than once per instance.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::args::{is_keyword, split_args, split_words, unquote};
use crate::params::scan_vars;
use crate::parser::{AltAst, Cfg};
use crate::parser::{
    ArrowKind, ClassExpr, CompoundAst, Conn, Elem, ElemRef, FormalAst, Range, Stmt,
};
use crate::span::{Diagnostic, LineIndex, Span};
use crate::Requirement;

/// Classes whose configurations may hold `$` references that are not
/// parameters (they keep them as written).
const UNCHECKED_CLASSES: &[&str] = &["Script"];

/// The elements and connections of one scope.
#[derive(Debug)]
pub(crate) struct ScopeIr {
    pub id: usize,
    pub elements: Vec<IrElem>,
    pub conns: Vec<IrConn>,
    /// `define`s of this scope: parameter name (without `$`) and raw value.
    pub defines: Vec<(String, String)>,
}

#[derive(Debug)]
pub(crate) struct IrElem {
    pub name: String,
    pub anonymous: bool,
    pub kind: IrKind,
    pub config: Option<Cfg>,
    /// The class name (or compound) and configuration.
    pub span: Span,
    /// Where the element was declared: its name, or `span` if anonymous.
    pub decl_span: Span,
}

#[derive(Debug)]
pub(crate) enum IrKind {
    /// A compound's `input` pseudoelement (element 0 of compound scopes).
    Input,
    /// A compound's `output` pseudoelement (element 1 of compound scopes).
    Output,
    Class(ClassBinding),
    /// One side of an element group: connections into it are joined to
    /// connections out of it, port by port, and it is removed before the
    /// scope is expanded.
    Tunnel,
}

#[derive(Clone, Debug)]
pub(crate) enum ClassBinding {
    Primitive(String),
    Compound(Rc<CompoundClass>),
}

#[derive(Debug)]
pub(crate) struct CompoundClass {
    /// Empty for anonymous compounds.
    pub name: String,
    pub alts: Vec<Alt>,
    pub span: Span,
    /// Unknown `$parameter`s of the body: reported only when the class is
    /// used. Click expands a compound's body only when it is instantiated,
    /// so a library file may define a class with parameters it never
    /// declares (FastClick's ids/includes/dummy_firewall_in.click).
    pub param_errs: Vec<Diagnostic>,
}

impl CompoundClass {
    /// `'c' :: Foo`, or `'c' (anonymous compound)`.
    pub(crate) fn describe_elem(&self, elem: &str) -> String {
        if self.name.is_empty() {
            format!("'{elem}' (anonymous compound)")
        } else {
            format!("'{elem}' :: {}", self.name)
        }
    }

    pub(crate) fn describe(&self) -> String {
        if self.name.is_empty() {
            "anonymous compound".to_string()
        } else {
            format!("compound '{}'", self.name)
        }
    }
}

/// One definition of an overloaded compound class.
#[derive(Clone, Debug)]
pub(crate) enum Alt {
    Body(Rc<AltBody>),
    /// `|| ...` extending a primitive class: use the primitive.
    Primitive(String),
}

#[derive(Debug)]
pub(crate) struct AltBody {
    pub formals: Vec<Formal>,
    /// Parameter receiving `__REST__` arguments.
    pub rest: Option<String>,
    pub scope: ScopeIr,
    pub ninputs: usize,
    pub noutputs: usize,
    /// Scope the compound was defined in (for lexical parameter lookup).
    pub parent_scope: usize,
}

impl AltBody {
    /// `$a, COUNT $count, __REST__ $rest`.
    pub(crate) fn signature(&self) -> String {
        let mut parts: Vec<String> = self
            .formals
            .iter()
            .map(|f| match &f.keyword {
                Some(k) => format!("{k} ${}", f.name),
                None => format!("${}", f.name),
            })
            .collect();
        if let Some(r) = &self.rest {
            parts.push(format!("__REST__ ${r}"));
        }
        if parts.is_empty() {
            "no parameters".to_string()
        } else {
            parts.join(", ")
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Formal {
    pub keyword: Option<String>,
    pub name: String,
}

#[derive(Debug)]
pub(crate) struct IrConn {
    pub from: usize,
    pub from_port: usize,
    pub to: usize,
    pub to_port: usize,
    pub span: Span,
}

/// Parameters visible in one lexical scope.
struct ParamScope {
    names: HashSet<String>,
    /// For compound bodies: how to describe the compound in messages, and
    /// its formal parameters.
    compound: Option<(String, String)>,
}

pub(crate) struct Resolver<'a> {
    idx: &'a LineIndex,
    pub errs: Vec<Diagnostic>,
    pub requirements: Vec<Requirement>,
    next_scope: usize,
    scope_ids: Vec<usize>,
    classes: Vec<HashMap<String, ClassBinding>>,
    params: Vec<ParamScope>,
    cmdline: HashSet<String>,
    /// Unknown-parameter errors of the compound bodies being resolved.
    param_errs: Vec<Diagnostic>,
    /// Connections made so far, and the most there may be: `a, b, c ->
    /// x, y, z` makes every pair, so a short text can ask for billions.
    nconns: usize,
    pub max_conns: usize,
    /// The classes `elementclass` defines at the top level, in order.
    pub top_classes: Vec<(String, ClassBinding)>,
    /// Names used so far as classes that no `elementclass` defines (a
    /// word after `::`, or `Word(args)`, or a bare word that names no
    /// element): Click's lexer takes such a name for a class from then
    /// on, in every scope, so declaring an element of that name later is
    /// an error.
    used_classes: HashSet<String>,
}

/// Elements of the scope being built.
struct ScopeBuilder {
    elements: Vec<IrElem>,
    conns: Vec<IrConn>,
    names: HashMap<String, usize>,
    compound: bool,
    /// Anonymous elements made from bare names: `(name, where)`.
    bare: Vec<(String, Span)>,
    /// The input and output tunnels of the element groups being resolved
    /// (innermost last).
    groups: Vec<(usize, usize)>,
    /// Tunnel elements made so far (not counted in anonymous names).
    ntunnels: usize,
}

impl ScopeBuilder {
    fn add_anonymous(&mut self, b: ClassBinding, config: Option<Cfg>, span: Span) -> usize {
        let pseudo = if self.compound { 2 } else { 0 };
        let n = self.elements.len() - pseudo - self.ntunnels + 1;
        let base = match &b {
            ClassBinding::Primitive(p) => p.clone(),
            ClassBinding::Compound(c) => c.name.clone(),
        };
        self.elements.push(IrElem {
            name: format!("{base}@{n}"),
            anonymous: true,
            kind: IrKind::Class(b),
            config,
            decl_span: span.clone(),
            span,
        });
        self.elements.len() - 1
    }

    /// The elements a connection's bare ports and `input`/`output` stand
    /// for: the innermost group's tunnels, else the compound's pseudo
    /// elements; and whether there are any.
    fn io(&self) -> (usize, usize, bool) {
        match self.groups.last() {
            Some(&(i, o)) => (i, o, true),
            None => (0, 1, self.compound),
        }
    }

    fn add_tunnel(&mut self, side: &str, span: Span) -> usize {
        self.ntunnels += 1;
        self.elements.push(IrElem {
            name: format!("({side} of the element group)"),
            anonymous: false,
            kind: IrKind::Tunnel,
            config: None,
            decl_span: span.clone(),
            span,
        });
        self.elements.len() - 1
    }

    /// Joins the connections through each tunnel and removes the
    /// tunnels, renumbering the other elements. A group port connected on
    /// one side only (inside or outside) is an error.
    fn remove_tunnels(&mut self) -> Vec<Diagnostic> {
        let mut errs = Vec::new();
        if self.ntunnels == 0 {
            return errs;
        }
        let is_tunnel: Vec<bool> = self
            .elements
            .iter()
            .map(|e| matches!(e.kind, IrKind::Tunnel))
            .collect();
        for t in (0..self.elements.len()).filter(|&t| is_tunnel[t]) {
            let (through, rest): (Vec<IrConn>, Vec<IrConn>) = std::mem::take(&mut self.conns)
                .into_iter()
                .partition(|c| c.from == t || c.to == t);
            self.conns = rest;
            let (ins, outs): (Vec<&IrConn>, Vec<&IrConn>) = through.iter().partition(|c| c.to == t);
            let mut ports: Vec<(usize, bool, bool)> = Vec::new();
            for (p, into) in ins
                .iter()
                .map(|c| (c.to_port, true))
                .chain(outs.iter().map(|c| (c.from_port, false)))
            {
                match ports.iter_mut().find(|x| x.0 == p) {
                    Some(x) if into => x.1 = true,
                    Some(x) => x.2 = true,
                    None => ports.push((p, into, !into)),
                }
            }
            ports.sort_unstable();
            let e = &self.elements[t];
            let input = e.name.starts_with("(input");
            for &(p, i, o) in &ports {
                // Into an input tunnel is outside; into an output, inside.
                let (outside, inside) = if input { (i, o) } else { (o, i) };
                if outside != inside {
                    let side = if input { "input" } else { "output" };
                    let missing = if outside { "inside" } else { "outside" };
                    errs.push(Diagnostic::error(
                        Some(e.span.clone()),
                        format!("element group {side} {p} is not connected {missing} the group"),
                    ));
                }
            }
            for a in &ins {
                for b in outs.iter().filter(|b| b.from_port == a.to_port) {
                    self.conns.push(IrConn {
                        from: a.from,
                        from_port: a.from_port,
                        to: b.to,
                        to_port: b.to_port,
                        span: a.span.clone(),
                    });
                }
            }
        }
        let mut new_index = Vec::with_capacity(self.elements.len());
        let mut k = 0;
        for &t in &is_tunnel {
            new_index.push(k);
            if !t {
                k += 1;
            }
        }
        let mut i = 0;
        self.elements.retain(|_| {
            i += 1;
            !is_tunnel[i - 1]
        });
        for c in &mut self.conns {
            c.from = new_index[c.from];
            c.to = new_index[c.to];
        }
        for v in self.names.values_mut() {
            *v = new_index[*v];
        }
        self.ntunnels = 0;
        errs
    }

    /// Renames anonymous elements whose `Class@N` name a declared element
    /// already uses, by counting N up (Click does the same).
    fn deanonymize(&mut self) {
        let mut used: HashSet<String> = self.names.keys().cloned().collect();
        // Per class name, a number below which every `Class@N` from the
        // last search on is known to be used (names are only ever added):
        // a search starts there, so declared names in the way cost once,
        // not once per anonymous element (which was quadratic).
        let mut known_used: HashMap<String, usize> = HashMap::new();
        for e in self.elements.iter_mut().filter(|e| e.anonymous) {
            if used.contains(&e.name) {
                let at = e.name.rfind('@').unwrap_or(0);
                let base = e.name[..at].to_string();
                let mut n: usize = e.name[at + 1..].parse().unwrap_or(0);
                match known_used.get(&base) {
                    Some(&k) if k > n => {
                        n = k;
                        e.name = format!("{base}@{n}");
                    }
                    _ => {}
                }
                while used.contains(&e.name) {
                    n += 1;
                    e.name = format!("{base}@{n}");
                }
                known_used.insert(base, n);
            }
            used.insert(e.name.clone());
        }
    }
}

/// One end of a connection: element, ports given (if any), source range.
struct End {
    elem: usize,
    ports: Option<Vec<usize>>,
    range: Range,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(idx: &'a LineIndex, cmdline: HashSet<String>) -> Self {
        Resolver {
            idx,
            errs: Vec::new(),
            requirements: Vec::new(),
            next_scope: 0,
            scope_ids: Vec::new(),
            classes: Vec::new(),
            params: Vec::new(),
            cmdline,
            param_errs: Vec::new(),
            nconns: 0,
            max_conns: usize::MAX,
            top_classes: Vec::new(),
            used_classes: HashSet::new(),
        }
    }

    fn span(&self, r: Range) -> Span {
        self.idx.span(r.0, r.1)
    }

    fn error(&mut self, r: Range, msg: impl Into<String>) {
        self.errs.push(Diagnostic::error(Some(self.span(r)), msg));
    }

    /// [`Self::error`], worded as `click` in Click's form of the errors.
    fn error_click(&mut self, r: Range, msg: impl Into<String>, click: impl Into<String>) {
        self.errs
            .push(Diagnostic::error(Some(self.span(r)), msg).with_click(None, click));
    }

    /// Resolves the top-level scope (its id is 0).
    pub(crate) fn resolve_top(&mut self, stmts: &[Stmt]) -> ScopeIr {
        self.resolve_scope(stmts, None, HashSet::new())
    }

    fn lookup_class(&self, name: &str) -> Option<ClassBinding> {
        self.classes.iter().rev().find_map(|m| m.get(name).cloned())
    }

    fn resolve_scope(
        &mut self,
        stmts: &[Stmt],
        compound: Option<(String, String, Span)>,
        formals: HashSet<String>,
    ) -> ScopeIr {
        let id = self.next_scope;
        self.next_scope += 1;
        // Definitions in a scope take effect simultaneously: collect first.
        let mut names = formals;
        let mut defines = Vec::new();
        for s in stmts {
            if let Stmt::Define(cfg) = s {
                for (name, value) in self.parse_define(cfg) {
                    if !names.insert(name.clone()) {
                        self.error(
                            cfg.range,
                            format!("parameter '${name}' defined more than once"),
                        );
                    }
                    defines.push((name, value));
                }
            }
        }
        let mut sb = ScopeBuilder {
            elements: Vec::new(),
            conns: Vec::new(),
            names: HashMap::new(),
            compound: compound.is_some(),
            bare: Vec::new(),
            groups: Vec::new(),
            ntunnels: 0,
        };
        if let Some((_, _, span)) = &compound {
            for (name, kind) in [("input", IrKind::Input), ("output", IrKind::Output)] {
                sb.names.insert(name.to_string(), sb.elements.len());
                sb.elements.push(IrElem {
                    name: name.to_string(),
                    anonymous: false,
                    kind,
                    config: None,
                    span: span.clone(),
                    decl_span: span.clone(),
                });
            }
        }
        self.params.push(ParamScope {
            names,
            compound: compound
                .as_ref()
                .map(|(d, sig, _)| (d.clone(), sig.clone())),
        });
        self.classes.push(HashMap::new());
        self.scope_ids.push(id);

        for s in stmts {
            match s {
                Stmt::ElementClass {
                    name,
                    name_range,
                    class,
                } => {
                    let b = self.class_binding(class, Some((name, *name_range)));
                    if id == 0 {
                        self.top_classes.push((name.clone(), b.clone()));
                    }
                    if let Some(m) = self.classes.last_mut() {
                        m.insert(name.clone(), b);
                    }
                }
                Stmt::Require(cfg) => {
                    let span = self.span(cfg.range);
                    for arg in split_args(&cfg.text) {
                        let words: Vec<String> =
                            split_words(&arg).iter().map(|w| unquote(w)).collect();
                        // Libraries were included while parsing.
                        if !words.is_empty() && words[0] != "library" {
                            self.requirements.push(Requirement {
                                words,
                                span: span.clone(),
                            });
                        }
                    }
                }
                Stmt::Define(cfg) => self.check_params(cfg),
                Stmt::Conn(c) => self.resolve_conn(&mut sb, c),
            }
        }

        self.scope_ids.pop();
        self.classes.pop();
        self.params.pop();
        // A bare name declared only later was taken as a class name.
        for (name, span) in std::mem::take(&mut sb.bare) {
            if let Some(&i) = sb.names.get(&name) {
                let decl = sb.elements[i].decl_span.clone();
                if decl.start > span.start {
                    self.errs.push(
                        Diagnostic::error(
                            Some(span),
                            format!("element '{name}' used before its declaration"),
                        )
                        .with_note(
                            Some(decl),
                            format!(
                                "'{name}' declared here; declare elements before connecting them"
                            ),
                        ),
                    );
                }
            }
        }
        // One error per group: a nonsequential port was reported already.
        for e in sb.remove_tunnels() {
            if !self.errs.iter().any(|x| x.span == e.span) {
                self.errs.push(e);
            }
        }
        sb.deanonymize();
        ScopeIr {
            id,
            elements: sb.elements,
            conns: sb.conns,
            defines,
        }
    }

    /// `define($NAME value, ...)`.
    fn parse_define(&mut self, cfg: &Cfg) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for arg in split_args(&cfg.text) {
            let (first, rest) = match arg.find(|c: char| c.is_ascii_whitespace()) {
                Some(p) => (&arg[..p], arg[p..].trim()),
                None => (arg.as_str(), ""),
            };
            let name = first.strip_prefix('$').unwrap_or("");
            if name.is_empty() || !name.bytes().all(crate::lexer::is_var_byte) {
                self.error(
                    cfg.range,
                    format!("bad definition '{arg}': expected '$NAME value'"),
                );
                continue;
            }
            out.push((name.to_string(), rest.to_string()));
        }
        out
    }

    /// Checks the parameters of an element's configuration. `Script`
    /// configurations are exempt: Script has `$variables` of its own, which
    /// Click leaves alone when no parameter has their name.
    fn check_element_params(&mut self, b: &ClassBinding, config: &Option<Cfg>) {
        if let Some(c) = config {
            if !matches!(b, ClassBinding::Primitive(p) if UNCHECKED_CLASSES.contains(&p.as_str())) {
                self.check_params(c);
            }
        }
    }

    /// Reports `$parameter`s of `cfg` that no enclosing scope defines,
    /// inside compound elements only: outside any compound, Click leaves
    /// an undefined `$name` as literal text, and so does paraclick.
    fn check_params(&mut self, cfg: &Cfg) {
        if self.params.iter().all(|p| p.compound.is_none()) {
            return;
        }
        for v in scan_vars(&cfg.text) {
            if v.default.is_some()
                || self.cmdline.contains(&v.name)
                || self.params.iter().any(|p| p.names.contains(&v.name))
            {
                continue;
            }
            let span = self.idx.span(cfg.start + v.start, cfg.start + v.end);
            let mut d = Diagnostic::error(Some(span), format!("unknown parameter '${}'", v.name));
            let mut visible: Vec<&str> = self
                .params
                .iter()
                .flat_map(|p| p.names.iter())
                .chain(self.cmdline.iter())
                .map(String::as_str)
                .collect();
            visible.sort_unstable();
            visible.dedup();
            if let Some(s) = crate::check::suggest(&v.name, &visible) {
                d = d.with_note(None, format!("did you mean '${s}'?"));
            }
            if let Some(Some((desc, sig))) = self.params.last().map(|p| &p.compound) {
                d = d.with_note(None, format!("{desc} takes {sig}"));
            }
            self.param_errs.push(d);
        }
    }

    fn class_binding(
        &mut self,
        class: &ClassExpr,
        def_name: Option<(&str, Range)>,
    ) -> ClassBinding {
        match class {
            ClassExpr::Name(n, _) => self.lookup_class(n).unwrap_or_else(|| {
                self.used_classes.insert(n.clone());
                ClassBinding::Primitive(n.clone())
            }),
            ClassExpr::Compound(ast) => {
                ClassBinding::Compound(Rc::new(self.resolve_compound(ast, def_name)))
            }
        }
    }

    fn resolve_compound(&mut self, ast: &CompoundAst, def: Option<(&str, Range)>) -> CompoundClass {
        let name = def.map(|d| d.0);
        let display = name.unwrap_or("").to_string();
        let mut alts = Vec::new();
        let mark = self.param_errs.len();
        for alt in &ast.alts {
            let body = self.resolve_alt(alt, &display, ast.range);
            alts.push(Alt::Body(Rc::new(body)));
        }
        let mut param_errs = self.param_errs.split_off(mark);
        if ast.extends {
            match name {
                Some(n) => match self.lookup_class(n) {
                    Some(ClassBinding::Compound(prev)) => {
                        alts.extend(prev.alts.iter().cloned());
                        param_errs.extend(prev.param_errs.iter().cloned());
                    }
                    Some(ClassBinding::Primitive(p)) => alts.push(Alt::Primitive(p)),
                    None => alts.push(Alt::Primitive(n.to_string())),
                },
                None => self.error(
                    ast.range,
                    "'...' can only extend a named class (use it in 'elementclass')",
                ),
            }
        }
        CompoundClass {
            name: display,
            alts,
            span: self.span(def.map_or((ast.range.0, ast.range.0 + 1), |d| d.1)),
            param_errs,
        }
    }

    fn resolve_alt(&mut self, alt: &AltAst, display: &str, crange: Range) -> AltBody {
        let mut formals = Vec::new();
        let mut rest = None;
        let mut seen = HashSet::new();
        let mut seen_kw = HashSet::new();
        for (i, f) in alt.formals.iter().enumerate() {
            let FormalAst {
                keyword,
                var,
                range,
            } = f;
            if !seen.insert(var.clone()) {
                self.error(*range, format!("duplicate parameter '${var}'"));
                continue;
            }
            match keyword.as_deref() {
                Some("__REST__") => {
                    if i + 1 != alt.formals.len() {
                        self.error(*range, "'__REST__' parameter must come last");
                    }
                    rest = Some(var.clone());
                }
                Some(kw) if !is_keyword(kw) => {
                    self.error(
                        *range,
                        format!(
                            "bad keyword '{kw}' for parameter '${var}': keywords are uppercase letters, digits and '_'"
                        ),
                    );
                }
                Some(kw) => {
                    if !seen_kw.insert(kw.to_string()) {
                        self.error(*range, format!("duplicate keyword '{kw}'"));
                    }
                    formals.push(Formal {
                        keyword: Some(kw.to_string()),
                        name: var.clone(),
                    });
                }
                None => formals.push(Formal {
                    keyword: None,
                    name: var.clone(),
                }),
            }
        }
        let parent_scope = *self.scope_ids.last().unwrap_or(&0);
        let desc = if display.is_empty() {
            "anonymous compound".to_string()
        } else {
            format!("compound '{display}'")
        };
        let mut body = AltBody {
            formals,
            rest,
            scope: ScopeIr {
                id: 0,
                elements: Vec::new(),
                conns: Vec::new(),
                defines: Vec::new(),
            },
            ninputs: 0,
            noutputs: 0,
            parent_scope,
        };
        let sig = body.signature();
        let span = self.span((crange.0, crange.0 + 1));
        body.scope = self.resolve_scope(&alt.body, Some((desc.clone(), sig, span)), seen);
        // Port counts: every port below the highest one used must be used.
        let mut used_in = HashSet::new();
        let mut used_out = HashSet::new();
        for c in &body.scope.conns {
            if c.from == 0 {
                used_in.insert(c.from_port);
            }
            if c.to == 1 {
                used_out.insert(c.to_port);
            }
        }
        body.ninputs = used_in.iter().max().map_or(0, |m| m + 1);
        body.noutputs = used_out.iter().max().map_or(0, |m| m + 1);
        for (dir, used, n) in [
            ("input", &used_in, body.ninputs),
            ("output", &used_out, body.noutputs),
        ] {
            for p in 0..n {
                if !used.contains(&p) {
                    self.errs.push(
                        Diagnostic::error(
                            Some(self.span((crange.0, crange.0 + 1))),
                            format!("{desc} {dir} {p} is not connected inside the compound"),
                        )
                        .with_note(
                            None,
                            format!(
                                "the compound uses {dir} {}, so every {dir} below it must be used",
                                n - 1
                            ),
                        ),
                    );
                }
            }
        }
        body
    }

    fn declare(
        &mut self,
        sb: &mut ScopeBuilder,
        name: &str,
        name_range: Range,
        b: ClassBinding,
        config: Option<Cfg>,
        span: Span,
    ) -> usize {
        let decl_span = self.span(name_range);
        // A name already used as a class (a visible `elementclass`, or a
        // primitive's name used as one anywhere before) names no element,
        // as in Click. A bare word of this scope declared later gets the
        // clearer "used before its declaration" instead.
        if (self.lookup_class(name).is_some() || self.used_classes.contains(name))
            && !sb.bare.iter().any(|(n, _)| n == name)
        {
            self.errs.push(Diagnostic::error(
                Some(decl_span.clone()),
                format!("class '{name}' used as element name"),
            ));
        }
        if let Some(&i) = sb.names.get(name) {
            let prev = sb.elements[i].decl_span.clone();
            let note = if matches!(sb.elements[i].kind, IrKind::Input | IrKind::Output) {
                format!("'{name}' is the compound's {name} pseudoelement")
            } else {
                format!("element '{name}' previously declared here")
            };
            self.errs.push(
                Diagnostic::error(
                    Some(decl_span),
                    format!("redeclaration of element '{name}'"),
                )
                .with_note(Some(prev), note),
            );
            return i;
        }
        if has_digit_component(name) {
            self.errs.push(Diagnostic::error(
                Some(decl_span.clone()),
                format!("element name '{name}' has all-digit component"),
            ));
        }
        sb.names.insert(name.to_string(), sb.elements.len());
        sb.elements.push(IrElem {
            name: name.to_string(),
            anonymous: false,
            kind: IrKind::Class(b),
            config,
            span,
            decl_span,
        });
        sb.elements.len() - 1
    }

    /// Span of an element's class and configuration.
    fn class_span(&self, class: &ClassExpr, config: &Option<Cfg>) -> Span {
        let r = class.range();
        let end = config.as_ref().map_or(r.1, |c| c.range.1);
        match class {
            // a compound's span is just its '{'
            ClassExpr::Compound(_) => self.span((r.0, r.0 + 1)),
            ClassExpr::Name(..) => self.span((r.0, end)),
        }
    }

    fn elem_ref(&mut self, sb: &mut ScopeBuilder, r: &ElemRef) -> Option<usize> {
        match r {
            ElemRef::Bare { name, range } => {
                if let Some(&i) = sb.names.get(name) {
                    return Some(i);
                }
                let b = self.lookup_class(name);
                let span = self.span(*range);
                if b.is_none() {
                    // Neither a declared element nor a class: it would name
                    // an anonymous element `NAME@N`, which no element name
                    // with an all-digit component may be.
                    if has_digit_component(name) {
                        self.errs.push(Diagnostic::error(
                            Some(span),
                            format!(
                                "'{name}' is neither an element nor a class (all-digit component)"
                            ),
                        ));
                        return None;
                    }
                    sb.bare.push((name.clone(), span.clone()));
                    self.used_classes.insert(name.clone());
                }
                let b = b.unwrap_or_else(|| ClassBinding::Primitive(name.clone()));
                Some(sb.add_anonymous(b, None, span))
            }
            ElemRef::Decl {
                name,
                name_range,
                class,
                config,
            } => {
                let b = self.class_binding(class, None);
                self.check_element_params(&b, config);
                let span = self.class_span(class, config);
                Some(self.declare(sb, name, *name_range, b, config.clone(), span))
            }
            ElemRef::Anon { class, config } => {
                let b = self.class_binding(class, None);
                self.check_element_params(&b, config);
                let span = self.class_span(class, config);
                if let ClassBinding::Primitive(name) = &b {
                    if has_digit_component(name) {
                        self.errs.push(Diagnostic::error(
                            Some(span),
                            format!("'{name}' is not a class name (all-digit component)"),
                        ));
                        return None;
                    }
                }
                Some(sb.add_anonymous(b, config.clone(), span))
            }
            // Handled by resolve_conn.
            ElemRef::Implicit | ElemRef::Group(_) => None,
        }
    }

    fn resolve_conn(&mut self, sb: &mut ScopeBuilder, c: &Conn) {
        // `x, y :: Class(config)` declares every name.
        if c.arrows.is_empty() {
            let elems = &c.groups[0].elems;
            if elems.len() > 1 {
                if let Some(Elem {
                    in_ports: None,
                    out_ports: None,
                    r: ElemRef::Decl { class, config, .. },
                    ..
                }) = elems.last()
                {
                    let all_bare = elems[..elems.len() - 1].iter().all(|e| {
                        e.in_ports.is_none()
                            && e.out_ports.is_none()
                            && matches!(e.r, ElemRef::Bare { .. })
                    });
                    if all_bare {
                        let b = self.class_binding(class, None);
                        self.check_element_params(&b, config);
                        let span = self.class_span(class, config);
                        for e in elems {
                            let (name, range) = match &e.r {
                                ElemRef::Bare { name, range } => (name, *range),
                                ElemRef::Decl {
                                    name, name_range, ..
                                } => (name, *name_range),
                                _ => continue,
                            };
                            self.declare(sb, name, range, b.clone(), config.clone(), span.clone());
                        }
                        return;
                    }
                }
            }
        }

        // Resolve every element, in order, then connect neighbouring groups.
        let n = c.groups.len();
        let mut sources: Vec<Vec<End>> = Vec::new(); // output side of each group
        let mut targets: Vec<Vec<End>> = Vec::new(); // input side of each group
        for (gi, g) in c.groups.iter().enumerate() {
            let mut src = Vec::new();
            let mut dst = Vec::new();
            if g.elems.is_empty() {
                // implicit input (first) or output (last), inside compounds
                let arrow = if gi == 0 {
                    c.arrows[0].1
                } else {
                    c.arrows[gi - 1].1
                };
                let (inp, outp, _) = sb.io();
                let pseudo = if gi == 0 { inp } else { outp };
                src.push(End {
                    elem: pseudo,
                    ports: None,
                    range: arrow,
                });
                dst.push(End {
                    elem: pseudo,
                    ports: None,
                    range: arrow,
                });
            }
            for e in &g.elems {
                if let ElemRef::Group(body) = &e.r {
                    let (gin, gout, nin, nout) = self.resolve_group(sb, body, e.range);
                    let all = |n: usize| Some((0..n).collect::<Vec<usize>>());
                    src.push(End {
                        elem: gout,
                        ports: e
                            .out_ports
                            .as_ref()
                            .map(|p| p.ports.clone())
                            .or_else(|| all(nout)),
                        range: e.range,
                    });
                    dst.push(End {
                        elem: gin,
                        ports: e
                            .in_ports
                            .as_ref()
                            .map(|p| p.ports.clone())
                            .or_else(|| all(nin)),
                        range: e.range,
                    });
                    continue;
                }
                let (inp, outp, _) = sb.io();
                let (elem, sp, dp) = match &e.r {
                    ElemRef::Implicit if gi == 0 => (inp, e.in_ports.clone(), None),
                    ElemRef::Implicit => (outp, None, e.in_ports.clone()),
                    r => match self.elem_ref(sb, r) {
                        Some(i) => (i, e.out_ports.clone(), e.in_ports.clone()),
                        None => continue,
                    },
                };
                if n == 1 {
                    if let Some(p) = e.in_ports.as_ref().or(e.out_ports.as_ref()) {
                        self.error(p.range, "port given, but no connection");
                    }
                } else if !matches!(e.r, ElemRef::Implicit) {
                    if let (0, Some(p)) = (gi, &e.in_ports) {
                        self.error(
                            p.range,
                            "input port given before the first element of a connection",
                        );
                    }
                    if let (true, Some(p)) = (gi == n - 1, &e.out_ports) {
                        self.error(
                            p.range,
                            "output port given after the last element of a connection",
                        );
                    }
                }
                src.push(End {
                    elem,
                    ports: sp.map(|p| p.ports),
                    range: e.range,
                });
                dst.push(End {
                    elem,
                    ports: dp.map(|p| p.ports),
                    range: e.range,
                });
            }
            sources.push(src);
            targets.push(dst);
        }
        for (k, (kind, arrow)) in c.arrows.iter().enumerate() {
            let left = &sources[k];
            let right = &targets[k + 1];
            // Counted before the pairs are made.
            let ports = |side: &[End]| -> usize {
                side.iter()
                    .map(|e| e.ports.as_ref().map_or(1, Vec::len))
                    .sum()
            };
            let n = match kind {
                ArrowKind::Single => ports(left).saturating_mul(ports(right)),
                ArrowKind::Multi => ports(left).max(ports(right)),
            };
            if self.nconns.saturating_add(n) > self.max_conns {
                if self.nconns <= self.max_conns {
                    let max = self.max_conns;
                    self.error(
                        *arrow,
                        format!(
                            "configuration too large: this connection makes {n} connections, more than {max} in all (see --max-elements)"
                        ),
                    );
                }
                self.nconns = usize::MAX;
                return;
            }
            self.nconns += n;
            let pairs = match kind {
                ArrowKind::Single if ports(left) > 1 && ports(right) > 1 => {
                    // Click refuses it rather than connect every port on
                    // the left to every port on the right.
                    let (l, r) = (ports(left), ports(right));
                    self.error_click(
                        *arrow,
                        format!(
                            "'->' between {l} output ports and {r} input ports: \
                             connect many to many with '=>' (port by port)"
                        ),
                        "syntax error: many-to-many connections require '=>'",
                    );
                    continue;
                }
                ArrowKind::Single => {
                    let mut v = Vec::new();
                    for l in left {
                        for &lp in l.ports.as_deref().unwrap_or(&[0]) {
                            for r in right {
                                for &rp in r.ports.as_deref().unwrap_or(&[0]) {
                                    v.push((l, lp, r, rp));
                                }
                            }
                        }
                    }
                    v
                }
                ArrowKind::Multi => match self.multi_pairs(left, right, *arrow) {
                    Some(v) => v,
                    None => continue,
                },
            };
            for (l, lp, r, rp) in pairs {
                let span = self.span((l.range.0.min(arrow.0), r.range.1.max(arrow.1)));
                let (inp, outp, inside) = sb.io();
                let what = if sb.groups.is_empty() {
                    "a compound"
                } else {
                    "an element group"
                };
                if inside && r.elem == inp {
                    self.errs.push(Diagnostic::error(
                        Some(span),
                        format!(
                            "cannot connect to 'input': inside {what}, 'input' only has outputs"
                        ),
                    ));
                    continue;
                }
                if inside && l.elem == outp {
                    self.errs.push(Diagnostic::error(
                        Some(span),
                        format!(
                            "cannot connect from 'output': inside {what}, 'output' only has inputs"
                        ),
                    ));
                    continue;
                }
                sb.conns.push(IrConn {
                    from: l.elem,
                    from_port: lp,
                    to: r.elem,
                    to_port: rp,
                    span,
                });
            }
        }
    }

    /// Resolves an element group's statements in the enclosing scope:
    /// returns its input and output tunnels and how many input and output
    /// ports it has (one more than the highest used inside). A port used
    /// on one side only is an error, as are ports beyond the used ones.
    fn resolve_group(
        &mut self,
        sb: &mut ScopeBuilder,
        body: &[Stmt],
        range: Range,
    ) -> (usize, usize, usize, usize) {
        let span = self.span((range.0, range.0 + 1));
        let gin = sb.add_tunnel("input", span.clone());
        let gout = sb.add_tunnel("output", span.clone());
        let saved: Vec<(&str, Option<usize>)> = [("input", gin), ("output", gout)]
            .into_iter()
            .map(|(n, t)| (n, sb.names.insert(n.to_string(), t)))
            .collect();
        sb.groups.push((gin, gout));
        let first = sb.conns.len();
        for st in body {
            if let Stmt::Conn(c) = st {
                self.resolve_conn(sb, c);
            }
        }
        sb.groups.pop();
        for (n, old) in saved {
            match old {
                Some(i) => sb.names.insert(n.to_string(), i),
                None => sb.names.remove(n),
            };
        }
        let inside = &sb.conns[first..];
        let count = |ports: Vec<usize>| ports.iter().max().map_or(0, |m| m + 1);
        let nin = count(
            inside
                .iter()
                .filter(|c| c.from == gin)
                .map(|c| c.from_port)
                .collect(),
        );
        let nout = count(
            inside
                .iter()
                .filter(|c| c.to == gout)
                .map(|c| c.to_port)
                .collect(),
        );
        for (n, t, ports) in [
            (
                nin,
                gin,
                inside
                    .iter()
                    .filter(|c| c.from == gin)
                    .map(|c| c.from_port)
                    .collect::<Vec<_>>(),
            ),
            (
                nout,
                gout,
                inside
                    .iter()
                    .filter(|c| c.to == gout)
                    .map(|c| c.to_port)
                    .collect(),
            ),
        ] {
            if let Some(p) = (0..n).find(|p| !ports.contains(p)) {
                let side = if t == gin { "input" } else { "output" };
                self.errs.push(Diagnostic::error(
                    Some(span.clone()),
                    format!("element group {side} {p} is not used inside the group (its ports must be sequential)"),
                ));
            }
        }
        (gin, gout, nin, nout)
    }

    /// Pairs the ports of a `=>` connection.
    fn multi_pairs<'e>(
        &mut self,
        left: &'e [End],
        right: &'e [End],
        arrow: Range,
    ) -> Option<Vec<(&'e End, usize, &'e End, usize)>> {
        let expand = |side: &'e [End]| -> Vec<(&'e End, usize)> {
            side.iter()
                .flat_map(|e| {
                    e.ports
                        .clone()
                        .unwrap_or_else(|| vec![0])
                        .into_iter()
                        .map(move |p| (e, p))
                })
                .collect()
        };
        let auto = |side: &[End]| side.len() == 1 && side[0].ports.is_none();
        let mut l = expand(left);
        let mut r = expand(right);
        if auto(left) && !auto(right) {
            l = (0..r.len()).map(|p| (&left[0], p)).collect();
        } else if auto(right) && !auto(left) {
            r = (0..l.len()).map(|p| (&right[0], p)).collect();
        }
        if l.len() != r.len() {
            self.error_click(
                arrow,
                format!(
                    "'=>' connects {} output port{} to {} input port{}; the counts must match",
                    l.len(),
                    if l.len() == 1 { "" } else { "s" },
                    r.len(),
                    if r.len() == 1 { "" } else { "s" }
                ),
                format!(
                    "connection mismatch: {} outputs connected to {} inputs",
                    l.len(),
                    r.len()
                ),
            );
            return None;
        }
        Some(
            l.into_iter()
                .zip(r)
                .map(|((a, ap), (b, bp))| (a, ap, b, bp))
                .collect(),
        )
    }
}

/// Whether a name has a component of digits only (`12/0806`): no element
/// may be named so, and an anonymous element takes its class's name.
fn has_digit_component(name: &str) -> bool {
    name.split('/')
        .any(|c| c.bytes().all(|b| b.is_ascii_digit()))
}
