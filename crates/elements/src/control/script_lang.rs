//! The language Script and DriverManager share: instruction parsing, `$`
//! substitutions, and the built-in expression handlers (`add`, `lt`,
//! `sprintf`, ...). Nothing here touches the router: handler reads and
//! variables come through the [`Env`] the element supplies.

use paraclick_lang::args::{split_words, unquote};
use std::sync::atomic::{AtomicU64, Ordering};

/// What an instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Set,
    Init,
    Export,
    Print { newline: bool },
    Read,
    Write,
    Pause,
    Wait,
    Label,
    Goto,
    Loop,
    End,
    Exit,
    Stop,
    Return,
    Error,
}

/// One parsed instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    pub op: Op,
    /// The `q` form (`setq`, `writeq`, ...): remove a layer of quotes after
    /// substitution.
    pub q: bool,
    /// The variable (`set`, `init`, `export`) or label (`label`, `goto`).
    pub name: String,
    /// The rest, unsubstituted: text, handler and arguments, a count, a
    /// time, or `goto`'s condition.
    pub text: String,
}

/// Where a `goto` leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Pos(usize),
    Exit,
    End,
    Stop,
    Error,
    Loop,
}

/// Splits off the first whitespace-separated word (quoted strings do not
/// split); returns it and the trimmed rest.
pub fn split_first(s: &str) -> (&str, &str) {
    let s = s.trim();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && !b[i].is_ascii_whitespace() {
        match b[i] {
            b'"' | b'\'' => i = skip_quoted(b, i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    let i = i.min(b.len());
    (&s[..i], s[i..].trim())
}

fn is_var_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Parses one instruction (`set x 0`, `goto l $(lt $x 5)`, `wait 1s`).
pub fn parse_insn(s: &str) -> Result<Insn, String> {
    let (word, rest) = split_first(s);
    let (op, q) = match word {
        "set" => (Op::Set, false),
        "setq" => (Op::Set, true),
        "init" => (Op::Init, false),
        "initq" => (Op::Init, true),
        "export" => (Op::Export, false),
        "exportq" => (Op::Export, true),
        "print" => (Op::Print { newline: true }, false),
        "printq" => (Op::Print { newline: true }, true),
        "printn" => (Op::Print { newline: false }, false),
        "printnq" => (Op::Print { newline: false }, true),
        "read" => (Op::Read, false),
        "readq" => (Op::Read, true),
        "write" => (Op::Write, false),
        "writeq" => (Op::Write, true),
        "pause" | "wait_stop" | "wait_step" => (Op::Pause, false),
        "wait" | "wait_time" => (Op::Wait, false),
        "label" => (Op::Label, false),
        "goto" => (Op::Goto, false),
        "loop" => (Op::Loop, false),
        "end" => (Op::End, false),
        "exit" => (Op::Exit, false),
        "stop" => (Op::Stop, false),
        "return" => (Op::Return, false),
        "returnq" => (Op::Return, true),
        "error" => (Op::Error, false),
        "errorq" => (Op::Error, true),
        "" => return Err("empty instruction".into()),
        _ => return Err(format!("unknown instruction '{word}'")),
    };
    let mut insn = Insn {
        op,
        q,
        name: String::new(),
        text: String::new(),
    };
    match op {
        Op::Set | Op::Init | Op::Export => {
            let (var, text) = split_first(rest);
            if !is_var_name(var) {
                return Err(format!("'{word}': bad variable name '{var}'"));
            }
            insn.name = var.to_string();
            insn.text = text.to_string();
        }
        Op::Label => {
            let (l, more) = split_first(rest);
            if l.is_empty() || !more.is_empty() {
                return Err("'label' takes one label name".into());
            }
            insn.name = l.to_string();
        }
        Op::Goto => {
            let (l, cond) = split_first(rest);
            if l.is_empty() {
                return Err("'goto' needs a label".into());
            }
            insn.name = l.to_string();
            insn.text = cond.to_string();
        }
        Op::Loop | Op::End | Op::Exit | Op::Stop => {
            if !rest.is_empty() {
                return Err(format!("'{word}' takes no arguments"));
            }
        }
        Op::Read | Op::Write => {
            if rest.is_empty() {
                return Err(format!("'{word}' needs a handler"));
            }
            insn.text = rest.to_string();
        }
        _ => {
            if word == "wait_time" && rest.is_empty() {
                return Err("'wait_time' needs a time".into());
            }
            insn.text = rest.to_string();
        }
    }
    Ok(insn)
}

/// A parsed script.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub insns: Vec<Insn>,
    labels: Vec<(String, usize)>,
}

impl Program {
    /// Parses instructions, one per configuration argument. An empty driver
    /// script waits for one stop event (it is `pause`).
    pub fn parse(args: &[String], driver: bool) -> Result<Program, String> {
        let mut p = Program::default();
        let mut errs = Vec::new();
        for a in args {
            match parse_insn(a) {
                Ok(i) => {
                    if i.op == Op::Label {
                        if p.labels.iter().any(|(l, _)| *l == i.name) {
                            errs.push(format!("label '{}' defined twice", i.name));
                        }
                        p.labels.push((i.name.clone(), p.insns.len()));
                    }
                    p.insns.push(i);
                }
                Err(e) => errs.push(e),
            }
        }
        if driver && p.insns.is_empty() {
            p.insns.push(parse_insn("pause").expect("pause parses"));
        }
        for i in &p.insns {
            if i.op == Op::Goto && !i.name.contains('$') && p.target(&i.name).is_none() {
                errs.push(format!("no label '{}'", i.name));
            }
        }
        if errs.is_empty() {
            Ok(p)
        } else {
            Err(errs.join("; "))
        }
    }

    /// Where `goto LABEL` leads: a label of the script, or one of the
    /// special targets `exit`, `end`, `stop`, `error`, `loop` (`begin`).
    pub fn target(&self, label: &str) -> Option<Target> {
        if let Some(&(_, pos)) = self.labels.iter().find(|(l, _)| l == label) {
            return Some(Target::Pos(pos));
        }
        Some(match label {
            "exit" => Target::Exit,
            "end" => Target::End,
            "stop" => Target::Stop,
            "error" => Target::Error,
            "loop" | "begin" => Target::Loop,
            _ => return None,
        })
    }

    /// Variables that `export` makes readable as handlers.
    pub fn exports(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for i in &self.insns {
            if i.op == Op::Export && !v.contains(&i.name) {
                v.push(i.name.clone());
            }
        }
        v
    }
}

/// What substitution consults.
pub trait Env {
    /// The value of `$name`; `None` leaves the reference as written.
    fn var(&mut self, name: &str) -> Option<String>;
    /// The value of `$(HANDLER ARGS)` (the text is already substituted).
    fn call(&mut self, text: &str) -> Result<String, String>;
}

/// Index just past the quoted string starting at `i` (`'` or `"`).
fn skip_quoted(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' && q == b'"' {
            j += 2;
        } else if b[j] == q {
            return j + 1;
        } else {
            j += 1;
        }
    }
    b.len()
}

