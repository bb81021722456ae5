//! The pattern language of IPClassifier and IPFilter: a lexer, a
//! recursive-descent parser (precedence `not` > `and` > `or` > `?:`) and
//! the AST it produces. The AST is semantic (a `Prim` says "source TCP or
//! UDP port 80", not "bytes 0-1 of the transport header"); `program.rs`
//! lowers it to header-offset tests.
//!
//! Keyword omission follows Click: a primitive without a type keyword takes
//! its type from its value (`10.0.0.0/8` is a net, `www` a port, `syn` a
//! TCP option, `tcp` a protocol, `unfrag` is `ip unfrag`), and a value
//! standing alone after another primitive repeats that primitive's
//! qualifiers when it fits them (`src port 80 or 81` is
//! `src port 80 or src port 81`).

use paraclick_packet::wire::{ip_proto, EtherAddr, Ipv4Prefix};
use paraclick_runtime::args::{ArgEnv, FromArg};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

type R<T> = Result<T, String>;

/// Which address or port of a packet a primitive looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sd {
    Src,
    Dst,
    /// `src or dst` (the default).
    Or,
    /// `src and dst`.
    And,
}

impl Sd {
    /// The combination that keeps De Morgan's law when each side's test is
    /// negated (`port != 80` means neither port is 80).
    pub fn dual(self) -> Sd {
        match self {
            Sd::Or => Sd::And,
            Sd::And => Sd::Or,
            s => s,
        }
    }
}

/// A relation between a (masked) field and a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `a-b` (inclusive range).
    In,
    /// `!= a-b`.
    NotIn,
    /// `& MASK` with no value: the masked field is not zero.
    Nonzero,
}

impl Op {
    /// `!=` and `!= a-b`: a test that holds when the value differs.
    pub fn is_negative(self) -> bool {
        matches!(self, Op::Ne | Op::NotIn)
    }
}

/// `[& mask] op a[-b]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rel {
    pub mask: Option<u32>,
    pub op: Op,
    pub a: u32,
    pub b: u32,
}

impl Rel {
    pub fn eq(a: u32) -> Rel {
        Rel {
            mask: None,
            op: Op::Eq,
            a,
            b: a,
        }
    }
}

/// An integer field of the IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpField {
    Vers,
    Hl,
    Tos,
    Dscp,
    Id,
    Ttl,
    Proto,
}

impl IpField {
    pub fn name(self) -> &'static str {
        match self {
            IpField::Vers => "vers",
            IpField::Hl => "hl",
            IpField::Tos => "tos",
            IpField::Dscp => "dscp",
            IpField::Id => "id",
            IpField::Ttl => "ttl",
            IpField::Proto => "proto",
        }
    }

    /// Largest value the field can hold.
    pub fn max(self) -> u32 {
        match self {
            IpField::Vers | IpField::Hl => 15,
            IpField::Dscp => 63,
            IpField::Id => 65535,
            IpField::Tos | IpField::Ttl | IpField::Proto => 255,
        }
    }
}

/// Which transport protocols a `port` primitive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortProto {
    Tcp,
    Udp,
    /// TCP or UDP.
    Any,
}

/// A pattern primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `[sd] host ADDR` (mask all ones) or `[sd] net ADDR/LEN`,
    /// `ADDR mask MASK`; `ne` for `!=`. `addr` has its host bits cleared.
    Addr {
        sd: Sd,
        addr: u32,
        mask: u32,
        ne: bool,
    },
    /// `ip vers`, `ip hl`, `ip tos`, `ip dscp`, `ip id`, `ip ttl`, `ip proto`.
    Ip { field: IpField, rel: Rel },
    /// `ip frag`: more-fragments set or a nonzero offset.
    Frag,
    /// `ip ect`: an ECN-capable transport (ECN field not zero).
    Ect,
    /// `ip ce`: congestion experienced (ECN field 3).
    Ce,
    /// `[sd] [tcp|udp] port PORT`.
    Port { sd: Sd, proto: PortProto, rel: Rel },
    /// `tcp opt FLAG`: the TCP flag bit is set.
    TcpOpt(u8),
    /// `tcp win WIN`.
    TcpWin(Rel),
    /// `icmp type TYPE`.
    IcmpType(Rel),
    /// `[sd] ether host ETH`: the Ethernet source and/or destination
    /// address in the MAC header; `ne` for `!=`.
    Ether { sd: Sd, addr: [u8; 6], ne: bool },
    /// `ip[OFF:LEN] VALUE`: LEN (1-4) bytes of the IP header.
    IpBytes { off: u16, len: u8, rel: Rel },
    /// `transp[OFF:LEN] VALUE` (`tcp[..]`, `udp[..]`, `icmp[..]` also
    /// require that protocol).
    TranspBytes {
        proto: Option<u8>,
        off: u16,
        len: u8,
        rel: Rel,
    },
}

