//! Structure-aware configurations: declarations of real classes with
//! plausible arguments, connections with ports, compounds with formals,
//! defines, built from the grammar so that parsing gets past the lexer.

use arbitrary::{Result, Unstructured};
use std::fmt::Write;
use std::sync::OnceLock;

/// A configuration built from the grammar out of `data`, checked as
/// [`crate::config`] checks text.
pub fn config_structured(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let text = generate(&mut u).unwrap_or_else(|_| String::new());
    crate::config::check_text(&text);
}

/// Argument words that configurations use, right and wrong.
const WORDS: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "14",
    "65535",
    "4294967296",
    "18446744073709551616",
    "18446744073709551615",
    "9223372036854775808",
    "10000000000",
    "4294967295",
    "99999999999999999999999999",
    "1e19",
    "0x7fffffff",
    "1.5",
    "1e300",
    "10.0.0.1",
    "10.0.0.0/8",
    "0.0.0.0/0",
    "255.255.255.255",
    "10.0.0.1/33",
    "00:01:02:03:04:05",
    "ff:ff:ff:ff:ff:ff",
    "true",
    "false",
    "-",
    "x",
    "\"quoted, string\"",
    "'single'",
    "\\<0800 4500>",
    "1s",
    "10ms",
    "0.5",
    "LIMIT 5",
    "LIMIT -1",
    "BURST 1",
    "BURST 0",
    "CAPACITY 1",
    "RATE 10",
    "ACTIVE false",
    "STOP true",
    "tcp",
    "udp port 53",
    "src host 10.0.0.1",
    "icmp type echo",
    "12/0800",
    "allow all",
    "deny tcp",
    "10.0.0.0/8 0",
    "0/0 10.0.0.1 1",
    "write x.count 0",
    "wait 1",
    "set a $(add 1 2)",
];

/// `Class(config)` examples: the packet elements' robustness
/// configurations and every `Class(...)` the class documentation shows.
fn examples() -> &'static [String] {
    static EX: OnceLock<Vec<String>> = OnceLock::new();
    EX.get_or_init(|| {
        let reg = crate::registry();
        let mut v: Vec<String> = paraclick_elements::robust::PACKET_ELEMENTS
            .iter()
            .map(|(d, _, _)| d.to_string())
            .collect();
        for name in reg.names() {
            v.push(name.to_string());
            let doc = reg.doc(name).unwrap_or("");
            for line in doc.lines() {
                let mut rest = line;
                while let Some(at) = rest.find(&format!("{name}(")) {
                    let start = &rest[at..];
                    let open = name.len();
                    let mut depth = 0;
                    let mut end = None;
                    for (i, c) in start.char_indices().skip(open) {
                        match c {
                            '(' => depth += 1,
                            ')' => {
                                depth -= 1;
                                if depth == 0 {
                                    end = Some(i);
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    let Some(end) = end else { break };
                    let ex = &start[..=end];
                    // Files are read even when checking: never name one.
                    let reads_file = name.starts_with("From") && name.contains("Dump");
                    if !ex.contains("...") && !ex.contains('[') && !reads_file {
                        v.push(ex.to_string());
                    }
                    rest = &start[end..];
                }
            }
        }
        v.push("FromDump(/nonexistent/f.pcap)".into());
        v.push("FromIPSummaryDump(/nonexistent/f.txt, ALLOW_NONEXISTENT true)".into());
        v.sort();
        v.dedup();
        v
    })
}

fn word(u: &mut Unstructured<'_>, defines: usize) -> Result<String> {
    if defines > 0 && u.ratio(1, 6)? {
        return Ok(format!("$d{}", u.choose_index(defines)?));
    }
    Ok(u.choose(WORDS)?.to_string())
}

fn args(u: &mut Unstructured<'_>, defines: usize, formals: &[String]) -> Result<String> {
    let n = u.int_in_range(0..=3)?;
    let mut v = Vec::new();
    for _ in 0..n {
        if !formals.is_empty() && u.ratio(1, 3)? {
            v.push(u.choose(formals)?.clone());
        } else {
            v.push(word(u, defines)?);
        }
    }
    Ok(v.join(", "))
}

/// A class with its configuration: an example (maybe with an argument
/// replaced or added), a compound, or a class with generated arguments.
fn decl(
    u: &mut Unstructured<'_>,
    defines: usize,
    compounds: &[(String, usize)],
    formals: &[String],
) -> Result<String> {
    let ex = examples();
    match u.int_in_range(0..=9)? {
        0..=5 => {
            let e = u.choose(ex)?.clone();
            if u.ratio(1, 6)? {
                return Ok(huge_numbers(&e, u.choose(HUGE)?));
            }
            if u.ratio(1, 4)? {
                // Replace the arguments, keep the class.
                let class = e.split('(').next().unwrap_or("Null");
                return Ok(format!("{class}({})", args(u, defines, formals)?));
            }
            if u.ratio(1, 5)? && e.ends_with(')') {
                let extra = word(u, defines)?;
                return Ok(format!("{}, {extra})", &e[..e.len() - 1]));
            }
            Ok(e)
        }
        6 | 7 if !compounds.is_empty() => {
            let (name, n) = u.choose(compounds)?;
            let mut a = Vec::new();
            for _ in 0..*n {
                a.push(word(u, defines)?);
            }
            Ok(format!("{name}({})", a.join(", ")))
        }
        _ => {
            let names = crate::registry().names();
            let class = u.choose(&names)?;
            Ok(format!("{class}({})", args(u, defines, formals)?))
        }
    }
}

fn port(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=4)? {
        0 => format!("[{}] ", u.int_in_range(0..=3)?),
        _ => String::new(),
    })
}

/// One `a [p] -> [q] b -> ...;` chain over `names`, maybe with an
/// anonymous element inside.
fn chain(
    u: &mut Unstructured<'_>,
    names: &[String],
    defines: usize,
    compounds: &[(String, usize)],
    formals: &[String],
) -> Result<String> {
    let hops = u.int_in_range(2..=4)?;
    let mut s = String::new();
    for h in 0..hops {
        if h > 0 {
            let p = port(u)?;
            let q = port(u)?;
            let _ = write!(s, " {p}-> {q}");
        }
        if names.is_empty() || u.ratio(1, 5)? {
            s.push_str(&decl(u, defines, compounds, formals)?);
        } else {
            s.push_str(u.choose(names)?);
        }
    }
    Ok(s)
}

/// Numbers far past what any argument can mean (element counts,
/// capacities, rates, lengths, times).
const HUGE: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "10000000000",
    "4294967296",
    "9223372036854775807",
    "1e300",
    "340282366920938463463374607431768211456",
];

