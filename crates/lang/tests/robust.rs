//! No input makes the front end panic: token soup and byte soup.

use paraclick_lang::{check_graph, parse_config, ClassSpec, Source};

const PIECES: &[&str] = &[
    "a",
    "b",
    "c",
    "X",
    "Queue",
    "input",
    "output",
    "->",
    "=>",
    "::",
    ";",
    ",",
    "(",
    ")",
    "[",
    "]",
    "[1]",
    "[0,1]",
    "{",
    "}",
    "|",
    "||",
    "...",
    "$a",
    "${a}",
    "${b-1}",
    "elementclass",
    "define",
    "require",
    "provide",
    "E",
    "\"",
    "'",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "0",
    "7",
    "KW",
    "__REST__",
    "\\",
    "#",
    "é",
    "x/y",
    "@",
    "(1, 2)",
    "($a)",
    "{ $a |",
    "input ->",
    "-> output",
    "elementclass E {",
    "define($a 1)",
];

fn spec(c: &str) -> Option<ClassSpec> {
    match c {
        "X" => Some(ClassSpec::new("-/=", "a")),
        "Queue" => Some(ClassSpec::new("1/1", "h/l")),
        "a" => Some(ClassSpec::new("1-/1-", "l/h")),
        _ => None,
    }
}

fn run(text: &str) {
    let src = Source::new("fuzz", text);
    if let Ok(g) = parse_config(&src, &[("b".into(), "2".into())]) {
        let _ = check_graph(&g, &spec, &["X", "Queue", "a"]);
        let _ = paraclick_lang::dot::to_dot(&g, None);
    }
    for arg in paraclick_lang::args::split_args(text) {
        let _ = paraclick_lang::args::split_keyword(&arg);
        let _ = paraclick_lang::args::unquote_bytes(&arg);
        let _ = paraclick_lang::args::split_words(&arg);
    }
}

#[test]
fn token_soup() {
    // Seeded: every run sees the same cases.
    let mut rng = fastrand::Rng::with_seed(0x9e3779b97f4a7c15);
    for _ in 0..3000 {
        let n = rng.usize(..40);
        let text: Vec<&str> = (0..n).map(|_| PIECES[rng.usize(..PIECES.len())]).collect();
        run(&text.join(" "));
        run(&text.concat());
    }
}

#[test]
fn byte_soup() {
    let mut rng = fastrand::Rng::with_seed(12345);
    let alphabet: Vec<char> = "ab{}[]()<>-=:;,|$\"'\\/*#. \n\t0123456789Xé@"
        .chars()
        .collect();
    for _ in 0..3000 {
        let n = rng.usize(..60);
        let text: String = (0..n)
            .map(|_| alphabet[rng.usize(..alphabet.len())])
            .collect();
        run(&text);
    }
}
