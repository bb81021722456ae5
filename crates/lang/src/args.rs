//! Click's configuration-argument utilities.
//!
//! Every element's `configure` starts from its raw configuration string.
//! [`split_args`] splits it into arguments the way Click's `cp_argvec` does;
//! [`split_keyword`] recognizes `KEYWORD value` arguments; [`split_words`]
//! splits an argument into space-separated words; [`unquote`] and
//! [`unquote_bytes`] remove quoting (Click's `cp_unquote`).

/// Splits a configuration string into arguments at top-level commas.
///
/// Commas inside `"..."`, `'...'`, `( )`, `[ ]` and `{ }` do not split.
/// Comments (`// ...` to end of line, `/* ... */`) outside quotes are replaced
/// by a single space, and each argument is trimmed. An empty or
/// whitespace-only string gives no arguments; an empty *last* argument is
/// dropped (`"1, "` is `["1"]`, as in Click), but empty arguments elsewhere are
/// kept (`"a, , b"` is `["a", "", "b"]`).
pub fn split_args(config: &str) -> Vec<String> {
    let b = config.as_bytes();
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut i = 0;
    let mut seg = 0; // start of the pending verbatim segment
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_double_quoted(b, i),
            b'\'' => i = skip_single_quoted(b, i),
            b'\\' => i = (i + 2).min(b.len()),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                cur.push_str(&config[seg..i]);
                cur.push(' ');
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
                seg = i;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                cur.push_str(&config[seg..i]);
                cur.push(' ');
                i = match config[i + 2..].find("*/") {
                    Some(p) => i + 2 + p + 2,
                    None => b.len(),
                };
                seg = i;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' if depth == 0 => {
                cur.push_str(&config[seg..i]);
                args.push(cur.trim().to_string());
                cur.clear();
                i += 1;
                seg = i;
            }
            _ => i += 1,
        }
    }
    cur.push_str(&config[seg..]);
    let last = cur.trim().to_string();
    if !last.is_empty() {
        args.push(last);
    }
    args
}

/// Returns the index just past the double-quoted string starting at `i`.
fn skip_double_quoted(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Returns the index just past the single-quoted string starting at `i`.
fn skip_single_quoted(b: &[u8], i: usize) -> usize {
    match b[i + 1..].iter().position(|&c| c == b'\'') {
        Some(p) => i + 1 + p + 1,
        None => b.len(),
    }
}

/// Is `word` a Click keyword: an uppercase letter followed by uppercase
/// letters, digits and underscores?
pub fn is_keyword(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Splits a `KEYWORD value` argument. The first word must be a keyword
/// ([`is_keyword`]) followed by whitespace or the end of the argument;
/// returns the keyword and the trimmed rest.
pub fn split_keyword(arg: &str) -> Option<(&str, &str)> {
    let arg = arg.trim_start();
    let end = arg
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(arg.len());
    let (kw, rest) = arg.split_at(end);
    if is_keyword(kw) {
        Some((kw, rest.trim()))
    } else {
        None
    }
}

/// The configuration `config` with one argument set to `value`, as a
/// write handler that reconfigures an element leaves it (Click's
/// keyword handlers: `write q.capacity 10` makes `Queue`'s configuration
/// `CAPACITY 10`, and `Queue(100)`'s `10`). If `position` is given and
/// the configuration has a positional argument there, that argument is
/// replaced; otherwise every `KEYWORD ...` argument is removed and
/// `KEYWORD value` is appended. Arguments are joined with `, `.
pub fn set_keyword_arg(
    config: &str,
    position: Option<usize>,
    keyword: &str,
    value: &str,
) -> String {
    let mut args = split_args(config);
    let positional = args
        .iter()
        .take_while(|a| split_keyword(a).is_none())
        .count();
    match position {
        Some(k) if k < positional => args[k] = value.trim().to_string(),
        _ => {
            args.retain(|a| split_keyword(a).is_none_or(|(kw, _)| kw != keyword));
            args.push(format!("{keyword} {}", value.trim()));
        }
    }
    args.join(", ")
}

/// Splits `s` into whitespace-separated words. Quoted strings (`"..."`,
/// `'...'`) and `\<...>` data blocks do not split and keep their quotes;
/// comments are dropped.
pub fn split_words(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut i = 0;
    let mut seg = 0;
    let flush = |cur: &mut String, words: &mut Vec<String>| {
        if !cur.is_empty() {
            words.push(std::mem::take(cur));
        }
    };
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => {
                cur.push_str(&s[seg..i]);
                flush(&mut cur, &mut words);
                i += 1;
                seg = i;
            }
            b'"' => i = skip_double_quoted(b, i),
            b'\'' => i = skip_single_quoted(b, i),
            b'\\' if b.get(i + 1) == Some(&b'<') => {
                i = match s[i..].find('>') {
                    Some(p) => i + p + 1,
                    None => b.len(),
                }
            }
            b'\\' => i = (i + 2).min(b.len()),
            b'/' if matches!(b.get(i + 1), Some(b'/') | Some(b'*')) => {
                cur.push_str(&s[seg..i]);
                flush(&mut cur, &mut words);
                i = if b[i + 1] == b'/' {
                    s[i..].find('\n').map_or(b.len(), |p| i + p)
                } else {
                    s[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2)
                };
                seg = i;
            }
            _ => i += 1,
        }
    }
    cur.push_str(&s[seg.min(b.len())..]);
    flush(&mut cur, &mut words);
    words
}