/// Index of the `)` matching the `(` at `open`.
fn matching_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = open;
    while j < b.len() {
        match b[j] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            b'"' | b'\'' => {
                j = skip_quoted(b, j);
                continue;
            }
            b'\\' => {
                j += 2;
                continue;
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// Substitutes `$var`, `${var}` and `$(HANDLER ARGS)` in `text`. Nothing
/// inside single quotes is substituted; double quotes do not stop it.
/// Unknown variables stay as written; failed handler calls give the empty
/// string and an entry in `errs`.
pub fn expand(text: &str, env: &mut dyn Env, errs: &mut Vec<String>) -> String {
    expand_depth(text, env, errs, 0)
}

fn expand_depth(text: &str, env: &mut dyn Env, errs: &mut Vec<String>, depth: usize) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut seg = 0;
    let mut in_dq = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' if !in_dq => i = skip_quoted(b, i),
            b'"' => {
                in_dq = !in_dq;
                i += 1;
            }
            b'$' => match dollar(text, i, env, errs, depth) {
                Some((val, end)) => {
                    out.push_str(&text[seg..i]);
                    out.push_str(&val);
                    i = end;
                    seg = end;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    out.push_str(&text[seg.min(text.len())..]);
    out
}

/// The substitution for the `$` at `i`, and the index after it.
fn dollar(
    text: &str,
    i: usize,
    env: &mut dyn Env,
    errs: &mut Vec<String>,
    depth: usize,
) -> Option<(String, usize)> {
    let b = text.as_bytes();
    match b.get(i + 1)? {
        b'(' => {
            let close = matching_paren(b, i + 1)?;
            if depth > 32 {
                errs.push("substitutions nested too deeply".into());
                return Some((String::new(), close + 1));
            }
            let inner = expand_depth(&text[i + 2..close], env, errs, depth + 1);
            let v = match env.call(inner.trim()) {
                Ok(v) => v,
                Err(e) => {
                    errs.push(e);
                    String::new()
                }
            };
            Some((v, close + 1))
        }
        b'{' => {
            let close = i + 2 + text[i + 2..].find('}')?;
            let v = env.var(&text[i + 2..close])?;
            Some((v, close + 1))
        }
        b'?' | b'#' | b'$' => {
            let v = env.var(&text[i + 1..i + 2])?;
            Some((v, i + 2))
        }
        c if c.is_ascii_alphanumeric() || *c == b'_' => {
            let n = b[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            let v = env.var(&text[i + 1..i + 1 + n])?;
            Some((v, i + 1 + n))
        }
        _ => None,
    }
}

/// Names of the built-in expression handlers (Click's "read with
/// parameters" handlers of Script).
pub const BUILTINS: &[&str] = &[
    "add", "sub", "mul", "div", "idiv", "mod", "rem", "neg", "abs", "eq", "ne", "lt", "gt", "le",
    "ge", "not", "and", "or", "nand", "nor", "if", "in", "sprintf", "random", "length", "unquote",
    "now", "cat", "catq", "min", "max", "htons", "htonl", "ntohs", "ntohl", "first",
];

/// A number as Script's arithmetic reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// Parses an integer (decimal or `0x` hex) or a real number.
pub fn parse_num(s: &str) -> Option<Num> {
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() {
        return None;
    }
    if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let v = u64::from_str_radix(h, 16).ok()?;
        let v = i64::try_from(v).ok()?;
        return Some(Num::Int(if neg { -v } else { v }));
    }
    if body.bytes().all(|c| c.is_ascii_digit()) {
        return Some(match t.parse::<i64>() {
            Ok(v) => Num::Int(v),
            Err(_) => Num::Float(t.parse().ok()?),
        });
    }
    let ok_chars = body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !ok_chars || !body.bytes().any(|c| c.is_ascii_digit()) {
        return None;
    }
    t.parse::<f64>().ok().map(Num::Float)
}

/// Formats a number the way Script prints results: integers plainly,
/// integral reals without a fraction, other reals in shortest form.
pub fn fmt_num(n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) if f.is_finite() && f == f.trunc() && f.abs() < 1e15 => {
            (f as i64).to_string()
        }
        Num::Float(f) => format!("{f}"),
    }
}

/// Parses a Boolean the way Click's arguments do.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "true" | "yes" | "1" | "t" | "y" | "on" => Some(true),
        "false" | "no" | "0" | "f" | "n" | "off" => Some(false),
        _ => None,
    }
}

