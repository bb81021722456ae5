//! `paraclick xform`: Click's pattern optimizer, click-xform. Reads the
//! pattern files (`-p FILE`, or files after the configuration's) and the
//! configuration, applies `paraclick_lang::xform` and writes the result
//! flattened. The matching and replacing are in the language crate; this
//! is the command line.

use crate::XformArgs;
use crate::{click_errors, fail, load, report_click, report_errors, write_output, Input};
use paraclick_lang::{parse_config_with, print_click_listed, xform, Source};
use std::process::ExitCode;

/// Replacements made before giving up: patterns that undo each other
/// (click-xform(1)'s Evil1 and Evil2) would otherwise never finish.
const MAX_REPLACEMENTS: usize = 100_000;

pub(crate) fn run(a: &XformArgs) -> ExitCode {
    let click = match click_errors(&a.out.errors) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    // As click-xform: [NAME=VALUE ...] [ROUTER-FILE [PATTERN-FILE ...]],
    // every file a pattern file when -f or -e names the configuration.
    let mut defines = Vec::new();
    let mut files = Vec::new();
    for s in &a.input.args {
        let is_define = s.split_once('=').is_some_and(|(k, _)| {
            let k = k.trim_start_matches('$');
            !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        if is_define {
            defines.push(s.clone());
        } else {
            files.push(s.clone());
        }
    }
    let mut patterns = a.patterns.clone();
    if a.input.file.is_none() && a.input.expr.is_none() && !files.is_empty() {
        defines.push(files.remove(0));
    }
    patterns.extend(files);
    if patterns.is_empty() {
        return fail("xform: no pattern files (give -p FILE)");
    }
    let input = Input {
        file: a.input.file.clone(),
        expr: a.input.expr.clone(),
        clickpath: a.input.clickpath.clone(),
        max_elements: a.input.max_elements,
        args: defines,
    };
    let opts = input.parse_options();
    let mut all = Vec::new();
    for f in &patterns {
        let text = if f == "-" {
            let mut t = String::new();
            if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut t) {
                return fail(&format!("<stdin>: {e}"));
            }
            t
        } else {
            match std::fs::read_to_string(f) {
                Ok(t) => t,
                Err(e) => return fail(&format!("{f}: {e}")),
            }
        };
        let src = Source::new(f, &text);
        match xform::read_patterns(&src, &opts) {
            Ok(ps) => all.extend(ps),
            Err(d) if click => return report_click(&d, false),
            Err(d) => return report_errors(&src, &d),
        }
    }
    if a.reverse {
        all = all.iter().map(xform::Pattern::reversed).collect();
    }
    let (src, defs) = match load(&input) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let g = match parse_config_with(&src, &defs, &opts) {
        Ok(g) => g,
        Err(d) if click => return report_click(&d, false),
        Err(d) => return report_errors(&src, &d),
    };
    match xform::transform(&g, &all, MAX_REPLACEMENTS) {
        Ok(out) => write_output(&a.out.output, &print_click_listed(&out)),
        Err(e) => fail(&format!("xform: {e}")),
    }
}
