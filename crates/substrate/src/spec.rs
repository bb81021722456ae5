//! The substrate file: what a substrate has (cores, physical interfaces
//! and their rates) and its slices (a Click configuration each, its
//! cores, its metalinks and their rates), read from TOML and checked
//! whole: every error is reported, each naming the table it is in.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The most slices a substrate runs.
pub const MAX_SLICES: usize = 64;
/// The most physical interfaces.
pub const MAX_INTERFACES: usize = 32;
/// The most metalinks of one slice.
pub const MAX_METALINKS: usize = 32;
/// The longest slice configuration (its text or file), in bytes.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;
/// The longest substrate file, or `slice.add` text, in bytes.
pub const MAX_SPEC_BYTES: usize = MAX_CONFIG_BYTES + (64 << 10);
/// The longest name (slice, interface, metalink).
pub const MAX_NAME: usize = 32;
/// A metalink's ingress queue capacity unless it says.
pub const DEFAULT_QUEUE: usize = 1000;
/// The most a metalink's queue may hold.
pub const MAX_QUEUE: usize = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubstrate {
    cores: Option<usize>,
    queue_manager: Option<bool>,
    #[serde(default)]
    interface: BTreeMap<String, RawInterface>,
    #[serde(default)]
    slice: BTreeMap<String, RawSlice>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterface {
    rate: String,
    input: Option<String>,
    output: Option<String>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawSlice {
    config: Option<String>,
    text: Option<String>,
    #[serde(default)]
    defines: BTreeMap<String, String>,
    #[serde(default)]
    cores: usize,
    cpu_share: Option<f64>,
    sharing: Option<String>,
    weight: Option<f64>,
    #[serde(default)]
    metalink: BTreeMap<String, RawMetalink>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawMetalink {
    interface: String,
    vlan: Option<u64>,
    udp: Option<u64>,
    local: Option<String>,
    remote: Option<String>,
    local_mac: Option<String>,
    remote_mac: Option<String>,
    rate: String,
    queue: Option<usize>,
}

/// A substrate: what it has and its slices.
#[derive(Clone, Debug)]
pub struct Spec {
    /// What error messages call the file.
    pub file: String,
    /// Worker threads: one for the substrate's own work (the physical
    /// interfaces, and the slices given no cores), the others given to
    /// slices whole.
    pub cores: usize,
    /// The queue manager (on unless the file says `queue_manager =
    /// false`): per metalink a token bucket (strict slices) and its own
    /// egress queue, the interface's deficit round robin over them. Off,
    /// every metalink of an interface pushes into one shared FIFO in
    /// front of the link's rate: what a substrate without isolation
    /// does (a measurement baseline; no rate is then held per metalink).
    pub queue_manager: bool,
    pub interfaces: Vec<Interface>,
    pub slices: Vec<SliceSpec>,
}

/// A physical interface.
#[derive(Clone, Debug)]
pub struct Interface {
    pub name: String,
    /// The link's rate, bytes per second.
    pub rate: f64,
    /// The element that receives from it (`FromDevice(NAME)` unless the
    /// file says), as `Class(config)`.
    pub input: String,
    /// The element that sends on it (`ToDevice(NAME)` unless the file
    /// says); it is pushed to.
    pub output: String,
    /// The line of its table in the file (1 if unknown).
    pub line: u32,
}

/// How a metalink is told apart on its interface.
#[derive(Clone, Debug, PartialEq)]
pub enum Tag {
    /// An 802.1Q VLAN ID.
    Vlan(u16),
    /// A UDP/IPv4 tunnel: packets to `port` (IP header of 20 bytes),
    /// sent from `local` to `remote`, Ethernet addresses as given.
    Udp {
        port: u16,
        local: Ipv4Addr,
        remote: Ipv4Addr,
        local_mac: String,
        remote_mac: String,
    },
}

/// A slice's virtual link, carried on a physical interface.
#[derive(Clone, Debug)]
pub struct Metalink {
    /// The name the slice's configuration gives its device
    /// (`FromDevice(NAME)`, `ToDevice(NAME)`).
    pub name: String,
    pub interface: String,
    pub tag: Tag,
    /// Provisioned rate, bytes per second (the slice's frames, before
    /// the tag or tunnel is added).
    pub rate: f64,
    /// Ingress queue capacity.
    pub queue: usize,
}

/// A slice: an ordinary Click configuration and what it is given.
#[derive(Clone, Debug)]
pub struct SliceSpec {
    pub name: String,
    /// Its configuration (name: the file, or `slice NAME`).
    pub source: paraclick_lang::Source,
    pub defines: Vec<(String, String)>,
    /// Dedicated cores (worker threads); 0: it shares the substrate's.
    pub cores: usize,
    /// Its share of the substrate's thread (`cpu_share`, in (0, 1]), for
    /// a slice without cores; `None`: an equal part of what the others
    /// leave (see [`cpu_shares`]).
    pub cpu_share: Option<f64>,
    /// Strict: each metalink's output held to its rate (token bucket);
    /// otherwise work-conserving: no bucket, the interface shared by
    /// deficit round robin with the other slices.
    pub strict: bool,
    /// A work-conserving slice's weight in its interfaces' deficit round
    /// robin (`weight`, default 1): busy metalinks share the link's
    /// bandwidth in proportion to their weights.
    pub weight: f64,
    pub metalinks: Vec<Metalink>,
    pub line: u32,
}

impl Spec {
    /// The slice called `name`.
    pub fn slice(&self, name: &str) -> Option<&SliceSpec> {
        self.slices.iter().find(|s| s.name == name)
    }
}

/// Where slice configurations may come from.
#[derive(Clone, Debug)]
pub enum ConfigFiles {
    /// `config = FILE` relative to this directory (the substrate file's).
    Dir(PathBuf),
    /// Only inline `text` (a control-socket peer names no file).
    InlineOnly,
}

/// A bandwidth: `10Mbps`, `1.5Gbps`, `125kBps`, `800kbps`; a bare number
/// is bytes per second. Returns bytes per second.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("rate '{s}': expected a number and a unit such as 10Mbps"))?;
    let mult = match unit.trim() {
        "" | "Bps" => 1.0,
        "bps" => 0.125,
        "kbps" | "Kbps" => 125.0,
        "Mbps" => 125e3,
        "Gbps" => 125e6,
        "kBps" | "KBps" => 1e3,
        "MBps" => 1e6,
        "GBps" => 1e9,
        u => {
            return Err(format!(
                "rate '{s}': unknown unit '{u}' (bps, kbps, Mbps, Gbps, Bps, kBps, MBps, GBps)"
            ))
        }
    };
    let r = v * mult;
    if !(r.is_finite() && (1.0..=1e12).contains(&r)) {
        return Err(format!("rate '{s}': must be between 1 Bps and 8 Tbps"));
    }
    Ok(r)
}

/// Whether `n` is a good name: a letter, then letters, digits, `_`, at
/// most [`MAX_NAME`].
pub fn good_name(n: &str) -> bool {
    n.len() <= MAX_NAME
        && n.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The line (from 1) where `needle` first occurs in `text`, 1 if not.
fn line_of(text: &str, needle: &str) -> u32 {
    text.find(needle)
        .map_or(1, |i| text[..i].matches('\n').count() as u32 + 1)
}

/// Reads a substrate from its TOML text. `file` names it in messages;
/// `files` says where slice configurations may be read from.
pub fn parse(file: &str, text: &str, files: &ConfigFiles) -> Result<Spec, Vec<String>> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(vec![format!(
            "{file}: {} bytes; a substrate is at most {MAX_SPEC_BYTES}",
            text.len()
        )]);
    }
    let raw: RawSubstrate = toml::from_str(text).map_err(|e| vec![located_toml(file, text, &e)])?;
    let mut errs = Vec::new();
    let cores = raw.cores.unwrap_or(1);
    if cores == 0 || cores > 1024 {
        errs.push(format!("{file}: cores = {cores}: need 1 to 1024"));
    }
    if raw.interface.len() > MAX_INTERFACES {
        errs.push(format!(
            "{file}: {} interfaces; at most {MAX_INTERFACES}",
            raw.interface.len()
        ));
    }
    let mut interfaces = Vec::new();
    for (name, ri) in &raw.interface {
        let at = format!(
            "{file}:{}: interface {name}",
            line_of(text, &format!("[interface.{name}"))
        );
        if !good_name(name) {
            errs.push(format!(
                "{at}: a name is a letter then letters, digits or _, at most {MAX_NAME}"
            ));
        }
        let rate = match parse_rate(&ri.rate) {
            Ok(r) => r,
            Err(e) => {
                errs.push(format!("{at}: {e}"));
                1.0
            }
        };
        let input = ri
            .input
            .clone()
            .unwrap_or_else(|| format!("FromDevice({name})"));
        let output = ri
            .output
            .clone()
            .unwrap_or_else(|| format!("ToDevice({name})"));
        for (what, e) in [("input", &input), ("output", &output)] {
            if let Err(m) = split_element(e) {
                errs.push(format!("{at}: {what}: {m}"));
            }
        }
        interfaces.push(Interface {
            name: name.clone(),
            rate,
            input,
            output,
            line: line_of(text, &format!("[interface.{name}")),
        });
    }
    let mut slices = Vec::new();
    if raw.slice.len() > MAX_SLICES {
        errs.push(format!(
            "{file}: {} slices; at most {MAX_SLICES}",
            raw.slice.len()
        ));
    }
    for (name, rs) in &raw.slice {
        match slice(file, text, name, rs, files) {
            Ok(s) => slices.push(s),
            Err(mut e) => errs.append(&mut e),
        }
    }
    let spec = Spec {
        file: file.to_string(),
        cores,
        queue_manager: raw.queue_manager.unwrap_or(true),
        interfaces,
        slices,
    };
    errs.extend(provisioning(&spec));
    if errs.is_empty() {
        Ok(spec)
    } else {
        Err(errs)
    }
}

/// Reads the slices of `text` (a `[slice.NAME]` table each, inline
/// configurations only) for a substrate running `spec`.
pub fn parse_slices(file: &str, text: &str, spec: &Spec) -> Result<Vec<SliceSpec>, Vec<String>> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(vec![format!(
            "{file}: {} bytes; at most {MAX_SPEC_BYTES}",
            text.len()
        )]);
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Only {
        slice: BTreeMap<String, RawSlice>,
    }
    let raw: Only = toml::from_str(text).map_err(|e| vec![located_toml(file, text, &e)])?;
    let mut errs = Vec::new();
    let mut out = Vec::new();
    if raw.slice.len() + spec.slices.len() > MAX_SLICES {
        errs.push(format!(
            "{file}: a substrate runs at most {MAX_SLICES} slices"
        ));
    }
    for (name, rs) in &raw.slice {
        match slice(file, text, name, rs, &ConfigFiles::InlineOnly) {
            Ok(s) => out.push(s),
            Err(mut e) => errs.append(&mut e),
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

fn located_toml(file: &str, text: &str, e: &toml::de::Error) -> String {
    let msg = e.message();
    match e.span() {
        Some(sp) => {
            let before = &text[..sp.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{file}:{line}:{col}: {msg}")
        }
        None => format!("{file}: {msg}"),
    }
}

/// `Class(config)` or `Class` split in its class and configuration.
pub fn split_element(e: &str) -> Result<(String, String), String> {
    let e = e.trim();
    let (class, config) = match e.find('(') {
        Some(i) if e.ends_with(')') => (&e[..i], &e[i + 1..e.len() - 1]),
        Some(_) => return Err(format!("'{e}': expected Class(arguments)")),
        None => (e, ""),
    };
    let class = class.trim();
    let ok = !class.is_empty()
        && class
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && class
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@');
    if !ok {
        return Err(format!("'{e}': expected Class(arguments)"));
    }
    Ok((class.to_string(), config.to_string()))
}

fn slice(
    file: &str,
    text: &str,
    name: &str,
    rs: &RawSlice,
    files: &ConfigFiles,
) -> Result<SliceSpec, Vec<String>> {
    let line = line_of(text, &format!("[slice.{name}"));
    let at = format!("{file}:{line}: slice {name}");
    let mut errs = Vec::new();
    if !good_name(name) {
        errs.push(format!(
            "{at}: a name is a letter then letters, digits or _, at most {MAX_NAME}"
        ));
    }
    if let Some(c) = rs.cpu_share {
        if !(c > 0.0 && c <= 1.0) {
            errs.push(format!(
                "{at}: cpu_share = {c}: a fraction of the substrate's thread, above 0 and at most 1"
            ));
        } else if rs.cores > 0 {
            errs.push(format!(
                "{at}: cpu_share = {c} with cores = {}: a slice with cores of its own shares none (give one or the other)",
                rs.cores
            ));
        }
    }
    let strict = match rs.sharing.as_deref() {
        None | Some("strict") => true,
        Some("work-conserving") => false,
        Some(o) => {
            errs.push(format!(
                "{at}: sharing = '{o}': 'strict' or 'work-conserving'"
            ));
            true
        }
    };
    if let Some(w) = rs.weight {
        if !(w > 0.0 && w <= 1e6) {
            errs.push(format!(
                "{at}: weight = {w}: a positive number, at most 1000000"
            ));
        } else if strict {
            errs.push(format!(
                "{at}: weight = {w} with sharing strict: a weight shares the spare bandwidth, which only a work-conserving slice takes (sharing = \"work-conserving\")"
            ));
        }
    }
    let source = match (&rs.config, &rs.text, files) {
        (Some(_), Some(_), _) => {
            errs.push(format!("{at}: give config (a file) or text, not both"));
            None
        }
        (None, None, _) => {
            errs.push(format!(
                "{at}: give its configuration: config = FILE or text = \"...\""
            ));
            None
        }
        (Some(_), None, ConfigFiles::InlineOnly) => {
            errs.push(format!(
                "{at}: config = FILE is not accepted here; send the configuration as text"
            ));
            None
        }
        (Some(f), None, ConfigFiles::Dir(dir)) => {
            let p = if Path::new(f).is_absolute() {
                PathBuf::from(f)
            } else {
                dir.join(f)
            };
            match read_bounded(&p) {
                Ok(t) => Some(paraclick_lang::Source {
                    name: p.display().to_string(),
                    text: t,
                }),
                Err(e) => {
                    errs.push(format!("{at}: config {}: {e}", p.display()));
                    None
                }
            }
        }
        (None, Some(t), _) => {
            if t.len() > MAX_CONFIG_BYTES {
                errs.push(format!(
                    "{at}: text of {} bytes; at most {MAX_CONFIG_BYTES}",
                    t.len()
                ));
                None
            } else {
                Some(paraclick_lang::Source {
                    name: format!("slice {name}"),
                    text: t.clone(),
                })
            }
        }
    };
    if rs.metalink.len() > MAX_METALINKS {
        errs.push(format!(
            "{at}: {} metalinks; at most {MAX_METALINKS}",
            rs.metalink.len()
        ));
    }
    let mut metalinks = Vec::new();
    for (mname, rm) in &rs.metalink {
        let at = format!("{at}: metalink {mname}");
        if !good_name(mname) {
            errs.push(format!(
                "{at}: a name is a letter then letters, digits or _, at most {MAX_NAME}"
            ));
        }
        let rate = parse_rate(&rm.rate).unwrap_or_else(|e| {
            errs.push(format!("{at}: {e}"));
            1.0
        });
        let queue = rm.queue.unwrap_or(DEFAULT_QUEUE);
        if queue == 0 || queue > MAX_QUEUE {
            errs.push(format!("{at}: queue = {queue}: need 1 to {MAX_QUEUE}"));
        }
        let tag = match (rm.vlan, rm.udp) {
            (Some(v), None) => {
                if !(1..=4094).contains(&v) {
                    errs.push(format!("{at}: vlan = {v}: a VLAN ID is 1 to 4094"));
                }
                if rm.local.is_some() || rm.remote.is_some() {
                    errs.push(format!("{at}: local and remote are for udp metalinks"));
                }
                Tag::Vlan(v as u16)
            }
            (None, Some(p)) => {
                if !(1..=65535).contains(&p) {
                    errs.push(format!("{at}: udp = {p}: a port is 1 to 65535"));
                }
                let addr = |what: &str, a: &Option<String>, errs: &mut Vec<String>| match a
                    .as_deref()
                    .map(str::parse::<Ipv4Addr>)
                {
                    Some(Ok(x)) => x,
                    Some(Err(_)) => {
                        errs.push(format!("{at}: {what}: not an IPv4 address"));
                        Ipv4Addr::UNSPECIFIED
                    }
                    None => {
                        errs.push(format!(
                            "{at}: a udp metalink needs {what} (an IPv4 address)"
                        ));
                        Ipv4Addr::UNSPECIFIED
                    }
                };
                let local = addr("local", &rm.local, &mut errs);
                let remote = addr("remote", &rm.remote, &mut errs);
                let mac = |m: &Option<String>, d: &str, errs: &mut Vec<String>| {
                    let m = m.clone().unwrap_or_else(|| d.to_string());
                    let ok = m.split(':').count() == 6
                        && m.split(':').all(|b| {
                            !b.is_empty()
                                && b.len() <= 2
                                && b.chars().all(|c| c.is_ascii_hexdigit())
                        });
                    if !ok {
                        errs.push(format!("{at}: '{m}' is not an Ethernet address"));
                    }
                    m
                };
                let local_mac = mac(&rm.local_mac, "02:00:00:00:00:01", &mut errs);
                let remote_mac = mac(&rm.remote_mac, "02:00:00:00:00:02", &mut errs);
                Tag::Udp {
                    port: p as u16,
                    local,
                    remote,
                    local_mac,
                    remote_mac,
                }
            }
            _ => {
                errs.push(format!("{at}: give vlan = ID or udp = PORT (one of them)"));
                Tag::Vlan(0)
            }
        };
        metalinks.push(Metalink {
            name: mname.clone(),
            interface: rm.interface.clone(),
            tag,
            rate,
            queue,
        });
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(SliceSpec {
        name: name.to_string(),
        source: source.expect("no error: a source"),
        defines: rs
            .defines
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cores: rs.cores,
        cpu_share: rs.cpu_share,
        strict,
        weight: rs.weight.unwrap_or(1.0),
        metalinks,
        line,
    })
}

fn read_bounded(p: &Path) -> Result<String, String> {
    let m = std::fs::metadata(p).map_err(|e| e.to_string())?;
    if m.len() > MAX_CONFIG_BYTES as u64 {
        return Err(format!(
            "{} bytes; a slice configuration is at most {MAX_CONFIG_BYTES}",
            m.len()
        ));
    }
    std::fs::read_to_string(p).map_err(|e| e.to_string())
}

/// What the slices ask for against what the substrate has: metalinks on
/// interfaces that exist, told apart (no two on one interface with one
/// tag), their rates within each interface's rate, and the slices' cores
/// within the substrate's (one kept for its own work).
pub fn provisioning(spec: &Spec) -> Vec<String> {
    let file = &spec.file;
    let mut errs = Vec::new();
    let mut names = std::collections::HashSet::new();
    for i in &spec.interfaces {
        names.insert(i.name.as_str());
    }
    for s in &spec.slices {
        if !names.insert(s.name.as_str()) {
            errs.push(format!(
                "{file}:{}: slice {}: the name is taken (an interface or another slice)",
                s.line, s.name
            ));
        }
    }
    let mut used: BTreeMap<&str, f64> = BTreeMap::new();
    let mut tags: Vec<(&str, &Tag, String)> = Vec::new();
    for s in &spec.slices {
        for m in &s.metalinks {
            let at = format!("{file}:{}: slice {}: metalink {}", s.line, s.name, m.name);
            if !spec.interfaces.iter().any(|i| i.name == m.interface) {
                errs.push(format!("{at}: no interface '{}'", m.interface));
                continue;
            }
            *used.entry(&m.interface).or_default() += m.rate;
            let clash = |a: &Tag, b: &Tag| match (a, b) {
                (Tag::Vlan(x), Tag::Vlan(y)) => x == y,
                (Tag::Udp { port: x, .. }, Tag::Udp { port: y, .. }) => x == y,
                _ => false,
            };
            if let Some((_, _, other)) = tags
                .iter()
                .find(|(i, t, _)| *i == m.interface && clash(t, &m.tag))
            {
                errs.push(format!(
                    "{at}: its {} on {} is {other}'s already",
                    describe_tag(&m.tag),
                    m.interface
                ));
            }
            tags.push((&m.interface, &m.tag, format!("{}/{}", s.name, m.name)));
        }
    }
    for i in &spec.interfaces {
        let u = used.get(i.name.as_str()).copied().unwrap_or(0.0);
        if u > i.rate * (1.0 + 1e-9) {
            errs.push(format!(
                "{file}:{}: interface {}: its metalinks are provisioned {} in all, more than its rate {}",
                i.line,
                i.name,
                show_rate(u),
                show_rate(i.rate)
            ));
        }
    }
    let shared: Vec<&SliceSpec> = spec.slices.iter().filter(|s| s.cores == 0).collect();
    let stated: f64 = shared.iter().filter_map(|s| s.cpu_share).sum();
    let unstated = shared.iter().filter(|s| s.cpu_share.is_none()).count();
    if stated > 1.0 + 1e-9 {
        errs.push(format!(
            "{file}: the slices sharing the substrate's thread ask for cpu_share {stated:.3} in all; at most 1"
        ));
    } else if unstated > 0 && 1.0 - stated < MIN_SHARE {
        errs.push(format!(
            "{file}: the slices sharing the substrate's thread state cpu_share {stated:.3} in all, leaving nothing for {} without one (give it a cpu_share, or lower the others')",
            shared
                .iter()
                .filter(|s| s.cpu_share.is_none())
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let asked: usize = spec.slices.iter().map(|s| s.cores).sum();
    if asked > spec.cores.saturating_sub(1) {
        errs.push(format!(
            "{file}: the slices ask for {asked} dedicated cores; the substrate has {} ({} kept for its own work): {} to give",
            spec.cores,
            1,
            spec.cores.saturating_sub(1)
        ));
    }
    errs
}

/// The least CPU share a slice is given.
pub const MIN_SHARE: f64 = 0.001;

/// The CPU share of each slice that shares the substrate's thread (no
/// cores of its own): its `cpu_share`, or an equal part of what the
/// stated ones leave. Empty when fewer than two slices share it (there
/// is nothing to divide).
pub fn cpu_shares(spec: &Spec) -> Vec<(String, f64)> {
    let shared: Vec<&SliceSpec> = spec.slices.iter().filter(|s| s.cores == 0).collect();
    if shared.len() < 2 {
        return Vec::new();
    }
    let stated: f64 = shared.iter().filter_map(|s| s.cpu_share).sum();
    let unstated = shared.iter().filter(|s| s.cpu_share.is_none()).count();
    let rest = ((1.0 - stated) / unstated.max(1) as f64).max(MIN_SHARE);
    shared
        .iter()
        .map(|s| (s.name.clone(), s.cpu_share.unwrap_or(rest)))
        .collect()
}

/// `vlan 10`, `udp port 4001`.
pub fn describe_tag(t: &Tag) -> String {
    match t {
        Tag::Vlan(v) => format!("vlan {v}"),
        Tag::Udp { port, .. } => format!("udp port {port}"),
    }
}

/// A rate for people: `12.5Mbps`.
pub fn show_rate(bytes_per_sec: f64) -> String {
    let b = bytes_per_sec * 8.0;
    if b >= 1e9 {
        format!("{:.4}Gbps", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.4}Mbps", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.4}kbps", b / 1e3)
    } else {
        format!("{b:.4}bps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
cores = 3
[interface.p0]
rate = "10Mbps"
input = "Idle"
output = "Discard"
[slice.a]
text = "FromDevice(x) -> Queue -> ToDevice(x);"
cores = 1
[slice.a.metalink.x]
interface = "p0"
vlan = 10
rate = "4Mbps"
[slice.b]
text = "FromDevice(y) -> Queue -> ToDevice(y);"
sharing = "work-conserving"
[slice.b.metalink.y]
interface = "p0"
udp = 4001
local = "10.0.0.1"
remote = "10.0.0.2"
rate = "6Mbps"
"#;

    #[test]
    fn a_substrate_reads_whole() {
        let s = parse("t.toml", TWO, &ConfigFiles::InlineOnly).unwrap();
        assert_eq!(s.cores, 3);
        assert_eq!(s.slices.len(), 2);
        assert_eq!(s.slices[0].metalinks[0].tag, Tag::Vlan(10));
        assert_eq!(s.slices[0].metalinks[0].rate, 500e3);
        assert!(!s.slices[1].strict);
        assert!(matches!(
            s.slices[1].metalinks[0].tag,
            Tag::Udp { port: 4001, .. }
        ));
    }

    #[test]
    fn rates_parse_in_their_units() {
        assert_eq!(parse_rate("8bps").unwrap(), 1.0);
        assert_eq!(parse_rate("10Mbps").unwrap(), 1.25e6);
        assert_eq!(parse_rate("125kBps").unwrap(), 125e3);
        assert_eq!(parse_rate("1000").unwrap(), 1000.0);
        assert!(parse_rate("10 furlongs").is_err());
        assert!(parse_rate("0Mbps").is_err());
        assert!(parse_rate("").is_err());
    }

    #[test]
    fn overprovisioning_is_refused_naming_what() {
        let t = TWO.replace("rate = \"6Mbps\"", "rate = \"7Mbps\"");
        let e = parse("t.toml", &t, &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(
            e.contains("interface p0") && e.contains("more than its rate"),
            "{e}"
        );
        let t = TWO.replace("cores = 1", "cores = 3");
        let e = parse("t.toml", &t, &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(
            e.contains("ask for 3 dedicated cores") && e.contains("2 to give"),
            "{e}"
        );
    }

    #[test]
    fn bad_tables_are_located() {
        let t = TWO.replace("vlan = 10", "vlan = 5000");
        let e = parse("t.toml", &t, &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(
            e.contains("t.toml:7: slice a: metalink x: vlan = 5000"),
            "{e}"
        );
        let t = TWO.replace("udp = 4001", "vlan = 10");
        let t = t.replace("local = \"10.0.0.1\"\nremote = \"10.0.0.2\"\n", "");
        let e = parse("t.toml", &t, &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(e.contains("vlan 10 on p0 is a/x's already"), "{e}");
        let e = parse("t.toml", "cores = [", &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(e.starts_with("t.toml:1:"), "{e}");
        let e = parse("t.toml", "colours = 3", &ConfigFiles::InlineOnly)
            .unwrap_err()
            .join("\n");
        assert!(e.contains("colours"), "{e}");
    }

    #[test]
    fn a_peer_names_no_file() {
        let spec = parse("t.toml", TWO, &ConfigFiles::InlineOnly).unwrap();
        let e = parse_slices("slice.add", "[slice.c]\nconfig = \"/etc/passwd\"\n", &spec)
            .unwrap_err()
            .join("\n");
        assert!(e.contains("not accepted here"), "{e}");
    }
}
