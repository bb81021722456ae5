//! Configuration arguments, parsed Click's way.
//!
//! ```ignore
//! let mut a = cx.args();
//! let capacity = a.read_p::<usize>("CAPACITY").unwrap_or(1000); // positional or keyword
//! let burst = a.read::<usize>("BURST").unwrap_or(32);           // keyword only
//! let addr = a.read_mp::<Ipv4Addr>("ADDR");                     // mandatory positional
//! a.complete()?;  // every bad, missing or unknown argument, one a line
//! // Check relations between values only after `complete`.
//! ```
//!
//! Every read records its error and goes on, as Click's `Args` does, so
//! `complete` reports every bad argument of an element at once. A bad
//! optional argument reads as `None`; a bad or missing mandatory one as
//! its type's [`FromArg::placeholder`], never used because `complete`
//! fails.
//!
//! Positional arguments come first; an argument whose first word is an
//! all-caps keyword followed by a value is a keyword argument. Values may
//! be quoted; names defined by AddressInfo stand for their addresses.

use paraclick_lang::args::{split_args, split_keyword, unquote, unquote_bytes};
use paraclick_packet::wire::{EtherAddr, Ipv4Prefix, Ipv6Prefix};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::time::Duration;

pub use crate::ifaddr::AddrEntry;

/// What argument parsing can consult: the named addresses so far.
#[derive(Clone, Debug, Default)]
pub struct ArgEnv {
    pub names: HashMap<String, AddrEntry>,
    /// Configuring for `paraclick check` only. A word that can only be a
    /// host network interface's name (`eth1`), where an IP or Ethernet
    /// address is expected, is then accepted even if this host has no
    /// such interface, as Click's click-check accepts it (it never
    /// configures elements): the configuration may be meant for another
    /// machine. It reads as a stand-in address (192.0.2.1,
    /// 02:00:00:00:00:01) that is never used. A real run looks the
    /// interface up and, when it is missing, says so.
    pub checking: bool,
    /// Which files the configuration may read ([`crate::ConfigCx::allowed_file`]).
    pub files: paraclick_lang::FilePolicy,
    /// Port names PortInfo elements defined, in configuration order.
    pub ports: Vec<PortName>,
    /// Annotation names AnnotationInfo elements defined, in configuration
    /// order.
    pub annos: Vec<AnnoName>,
    /// The compound of the element being configured (its name up to and
    /// including the last `/`; empty at top level, and after the
    /// configuration). AddressInfo defines its names in its own compound
    /// (`SCOPE` + name), and a name is looked up from the innermost
    /// compound enclosing the element outwards, as Click does: a slice's
    /// (or compound's) `if0` is its own.
    pub scope: String,
}

/// An annotation name an AnnotationInfo element defined: `size` bytes of
/// the packet's user annotation area from byte `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnoName {
    pub name: String,
    pub offset: usize,
    pub size: usize,
}

/// A TCP/UDP port name a PortInfo element defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortName {
    /// The compound the PortInfo is in (its element name up to and
    /// including the last `/`; empty at top level): the name holds there.
    pub scope: String,
    pub name: String,
    pub port: u16,
    /// `tcp` or `udp`; `None` for both.
    pub proto: Option<&'static str>,
}

impl ArgEnv {
    /// The annotation AnnotationInfo named `name`: (offset, size) in the
    /// user annotation area (the last definition wins).
    pub fn anno_name(&self, name: &str) -> Option<(usize, usize)> {
        self.annos
            .iter()
            .rev()
            .find(|a| a.name == name)
            .map(|a| (a.offset, a.size))
    }

    /// The port that `name` stands for in an element named `element`, for
    /// protocol `proto` (`tcp`/`udp`): the definition of the innermost
    /// compound enclosing the element that defines it, the last one there.
    pub fn port_name(&self, element: &str, name: &str, proto: &str) -> Option<u16> {
        self.ports
            .iter()
            .filter(|p| {
                p.name == name
                    && p.proto.is_none_or(|x| x == proto)
                    && element.starts_with(p.scope.as_str())
            })
            .fold(None::<&PortName>, |best, p| match best {
                Some(b) if b.scope.len() > p.scope.len() => Some(b),
                _ => Some(p),
            })
            .map(|p| p.port)
    }
}

