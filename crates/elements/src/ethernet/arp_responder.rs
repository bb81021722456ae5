//! # ARPResponder
//!
//! ARPResponder(IP/MASK [IP/MASK...] ETH, IP2/MASK2 ETH2, ...)
//!
//! Generates responses to ARP queries.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic input, output 0
//! agnostic, output 1 push.
//!
//! Input packets should be ARP requests, including the Ethernet header.
//! When one of the IP/MASK arguments matches the requested IP address,
//! ARPResponder emits on output 0 an ARP reply giving the corresponding
//! ETH address (a 42-byte frame sent to the requester). Any other packet
//! (a request for an unknown address, an ARP reply, a non-ARP or truncated
//! packet) goes to output 1 if it exists and is dropped otherwise. It can
//! answer for the host's own addresses and do proxy ARP for whole networks.
//!
//! Each argument lists one or more IP network addresses and one Ethernet
//! address, in any order. A netmask may be written in CIDR form
//! (`18.26.7.0/24`) or dotted form (`18.26.7.0/255.255.255.0`); a bare
//! address means that address alone. When several entries match, the most
//! specific (longest prefix) wins. An AddressInfo name standing for an IP
//! and an Ethernet address can stand for both (`ARPResponder(NAME)`);
//! ARPResponder then answers for the name's IP address only (write
//! `NAME:ipnet` for its whole network).
//!
//! Replies keep the device and VLAN TCI annotations of their requests;
//! their other annotations are cleared.
//!
//! Handlers:
//! - `table` (read): the entries, one `IP/LEN ETH` per line, most specific
//!   first.
//! - `add` (write): adds entries, given as `IP/MASK [IP/MASK...] ETH`.
//! - `remove` (write): removes the entry for `IP/MASK`.
//! - `lookup` (read with a parameter): the Ethernet address given for an
//!   IP address (an error if none).
//! - `config` (read/write): the configuration; writing a new one replaces
//!   the whole table (live reconfiguration).
//!
//! Two entries for the same network (in the configuration or a `config`
//! write) draw a warning, `multiple entries for IP/LEN`; the first wins.
//! An `add` replaces any entry for the same network.
//!
//! Example: answer for 18.26.4.24 and do proxy ARP for 18.26.7.0/24:
//!
//!     c :: Classifier(12/0806 20/0001, ...);
//!     ar :: ARPResponder(18.26.4.24 18.26.7.0/24 00:00:C0:AE:67:EF);
//!     c[0] -> ar -> ToDevice(eth0);

use paraclick_packet::wire::{
    ethertype, ArpOp, ArpPacket, ArpRepr, EtherAddr, EthernetFrame, Ipv4Prefix,
};
use paraclick_packet::Packet;
use paraclick_runtime::args::{parse_abbrev_prefix, ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;
use std::sync::RwLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    net: u32,
    mask: u32,
    len: u8,
    eth: EtherAddr,
}

pub struct ArpResponder {
    /// Sorted most specific first. Read-locked per packet; written only by
    /// the `add` and `remove` handlers.
    table: RwLock<Vec<Entry>>,
    other: Option<usize>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["not a request it answers"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ARPResponder", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .shared("ARP: one table / answers for all hosts")
        .click_alignment(paraclick_runtime::ClickAlignment::Unknown)
}

/// Parses one `IP/MASK [IP/MASK...] ETH` argument into entries.
fn parse_entry(arg: &str, env: &ArgEnv) -> Result<Vec<Entry>, String> {
    let mut prefixes = Vec::new();
    let mut eth: Option<EtherAddr> = None;
    let set_eth = |e: EtherAddr, eth: &mut Option<EtherAddr>| -> Result<(), String> {
        match eth {
            Some(old) if *old != e => Err(format!("'{arg}': more than one Ethernet address")),
            _ => {
                *eth = Some(e);
                Ok(())
            }
        }
    };
    for word in arg.split_whitespace() {
        if let Ok(e) = word.parse::<EtherAddr>() {
            set_eth(e, &mut eth)?;
            continue;
        }
        if let Some(p) = word
            .parse::<Ipv4Prefix>()
            .ok()
            .or_else(|| parse_abbrev_prefix(word))
        {
            prefixes.push(p);
            continue;
        }
        // An AddressInfo name: its IP address (or network, with `:ipnet`)
        // and its Ethernet address.
        let (name, suffix) = match word.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (word, None),
        };
        let Some(info) = env.lookup(name) else {
            return Err(format!(
                "'{word}' is not an IP address, prefix or Ethernet address"
            ));
        };
        let mut used = false;
        match suffix {
            None | Some("ip") => {
                if let Some(ip) = info.ip {
                    prefixes.push(Ipv4Prefix::host(ip));
                    used = true;
                }
            }
            Some("ipnet") | Some("net") => {
                prefixes.push(Ipv4Prefix::from_arg(word, env)?);
                used = true;
            }
            Some("bcast") | Some("gw") => {
                prefixes.push(Ipv4Prefix::host(Ipv4Addr::from_arg(word, env)?));
                used = true;
            }
            Some("eth") => {}
            Some(s) => return Err(format!("'{word}': unknown address suffix ':{s}'")),
        }
        if suffix.is_none() || suffix == Some("eth") {
            if let Some(e) = info.ether {
                set_eth(e, &mut eth)?;
                used = true;
            }
        }
        if !used {
            return Err(format!("'{word}' names no usable address"));
        }
    }
    let eth = eth.ok_or_else(|| format!("'{arg}': missing Ethernet address"))?;
    if prefixes.is_empty() {
        return Err(format!("'{arg}': missing IP address"));
    }
    Ok(prefixes
        .into_iter()
        .map(|p| Entry {
            net: u32::from(p.network()),
            mask: p.mask_u32(),
            len: p.len.min(32),
            eth,
        })
        .collect())
}

