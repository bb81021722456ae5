//! Parses a Click configuration and prints the flat graph, or the errors.
//!
//! `cargo run -p paraclick-lang --example flatten -- FILE [NAME=value...]`
//! (`-` reads standard input; `--dot` prints Graphviz instead.)

use std::io::Read;

use paraclick_lang::{dot::to_dot, parse_config, render, Source, SourceSet};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let want_dot = args.iter().any(|a| a == "--dot");
    args.retain(|a| a != "--dot");
    let Some(path) = args.first().cloned() else {
        eprintln!("usage: flatten [--dot] FILE [NAME=value...]");
        std::process::exit(2);
    };
    let text = if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).expect("read stdin");
        s
    } else {
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            eprintln!("paraclick: {path}: {e}");
            std::process::exit(1);
        })
    };
    let defines: Vec<(String, String)> = args[1..]
        .iter()
        .filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let src = Source::new(if path == "-" { "<stdin>" } else { &path }, text);
    match parse_config(&src, &defines) {
        Ok(g) if want_dot => print!("{}", to_dot(&g, None)),
        Ok(g) => {
            for e in &g.elements {
                println!("{} :: {}({});", e.name, e.class, e.config);
            }
            for c in &g.connections {
                println!(
                    "{} [{}] -> [{}] {};",
                    g.elements[c.from].name, c.from_port, c.to_port, g.elements[c.to].name
                );
            }
        }
        Err(errs) => {
            let mut set = SourceSet::new();
            set.add(src);
            eprint!("{}", render(&errs, &set));
            std::process::exit(1);
        }
    }
}