/// A parsed pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Const(bool),
    Prim(Prim),
    Not(Box<Expr>),
    /// All hold (two or more operands: a chain `a and b and c`).
    And(Vec<Expr>),
    /// One holds (two or more operands).
    Or(Vec<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

// ----- names -----

/// Click's IP port names.
pub(crate) const PORT_NAMES: &[(&str, u32)] = &[
    ("echo", 7),
    ("discard", 9),
    ("daytime", 13),
    ("chargen", 19),
    ("ftp-data", 20),
    ("ftp", 21),
    ("ssh", 22),
    ("telnet", 23),
    ("smtp", 25),
    ("domain", 53),
    ("dns", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("finger", 79),
    ("www", 80),
    ("http", 80),
    ("pop3", 110),
    ("sunrpc", 111),
    ("auth", 113),
    ("nntp", 119),
    ("ntp", 123),
    ("netbios-ns", 137),
    ("netbios-dgm", 138),
    ("netbios-ssn", 139),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("irc", 194),
    ("imap3", 220),
    ("https", 443),
    ("rip", 520),
    ("route", 520),
    ("imaps", 993),
    ("pop3s", 995),
];

/// The qualifier `tcpudp` (TCP or UDP) where a protocol number stands
/// for `tcp`, `udp`, `icmp` in the parser: 0, which no qualifier names.
const TCPUDP: u8 = 0;

/// TCP flag names (`tcp opt`).
const TCP_OPTS: &[(&str, u32)] = &[
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
];

/// Click's ICMP type names.
pub(crate) const ICMP_TYPES: &[(&str, u32)] = &[
    ("echo-reply", 0),
    ("unreachable", 3),
    ("sourcequench", 4),
    ("redirect", 5),
    ("echo", 8),
    ("routeradvert", 9),
    ("routersolicit", 10),
    ("timeexceeded", 11),
    ("parameterproblem", 12),
    ("timestamp", 13),
    ("timestamp-reply", 14),
    ("inforeq", 15),
    ("inforeq-reply", 16),
    ("maskreq", 17),
    ("maskreq-reply", 18),
];

fn lookup(table: &[(&str, u32)], w: &str) -> Option<u32> {
    table.iter().find(|(n, _)| *n == w).map(|&(_, v)| v)
}

fn tcp_opt_name(flag: u8) -> &'static str {
    TCP_OPTS
        .iter()
        .find(|&&(_, v)| v == u32::from(flag))
        .map_or("?", |(n, _)| n)
}

/// Whether `w` is written as an Ethernet address: six parts of one or
/// two hex digits separated by `:` (or all by `-`).
fn is_ether_literal(w: &str) -> bool {
    let six = |sep: char| {
        w.split(sep).count() == 6
            && w.split(sep)
                .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    six(':') || six('-')
}

/// Parses a decimal or `0x` hexadecimal integer.
fn parse_int(w: &str) -> Option<u32> {
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(h, 16).ok()
    } else if !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit()) {
        w.parse().ok()
    } else {
        None
    }
}

/// An integer or a range `A-B` (syntactically: both ends integers).
fn parse_int_or_range(w: &str) -> Option<(u32, Option<u32>)> {
    if let Some(v) = parse_int(w) {
        return Some((v, None));
    }
    let (a, b) = w.split_once('-')?;
    Some((parse_int(a)?, Some(parse_int(b)?)))
}

fn looks_numeric(w: &str) -> bool {
    w.bytes().next().is_some_and(|c| c.is_ascii_digit())
        && !w.contains('.')
        && parse_int_or_range(w).is_some()
}

// ----- lexer -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RelOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    LParen,
    RParen,
    Bang,
    AndAnd,
    OrOr,
    Amp,
    Rel(RelOp),
    Question,
}

#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    tok: Tok<'a>,
    text: &'a str,
}

fn is_delim(c: u8) -> bool {
    c.is_ascii_whitespace() || b"()!&|=<>?".contains(&c)
}

fn lex(s: &str) -> R<Vec<Token<'_>>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let next_is = |x: u8| b.get(i + 1) == Some(&x);
        let (tok, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'?' => (Tok::Question, 1),
            b'!' if next_is(b'=') => (Tok::Rel(RelOp::Ne), 2),
            b'!' => (Tok::Bang, 1),
            b'&' if next_is(b'&') => (Tok::AndAnd, 2),
            b'&' => (Tok::Amp, 1),
            b'|' if next_is(b'|') => (Tok::OrOr, 2),
            b'|' => return Err("unexpected '|' (did you mean '||'?)".into()),
            b'=' if next_is(b'=') => (Tok::Rel(RelOp::Eq), 2),
            b'=' => (Tok::Rel(RelOp::Eq), 1),
            b'<' if next_is(b'=') => (Tok::Rel(RelOp::Le), 2),
            b'<' => (Tok::Rel(RelOp::Lt), 1),
            b'>' if next_is(b'=') => (Tok::Rel(RelOp::Ge), 2),
            b'>' => (Tok::Rel(RelOp::Gt), 1),
            _ => {
                let start = i;
                while i < b.len() && !is_delim(b[i]) {
                    i += 1;
                }
                let w = &s[start..i];
                out.push(Token {
                    tok: Tok::Word(w),
                    text: w,
                });
                continue;
            }
        };
        out.push(Token {
            tok,
            text: &s[i..i + len],
        });
        i += len;
    }
    Ok(out)
}

// ----- parser -----

/// A primitive's type, explicit or inferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Host,
    /// `ether host`.
    EtherHost,
    Net,
    Port,
    Field(IpField),
    Frag,
    Unfrag,
    Ect,
    Ce,
    Opt,
    Win,
    IcmpType,
    IpBytes(u16, u8),
    TranspBytes(Option<u8>, u16, u8),
}

