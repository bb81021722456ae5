//! # ARPTable
//!
//! ARPTable(keywords CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY, CAPACITY_SLIM_FACTOR, TIMEOUT)
//!
//! Stores IP-to-Ethernet mappings.
//!
//! Ports: none. An information element holding an ARP table. ARPQuerier
//! normally keeps a table of its own; ARPQueriers whose `TABLE` keyword
//! names an ARPTable share this one: an entry learnt from a reply on any of
//! them lets all of them send without querying, and packets any of them
//! saved for an address are sent (with that querier's Ethernet source) by
//! the querier that receives its reply.
//!
//! Keyword arguments:
//! - `CAPACITY` (unsigned, default 2048; 0 unlimited): the most saved IP
//!   packets the table holds. A packet that would pass it drops the saved
//!   packets of the oldest entries first until CAPACITY -
//!   CAPACITY / CAPACITY_SLIM_FACTOR remain, itself included.
//! - `ENTRY_CAPACITY` (unsigned, default 0 = unlimited): the most entries;
//!   a new entry past it evicts the least recently updated one.
//! - `ENTRY_PACKET_CAPACITY` (unsigned, default 0 = unlimited): the most
//!   saved packets per entry; a packet for a full entry is dropped.
//! - `CAPACITY_SLIM_FACTOR` (unsigned, default 2): see CAPACITY.
//! - `TIMEOUT` (time, default 5 minutes; 0 never): after this long since
//!   its last update an entry is invalid (its Ethernet address kept, and
//!   shown, until it is answered again), and removed, its saved packets
//!   dropped, by a querier's timer, which runs every TIMEOUT (whole
//!   seconds) plus one second.
//!
//! Handlers:
//! - `table` (read): one entry per line, least recently updated first: IP
//!   address, 1 if valid (0 if expired or still unknown), Ethernet address
//!   (FF-FF-FF-FF-FF-FF while unknown), time since last update, as
//!   ARPQuerier's `table`.
//! - `count` (read): entries in the table; `length` (read): saved packets.
//! - `insert` (write): `IP ETH` adds or refreshes an entry; packets saved
//!   for IP are sent at once by a querier using the table.
//! - `delete` (write): deletes the entry for an IP address.
//! - `clear` (write): deletes every entry. Saved packets of deleted entries
//!   are dropped (counted by a querier using the table).
//!
//! Threads: the queriers sharing the table use its locking (a mutex for
//! changes, an immutable snapshot of the known entries for the packet
//! path), from any thread.
//!
//! Hot reconfiguration (`-R`): an ARPTable of the same name takes the old
//! one's entries and saved packets.
//!
//! Example:
//!
//!     arpt :: ARPTable(ENTRY_CAPACITY 1000, TIMEOUT 60);
//!     q0 :: ARPQuerier(10.0.0.1, 00:00:00:00:00:01, TABLE arpt);
//!     q1 :: ARPQuerier(10.0.1.1, 00:00:00:00:01:01, TABLE arpt);

use crate::util::{Published, View};
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, HandlerCx, StateCx};
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub struct ArpTable {
    shared: Arc<ArpShared>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ARPTable", "0/0", "a", make).shared("ARP: one table for all hosts")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ArpTable, String> {
    let mut a = cx.args();
    let capacity = a.read::<usize>("CAPACITY").unwrap_or(2048);
    let entry_capacity = a.read::<usize>("ENTRY_CAPACITY").unwrap_or(0);
    let entry_packet_capacity = a.read::<usize>("ENTRY_PACKET_CAPACITY").unwrap_or(0);
    let slim_factor = a.read::<usize>("CAPACITY_SLIM_FACTOR").unwrap_or(2);
    let timeout = a
        .read::<Duration>("TIMEOUT")
        .unwrap_or(Duration::from_secs(300));
    a.complete()?;
    if slim_factor == 0 {
        return Err("CAPACITY_SLIM_FACTOR must be at least 1".into());
    }
    Ok(ArpTable {
        shared: Arc::new(ArpShared::new(TableParams {
            capacity,
            entry_capacity,
            entry_packet_capacity,
            slim_factor,
            timeout,
        })),
    })
}

impl ArpTable {
    /// The table, for the ARPQueriers that name this element.
    pub(crate) fn shared(&self) -> &Arc<ArpShared> {
        &self.shared
    }
}

