//! # IPRewriterPatterns
//!
//! IPRewriterPatterns(NAME PATTERN, ...)
//!
//! Names rewrite patterns for IPRewriter-like elements.
//!
//! Ports: none.
//!
//! Each argument is a name followed by a pattern `SADDR SPORT DADDR
//! DPORT` (fields as in IPRewriter's `pattern` specification: `-`,
//! values, source ranges and prefixes with `#` or `?` suffixes). A
//! rewriter's INPUTSPEC `NAME FOUTPUT ROUTPUT` then uses that pattern.
//! Rewriters sharing a pattern share its sequential allocation point.
//! The address rewriters use only its address fields.
//!
//! Example:
//!
//!     IPRewriterPatterns(to_world 192.0.2.1 1024-65535# - -);
//!     IPRewriter(to_world 0 1, drop)

use super::pattern::Pattern;
use paraclick_runtime::{ClassSpec, ConfigCx, Element};
use std::sync::Arc;

pub struct IPRewriterPatterns {
    patterns: Vec<(String, Arc<Pattern>)>,
}

impl IPRewriterPatterns {
    /// Every pattern, with its name.
    pub fn all(&self) -> Vec<(String, Arc<Pattern>)> {
        self.patterns.clone()
    }

    pub fn get(&self, name: &str) -> Option<Arc<Pattern>> {
        self.patterns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    }
}

impl Element for IPRewriterPatterns {}

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPRewriterPatterns", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPRewriterPatterns, String> {
    let texts = cx.args().rest_all();
    let mut patterns: Vec<(String, Arc<Pattern>)> = Vec::new();
    let mut errs = Vec::new();
    for t in &texts {
        let w: Vec<&str> = t.split_whitespace().collect();
        if !(3..=5).contains(&w.len()) {
            errs.push(format!("'{t}': expected NAME SADDR SPORT DADDR DPORT"));
            continue;
        }
        if patterns.iter().any(|(n, _)| n == w[0]) {
            errs.push(format!("pattern '{}' defined twice", w[0]));
            continue;
        }
        match Pattern::parse(&w[1..], cx.env) {
            Ok(p) => patterns.push((w[0].to_string(), Arc::new(p))),
            Err(e) => errs.push(format!("'{t}': {e}")),
        }
    }
    if !errs.is_empty() {
        return Err(errs.join("\n"));
    }
    Ok(IPRewriterPatterns { patterns })
}