fn nums(name: &str, words: &[String]) -> Result<Vec<Num>, String> {
    words
        .iter()
        .map(|w| parse_num(w).ok_or_else(|| format!("{name}: expected number, not '{w}'")))
        .collect()
}

fn bools(name: &str, words: &[String]) -> Result<Vec<bool>, String> {
    words
        .iter()
        .map(|w| parse_bool(w).ok_or_else(|| format!("{name}: expected boolean, not '{w}'")))
        .collect()
}

/// Click's byte-order functions on one integer: the 16- or 32-bit value
/// with its bytes swapped (what a little-endian host's htons/htonl give).
fn byte_order(name: &str, words: &[String]) -> Result<String, String> {
    let [w] = words else {
        return Err(format!("{name}: expected one integer"));
    };
    let v = match parse_num(w) {
        Some(Num::Int(i)) if i >= 0 => i as u64,
        _ => return Err(format!("{name}: expected nonnegative integer, not '{w}'")),
    };
    Ok(if name.ends_with('s') {
        match u16::try_from(v) {
            Ok(x) => x.swap_bytes().to_string(),
            Err(_) => return Err(format!("{name}: '{w}' does not fit in 16 bits")),
        }
    } else {
        match u32::try_from(v) {
            Ok(x) => x.swap_bytes().to_string(),
            Err(_) => return Err(format!("{name}: '{w}' does not fit in 32 bits")),
        }
    })
}