/// Whether `s` can be a Linux network interface's name and nothing else
/// an address argument accepts: 1 to 15 bytes of letters, digits, `-`,
/// `_`, `.`, beginning with a lowercase letter (AddressInfo names are
/// conventionally uppercase).
pub fn is_interface_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s.as_bytes()[0].is_ascii_lowercase()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The error for an address argument `s` that nothing defines.
fn no_address(what: &str, s: &str, name: &str) -> String {
    if is_interface_name(name) {
        format!(
            "expected {what}, not '{s}': no AddressInfo defines '{name}' and this host has no \
             network interface '{name}' (an interface name stands for its address)"
        )
    } else {
        format!("expected {what}, not '{s}'")
    }
}

impl ArgEnv {
    /// The addresses `name` stands for: an AddressInfo name, else a host
    /// network device's addresses (Click reads `eth0` as the device's).
    pub fn lookup(&self, name: &str) -> Option<&AddrEntry> {
        self.lookup_name(name)
            .or_else(|| crate::ifaddr::interface(name))
    }

    /// The AddressInfo name `name` as seen from [`ArgEnv::scope`]: the
    /// definition in the innermost enclosing compound that has one.
    pub fn lookup_name(&self, name: &str) -> Option<&AddrEntry> {
        let mut scope = self.scope.as_str();
        while !scope.is_empty() {
            if let Some(e) = self.names.get(&format!("{scope}{name}")) {
                return Some(e);
            }
            // `a/b/` -> `a/`; `a/` -> ``.
            let inner = &scope[..scope.len() - 1];
            scope = inner.rfind('/').map_or("", |i| &inner[..=i]);
        }
        self.names.get(name)
    }
}

/// A value that can be read from one configuration argument.
pub trait FromArg: Sized {
    /// What the value is, for error messages ("IP address").
    const WHAT: &'static str;
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String>;
    /// A value that stands in for a bad or missing mandatory argument
    /// until [`Args::complete`] reports the error.
    fn placeholder() -> Self;
}

fn parse_uint(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

macro_rules! uint_arg {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            const WHAT: &'static str = "unsigned integer";
            fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
                let v = parse_uint(s).ok_or_else(|| format!("expected {}", Self::WHAT))?;
                <$t>::try_from(v).map_err(|_| format!("{} out of range", s.trim()))
            }
            fn placeholder() -> Self { 0 }
        }
    )*};
}
uint_arg!(u8, u16, u32, u64, usize);

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            const WHAT: &'static str = "integer";
            fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
                let s = s.trim();
                let (neg, body) = match s.strip_prefix('-') { Some(b) => (true, b), None => (false, s.strip_prefix('+').unwrap_or(s)) };
                let v = parse_uint(body).ok_or_else(|| format!("expected {}", Self::WHAT))? as i128;
                let v = if neg { -v } else { v };
                <$t>::try_from(v).map_err(|_| format!("{} out of range", s))
            }
            fn placeholder() -> Self { 0 }
        }
    )*};
}
int_arg!(i32, i64);

impl FromArg for f64 {
    const WHAT: &'static str = "real number";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        s.trim()
            .parse()
            .map_err(|_| format!("expected {}", Self::WHAT))
    }
    fn placeholder() -> Self {
        0.0
    }
}

impl FromArg for bool {
    const WHAT: &'static str = "boolean";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        match s.trim() {
            "true" | "yes" | "1" | "t" | "y" | "on" => Ok(true),
            "false" | "no" | "0" | "f" | "n" | "off" => Ok(false),
            _ => Err(format!("expected {} (true or false)", Self::WHAT)),
        }
    }
    fn placeholder() -> Self {
        false
    }
}

