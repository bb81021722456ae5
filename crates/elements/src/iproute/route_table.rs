//! What the IP route lookup elements (StaticIPLookup, LinearIPLookup,
//! RadixIPLookup, DirectIPLookup) share: Click's IPRouteTable interface
//! over one lookup structure, [`Lpm`].
//!
//! - Configuration: each argument is a route `ADDR/MASK [GW] OUT`; a later
//!   route for the same prefix replaces an earlier one, as in Click.
//! - Packets: the destination is the `dst_ip` annotation or, when that is
//!   0.0.0.0, the IP header's destination. A match sets the annotation to
//!   the route's gateway (or to the destination looked up, when the route
//!   has none) and sends the packet to the route's output; no match drops
//!   the packet (counted).
//! - Concurrency: the table sits behind a sharded reader-writer lock
//!   (crossbeam's `ShardedLock`: one read lock per shard, so readers on
//!   different threads touch different cache lines, as SMP Click's per-CPU
//!   read locks). `push` takes the read lock once per batch, looks up every
//!   packet under it, releases it, then pushes the per-port batches. Handler
//!   writes take the write lock, so a packet sees the table before or after
//!   an update (or a whole `ctrl` transaction), never halfway.
//! - Handlers: `table`, `lookup` (see below), and for the dynamic classes
//!   `add`, `set`, `remove`, `ctrl` (and `flush` for DirectIPLookup).
//! - Hot reconfiguration (`-R`): an element whose configuration string is
//!   unchanged keeps the old table, handler changes included; a changed
//!   configuration's routes replace it.
//!
//! Click's `lookup` is a read handler with a parameter: `rt.lookup ADDR`
//! answers `PORT`, `PORT GW`, or `-1` (Click's format). For tools that
//! cannot pass a parameter to a read, writing an address to `lookup` looks
//! it up too, and `lookup` or `last_lookup` read without a parameter give
//! the last answer.

use super::lpm::{mask, Lpm, NextHop, Route};
use crossbeam_utils::sync::ShardedLock;
use paraclick_packet::wire::Ipv4Prefix;
use paraclick_packet::Packet;
use paraclick_runtime::{
    ArgEnv, Batch, ClassSpec, ConfigCx, Cx, Element, FromArg, Handler, HandlerCx, Hop, PerThread,
    RoutingElement, StateCx,
};
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::sync::Mutex;

/// Which class an element is: they differ only in handlers and dump order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// StaticIPLookup (LookupIPRoute): no route changes after configuration.
    Static,
    Linear,
    Radix,
    /// DirectIPLookup: also has `flush`.
    Direct,
}

impl Kind {
    /// Click's LinearIPLookup and StaticIPLookup list routes in table
    /// (configuration) order; the trie-based classes here list them sorted
    /// by address.
    fn insertion_order(self) -> bool {
        matches!(self, Kind::Static | Kind::Linear)
    }
}

/// The class of a route lookup element, as a type (its handlers differ).
pub trait RouteKind: Send + Sync + 'static {
    const KIND: Kind;
}

/// StaticIPLookup.
pub enum Static {}
/// LinearIPLookup.
pub enum Linear {}
/// RadixIPLookup.
pub enum Radix {}
/// DirectIPLookup.
pub enum Direct {}

impl RouteKind for Static {
    const KIND: Kind = Kind::Static;
}
impl RouteKind for Linear {
    const KIND: Kind = Kind::Linear;
}
impl RouteKind for Radix {
    const KIND: Kind = Kind::Radix;
}
impl RouteKind for Direct {
    const KIND: Kind = Kind::Direct;
}

/// The class `name`, a route lookup element of kind `K`. Stateless: the
/// routes change only through handlers, never with the packets.
pub fn class_spec<K: RouteKind>(name: &'static str) -> ClassSpec {
    ClassSpec::routing(name, "1/-", "h", make::<K>)
        .stateless()
        .drop_reasons(REASONS)
}

/// Why a route lookup drops a packet (its `drop_reasons`): no route
/// matches its destination.
const REASONS: &[&str] = &["no route"];
const NO_ROUTE: u8 = 0;

/// Parses an IP address the way Click's configuration does: dotted quad,
/// or a name an AddressInfo defined.
pub fn parse_addr(s: &str, env: &ArgEnv) -> Option<Ipv4Addr> {
    Ipv4Addr::from_arg(s, env).ok()
}

/// Parses a dotted address of 1 to 4 components (`18.26.4` is 18.26.4.0),
/// as Click accepts in front of a mask.
fn parse_abbrev(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut v: u32 = 0;
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let b: u32 = p.parse().ok()?;
        if b > 255 {
            return None;
        }
        v |= b << (24 - 8 * i);
    }
    Some(v)
}

/// Parses `ADDR/LEN`, `ADDR/MASK` (contiguous), abbreviated addresses
/// (`18.26.4/24`, `0/0`), a bare address (`/32`), or an AddressInfo name
/// (`NAME` and `NAME:ip`: its address, /32; `NAME:ipnet`: its network;
/// `NAME:bcast`: its network's broadcast address, /32).
/// Returns the network address (host bits cleared) and the length.
pub fn parse_prefix(s: &str, env: &ArgEnv) -> Option<(u32, u8)> {
    let s = s.trim();
    if let Some((a, m)) = s.split_once('/') {
        if let Some(addr) = parse_abbrev(a) {
            let len = if m.contains('.') {
                let m = parse_abbrev(m).filter(|_| m.split('.').count() == 4)?;
                let l = m.leading_ones();
                if m.checked_shl(l).unwrap_or(0) != 0 {
                    return None; // not a prefix mask
                }
                l as u8
            } else {
                if m.is_empty() || m.len() > 2 || !m.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let l: u8 = m.parse().ok()?;
                if l > 32 {
                    return None;
                }
                l
            };
            return Some((addr & mask(len), len));
        }
    } else if let Ok(a) = s.parse::<Ipv4Addr>() {
        return Some((u32::from(a), 32));
    }
    // An AddressInfo name stands for its address as a host route;
    // `NAME:ipnet` for its network, `NAME:bcast` for its network's
    // broadcast address (as Click reads route arguments).
    let (name, suffix) = s.split_once(':').unwrap_or((s, ""));
    if let Some(e) = env.lookup(name) {
        if let Some(ip) = e.ip.map(u32::from) {
            let m = mask(e.prefix_len.unwrap_or(32).min(32));
            match suffix {
                "" | "ip" => return Some((ip, 32)),
                "bcast" => return Some((ip | !m, 32)),
                _ => {}
            }
        }
    }
    let p = Ipv4Prefix::from_arg(s, env).ok()?;
    let len = p.len.min(32);
    Some((u32::from(p.addr) & mask(len), len))
}

