//! `require(library FILE)`: a configuration may pull in other files, most
//! often libraries of `elementclass` definitions. As in Click, FILE is
//! looked for in the requiring file's directory, then in each directory of
//! the CLICKPATH (`-C`/`--clickpath`, else the `CLICKPATH` environment
//! variable) and its `conf` subdirectory. The library's statements
//! (element classes, elements, connections) join the top level, before the
//! requiring file's own, so its classes are defined where they are used.
//! Each file is included once; errors in it are located in it.
//!
//! Two rules keep `require(library /etc/shadow)` from reading out a file
//! that is not a configuration. A library named otherwise than `*.click`
//! that does not parse is reported as one error at the `require`, with
//! the line and column of its first error but none of its text (its
//! statements are left out, so no later error quotes them either). And
//! what a configuration may read at all is its [`FilePolicy`]: any file
//! for the operator's configuration, only files under allowed directories
//! for one from a control socket (see [`crate::files`]).

use crate::args::{split_args, split_words, unquote};
use crate::files::FilePolicy;
use crate::lexer;
use crate::parser::{Parser, Stmt};
use crate::span::{Diagnostic, LineIndex};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How to find libraries, and the bounds on a configuration.
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// Colon-separated directories (Click's CLICKPATH); `None`: the
    /// `CLICKPATH` environment variable.
    pub clickpath: Option<String>,
    /// The most elements (compound instances included) compound expansion
    /// may make, and a quarter of the most connections (`--max-elements`).
    pub max_elements: usize,
    /// Which libraries may be read.
    pub files: FilePolicy,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            clickpath: None,
            max_elements: crate::expand::DEFAULT_MAX_ELEMENTS,
            files: FilePolicy::Any,
        }
    }
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

/// How deeply libraries may require libraries (a chain of files).
const MAX_LIBRARY_DEPTH: usize = 100;

/// Whether diagnostics may quote the text of library `path`: a file named
/// as configurations are (`*.click`).
fn quotable(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "click")
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
    depth: usize,
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
        if depth >= MAX_LIBRARY_DEPTH {
            // Inclusion recurses once per level.
            errs.push(Diagnostic::error(
                Some(span),
                format!(
                    "libraries require each other too deeply (at most {MAX_LIBRARY_DEPTH} levels)"
                ),
            ));
            continue;
        }
        let found = find(&file, dir, opts)
            .map(|p| opts.files.allowed(&p))
            .unwrap_or_else(|| Err(String::new()));
        let path = match found {
            Ok(p) => p,
            Err(_) if !opts.files.is_any() => {
                // Not found and not allowed read the same: the answer
                // tells nothing of files outside the allowed directories.
                errs.push(Diagnostic::error(
                    Some(span),
                    format!(
                        "library '{file}' not found in CLICKPATH/conf under the directories a configuration from a control socket may read (the operator allows more with -C DIR, or any file with --hotconfig-files any)"
                    ),
                ));
                continue;
            }
            Err(_) => {
                errs.push(Diagnostic::error(
                    Some(span),
                    format!("library '{file}' not found in CLICKPATH/conf"),
                ));
                continue;
            }
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
        let mut lib_errs = Vec::new();
        let lib = parse_file(idx, base, &name, &text, &mut lib_errs);
        if !lib_errs.is_empty() && !quotable(&path) {
            let first = lib_errs.iter().find_map(|d| d.span.as_ref());
            let at = first.map_or(String::new(), |s| {
                format!(", the first at line {}, column {}", s.line, s.col)
            });
            errs.push(
                Diagnostic::error(
                    Some(span),
                    format!(
                        "library '{name}' is not a configuration: {} error{}{at}",
                        lib_errs.len(),
                        if lib_errs.len() == 1 { "" } else { "s" }
                    ),
                )
                .with_note(
                    None,
                    "the text of a library not named *.click is never quoted in errors",
                ),
            );
            continue;
        }
        errs.append(&mut lib_errs);
        out.extend(include(
            lib,
            path.parent(),
            idx,
            opts,
            seen,
            errs,
            depth + 1,
        ));
    }
    out.extend(stmts);
    out
}