impl Ty {
    fn name(self) -> String {
        match self {
            Ty::Host => "host".into(),
            Ty::EtherHost => "ether host".into(),
            Ty::Net => "net".into(),
            Ty::Port => "port".into(),
            Ty::Field(f) => format!("ip {}", f.name()),
            Ty::Frag => "ip frag".into(),
            Ty::Unfrag => "ip unfrag".into(),
            Ty::Ect => "ip ect".into(),
            Ty::Ce => "ip ce".into(),
            Ty::Opt => "tcp opt".into(),
            Ty::Win => "tcp win".into(),
            Ty::IcmpType => "icmp type".into(),
            Ty::IpBytes(o, l) => format!("ip[{o}:{l}]"),
            Ty::TranspBytes(p, o, l) => format!("{}[{o}:{l}]", transp_name(p)),
        }
    }

    fn takes_value(self) -> bool {
        !matches!(self, Ty::Frag | Ty::Unfrag | Ty::Ect | Ty::Ce)
    }

    fn takes_sd(self) -> bool {
        matches!(self, Ty::Host | Ty::EtherHost | Ty::Net | Ty::Port)
    }

    fn takes_ip(self) -> bool {
        !matches!(
            self,
            Ty::Port | Ty::EtherHost | Ty::Opt | Ty::Win | Ty::IcmpType | Ty::TranspBytes(..)
        )
    }

    /// Whether `tcp`/`udp`/`icmp`/`tcpudp` (protocol `p`) may qualify
    /// this type.
    fn takes_proto(self, p: u8) -> bool {
        match self {
            Ty::Port => p == 6 || p == 17 || p == TCPUDP,
            Ty::Opt | Ty::Win => p == 6,
            Ty::IcmpType => p == 1,
            Ty::TranspBytes(q, _, _) => p != TCPUDP && q.is_none_or(|q| q == p),
            _ => false,
        }
    }

    /// The integer range of the type's values.
    fn max(self) -> u32 {
        match self {
            Ty::Port | Ty::Win => 65535,
            Ty::Field(f) => f.max(),
            Ty::IcmpType => 255,
            Ty::IpBytes(_, l) | Ty::TranspBytes(_, _, l) => bytes_max(l),
            _ => 0,
        }
    }

    /// The value the name `w` stands for in this type, if it names one.
    fn named(self, w: &str) -> Option<u32> {
        let table = match self {
            Ty::Port => PORT_NAMES,
            Ty::Field(IpField::Proto) => return ip_proto::by_name(w).map(u32::from),
            Ty::Opt => TCP_OPTS,
            Ty::IcmpType => ICMP_TYPES,
            _ => return None,
        };
        lookup(table, w)
    }
}

fn bytes_max(len: u8) -> u32 {
    if len >= 4 {
        u32::MAX
    } else {
        (1u32 << (8 * u32::from(len))) - 1
    }
}

fn transp_name(p: Option<u8>) -> &'static str {
    match p {
        None => "transp",
        Some(6) => "tcp",
        Some(17) => "udp",
        Some(1) => "icmp",
        Some(_) => "transp",
    }
}

/// Parses `ip[POS]`, `ip[POS:LEN]`, `transp[..]`, `tcp[..]`, `udp[..]`,
/// `icmp[..]`.
fn bracket_field(w: &str) -> R<Ty> {
    let bad = || format!("bad field '{w}' (expected e.g. 'ip[9:1]' or 'tcp[13]')");
    let open = w.find('[').ok_or_else(bad)?;
    let inner = w[open + 1..].strip_suffix(']').ok_or_else(bad)?;
    let (pos, len) = match inner.split_once(':') {
        Some((p, l)) => (p, Some(l)),
        None => (inner, None),
    };
    let pos = parse_int(pos).filter(|&p| p <= 65535).ok_or_else(bad)? as u16;
    let len = match len {
        Some(l) => parse_int(l)
            .filter(|l| (1..=4).contains(l))
            .ok_or_else(|| format!("bad field '{w}': length must be 1 to 4 bytes"))?
            as u8,
        None => 1,
    };
    match &w[..open] {
        "ip" => Ok(Ty::IpBytes(pos, len)),
        "transp" => Ok(Ty::TranspBytes(None, pos, len)),
        "tcp" => Ok(Ty::TranspBytes(Some(6), pos, len)),
        "udp" => Ok(Ty::TranspBytes(Some(17), pos, len)),
        "icmp" => Ok(Ty::TranspBytes(Some(1), pos, len)),
        _ => Err(bad()),
    }
}

/// A type keyword (after an optional `ip`, `src`/`dst`, `tcp`/`udp`/`icmp`).
fn type_word(w: &str) -> R<Option<Ty>> {
    Ok(Some(match w {
        "host" => Ty::Host,
        "net" => Ty::Net,
        "port" => Ty::Port,
        "proto" => Ty::Field(IpField::Proto),
        "vers" => Ty::Field(IpField::Vers),
        "hl" => Ty::Field(IpField::Hl),
        "id" => Ty::Field(IpField::Id),
        "tos" => Ty::Field(IpField::Tos),
        "dscp" => Ty::Field(IpField::Dscp),
        "ttl" => Ty::Field(IpField::Ttl),
        "frag" => Ty::Frag,
        "unfrag" => Ty::Unfrag,
        "ect" => Ty::Ect,
        "ce" => Ty::Ce,
        "opt" => Ty::Opt,
        "win" => Ty::Win,
        "type" => Ty::IcmpType,
        _ if w.contains('[') => return bracket_field(w).map(Some),
        _ => return Ok(None),
    }))
}