/// `s` as one Click word that [`unquote`] gives back: unchanged when it is
/// plain (letters, digits and `_ . - / : @ + = ~ %`), otherwise in double
/// quotes with `\\`, `\"` and every control character escaped (three
/// octal digits, so a digit after it stays a digit). Printers use it so
/// that a word with spaces, quotes, parentheses or NULs prints as one word.
pub fn quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_.-/:@+=~%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Removes Click quoting from `s` (Click's `cp_unquote`), lossily converting
/// any non-UTF-8 bytes. See [`unquote_bytes`].
pub fn unquote(s: &str) -> String {
    match String::from_utf8(unquote_bytes(s)) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Removes Click quoting from `s`, giving bytes.
///
/// - Unquoted text passes through unchanged, except that a bare `\<...>`
///   data block is decoded as if it were double-quoted.
/// - `'...'`: everything up to the next `'` is literal.
/// - `"..."`: backslash escapes `\a \b \t \n \v \f \r \\ \"`, `\` followed by
///   1–3 octal digits, `\x` followed by hex digits (the last two give the
///   byte), `\<hex digits and spaces>` data, backslash-newline removed, and
///   any other `\c` gives `c`.
///
/// Quoted and unquoted parts can be mixed: `a"b c"'d'` gives `ab cd`.
pub fn unquote_bytes(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                let end = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 1 + p);
                out.extend_from_slice(&b[i + 1..end]);
                i = (end + 1).min(b.len());
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i = backslash(b, i, &mut out);
                    } else {
                        out.push(b[i]);
                        i += 1;
                    }
                }
                i = (i + 1).min(b.len());
            }
            b'\\' if b.get(i + 1) == Some(&b'<') => match hex_block(b, i + 2, &mut out) {
                Some(next) => i = next,
                None => {
                    out.push(b'\\');
                    i += 1;
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Decodes the backslash sequence at `b[i] == '\\'` (inside double quotes),
/// appending to `out`; returns the index after it.
fn backslash(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return i + 1;
    };
    let simple = match c {
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b't' => Some(b'\t'),
        b'n' => Some(b'\n'),
        b'v' => Some(0x0b),
        b'f' => Some(0x0c),
        b'r' => Some(b'\r'),
        _ => None,
    };
    if let Some(v) = simple {
        out.push(v);
        return i + 2;
    }
    match c {
        b'0'..=b'7' => {
            let mut v: u32 = 0;
            let mut j = i + 1;
            while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push((v & 0xff) as u8);
            j
        }
        b'x' => {
            let mut j = i + 2;
            let mut v: u32 = 0;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                v = ((v << 4) | hexval(b[j])) & 0xff;
                j += 1;
            }
            if j == i + 2 {
                out.push(b'x');
            } else {
                out.push(v as u8);
            }
            j
        }
        b'<' => match hex_block(b, i + 2, out) {
            Some(next) => next,
            None => {
                out.push(b'<');
                i + 2
            }
        },
        b'\n' => i + 2,
        b'\r' => {
            if b.get(i + 2) == Some(&b'\n') {
                i + 3
            } else {
                i + 2
            }
        }
        _ => {
            // any other \c gives c (keeping multi-byte characters whole)
            let len = utf8_len(c);
            out.extend_from_slice(&b[i + 1..(i + 1 + len).min(b.len())]);
            i + 1 + len
        }
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

fn hexval(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => u32::from(c - b'0'),
        b'a'..=b'f' => u32::from(c - b'a' + 10),
        b'A'..=b'F' => u32::from(c - b'A' + 10),
        _ => 0,
    }
}

/// Decodes `hex digits and whitespace >` starting at `j` (just after `\<`).
/// Returns the index after `>`, or `None` (nothing appended) if the block is
/// malformed.
fn hex_block(b: &[u8], j: usize, out: &mut Vec<u8>) -> Option<usize> {
    let mut k = j;
    let mut digits = Vec::new();
    while k < b.len() && b[k] != b'>' {
        if b[k].is_ascii_hexdigit() {
            digits.push(hexval(b[k]) as u8);
        } else if b[k] == b'/' && b.get(k + 1) == Some(&b'/') {
            // comments are allowed inside data blocks
            while k + 1 < b.len() && b[k + 1] != b'\n' {
                k += 1;
            }
        } else if b[k] == b'/' && b.get(k + 1) == Some(&b'*') {
            let p = b[k + 2..].windows(2).position(|w| w == b"*/")?;
            k += 2 + p + 1;
        } else if !b[k].is_ascii_whitespace() {
            return None;
        }
        k += 1;
    }
    if k >= b.len() {
        return None;
    }
    for pair in digits.chunks(2) {
        out.push(if pair.len() == 2 {
            (pair[0] << 4) | pair[1]
        } else {
            pair[0]
        });
    }
    Some(k + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_keyword_arg_replaces_the_positional_or_the_keywords() {
        assert_eq!(
            set_keyword_arg("", Some(0), "CAPACITY", "10"),
            "CAPACITY 10"
        );
        assert_eq!(set_keyword_arg("100", Some(0), "CAPACITY", " 10 "), "10");
        assert_eq!(
            set_keyword_arg("CAPACITY 100, CAPACITY 5", Some(0), "CAPACITY", "7"),
            "CAPACITY 7"
        );
        assert_eq!(
            set_keyword_arg("1, BURST 2, CAPACITY 3", Some(1), "CAPACITY", "9"),
            "1, BURST 2, CAPACITY 9"
        );
        assert_eq!(set_keyword_arg("a, b", None, "X", "1"), "a, b, X 1");
    }

    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn split_args_basic() {
        assert_eq!(split_args(""), Vec::<String>::new());
        assert_eq!(split_args("   "), Vec::<String>::new());
        assert_eq!(split_args("a"), v(&["a"]));
        assert_eq!(split_args(" a , b ,c "), v(&["a", "b", "c"]));
        assert_eq!(split_args("a, , b"), v(&["a", "", "b"]));
        assert_eq!(split_args("1, "), v(&["1"]));
        assert_eq!(split_args(","), v(&[""]));
        assert_eq!(split_args(", a"), v(&["", "a"]));
    }

    #[test]
    fn split_args_respects_quotes_and_brackets() {
        assert_eq!(split_args(r#""a, b", c"#), v(&[r#""a, b""#, "c"]));
        assert_eq!(split_args("'a, b', c"), v(&["'a, b'", "c"]));
        assert_eq!(split_args(r#""a\", b", c"#), v(&[r#""a\", b""#, "c"]));
        assert_eq!(
            split_args("f(a, b), [1, 2], {x, y}"),
            v(&["f(a, b)", "[1, 2]", "{x, y}"])
        );
        assert_eq!(split_args(r"a\, b, c"), v(&[r"a\, b", "c"]));
    }

    #[test]
    fn split_args_strips_comments() {
        assert_eq!(split_args("a, // comment, with comma\n b"), v(&["a", "b"]));
        assert_eq!(split_args("a /* x, y */ b, c"), v(&["a   b", "c"]));
        assert_eq!(split_args("1, /* comment */"), v(&["1"]));
        assert_eq!(split_args("/* only */"), Vec::<String>::new());
        assert_eq!(
            split_args(r#""// not a comment", b"#),
            v(&[r#""// not a comment""#, "b"])
        );
        assert_eq!(split_args("a /* unterminated, b"), v(&["a"]));
    }

    #[test]
    fn data_argument_with_comments() {
        let config = "DATA \\<\n  // Ethernet header\n  00 00 c0 ae 67 ef  08 00\n  /* IP */ 45 00\n>, LIMIT 600000, BURST 5";
        let args = split_args(config);
        assert_eq!(args.len(), 3);
        let (kw, val) = split_keyword(&args[0]).unwrap();
        assert_eq!(kw, "DATA");
        assert_eq!(
            unquote_bytes(val),
            vec![0, 0, 0xc0, 0xae, 0x67, 0xef, 8, 0, 0x45, 0]
        );
        assert_eq!(split_keyword(&args[1]), Some(("LIMIT", "600000")));
        // comments left in a data block are skipped by unquote too
        assert_eq!(unquote_bytes("\\<01 // c\n 02 /* 03 */ 04>"), vec![1, 2, 4]);
        assert_eq!(unquote_bytes("\\<01 /* 03 >"), b"\\<01 /* 03 >".to_vec());
    }

    #[test]
    fn keywords() {
        assert_eq!(split_keyword("LIMIT 10"), Some(("LIMIT", "10")));
        assert_eq!(split_keyword("  BURST\t 32  "), Some(("BURST", "32")));
        assert_eq!(split_keyword("ACTIVE"), Some(("ACTIVE", "")));
        assert_eq!(split_keyword("MAX_2 x y"), Some(("MAX_2", "x y")));
        assert_eq!(split_keyword("Limit 10"), None);
        assert_eq!(split_keyword("10 LIMIT"), None);
        assert_eq!(split_keyword("_X 1"), None);
        assert_eq!(split_keyword("LIMIT=10"), None);
        assert_eq!(split_keyword("18.26.4.1"), None);
        assert_eq!(split_keyword(""), None);
        assert!(is_keyword("A1"));
        assert!(!is_keyword("1A"));
    }

    #[test]
    fn words() {
        assert_eq!(split_words("  a  b\tc\n"), v(&["a", "b", "c"]));
        assert_eq!(
            split_words(r#"a "b c" 'd e'f"#),
            v(&["a", r#""b c""#, "'d e'f"])
        );
        assert_eq!(split_words(r"x \<00 01> y"), v(&["x", r"\<00 01>", "y"]));
        assert_eq!(split_words("a /* c */ b // d"), v(&["a", "b"]));
        assert_eq!(split_words(""), Vec::<String>::new());
    }

    #[test]
    fn unquote_plain_and_mixed() {
        assert_eq!(unquote("abc"), "abc");
        assert_eq!(unquote(r#""a b""#), "a b");
        assert_eq!(unquote(r#"a"b"c"#), "abc");
        assert_eq!(unquote(r#"a"b c"'d'"#), "ab cd");
        assert_eq!(unquote(r"'a\n'"), r"a\n");
        assert_eq!(
            unquote(r"a\nb"),
            r"a\nb",
            "unquoted backslashes pass through"
        );
        assert_eq!(unquote("\"unterminated"), "unterminated");
    }

    #[test]
    fn quote_gives_back_one_word_that_unquote_undoes() {
        assert_eq!(quote("paraclick"), "paraclick");
        assert_eq!(quote("a-b/c.d"), "a-b/c.d");
        for s in [
            "",
            "a b",
            "Click's (x)",
            "q\"\\",
            "nul\0\x0c7 end",
            "\u{7f}é",
        ] {
            let q = quote(s);
            assert_eq!(unquote(&q), s, "{q}");
            assert!(!q.chars().any(|c| (c as u32) < 0x20), "{q:?}");
        }
    }

    #[test]
    fn unquote_escapes() {
        assert_eq!(unquote(r#""\a\b\t\n\v\f\r""#), "\x07\x08\t\n\x0b\x0c\r");
        assert_eq!(unquote(r#""\\ \" \q""#), "\\ \" q");
        assert_eq!(unquote(r#""\101\60\0""#), "A0\0");
        assert_eq!(unquote(r#""\1011""#), "A1", "at most three octal digits");
        assert_eq!(unquote(r#""\x41\x4a\x4""#), "AJ\x04");
        assert_eq!(unquote(r#""\x123""#), "#", "last two hex digits count");
        assert_eq!(unquote(r#""\xz""#), "xz");
        assert_eq!(unquote("\"a\\\nb\""), "ab", "backslash-newline removed");
        assert_eq!(unquote("\"a\\\r\nb\""), "ab");
        assert_eq!(unquote("\"é\\é\""), "éé");
    }

    #[test]
    fn unquote_hex_data() {
        assert_eq!(unquote(r"\< 48 45 4c 4C 4f >"), "HELLO");
        assert_eq!(unquote(r#""x\<4142>y""#), "xABy");
        assert_eq!(unquote_bytes(r"\<08 00 45>"), vec![0x08, 0x00, 0x45]);
        assert_eq!(unquote_bytes(r"\<0800>\<ff>"), vec![0x08, 0x00, 0xff]);
        assert_eq!(
            unquote_bytes(r"'\<41>'"),
            b"\\<41>".to_vec(),
            "not special in single quotes"
        );
        assert_eq!(
            unquote(r"\<zz>"),
            r"\<zz>",
            "malformed block passes through"
        );
        assert_eq!(unquote(r"\<41"), r"\<41");
        assert_eq!(unquote_bytes(r#""\xff""#), vec![0xff]);
        assert_eq!(unquote(r#""\xff""#), "\u{fffd}");
    }
}
