//! `require(library FILE)`: a configuration may pull in other files, most
//! often libraries of `elementclass` definitions. As in Click, FILE is
//! looked for in the requiring file's directory, then in each directory of
//! the CLICKPATH (`-C`/`--clickpath`, else the `CLICKPATH` environment
//! variable) and its `conf` subdirectory. The library's statements
//! (element classes, elements, connections) join the top level, before the
//! requiring file's own, so its classes are defined where they are used.
//! Each file is included once; errors in it are located in it.

use crate::args::{split_args, split_words, unquote};
use crate::lexer;
use crate::parser::{Parser, Stmt};
use crate::span::{Diagnostic, LineIndex};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How to find libraries.
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    /// Colon-separated directories (Click's CLICKPATH); `None`: the
    /// `CLICKPATH` environment variable.
    pub clickpath: Option<String>,
}

impl ParseOptions {
    fn path_dirs(&self) -> Vec<PathBuf> {
        let cp = match &self.clickpath {
            Some(c) => c.clone(),
            None => std::env::var("CLICKPATH").unwrap_or_default(),
        };
        cp.split(':')
            .filter(|d| !d.is_empty())
            .flat_map(|d| [PathBuf::from(d), Path::new(d).join("conf")])
            .collect()
    }
}

/// Where `file` is, looking in `dir` and then the CLICKPATH.
fn find(file: &str, dir: Option<&Path>, opts: &ParseOptions) -> Option<PathBuf> {
    let p = Path::new(file);
    if p.is_absolute() {
        return p.is_file().then(|| p.to_path_buf());
    }
    dir.map(Path::to_path_buf)
        .into_iter()
        .chain(opts.path_dirs())
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

/// Lexes and parses one file whose positions start at `base` in `idx`.
pub(crate) fn parse_file(
    idx: &LineIndex,
    base: usize,
    name: &str,
    text: &str,
    errs: &mut Vec<Diagnostic>,
) -> Vec<Stmt> {
    let mut toks = if base == 0 {
        lexer::lex(text, idx, errs)
    } else {
        let own = LineIndex::new(name, text);
        lexer::lex(text, &own, errs)
    };
    for t in &mut toks {
        t.start += base;
        t.end += base;
    }
    let mut p = Parser::new(&toks, idx);
    let stmts = p.parse_file();
    errs.append(&mut p.errs);
    stmts
}

/// Returns `stmts` preceded by the statements of the libraries they
/// require (recursively, each file once).
pub(crate) fn include(
    stmts: Vec<Stmt>,
    dir: Option<&Path>,
    idx: &mut LineIndex,
    opts: &ParseOptions,
    seen: &mut HashSet<PathBuf>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<Stmt> {
    let mut wanted = Vec::new();
    for s in &stmts {
        let Stmt::Require(cfg) = s else { continue };
        for arg in split_args(&cfg.text) {
            let words: Vec<String> = split_words(&arg).iter().map(|w| unquote(w)).collect();
            if words.first().map(String::as_str) != Some("library") {
                continue;
            }
            let span = idx.span(cfg.range.0, cfg.range.1);
            match words.as_slice() {
                [_, file] => wanted.push((file.clone(), span)),
                _ => errs.push(Diagnostic::error(
                    Some(span),
                    "require(library FILE) takes one file name",
                )),
            }
        }
    }
    let mut out = Vec::new();
    for (file, span) in wanted {
        let Some(path) = find(&file, dir, opts) else {
            errs.push(Diagnostic::error(
                Some(span),
                format!("library '{file}' not found in CLICKPATH/conf"),
            ));
            continue;
        };
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !seen.insert(key) {
            continue; // already included (or including: a cycle)
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                errs.push(Diagnostic::error(
                    Some(span),
                    format!("library '{}': {e}", path.display()),
                ));
                continue;
            }
        };
        let name = path.display().to_string();
        let base = idx.add_file(&name, &text);
        let lib = parse_file(idx, base, &name, &text, errs);
        out.extend(include(lib, path.parent(), idx, opts, seen, errs));
    }
    out.extend(stmts);
    out
}