impl FromArg for String {
    const WHAT: &'static str = "string";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        Ok(unquote(s.trim()))
    }
    fn placeholder() -> Self {
        String::new()
    }
}

/// Raw data, with Click's quoting and `\<hex>` blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl FromArg for Bytes {
    const WHAT: &'static str = "data";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        Ok(Bytes(unquote_bytes(s.trim())))
    }
    fn placeholder() -> Self {
        Bytes(Vec::new())
    }
}

/// An argument kept as written (quotes and all), e.g. an element name or a
/// sub-language (Classifier patterns, Script instructions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raw(pub String);

impl FromArg for Raw {
    const WHAT: &'static str = "argument";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        Ok(Raw(s.trim().to_string()))
    }
    fn placeholder() -> Self {
        Raw(String::new())
    }
}

/// The longest time argument: 2^32 seconds (136 years, the range of
/// Click's 32-bit seconds). Timers add times to a clock counted in
/// nanoseconds (u64): a time of 10^11 s wrapped it, so a timer set that
/// far ahead fired at once.
pub const MAX_DURATION_SECS: u64 = 1 << 32;

/// Parses Click's time intervals: a number with an optional unit (`s`,
/// `sec`, `ms`, `msec`, `us`, `usec`, `ns`, `nsec`, `m`, `min`, `h`, `hr`).
/// `None` if it is not one, or is negative or longer than
/// [`MAX_DURATION_SECS`].
pub fn parse_duration(s: &str) -> Option<Duration> {
    parse_duration_checked(s).ok()
}

/// [`parse_duration`], saying what is wrong.
pub fn parse_duration_checked(s: &str) -> Result<Duration, String> {
    let bad = || "expected time in seconds".to_string();
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let mult = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" | "msec" | "msecs" => 1e-3,
        "us" | "usec" | "usecs" => 1e-6,
        "ns" | "nsec" | "nsecs" => 1e-9,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86400.0,
        _ => return Err(bad()),
    };
    let secs = v * mult;
    if secs.is_nan() || secs < 0.0 {
        return Err(bad());
    }
    if secs > MAX_DURATION_SECS as f64 {
        return Err(format!(
            "time {s} is more than the maximum, {MAX_DURATION_SECS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl FromArg for Duration {
    const WHAT: &'static str = "time in seconds";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        parse_duration_checked(s)
    }
    fn placeholder() -> Self {
        Duration::ZERO
    }
}

/// A bandwidth in bytes per second. Accepts Click's units: `bps`, `kbps`,
/// `Mbps`, `Gbps` (bits), `Bps`, `kBps`, `MBps`, `GBps` (bytes); a bare
/// number is bytes per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth(pub f64);

impl FromArg for Bandwidth {
    const WHAT: &'static str = "bandwidth";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let v: f64 = num
            .parse()
            .map_err(|_| format!("expected {}", Self::WHAT))?;
        let unit = unit.trim();
        let (scale, rest) = match unit.chars().next() {
            Some('k' | 'K') => (1e3, &unit[1..]),
            Some('M') => (1e6, &unit[1..]),
            Some('G') => (1e9, &unit[1..]),
            _ => (1.0, unit),
        };
        let per_byte = match rest {
            "" | "Bps" | "B/s" => 1.0,
            "bps" | "b/s" => 1.0 / 8.0,
            _ => return Err(format!("expected {} (e.g. 10Mbps)", Self::WHAT)),
        };
        Ok(Bandwidth(v * scale * per_byte))
    }
    fn placeholder() -> Self {
        Bandwidth(0.0)
    }
}

