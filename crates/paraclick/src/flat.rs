//! Click command-line helpers: the exit status from a handler (`-x`) and
//! the time report (`-t`). The flattened configuration (`-o`, `paraclick
//! flatten`) is `paraclick_lang::print_click`.

use std::time::Duration;

/// Click's `-x` rule: an integer handler value is the exit status (0 to
/// 255); a boolean gives 0 for true and 1 for false.
pub fn exit_status(v: &str) -> Option<u8> {
    let v = v.trim();
    if let Ok(n) = v.parse::<i64>() {
        return Some((n & 0xff) as u8);
    }
    match v {
        "true" | "yes" | "t" | "y" | "on" => Some(0),
        "false" | "no" | "f" | "n" | "off" => Some(1),
        _ => None,
    }
}

/// Wall-clock, user and system time of the process so far.
pub fn time_report(wall: Duration) -> String {
    // SAFETY: getrusage only writes the rusage struct we pass.
    let (user, sys) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            (tv(ru.ru_utime), tv(ru.ru_stime))
        } else {
            (f64::NAN, f64::NAN)
        }
    };
    format!(
        "{:.3}s wall, {user:.3}s user, {sys:.3}s system",
        wall.as_secs_f64()
    )
}

/// Expands one `-h` spec, as Click's driver does: `HANDLER` alone is a
/// global handler; in `ELEMENT.HANDLER` the element part is an element
/// name, else a glob pattern over the names (`*`, `?`, `[...]`), else an
/// element class. A pattern or class names every matching element that
/// has a read handler of that name. Returns the `ELEMENT.HANDLER` specs to
/// read and whether the spec was a pattern or class (whose values are
/// printed under their names).
pub fn expand_handler_spec(
    spec: &str,
    names: &[&str],
    class_of: impl Fn(&str) -> String,
    has_read: impl Fn(&str, &str) -> bool,
) -> Result<(Vec<String>, bool), String> {
    let Some((elem, handler)) = spec.split_once('.') else {
        return Ok((vec![spec.to_string()], false));
    };
    if names.contains(&elem) {
        return Ok((vec![spec.to_string()], false));
    }
    let pattern = elem.contains(['*', '?', '[']);
    let mut any = false;
    let mut calls = Vec::new();
    for &n in names {
        let hit = if pattern {
            glob_match(elem.as_bytes(), n.as_bytes())
        } else {
            class_of(n) == elem
        };
        if hit {
            any = true;
            if has_read(n, handler) {
                calls.push(format!("{n}.{handler}"));
            }
        }
    }
    match (any, pattern) {
        (true, _) => Ok((calls, true)),
        (false, true) => Err(format!("no element matching '{elem}'")),
        (false, false) => Err(format!("no element '{elem}'")),
    }
}

/// Shell-style glob: `*` any run, `?` one character, `[abc]`, `[a-z]`,
/// `[!a]` or `[^a]` one character of (or not of) a set.
pub fn glob_match(p: &[u8], s: &[u8]) -> bool {
    // Backtracking over the last `*` only: linear in practice.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(pi + 1),
            Some(b'[') => class_match(&p[pi..], s[si])
                .map(|(hit, len)| (hit, pi + len))
                .and_then(|(hit, next)| hit.then_some(next)),
            Some(&c) if c == s[si] => Some(pi + 1),
            _ => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                si += 1;
            }
            (None, Some((sp, ss))) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// `[...]` at the start of `p` against `c`: (matched, length of the
/// bracket expression), or None when the bracket is not closed (then it
/// matches a literal `[`).
fn class_match(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == b']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
            hit |= (p[i]..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    (c == b'[').then_some((true, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(b"*.x", b"a.x"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"c*", b"c"));
        assert!(glob_match(b"a?c", b"abc"));
        assert!(!glob_match(b"a?c", b"ac"));
        assert!(glob_match(b"q[0-9]", b"q7"));
        assert!(!glob_match(b"q[!0-9]", b"q7"));
        assert!(glob_match(b"*/c[ab]*", b"x/cat"));
        assert!(!glob_match(b"*/c[ab]*", b"x/dog"));
        assert!(glob_match(b"a*b*c", b"aXbYbZc"));
        assert!(!glob_match(b"a*b*c", b"aXbYbZ"));
    }

    #[test]
    fn handler_specs_expand_by_name_pattern_and_class() {
        let names = ["c", "d", "sub/c2", "q"];
        let class = |e: &str| if e == "q" { "Queue" } else { "Counter" }.to_string();
        let read = |e: &str, h: &str| h == "count" && e != "q";
        let x = |s| expand_handler_spec(s, &names, class, read);
        assert_eq!(x("c.count").unwrap(), (vec!["c.count".to_string()], false));
        // A name wins over a class of the same name; a global has no dot.
        assert_eq!(x("stop").unwrap(), (vec!["stop".to_string()], false));
        assert_eq!(
            x("*c*.count").unwrap(),
            (
                vec!["c.count".to_string(), "sub/c2.count".to_string()],
                true
            )
        );
        assert_eq!(
            x("Counter.count").unwrap().0,
            ["c.count", "d.count", "sub/c2.count"]
        );
        // Matching elements without the handler are left out.
        assert_eq!(x("q*.count").unwrap(), (vec![], true));
        assert_eq!(x("z*.count").unwrap_err(), "no element matching 'z*'");
        assert_eq!(x("Nope.count").unwrap_err(), "no element 'Nope'");
    }

    #[test]
    fn exit_values() {
        assert_eq!(exit_status("3\n"), Some(3));
        assert_eq!(exit_status("true"), Some(0));
        assert_eq!(exit_status("false"), Some(1));
        assert_eq!(exit_status("maybe"), None);
    }
}