impl Element for ArpTable {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, hx| e.shared.table_text(hx)),
        Handler::read("count", |e, _| e.shared.count().to_string()),
        Handler::read("length", |e, _| e.shared.length().to_string()),
        Handler::write("insert", |e, v, hx| e.shared.insert(v, hx)),
        Handler::write("delete", |e, v, hx| {
            let ip: Ipv4Addr = hx.arg(v.trim())?;
            e.shared.delete(ip, hx);
            Ok(())
        }),
        Handler::write("clear", |e, _, hx| {
            e.shared.clear(hx);
            Ok(())
        }),
    ];

    /// Saved packets of the shared table (counted here, not by the
    /// queriers that use it).
    fn queued(&self) -> usize {
        self.shared.queued()
    }

    fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
        self.shared.take_from(&old.shared);
    }
}

pub(super) fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

// The table's state, shared by the ARPQueriers that use it (each
// ARPQuerier without TABLE has one of its own): its entries and saved
// packets under a lock, and the snapshot of known entries the packet
// path reads.

const SEC: u64 = 1_000_000_000;
/// Queries for one address: at most one per 100 ms...
const POLL_INTERVAL: u64 = SEC / 10;
/// ...and one per 2 s after this many went unanswered.
const POLL_BACKOFF_AFTER: u32 = 10;
const POLL_BACKOFF: u64 = 2 * SEC;
/// The ARPQuerier's timer (the table schedules its users').
pub(super) const TIMER: usize = 0;
pub(super) const NEVER: u64 = u64::MAX;
/// Most polls one batch may trigger (more wait for the next batch).
pub(super) const MAX_POLLS_PER_BATCH: usize = 8;

/// Next hops come from packets' destinations, which remote senders choose:
/// foldhash with a random seed per table keeps them from colliding.
type IpMap<V> = HashMap<u32, V, foldhash::fast::RandomState>;

#[inline]
pub(super) fn poll_allowed(polled: u64, polls: u32, now: u64) -> bool {
    if polled == NEVER {
        return true;
    }
    let wait = if polls >= POLL_BACKOFF_AFTER {
        POLL_BACKOFF
    } else {
        POLL_INTERVAL
    };
    now >= polled.saturating_add(wait)
}

/// A known entry as the packet path sees it.
pub(super) struct SnapEntry {
    pub(super) eth: EtherAddr,
    pub(super) live: u64,
    /// When this entry was last polled (`NEVER`), and polls since its
    /// last reply: shared by the threads, written at most 10 times a
    /// second.
    pub(super) polled: AtomicU64,
    pub(super) polls: AtomicU32,
}

/// The known entries, immutable once published.
#[derive(Default)]
pub(super) struct Snapshot {
    pub(super) map: IpMap<SnapEntry>,
}

/// A thread's view: the snapshot it last took and its generation.
pub(super) struct Cache {
    pub(super) view: View<Snapshot>,
    pub(super) polls: [(u32, EtherAddr, u16, Timestamp); MAX_POLLS_PER_BATCH],
}

pub(super) struct Entry {
    /// FF-FF-FF-FF-FF-FF while unknown.
    pub(super) eth: EtherAddr,
    pub(super) known: bool,
    /// Last reply (known) or creation (unknown), in ns since `epoch`.
    pub(super) live: u64,
    pub(super) polled: u64,
    pub(super) polls: u32,
    pub(super) pending: VecDeque<Packet>,
    /// Place among entries of equal `live` in the table's age order
    /// (oldest first: `(live, age)`), which the `table` handler lists and
    /// ENTRY_CAPACITY and CAPACITY evict from.
    pub(super) age: i64,
}

impl Entry {
    pub(super) fn new(now: u64, age: i64) -> Entry {
        Entry {
            eth: EtherAddr::BROADCAST,
            known: false,
            live: now,
            polled: NEVER,
            polls: 0,
            pending: VecDeque::new(),
            age,
        }
    }

    /// The entry's place in the age order, oldest first.
    pub(super) fn order(&self) -> (u64, i64) {
        (self.live, self.age)
    }
}

