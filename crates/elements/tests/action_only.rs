//! `Element::action_only` promises that an element keeps the default
//! `push` and `pull`: the router then runs its action in the pusher's loop
//! and never calls its `push`. A false promise would silently bypass an
//! override, so this test reads every element's source and checks, for
//! every `impl Element for X` block, that
//! - a block declaring `action_only` overrides neither `push` nor `pull`;
//! - a block with an `action` and neither override declares it (so every
//!   per-packet element gets the fast path).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The `impl Element for X { ... }` blocks of a file: (X, body).
fn element_impls(src: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let pat = "impl Element for ";
    let mut from = 0;
    while let Some(k) = src[from..].find(pat) {
        let start = from + k + pat.len();
        let name: String = src[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let open = start + src[start..].find('{').expect("impl body");
        let mut depth = 0usize;
        let mut end = open;
        for (i, c) in src[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, src[open..end].to_string()));
        from = end;
    }
    out
}

#[test]
fn action_only_elements_keep_the_default_push_and_pull() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&root.join("elements/src"), &mut files);
    rust_files(&root.join("io/src"), &mut files);
    let mut declared = 0;
    let mut problems = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for (name, body) in element_impls(&src) {
            let overrides = body.contains("fn push(") || body.contains("fn pull(");
            let only = body.contains("fn action_only(");
            let action = body.contains("fn action(");
            if only && overrides {
                problems.push(format!(
                    "{}: {name} declares action_only but overrides push or pull",
                    f.display()
                ));
            }
            if action && !overrides && !only {
                problems.push(format!(
                    "{}: {name} is a per-packet element without action_only",
                    f.display()
                ));
            }
            declared += only as usize;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The scan found the elements (a moved directory must not pass quietly).
    assert!(declared >= 30, "only {declared} action_only elements found");
}
