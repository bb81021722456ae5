//! `$parameter` references in configuration strings.
//!
//! A reference is `$name` (letters, digits, `_`), `${name}`, or
//! `${name-default}`. References inside single quotes, comments, or after a
//! backslash are not substituted; inside double quotes they are.

use crate::lexer::is_var_byte;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VarRef {
    /// Byte range of the whole reference in the scanned text.
    pub start: usize,
    pub end: usize,
    pub name: String,
    pub default: Option<String>,
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
            }),
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
        })
    }
}

/// Replaces parameter references with their values; a reference without
/// value uses its default, or stays as written.
pub(crate) fn substitute(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let vars = scan_vars(text);
    if vars.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for v in vars {
        out.push_str(&text[last..v.start]);
        match lookup(&v.name).or(v.default) {
            Some(val) => out.push_str(&val),
            None => out.push_str(&text[v.start..v.end]),
        }
        last = v.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &str) -> Vec<String> {
        scan_vars(t).into_iter().map(|v| v.name).collect()
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
}
