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
//!   packets the table holds.
//! - `ENTRY_CAPACITY` (unsigned, default 0 = unlimited): the most entries;
//!   a new entry past it evicts the least recently updated one.
//! - `ENTRY_PACKET_CAPACITY` (unsigned, default 0 = unlimited): the most
//!   saved packets per entry; the entry's oldest makes room.
//! - `CAPACITY_SLIM_FACTOR` (unsigned, default 2): at CAPACITY, 1/this of
//!   the saved packets (the oldest) are dropped.
//! - `TIMEOUT` (time, default 5 minutes; 0 never): after this long since
//!   its last update an entry is invalid, and removed by a querier's timer
//!   (its saved packets dropped).
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

use super::arp_querier::{ArpShared, TableParams};
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, StateCx};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

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
        std::thread::sleep(std::time::Duration::from_millis(2));
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
        assert!(Router::from_str("t :: ARPTable(CAPACITY_SLIM_FACTOR 0);", &reg(), 1).is_err());
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