impl FromArg for Ipv4Addr {
    const WHAT: &'static str = "IP address";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(a) = Ipv4Addr::from_str(s) {
            return Ok(a);
        }
        let (name, suffix) = match s.split_once(':') {
            Some((n, x)) => (n, Some(x)),
            None => (s, None),
        };
        if let Some(e) = env.lookup(name) {
            if let Some(ip) = e.ip {
                match suffix {
                    None | Some("ip") => return Ok(ip),
                    Some("bcast") => {
                        let len = e.prefix_len.unwrap_or(32);
                        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                        return Ok(Ipv4Addr::from(u32::from(ip) | !mask));
                    }
                    Some("net") | Some("ipnet") => {
                        let len = e.prefix_len.unwrap_or(32);
                        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                        return Ok(Ipv4Addr::from(u32::from(ip) & mask));
                    }
                    _ => {}
                }
            }
            if suffix == Some("gw") {
                return crate::ifaddr::gateway(name)
                    .ok_or_else(|| format!("no default gateway known for '{name}'"));
            }
        }
        Err(format!("expected {}, not '{}'", Self::WHAT, s))
    }
    fn placeholder() -> Self {
        Ipv4Addr::UNSPECIFIED
    }
}

/// Click's abbreviated prefixes: the address before the `/` may be cut
/// to its leading bytes (`0/0`, `10/8`, `18.26.4/24`), the rest zero.
pub fn parse_abbrev_prefix(s: &str) -> Option<Ipv4Prefix> {
    let (a, len) = s.split_once('/')?;
    let parts: Vec<&str> = a.split('.').collect();
    if parts.len() > 3 {
        return None;
    }
    let mut b = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        b[i] = p.parse().ok()?;
    }
    Ipv4Prefix::from_str(&format!("{}/{len}", Ipv4Addr::from(b))).ok()
}

impl FromArg for Ipv4Prefix {
    const WHAT: &'static str = "IP prefix";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        if let Some(p) = Ipv4Prefix::from_str(s)
            .ok()
            .or_else(|| parse_abbrev_prefix(s))
        {
            return Ok(p);
        }
        let (name, suffix) = match s.split_once(':') {
            Some((n, x)) => (n, Some(x)),
            None => (s, None),
        };
        if let Some(e) = env.lookup(name) {
            if let Some(ip) = e.ip {
                let len = e.prefix_len.unwrap_or(32);
                match suffix {
                    None | Some("ipnet") | Some("net") => {
                        let p = Ipv4Prefix::from_str(&format!("{ip}/{len}"))
                            .map_err(|_| format!("bad prefix for '{name}'"))?;
                        return Ok(p);
                    }
                    Some("ip") => {
                        return Ipv4Prefix::from_str(&format!("{ip}/32"))
                            .map_err(|_| format!("bad prefix for '{name}'"));
                    }
                    _ => {}
                }
            }
        }
        Err(format!("expected {}, not '{}'", Self::WHAT, s))
    }
    fn placeholder() -> Self {
        Ipv4Prefix::host(Ipv4Addr::UNSPECIFIED)
    }
}

impl FromArg for Ipv6Addr {
    const WHAT: &'static str = "IPv6 address";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(a) = Ipv6Addr::from_str(s) {
            return Ok(a);
        }
        let name = s.strip_suffix(":ip6").unwrap_or(s);
        if let Some(a) = env.lookup(name).and_then(|e| e.ip6) {
            return Ok(a);
        }
        Err(format!("expected {}, not '{}'", Self::WHAT, s))
    }
    fn placeholder() -> Self {
        Ipv6Addr::UNSPECIFIED
    }
}

impl FromArg for Ipv6Prefix {
    const WHAT: &'static str = "IPv6 prefix";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(p) = Ipv6Prefix::from_str(s) {
            return Ok(p);
        }
        let (name, suffix) = match s.split_once(':') {
            Some((n, x)) if env.lookup(n).is_some() => (n, Some(x)),
            _ => (s, None),
        };
        if let Some(e) = env.lookup(name) {
            if let Some(ip) = e.ip6 {
                match suffix {
                    None | Some("ip6net") | Some("net") => {
                        return Ok(Ipv6Prefix {
                            addr: ip,
                            len: e.prefix6_len.unwrap_or(128),
                        })
                    }
                    Some("ip6") => return Ok(Ipv6Prefix::host(ip)),
                    _ => {}
                }
            }
        }
        Err(format!("expected {}, not '{}'", Self::WHAT, s))
    }
    fn placeholder() -> Self {
        Ipv6Prefix::host(Ipv6Addr::UNSPECIFIED)
    }
}