#[derive(Default)]
pub(super) struct Table {
    pub(super) map: IpMap<Entry>,
    pub(super) pending: usize,
    /// Packets taken out of the table by handlers, to be dropped (counted)
    /// by the timer.
    pub(super) graveyard: Vec<Packet>,
    /// Age stamps: `last` grows for an entry created or updated now (it
    /// goes after every entry of the same `live`); `kept` falls for an
    /// entry whose `live` was moved forward to keep it from expiring (it
    /// goes before the entries already at that `live`).
    pub(super) last: i64,
    pub(super) kept: i64,
}

impl Table {
    /// The age stamp of an entry created or updated now.
    pub(super) fn newest(&mut self) -> i64 {
        self.last += 1;
        self.last
    }

    /// The age stamp of an entry kept from expiring.
    pub(super) fn kept(&mut self) -> i64 {
        self.kept -= 1;
        self.kept
    }
}

/// What a locked section decided, acted on after the lock is released.
#[derive(Default)]
pub(super) struct Effects {
    pub(super) out: Vec<Packet>,
    /// Queries to send: address, Ethernet destination, VLAN and the
    /// timestamp of the packet that asked (a query carries it, as Click's).
    pub(super) queries: Vec<(u32, EtherAddr, u16, Timestamp)>,
    pub(super) dead: Vec<Packet>,
    /// Saved packets dropped for room (ARPQuerier's "queue full").
    pub(super) full: Vec<Packet>,
    /// Saved packets whose entry expired unanswered ("no ARP answer").
    pub(super) unanswered: Vec<Packet>,
}

/// An ARP table with its saved packets: an ARPQuerier's own, or an
/// ARPTable's shared by the ARPQueriers that name it with `TABLE`.
pub(crate) struct ArpShared {
    pub(super) capacity: usize,
    pub(super) entry_capacity: usize,
    pub(super) entry_packet_capacity: usize,
    /// At CAPACITY, 1/slim_factor of the saved packets are dropped.
    pub(super) slim_factor: usize,
    pub(super) timeout: u64,
    pub(super) epoch: Instant,
    /// Added to the time since `epoch`: a table taken from another router
    /// (hot reconfiguration) keeps that router's clock.
    pub(super) base: AtomicU64,
    pub(super) table: Mutex<Table>,
    /// The published snapshot of the known entries (each thread keeps a
    /// `View` of it, refreshed when a publication bumped its generation).
    pub(super) snap: Published<Snapshot>,
    /// Elements whose timer 0 sends packets a handler released and drops
    /// what a handler deleted (the queriers using the table).
    pub(super) users: Mutex<Vec<usize>>,
}

/// The parameters of a table.
pub(crate) struct TableParams {
    pub capacity: usize,
    pub entry_capacity: usize,
    pub entry_packet_capacity: usize,
    pub slim_factor: usize,
    pub timeout: Duration,
}

impl ArpShared {
    pub(crate) fn new(p: TableParams) -> ArpShared {
        ArpShared {
            capacity: p.capacity,
            entry_capacity: p.entry_capacity,
            entry_packet_capacity: p.entry_packet_capacity,
            slim_factor: p.slim_factor.max(1),
            timeout: dur_ns(p.timeout),
            epoch: Instant::now(),
            base: AtomicU64::new(0),
            table: Mutex::new(Table::default()),
            snap: Published::new(Snapshot::default()),
            users: Mutex::new(Vec::new()),
        }
    }