/// `example` with every run of digits replaced by `huge`: every numeric
/// argument of a real configuration at once.
fn huge_numbers(example: &str, huge: &str) -> String {
    let mut out = String::with_capacity(example.len() + 16);
    let mut in_digits = false;
    for c in example.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str(huge);
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// A configuration of one of the shapes that stress the language and the
/// router's limits, or (most of the time) an ordinary one.
pub(crate) fn generate(u: &mut Unstructured<'_>) -> Result<String> {
    match u.int_in_range(0..=15u8)? {
        0 => deep_compounds(u),
        1 => exponential_compounds(u),
        2 => long_chain(u),
        _ => ordinary(u),
    }
}

/// A source of a few packets, so that a run has work.
fn source(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => "InfiniteSource(LENGTH 64, LIMIT 100, STOP true)".into(),
        1 => format!("RatedSource(RATE {}, LIMIT 50)", word(u, 0)?),
        _ => format!("TimedSource({}, LIMIT 20)", word(u, 0)?),
    })
}

/// Compounds nested by use: `Ck` uses `C(k-1)`, up to a few hundred deep
/// (past the lexical nesting bound, which says nothing of use).
fn deep_compounds(u: &mut Unstructured<'_>) -> Result<String> {
    let depth = u.int_in_range(1..=400u32)?;
    let inner = decl(u, 0, &[], &[])?;
    let mut out = format!("elementclass C0 {{ $a | input -> {inner} -> output }}\n");
    for k in 1..=depth {
        let _ = writeln!(
            out,
            "elementclass C{k} {{ $a | input -> C{}($a) -> output }}",
            k - 1
        );
    }
    let _ = writeln!(
        out,
        "{} -> C{depth}({}) -> Discard;",
        source(u)?,
        word(u, 0)?
    );
    Ok(out)
}

/// Compounds each using the one before twice: 2^levels elements from a
/// file of a few hundred bytes.
fn exponential_compounds(u: &mut Unstructured<'_>) -> Result<String> {
    let levels = u.int_in_range(1..=32u32)?;
    let inner = decl(u, 0, &[], &[])?;
    let mut out = format!("elementclass C0 {{ $a | input -> {inner} -> output }}\n");
    for k in 1..=levels {
        let p = k - 1;
        let _ = writeln!(
            out,
            "elementclass C{k} {{ $a | input -> C{p}($a) -> C{p}($a) -> output }}"
        );
    }
    let _ = writeln!(
        out,
        "{} -> C{levels}({}) -> Discard;",
        source(u)?,
        word(u, 0)?
    );
    Ok(out)
}