/// A parsed `ADDR/MASK [GW] [OUT]`; `port` is `None` when omitted (only
/// `remove` allows that).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    pub addr: u32,
    pub len: u8,
    pub gw: u32,
    pub port: Option<i64>,
}

/// Parses Click's route syntax: `ADDR/MASK [GW] OUT`, where GW may be `-`
/// (no gateway). With `remove`, OUT (and GW) may be left out.
pub fn parse_route(s: &str, env: &ArgEnv, remove: bool) -> Option<RouteSpec> {
    let mut words = s.split_whitespace();
    let (addr, len) = parse_prefix(words.next()?, env)?;
    let mut gw = 0;
    let mut word = words.next();
    if let Some(w) = word {
        if w == "-" {
            word = words.next();
        } else if let Some(a) = parse_gateway(w, env) {
            gw = u32::from(a);
            word = words.next();
        }
    }
    let port = match word {
        Some(w) => Some(w.parse::<i64>().ok()?),
        None if remove => None,
        None => return None,
    };
    if words.next().is_some() {
        return None;
    }
    Some(RouteSpec {
        addr,
        len,
        gw,
        port,
    })
}

/// A route written to `add` or `set`: `ADDR/MASK [GW] OUT`.
impl FromArg for RouteSpec {
    const WHAT: &'static str = "route";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<RouteSpec, String> {
        parse_route(s, env, false).ok_or_else(|| "expected 'ADDR/MASK [GATEWAY] OUTPUT'".into())
    }
    fn placeholder() -> RouteSpec {
        RouteSpec {
            addr: 0,
            len: 0,
            gw: 0,
            port: None,
        }
    }
}

/// A route written to `remove`: `ADDR/MASK [GW OUT]`.
pub struct RouteToRemove(pub RouteSpec);

impl FromArg for RouteToRemove {
    const WHAT: &'static str = "route";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<RouteToRemove, String> {
        parse_route(s, env, true)
            .map(RouteToRemove)
            .ok_or_else(|| "expected 'ADDR/MASK [GATEWAY OUTPUT]'".into())
    }
    fn placeholder() -> RouteToRemove {
        RouteToRemove(RouteSpec::placeholder())
    }
}

