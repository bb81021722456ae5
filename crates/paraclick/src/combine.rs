//! `paraclick combine` and `paraclick uncombine`: several routers as one
//! configuration and back, as Click's click-combine(1) and
//! click-uncombine(1) describe them.
//!
//! The combined configuration has each component router's elements,
//! flattened, under its name (`A/x` for element `x` of component `A`),
//! and one `RouterLink` element per link, which replaces the element a
//! link leaves by (a ToDevice) and the one it arrives at (a FromDevice):
//!
//! ```text
//! link1 :: RouterLink(A/y, ToDevice, eth1, B/x, FromDevice, eth0);
//! ```
//!
//! Its arguments are the two elements' names, classes and configurations
//! (quoted when they are not one plain word), so that uncombining puts
//! them back: `A/y`'s input connections are the link's inputs, `B/x`'s
//! output connections its outputs (port numbers kept). A link names its
//! elements by name, or by device: the first argument of an element of a
//! device class (`Kind::Device` in the class spec) with inputs, on the
//! sending side, or with outputs, on the receiving side.

use paraclick_lang::args::{quote, split_args, unquote};
use paraclick_lang::{parse_config_with, FlatConnection, FlatElement, FlatGraph, ParseOptions};
use paraclick_lang::{Diagnostic, Source};
use paraclick_runtime::{Kind, Registry};
use std::process::ExitCode;

/// The class of the elements that stand for links.
pub const ROUTER_LINK: &str = "RouterLink";

/// One link: packets leaving component `from.0` by element (or device)
/// `from.1` arrive at component `to.0`'s element (or device) `to.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub from: (String, String),
    pub to: (String, String),
}

impl Link {
    /// Parses `A.e1=B.e2`.
    pub fn parse(s: &str) -> Result<Link, String> {
        let bad = || format!("bad link '{s}' (expected COMPONENT.ELEMENT=COMPONENT.ELEMENT)");
        let (a, b) = s.split_once('=').ok_or_else(bad)?;
        let side = |x: &str| {
            x.split_once('.')
                .filter(|(c, e)| !c.is_empty() && !e.is_empty())
                .map(|(c, e)| (c.to_string(), e.to_string()))
                .ok_or_else(bad)
        };
        Ok(Link {
            from: side(a)?,
            to: side(b)?,
        })
    }
}

/// A component name: a Click identifier without a slash.
fn valid_name(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '@')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@".contains(c))
}

