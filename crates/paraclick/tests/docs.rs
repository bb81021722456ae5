//! The documentation names only files that exist: every repository path
//! that README.md and docs/*.md cite (`crates/...`, `scripts/...`,
//! `conf/...`, `docs/...`, `models/...`, `tests/...`, `fuzz/...`), in
//! backticks or in running text, must be a file or folder of the
//! repository, and every qualified Rust name they quote in backticks
//! (`Router::build`, `ring::MAX_CAPACITY`) must end in a name the
//! source defines or uses somewhere. Dated notes (docs/notes/) are records of their day and may
//! cite what has since moved; they are not scanned. Reads text only, runs
//! nothing.

mod common;

use common::root;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The documents scanned: README.md and docs/*.md (not docs/notes/).
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md")];
    let mut dir: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    dir.sort();
    docs.extend(dir);
    docs
}

const PREFIXES: &[&str] = &[
    "crates/", "scripts/", "conf/", "docs/", "models/", "tests/", "fuzz/",
];

/// Characters a cited path is made of.
fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | ':' | '*' | '<' | '>' | '$')
}

/// The repository paths a text cites, each with its line number: a word
/// that begins with one of [`PREFIXES`] (at the start of a word, not
/// inside another path or a URL), without a trailing `:LINE` or
/// `::item` and trailing punctuation. Patterns (`conf/*.click`,
/// `docs/notes/<topic>.md`, `$DIR/...`) and elisions (`crates/...`) are
/// not paths and are skipped.
fn cited_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let (at, _) = chars[i];
            let starts_word = i == 0 || !path_char(chars[i - 1].1);
            let prefixed = PREFIXES.iter().any(|p| line[at..].starts_with(p));
            if !(starts_word && prefixed) {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < chars.len() && path_char(chars[j].1) {
                j += 1;
            }
            let end = if j < chars.len() {
                chars[j].0
            } else {
                line.len()
            };
            let word = &line[at..end];
            i = j;
            // A URL's path (`https://host/docs/...`) is not ours.
            if at >= 2 && &line[at - 2..at] == "//" {
                continue;
            }
            if word.contains("...") {
                continue;
            }
            let mut path = word;
            if let Some(k) = path.find("::") {
                path = &path[..k];
            }
            if let Some(k) = path.find(':') {
                path = &path[..k];
            }
            let path = path.trim_end_matches(['.', ',', ';', ')', '-']);
            if path.contains(['*', '<', '>', '$']) || PREFIXES.contains(&path) {
                continue;
            }
            out.push((n + 1, path.to_string()));
        }
    }
    out
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = root();
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("readable document");
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (line, path) in cited_paths(&text) {
            seen += 1;
            if !root.join(&path).exists() {
                missing.push(format!("{name}:{line}: {path}"));
            }
        }
    }
    assert!(seen > 20, "the scan found only {seen} paths: is it broken?");
    assert!(
        missing.is_empty(),
        "the docs name paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_cited_path_is_read_whole_and_without_its_suffix() {
    let text = "see `crates/runtime/src/ring.rs:270` and crates/lang/src/check.rs::MAX_CHAIN, \
                (docs/MODEL.md). Not https://example.org/docs/x, conf/*.click, crates/... \
                nor xcrates/a.rs";
    let got: Vec<String> = cited_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        got,
        [
            "crates/runtime/src/ring.rs",
            "crates/lang/src/check.rs",
            "docs/MODEL.md"
        ]
    );
}

/// Every identifier in the workspace's Rust sources (`crates/**/*.rs`).
fn identifiers() -> HashSet<String> {
    fn walk(dir: &Path, out: &mut HashSet<String>) {
        for e in std::fs::read_dir(dir).expect("readable folder") {
            let p = e.expect("folder entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                    if !w.is_empty() {
                        out.insert(w.to_string());
                    }
                }
            }
        }
    }
    let mut out = HashSet::new();
    walk(&root().join("crates"), &mut out);
    out
}

/// The qualified names a text quotes in backticks (`A::b`, `a::B::c(x)`,
/// `PerThread<T>` is not one), each with its line: the last segment is
/// the name looked for.
fn quoted_names(text: &str) -> Vec<(usize, String, String)> {
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 0 || !span.contains("::") {
                continue;
            }
            // `Cx::push(...)`, `Ring::try_with_room(cap, ...)`: the path.
            let path = span.split(['(', '<', ' ']).next().unwrap_or("");
            let segs: Vec<&str> = path.split("::").collect();
            if segs.len() < 2 || !segs.iter().all(|s| ident(s)) {
                continue;
            }
            out.push((n + 1, span.to_string(), segs[segs.len() - 1].to_string()));
        }
    }
    out
}

#[test]
fn every_qualified_name_the_docs_quote_exists() {
    let root = root();
    let known = identifiers();
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("readable document");
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (line, span, last) in quoted_names(&text) {
            seen += 1;
            if !known.contains(&last) {
                missing.push(format!("{name}:{line}: `{span}`"));
            }
        }
    }
    assert!(seen > 20, "the scan found only {seen} names: is it broken?");
    assert!(
        missing.is_empty(),
        "the docs quote names the source does not have:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_quoted_name_is_its_last_segment() {
    let text = "`Router::build`, `Ring::try_with_room(cap, max)`, `a::B::c`, `PerThread<T>`, \
                `x :: Counter`, `-p 7777`";
    let got: Vec<String> = quoted_names(text).into_iter().map(|(_, _, n)| n).collect();
    assert_eq!(got, ["build", "try_with_room", "c"]);
}
