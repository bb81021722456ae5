//! The Script language: instruction parsing and `$` substitution with the
//! built-in expression handlers.

use paraclick_elements::control::script_lang::{
    builtin, expand, fmt_num, parse_num, quote, Env, Num, Program,
};
use paraclick_lang::args::unquote;

/// The input's lines are Script instructions. Checks that
///
/// - `Program::parse` accepts or rejects them without panicking;
/// - substitution of every line (variables, nested `$(...)` calls of the
///   built-in handlers) never panics and stays bounded;
/// - `quote` then `unquote` gives back each line;
/// - `$(add A B)`, `$(sub A B)`, `$(mul A B)` and the comparisons agree
///   with Rust's arithmetic for integers A and B taken from the input.
pub fn script(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<String> = text.lines().take(64).map(str::to_string).collect();
    let _ = Program::parse(&lines, false);
    let _ = Program::parse(&lines, true);
    let mut env = Builtins;
    for l in &lines {
        let mut errs = Vec::new();
        let out = expand(l, &mut env, &mut errs);
        // Substitution output grows at most linearly: sprintf pads a
        // conversion to at most 4096 characters (`%4096d`: 6 bytes in).
        assert!(
            out.len() <= l.len() * 1024 + 4096,
            "expansion of {l:?} is {} bytes",
            out.len()
        );
        assert_eq!(unquote(&quote(l)), *l, "quote/unquote of {l:?}");
    }
    if data.len() >= 16 {
        let a = i64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let b = i64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
        arithmetic(a, b);
    }
}

fn arithmetic(a: i64, b: i64) {
    let mut env = Builtins;
    let mut run = |e: String| {
        let mut errs = Vec::new();
        let v = expand(&e, &mut env, &mut errs);
        assert!(errs.is_empty(), "{e}: {errs:?}");
        v
    };
    let exact = |r: Option<i64>, f: f64| match r {
        Some(i) => fmt_num(Num::Int(i)),
        None => fmt_num(Num::Float(f)),
    };
    let (fa, fb) = (a as f64, b as f64);
    assert_eq!(
        run(format!("$(add {a} {b})")),
        exact(a.checked_add(b), fa + fb)
    );
    assert_eq!(
        run(format!("$(sub {a} {b})")),
        exact(a.checked_sub(b), fa - fb)
    );
    assert_eq!(
        run(format!("$(mul {a} {b})")),
        exact(a.checked_mul(b), fa * fb)
    );
    let tf = |x: bool| if x { "true" } else { "false" }.to_string();
    assert_eq!(run(format!("$(lt {a} {b})")), tf(a < b));
    assert_eq!(run(format!("$(eq {a} {b})")), tf(a == b));
    assert_eq!(run(format!("$(ge {a} {b})")), tf(a >= b));
    // Numbers print as they parse.
    assert_eq!(parse_num(&a.to_string()), Some(Num::Int(a)));
    // Nested calls: (a + b) - b gives a back when nothing overflows.
    if a.checked_add(b).is_some() {
        assert_eq!(run(format!("$(sub $(add {a} {b}) {b})")), a.to_string());
    }
}

/// Variables `a`, `b`, `x` and the built-in handlers, except those that
/// touch the outside world (`cat`, `catq`: files) or are not repeatable
/// (`random`, `now`).
struct Builtins;

impl Env for Builtins {
    fn var(&mut self, name: &str) -> Option<String> {
        match name {
            "a" => Some("5".into()),
            "b" => Some("-3".into()),
            "x" => Some("\"hello world\"".into()),
            _ => None,
        }
    }

    fn call(&mut self, text: &str) -> Result<String, String> {
        let (name, args) = match text.find(char::is_whitespace) {
            Some(i) => (&text[..i], &text[i..]),
            None => (text, ""),
        };
        if matches!(name, "cat" | "catq" | "random" | "now") {
            return Err(format!("{name}: not while fuzzing"));
        }
        builtin(name, args).unwrap_or_else(|| Err(format!("no handler '{name}'")))
    }
}