/// Combines the flattened `routers` (name, graph) along `links` into one
/// configuration (see the module's documentation).
pub fn combine(
    routers: &[(String, FlatGraph)],
    links: &[Link],
    reg: &Registry,
) -> Result<FlatGraph, String> {
    let mut out = FlatGraph {
        elements: Vec::new(),
        connections: Vec::new(),
        requirements: Vec::new(),
    };
    for (i, (name, _)) in routers.iter().enumerate() {
        if !valid_name(name) {
            return Err(format!(
                "bad component name '{name}' (an identifier without '/')"
            ));
        }
        if routers[..i].iter().any(|(n, _)| n == name) {
            return Err(format!("component '{name}' given twice"));
        }
    }
    // Where each component's elements start in `out`.
    let mut base = Vec::new();
    for (name, g) in routers {
        base.push(out.elements.len());
        for e in &g.elements {
            out.elements.push(FlatElement {
                name: format!("{name}/{}", e.name),
                ..e.clone()
            });
        }
        for c in &g.connections {
            let b = *base.last().expect("pushed");
            out.connections.push(FlatConnection {
                from: c.from + b,
                to: c.to + b,
                ..c.clone()
            });
        }
        for r in &g.requirements {
            if !out.requirements.contains(r) {
                out.requirements.push(r.clone());
            }
        }
    }
    let find = |(comp, what): &(String, String), sending: bool| -> Result<usize, String> {
        let k = routers
            .iter()
            .position(|(n, _)| n == comp)
            .ok_or_else(|| format!("link names no component '{comp}'"))?;
        let g = &routers[k].1;
        if let Some(i) = g.find(what) {
            return Ok(base[k] + i);
        }
        let device = |i: usize| {
            let e = &g.elements[i];
            let is_device = reg.get(&e.class).is_some_and(|c| c.kind == Kind::Device);
            let arg = split_args(&e.config).first().map(|a| unquote(a));
            let side = g.connections.iter().any(|c| match sending {
                true => c.to == i,
                false => c.from == i,
            });
            is_device && side && arg.as_deref() == Some(what.as_str())
        };
        match (0..g.elements.len())
            .filter(|&i| device(i))
            .collect::<Vec<_>>()[..]
        {
            [i] => Ok(base[k] + i),
            [] => Err(format!(
                "component '{comp}' has no element or device '{what}'"
            )),
            _ => Err(format!(
                "component '{comp}' has several elements for device '{what}'"
            )),
        }
    };
    // The links' ends, and a RouterLink element for each.
    let mut ends = Vec::new();
    for (n, l) in links.iter().enumerate() {
        let (s, d) = (find(&l.from, true)?, find(&l.to, false)?);
        ends.push((s, d, out.elements.len() + n));
    }
    let mut linked = vec![false; out.elements.len()];
    for &(s, d, _) in &ends {
        linked[s] = true;
        linked[d] = true;
    }
    for (n, &(s, d, _)) in ends.iter().enumerate() {
        let (se, de) = (&out.elements[s], &out.elements[d]);
        let config = [
            se.name.clone(),
            se.class.clone(),
            quote(&se.config),
            de.name.clone(),
            de.class.clone(),
            quote(&de.config),
        ]
        .join(", ");
        let span = se.span.clone();
        out.elements.push(FlatElement {
            name: format!("link{}", n + 1),
            class: ROUTER_LINK.to_string(),
            config,
            span,
            anonymous: false,
        });
    }
    let mut conns = Vec::new();
    for c in &out.connections {
        if linked[c.from] && ends.iter().any(|&(s, _, _)| s == c.from) {
            return Err(format!(
                "'{}' leaves by a link and cannot have output connections",
                out.elements[c.from].name
            ));
        }
        if linked[c.to] && ends.iter().any(|&(_, d, _)| d == c.to) {
            return Err(format!(
                "'{}' is where a link arrives and cannot have input connections",
                out.elements[c.to].name
            ));
        }
        let froms: Vec<usize> = match linked[c.from] {
            true => ends.iter().filter(|e| e.1 == c.from).map(|e| e.2).collect(),
            false => vec![c.from],
        };
        let tos: Vec<usize> = match linked[c.to] {
            true => ends.iter().filter(|e| e.0 == c.to).map(|e| e.2).collect(),
            false => vec![c.to],
        };
        for &from in &froms {
            for &to in &tos {
                conns.push(FlatConnection {
                    from,
                    to,
                    ..c.clone()
                });
            }
        }
    }
    // Drop the linked elements, renumbering the rest.
    let mut index = vec![usize::MAX; out.elements.len()];
    let mut elements = Vec::new();
    for (i, e) in out.elements.into_iter().enumerate() {
        if !linked.get(i).copied().unwrap_or(false) {
            index[i] = elements.len();
            elements.push(e);
        }
    }
    out.elements = elements;
    out.connections = conns
        .into_iter()
        .map(|c| FlatConnection {
            from: index[c.from],
            to: index[c.to],
            ..c
        })
        .collect();
    Ok(out)
}

/// The component `name` of a combined configuration: its elements (the
/// `name/` prefix removed), then the elements its links replaced, with
/// their connections.
pub fn uncombine(g: &FlatGraph, name: &str) -> Result<FlatGraph, String> {
    let prefix = format!("{name}/");
    let mut out = FlatGraph {
        elements: Vec::new(),
        connections: Vec::new(),
        requirements: g.requirements.clone(),
    };
    // Old index -> new index, for the component's own elements.
    let mut index = vec![None; g.elements.len()];
    for (i, e) in g.elements.iter().enumerate() {
        if let Some(rest) = e.name.strip_prefix(&prefix) {
            if e.class != ROUTER_LINK {
                index[i] = Some(out.elements.len());
                out.elements.push(FlatElement {
                    name: rest.to_string(),
                    ..e.clone()
                });
            }
        }
    }
    // Links: (element index, the new index of its sending end in this
    // component, of its receiving end).
    let mut links: Vec<(usize, Option<usize>, Option<usize>)> = Vec::new();
    for (i, e) in g.elements.iter().enumerate() {
        if e.class != ROUTER_LINK {
            continue;
        }
        let a: Vec<String> = split_args(&e.config);
        if a.len() != 6 {
            return Err(format!(
                "{}: {ROUTER_LINK} needs 6 arguments (names, classes and configurations of its two ends)",
                e.name
            ));
        }
        let mut end = |k: usize| -> Option<usize> {
            let rest = a[k].strip_prefix(&prefix)?;
            let pos = out.elements.iter().position(|x| x.name == rest);
            Some(pos.unwrap_or_else(|| {
                out.elements.push(FlatElement {
                    name: rest.to_string(),
                    class: a[k + 1].clone(),
                    config: unquote(&a[k + 2]),
                    span: e.span.clone(),
                    anonymous: false,
                });
                out.elements.len() - 1
            }))
        };
        let (s, d) = (end(0), end(3));
        links.push((i, s, d));
    }
    if out.elements.is_empty() {
        return Err(format!("no component '{name}'"));
    }
    for c in &g.connections {
        let from = index[c.from].or_else(|| links.iter().find(|l| l.0 == c.from).and_then(|l| l.2));
        let to = index[c.to].or_else(|| links.iter().find(|l| l.0 == c.to).and_then(|l| l.1));
        if let (Some(from), Some(to)) = (from, to) {
            let c = FlatConnection {
                from,
                to,
                ..c.clone()
            };
            if !out.connections.contains(&c) {
                out.connections.push(c);
            }
        }
    }
    Ok(out)
}