/// Most specific first; among entries for the same network, the first
/// given wins. Returns the networks given more than once, each once, as
/// `IP/LEN` (Click warns about them).
fn normalize(v: &mut Vec<Entry>) -> Vec<String> {
    v.sort_by_key(|e| std::cmp::Reverse(e.len));
    let mut seen: Vec<(u32, u8)> = Vec::new();
    let mut dups: Vec<(u32, u8)> = Vec::new();
    v.retain(|e| {
        let k = (e.net, e.len);
        if seen.contains(&k) {
            if !dups.contains(&k) {
                dups.push(k);
            }
            false
        } else {
            seen.push(k);
            true
        }
    });
    dups.into_iter()
        .map(|(net, len)| format!("{}/{}", Ipv4Addr::from(net), len))
        .collect()
}

/// A whole configuration (`IP/MASK [IP/MASK...] ETH, ...`), as the
/// `config` handler takes it: the normalized table and its duplicates.
struct Config {
    table: Vec<Entry>,
    dups: Vec<String>,
}

fn parse_config(args: &[String], env: &ArgEnv) -> Result<Config, String> {
    let mut table = Vec::new();
    for arg in args {
        table.extend(parse_entry(arg, env)?);
    }
    let dups = normalize(&mut table);
    Ok(Config { table, dups })
}

impl FromArg for Config {
    const WHAT: &'static str = "ARPResponder configuration";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Config, String> {
        parse_config(&paraclick_lang::args::split_args(s), env)
    }
    fn placeholder() -> Config {
        Config {
            table: Vec::new(),
            dups: Vec::new(),
        }
    }
}

/// An `add` handler value: one `IP/MASK [IP/MASK...] ETH` argument.
struct Entries(Vec<Entry>);