/// Qualifiers given before a primitive's type or value.
#[derive(Clone, Copy, Default)]
struct Quals<'a> {
    ip: Option<&'a str>,
    sd: Option<(Sd, &'a str)>,
    proto: Option<(u8, &'a str)>,
}

/// What a later bare value may inherit.
#[derive(Clone, Copy, Debug)]
struct Prev {
    ty: Ty,
    sd: Option<Sd>,
    proto: Option<u8>,
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    pos: usize,
    env: &'a ArgEnv,
    prev: Option<Prev>,
    depth: usize,
}

/// Deepest nesting of parentheses, negations and `?:` a pattern may use
/// (long `and`/`or` chains are not nesting).
const MAX_DEPTH: usize = 200;

fn unexpected(t: Option<&Token<'_>>) -> String {
    match t {
        Some(t) => format!("unexpected '{}'", t.text),
        None => "unexpected end of pattern".into(),
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.toks.get(self.pos)
    }

    fn peek_tok(&self) -> Option<Tok<'a>> {
        self.peek().map(|t| t.tok)
    }

    fn peek_word_at(&self, k: usize) -> Option<&'a str> {
        match self.toks.get(self.pos + k)?.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    fn peek_word(&self) -> Option<&'a str> {
        self.peek_word_at(0)
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    /// A word that can be a value (not a connective).
    fn value_word_at(&self, k: usize) -> Option<&'a str> {
        self.peek_word_at(k)
            .filter(|w| !matches!(*w, "and" | "or" | "not" | ":"))
    }

    fn is_or(&self) -> bool {
        matches!(self.peek_tok(), Some(Tok::OrOr | Tok::Word("or")))
    }

    fn is_and(&self) -> bool {
        matches!(self.peek_tok(), Some(Tok::AndAnd | Tok::Word("and")))
    }

    /// Whether the next token can begin a factor (for implicit `and`).
    fn starts_factor(&self) -> bool {
        match self.peek_tok() {
            None | Some(Tok::RParen | Tok::Question | Tok::OrOr | Tok::AndAnd) => false,
            Some(Tok::Word(w)) => !matches!(w, "or" | "and" | ":"),
            Some(_) => true,
        }
    }

    fn expr(&mut self) -> R<Expr> {
        let c = self.or_expr()?;
        if self.peek_tok() == Some(Tok::Question) {
            self.bump();
            self.nest()?;
            let a = self.expr()?;
            if self.peek_word() != Some(":") {
                return Err(format!(
                    "expected ':' (surrounded by spaces) after '?', found {}",
                    describe(self.peek())
                ));
            }
            self.bump();
            let b = self.expr()?;
            self.depth -= 1;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn or_expr(&mut self) -> R<Expr> {
        let mut v = vec![self.and_expr()?];
        while self.is_or() {
            self.bump();
            v.push(self.and_expr()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Expr::Or(v)
        })
    }

    fn and_expr(&mut self) -> R<Expr> {
        let mut v = vec![self.not_expr()?];
        loop {
            if self.is_and() {
                self.bump();
            } else if !self.starts_factor() {
                break;
            }
            v.push(self.not_expr()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Expr::And(v)
        })
    }

    /// Enters one level of nesting (`(`, `!`, `?:`), within a limit.
    fn nest(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "pattern nested too deeply (over {MAX_DEPTH} levels)"
            ));
        }
        Ok(())
    }

    fn not_expr(&mut self) -> R<Expr> {
        match self.peek_tok() {
            Some(Tok::Bang | Tok::Word("not")) => {
                self.bump();
                self.nest()?;
                let e = Expr::Not(Box::new(self.not_expr()?));
                self.depth -= 1;
                Ok(e)
            }
            Some(Tok::LParen) => {
                self.bump();
                self.nest()?;
                let e = self.expr()?;
                self.depth -= 1;
                match self.peek_tok() {
                    Some(Tok::RParen) => {
                        self.bump();
                        Ok(e)
                    }
                    None => Err("missing ')'".into()),
                    Some(_) => Err(format!("expected ')', found {}", describe(self.peek()))),
                }
            }
            _ => self.primitive(),
        }
    }

    /// Whether `tcp`/`udp`/`icmp` at the current position qualifies what
    /// follows (`tcp port 80`, `tcp syn`, `udp 53`) rather than standing
    /// alone as `ip proto tcp`.
    fn proto_qualifies(&self, p: u8) -> bool {
        let Some(next) = self.value_word_at(1) else {
            return false;
        };
        if matches!(next, "src" | "dst") {
            return p != 1;
        }
        if let Ok(Some(t)) = type_word(next) {
            return if p == TCPUDP {
                t == Ty::Port
            } else {
                matches!(t, Ty::Port | Ty::Opt | Ty::Win | Ty::IcmpType)
            };
        }
        if looks_numeric(next) {
            return true;
        }
        match p {
            6 => lookup(PORT_NAMES, next).is_some() || lookup(TCP_OPTS, next).is_some(),
            17 | TCPUDP => lookup(PORT_NAMES, next).is_some(),
            _ => lookup(ICMP_TYPES, next).is_some(),
        }
    }

    fn primitive(&mut self) -> R<Expr> {
        match self.peek_word() {
            Some("true") => {
                self.bump();
                return Ok(Expr::Const(true));
            }
            Some("false") => {
                self.bump();
                return Ok(Expr::Const(false));
            }
            Some(w @ ("-" | "any" | "all")) => {
                return Err(format!("'{w}' must be the whole pattern"));
            }
            Some(_) => {}
            // `& MASK ...` or `OP VALUE` after a primitive: its type again.
            None if self.prev.is_some()
                && matches!(self.peek_tok(), Some(Tok::Amp | Tok::Rel(_))) => {}
            None => return Err(unexpected(self.peek())),
        }
        let start = self.pos;
        let mut q = Quals::default();
        let mut ty: Option<(Ty, &'a str)> = None;
        while let Some(w) = self.value_word_at(0) {
            match w {
                "ip" if q.ip.is_none() && q.sd.is_none() && q.proto.is_none() => {
                    q.ip = Some(w);
                    self.bump();
                }
                "src" | "dst" if q.sd.is_none() => {
                    let one = if w == "src" { Sd::Src } else { Sd::Dst };
                    let other = if w == "src" { "dst" } else { "src" };
                    let conj = match self.toks.get(self.pos + 1).map(|t| t.tok) {
                        Some(Tok::Word("or") | Tok::OrOr) => Some(Sd::Or),
                        Some(Tok::Word("and") | Tok::AndAnd) => Some(Sd::And),
                        _ => None,
                    };
                    match conj {
                        Some(c) if self.peek_word_at(2) == Some(other) => {
                            q.sd = Some((c, w));
                            self.pos += 3;
                        }
                        _ => {
                            q.sd = Some((one, w));
                            self.bump();
                        }
                    }
                }
                "ether" if q.ip.is_none() && q.proto.is_none() => {
                    if self.peek_word_at(1) != Some("host") {
                        return Err("expected 'host' after 'ether'".into());
                    }
                    self.pos += 2;
                    ty = Some((Ty::EtherHost, "ether host"));
                    break;
                }
                "tcp" | "udp" | "icmp" | "tcpudp" if q.proto.is_none() => {
                    let p = match w {
                        "tcp" => 6,
                        "udp" => 17,
                        "tcpudp" => TCPUDP,
                        _ => 1,
                    };
                    if !self.proto_qualifies(p) {
                        if p == TCPUDP && self.pos == start && q.ip.is_none() {
                            // `tcpudp` alone: TCP or UDP.
                            self.bump();
                            self.prev = None;
                            return Ok(Expr::Or(
                                [6, 17]
                                    .map(|p| {
                                        Expr::Prim(Prim::Ip {
                                            field: IpField::Proto,
                                            rel: Rel::eq(p),
                                        })
                                    })
                                    .to_vec(),
                            ));
                        }
                        break;
                    }
                    q.proto = Some((p, w));
                    self.bump();
                }
                _ => {
                    if let Some(t) = type_word(w)? {
                        self.bump();
                        ty = Some((t, w));
                    }
                    break;
                }
            }
        }

        // `ip` alone (`ip and tcp`) matches every (IP) packet.
        if ty.is_none() && q.sd.is_none() && q.proto.is_none() && q.ip.is_some() {
            let more = self.value_word_at(0).is_some()
                || matches!(self.peek_tok(), Some(Tok::Amp | Tok::Rel(_)));
            if !more {
                return Ok(Expr::Const(true));
            }
        }

        if let Some((t, w)) = ty {
            if !t.takes_value() {
                return self.finish_novalue(t, w, q);
            }
        }

        // [& MASK] [OP] [VALUE]
        let last_text = |p: &Parser<'a>| p.toks.get(p.pos.wrapping_sub(1)).map_or("", |t| t.text);
        let mut mask = None;
        if self.peek_tok() == Some(Tok::Amp) {
            self.bump();
            match self.value_word_at(0) {
                Some(m) => {
                    mask = Some(m);
                    self.bump();
                }
                None => {
                    return Err(format!(
                        "missing mask after '&', found {}",
                        describe(self.peek())
                    ))
                }
            }
        }
        let mut op = None;
        if let Some(Tok::Rel(r)) = self.peek_tok() {
            op = Some((r, self.peek().map_or("", |t| t.text)));
            self.bump();
        }
        let value = self.value_word_at(0);
        if value.is_some() {
            self.bump();
        }

        let ty = match ty {
            Some((t, _)) => t,
            None => {
                let Some(v) = value else {
                    if self.pos == start {
                        return Err(unexpected(self.peek()));
                    }
                    return Err(format!(
                        "missing value after '{}'",
                        self.toks[self.pos - 1].text
                    ));
                };
                let (t, inherited) = self.infer(v, &q)?;
                if let Some(p) = inherited {
                    if q.sd.is_none() {
                        q.sd = p.sd.map(|s| (s, ""));
                    }
                    if q.proto.is_none() {
                        q.proto = p.proto.map(|p| (p, ""));
                    }
                }
                t
            }
        };
        if value.is_none() && !(mask.is_some() && op.is_none()) {
            return Err(format!("missing value after '{}'", last_text(self)));
        }
        self.finish(ty, q, mask, op, value)
    }

    /// The type of a primitive given only by its value: the previous
    /// primitive's, if the value fits it (returned too, for its
    /// qualifiers), else the value's own.
    fn infer(&self, v: &'a str, q: &Quals<'a>) -> R<(Ty, Option<Prev>)> {
        if let Some(p) = self.prev {
            let ok_sd = q.sd.is_none() || p.ty.takes_sd();
            let ok_proto = q.proto.is_none_or(|(x, _)| p.ty.takes_proto(x));
            let ok_ip = q.ip.is_none() || p.ty.takes_ip();
            if ok_sd && ok_proto && ok_ip && self.fits(p.ty, v) {
                return Ok((p.ty, Some(p)));
            }
        }
        if looks_numeric(v) {
            return match q.proto {
                Some((6 | 17 | TCPUDP, _)) => Ok((Ty::Port, None)),
                Some((1, _)) => Ok((Ty::IcmpType, None)),
                _ => Err(format!("missing type before '{v}' (e.g. 'port {v}')")),
            };
        }
        if Ipv4Prefix::from_str(v).is_ok() {
            return Ok((Ty::Net, None));
        }
        let mut cands: Vec<Ty> = [Ty::Port, Ty::Field(IpField::Proto), Ty::Opt, Ty::IcmpType]
            .into_iter()
            .filter(|t| t.named(v).is_some())
            .collect();
        if cands.len() > 1 {
            let fitting: Vec<Ty> = cands
                .iter()
                .copied()
                .filter(|t| {
                    (q.sd.is_none() || t.takes_sd())
                        && (q.ip.is_none() || t.takes_ip())
                        && q.proto.is_none_or(|(x, _)| t.takes_proto(x))
                })
                .collect();
            if !fitting.is_empty() {
                cands = fitting;
            }
        }
        match cands.len() {
            0 => {}
            1 => return Ok((cands[0], None)),
            _ => {
                let says: Vec<String> = cands
                    .iter()
                    .map(|t| format!("'{} {v}'", t.name()))
                    .collect();
                return Err(format!("'{v}' is ambiguous: say {}", says.join(" or ")));
            }
        }
        if Ipv4Prefix::from_arg(v, self.env).is_ok() || Ipv4Addr::from_arg(v, self.env).is_ok() {
            return Ok((Ty::Net, None));
        }
        if self.ether(v).is_some() {
            return Ok((Ty::EtherHost, None));
        }
        if v == "ip6" || v == "ipv6" || v.parse::<std::net::Ipv6Addr>().is_ok() || v.contains("::")
        {
            return Err(format!(
                "'{v}': IPv6 is not supported here (IPClassifier and IPFilter match IPv4, \
                 as Click's do); classify IPv6 with Classifier (12/86dd, 20/3a for ICMPv6) \
                 and CheckIP6Header"
            ));
        }
        Err(format!("unknown word '{v}'"))
    }

    /// The Ethernet address `v` stands for: written out, or an
    /// AddressInfo name with one.
    fn ether(&self, v: &str) -> Option<EtherAddr> {
        if is_ether_literal(v) {
            EtherAddr::from_arg(v, &ArgEnv::default()).ok()
        } else {
            self.env.lookup_name(v).and_then(|e| e.ether)
        }
    }

    /// Whether `v` can be a value of type `t`.
    fn fits(&self, t: Ty, v: &str) -> bool {
        match t {
            Ty::Host | Ty::Net => {
                Ipv4Prefix::from_str(v).is_ok()
                    || (!looks_numeric(v)
                        && (Ipv4Prefix::from_arg(v, self.env).is_ok()
                            || Ipv4Addr::from_arg(v, self.env).is_ok()))
            }
            Ty::EtherHost => self.ether(v).is_some(),
            Ty::Opt => lookup(TCP_OPTS, v).is_some(),
            _ if !t.takes_value() => false,
            _ => looks_numeric(v) || t.named(v).is_some(),
        }
    }

    fn check_quals(&self, t: Ty, q: &Quals<'a>) -> R<()> {
        if let Some((_, w)) = q.sd {
            if !t.takes_sd() && !w.is_empty() {
                return Err(format!("'{w}' does not apply to '{}'", t.name()));
            }
        }
        if let Some((p, w)) = q.proto {
            if !t.takes_proto(p) && !w.is_empty() {
                return Err(format!("'{w}' does not apply to '{}'", t.name()));
            }
        }
        if let Some(w) = q.ip {
            if !t.takes_ip() {
                return Err(format!("'{w}' does not apply to '{}'", t.name()));
            }
        }
        Ok(())
    }

    fn finish_novalue(&mut self, t: Ty, _w: &'a str, q: Quals<'a>) -> R<Expr> {
        self.check_quals(t, &q)?;
        self.prev = Some(Prev {
            ty: t,
            sd: None,
            proto: None,
        });
        Ok(match t {
            Ty::Frag => Expr::Prim(Prim::Frag),
            Ty::Unfrag => Expr::Not(Box::new(Expr::Prim(Prim::Frag))),
            Ty::Ect => Expr::Prim(Prim::Ect),
            _ => Expr::Prim(Prim::Ce),
        })
    }

    fn finish(
        &mut self,
        t: Ty,
        q: Quals<'a>,
        mask: Option<&'a str>,
        op: Option<(RelOp, &'a str)>,
        value: Option<&'a str>,
    ) -> R<Expr> {
        self.check_quals(t, &q)?;
        let sd = q.sd.map(|(s, _)| s);
        let proto = q.proto.map(|(p, _)| p);
        self.prev = Some(Prev { ty: t, sd, proto });
        let sd = sd.unwrap_or(Sd::Or);
        let ether_value = t == Ty::EtherHost
            || (t == Ty::Host
                && value.is_some_and(|v| {
                    self.ether(v).is_some() && Ipv4Addr::from_arg(v, self.env).is_err()
                }));
        let prim = match t {
            _ if ether_value => {
                if mask.is_some() {
                    return Err("'&' does not apply to 'ether host'".into());
                }
                let ne = match op {
                    None | Some((RelOp::Eq, _)) => false,
                    Some((RelOp::Ne, _)) => true,
                    Some((_, o)) => {
                        return Err(format!("relation '{o}' does not apply to 'ether host'"))
                    }
                };
                let v = value.unwrap_or("");
                let a = self
                    .ether(v)
                    .ok_or_else(|| format!("bad Ethernet address '{v}'"))?;
                Prim::Ether { sd, addr: a.0, ne }
            }
            Ty::Host | Ty::Net => {
                // `[sd] host & MASK [OP] ADDR`: the address field ANDed
                // with MASK is compared with ADDR (masked too).
                let and_mask = match mask {
                    Some(m) => {
                        if value.is_none() {
                            return Err(format!(
                                "missing address after '& {m}' for '{}'",
                                t.name()
                            ));
                        }
                        let m = Ipv4Addr::from_arg(m, self.env)
                            .map_err(|_| format!("bad mask '{m}' for '{}'", t.name()))?;
                        u32::from(m)
                    }
                    None => u32::MAX,
                };
                let ne = match op {
                    None | Some((RelOp::Eq, _)) => false,
                    Some((RelOp::Ne, _)) => true,
                    Some((_, o)) => {
                        return Err(format!("relation '{o}' does not apply to '{}'", t.name()))
                    }
                };
                let v = value.unwrap_or("");
                let (addr, m) = self.address(t, v)?;
                let m = m & and_mask;
                Prim::Addr {
                    sd,
                    addr: addr & m,
                    mask: m,
                    ne,
                }
            }
            Ty::Opt => {
                if let Some((_, o)) = op {
                    return Err(format!("relation '{o}' does not apply to 'tcp opt'"));
                }
                if mask.is_some() {
                    return Err("'&' does not apply to 'tcp opt'".into());
                }
                let v = value.unwrap_or("");
                let f = lookup(TCP_OPTS, v).ok_or_else(|| format!("unknown TCP option '{v}'"))?;
                Prim::TcpOpt(f as u8)
            }
            _ => {
                let rel = self.rel(t, mask, op, value)?;
                match t {
                    Ty::Port => Prim::Port {
                        sd,
                        proto: match proto {
                            Some(6) => PortProto::Tcp,
                            Some(17) => PortProto::Udp,
                            _ => PortProto::Any,
                        },
                        rel,
                    },
                    Ty::Field(field) => Prim::Ip { field, rel },
                    Ty::Win => Prim::TcpWin(rel),
                    Ty::IcmpType => Prim::IcmpType(rel),
                    Ty::IpBytes(off, len) => Prim::IpBytes { off, len, rel },
                    Ty::TranspBytes(p, off, len) => Prim::TranspBytes {
                        proto: p.or(proto),
                        off,
                        len,
                        rel,
                    },
                    _ => unreachable!("value types handled above"),
                }
            }
        };
        Ok(Expr::Prim(prim))
    }

    /// An address value: `ADDR`, `ADDR/LEN`, `ADDR/MASK`, `ADDR mask MASK`,
    /// or an AddressInfo name (a host under `host`, else its network).
    fn address(&mut self, t: Ty, v: &'a str) -> R<(u32, u32)> {
        let what = if t == Ty::Host {
            "IP address"
        } else {
            "IP prefix"
        };
        if self.peek_word() == Some("mask") {
            self.bump();
            let Some(m) = self.value_word_at(0) else {
                return Err(format!(
                    "missing value after 'mask', found {}",
                    describe(self.peek())
                ));
            };
            self.bump();
            let a = Ipv4Addr::from_arg(v, self.env).map_err(|_| format!("bad IP address '{v}'"))?;
            let m = Ipv4Addr::from_arg(m, self.env).map_err(|_| format!("bad mask '{m}'"))?;
            return Ok((u32::from(a), u32::from(m)));
        }
        if t == Ty::Host {
            if let Ok(a) = Ipv4Addr::from_arg(v, self.env) {
                return Ok((u32::from(a), u32::MAX));
            }
        }
        if let Ok(p) = Ipv4Prefix::from_arg(v, self.env) {
            return Ok((u32::from(p.addr), p.mask_u32()));
        }
        if let Ok(a) = Ipv4Addr::from_arg(v, self.env) {
            return Ok((u32::from(a), u32::MAX));
        }
        Err(format!("bad {what} '{v}'"))
    }

    fn rel(
        &self,
        t: Ty,
        mask: Option<&str>,
        op: Option<(RelOp, &str)>,
        value: Option<&str>,
    ) -> R<Rel> {
        let max = t.max();
        let tname = t.name();
        let range_err = |w: &str| format!("'{w}' out of range for '{tname}' (0-{max})");
        let mask = match mask {
            Some(m) => {
                let v = parse_int(m).ok_or_else(|| format!("bad mask '{m}'"))?;
                if v > max {
                    return Err(range_err(m));
                }
                Some(v)
            }
            None => None,
        };
        let Some(v) = value else {
            // `& MASK` alone.
            return Ok(Rel {
                mask,
                op: Op::Nonzero,
                a: 0,
                b: 0,
            });
        };
        let (a, b) = match parse_int_or_range(v) {
            Some(ab) => ab,
            None => match t.named(v) {
                Some(x) => (x, None),
                None => {
                    let what = match t {
                        Ty::Port => "port",
                        Ty::Field(IpField::Proto) => "protocol",
                        Ty::IcmpType => "ICMP type",
                        _ => return Err(format!("bad value '{v}' for '{tname}'")),
                    };
                    return Err(format!("unknown {what} '{v}'"));
                }
            },
        };
        if a > max || b.is_some_and(|b| b > max) {
            return Err(range_err(v));
        }
        if b.is_some_and(|b| b < a) {
            return Err(format!("bad range '{v}'"));
        }
        let op = match (op, b) {
            (None | Some((RelOp::Eq, _)), None) => Op::Eq,
            (Some((RelOp::Ne, _)), None) => Op::Ne,
            (Some((RelOp::Lt, _)), None) => Op::Lt,
            (Some((RelOp::Le, _)), None) => Op::Le,
            (Some((RelOp::Gt, _)), None) => Op::Gt,
            (Some((RelOp::Ge, _)), None) => Op::Ge,
            (None | Some((RelOp::Eq, _)), Some(_)) => Op::In,
            (Some((RelOp::Ne, _)), Some(_)) => Op::NotIn,
            (Some((_, o)), Some(_)) => {
                return Err(format!("relation '{o}' cannot take a range ('{v}')"));
            }
        };
        Ok(Rel {
            mask,
            op,
            a,
            b: b.unwrap_or(a),
        })
    }
}

fn describe(t: Option<&Token<'_>>) -> String {
    match t {
        Some(t) => format!("'{}'", t.text),
        None => "end of pattern".into(),
    }
}

/// Parses one pattern. `-`, `any` and `all` alone match every packet.
/// AddressInfo names in `env` stand for their addresses.
pub fn parse_pattern(text: &str, env: &ArgEnv) -> Result<Expr, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty pattern".into());
    }
    if matches!(text, "-" | "any" | "all") {
        return Ok(Expr::Const(true));
    }
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        env,
        prev: None,
        depth: 0,
    };
    let e = p.expr()?;
    if p.pos < p.toks.len() {
        return Err(unexpected(p.peek()));
    }
    Ok(e)
}