impl FromArg for EtherAddr {
    const WHAT: &'static str = "Ethernet address";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(e) = EtherAddr::from_str(s) {
            return Ok(e);
        }
        let name = s.strip_suffix(":eth").unwrap_or(s);
        match env.lookup(name) {
            Some(e) => {
                if let Some(e) = e.ether {
                    return Ok(e);
                }
            }
            None if env.checking && is_interface_name(name) => {
                return Ok(EtherAddr([2, 0, 0, 0, 0, 1]));
            }
            None => return Err(no_address(Self::WHAT, s, name)),
        }
        Err(format!("expected {}, not '{}'", Self::WHAT, s))
    }
    fn placeholder() -> Self {
        EtherAddr([0; 6])
    }
}

#[derive(Debug)]
struct Item {
    keyword: Option<String>,
    value: String,
    used: bool,
}

/// Click-style argument reader over one configuration string.
pub struct Args<'a> {
    items: Vec<Item>,
    next_pos: usize,
    env: &'a ArgEnv,
    errors: Vec<String>,
}

impl<'a> Args<'a> {
    pub fn new(config: &str, env: &'a ArgEnv) -> Args<'a> {
        let items = split_args(config)
            .into_iter()
            .map(|a| match split_keyword(&a) {
                // A lone capitalized word with no value is positional.
                Some((k, v)) if !v.is_empty() => Item {
                    keyword: Some(k.to_string()),
                    value: v.to_string(),
                    used: false,
                },
                _ => Item {
                    keyword: None,
                    value: a,
                    used: false,
                },
            })
            .collect();
        Args {
            items,
            next_pos: 0,
            env,
            errors: Vec::new(),
        }
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Parses `v`, recording the error if it is bad.
    fn parse<T: FromArg>(&mut self, name: &str, v: &str) -> Option<T> {
        match T::from_arg(v, self.env) {
            Ok(x) => Some(x),
            Err(e) => {
                self.errors.push(format!("{name}: {e}"));
                None
            }
        }
    }

    /// Records an error found while configuring (a bad combination of
    /// arguments, say); [`Args::complete`] reports it with the others.
    pub fn error(&mut self, msg: impl Into<String>) {
        self.errors.push(msg.into());
    }

    fn mandatory<T: FromArg>(&mut self, name: &str, v: Option<Option<T>>) -> T {
        match v {
            Some(Some(x)) => x,
            Some(None) => T::placeholder(),
            None => {
                self.errors
                    .push(format!("missing mandatory {name} argument"));
                T::placeholder()
            }
        }
    }

    fn take_keyword(&mut self, name: &str) -> Option<String> {
        // The last occurrence wins, as in Click.
        let mut found = None;
        for it in self.items.iter_mut() {
            if it.keyword.as_deref() == Some(name) {
                it.used = true;
                found = Some(it.value.clone());
            }
        }
        found
    }

    /// The next positional argument: keyword arguments may come before
    /// or between positional ones (`ARPQuerier(TIMEOUT 1s, IP, ETH)`, as
    /// Click reads it); positional ones are taken in order.
    fn take_positional(&mut self) -> Option<String> {
        while self
            .items
            .get(self.next_pos)
            .is_some_and(|it| it.keyword.is_some())
        {
            self.next_pos += 1;
        }
        let it = self.items.get_mut(self.next_pos)?;
        if it.used {
            return None;
        }
        it.used = true;
        self.next_pos += 1;
        Some(it.value.clone())
    }

    /// Keyword-only argument (`None` if absent or bad).
    pub fn read<T: FromArg>(&mut self, name: &str) -> Option<T> {
        let v = self.take_keyword(name)?;
        self.parse(name, &v)
    }

    /// Mandatory keyword argument.
    pub fn read_m<T: FromArg>(&mut self, name: &str) -> T {
        let v = self.take_keyword(name).map(|v| self.parse(name, &v));
        self.mandatory(name, v)
    }

    /// Raw value of an optional positional-or-keyword argument: `None` if
    /// absent or empty.
    fn take_p(&mut self, name: &str) -> Option<String> {
        if let Some(v) = self.take_keyword(name) {
            return Some(v);
        }
        self.take_positional().filter(|v| !v.trim().is_empty())
    }

    /// Optional argument, positional or keyword (`None` if absent or bad).
    pub fn read_p<T: FromArg>(&mut self, name: &str) -> Option<T> {
        let v = self.take_p(name)?;
        self.parse(name, &v)
    }

    /// Mandatory argument, positional or keyword.
    pub fn read_mp<T: FromArg>(&mut self, name: &str) -> T {
        let v = self.take_p(name).map(|v| self.parse(name, &v));
        self.mandatory(name, v)
    }

    /// Every occurrence of a keyword, in order (bad ones recorded and
    /// left out).
    pub fn read_all<T: FromArg>(&mut self, name: &str) -> Vec<T> {
        let vals: Vec<String> = self
            .items
            .iter_mut()
            .filter(|it| it.keyword.as_deref() == Some(name))
            .map(|it| {
                it.used = true;
                it.value.clone()
            })
            .collect();
        vals.iter().filter_map(|v| self.parse(name, v)).collect()
    }

    /// The remaining positional arguments, as written.
    pub fn rest(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(v) = self.take_positional() {
            out.push(v);
        }
        out
    }

    /// Every remaining argument, keyword-looking or not, as written
    /// (keywords rejoined with their value). For elements whose arguments
    /// are a language of their own.
    pub fn rest_all(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for it in self.items.iter_mut().filter(|it| !it.used) {
            it.used = true;
            match &it.keyword {
                Some(k) => out.push(format!("{k} {}", it.value)),
                None => out.push(it.value.clone()),
            }
        }
        out
    }

    /// Fails, with every error found (one a line), if an argument was bad,
    /// missing or not read.
    pub fn complete(self) -> Result<(), String> {
        let mut errs = self.errors;
        for it in &self.items {
            if !it.used {
                match &it.keyword {
                    Some(k) => errs.push(format!("unknown keyword {k}")),
                    None => errs.push(format!("too many arguments ('{}')", it.value)),
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_err;

    #[test]
    fn positional_and_keywords() {
        let env = ArgEnv::default();
        let mut a = Args::new("1000, BURST 8, STOP true", &env);
        assert_eq!(a.read_p::<usize>("CAPACITY"), Some(1000));
        assert_eq!(a.read::<usize>("BURST"), Some(8));
        assert_eq!(a.read::<bool>("STOP"), Some(true));
        assert_eq!(a.read::<bool>("ACTIVE"), None);
        a.complete().unwrap();
    }

    #[test]
    fn keywords_before_and_between_positionals() {
        let env = ArgEnv::default();
        let mut a = Args::new("TIMEOUT 2, 1.0.0.1, BURST 8, 9", &env);
        assert_eq!(a.read_mp::<Ipv4Addr>("IP"), Ipv4Addr::new(1, 0, 0, 1));
        assert_eq!(a.read_p::<usize>("CAPACITY"), Some(9));
        assert_eq!(a.read::<usize>("BURST"), Some(8));
        assert_eq!(a.read::<usize>("TIMEOUT"), Some(2));
        a.complete().unwrap();
    }

    #[test]
    fn keyword_given_for_positional() {
        let env = ArgEnv::default();
        let mut a = Args::new("CAPACITY 5", &env);
        assert_eq!(a.read_p::<usize>("CAPACITY"), Some(5));
        a.complete().unwrap();
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let env = ArgEnv::default();
        let mut a = Args::new("abc, FOO 1, 7, BURST x, STOP maybe", &env);
        assert_eq!(a.read_p::<usize>("CAPACITY"), None);
        assert_eq!(a.read::<usize>("BURST"), None);
        assert!(!a.read_m::<bool>("STOP"));
        assert_eq!(a.read_m::<u32>("LENGTH"), 0);
        assert_eq!(
            a.complete().unwrap_err(),
            "CAPACITY: expected unsigned integer\n\
             BURST: expected unsigned integer\n\
             STOP: expected boolean (true or false)\n\
             missing mandatory LENGTH argument\n\
             unknown keyword FOO\n\
             too many arguments ('7')"
        );
        let mut a = Args::new("", &env);
        assert_eq!(a.read_mp::<u32>("LENGTH"), 0);
        a.error("LENGTH must be positive");
        assert_eq!(
            a.complete().unwrap_err(),
            "missing mandatory LENGTH argument\nLENGTH must be positive"
        );
    }

    #[test]
    fn units() {
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10ms"), Some(Duration::from_millis(10)));
        assert_eq!(parse_duration("2 min"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("-1"), None);
        // Too big for a Duration (it panicked), or for the timers' clock
        // (10^11 s wrapped it): an error.
        assert_eq!(parse_duration("18446744073709551615"), None);
        assert_eq!(parse_duration("1e300"), None);
        assert_eq!(parse_duration("inf"), None);
        assert_eq!(parse_duration("100000000000"), None);
        let e = Duration::from_arg("4294967297", &ArgEnv::default()).unwrap_err();
        assert!(
            e.contains("more than the maximum, 4294967296 seconds"),
            "{e}"
        );
        assert_eq!(
            parse_duration("4294967296"),
            Some(Duration::from_secs(1 << 32))
        );
        assert_eq!(
            parse_duration("10000000ms"),
            Some(Duration::from_secs(10_000))
        );
        let env = ArgEnv::default();
        assert_eq!(Bandwidth::from_arg("8Mbps", &env).unwrap(), Bandwidth(1e6));
        assert_eq!(
            Bandwidth::from_arg("1000", &env).unwrap(),
            Bandwidth(1000.0)
        );
        assert_err(
            Bandwidth::from_arg("1 furlong", &env),
            "expected bandwidth (e.g. 10Mbps)",
        );
        assert_eq!(u16::from_arg("0x0800", &env).unwrap(), 0x800);
        assert_err(u8::from_arg("256", &env), "256 out of range");
        assert_eq!(i32::from_arg("-5", &env).unwrap(), -5);
    }

    #[test]
    fn named_addresses() {
        let mut env = ArgEnv::default();
        env.names.insert(
            "eth0".into(),
            AddrEntry {
                ip: Some(Ipv4Addr::new(1, 0, 0, 1)),
                prefix_len: Some(8),
                ether: Some(EtherAddr([0, 1, 2, 3, 4, 5])),
                ip6: Some("2001:db8::1".parse().unwrap()),
                prefix6_len: Some(64),
            },
        );
        assert_eq!(
            Ipv4Addr::from_arg("eth0", &env).unwrap(),
            Ipv4Addr::new(1, 0, 0, 1)
        );
        assert_eq!(
            Ipv4Addr::from_arg("eth0:bcast", &env).unwrap(),
            Ipv4Addr::new(1, 255, 255, 255)
        );
        assert_eq!(
            EtherAddr::from_arg("eth0", &env).unwrap(),
            EtherAddr([0, 1, 2, 3, 4, 5])
        );
        let p = Ipv4Prefix::from_arg("eth0", &env).unwrap();
        assert_eq!(p.to_string(), "1.0.0.1/8");
        assert_err(
            Ipv4Addr::from_arg("eth1", &env),
            "expected IP address, not 'eth1'",
        );
        let a6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(Ipv6Addr::from_arg("eth0", &env).unwrap(), a6);
        assert_eq!(Ipv6Addr::from_arg("eth0:ip6", &env).unwrap(), a6);
        assert_eq!(
            Ipv6Addr::from_arg(" ::1 ", &env).unwrap(),
            Ipv6Addr::LOCALHOST
        );
        assert_eq!(
            Ipv6Prefix::from_arg("eth0", &env).unwrap().to_string(),
            "2001:db8::1/64"
        );
        assert_eq!(Ipv6Prefix::from_arg("eth0:ip6", &env).unwrap().len, 128);
        assert_eq!(Ipv6Prefix::from_arg("fe80::/10", &env).unwrap().len, 10);
        assert_eq!(
            Ipv6Addr::from_arg("10.0.0.1", &env).unwrap_err(),
            "expected IPv6 address, not '10.0.0.1'"
        );
        assert_err(
            Ipv6Prefix::from_arg("eth1", &env),
            "expected IPv6 prefix, not 'eth1'",
        );
    }

    #[test]
    fn missing_interface_names() {
        // A real run: a missing interface is a clear error.
        let run = ArgEnv::default();
        let e = EtherAddr::from_arg("nosuchdev9", &run).unwrap_err();
        assert!(
            e.starts_with("expected Ethernet address, not 'nosuchdev9'"),
            "{e}"
        );
        assert!(e.contains("no network interface 'nosuchdev9'"), "{e}");
        // `check`: accepted (the configuration may be for another host),
        // as a stand-in address.
        let check = ArgEnv {
            checking: true,
            ..ArgEnv::default()
        };
        assert_eq!(
            EtherAddr::from_arg("nosuchdev9", &check).unwrap(),
            EtherAddr([2, 0, 0, 0, 0, 1])
        );
        assert_eq!(
            EtherAddr::from_arg("nosuchdev9:eth", &check).unwrap(),
            EtherAddr([2, 0, 0, 0, 0, 1])
        );
        // Existing interfaces still read as themselves.
        assert_eq!(
            EtherAddr::from_arg("lo", &check).unwrap(),
            EtherAddr([0; 6])
        );
        // Words that cannot be interface names are still errors.
        for bad in ["MY_ETH", "1:2:3", "eth0/1", "averyveryverylongname", ""] {
            let e = EtherAddr::from_arg(bad, &check).unwrap_err();
            assert!(!e.contains("interface"), "{bad}: {e}");
        }
        assert!(is_interface_name("enp0s31f6") && is_interface_name("veth-a.10"));
        assert!(!is_interface_name("Eth0") && !is_interface_name("0eth"));
    }

    #[test]
    fn device_names() {
        let env = ArgEnv::default();
        assert_eq!(Ipv4Addr::from_arg("lo", &env).unwrap(), Ipv4Addr::LOCALHOST);
        assert_eq!(
            Ipv4Addr::from_arg("lo:bcast", &env).unwrap(),
            Ipv4Addr::new(127, 255, 255, 255)
        );
        assert_eq!(
            Ipv4Addr::from_arg("lo:net", &env).unwrap(),
            Ipv4Addr::new(127, 0, 0, 0)
        );
        assert_eq!(
            EtherAddr::from_arg("lo:eth", &env).unwrap(),
            EtherAddr([0; 6])
        );
        assert_eq!(
            Ipv4Prefix::from_arg("lo:ipnet", &env).unwrap().to_string(),
            "127.0.0.1/8"
        );
        // Loopback has no default route through it.
        let e = Ipv4Addr::from_arg("lo:gw", &env).unwrap_err();
        assert!(e.contains("gateway"), "{e}");
        assert_err(
            Ipv4Addr::from_arg("nosuchdev9", &env),
            "expected IP address, not 'nosuchdev9'",
        );
        assert_eq!(Ipv4Prefix::from_arg("0/0", &env).unwrap().len, 0);
        assert_eq!(
            Ipv4Prefix::from_arg("18.26.4/24", &env)
                .unwrap()
                .to_string(),
            "18.26.4.0/24"
        );
        assert_err(
            Ipv4Prefix::from_arg("1.2.3.4.5/8", &env),
            "expected IP prefix, not '1.2.3.4.5/8'",
        );
    }
}
