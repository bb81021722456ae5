// Collects each element's documentation from the `//!` header of its own
// source file (sections start with `//! # ClassName`), so `paraclick doc`
// prints exactly what the source file begins with. One change: a `\[`
// becomes `[`. The header is also rustdoc Markdown, where a synopsis such
// as `Queue([CAPACITY])` would read as a link to an item `CAPACITY`; the
// source escapes such brackets for rustdoc, and the terminal shows them
// plain.

use std::fs;
use std::path::Path;

fn visit(dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            visit(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            println!("cargo:rerun-if-changed={}", p.display());
            let text = fs::read_to_string(&p).unwrap();
            let mut cur: Option<(String, String)> = None;
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("//!") else {
                    break;
                };
                let rest = rest.strip_prefix(' ').unwrap_or(rest).replace("\\[", "[");
                let rest = rest.as_str();
                if let Some(name) = rest.strip_prefix("# ") {
                    if let Some(c) = cur.take() {
                        out.push(c);
                    }
                    cur = Some((name.trim().to_string(), String::new()));
                } else if let Some((_, body)) = cur.as_mut() {
                    body.push_str(rest);
                    body.push('\n');
                }
            }
            if let Some(c) = cur.take() {
                out.push(c);
            }
        }
    }
}

// The texts (about 300 kB) are only read by `paraclick doc` and the web
// view, yet as ordinary string constants they sat among the constants
// every run reads, and the kernel maps a binary's pages 64 KiB around
// each fault: every run kept most of them resident (docs/PERFORMANCE.md,
// "Memory"). So each text is a byte array in a section of its own,
// `paraclick_docs`, which the linker keeps apart from `.rodata`.
pub fn main() {
    let mut docs = Vec::new();
    visit(Path::new("src"), &mut docs);
    let mut code = String::from(
        "const fn bytes<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = b[i];
        i += 1;
    }
    out
}
const fn text(b: &'static [u8]) -> &'static str {
    match core::str::from_utf8(b) {
        Ok(s) => s,
        Err(_) => panic!(\"documentation is UTF-8\"),
    }
}
",
    );
    let mut table = String::from("/// (class name, documentation) from each element's source file.\npub static DOCS: &[(&str, &str)] = &[\n");
    for (i, (name, body)) in docs.iter().enumerate() {
        let body = body.trim();
        code.push_str(&format!(
            "#[cfg_attr(target_os = \"linux\", link_section = \"paraclick_docs\")]\n\
             static DOC_{i}: [u8; {}] = bytes({body:?});\n",
            body.len()
        ));
        table.push_str(&format!("    ({name:?}, text(&DOC_{i})),\n"));
    }
    table.push_str("];\n");
    code.push_str(&table);
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("docs.rs");
    fs::write(out, code).unwrap();
    println!("cargo:rerun-if-changed=src");
}