fn tf(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

fn arith(name: &str, words: &[String]) -> Result<String, String> {
    let v = nums(name, words)?;
    let int_op = |a: i64, b: i64| -> Option<i64> {
        match name {
            "add" => a.checked_add(b),
            "sub" => a.checked_sub(b),
            "mul" => a.checked_mul(b),
            _ => None,
        }
    };
    let float_op = |a: f64, b: f64| match name {
        "add" => a + b,
        "sub" => a - b,
        _ => a * b,
    };
    let mut it = v.into_iter();
    let mut acc = match it.next() {
        Some(n) => n,
        None => return Ok(if name == "mul" { "1" } else { "0" }.into()),
    };
    for n in it {
        acc = match (acc, n) {
            (Num::Int(a), Num::Int(b)) => match int_op(a, b) {
                Some(r) => Num::Int(r),
                None => Num::Float(float_op(a as f64, b as f64)),
            },
            (a, b) => Num::Float(float_op(a.f(), b.f())),
        };
    }
    Ok(fmt_num(acc))
}

fn division(name: &str, words: &[String]) -> Result<String, String> {
    let v = nums(name, words)?;
    let mut it = v.into_iter();
    let Some(mut acc) = it.next() else {
        return Err(format!("{name}: expected numbers"));
    };
    for n in it {
        if n.f() == 0.0 {
            return Err(format!("{name}: division by zero"));
        }
        acc = match (name, acc, n) {
            ("idiv", Num::Int(a), Num::Int(b)) => match a.checked_div(b) {
                Some(r) => Num::Int(r),
                None => Num::Float((a as f64 / b as f64).trunc()),
            },
            ("idiv", a, b) => Num::Float((a.f() / b.f()).trunc()),
            ("mod", Num::Int(a), Num::Int(b)) => Num::Int(a.checked_rem(b).unwrap_or(0)),
            ("mod", _, _) => return Err("mod: expected integers".into()),
            ("rem", a, b) => Num::Float(a.f() % b.f()),
            (_, a, b) => Num::Float(a.f() / b.f()),
        };
    }
    Ok(fmt_num(acc))
}

fn compare(name: &str, words: &[String]) -> Result<String, String> {
    let [a, b] = words else {
        return Err(format!("{name}: expected two arguments"));
    };
    let ord = match (parse_num(a), parse_num(b)) {
        (Some(Num::Int(x)), Some(Num::Int(y))) => Some(x.cmp(&y)),
        (Some(x), Some(y)) => x.f().partial_cmp(&y.f()),
        _ => Some(a.as_bytes().cmp(b.as_bytes())),
    };
    let Some(o) = ord else {
        return Ok(tf(name == "ne"));
    };
    use std::cmp::Ordering::*;
    Ok(tf(match name {
        "eq" => o == Equal,
        "ne" => o != Equal,
        "lt" => o == Less,
        "gt" => o == Greater,
        "le" => o != Greater,
        _ => o != Less,
    }))
}

static RNG: AtomicU64 = AtomicU64::new(0);

/// A pseudo-random 64-bit number (xorshift*, seeded from the OS's hash
/// randomness on first use).
fn next_random() -> u64 {
    let mut x = RNG.load(Ordering::Relaxed);
    if x == 0 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id() as u64);
        x = h.finish() | 1;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    RNG.store(x, Ordering::Relaxed);
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn random(words: &[String]) -> Result<String, String> {
    const RAND_MAX: i64 = 2_147_483_647;
    let (lo, hi) = match words {
        [] => (0, RAND_MAX),
        [n] => {
            let n: i64 = n
                .trim()
                .parse()
                .map_err(|_| format!("random: expected integer, not '{n}'"))?;
            if n <= 0 {
                return Err("random: bound must be positive".into());
            }
            (0, n - 1)
        }
        [a, b] => {
            let a: i64 = a
                .trim()
                .parse()
                .map_err(|_| format!("random: expected integer, not '{a}'"))?;
            let b: i64 = b
                .trim()
                .parse()
                .map_err(|_| format!("random: expected integer, not '{b}'"))?;
            if b < a {
                return Err("random: empty range".into());
            }
            (a, b)
        }
        _ => return Err("random: expected at most two arguments".into()),
    };
    let span = (hi as i128 - lo as i128 + 1) as u128;
    let r = (next_random() as u128 % span) as i128 + lo as i128;
    Ok(r.to_string())
}

/// Click's quoting: a double-quoted string with backslash escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Runs a built-in expression handler; `None` if `name` is not one.
/// `args` is the (substituted) argument text.
pub fn builtin(name: &str, args: &str) -> Option<Result<String, String>> {
    let words: Vec<String> = split_words(args).iter().map(|w| unquote(w)).collect();
    Some(match name {
        "add" | "sub" | "mul" => arith(name, &words),
        "div" | "idiv" | "mod" | "rem" => division(name, &words),
        "neg" | "abs" => match nums(name, &words).as_deref() {
            Ok([n]) => Ok(fmt_num(match (name, *n) {
                ("neg", Num::Int(i)) => i.checked_neg().map_or(Num::Float(-(i as f64)), Num::Int),
                ("neg", Num::Float(f)) => Num::Float(-f),
                (_, Num::Int(i)) => i
                    .checked_abs()
                    .map_or(Num::Float((i as f64).abs()), Num::Int),
                (_, Num::Float(f)) => Num::Float(f.abs()),
            })),
            Ok(_) => Err(format!("{name}: expected one number")),
            Err(e) => Err(e.clone()),
        },
        "eq" | "ne" | "lt" | "gt" | "le" | "ge" => compare(name, &words),
        "not" => match bools(name, &words).as_deref() {
            Ok([b]) => Ok(tf(!b)),
            Ok(_) => Err("not: expected one boolean".into()),
            Err(e) => Err(e.clone()),
        },
        "and" | "or" | "nand" | "nor" => bools(name, &words).map(|v| {
            let r = match name {
                "and" | "nand" => v.iter().all(|b| *b),
                _ => v.iter().any(|b| *b),
            };
            tf(if name.starts_with('n') { !r } else { r })
        }),
        "if" => match words.as_slice() {
            [c, a, b] => match parse_bool(c) {
                Some(true) => Ok(a.clone()),
                Some(false) => Ok(b.clone()),
                None => Err(format!("if: expected boolean, not '{c}'")),
            },
            _ => Err("if: expected three arguments".into()),
        },
        "in" => match words.split_first() {
            Some((x, rest)) => Ok(tf(rest.contains(x))),
            None => Err("in: expected arguments".into()),
        },
        "min" | "max" => match nums(name, &words) {
            Ok(v) if !v.is_empty() => {
                let pick = v.into_iter().reduce(|a, b| {
                    let b_wins = if name == "min" {
                        b.f() < a.f()
                    } else {
                        b.f() > a.f()
                    };
                    if b_wins {
                        b
                    } else {
                        a
                    }
                });
                Ok(pick.map(fmt_num).unwrap_or_default())
            }
            Ok(_) => Err(format!("{name}: expected numbers")),
            Err(e) => Err(e),
        },
        "htons" | "ntohs" | "htonl" | "ntohl" => byte_order(name, &words),
        "first" => Ok(words.first().cloned().unwrap_or_default()),
        "sprintf" => sprintf(&words),
        "random" => random(&words),
        // Only spaces around the argument are separators: a `readq`
        // parameter may be control bytes (`"\<0a 09>"` is two bytes).
        "length" => Ok(unquote(args.trim_matches(' ')).len().to_string()),
        "unquote" => Ok(unquote(args.trim())),
        "now" => Ok(paraclick_packet::Timestamp::now().to_string()),
        "cat" | "catq" => {
            let path = unquote(args.trim());
            match std::fs::read(&path) {
                Ok(b) => {
                    let s = String::from_utf8_lossy(&b).into_owned();
                    Ok(if name == "catq" { quote(&s) } else { s })
                }
                Err(e) => Err(format!("{name}: {path}: {e}")),
            }
        }
        _ => return None,
    })
}

#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

fn int_arg(w: &str) -> Result<i64, String> {
    match parse_num(w) {
        Some(Num::Int(i)) => Ok(i),
        Some(Num::Float(f)) => Ok(f as i64),
        None => Err(format!("sprintf: expected number, not '{w}'")),
    }
}

/// `%e` body of a non-negative finite value: mantissa, `e`, sign, at least
/// two exponent digits.
fn fmt_exp(v: f64, prec: usize, upper: bool) -> String {
    let s = format!("{v:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let out = format!("{m}e{sign}{:02}", e.abs());
    if upper {
        out.to_uppercase()
    } else {
        out
    }
}

fn strip_zeros(s: &str) -> String {
    let (m, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let m = if m.contains('.') {
        m.trim_end_matches('0').trim_end_matches('.')
    } else {
        m
    };
    format!("{m}{exp}")
}

/// A float body (no sign) for conversions e, f, g.
fn fmt_float(v: f64, conv: char, sp: &Spec) -> String {
    let upper = conv.is_ascii_uppercase();
    if !v.is_finite() {
        let s = if v.is_nan() { "nan" } else { "inf" };
        return if upper { s.to_uppercase() } else { s.into() };
    }
    let p = sp.prec.unwrap_or(6);
    match conv.to_ascii_lowercase() {
        'f' => {
            let mut s = format!("{v:.p$}");
            if sp.alt && p == 0 {
                s.push('.');
            }
            s
        }
        'e' => {
            let mut s = fmt_exp(v, p, upper);
            if sp.alt && p == 0 {
                let i = s.find(['e', 'E']).unwrap_or(s.len());
                s.insert(i, '.');
            }
            s
        }
        _ => {
            let p = p.max(1);
            let x = if v == 0.0 {
                0
            } else {
                let e = fmt_exp(v, p - 1, false);
                e.split_once('e')
                    .and_then(|(_, x)| x.parse::<i32>().ok())
                    .unwrap_or(0)
            };
            let s = if x < p as i32 && x >= -4 {
                let dec = (p as i32 - 1 - x) as usize;
                format!("{v:.dec$}")
            } else {
                fmt_exp(v, p - 1, upper)
            };
            if sp.alt {
                s
            } else {
                strip_zeros(&s)
            }
        }
    }
}

/// C's `sprintf` over Script arguments: `%d %i %u %x %X %o %c %s %e %E %f
/// %F %g %G %%` with flags `-+ #0`, width and precision.
pub fn sprintf(words: &[String]) -> Result<String, String> {
    let Some((fmt, args)) = words.split_first() else {
        return Err("sprintf: missing format".into());
    };
    let mut args = args.iter();
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        if chars.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let mut sp = Spec::default();
        while let Some(&c) = chars.get(i) {
            match c {
                '-' => sp.left = true,
                '+' => sp.plus = true,
                ' ' => sp.space = true,
                '#' => sp.alt = true,
                '0' => sp.zero = true,
                _ => break,
            }
            i += 1;
        }
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            sp.width = sp.width.saturating_mul(10).saturating_add(d as usize);
            i += 1;
        }
        if chars.get(i) == Some(&'.') {
            i += 1;
            let mut p = 0usize;
            while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                p = p.saturating_mul(10).saturating_add(d as usize);
                i += 1;
            }
            sp.prec = Some(p);
        }
        sp.width = sp.width.min(4096);
        sp.prec = sp.prec.map(|p| p.min(4096));
        while matches!(chars.get(i), Some('h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't')) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            return Err("sprintf: incomplete conversion".into());
        };
        i += 1;
        let arg = args
            .next()
            .ok_or_else(|| "sprintf: not enough arguments".to_string())?;
        // (sign or prefix, digits/body, numeric)
        let (prefix, body, numeric): (String, String, bool) = match conv {
            'd' | 'i' => {
                let v = int_arg(arg)?;
                let mut d = v.unsigned_abs().to_string();
                if let Some(p) = sp.prec {
                    if p == 0 && v == 0 {
                        d.clear();
                    }
                    while d.len() < p {
                        d.insert(0, '0');
                    }
                }
                let sign = if v < 0 {
                    "-"
                } else if sp.plus {
                    "+"
                } else if sp.space {
                    " "
                } else {
                    ""
                };
                (sign.into(), d, true)
            }
            'u' | 'x' | 'X' | 'o' => {
                let v = int_arg(arg)? as u64;
                let mut d = match conv {
                    'u' => v.to_string(),
                    'x' => format!("{v:x}"),
                    'X' => format!("{v:X}"),
                    _ => format!("{v:o}"),
                };
                if let Some(p) = sp.prec {
                    if p == 0 && v == 0 {
                        d.clear();
                    }
                    while d.len() < p {
                        d.insert(0, '0');
                    }
                }
                let pre = match conv {
                    'x' if sp.alt && v != 0 => "0x",
                    'X' if sp.alt && v != 0 => "0X",
                    'o' if sp.alt && !d.starts_with('0') => "0",
                    _ => "",
                };
                (pre.into(), d, true)
            }
            'c' => {
                let v = int_arg(arg)?;
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("sprintf: bad character {v}"))?;
                (String::new(), c.to_string(), false)
            }
            's' => {
                let s: String = match sp.prec {
                    Some(p) => arg.chars().take(p).collect(),
                    None => arg.clone(),
                };
                (String::new(), s, false)
            }
            'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
                let v = parse_num(arg)
                    .ok_or_else(|| format!("sprintf: expected number, not '{arg}'"))?
                    .f();
                let sign = if v.is_sign_negative() && !v.is_nan() {
                    "-"
                } else if sp.plus {
                    "+"
                } else if sp.space {
                    " "
                } else {
                    ""
                };
                let body = fmt_float(v.abs(), conv, &sp);
                // Precision does not forbid zero padding for reals.
                sp.prec = None;
                (sign.into(), body, v.is_finite())
            }
            c => return Err(format!("sprintf: bad conversion '%{c}'")),
        };
        let len = prefix.chars().count() + body.chars().count();
        let pad = sp.width.saturating_sub(len);
        if sp.left {
            out.push_str(&prefix);
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if sp.zero && numeric && sp.prec.is_none() {
            out.push_str(&prefix);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(&body);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&prefix);
            out.push_str(&body);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;
    use std::collections::HashMap;

    struct TestEnv {
        vars: HashMap<String, String>,
        calls: Vec<String>,
    }

    impl Env for TestEnv {
        fn var(&mut self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn call(&mut self, text: &str) -> Result<String, String> {
            self.calls.push(text.to_string());
            let (h, args) = split_first(text);
            if let Some(r) = builtin(h, args) {
                return r;
            }
            match h {
                "c.count" => Ok("42".into()),
                _ => Err(format!("no handler '{h}'")),
            }
        }
    }

    fn env() -> TestEnv {
        let mut vars = HashMap::new();
        vars.insert("x".to_string(), "3".to_string());
        vars.insert("name".to_string(), "c".to_string());
        TestEnv {
            vars,
            calls: Vec::new(),
        }
    }

    fn ex(s: &str) -> (String, Vec<String>) {
        let mut e = env();
        let mut errs = Vec::new();
        let r = expand(s, &mut e, &mut errs);
        (r, errs)
    }

    #[test]
    fn substitutes_variables_and_handlers() {
        assert_eq!(ex("x=$x").0, "x=3");
        assert_eq!(ex("${x}y").0, "3y");
        assert_eq!(ex("$(c.count)").0, "42");
        assert_eq!(ex("\"$(c.count)\"").0, "\"42\"");
        assert_eq!(ex("'$x'").0, "'$x'");
        assert_eq!(ex("$(add $x 1)").0, "4");
        assert_eq!(ex("$(add $($name.count) $x)").0, "45");
        assert_eq!(ex("$unknown and $").0, "$unknown and $");
        assert_eq!(ex("\\$x").0, "\\$x");
        assert_eq!(ex("é$x€").0, "é3€");
        let (r, errs) = ex("[$(nope 1)]");
        assert_eq!(r, "[]");
        assert_eq!(errs, vec!["no handler 'nope'".to_string()]);
        // Unbalanced parenthesis: left alone.
        assert_eq!(ex("$(add 1").0, "$(add 1");
    }

    #[test]
    fn splits_words_outside_quotes() {
        assert_eq!(split_first("  a b  c "), ("a", "b  c"));
        assert_eq!(split_first("\"a b\" c"), ("\"a b\"", "c"));
        assert_eq!(split_first("'x y'z w"), ("'x y'z", "w"));
        assert_eq!(split_first("\\é x"), ("\\é", "x"));
        assert_eq!(split_first(""), ("", ""));
    }

    #[test]
    fn parses_instructions() {
        let i = parse_insn("set x $(add 1 2)").unwrap();
        assert_eq!((i.op, i.q, i.name.as_str()), (Op::Set, false, "x"));
        assert_eq!(i.text, "$(add 1 2)");
        let i = parse_insn("goto top $(lt $x 5)").unwrap();
        assert_eq!(
            (i.op, i.name.as_str(), i.text.as_str()),
            (Op::Goto, "top", "$(lt $x 5)")
        );
        assert!(parse_insn("writeq a.b \"c\"").unwrap().q);
        assert_eq!(parse_insn("wait_stop 2").unwrap().op, Op::Pause);
        assert!(parse_insn("frobnicate")
            .unwrap_err()
            .contains("unknown instruction"));
        assert_err(parse_insn("stop now"), "'stop' takes no arguments");
        assert_err(parse_insn("set"), "'set': bad variable name ''");
        assert_err(parse_insn("label a b"), "'label' takes one label name");
        assert_err(parse_insn("wait_time"), "'wait_time' needs a time");
        let p = Program::parse(
            &["label a".into(), "goto a".into(), "goto nope".into()],
            false,
        );
        assert_eq!(p.unwrap_err(), "no label 'nope'");
        let p = Program::parse(&[], true).unwrap();
        assert_eq!(p.insns.len(), 1);
        assert_eq!(p.insns[0].op, Op::Pause);
        let p = Program::parse(&["export a 1".into(), "export b".into()], false).unwrap();
        assert_eq!(p.exports(), vec!["a".to_string(), "b".to_string()]);
        assert_eq!(p.target("exit"), Some(Target::Exit));
        assert_eq!(p.target("begin"), Some(Target::Loop));
    }

    fn b(name: &str, args: &str) -> Result<String, String> {
        builtin(name, args).expect("is a builtin")
    }

    #[test]
    fn arithmetic_and_comparisons() {
        assert_eq!(b("add", "10 5 2").unwrap(), "17");
        assert_eq!(b("sub", "10 5 2").unwrap(), "3");
        assert_eq!(b("mul", "2 3 4").unwrap(), "24");
        assert_eq!(b("add", "").unwrap(), "0");
        assert_eq!(b("add", "1.5 1").unwrap(), "2.5");
        assert_eq!(b("div", "10 4").unwrap(), "2.5");
        assert_eq!(b("div", "10 5").unwrap(), "2");
        assert_eq!(b("idiv", "10 4").unwrap(), "2");
        assert_eq!(b("mod", "7 3").unwrap(), "1");
        assert_eq!(b("rem", "7.5 2").unwrap(), "1.5");
        assert_err(b("div", "1 0"), "div: division by zero");
        assert_err(b("mod", "1.5 1"), "mod: expected integers");
        assert_err(b("add", "1 x"), "add: expected number, not 'x'");
        assert_eq!(b("neg", "5").unwrap(), "-5");
        assert_eq!(b("abs", "-5").unwrap(), "5");
        // Overflow goes to reals instead of wrapping.
        assert!(b("add", "9223372036854775807 1")
            .unwrap()
            .starts_with("92233720368547"));
        assert_eq!(b("eq", "10 0xA").unwrap(), "true");
        assert_eq!(b("le", "9 8").unwrap(), "false");
        assert_eq!(b("eq", "10x 10x").unwrap(), "true");
        assert_eq!(b("lt", "abc abd").unwrap(), "true");
        assert_eq!(b("ge", "2.5 2").unwrap(), "true");
        assert_eq!(b("ne", "1 1").unwrap(), "false");
        assert_err(b("lt", "1"), "lt: expected two arguments");
        assert_eq!(b("not", "true").unwrap(), "false");
        assert_err(b("not", "maybe"), "not: expected boolean, not 'maybe'");
        assert_eq!(b("and", "true yes 1").unwrap(), "true");
        assert_eq!(b("or", "false no").unwrap(), "false");
        assert_eq!(b("nand", "true true").unwrap(), "false");
        assert_eq!(b("nor", "false false").unwrap(), "true");
        assert_eq!(b("if", "true a b").unwrap(), "a");
        assert_eq!(b("if", "false a b").unwrap(), "b");
        assert_eq!(b("in", "foo bar foo").unwrap(), "true");
        assert_eq!(b("in", "foo bar baz").unwrap(), "false");
        assert_eq!(b("length", "abcdef").unwrap(), "6");
        assert_eq!(b("length", "\n\t\x01").unwrap(), "3");
        assert_eq!(b("unquote", "\"a b\"").unwrap(), "a b");
        assert!(builtin("nothing", "").is_none());
        for _ in 0..100 {
            let r: i64 = b("random", "3 5").unwrap().parse().unwrap();
            assert!((3..=5).contains(&r));
            let r: i64 = b("random", "2").unwrap().parse().unwrap();
            assert!((0..2).contains(&r));
        }
        assert_err(b("random", "0"), "random: bound must be positive");
        assert!(b("now", "").unwrap().contains('.'));
    }

    #[test]
    fn sprintf_formats_like_c() {
        assert_eq!(b("sprintf", "\"%05x\" 127").unwrap(), "0007f");
        assert_eq!(b("sprintf", "\"%d-%s\" 42 abc").unwrap(), "42-abc");
        assert_eq!(b("sprintf", "\"%-5d|\" 42").unwrap(), "42   |");
        assert_eq!(b("sprintf", "\"%+d %+d\" 5 -5").unwrap(), "+5 -5");
        assert_eq!(b("sprintf", "\"%05d\" -42").unwrap(), "-0042");
        assert_eq!(b("sprintf", "\"%.3d\" 7").unwrap(), "007");
        assert_eq!(
            b("sprintf", "\"%#x %#o %X\" 255 8 255").unwrap(),
            "0xff 010 FF"
        );
        assert_eq!(b("sprintf", "\"%.2f\" 3.14159").unwrap(), "3.14");
        assert_eq!(b("sprintf", "\"%8.3f|\" -3.14159").unwrap(), "  -3.142|");
        assert_eq!(b("sprintf", "\"%e\" 1234.5").unwrap(), "1.234500e+03");
        assert_eq!(
            b("sprintf", "\"%g %g %g\" 100000 1000000 0.0001").unwrap(),
            "100000 1e+06 0.0001"
        );
        assert_eq!(b("sprintf", "\"%g\" 2.5").unwrap(), "2.5");
        assert_eq!(b("sprintf", "\"%.3s|%5s\" abcdef ab").unwrap(), "abc|   ab");
        assert_eq!(b("sprintf", "\"%c%%\" 65").unwrap(), "A%");
        assert_err(b("sprintf", "\"%d %d\" 1"), "sprintf: not enough arguments");
        assert_err(
            b("sprintf", "\"%d\" x"),
            "sprintf: expected number, not 'x'",
        );
        assert_err(b("sprintf", "\"%y\" 1"), "sprintf: bad conversion '%y'");
        assert_err(b("sprintf", ""), "sprintf: missing format");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(unquote(&quote("x y\t")), "x y\t");
    }

    #[test]
    fn min_max_byte_order_and_first_as_click() {
        assert_eq!(b("min", "3 1 2").unwrap(), "1");
        assert_eq!(b("max", "3 9 -4").unwrap(), "9");
        assert_eq!(b("max", "1.5 1").unwrap(), "1.5");
        assert_err(b("min", "3 x"), "min: expected number, not 'x'");
        assert_err(b("min", ""), "min: expected numbers");
        assert_eq!(b("htons", "1").unwrap(), "256");
        assert_eq!(b("ntohs", "256").unwrap(), "1");
        assert_eq!(b("htonl", "1").unwrap(), "16777216");
        assert_eq!(b("ntohl", "16777216").unwrap(), "1");
        assert_err(
            b("htons", "65536"),
            "htons: '65536' does not fit in 16 bits",
        );
        assert_err(
            b("htonl", "-1"),
            "htonl: expected nonnegative integer, not '-1'",
        );
        assert_eq!(b("first", "a b c").unwrap(), "a");
        assert_eq!(b("first", "").unwrap(), "");
    }
}