// ----- display (canonical, reparseable) -----

impl fmt::Display for Sd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sd::Src => "src",
            Sd::Dst => "dst",
            Sd::Or => "src or dst",
            Sd::And => "src and dst",
        })
    }
}

impl fmt::Display for Rel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = self.mask {
            write!(f, " & {m}")?;
        }
        let (a, b) = (self.a, self.b);
        match self.op {
            Op::Eq if self.mask.is_none() => write!(f, " {a}"),
            Op::Eq => write!(f, " == {a}"),
            Op::Ne => write!(f, " != {a}"),
            Op::Lt => write!(f, " < {a}"),
            Op::Le => write!(f, " <= {a}"),
            Op::Gt => write!(f, " > {a}"),
            Op::Ge => write!(f, " >= {a}"),
            Op::In if self.mask.is_none() => write!(f, " {a}-{b}"),
            Op::In => write!(f, " == {a}-{b}"),
            Op::NotIn => write!(f, " != {a}-{b}"),
            Op::Nonzero => Ok(()),
        }
    }
}

impl fmt::Display for Prim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Prim::Addr { sd, addr, mask, ne } => {
                let a = Ipv4Addr::from(addr);
                let ne = if ne { "!= " } else { "" };
                if mask == u32::MAX {
                    write!(f, "{sd} host {ne}{a}")
                } else if mask.leading_ones() + mask.trailing_zeros() == 32 {
                    write!(f, "{sd} net {ne}{a}/{}", mask.leading_ones())
                } else {
                    write!(f, "{sd} net {ne}{a} mask {}", Ipv4Addr::from(mask))
                }
            }
            Prim::Ether { sd, addr, ne } => {
                let ne = if ne { "!= " } else { "" };
                let a = addr.map(|b| format!("{b:02x}")).join(":");
                write!(f, "{sd} ether host {ne}{a}")
            }
            Prim::Ip { field, rel } => write!(f, "ip {}{rel}", field.name()),
            Prim::Frag => f.write_str("ip frag"),
            Prim::Ect => f.write_str("ip ect"),
            Prim::Ce => f.write_str("ip ce"),
            Prim::Port { sd, proto, rel } => {
                let p = match proto {
                    PortProto::Tcp => "tcp ",
                    PortProto::Udp => "udp ",
                    PortProto::Any => "",
                };
                write!(f, "{sd} {p}port{rel}")
            }
            Prim::TcpOpt(flag) => write!(f, "tcp opt {}", tcp_opt_name(flag)),
            Prim::TcpWin(rel) => write!(f, "tcp win{rel}"),
            Prim::IcmpType(rel) => write!(f, "icmp type{rel}"),
            Prim::IpBytes { off, len, rel } => write!(f, "ip[{off}:{len}]{rel}"),
            Prim::TranspBytes {
                proto,
                off,
                len,
                rel,
            } => write!(f, "{}[{off}:{len}]{rel}", transp_name(proto)),
        }
    }
}

fn chain(f: &mut fmt::Formatter<'_>, v: &[Expr], sep: &str) -> fmt::Result {
    f.write_str("(")?;
    for (i, e) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{e}")?;
    }
    f.write_str(")")
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(b) => write!(f, "{b}"),
            Expr::Prim(p) => write!(f, "{p}"),
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::And(v) => chain(f, v, " && "),
            Expr::Or(v) => chain(f, v, " || "),
            Expr::Cond(c, a, b) => write!(f, "({c} ? {a} : {b})"),
        }
    }
}
