#![allow(dead_code)]

use paraclick_lang::{parse_config, render, FlatGraph, Source, SourceSet};

pub const FILE: &str = "r.click";

pub fn try_parse_with(text: &str, defines: &[(&str, &str)]) -> Result<FlatGraph, Vec<String>> {
    let d: Vec<(String, String)> = defines
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    parse_config(&Source::new(FILE, text), &d)
        .map_err(|e| e.iter().map(|d| d.to_string()).collect())
}

pub fn parse_with(text: &str, defines: &[(&str, &str)]) -> FlatGraph {
    let d: Vec<(String, String)> = defines
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let src = Source::new(FILE, text);
    match parse_config(&src, &d) {
        Ok(g) => g,
        Err(errs) => {
            let mut set = SourceSet::new();
            set.add(src);
            panic!("unexpected errors:\n{}", render(&errs, &set));
        }
    }
}

pub fn parse(text: &str) -> FlatGraph {
    parse_with(text, &[])
}

/// Error messages as `file:line:col: message`.
pub fn errors(text: &str) -> Vec<String> {
    match try_parse_with(text, &[]) {
        Ok(_) => panic!("expected errors for {text:?}"),
        Err(e) => e,
    }
}

/// The only error of `text`.
pub fn error(text: &str) -> String {
    let e = errors(text);
    assert_eq!(e.len(), 1, "expected one error, got {e:#?}");
    e.into_iter().next().unwrap()
}

/// `(name, class, config)` of every element.
pub fn elems(g: &FlatGraph) -> Vec<(String, String, String)> {
    g.elements
        .iter()
        .map(|e| (e.name.clone(), e.class.clone(), e.config.clone()))
        .collect()
}

pub fn names(g: &FlatGraph) -> Vec<String> {
    g.elements.iter().map(|e| e.name.clone()).collect()
}

/// Connections as `a[0] -> [1]b`, sorted.
pub fn conns(g: &FlatGraph) -> Vec<String> {
    let mut v: Vec<String> = g
        .connections
        .iter()
        .map(|c| {
            format!(
                "{}[{}] -> [{}]{}",
                g.elements[c.from].name, c.from_port, c.to_port, g.elements[c.to].name
            )
        })
        .collect();
    v.sort();
    v
}

pub fn s(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    v.sort();
    v
}