/// A gateway: a full dotted quad or an AddressInfo name (never a plain
/// number, which is the output port).
fn parse_gateway(w: &str, env: &ArgEnv) -> Option<Ipv4Addr> {
    if w.bytes()
        .all(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
    {
        return None;
    }
    parse_addr(w, env)
}

/// One route in Click's `table` format: prefix, gateway (`-` if none) and
/// output, tab-separated, with an extra tab after a short prefix (under 16
/// characters) or gateway (under 8), so columns line up.
pub fn format_route(out: &mut String, r: &Route) {
    let start = out.len();
    let _ = write!(out, "{}/{}\t", Ipv4Addr::from(r.addr), r.len);
    if out.len() - start < 17 {
        out.push('\t');
    }
    let start = out.len();
    if r.gw != 0 {
        let _ = write!(out, "{}\t", Ipv4Addr::from(r.gw));
    } else {
        out.push_str("-\t");
    }
    if out.len() - start < 9 {
        out.push('\t');
    }
    let _ = write!(out, "{}", r.port);
}

fn route_text(r: &Route) -> String {
    let mut s = String::new();
    format_route(&mut s, r);
    s.replace('\t', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per-thread scratch for splitting a batch by output port.
#[derive(Default)]
struct Scratch {
    addrs: Vec<u32>,
    ports: Vec<u32>,
    outs: Vec<Batch>,
}

/// No route: the packet is dropped.
const NO_PORT: u32 = u32::MAX;

/// The route table: fixed at configuration for `StaticIPLookup` (read
/// without any lock on the packet path), behind a reader-sharded lock for
/// the classes whose handlers change it.
enum Table {
    Fixed(Lpm),
    Shared(ShardedLock<Lpm>),
}

/// A read view of a [`Table`].
enum TableRead<'a> {
    Fixed(&'a Lpm),
    Locked(crossbeam_utils::sync::ShardedLockReadGuard<'a, Lpm>),
}

impl std::ops::Deref for TableRead<'_> {
    type Target = Lpm;
    #[inline]
    fn deref(&self) -> &Lpm {
        match self {
            TableRead::Fixed(t) => t,
            TableRead::Locked(g) => g,
        }
    }
}

impl Table {
    #[inline]
    fn read(&self) -> TableRead<'_> {
        match self {
            Table::Fixed(t) => TableRead::Fixed(t),
            Table::Shared(l) => TableRead::Locked(l.read().unwrap_or_else(|e| e.into_inner())),
        }
    }

    fn write(&self) -> Result<crossbeam_utils::sync::ShardedLockWriteGuard<'_, Lpm>, String> {
        match self {
            Table::Fixed(_) => Err("this route table is static".into()),
            Table::Shared(l) => Ok(l.write().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// An IP route lookup element of any of the four classes.
pub struct IPRouteLookup<K: RouteKind> {
    table: Table,
    noutputs: usize,
    last_lookup: Mutex<String>,
    scratch: PerThread<Scratch>,
    kind: PhantomData<K>,
}

/// Builds a route lookup element of class `K` from its configuration.
pub fn make<K: RouteKind>(cx: &mut ConfigCx<'_>) -> Result<IPRouteLookup<K>, String> {
    let args: Vec<String> = cx.args().rest_all();
    let env = &*cx.env;
    let mut table = Lpm::new();
    let mut errs = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a.trim().is_empty() {
            continue;
        }
        match parse_route(a, env, false) {
            None => errs.push(format!(
                "argument {} should be 'ADDR/MASK [GATEWAY] OUTPUT'",
                i + 1
            )),
            Some(r) => match r.port {
                Some(p) if p >= 0 && (p as usize) < cx.noutputs => {
                    table.insert(Route::new(r.addr, r.len, r.gw, p as u32));
                }
                _ => errs.push(format!(
                    "argument {} bad OUTPUT ('{}': {} output{})",
                    i + 1,
                    a.trim(),
                    cx.noutputs,
                    if cx.noutputs == 1 { "" } else { "s" }
                )),
            },
        }
    }
    if !errs.is_empty() {
        return Err(errs.join("; "));
    }
    Ok(IPRouteLookup {
        table: if K::KIND == Kind::Static {
            Table::Fixed(table)
        } else {
            Table::Shared(ShardedLock::new(table))
        },
        noutputs: cx.noutputs,
        last_lookup: Mutex::new(String::new()),
        scratch: PerThread::new(cx.nthreads, |_| Scratch::default()),
        kind: PhantomData,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Add,
    Set,
    Remove,
}

/// How to undo one applied command of a `ctrl` transaction.
enum Undo {
    Remove(u32, u8),
    Restore(Route),
}

impl<K: RouteKind> IPRouteLookup<K> {
    /// The address a packet is routed by: its destination annotation or,
    /// when that is 0.0.0.0, its IP header's destination.
    #[inline(always)]
    fn destination(p: &Packet) -> u32 {
        let dst = p.anno().dst_ip;
        if dst.is_unspecified() {
            if let Some(h) = p.network_header() {
                if h.len() >= 20 {
                    return u32::from_be_bytes([h[16], h[17], h[18], h[19]]);
                }
            }
        }
        u32::from(dst)
    }

    /// The route table, read-locked (tests and tools).
    pub fn with_table<R>(&self, f: impl FnOnce(&Lpm) -> R) -> R {
        let t = self.table.read();
        f(&t)
    }

    /// Looks up `addr` as a packet would be: `(port, gateway)`.
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<(u32, Option<Ipv4Addr>)> {
        self.with_table(|t| t.lookup(u32::from(addr)))
            .map(|h| (h.port, (h.gw != 0).then(|| Ipv4Addr::from(h.gw))))
    }

    fn dump(&self) -> String {
        let routes = self.with_table(|t| {
            if K::KIND.insertion_order() {
                t.routes_in_insertion_order()
            } else {
                t.routes_sorted()
            }
        });
        let mut s = String::new();
        for r in &routes {
            format_route(&mut s, r);
            s.push('\n');
        }
        s
    }

    fn lookup_text(&self, v: &str, hx: &HandlerCx<'_>) -> Result<String, String> {
        let a: Ipv4Addr = hx
            .arg(v.trim())
            .map_err(|_| format!("expected IP address, not '{}'", v.trim()))?;
        Ok(match self.lookup(a) {
            None => "-1".to_string(),
            Some((port, None)) => port.to_string(),
            Some((port, Some(gw))) => format!("{port} {gw}"),
        })
    }

    /// Parses and checks one command's route.
    fn parse_cmd(&self, cmd: Cmd, v: &str, hx: &HandlerCx<'_>) -> Result<RouteSpec, String> {
        let r = match cmd {
            Cmd::Remove => hx.arg::<RouteToRemove>(v)?.0,
            _ => hx.arg::<RouteSpec>(v)?,
        };
        let min = if cmd == Cmd::Remove { -1 } else { 0 };
        if let Some(p) = r.port {
            if p < min || p >= self.noutputs as i64 {
                return Err("bad OUTPUT".to_string());
            }
        }
        Ok(r)
    }

    /// Applies one command to the locked table; returns how to undo it.
    fn apply(t: &mut Lpm, cmd: Cmd, r: &RouteSpec) -> Result<Undo, String> {
        match cmd {
            Cmd::Add | Cmd::Set => {
                let new = Route::new(r.addr, r.len, r.gw, r.port.unwrap_or(0) as u32);
                if cmd == Cmd::Add {
                    if let Some(old) = t.get(r.addr, r.len) {
                        return Err(format!(
                            "conflict with existing route '{}'",
                            route_text(&old)
                        ));
                    }
                }
                Ok(match t.insert(new) {
                    Some(old) => Undo::Restore(old),
                    None => Undo::Remove(new.addr, new.len),
                })
            }
            Cmd::Remove => {
                let found = t.get(r.addr, r.len).filter(|old| match r.port {
                    Some(p) if p >= 0 => old.port == p as u32 && old.gw == r.gw,
                    _ => true,
                });
                match found {
                    Some(old) => {
                        t.remove(old.addr, old.len);
                        Ok(Undo::Restore(old))
                    }
                    None => {
                        let shown = Route::new(
                            r.addr,
                            r.len,
                            r.gw,
                            r.port.filter(|&p| p >= 0).unwrap_or(-1) as u32,
                        );
                        let mut text = format!("{}/{}", Ipv4Addr::from(shown.addr), shown.len);
                        if let Some(p) = r.port.filter(|&p| p >= 0) {
                            if r.gw != 0 {
                                let _ = write!(text, " {}", Ipv4Addr::from(r.gw));
                            } else {
                                text.push_str(" -");
                            }
                            let _ = write!(text, " {p}");
                        }
                        Err(format!("route '{text}' not found"))
                    }
                }
            }
        }
    }

    fn undo(t: &mut Lpm, log: Vec<Undo>) {
        for u in log.into_iter().rev() {
            match u {
                Undo::Remove(a, l) => {
                    t.remove(a, l);
                }
                Undo::Restore(r) => {
                    t.insert(r);
                }
            }
        }
    }

    fn command(&self, cmd: Cmd, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        let r = self.parse_cmd(cmd, v, hx)?;
        let mut t = self.table.write()?;
        Self::apply(&mut t, cmd, &r).map(|_| ())
    }

    /// Click's `ctrl`: one `add`/`set`/`remove` command per line, applied as
    /// one atomic operation (all or nothing).
    fn ctrl(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        let mut cmds = Vec::new();
        for line in v.lines() {
            let line = match line.find("//") {
                Some(i) => &line[..i],
                None => line,
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let cmd = match word {
                "add" => Cmd::Add,
                "set" => Cmd::Set,
                "remove" => Cmd::Remove,
                _ => return Err(format!("bad command '{word}'")),
            };
            cmds.push((cmd, self.parse_cmd(cmd, rest, hx)?));
        }
        let mut t = self.table.write()?;
        let mut log = Vec::with_capacity(cmds.len());
        for (cmd, r) in &cmds {
            match Self::apply(&mut t, *cmd, r) {
                Ok(u) => log.push(u),
                Err(e) => {
                    Self::undo(&mut t, log);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn last_lookup(&self) -> String {
        self.last_lookup
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    const TABLE: Handler<Self> = Handler::read("table", |e, _| e.dump());
    const LOOKUP: Handler<Self> =
        Handler::<Self>::read_param("lookup", |e, param, hx| match param {
            Some(a) => e.lookup_text(a, hx),
            None => Ok(e.last_lookup()),
        })
        .write_with(|e, v, hx| {
            let s = e.lookup_text(v, hx)?;
            *e.last_lookup.lock().unwrap_or_else(|e| e.into_inner()) = s;
            Ok(())
        });
    const LAST_LOOKUP: Handler<Self> = Handler::read("last_lookup", |e, _| e.last_lookup());
    const ADD: Handler<Self> = Handler::write("add", |e, v, hx| e.command(Cmd::Add, v, hx));
    const SET: Handler<Self> = Handler::write("set", |e, v, hx| e.command(Cmd::Set, v, hx));
    const REMOVE: Handler<Self> =
        Handler::write("remove", |e, v, hx| e.command(Cmd::Remove, v, hx));
    const CTRL: Handler<Self> = Handler::write("ctrl", |e, v, hx| e.ctrl(v, hx));
    const FLUSH: Handler<Self> = Handler::write("flush", |e, _, _| {
        e.table.write()?.clear();
        Ok(())
    });
}

impl<K: RouteKind> IPRouteLookup<K> {
    /// Looks `p` up and sets its destination annotation: the output port,
    /// or [`NO_PORT`]. Always inlined: the one-packet hop's whole work.
    #[inline(always)]
    fn route_one(&self, p: &mut Packet) -> u32 {
        let dst = Self::destination(p);
        // A fixed table is read in place: no guard to hold and release.
        let hop = match &self.table {
            Table::Fixed(t) => t.lookup(dst),
            Table::Shared(_) => self.lookup_shared(dst),
        };
        Self::set_hop(p, dst, hop)
    }

    /// [`IPRouteLookup::route_one`] in a fixed table `t`. Always inlined:
    /// its callers are the batch loop of [`IPRouteLookup::push_fixed`]
    /// and its split tail, where the table's fields then stay in
    /// registers across the batch.
    #[inline(always)]
    fn route_fixed(t: &Lpm, p: &mut Packet) -> u32 {
        let dst = Self::destination(p);
        Self::set_hop(p, dst, t.lookup(dst))
    }

    /// Sets `p`'s destination annotation from `hop` (the gateway, or
    /// `dst` itself) and returns its port, or [`NO_PORT`] without one.
    #[inline(always)]
    fn set_hop(p: &mut Packet, dst: u32, hop: Option<NextHop>) -> u32 {
        match hop {
            Some(hop) => {
                p.anno_mut().dst_ip = Ipv4Addr::from(if hop.gw != 0 { hop.gw } else { dst });
                hop.port
            }
            None => NO_PORT,
        }
    }

    /// A lookup in a table handlers may change (under its read lock).
    #[inline(never)]
    fn lookup_shared(&self, dst: u32) -> Option<NextHop> {
        self.table.read().lookup(dst)
    }
}

impl<K: RouteKind> Element for IPRouteLookup<K> {
    const HANDLERS: &'static [Handler<Self>] = match K::KIND {
        Kind::Static => &[Self::TABLE, Self::LOOKUP, Self::LAST_LOOKUP],
        Kind::Linear | Kind::Radix => &[
            Self::TABLE,
            Self::LOOKUP,
            Self::LAST_LOOKUP,
            Self::ADD,
            Self::SET,
            Self::REMOVE,
            Self::CTRL,
        ],
        Kind::Direct => &[
            Self::TABLE,
            Self::LOOKUP,
            Self::LAST_LOOKUP,
            Self::ADD,
            Self::SET,
            Self::REMOVE,
            Self::CTRL,
            Self::FLUSH,
        ],
    };

    /// Hot reconfiguration: when the element's configuration is the same
    /// in the new router, the old table (with the routes handlers added,
    /// changed or removed since) replaces the one just configured; when it
    /// differs, the new configuration's routes stand.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        if !sx.same_config() {
            return;
        }
        let routes = old.with_table(|t| t.routes_in_insertion_order());
        // A static table cannot have changed since configuration: the new
        // one, from the same text, is the same.
        let Ok(mut t) = self.table.write() else {
            return;
        };
        t.clear();
        for r in routes {
            if (r.port as usize) < self.noutputs {
                t.insert(r);
            }
        }
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        if batch.is_empty() {
            return;
        }
        if batch.len() == 1 {
            if let Some(p) = batch.pop() {
                let mut p = p;
                return match self.route_one(&mut p) {
                    NO_PORT => cx.drop_packet_for(NO_ROUTE, p),
                    port => cx.push_packet(port as usize, p),
                };
            }
        }
        if let Table::Fixed(t) = &self.table {
            return self.push_fixed(t, cx, batch);
        }
        let mut s = std::mem::take(self.scratch.get(cx));
        s.addrs.clear();
        s.addrs.extend(batch.iter().map(Self::destination));
        s.ports.clear();
        s.ports.resize(s.addrs.len(), 0);
        {
            // One read lock per batch, released before anything is pushed.
            let t = self.table.read();
            t.lookup_batch(&s.addrs, &mut s.ports);
            for ((p, port), &dst) in batch.iter_mut().zip(s.ports.iter_mut()).zip(&s.addrs) {
                if *port == 0 {
                    *port = NO_PORT;
                    continue;
                }
                let hop = t.hop(*port);
                p.anno_mut().dst_ip = Ipv4Addr::from(if hop.gw != 0 { hop.gw } else { dst });
                *port = hop.port;
            }
        }
        let first = s.ports[0];
        if s.ports.iter().all(|&x| x == first) {
            if first == NO_PORT {
                cx.drop_batch_for(NO_ROUTE, batch);
            } else {
                cx.push(first as usize, batch);
            }
        } else {
            self.push_split(cx, batch, &mut s);
        }
        *self.scratch.get(cx) = s;
    }
}

impl<K: RouteKind> IPRouteLookup<K> {
    /// [`Element::push`] with a fixed table (`StaticIPLookup`): one pass
    /// that routes each packet as the single-packet hop does, while the
    /// batch stays whole as long as every packet goes one way (no scratch
    /// vectors, no second pass to compare ports).
    #[inline]
    fn push_fixed(&self, t: &Lpm, cx: &mut Cx<'_>, mut batch: Batch) {
        let v = batch.as_mut_slice();
        // `first` starts as any port: packet 0's replaces it.
        let mut first = NO_PORT;
        #[allow(clippy::needless_range_loop)] // as the batch action loop
        for i in 0..v.len() {
            let port = Self::route_fixed(t, &mut v[i]);
            if port != first {
                if i != 0 {
                    return self.push_fixed_mixed(t, cx, batch, i, first, port);
                }
                first = port;
            }
        }
        if first == NO_PORT {
            cx.drop_batch_for(NO_ROUTE, batch);
        } else {
            cx.push(first as usize, batch);
        }
    }

    /// [`IPRouteLookup::push_fixed`] once packet `i` went to `port`, not
    /// to `first` as those before it: routes the rest and splits.
    #[inline(never)]
    fn push_fixed_mixed(
        &self,
        t: &Lpm,
        cx: &mut Cx<'_>,
        mut batch: Batch,
        i: usize,
        first: u32,
        port: u32,
    ) {
        let mut s = std::mem::take(self.scratch.get(cx));
        s.ports.clear();
        s.ports.resize(i, first);
        s.ports.push(port);
        for p in &mut batch.as_mut_slice()[i + 1..] {
            s.ports.push(Self::route_fixed(t, p));
        }
        self.push_split(cx, batch, &mut s);
        *self.scratch.get(cx) = s;
    }

    /// Pushes each packet of `batch` to its port in `s.ports` (dropping
    /// those with none), in runs per port.
    fn push_split(&self, cx: &mut Cx<'_>, mut batch: Batch, s: &mut Scratch) {
        if s.outs.len() < self.noutputs {
            s.outs.resize_with(self.noutputs, Batch::new);
        }
        // Where two routes' paths meet again downstream, each run of
        // one port goes on before the next begins (arrival order).
        let ordered = cx.splits_in_order();
        let mut last = NO_PORT;
        for (p, &port) in batch.drain().zip(s.ports.iter()) {
            if port == NO_PORT {
                cx.drop_packet_for(NO_ROUTE, p);
                continue;
            }
            if ordered && port != last && last != NO_PORT {
                let b = std::mem::take(&mut s.outs[last as usize]);
                cx.push(last as usize, b);
            }
            last = port;
            s.outs[port as usize].push(p);
        }
        for port in 0..self.noutputs {
            if !s.outs[port].is_empty() {
                let b = std::mem::take(&mut s.outs[port]);
                cx.push(port, b);
            }
        }
    }
}

// One packet (Click's BURST 1 everywhere): a lookup, no scratch vectors,
// and the hop is fused with the per-packet elements around.
impl<K: RouteKind> RoutingElement for IPRouteLookup<K> {
    // Always inlined into the fused hop, so that the hop's code comes back
    // in a register rather than through memory.
    #[inline(always)]
    fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
        match self.route_one(p) {
            NO_PORT => Hop::DropFor(NO_ROUTE),
            port => Hop::Out(port as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ArgEnv {
        ArgEnv::default()
    }

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }

    #[test]
    fn prefixes_click_style() {
        let e = env();
        assert_eq!(parse_prefix("18.26.4/24", &e), Some((ip("18.26.4.0"), 24)));
        assert_eq!(parse_prefix("0/0", &e), Some((0, 0)));
        assert_eq!(parse_prefix("10/8", &e), Some((ip("10.0.0.0"), 8)));
        assert_eq!(
            parse_prefix("18.26.4.24/32", &e),
            Some((ip("18.26.4.24"), 32))
        );
        assert_eq!(parse_prefix("18.26.4.24", &e), Some((ip("18.26.4.24"), 32)));
        assert_eq!(
            parse_prefix("18.26.4.77/255.255.255.0", &e),
            Some((ip("18.26.4.0"), 24))
        );
        assert_eq!(parse_prefix("1.2.3.4/255.0.255.0", &e), None);
        assert_eq!(parse_prefix("1.2.3.4/33", &e), None);
        assert_eq!(parse_prefix("1.2.3.400/8", &e), None);
        assert_eq!(parse_prefix("bogus", &e), None);
        assert_eq!(parse_prefix("1.2.3.4.5/8", &e), None);
    }

    #[test]
    fn address_info_names_in_routes() {
        let mut e = env();
        e.names.insert(
            "foo".into(),
            paraclick_runtime::args::AddrEntry {
                ip: Some(Ipv4Addr::new(1, 2, 3, 4)),
                prefix_len: Some(20),
                ..Default::default()
            },
        );
        assert_eq!(parse_prefix("foo", &e), Some((ip("1.2.3.4"), 32)));
        assert_eq!(parse_prefix("foo:ip", &e), Some((ip("1.2.3.4"), 32)));
        assert_eq!(parse_prefix("foo:ipnet", &e), Some((ip("1.2.0.0"), 20)));
        assert_eq!(parse_prefix("foo:bcast", &e), Some((ip("1.2.15.255"), 32)));
        assert_eq!(parse_prefix("foo:eth", &e), None);
        assert_eq!(parse_route("foo:bcast 2", &e, false).unwrap().port, Some(2));
    }

    #[test]
    fn routes_click_style() {
        let e = env();
        let r = |s| parse_route(s, &e, false);
        assert_eq!(
            r("18.26.4/24 1"),
            Some(RouteSpec {
                addr: ip("18.26.4.0"),
                len: 24,
                gw: 0,
                port: Some(1)
            })
        );
        assert_eq!(r("0/0 18.26.4.1 1").unwrap().gw, ip("18.26.4.1"));
        assert_eq!(r("0/0 - 2").unwrap().port, Some(2));
        assert_eq!(r("0/0"), None);
        assert_eq!(r("0/0 1 2"), None);
        assert_eq!(r("0/0 1.2.3.4 x"), None);
        assert_eq!(r("0/0 1.2.3.4 1 extra"), None);
        let rm = parse_route("10/8", &e, true).unwrap();
        assert_eq!(rm.port, None);
    }

    #[test]
    fn table_format_matches_click() {
        let mut s = String::new();
        format_route(&mut s, &Route::new(ip("18.26.4.0"), 24, 0, 1));
        assert_eq!(s, "18.26.4.0/24\t\t-\t\t1");
        let mut s = String::new();
        format_route(
            &mut s,
            &Route::new(ip("192.168.100.0"), 24, ip("192.168.100.254"), 10),
        );
        assert_eq!(s, "192.168.100.0/24\t192.168.100.254\t10");
        let mut s = String::new();
        format_route(&mut s, &Route::new(0, 0, ip("1.2.3.4"), 0));
        assert_eq!(s, "0.0.0.0/0\t\t1.2.3.4\t\t0");
    }
}

#[cfg(test)]
mod element_tests {
    use super::{IPRouteLookup, Radix};
    use crate::test_kit::{harness, ip, packet_to, reg, try_harness};
    use paraclick_runtime::testing::assert_err;
    use std::net::Ipv4Addr;

    const CONF: &str = "RadixIPLookup(18.26.4.24/32 0, 18.26.4.255/32 0, 18.26.4/24 1, \
                        0/0 18.26.4.1 2, 10.0.0.0/255.0.0.0 - 1)";

    #[test]
    fn routes_packets_and_sets_annotation() {
        let h = harness(CONF, 3);
        let mut with_anno = packet_to("99.0.0.1");
        with_anno.anno_mut().dst_ip = ip("18.26.4.24");
        h.push(
            0,
            vec![
                packet_to("18.26.4.24"),
                packet_to("18.26.4.77"),
                packet_to("8.8.8.8"),
                packet_to("10.1.2.3"),
                with_anno,
                packet_to("18.26.4.255"),
            ],
        );
        let o0 = h.output(0);
        let o1 = h.output(1);
        let o2 = h.output(2);
        let dsts = |v: &[paraclick_packet::Packet]| {
            v.iter()
                .map(|p| p.anno().dst_ip.to_string())
                .collect::<Vec<_>>()
        };
        // The annotation wins over the header; no gateway keeps the address.
        assert_eq!(dsts(&o0), ["18.26.4.24", "18.26.4.24", "18.26.4.255"]);
        assert_eq!(dsts(&o1), ["18.26.4.77", "10.1.2.3"]);
        // A gateway replaces the annotation.
        assert_eq!(dsts(&o2), ["18.26.4.1"]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn unroutable_packets_are_dropped() {
        let h = harness("StaticIPLookup(18.26.4/24 0, 10/8 1)", 2);
        h.push(
            0,
            vec![
                packet_to("18.26.4.1"),
                packet_to("1.1.1.1"),
                packet_to("10.9.9.9"),
                packet_to("2.2.2.2"),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.output(1).len(), 1);
        assert_eq!(h.drops(), 2);
        h.push(0, vec![packet_to("3.3.3.3"), packet_to("4.4.4.4")]);
        assert_eq!(h.drops(), 4);
        // A packet with neither annotation nor network header looks up 0.0.0.0.
        h.push(0, vec![paraclick_packet::Packet::zeroed(10).unwrap()]);
        assert_eq!(h.drops(), 5);
        assert_eq!(h.read("drop_reasons").unwrap(), "no route 5\n");
    }

    #[test]
    fn lookup_ip_route_is_static_ip_lookup() {
        let r = reg();
        assert_eq!(r.get("LookupIPRoute").unwrap().name, "StaticIPLookup");
        let h = try_harness("LookupIPRoute(0/0 1.2.3.4 0)", 1).unwrap();
        h.push(0, vec![packet_to("5.5.5.5")]);
        assert_eq!(h.output(0)[0].anno().dst_ip, ip("1.2.3.4"));
        // No dynamic handlers on the static classes.
        assert_err(h.write("add", "10/8 0"), "no write handler 'e.add'");
        assert_err(h.write("remove", "0/0"), "no write handler 'e.remove'");
    }

    #[test]
    fn bad_configurations() {
        let e = try_harness("RadixIPLookup(10/8 2)", 2).err().unwrap();
        assert!(e.contains("argument 1 bad OUTPUT"), "{e}");
        let e = try_harness("RadixIPLookup(10/8 0, 10.0.0.0/40 1)", 2)
            .err()
            .unwrap();
        assert!(
            e.contains("argument 2 should be 'ADDR/MASK [GATEWAY] OUTPUT'"),
            "{e}"
        );
        let e = try_harness("RadixIPLookup(10/8)", 1).err().unwrap();
        assert!(e.contains("argument 1"), "{e}");
        let e = try_harness("RadixIPLookup(10/8 -1)", 1).err().unwrap();
        assert!(e.contains("bad OUTPUT"), "{e}");
        assert!(try_harness("RadixIPLookup()", 1).is_ok());
    }

    #[test]
    fn later_route_for_same_prefix_wins() {
        let h = harness(
            "LinearIPLookup(10/8 0, 18.26.4/24 1, 10.0.0.0/8 2.2.2.2 1)",
            2,
        );
        assert_eq!(
            h.read("table").unwrap(),
            "10.0.0.0/8\t\t2.2.2.2\t\t1\n18.26.4.0/24\t\t-\t\t1\n"
        );
    }

    #[test]
    fn table_handler_format() {
        let h = harness(CONF, 3);
        assert_eq!(
            h.read("table").unwrap(),
            "0.0.0.0/0\t\t18.26.4.1\t2\n\
             10.0.0.0/8\t\t-\t\t1\n\
             18.26.4.0/24\t\t-\t\t1\n\
             18.26.4.24/32\t\t-\t\t0\n\
             18.26.4.255/32\t\t-\t\t0\n"
        );
        let h = harness(
            "StaticIPLookup(18.26.4/24 1, 0/0 18.26.4.1 0, 192.168.100.0/24 192.168.100.254 1)",
            2,
        );
        assert_eq!(
            h.read("table").unwrap(),
            "18.26.4.0/24\t\t-\t\t1\n\
             0.0.0.0/0\t\t18.26.4.1\t0\n\
             192.168.100.0/24\t192.168.100.254\t1\n"
        );
        let h = harness("RadixIPLookup()", 1);
        assert_eq!(h.read("table").unwrap(), "");
    }

    #[test]
    fn lookup_is_a_read_handler_with_a_parameter() {
        let h = harness(CONF, 3);
        assert_eq!(h.read("lookup 18.26.4.9").unwrap(), "1");
        assert_eq!(h.read("lookup  8.8.8.8 ").unwrap(), "2 18.26.4.1");
        assert_err(
            h.read("lookup not-an-address"),
            "expected IP address, not 'not-an-address'",
        );
        // Reading with a parameter leaves the write-then-read answer alone.
        assert_eq!(h.read("lookup").unwrap(), "");
        let e = h.read("table 1.2.3.4").unwrap_err();
        assert!(e.contains("takes no parameter"), "{e}");
    }

    #[test]
    fn lookup_handler() {
        let h = harness(CONF, 3);
        assert_eq!(h.read("lookup").unwrap(), "");
        h.write("lookup", "18.26.4.9").unwrap();
        assert_eq!(h.read("lookup").unwrap(), "1");
        h.write("lookup", "8.8.8.8").unwrap();
        assert_eq!(h.read("lookup").unwrap(), "2 18.26.4.1");
        assert_eq!(h.read("last_lookup").unwrap(), "2 18.26.4.1");
        h.write("remove", "0/0").unwrap();
        h.write("lookup", "8.8.8.8").unwrap();
        assert_eq!(h.read("lookup").unwrap(), "-1");
        assert_err(
            h.write("lookup", "not-an-address"),
            "e.lookup: expected IP address, not 'not-an-address'",
        );
        assert_eq!(h.read("lookup").unwrap(), "-1");
    }

    #[test]
    fn add_set_remove_handlers() {
        let h = harness("RadixIPLookup(10/8 0)", 3);
        h.write("add", "20.0.0.0/8 1.1.1.1 1").unwrap();
        let e = h.write("add", "20.0.0.0/8 2").unwrap_err();
        assert!(
            e.contains("conflict with existing route '20.0.0.0/8 1.1.1.1 1'"),
            "{e}"
        );
        h.write("set", "20.0.0.0/8 2").unwrap();
        h.write("add", "20.1.0.0/16 0").unwrap();
        assert!(h.write("add", "30/8 3").unwrap_err().contains("bad OUTPUT"));
        assert_err(
            h.write("add", "30/8"),
            "e.add: expected 'ADDR/MASK [GATEWAY] OUTPUT'",
        );
        assert_err(
            h.write("add", "garbage"),
            "e.add: expected 'ADDR/MASK [GATEWAY] OUTPUT'",
        );
        h.push(0, vec![packet_to("20.2.0.1"), packet_to("20.1.0.1")]);
        assert_eq!(h.output(2).len(), 1);
        assert_eq!(h.output(0).len(), 1);
        // Remove with a non-matching port or gateway fails; bare prefix works.
        let e = h.write("remove", "20.0.0.0/8 - 1").unwrap_err();
        assert!(e.contains("route '20.0.0.0/8 - 1' not found"), "{e}");
        assert_err(
            h.write("remove", "20.0.0.0/8 9.9.9.9 2"),
            "e.remove: route '20.0.0.0/8 9.9.9.9 2' not found",
        );
        h.write("remove", "20.0.0.0/8 - 2").unwrap();
        let e = h.write("remove", "20.0.0.0/8").unwrap_err();
        assert!(e.contains("not found"), "{e}");
        h.write("remove", "20.1.0.0/16").unwrap();
        assert_eq!(h.read("table").unwrap(), "10.0.0.0/8\t\t-\t\t0\n");
        h.push(0, vec![packet_to("20.1.0.1")]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn ctrl_is_atomic() {
        let h = harness("RadixIPLookup(10/8 0)", 2);
        h.write(
            "ctrl",
            "add 20/8 1\nset 10/8 1\n\n// comment\nremove 10/8\nadd 10.1/16 1.2.3.4 0",
        )
        .unwrap();
        assert_eq!(
            h.read("table").unwrap(),
            "10.1.0.0/16\t\t1.2.3.4\t\t0\n20.0.0.0/8\t\t-\t\t1\n"
        );
        // The third command fails: nothing happens.
        let before = h.read("table").unwrap();
        let e = h
            .write("ctrl", "add 30/8 0\nremove 20/8\nadd 10.1/16 1\nadd 40/8 0")
            .unwrap_err();
        assert!(e.contains("conflict"), "{e}");
        assert_eq!(h.read("table").unwrap(), before);
        assert!(h
            .write("ctrl", "frob 10/8")
            .unwrap_err()
            .contains("bad command 'frob'"));
        assert!(h
            .write("ctrl", "add 50/8 7")
            .unwrap_err()
            .contains("bad OUTPUT"));
        assert_eq!(h.read("table").unwrap(), before);
    }

    #[test]
    fn direct_flush() {
        let h = harness("DirectIPLookup(10/8 0, 0/0 1)", 2);
        h.write("flush", "").unwrap();
        assert_eq!(h.read("table").unwrap(), "");
        h.push(0, vec![packet_to("10.0.0.1")]);
        assert_eq!(h.drops(), 1);
        // Only DirectIPLookup has flush.
        let h = harness("RadixIPLookup(10/8 0)", 1);
        assert_err(h.write("flush", ""), "no write handler 'e.flush'");
    }

    /// Mixed batches, through a table handlers may change and through a
    /// fixed one (whose batch loop routes and compares in one pass): each
    /// packet to its port in order, the gateway in its annotation, those
    /// without a route dropped, wherever in the batch they are.
    #[test]
    fn mixed_batch_keeps_order_per_port() {
        for class in ["RadixIPLookup", "StaticIPLookup"] {
            let h = harness(&format!("{class}(1/8 9.9.9.9 0, 2/8 1, 3/8 2)"), 3);
            // Starting with port 0, then one without a route first.
            for (start, n) in [(0u32, 100u32), (3, 41)] {
                let mut v = Vec::new();
                for i in start..start + n {
                    let mut p = packet_to(&format!("{}.0.0.{}", 1 + i % 4, i));
                    p.anno_mut().seq = u64::from(i);
                    v.push(p);
                }
                h.push(0, v);
                for port in 0..3 {
                    let out = h.output(port);
                    let seqs: Vec<u64> = out.iter().map(|p| p.anno().seq).collect();
                    let want: Vec<u64> = (start..start + n)
                        .filter(|i| i % 4 == port as u32)
                        .map(u64::from)
                        .collect();
                    assert_eq!(seqs, want, "{class} port {port}");
                    for p in &out {
                        let gw = match port {
                            0 => "9.9.9.9".to_string(),
                            _ => format!("{}.0.0.{}", port + 1, p.anno().seq),
                        };
                        assert_eq!(p.anno().dst_ip.to_string(), gw, "{class}");
                    }
                }
            }
            assert_eq!(h.drops(), 25 + 11, "{class}");
            // Whole batches: one port, and no route.
            h.push(0, vec![packet_to("2.0.0.1"), packet_to("2.0.0.2")]);
            assert_eq!(h.output(1).len(), 2, "{class}");
            h.push(0, vec![packet_to("7.0.0.1"), packet_to("7.0.0.2")]);
            assert_eq!(h.drops(), 25 + 11 + 2, "{class}");
        }
    }

    /// Readers see every `ctrl` transaction whole while a writer runs them.
    #[test]
    fn updates_are_atomic_for_concurrent_lookups() {
        let h = harness("RadixIPLookup(10/8 0, 20/8 0)", 2);
        let e = h.router.element::<IPRouteLookup<Radix>>("e").unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || n < 1000 {
                        let (a, b) = e.with_table(|t| {
                            (
                                t.lookup(u32::from(Ipv4Addr::new(10, 1, 1, 1))),
                                t.lookup(u32::from(Ipv4Addr::new(20, 1, 1, 1))),
                            )
                        });
                        assert_eq!(a, b, "half a transaction seen");
                        n += 1;
                    }
                });
            }
            for i in 0..300 {
                let port = i % 2;
                h.write("ctrl", &format!("set 10/8 {port}\nset 20/8 {port}"))
                    .unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }

    /// A running router on two threads: two sources push through the
    /// table while handler writes keep changing it; every packet comes out
    /// of exactly one port.
    #[test]
    fn running_router_with_concurrent_updates() {
        let conf = "rt :: RadixIPLookup(10/8 0, 0/0 1);
                    s1 :: InfiniteSource(LENGTH 30, BURST 32) -> UDPIPEncap(1.0.0.1, 1, 10.1.1.1, 2) -> rt;
                    s2 :: InfiniteSource(LENGTH 30, BURST 32) -> UDPIPEncap(1.0.0.2, 1, 20.1.1.1, 2) -> rt;
                    rt[0] -> c0 :: Counter -> Discard;
                    rt[1] -> c1 :: Counter -> Discard;";
        let router = paraclick_runtime::Router::from_str(conf, &reg(), 2)
            .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
        std::thread::scope(|sc| {
            sc.spawn(|| router.run());
            for i in 0..100 {
                let (a, b) = if i % 2 == 0 { (1, 0) } else { (0, 1) };
                router
                    .write_handler("rt.ctrl", &format!("set 10/8 {a}\nset 0/0 {b}"))
                    .unwrap();
                if i % 25 == 0 {
                    router.write_handler("rt.remove", "20/8").unwrap_err();
                    router.write_handler("rt.add", "20/8 1").unwrap();
                    router.write_handler("rt.remove", "20/8").unwrap();
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            router.stop();
        });
        let n = |h: &str| router.read_handler(h).unwrap().parse::<u64>().unwrap();
        let sent = n("s1.count") + n("s2.count");
        assert!(sent > 0);
        assert_eq!(n("c0.count") + n("c1.count"), sent);
        assert_eq!(router.total_drops(), 0);
    }

    /// Routes whose outputs meet again (here at one sink) go on in runs of
    /// arrival order, as Click's one packet at a time would deliver them.
    #[test]
    fn a_batch_routed_to_outputs_that_meet_again_keeps_its_order() {
        use crate::test_kit::{ip_pkt, reg};
        use paraclick_packet::{Batch, Packet};
        let r = paraclick_runtime::testing::build(
            &paraclick_runtime::testing::with_test_classes(&reg()),
            "TestSource -> e :: StaticIPLookup(10.0.0.0/8 0, 0.0.0.0/0 1); \
             e[0] -> s :: TestSink; e[1] -> s;",
        );
        let dsts = [
            "10.0.0.1",
            "192.0.2.1",
            "10.0.0.2",
            "192.0.2.2",
            "192.0.2.3",
            "10.0.0.3",
        ];
        let batch: Vec<Packet> = dsts
            .iter()
            .map(|d| ip_pkt("1.1.1.1".parse().unwrap(), d.parse().unwrap(), 17, &[0; 8]))
            .collect();
        r.push_into("e", 0, Batch::from(batch)).unwrap();
        let got: Vec<String> = paraclick_runtime::testing::sink(&r, "s")
            .iter()
            .map(|p| Ipv4Addr::from(<[u8; 4]>::try_from(&p.data()[16..20]).unwrap()).to_string())
            .collect();
        assert_eq!(got, dsts);
    }

    #[test]
    fn routes_added_by_handler_survive_a_hot_swap() {
        for class in [
            "RadixIPLookup",
            "LinearIPLookup",
            "DirectIPLookup",
            "RangeIPLookup",
            "SortedIPLookup",
        ] {
            let conf = format!("{class}(10/8 0)");
            let old = harness(&conf, 3);
            old.write("add", "20/8 1").unwrap();
            old.write("set", "10/8 2").unwrap();
            old.write("add", "30/8 2").unwrap();
            let new = harness(&conf, 3);
            new.router.take_state_from(&old.router).unwrap();
            assert_eq!(new.read("table"), old.read("table"), "{class}");
            new.push(0, vec![packet_to("20.1.1.1"), packet_to("10.1.1.1")]);
            assert_eq!(new.output(1).len(), 1, "{class}: the added route");
            assert_eq!(new.output(2).len(), 1, "{class}: the changed route");
            // Fewer outputs in the new router: the routes it can use.
            let two = harness(&conf, 2);
            two.router.take_state_from(&old.router).unwrap();
            assert_eq!(two.read("lookup 20.0.0.1").unwrap(), "1", "{class}");
            assert_eq!(two.read("lookup 30.0.0.1").unwrap(), "-1", "{class}");
            assert_eq!(two.read("lookup 10.0.0.1").unwrap(), "-1", "{class}");
            // Another configuration: its own routes stand.
            let other = harness(&format!("{class}(40/8 0)"), 3);
            other.router.take_state_from(&old.router).unwrap();
            assert_eq!(other.read("lookup 20.0.0.1").unwrap(), "-1", "{class}");
            assert_eq!(other.read("lookup 40.0.0.1").unwrap(), "0", "{class}");
        }
        // A static table keeps its configuration's routes.
        let old = harness("StaticIPLookup(10/8 0, 20/8 1)", 2);
        let new = harness("StaticIPLookup(10/8 0, 20/8 1)", 2);
        new.router.take_state_from(&old.router).unwrap();
        assert_eq!(new.read("table"), old.read("table"));
        assert_eq!(new.read("lookup 20.0.0.1").unwrap(), "1");
    }
}