impl FromArg for Entries {
    const WHAT: &'static str = "ARP entry";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Entries, String> {
        parse_entry(s, env).map(Entries)
    }
    fn placeholder() -> Entries {
        Entries(Vec::new())
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ArpResponder, String> {
    let mut a = cx.args();
    let args = a.rest_all();
    a.complete()?;
    let Config { table, dups } = parse_config(&args, cx.env)?;
    for d in dups {
        cx.warn(&format!("multiple entries for {d}"));
    }
    Ok(ArpResponder {
        table: RwLock::new(table),
        other: (cx.noutputs >= 2).then_some(1),
    })
}

impl ArpResponder {
    /// The Ethernet address ARPResponder gives for `ip`, if any.
    pub fn lookup(&self, ip: Ipv4Addr) -> Option<EtherAddr> {
        let a = u32::from(ip);
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        t.iter().find(|e| a & e.mask == e.net).map(|e| e.eth)
    }

    #[inline]
    fn other(&self) -> Verdict {
        match self.other {
            Some(p) => Verdict::Out(p),
            None => Verdict::DropFor(0),
        }
    }

    fn add(&self, new: Vec<Entry>) {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        // New entries replace old ones for the same network.
        t.retain(|o| !new.iter().any(|n| n.net == o.net && n.len == o.len));
        t.extend(new);
        normalize(&mut t);
    }

    /// Replaces the whole table (the `config` handler).
    fn replace(&self, new: Vec<Entry>) {
        *self.table.write().unwrap_or_else(|e| e.into_inner()) = new;
    }

    fn remove(&self, p: Ipv4Prefix) -> Result<(), String> {
        let (net, len) = (u32::from(p.network()), p.len.min(32));
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        let before = t.len();
        t.retain(|e| !(e.net == net && e.len == len));
        if t.len() == before {
            return Err(format!("no entry for {}/{}", Ipv4Addr::from(net), len));
        }
        Ok(())
    }

    fn table(&self) -> String {
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        let mut s = String::new();
        for e in t.iter() {
            s.push_str(&format!("{}/{} {}\n", Ipv4Addr::from(e.net), e.len, e.eth));
        }
        s
    }
}

const FRAME_LEN: usize = 14 + 28;

impl Action for ArpResponder {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| e.table()),
        Handler::write("add", |e, v, hx| {
            e.add(hx.arg::<Entries>(v)?.0);
            Ok(())
        }),
        Handler::write("remove", |e, v, hx| e.remove(hx.arg(v)?)),
        Handler::read_param("lookup", |e, p, hx| {
            let p = p.ok_or("lookup needs an IP address")?;
            let ip: Ipv4Addr = hx.arg(p)?;
            e.lookup(ip)
                .map(|a| a.to_string())
                .ok_or_else(|| format!("no entry for {ip}"))
        }),
        Handler::rw(
            "config",
            |_, hx| hx.config(),
            |e, v, hx| {
                let c: Config = hx.arg(v)?;
                e.replace(c.table);
                hx.set_config(v);
                for d in c.dups {
                    hx.warn("config", &format!("multiple entries for {d}"));
                }
                Ok(())
            },
        ),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let d = p.data();
        if d.len() < FRAME_LEN {
            return self.other();
        }
        let frame = EthernetFrame::new_unchecked(&d[..FRAME_LEN]);
        if frame.ethertype() != ethertype::ARP {
            return self.other();
        }
        let Ok(req) = ArpRepr::parse(&ArpPacket::new_unchecked(&d[14..FRAME_LEN])) else {
            return self.other();
        };
        if req.operation != ArpOp::Request {
            return self.other();
        }
        let Some(my_eth) = self.lookup(req.target_protocol_addr) else {
            return self.other();
        };
        let reply = req.reply_to(my_eth);
        // The reply reuses the request's buffer: 42 bytes, fresh annotations
        // but the device and VLAN TCI.
        let (device, vlan) = (p.anno().device, p.anno().vlan_tci);
        p.take(p.len() - FRAME_LEN);
        p.clear_annotations();
        p.anno_mut().device = device;
        p.anno_mut().vlan_tci = vlan;
        let d = p.data_mut();
        let mut f = EthernetFrame::new_unchecked(&mut d[..]);
        f.set_dst_addr(req.source_hardware_addr);
        f.set_src_addr(my_eth);
        f.set_ethertype(ethertype::ARP);
        reply.emit(&mut ArpPacket::new_unchecked(&mut d[14..]));
        p.set_mac_header(0);
        p.set_network_header(14, 28);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ArpRepr;
    use paraclick_runtime::args::FromArg;

    const ME: &str = "00:00:c0:ae:67:ef";
    const ASKER: &str = "00:11:22:33:44:55";

    fn request(target: &str) -> Vec<u8> {
        let r = ArpRepr::request(eth(ASKER), ip("18.26.4.1"), ip(target));
        arp_frame(eth("ff:ff:ff:ff:ff:ff"), eth(ASKER), &r)
    }

    fn reply_from(mac: &str, addr: &str) -> Vec<u8> {
        let r = ArpRepr::reply(eth(mac), ip(addr), eth(ASKER), ip("18.26.4.1"));
        arp_frame(eth(ASKER), eth(mac), &r)
    }

    #[test]
    fn answers_own_address_and_proxy_network() {
        let h = harness(&format!("ARPResponder(18.26.4.24 18.26.7.0/24 {ME})"), 1);
        let mut req = request("18.26.4.24");
        req.extend([0u8; 18]); // Ethernet padding to 60 bytes
        let mut p = pkt(&req);
        p.anno_mut().device = 3;
        p.anno_mut().vlan_tci = 7;
        p.anno_mut().paint = 9;
        h.push(
            0,
            vec![p, pkt(&request("18.26.7.99")), pkt(&request("18.26.8.1"))],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &reply_from(ME, "18.26.4.24")[..]);
        assert_eq!(out[0].anno().device, 3);
        assert_eq!(out[0].anno().vlan_tci, 7);
        assert_eq!(out[0].anno().paint, 0);
        assert_eq!(out[1].data(), &reply_from(ME, "18.26.7.99")[..]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn click_address_lists() {
        // Click's documented forms: abbreviated 0/0 (answer everything),
        // several addresses for one Ethernet address, device names.
        let h = harness(&format!("ARPResponder(0/0 {ME})"), 1);
        h.push(0, vec![pkt(&request("8.8.8.8"))]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &reply_from(ME, "8.8.8.8")[..]);
        let h = harness(
            &format!("ARPResponder(18.26.4.24/32 18.26.4.25 {ME}, lo:ip 00:00:00:00:00:01)"),
            1,
        );
        h.push(
            0,
            vec![
                pkt(&request("18.26.4.25")),
                pkt(&request("18.26.4.24")),
                pkt(&request("127.0.0.1")),
                pkt(&request("127.0.0.2")),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].data(), &reply_from(ME, "18.26.4.25")[..]);
        assert_eq!(
            out[2].data(),
            &reply_from("00:00:00:00:00:01", "127.0.0.1")[..]
        );
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn non_matching_go_to_output_1() {
        let h = harness(&format!("ARPResponder(18.26.4.24 {ME})"), 2);
        let reply = reply_from("1:2:3:4:5:6", "18.26.4.24");
        let ip4 = ether_frame(eth(ME), eth(ASKER), 0x0800, &[0; 28]);
        h.push(
            0,
            vec![
                pkt(&request("18.26.4.25")),
                pkt(&reply),
                pkt(&ip4),
                pkt(&request("18.26.4.24")[..41]),
                pkt(&request("18.26.4.24")),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        let other = h.output(1);
        assert_eq!(other.len(), 4);
        assert_eq!(other[0].data(), &request("18.26.4.25")[..]);
        assert_eq!(other[1].data(), &reply[..]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn longest_prefix_wins_and_handlers() {
        let h = harness(
            "ARPResponder(10.0.0.0/8 1:1:1:1:1:1, 10.1.0.0/255.255.0.0 2:2:2:2:2:2)",
            1,
        );
        assert_eq!(
            h.read("table").unwrap(),
            "10.1.0.0/16 02-02-02-02-02-02\n10.0.0.0/8 01-01-01-01-01-01\n"
        );
        h.push(
            0,
            vec![pkt(&request("10.1.2.3")), pkt(&request("10.2.2.3"))],
        );
        let out = h.output(0);
        assert_eq!(out[0].data(), &reply_from("2:2:2:2:2:2", "10.1.2.3")[..]);
        assert_eq!(out[1].data(), &reply_from("1:1:1:1:1:1", "10.2.2.3")[..]);

        h.write("remove", "10.1.0.0/16").unwrap();
        assert_err(
            h.write("remove", "10.1.0.0/16"),
            "e.remove: no entry for 10.1.0.0/16",
        );
        h.write("add", "192.168.1.1 3:3:3:3:3:3").unwrap();
        assert_err(
            h.write("add", "192.168.1.1"),
            "e.add: '192.168.1.1': missing Ethernet address",
        );
        assert_eq!(
            h.read("table").unwrap(),
            "192.168.1.1/32 03-03-03-03-03-03\n10.0.0.0/8 01-01-01-01-01-01\n"
        );
        h.push(
            0,
            vec![pkt(&request("10.1.2.3")), pkt(&request("192.168.1.1"))],
        );
        let out = h.output(0);
        assert_eq!(out[0].data(), &reply_from("1:1:1:1:1:1", "10.1.2.3")[..]);
        assert_eq!(out[1].data(), &reply_from("3:3:3:3:3:3", "192.168.1.1")[..]);
    }

    #[test]
    fn config_lookup_and_duplicates() {
        let h = harness("ARPResponder()", 1);
        assert_eq!(h.read("table").unwrap(), "");
        assert_err(h.read("lookup 1.0.0.2"), "no entry for 1.0.0.2");
        // A new configuration replaces the whole table; the most specific
        // entry answers first whatever the order given.
        let conf = "1.0.0.0/24 0:1:2:3:4:6, 1.0.0.2 0:1:2:3:4:5";
        h.write("config", conf).unwrap();
        assert_eq!(h.read("config").unwrap(), conf);
        assert_eq!(
            h.read("table").unwrap(),
            "1.0.0.2/32 00-01-02-03-04-05\n1.0.0.0/24 00-01-02-03-04-06\n"
        );
        assert_eq!(h.read("lookup 1.0.0.1").unwrap(), "00-01-02-03-04-06");
        assert_eq!(h.read("lookup 1.0.0.2").unwrap(), "00-01-02-03-04-05");
        // The same network twice: the first given wins (Click warns).
        h.write("config", "1.0.0.2 0:1:2:3:4:5, 1.0.0.2/32 9:9:9:9:9:9")
            .unwrap();
        assert_eq!(h.read("table").unwrap(), "1.0.0.2/32 00-01-02-03-04-05\n");
        let c: super::Config = super::Config::from_arg(
            "1.0.0.2 0:1:2:3:4:5, 1.0.0.2 0:1:2:3:4:5 1.0.0.0/24, 1.0.0.2 1:1:1:1:1:1",
            &Default::default(),
        )
        .unwrap();
        assert_eq!(c.dups, ["1.0.0.2/32"]);
        assert_eq!(c.table.len(), 2);
        // A bad configuration leaves the table as it was.
        assert!(h.write("config", "1.0.0.3").is_err());
        assert_eq!(h.read("table").unwrap(), "1.0.0.2/32 00-01-02-03-04-05\n");
        // `add` replaces the entry for the same network.
        h.write("add", "1.0.0.2 0:0:0:0:0:7").unwrap();
        assert_eq!(h.read("lookup 1.0.0.2").unwrap(), "00-00-00-00-00-07");
    }

    #[test]
    fn address_info_names() {
        use paraclick_runtime::args::{AddrEntry, ArgEnv};
        let mut env = ArgEnv::default();
        for (name, a, mac) in [
            ("eth0", "1.0.0.1", "0:1:2:3:4:5"),
            ("eth1", "2.0.0.1", "0:a:b:c:d:e"),
        ] {
            env.names.insert(
                name.into(),
                AddrEntry {
                    ip: Some(ip(a)),
                    prefix_len: Some(8),
                    ether: Some(eth(mac)),
                    ..Default::default()
                },
            );
        }
        let e0 = super::parse_entry("eth0", &env).unwrap();
        assert_eq!(
            (e0[0].net, e0[0].len, e0[0].eth),
            (0x0100_0001, 32, eth("0:1:2:3:4:5"))
        );
        let e1 = super::parse_entry("eth1:ipnet eth1:eth", &env).unwrap();
        assert_eq!(
            (e1[0].net, e1[0].len, e1[0].eth),
            (0x0200_0000, 8, eth("0:a:b:c:d:e"))
        );
        assert_err(
            super::parse_entry("eth0 1:1:1:1:1:1", &env),
            "'eth0 1:1:1:1:1:1': more than one Ethernet address",
        );
        assert_err(
            super::parse_entry("eth0:bogus", &env),
            "'eth0:bogus': unknown address suffix ':bogus'",
        );
    }

    #[test]
    fn bad_configuration() {
        assert_err(
            try_harness("ARPResponder(18.26.4.24)", 1),
            "e :: ARPResponder: '18.26.4.24': missing Ethernet address",
        );
        assert_err(
            try_harness("ARPResponder(1:1:1:1:1:1)", 1),
            "e :: ARPResponder: '1:1:1:1:1:1': missing IP address",
        );
        assert_err(
            try_harness("ARPResponder(1.2.3.4 1:1:1:1:1:1 2:2:2:2:2:2)", 1),
            "e :: ARPResponder: '1.2.3.4 1:1:1:1:1:1 2:2:2:2:2:2': more than one Ethernet address",
        );
        assert_err(
            try_harness("ARPResponder(1.2.3.4/33 1:1:1:1:1:1)", 1),
            "e :: ARPResponder: '1.2.3.4/33' is not an IP address, prefix or Ethernet address",
        );
        assert_err(
            try_harness("ARPResponder(nosuchname 1:1:1:1:1:1)", 1),
            "e :: ARPResponder: 'nosuchname' is not an IP address, prefix or Ethernet address",
        );
    }
}