/// A push (or pull) chain thousands of elements long.
fn long_chain(u: &mut Unstructured<'_>) -> Result<String> {
    let hops = u.int_in_range(1..=12_000u32)?;
    let pull = u.ratio(1, 3)?;
    let hop = if pull { " -> PullNull" } else { " -> Null" };
    let mut out = source(u)?;
    if pull {
        out.push_str(" -> Queue");
    }
    out.reserve(hops as usize * hop.len() + 32);
    for _ in 0..hops {
        out.push_str(hop);
    }
    out.push_str(if pull {
        " -> Unqueue -> Discard;\n"
    } else {
        " -> Discard;\n"
    });
    Ok(out)
}

fn ordinary(u: &mut Unstructured<'_>) -> Result<String> {
    let mut out = String::new();
    let ndef = u.int_in_range(0..=3)?;
    for i in 0..ndef {
        let _ = writeln!(out, "define($d{i} {});", word(u, i)?);
    }
    let mut compounds: Vec<(String, usize)> = Vec::new();
    for c in 0..u.int_in_range(0..=2)? {
        let nformals = u.int_in_range(0..=2)?;
        let formals: Vec<String> = (0..nformals).map(|i| format!("$f{i}")).collect();
        let mut body = String::new();
        if !formals.is_empty() {
            let _ = write!(body, "{} | ", formals.join(", "));
        }
        let inner = u.int_in_range(0..=2)?;
        let mut names = vec!["input".to_string(), "output".to_string()];
        for i in 0..inner {
            let d = decl(u, ndef, &compounds, &formals)?;
            let _ = write!(body, "i{i} :: {d}; ");
            names.push(format!("i{i}"));
        }
        for _ in 0..u.int_in_range(1..=3)? {
            let _ = write!(body, "{}; ", chain(u, &names, ndef, &compounds, &formals)?);
        }
        if u.ratio(1, 6)? {
            body.push_str("|| ... ");
        }
        let _ = writeln!(out, "elementclass C{c} {{ {body}}}");
        compounds.push((format!("C{c}"), nformals));
    }
    let mut names = Vec::new();
    for i in 0..u.int_in_range(1..=8)? {
        let d = decl(u, ndef, &compounds, &[])?;
        let _ = writeln!(out, "e{i} :: {d};");
        names.push(format!("e{i}"));
    }
    for _ in 0..u.int_in_range(0..=8)? {
        let _ = writeln!(out, "{};", chain(u, &names, ndef, &compounds, &[])?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_numbers_replace_every_number() {
        assert_eq!(
            huge_numbers("RatedSource(RATE 10, LIMIT 5, LENGTH 60)", "1e300"),
            "RatedSource(RATE 1e300, LIMIT 1e300, LENGTH 1e300)"
        );
        assert_eq!(huge_numbers("Discard", "9"), "Discard");
    }

    #[test]
    fn the_stress_shapes_are_generated() {
        // Over many inputs each shape comes up: the deep, exponential and
        // long configurations are what the limits exist for.
        let (mut deep, mut exp, mut long) = (0, 0, 0);
        for seed in 0..400u32 {
            let data: Vec<u8> = (0..256u32)
                .map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed * 7919) >> 11) as u8)
                .collect();
            let text = generate(&mut Unstructured::new(&data)).unwrap_or_default();
            if text.contains("input -> C0($a) -> C0($a)") {
                exp += 1;
            } else if text.contains("elementclass C1 { $a | input -> C0($a) -> output }") {
                deep += 1;
            } else if text.contains("-> Null -> Null -> Null")
                || text.contains("-> PullNull -> PullNull")
            {
                long += 1;
            }
        }
        assert!(
            deep > 5 && exp > 5 && long > 5,
            "deep {deep}, exponential {exp}, long {long}"
        );
    }

    #[test]
    fn examples_come_from_the_docs_and_generation_reaches_the_checks() {
        let ex = examples();
        assert!(ex.iter().any(|e| e.starts_with("RatedSource(")), "{ex:?}");
        assert!(ex.iter().any(|e| e.starts_with("Queue")), "{ex:?}");
        // Some generated configurations must parse: the generator is of use
        // only if it gets past the parser.
        let mut parsed = 0;
        for seed in 0..200u32 {
            let data: Vec<u8> = (0..512u32)
                .map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed * 7919) >> 13) as u8)
                .collect();
            let text = generate(&mut Unstructured::new(&data)).unwrap_or_default();
            let src = paraclick_lang::Source::new("t", text.as_str());
            if paraclick_lang::parse_config_with(&src, &[], &crate::parse_options()).is_ok() {
                parsed += 1;
            }
        }
        assert!(
            parsed > 20,
            "only {parsed} of 200 generated configurations parse"
        );
    }
}