/// Reads FILE ("-": standard input) as a configuration source.
fn read_source(file: &str) -> Result<Source, String> {
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("standard input: {e}"))?
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?
    };
    let name = if file == "-" { "<stdin>" } else { file };
    Ok(Source::new(name, text))
}

fn parse(src: &Source) -> Result<FlatGraph, ExitCode> {
    parse_config_with(src, &[], &ParseOptions::default())
        .map_err(|d: Vec<Diagnostic>| crate::report_errors(src, &d))
}

const COMBINE_USAGE: &str = "usage: paraclick combine [-o FILE] [-c] \
    NAME=FILE ... | -n NAME (-f FILE | -e EXPR) ... \
    [-l] COMPONENT.ELEMENT=COMPONENT.ELEMENT ...";

/// `paraclick combine ARGS` (Click's click-combine options).
pub(crate) fn main_combine(a: &crate::CombineArgs) -> ExitCode {
    let mut routers: Vec<(String, FlatGraph)> = Vec::new();
    let mut links = Vec::new();
    let mut output = "-".to_string();
    let mut name: Option<String> = None;
    let mut it = a.args.iter();
    let add = |routers: &mut Vec<(String, FlatGraph)>, n: String, src: Source| {
        parse(&src).map(|g| routers.push((n, g)))
    };
    while let Some(arg) = it.next() {
        let (opt, inline) = match arg.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, ExitCode> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| crate::fail(&format!("{what} needs a value\n{COMBINE_USAGE}")))
        };
        let r = match opt {
            "--help" | "-h" => {
                println!("{COMBINE_USAGE}");
                return ExitCode::SUCCESS;
            }
            "-c" | "--config" => Ok(()),
            "-o" | "--output" => value(opt).map(|v| output = v),
            "-n" | "--name" => value(opt).map(|v| name = Some(v)),
            "-l" | "--link" => match value(opt) {
                Ok(v) => Link::parse(&v)
                    .map(|l| links.push(l))
                    .map_err(|e| crate::fail(&e)),
                Err(e) => Err(e),
            },
            "-f" | "--file" | "-e" | "--expression" => {
                let v = match value(opt) {
                    Ok(v) => v,
                    Err(e) => return e,
                };
                let Some(n) = name.take() else {
                    return crate::fail(&format!(
                        "{opt} without a component name (-n NAME) before it"
                    ));
                };
                let src = if matches!(opt, "-e" | "--expression") {
                    Ok(Source::new("config", v))
                } else {
                    read_source(&v)
                };
                match src {
                    Ok(s) => add(&mut routers, n, s),
                    Err(e) => Err(crate::fail(&e)),
                }
            }
            o if o.starts_with('-') && o != "-" => Err(crate::fail(&format!(
                "unknown option '{o}'\n{COMBINE_USAGE}"
            ))),
            _ => match arg.split_once('=') {
                Some((l, _)) if l.contains('.') => Link::parse(arg)
                    .map(|l| links.push(l))
                    .map_err(|e| crate::fail(&e)),
                Some((n, f)) => match read_source(f) {
                    Ok(s) => add(&mut routers, n.to_string(), s),
                    Err(e) => Err(crate::fail(&e)),
                },
                None => Err(crate::fail(&format!(
                    "unexpected argument '{arg}'\n{COMBINE_USAGE}"
                ))),
            },
        };
        if let Err(code) = r {
            return code;
        }
    }
    if let Some(n) = name {
        return crate::fail(&format!("-n {n}: no -f FILE or -e EXPR after it"));
    }
    if routers.is_empty() {
        return crate::fail(&format!("no router components\n{COMBINE_USAGE}"));
    }
    match combine(&routers, &links, &crate::registry()) {
        Ok(g) => crate::write_output(&output, &paraclick_lang::print_click(&g)),
        Err(e) => crate::fail(&e),
    }
}

