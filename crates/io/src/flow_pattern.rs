//! ToIPFlowDumps' file name patterns: Click's printf-like `%` escapes,
//! expanded per flow. Not an element.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// What an escape expands from: one flow.
pub(crate) struct FlowKey {
    pub aggregate: u32,
    pub src: Ipv4Addr,
    pub sport: u16,
    pub dst: Ipv4Addr,
    pub dport: u16,
    /// 6 (TCP) or 17 (UDP).
    pub proto: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Esc {
        zero: bool,
        width: usize,
        part: Option<u8>,
        conv: char,
    },
}

/// A parsed OUTPUT_PATTERN.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    pieces: Vec<Piece>,
    text: String,
}

impl Pattern {
    /// Parses `s`; an unknown escape or a bad `.N` part is an error.
    pub(crate) fn parse(s: &str) -> Result<Pattern, String> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            let mut zero = false;
            if it.peek() == Some(&'0') {
                zero = true;
                it.next();
            }
            let mut width = 0usize;
            while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
                width = (width * 10 + d as usize).min(64);
                it.next();
            }
            let mut part = None;
            if it.peek() == Some(&'.') {
                it.next();
                let d = it
                    .next()
                    .and_then(|c| c.to_digit(10))
                    .ok_or_else(|| format!("bad '%.' escape in '{s}'"))?;
                part = Some(d as u8);
            }
            let conv = it
                .next()
                .ok_or_else(|| format!("'%' at the end of '{s}'"))?;
            let max_part = match conv {
                '%' => {
                    lit.push('%');
                    continue;
                }
                'n' | 'x' | 'X' => 5,
                's' | 'd' => 3,
                'S' | 'D' | 'p' => {
                    if part.is_some() {
                        return Err(format!("'%.{conv}' takes no part number"));
                    }
                    0
                }
                _ => return Err(format!("unknown escape '%{conv}' in '{s}'")),
            };
            if part.is_some_and(|p| p > max_part) {
                return Err(format!("'%.N{conv}': N must be at most {max_part}"));
            }
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Esc {
                zero,
                width,
                part,
                conv,
            });
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Pattern {
            pieces,
            text: s.to_string(),
        })
    }

    /// The pattern as given.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The file name of flow `k`.
    pub(crate) fn expand(&self, k: &FlowKey) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Esc {
                    zero,
                    width,
                    part,
                    conv,
                } => {
                    let a = k.aggregate;
                    let agg = match part {
                        None => a,
                        Some(0) => a >> 24,
                        Some(1) => (a >> 16) & 255,
                        Some(2) => (a >> 8) & 255,
                        Some(3) => a & 255,
                        Some(4) => a >> 16,
                        Some(_) => a & 0xffff,
                    };
                    let addr = |ip: Ipv4Addr| match part {
                        None => ip.to_string(),
                        Some(i) => ip.octets()[usize::from(*i)].to_string(),
                    };
                    let v = match conv {
                        'n' => agg.to_string(),
                        'x' => format!("{agg:x}"),
                        'X' => format!("{agg:X}"),
                        's' => addr(k.src),
                        'd' => addr(k.dst),
                        'S' => k.sport.to_string(),
                        'D' => k.dport.to_string(),
                        _ => (if k.proto == 6 { "T" } else { "U" }).to_string(),
                    };
                    let w = *width;
                    let _ = if *zero {
                        write!(out, "{v:0>w$}")
                    } else {
                        write!(out, "{v:>w$}")
                    };
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    fn key() -> FlowKey {
        FlowKey {
            aggregate: 0x0102_0304,
            src: Ipv4Addr::new(192, 150, 187, 37),
            sport: 3153,
            dst: Ipv4Addr::new(18, 26, 4, 44),
            dport: 21,
            proto: 6,
        }
    }

    fn x(p: &str) -> String {
        Pattern::parse(p).unwrap().expand(&key())
    }

    #[test]
    fn escapes_expand() {
        assert_eq!(x("/tmp/flow%03n"), format!("/tmp/flow{}", 0x0102_0304));
        assert_eq!(x("f%.0n-%.1n-%.2n-%.3n"), "f1-2-3-4");
        assert_eq!(x("%.4n %.5n"), format!("{} {}", 0x0102, 0x0304));
        assert_eq!(x("%x %X %.5x %010x"), "1020304 1020304 304 0001020304");
        assert_eq!(x("%s:%S>%d:%D %p"), "192.150.187.37:3153>18.26.4.44:21 T");
        assert_eq!(x("%.0s.%.3s/%.1d"), "192.37/26");
        assert_eq!(x("100%% %5S|"), "100%  3153|");
        let mut k = key();
        k.aggregate = 7;
        k.proto = 17;
        assert_eq!(Pattern::parse("f%06n%p").unwrap().expand(&k), "f000007U");
    }

    #[test]
    fn bad_patterns_are_errors() {
        for (p, want) in [
            ("f%q", "unknown escape '%q' in 'f%q'"),
            ("f%", "'%' at the end of 'f%'"),
            ("f%.6n", "'%.Nn': N must be at most 5"),
            ("f%.4s", "'%.Ns': N must be at most 3"),
            ("f%.1S", "'%.S' takes no part number"),
            ("f%.n", "bad '%.' escape in 'f%.n'"),
        ] {
            assert_err(Pattern::parse(p), want);
        }
    }
}
