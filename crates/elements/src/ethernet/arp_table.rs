//! # ARPTable
//!
//! ARPTable(keywords CAPACITY, ENTRY_CAPACITY, TIMEOUT)
//!
//! Stores IP-to-Ethernet mappings.
//!
//! Ports: none. An information element holding an ARP table that handlers
//! read and change. (ARPQuerier keeps its own table; its `TABLE` keyword
//! does not yet name an ARPTable.)
//!
//! Keyword arguments:
//! - `CAPACITY` (unsigned, default 2048; 0 unlimited): the most saved IP
//!   packets the table may hold (accepted for compatibility; this table
//!   saves no packets, as no querier uses it yet).
//! - `ENTRY_CAPACITY` (unsigned, default 0 = unlimited): the most entries;
//!   inserting past it evicts the least recently updated entry.
//! - `TIMEOUT` (time, default 5 minutes; 0 never): after this long since
//!   its last update an entry is invalid.
//!
//! Handlers:
//! - `table` (read): one entry per line, least recently updated first: IP
//!   address, 1 if valid (0 if expired), Ethernet address, time since last
//!   update, as ARPQuerier's `table`.
//! - `count` (read): entries in the table.
//! - `insert` (write): `IP ETH` adds or refreshes an entry.
//! - `delete` (write): deletes the entry for an IP address.
//! - `clear` (write): deletes every entry.
//!
//! Example:
//!
//!     arpt :: ARPTable(ENTRY_CAPACITY 1000, TIMEOUT 60);

use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Timestamp;
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, HandlerCx};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub struct ArpTable {
    #[allow(dead_code)] // no packets are saved until a querier shares the table
    capacity: usize,
    entry_capacity: usize,
    timeout: Duration,
    map: Mutex<HashMap<Ipv4Addr, (EtherAddr, Instant)>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ARPTable", "0/0", "a", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ArpTable, String> {
    let mut a = cx.args();
    let capacity = a.read::<usize>("CAPACITY").unwrap_or(2048);
    let entry_capacity = a.read::<usize>("ENTRY_CAPACITY").unwrap_or(0);
    let timeout = a
        .read::<Duration>("TIMEOUT")
        .unwrap_or(Duration::from_secs(300));
    a.complete()?;
    Ok(ArpTable {
        capacity,
        entry_capacity,
        timeout,
        map: Mutex::new(HashMap::new()),
    })
}

impl ArpTable {
    fn lock(&self) -> MutexGuard<'_, HashMap<Ipv4Addr, (EtherAddr, Instant)>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Ethernet address for `ip`, if known and not expired at `now`.
    pub fn lookup(&self, ip: Ipv4Addr, now: Instant) -> Option<EtherAddr> {
        let m = self.lock();
        let &(eth, live) = m.get(&ip)?;
        self.valid(live, now).then_some(eth)
    }

    fn valid(&self, live: Instant, now: Instant) -> bool {
        self.timeout.is_zero() || now.saturating_duration_since(live) <= self.timeout
    }

    fn table_text(&self, hx: &HandlerCx<'_>) -> String {
        let now = hx.now();
        let m = self.lock();
        let mut v: Vec<_> = m
            .iter()
            .map(|(&ip, &(eth, live))| (live, ip, eth))
            .collect();
        v.sort();
        let mut s = String::new();
        for (live, ip, eth) in v {
            let age = now.saturating_duration_since(live);
            let age = Timestamp(age.as_nanos().min(i64::MAX as u128) as i64);
            let ok = u8::from(self.valid(live, now));
            s.push_str(&format!("{ip} {ok} {eth} {age}\n"));
        }
        s
    }

    fn insert(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        let mut it = v.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("expected 'IP ETH', not '{}'", v.trim()));
        };
        let ip: Ipv4Addr = hx.arg(a)?;
        let eth: EtherAddr = hx.arg(b)?;
        if ip.is_unspecified() || eth.is_multicast() {
            return Err(format!("bad entry '{}'", v.trim()));
        }
        let now = hx.now();
        let mut m = self.lock();
        if self.entry_capacity > 0 && !m.contains_key(&ip) && m.len() >= self.entry_capacity {
            if let Some(old) = m
                .iter()
                .min_by_key(|(ip, e)| (e.1, **ip))
                .map(|(ip, _)| *ip)
            {
                m.remove(&old);
            }
        }
        m.insert(ip, (eth, now));
        Ok(())
    }
}

impl Element for ArpTable {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, hx| e.table_text(hx)),
        Handler::read("count", |e, _| e.lock().len().to_string()),
        Handler::write("insert", |e, v, hx| e.insert(v, hx)),
        Handler::write("delete", |e, v, hx| {
            let ip: Ipv4Addr = hx.arg(v.trim())?;
            e.lock().remove(&ip);
            Ok(())
        }),
        Handler::write("clear", |e, _, _| {
            e.lock().clear();
            Ok(())
        }),
    ];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::Router;

    fn table(conf: &str) -> Router {
        Router::from_str(&format!("t :: ARPTable({conf});"), &reg(), 1).unwrap()
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
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let t = ips(&r);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|l| !l.starts_with("10.0.0.1 ")), "{t:?}");
        assert!(r.write_handler("t.insert", "10.0.0.9").is_err());
        assert!(r
            .write_handler("t.insert", "10.0.0.9 ff:ff:ff:ff:ff:ff")
            .is_err());
        assert!(r.write_handler("t.insert", "x 00:00:00:00:00:01").is_err());
        assert!(r.write_handler("t.delete", "nope").is_err());
        assert!(Router::from_str("t :: ARPTable(BOGUS 1);", &reg(), 1).is_err());
    }

    #[test]
    fn timeout_invalidates() {
        let r = table("TIMEOUT 0.001");
        r.write_handler("t.insert", "10.0.0.1 00:01:02:03:04:05")
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(ips(&r)[0].starts_with("10.0.0.1 0 "), "{:?}", ips(&r));
    }
}