/// `paraclick uncombine [FILE [COMPONENT]]` (Click's click-uncombine).
pub(crate) fn main_uncombine(a: &crate::UncombineArgs) -> ExitCode {
    let mut file = a.file.clone();
    let mut name = a.name.clone();
    for arg in &a.args {
        if file.is_none() {
            file = Some(arg.clone());
        } else if name.is_none() {
            name = Some(arg.clone());
        } else {
            return crate::fail(&format!("unexpected argument '{arg}'"));
        }
    }
    let Some(name) = name else {
        return crate::fail("which component? (uncombine FILE COMPONENT, or -n COMPONENT)");
    };
    let src = match read_source(file.as_deref().unwrap_or("-")) {
        Ok(s) => s,
        Err(e) => return crate::fail(&e),
    };
    let g = match parse(&src) {
        Ok(g) => g,
        Err(code) => return code,
    };
    match uncombine(&g, &name) {
        Ok(g) => crate::write_output(&a.output, &paraclick_lang::print_click(&g)),
        Err(e) => crate::fail(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_lang::{parse_config, print_click};

    fn flat(text: &str) -> FlatGraph {
        parse_config(&Source::new("t", text), &[]).expect("parses")
    }

    fn ab() -> Vec<(String, FlatGraph)> {
        vec![
            ("A".into(), flat("x::ThisIsA -> y::ToDevice(eth1)")),
            ("B".into(), flat("x::FromDevice(eth0) -> y::ThisIsB")),
        ]
    }

    #[test]
    fn links_by_device_name() {
        let reg = paraclick_io::full_registry();
        let l = Link::parse("A.eth1=B.eth0").unwrap();
        let c = combine(&ab(), &[l], &reg).unwrap();
        assert_eq!(
            print_click(&c),
            "link1 :: RouterLink(A/y, ToDevice, eth1, B/x, FromDevice, eth0);\n\
             A/x :: ThisIsA;\nB/y :: ThisIsB;\n\n\
             A/x -> link1\n    -> B/y;\n"
        );
    }

    #[test]
    fn uncombine_gives_each_component_back() {
        // Click's tools/combine-01.
        let reg = paraclick_io::full_registry();
        let l = Link::parse("A.y=B.eth0").unwrap();
        let text = print_click(&combine(&ab(), &[l], &reg).unwrap());
        let c = flat(&text);
        assert_eq!(
            print_click(&uncombine(&c, "A").unwrap()),
            "x :: ThisIsA;\ny :: ToDevice(eth1);\n\nx -> y;\n"
        );
        assert_eq!(
            print_click(&uncombine(&c, "B").unwrap()),
            "y :: ThisIsB;\nx :: FromDevice(eth0);\n\nx -> y;\n"
        );
        assert_eq!(uncombine(&c, "C").unwrap_err(), "no component 'C'");
    }

    #[test]
    fn configurations_with_commas_survive() {
        let reg = paraclick_io::full_registry();
        let routers = vec![
            ("A".into(), flat("Idle -> t :: ToDump(\"a b\", SNAPLEN 20)")),
            ("B".into(), flat("f :: FromDump(x, STOP true) -> Discard")),
        ];
        let l = Link::parse("A.t=B.f").unwrap();
        let c = flat(&print_click(&combine(&routers, &[l], &reg).unwrap()));
        let a = print_click(&uncombine(&c, "A").unwrap());
        assert!(a.contains("t :: ToDump(\"a b\", SNAPLEN 20);"), "{a}");
        let b = print_click(&uncombine(&c, "B").unwrap());
        assert!(b.contains("f :: FromDump(x, STOP true);"), "{b}");
    }

    #[test]
    fn bad_links_and_names_are_errors() {
        let reg = paraclick_io::full_registry();
        assert!(Link::parse("A.x").is_err());
        assert!(Link::parse("A=B.y").is_err());
        let l = Link::parse("A.eth9=B.eth0").unwrap();
        assert_eq!(
            combine(&ab(), &[l], &reg).unwrap_err(),
            "component 'A' has no element or device 'eth9'"
        );
        let l = Link::parse("C.eth1=B.eth0").unwrap();
        assert_eq!(
            combine(&ab(), &[l], &reg).unwrap_err(),
            "link names no component 'C'"
        );
        let mut r = ab();
        r[1].0 = "A/B".into();
        assert!(combine(&r, &[], &reg).is_err());
    }
}
