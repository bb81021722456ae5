//! `$parameter` references in configuration strings.
//!
//! A reference is `$name` (letters, digits, `_`), `${name}`,
//! `${name-default}`, or `${name[INDEX]}`: word INDEX (from 0) of the
//! value split at white space (quoted strings are single words), empty
//! past the last word; INDEX may itself hold references (`${a[$n]}`).
//! References inside single quotes, comments, or after a
//! backslash are not substituted; inside double quotes they are.

use crate::lexer::is_var_byte;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VarRef {
    /// Byte range of the whole reference in the scanned text.
    pub start: usize,
    pub end: usize,
    pub name: String,
    pub default: Option<String>,
    /// `${name[INDEX]}`: INDEX's text, unsubstituted.
    pub index: Option<String>,
}

/// Finds the parameter references in a configuration string.
pub(crate) fn scan_vars(text: &str) -> Vec<VarRef> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_dq = false;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'"' => in_dq = !in_dq,
            b'\'' if !in_dq => {
                i = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 1 + p + 1);
                continue;
            }
            b'/' if !in_dq && b.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(b.len(), |p| i + p);
                continue;
            }
            b'/' if !in_dq && b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                continue;
            }
            b'$' => {
                if let Some(v) = var_at(text, i) {
                    i = v.end;
                    out.push(v);
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses a reference starting at the `$` at `i`.
fn var_at(text: &str, i: usize) -> Option<VarRef> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'{') {
        let ns = i + 2;
        let mut j = ns;
        while j < b.len() && is_var_byte(b[j]) {
            j += 1;
        }
        if j == ns {
            return None;
        }
        let name = text[ns..j].to_string();
        match b.get(j) {
            Some(b'}') => Some(VarRef {
                start: i,
                end: j + 1,
                name,
                default: None,
                index: None,
            }),
            Some(b'[') => {
                // The index runs to the `]` outside braces, then `}`.
                let mut depth = 0;
                let mut k = j + 1;
                while k < b.len() {
                    match b[k] {
                        b'{' => depth += 1,
                        b'}' if depth == 0 => return None,
                        b'}' => depth -= 1,
                        b']' if depth == 0 => break,
                        _ => {}
                    }
                    k += 1;
                }
                if b.get(k + 1) != Some(&b'}') {
                    return None;
                }
                Some(VarRef {
                    start: i,
                    end: k + 2,
                    name,
                    default: None,
                    index: Some(text[j + 1..k].to_string()),
                })
            }
            Some(b'-') => {
                // default runs to the matching '}'
                let mut depth = 1;
                let mut k = j + 1;
                while k < b.len() {
                    match b[k] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                if k >= b.len() {
                    return None;
                }
                Some(VarRef {
                    start: i,
                    end: k + 1,
                    name,
                    default: Some(text[j + 1..k].to_string()),
                    index: None,
                })
            }
            _ => None,
        }
    } else {
        let mut j = i + 1;
        while j < b.len() && is_var_byte(b[j]) {
            j += 1;
        }
        if j == i + 1 {
            return None;
        }
        Some(VarRef {
            start: i,
            end: j,
            name: text[i + 1..j].to_string(),
            default: None,
            index: None,
        })
    }
}

/// Replaces parameter references with their values; a reference without
/// value uses its default, or stays as written.
#[cfg(test)]
pub(crate) fn substitute(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    substitute_capped(text, lookup, usize::MAX).unwrap_or_default()
}

/// [`substitute`], giving up (with the length it would have passed)
/// before the result grows beyond `cap` bytes: parameters that repeat
/// each other (`$b` is `$a$a`, `$c` is `$b$b`, ...) double at every
/// level, and the result is refused before it is allocated.
pub(crate) fn substitute_capped(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    cap: usize,
) -> Result<String, usize> {
    let vars = scan_vars(text);
    if vars.is_empty() {
        return if text.len() > cap {
            Err(text.len())
        } else {
            Ok(text.to_string())
        };
    }
    let mut out = String::with_capacity(text.len().min(cap));
    let mut last = 0;
    let push = |out: &mut String, s: &str| {
        let n = out.len().saturating_add(s.len());
        if n > cap {
            return Err(n);
        }
        out.push_str(s);
        Ok(())
    };
    for v in vars {
        push(&mut out, &text[last..v.start])?;
        let value = match &v.index {
            None => lookup(&v.name).or(v.default),
            Some(ix) => match lookup(&v.name) {
                Some(val) => {
                    let ix = substitute_capped(ix, lookup, cap)?;
                    let word = ix
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| crate::args::split_words(&val).into_iter().nth(n));
                    Some(word.unwrap_or_default())
                }
                None => None,
            },
        };
        match value {
            Some(val) => push(&mut out, &val)?,
            None => push(&mut out, &text[v.start..v.end])?,
        }
        last = v.end;
    }
    push(&mut out, &text[last..])?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &str) -> Vec<String> {
        scan_vars(t).into_iter().map(|v| v.name).collect()
    }

    #[test]
    fn indexed_references_take_one_word() {
        let look = |n: &str| match n {
            "a" => Some("A \"B C\" D".to_string()),
            "n" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(
            substitute("${a[0]}|${a[1]}|${a[$n]}|${a[3]}|${a[x]}", &look),
            "A|\"B C\"|D||"
        );
        // Unknown variables stay as written; malformed forms are text.
        assert_eq!(
            substitute("${z[0]} ${a[0} ${a[0]x", &look),
            "${z[0]} ${a[0} ${a[0]x"
        );
        let v = &scan_vars("x ${a[${n}]} y")[0];
        assert_eq!((v.start, v.end, v.index.as_deref()), (2, 12, Some("${n}")));
    }

    #[test]
    fn scanning() {
        assert_eq!(names("$a, $b_1 x$c"), vec!["a", "b_1", "c"]);
        assert_eq!(names("${dev}0 $"), vec!["dev"]);
        assert_eq!(
            names("'$no' \"$yes\" \\$no // $no\n $y2 /* $no */"),
            vec!["yes", "y2"]
        );
        assert_eq!(names("${x-def} ${ bad} ${y"), vec!["x"]);
        let v = &scan_vars("a ${n-1{2}3} b")[0];
        assert_eq!((v.start, v.end), (2, 12));
        assert_eq!(v.default.as_deref(), Some("1{2}3"));
    }

    #[test]
    fn substituting() {
        let look = |n: &str| match n {
            "a" => Some("1".to_string()),
            "dev" => Some("eth0".to_string()),
            _ => None,
        };
        assert_eq!(substitute("x $a y", &look), "x 1 y");
        assert_eq!(substitute("${dev}.1 $devx", &look), "eth0.1 $devx");
        assert_eq!(substitute("${zz-9} ${a-9}", &look), "9 1");
        assert_eq!(substitute("'$a' \"$a\"", &look), "'$a' \"1\"");
        assert_eq!(substitute("no vars", &look), "no vars");
    }

    #[test]
    fn substituting_stops_at_the_cap() {
        let look = |_: &str| Some("x".repeat(10));
        assert_eq!(substitute_capped("$a$a", &look, 20).unwrap().len(), 20);
        assert_eq!(substitute_capped("$a$a$a", &look, 20), Err(30));
        assert_eq!(substitute_capped("abc", &look, 2), Err(3));
    }
}