    #[inline]
    pub(super) fn now(&self, t: Instant) -> u64 {
        dur_ns(t.saturating_duration_since(self.epoch)) + self.base.load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn expired(&self, live: u64, now: u64) -> bool {
        self.timeout != 0 && now > live.saturating_add(self.timeout)
    }

    /// How often a user's timer removes expired entries: TIMEOUT's whole
    /// seconds plus one, as Click's ARPTable (an expired entry shows in
    /// `table` as invalid until then, and its waiting packets wait).
    pub(super) fn period(&self) -> Duration {
        Duration::from_secs(self.timeout / SEC + 1)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn add_user(&self, elem: usize) {
        let mut u = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if !u.contains(&elem) {
            u.push(elem);
        }
    }

    /// Asks the users' timers to run now (packets to send or drop).
    pub(super) fn wake_users(&self, hx: &HandlerCx<'_>) {
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for u in users {
            hx.schedule_element_after(u, TIMER, Duration::ZERO);
        }
    }

    /// Saved packets and packets waiting to be dropped.
    pub(crate) fn queued(&self) -> usize {
        let t = self.lock();
        t.pending + t.graveyard.len()
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().map.len()
    }

    pub(crate) fn length(&self) -> usize {
        self.lock().pending
    }

    /// Publishes the table's known entries for the packet path, keeping
    /// the poll state of entries that did not change.
    pub(super) fn publish(&self, t: &Table) {
        self.snap.publish(|old| {
            let mut map = IpMap::default();
            map.reserve(t.map.len());
            for (&ip, e) in t.map.iter().filter(|(_, e)| e.known) {
                let (polled, polls) = match old.map.get(&ip) {
                    Some(o) if o.live == e.live && o.eth == e.eth => (
                        o.polled.load(Ordering::Relaxed),
                        o.polls.load(Ordering::Relaxed),
                    ),
                    _ => (e.polled, e.polls),
                };
                map.insert(
                    ip,
                    SnapEntry {
                        eth: e.eth,
                        live: e.live,
                        polled: AtomicU64::new(polled),
                        polls: AtomicU32::new(polls),
                    },
                );
            }
            Snapshot { map }
        });
    }

    /// Removes the entry for `ip`, its packets to `dead`.
    pub(super) fn remove_entry(t: &mut Table, ip: u32, dead: &mut Vec<Packet>) -> Option<Entry> {
        let mut e = t.map.remove(&ip)?;
        t.pending -= e.pending.len();
        dead.extend(e.pending.drain(..));
        Some(e)
    }

    /// The entry for `ip`, created if needed (evicting the least recently
    /// updated one at ENTRY_CAPACITY). Returns whether a known entry was
    /// evicted (the snapshot must then be republished).
    pub(super) fn ensure<'t>(
        &self,
        t: &'t mut Table,
        ip: u32,
        now: u64,
        dead: &mut Vec<Packet>,
    ) -> (&'t mut Entry, bool) {
        let mut evicted_known = false;
        if !t.map.contains_key(&ip) && self.entry_capacity > 0 {
            while t.map.len() >= self.entry_capacity {
                let Some(oldest) = t.map.iter().min_by_key(|(_, e)| e.order()).map(|(&k, _)| k)
                else {
                    break;
                };
                if let Some(e) = Self::remove_entry(t, oldest, dead) {
                    evicted_known |= e.known;
                }
            }
        }
        let age = if t.map.contains_key(&ip) {
            0
        } else {
            t.newest()
        };
        (
            t.map.entry(ip).or_insert_with(|| Entry::new(now, age)),
            evicted_known,
        )
    }

    /// Drops the oldest saved packets until at most `target` remain.
    pub(super) fn slim(t: &mut Table, target: usize, dead: &mut Vec<Packet>) {
        if t.pending <= target {
            return;
        }
        let mut order: Vec<((u64, i64), u32)> = t
            .map
            .iter()
            .filter(|(_, e)| !e.pending.is_empty())
            .map(|(&ip, e)| (e.order(), ip))
            .collect();
        order.sort_unstable();
        for (_, ip) in order {
            let Some(e) = t.map.get_mut(&ip) else {
                continue;
            };
            while t.pending > target {
                match e.pending.pop_front() {
                    Some(p) => {
                        dead.push(p);
                        t.pending -= 1;
                    }
                    None => break,
                }
            }
            if t.pending <= target {
                break;
            }
        }
    }

    /// Saves a packet for an unknown (or expired) address, as Click's
    /// ARPTable does: the entry is created if needed and kept from
    /// expiring while packets wait (its `live` at least TIMEOUT ago); a
    /// full entry (ENTRY_PACKET_CAPACITY) drops the new packet, with no
    /// query; past CAPACITY the oldest entries' packets are dropped until
    /// CAPACITY - CAPACITY / CAPACITY_SLIM_FACTOR remain, the new one
    /// included. A query is queued when one is allowed (10 a second, then
    /// one every 2 s after 10 unanswered). Returns whether the snapshot
    /// must be republished.
    pub(super) fn save(
        &self,
        t: &mut Table,
        ip: u32,
        p: Packet,
        now: u64,
        fx: &mut Effects,
    ) -> bool {
        let vlan = p.anno().vlan_tci;
        let stamp = p.timestamp();
        let (_, mut republish) = self.ensure(t, ip, now, &mut fx.full);
        let floor = now.saturating_sub(self.timeout);
        if self.timeout != 0 && t.map[&ip].live < floor {
            let age = t.kept();
            let e = t.map.get_mut(&ip).expect("ensured");
            e.live = floor;
            e.age = age;
            republish |= e.known;
        }
        let full = {
            let e = &t.map[&ip];
            self.entry_packet_capacity > 0 && e.pending.len() >= self.entry_packet_capacity
        };
        if full {
            fx.full.push(p);
            return republish;
        }
        if self.capacity > 0 && t.pending + 1 > self.capacity {
            let keep = (self.capacity - self.capacity / self.slim_factor).max(1);
            Self::slim(t, keep - 1, &mut fx.full);
        }
        let e = t.map.get_mut(&ip).expect("ensured");
        e.pending.push_back(p);
        if poll_allowed(e.polled, e.polls, now) {
            e.polled = now;
            e.polls = e.polls.saturating_add(1);
            fx.queries.push((ip, EtherAddr::BROADCAST, vlan, stamp));
        }
        t.pending += 1;
        republish
    }

    pub(crate) fn table_text(&self, hx: &HandlerCx<'_>) -> String {
        let now = self.now(hx.now());
        let t = self.lock();
        let mut v: Vec<(&u32, &Entry)> = t.map.iter().collect();
        v.sort_by_key(|(_, e)| e.order());
        let mut s = String::new();
        for (&ip, e) in v {
            let ok = e.known && !self.expired(e.live, now);
            let age = Timestamp(now.saturating_sub(e.live) as i64);
            s.push_str(&format!(
                "{} {} {} {}\n",
                Ipv4Addr::from(ip),
                u8::from(ok),
                e.eth,
                age
            ));
        }
        s
    }

    /// The `insert` handler: `IP ETH`. Packets waiting for IP are sent by
    /// a user's timer, at once.
    pub(crate) fn insert(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        let mut it = v.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("expected 'IP ETH', not '{}'", v.trim()));
        };
        let ip = u32::from(hx.arg::<Ipv4Addr>(a)?);
        let eth: EtherAddr = hx.arg(b)?;
        if ip == 0 || eth.is_multicast() {
            return Err(format!("bad entry '{}'", v.trim()));
        }
        let now = self.now(hx.now());
        let mut t = self.lock();
        let mut dead = Vec::new();
        let age = t.newest();
        let (e, _) = self.ensure(&mut t, ip, now, &mut dead);
        e.eth = eth;
        e.known = true;
        e.live = now;
        e.age = age;
        e.polled = NEVER;
        e.polls = 0;
        let wake = !e.pending.is_empty() || !dead.is_empty();
        t.graveyard.extend(dead);
        self.publish(&t);
        drop(t);
        if wake {
            self.wake_users(hx);
        }
        Ok(())
    }

    /// The `delete` handler; the entry's packets are dropped by a user's
    /// timer.
    pub(crate) fn delete(&self, ip: Ipv4Addr, hx: &HandlerCx<'_>) {
        let ip = u32::from(ip);
        let mut t = self.lock();
        let mut dead = Vec::new();
        if Self::remove_entry(&mut t, ip, &mut dead).is_some() {
            let wake = !dead.is_empty();
            t.graveyard.extend(dead);
            self.publish(&t);
            drop(t);
            if wake {
                self.wake_users(hx);
            }
        }
    }

    pub(crate) fn clear(&self, hx: &HandlerCx<'_>) {
        let mut t = self.lock();
        let mut dead = Vec::new();
        let ips: Vec<u32> = t.map.keys().copied().collect();
        for ip in ips {
            Self::remove_entry(&mut t, ip, &mut dead);
        }
        let wake = !dead.is_empty();
        t.graveyard.extend(dead);
        self.publish(&t);
        drop(t);
        if wake {
            self.wake_users(hx);
        }
    }

    /// Hot reconfiguration: takes `old`'s entries and saved packets, and
    /// continues its clock so entries expire when they would have.
    pub(crate) fn take_from(&self, old: &ArpShared) {
        let shift = dur_ns(self.epoch.saturating_duration_since(old.epoch));
        self.base
            .store(old.base.load(Ordering::Relaxed) + shift, Ordering::Relaxed);
        let taken = std::mem::take(&mut *old.lock());
        let mut t = self.lock();
        *t = taken;
        self.publish(&t);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{build_simtime, reg};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    /// An ARPTable in simulated time (the test moves the clock with
    /// `advance`).
    fn table(conf: &str) -> Router {
        build_simtime(&reg(), &format!("t :: ARPTable({conf});"))
    }

    fn advance_ms(r: &Router, ms: u64) {
        paraclick_runtime::testing::advance(r, std::time::Duration::from_millis(ms));
    }

    fn ips(r: &Router) -> Vec<String> {
        let t = r.read_handler("t.table").unwrap();
        t.lines()
            .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn insert_delete_clear() {
        let r = table("");
        r.write_handler("t.insert", "10.0.0.1 00:01:02:03:04:05")
            .unwrap();
        advance_ms(&r, 2);
        r.write_handler("t.insert", "10.0.0.2 00:01:02:03:04:06")
            .unwrap();
        assert_eq!(r.read_handler("t.count").unwrap(), "2");
        let t = ips(&r);
        assert_eq!(t.len(), 2);
        assert!(t[0].starts_with("10.0.0.1 1 "), "{t:?}");
        assert!(t[1].starts_with("10.0.0.2 1 "), "{t:?}");
        r.write_handler("t.delete", "10.0.0.1").unwrap();
        assert_eq!(ips(&r).len(), 1);
        assert!(ips(&r)[0].starts_with("10.0.0.2"));
        r.write_handler("t.clear", "").unwrap();
        assert_eq!(r.read_handler("t.count").unwrap(), "0");
        assert_eq!(r.read_handler("t.table").unwrap(), "");
    }

    #[test]
    fn entry_capacity_evicts_oldest_and_bad_input() {
        let r = table("ENTRY_CAPACITY 2");
        for i in 1..=3 {
            r.write_handler("t.insert", &format!("10.0.0.{i} 00:00:00:00:00:0{i}"))
                .unwrap();
            advance_ms(&r, 2);
        }
        let t = ips(&r);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|l| !l.starts_with("10.0.0.1 ")), "{t:?}");
        assert_err(
            r.write_handler("t.insert", "10.0.0.9"),
            "t.insert: expected 'IP ETH', not '10.0.0.9'",
        );
        assert_err(
            r.write_handler("t.insert", "10.0.0.9 ff:ff:ff:ff:ff:ff"),
            "t.insert: bad entry '10.0.0.9 ff:ff:ff:ff:ff:ff'",
        );
        assert_err(
            r.write_handler("t.insert", "x 00:00:00:00:00:01"),
            "t.insert: expected IP address, not 'x'",
        );
        assert_err(
            r.write_handler("t.delete", "nope"),
            "t.delete: expected IP address, not 'nope'",
        );
        assert_err(
            Router::from_str("t :: ARPTable(BOGUS 1);", &reg(), 1),
            "<config>:1:6: t :: ARPTable: unknown keyword BOGUS",
        );
        assert_err(
            Router::from_str("t :: ARPTable(CAPACITY_SLIM_FACTOR 0);", &reg(), 1),
            "<config>:1:6: t :: ARPTable: CAPACITY_SLIM_FACTOR must be at least 1",
        );
    }

    #[test]
    fn timeout_invalidates() {
        let r = table("TIMEOUT 0.001");
        r.write_handler("t.insert", "10.0.0.1 00:01:02:03:04:05")
            .unwrap();
        advance_ms(&r, 1);
        assert!(ips(&r)[0].starts_with("10.0.0.1 1 "), "{:?}", ips(&r));
        paraclick_runtime::testing::advance(&r, std::time::Duration::from_nanos(1));
        assert!(ips(&r)[0].starts_with("10.0.0.1 0 "), "{:?}", ips(&r));
    }

    #[test]
    fn a_hot_swap_carries_the_entries() {
        let old = table("");
        old.write_handler("t.insert", "10.0.0.1 00:01:02:03:04:05")
            .unwrap();
        let new = table("");
        new.take_state_from(&old).unwrap();
        assert_eq!(new.read_handler("t.count").unwrap(), "1");
        let t = new.read_handler("t.table").unwrap();
        assert!(t.starts_with("10.0.0.1 1 00-01-02-03-04-05 "), "{t:?}");
    }
}
