//! `paraclick make-ip-conf`: writes the configuration of an RFC 1812 IP
//! router for a list of Ethernet interfaces.
//!
//! The router has the shape of Figure 2 of the SMP Click paper and the
//! layout of Click's `make-ip-conf.pl`: per interface an input device, a
//! HostEtherFilter and a Classifier (ARP requests, ARP replies, IP,
//! other), an ARPResponder for the interface's address and an ARPQuerier
//! in front of the output Queue; one shared IP input path (Strip,
//! CheckIPHeader, GetIPAddress) into one RadixIPLookup; and per interface
//! an output path (DropBroadcasts, PaintTee for redirects, IPGWOptions,
//! FixIPSrc, DecIPTTL, IPFragmenter) whose errors become ICMP errors that
//! go back into the routing table.
//!
//! Packets for the router itself (its addresses, its networks' broadcast
//! and network addresses, 255.255.255.255 and 0.0.0.0) leave routing table
//! output 0. With pcap files they go to the host output `tohost`, a ToDump
//! of raw IP packets (`$HOST`), as make-ip-conf.pl sends them to Linux
//! (ToLinux) without answering pings itself. On Linux devices,
//! `FromDevice(NAME, SNIFFER false)` keeps the kernel's stack off the
//! interfaces (they must have no addresses), so there is no host to hand
//! them to: the router answers pings to its addresses (IPClassifier,
//! ICMPPingResponder, back into the routing table) and discards the rest
//! (`tohost :: Discard`). On Linux each interface's Ethernet address must be
//! the device's own: HostEtherFilter drops unicast frames for others.
//!
//! Interfaces are written `NAME:ADDR/PREFIX:ETHER[:mtu=N]`, for example
//! `eth0:10.0.0.1/24:00:11:22:33:44:55:mtu=1500`: PREFIX is a length
//! (1 to 30) or a dotted netmask, ETHER six hex bytes separated by `:` or
//! `-`, and MTU (default 1500, at least 68) the largest IP packet the
//! interface sends; bigger ones are fragmented, or answered with an ICMP
//! "fragmentation needed" when their DF bit is set.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// One router interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    /// Device name (`eth0`); pcap file names are derived from it.
    pub name: String,
    /// The router's address on the interface.
    pub addr: Ipv4Addr,
    /// The interface network's prefix length.
    pub prefix_len: u8,
    /// The router's Ethernet address on the interface, `xx:xx:xx:xx:xx:xx`.
    pub ether: String,
    /// The largest IP packet sent on the interface (default 1500).
    pub mtu: Option<u16>,
}

/// Where packets come from and go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// FromDump/ToDump on pcap files named after the interfaces
    /// (`NAME-in.pcap`, `NAME-out.pcap`, `host.pcap`), overridable with the
    /// defines `$IN0 $OUT0 ... $HOST`; the router stops when every input
    /// file is done.
    Pcap,
    /// `FromDevice(NAME, SNIFFER false)` / `ToDevice(NAME)`.
    Linux,
}

/// The MTU of an interface without `mtu=`.
pub const DEFAULT_MTU: u16 = 1500;

/// Capacity of each output Queue (make-ip-conf.pl's).
const QUEUE_CAPACITY: usize = 200;

impl Iface {
    fn mask(&self) -> u32 {
        prefix_mask(self.prefix_len)
    }
    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask())
    }
    /// The directed broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.mask())
    }
    /// The MTU, or [`DEFAULT_MTU`].
    pub fn mtu(&self) -> u16 {
        self.mtu.unwrap_or(DEFAULT_MTU)
    }
}

fn prefix_mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

fn valid_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 {
        return Err(format!(
            "interface name '{name}' must have 1 to 15 characters"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@')))
    {
        return Err(format!(
            "interface name '{name}': character '{c}' not allowed (letters, digits, _ - . @)"
        ));
    }
    Ok(())
}

fn parse_prefix(s: &str) -> Result<u8, String> {
    if let Ok(n) = s.parse::<u8>() {
        if s.chars().all(|c| c.is_ascii_digit()) {
            return Ok(n);
        }
    }
    let m: Ipv4Addr = s
        .parse()
        .map_err(|_| format!("'{s}' is neither a prefix length nor a netmask"))?;
    let m = u32::from(m);
    let len = m.leading_ones();
    if m != prefix_mask(len as u8) {
        return Err(format!("netmask '{s}' is not contiguous"));
    }
    Ok(len as u8)
}

fn parse_ether(parts: &[&str]) -> Result<String, String> {
    let bytes: Vec<&str> = if parts.len() == 1 {
        parts[0].split('-').collect()
    } else {
        parts.to_vec()
    };
    let shown = parts.join(":");
    if bytes.len() != 6 {
        return Err(format!("Ethernet address '{shown}' must have 6 bytes"));
    }
    let mut out = Vec::with_capacity(6);
    for b in bytes {
        if b.is_empty() || b.len() > 2 || !b.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("Ethernet address '{shown}': bad byte '{b}'"));
        }
        let v = u8::from_str_radix(b, 16).map_err(|e| e.to_string())?;
        out.push(format!("{v:02x}"));
    }
    Ok(out.join(":"))
}

/// Parses `NAME:ADDR/PREFIX:ETHER[:mtu=N]` (see the module documentation).
pub fn parse_iface(spec: &str) -> Result<Iface, String> {
    let bad = |msg: String| format!("interface '{spec}': {msg}");
    let fields: Vec<&str> = spec.split(':').collect();
    if fields.len() < 3 {
        return Err(bad(
            "expected NAME:ADDR/PREFIX:ETHER[:mtu=N], e.g. eth0:10.0.0.1/24:00:11:22:33:44:55"
                .into(),
        ));
    }
    let name = fields[0];
    valid_name(name).map_err(bad)?;
    let (a, p) = fields[1]
        .split_once('/')
        .ok_or_else(|| bad(format!("'{}' needs a /PREFIX", fields[1])))?;
    let addr: Ipv4Addr = a
        .parse()
        .map_err(|_| bad(format!("'{a}' is not an IPv4 address")))?;
    let prefix_len = parse_prefix(p).map_err(bad)?;
    if !(1..=30).contains(&prefix_len) {
        return Err(bad(format!(
            "prefix length {prefix_len}: must be 1 to 30 (the network needs distinct network and broadcast addresses)"
        )));
    }
    let mut rest = &fields[2..];
    let mut mtu = None;
    while let Some(last) = rest.last() {
        match last.split_once('=') {
            Some((k, v)) if k.eq_ignore_ascii_case("mtu") => {
                if mtu.is_some() {
                    return Err(bad("mtu given twice".into()));
                }
                let m: u16 = v
                    .parse()
                    .map_err(|_| bad(format!("mtu '{v}' is not a number up to 65535")))?;
                if m < 68 {
                    return Err(bad(format!("mtu {m}: must be at least 68 (RFC 791)")));
                }
                mtu = Some(m);
                rest = &rest[..rest.len() - 1];
            }
            Some((k, _)) => return Err(bad(format!("unknown option '{k}' (mtu=N)"))),
            None => break,
        }
    }
    if rest.is_empty() {
        return Err(bad("missing the Ethernet address".into()));
    }
    let ether = parse_ether(rest).map_err(bad)?;
    let host = u32::from(addr) & !prefix_mask(prefix_len);
    if host == 0 || host == !prefix_mask(prefix_len) {
        return Err(bad(format!(
            "{addr} is the network or broadcast address of /{prefix_len}"
        )));
    }
    if u8::from_str_radix(&ether[..2], 16).is_ok_and(|b| b & 1 == 1) {
        return Err(bad(format!("{ether} is a group (multicast) address")));
    }
    Ok(Iface {
        name: name.to_string(),
        addr,
        prefix_len,
        ether,
        mtu,
    })
}

/// Checks a whole interface list: at least one interface, distinct names,
/// distinct addresses and distinct networks. (Call it before [`generate`].)
#[allow(dead_code)] // for the CLI; the tests use it
pub fn validate(ifaces: &[Iface]) -> Result<(), String> {
    if ifaces.is_empty() {
        return Err("make-ip-conf: give at least one interface".into());
    }
    for (i, a) in ifaces.iter().enumerate() {
        for b in &ifaces[..i] {
            if a.name == b.name {
                return Err(format!("interface {} is given twice", a.name));
            }
            if a.addr == b.addr {
                return Err(format!(
                    "interfaces {} and {} have the same address {}",
                    b.name, a.name, a.addr
                ));
            }
            if a.network() == b.network() && a.prefix_len == b.prefix_len {
                return Err(format!(
                    "interfaces {} and {} are on the same network {}/{}",
                    b.name,
                    a.name,
                    a.network(),
                    a.prefix_len
                ));
            }
        }
    }
    Ok(())
}

/// Writes the router configuration for `ifaces` (which should pass
/// [`validate`]). Interface `i` is painted `i + 1` and is output `i + 1`
/// of the routing table `rt`; output 0 is the host.
pub fn generate(ifaces: &[Iface], device: Device) -> String {
    let n = ifaces.len();
    let mut s = String::new();
    let w = &mut s;

    // Header.
    let _ = writeln!(
        w,
        "// An RFC 1812 IP router with {n} interface{}, written by paraclick make-ip-conf.",
        if n == 1 { "" } else { "s" }
    );
    w.push_str(
        "//
// The router of the SMP Click paper's Figure 2 in the layout of Click's
// make-ip-conf.pl. Interface i is painted i+1 and is output i+1 of the
// routing table rt; output 0 takes the packets for the router itself (its
// addresses, its networks' broadcast and network addresses).
//
",
    );
    match device {
        Device::Pcap => {
            w.push_str(
                "// Packets are read from pcap files ($IN0, ...) and written to pcap files
// ($OUT0, ...). The packets for the router go to the host output, tohost,
// written as raw IP to $HOST: as make-ip-conf.pl sends them to Linux, the
// router does not answer pings itself. It stops when every input file is
// done and the queues had 0.1 s to drain.
//
",
            );
            let _ = write!(w, "//   paraclick iprouter.click");
            for i in 0..n.min(2) {
                let _ = write!(w, " IN{i}=in{i}.pcap OUT{i}=out{i}.pcap");
            }
            w.push_str(
                " \\
//       -h cip.drop_details -h rt.table -h tohost.count
",
            );
        }
        Device::Linux => {
            w.push_str(
                "// Packets are read with FromDevice and sent with ToDevice. SNIFFER false
// keeps the kernel's stack off the interfaces (they must have no IP
// addresses), so there is no host to hand the router's packets to: the
// router answers pings to its addresses itself (ICMPPingResponder) and
// discards the rest (tohost). Each interface's Ethernet address must be
// the device's own (HostEtherFilter drops unicast frames for others).
",
            );
        }
    }
    let _ = writeln!(w, "//");
    let _ = writeln!(w, "// Interfaces:");
    for f in ifaces {
        let _ = writeln!(
            w,
            "//   {:<6} {:<18} {}  MTU {}",
            f.name,
            format!("{}/{}", f.addr, f.prefix_len),
            f.ether,
            f.mtu()
        );
    }
    let _ = writeln!(w);

    // Defines: file names and MTUs.
    let mut defs = Vec::new();
    for (i, f) in ifaces.iter().enumerate() {
        let mut d = String::new();
        if device == Device::Pcap {
            let _ = write!(
                d,
                "$IN{i} {}-in.pcap, $OUT{i} {}-out.pcap, ",
                f.name, f.name
            );
        }
        let _ = write!(d, "$MTU{i} {}", f.mtu());
        defs.push(d);
    }
    if device == Device::Pcap {
        defs.push("$HOST host.pcap".into());
    }
    let _ = writeln!(w, "define({});", defs.join(",\n       "));
    let _ = writeln!(w);

    if device == Device::Pcap {
        let _ = writeln!(
            w,
            "// Stop once every input file is done and the output queues have drained."
        );
        let _ = writeln!(w, "DriverManager(pause {n}, wait 0.1s, stop);");
        let _ = writeln!(w);
    }

    // Routing table.
    let _ = writeln!(
        w,
        "// Routing table: the host (0), then one output per interface."
    );
    let mut routes = Vec::new();
    for f in ifaces {
        routes.push(format!("{}/32 0", f.addr));
        routes.push(format!("{}/32 0", f.broadcast()));
        routes.push(format!("{}/32 0", f.network()));
    }
    routes.push("255.255.255.255/32 0".into());
    routes.push("0.0.0.0/32 0".into());
    for (i, f) in ifaces.iter().enumerate() {
        routes.push(format!("{}/{} {}", f.network(), f.prefix_len, i + 1));
    }
    let _ = writeln!(
        w,
        "rt :: RadixIPLookup({});",
        routes.join(",\n                     ")
    );
    let _ = writeln!(w);

    // Shared IP input path and the host output.
    let interfaces: Vec<String> = ifaces
        .iter()
        .map(|f| format!("{}/{}", f.addr, f.prefix_len))
        .collect();
    let _ = writeln!(
        w,
        "// IP input, shared by every interface: check the header (RFC 1812 5.2.2),"
    );
    let _ = writeln!(
        w,
        "// drop martian and broadcast sources (5.3.7), look the destination up."
    );
    let _ = writeln!(w, "ip :: Strip(14)");
    let _ = writeln!(
        w,
        "  -> cip :: CheckIPHeader(INTERFACES {}, DETAILS true)",
        interfaces.join(" ")
    );
    let _ = writeln!(w, "  -> GetIPAddress(16)");
    let _ = writeln!(w, "  -> rt;");
    let _ = writeln!(w);
    match device {
        Device::Pcap => {
            let _ = writeln!(w, "// Packets for the router itself go to the host.");
            let _ = writeln!(w, "rt[0] -> tohost :: ToDump($HOST, ENCAP IP);");
        }
        Device::Linux => {
            let addrs: Vec<String> = ifaces
                .iter()
                .map(|f| format!("dst host {}", f.addr))
                .collect();
            let _ = writeln!(
                w,
                "// Packets for the router itself: answer pings to its addresses,"
            );
            let _ = writeln!(w, "// discard the rest.");
            let _ = writeln!(
                w,
                "rt[0] -> self :: IPClassifier(icmp type echo and ({}), -);",
                addrs.join(" or ")
            );
            let _ = writeln!(w, "self[0] -> ICMPPingResponder -> rt;");
            let _ = writeln!(w, "self[1] -> tohost :: Discard;");
        }
    }

    // Per-interface devices, ARP and classification.
    for (i, f) in ifaces.iter().enumerate() {
        let paint = i + 1;
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "// {}: {}/{}, {}, MTU {}.",
            f.name,
            f.addr,
            f.prefix_len,
            f.ether,
            f.mtu()
        );
        match device {
            Device::Pcap => {
                let _ = writeln!(w, "in{i} :: FromDump($IN{i}, STOP true);");
                let _ = writeln!(
                    w,
                    "out{i} :: Queue({QUEUE_CAPACITY}) -> to{i} :: ToDump($OUT{i});"
                );
            }
            Device::Linux => {
                let _ = writeln!(w, "in{i} :: FromDevice({}, SNIFFER false);", f.name);
                let _ = writeln!(
                    w,
                    "out{i} :: Queue({QUEUE_CAPACITY}) -> to{i} :: ToDevice({});",
                    f.name
                );
            }
        }
        let head = format!("c{i} :: Classifier(");
        let pad = " ".repeat(head.len());
        let _ = writeln!(w, "{head}12/0806 20/0001,  // ARP requests");
        let _ = writeln!(w, "{pad}12/0806 20/0002,  // ARP replies");
        let _ = writeln!(w, "{pad}12/0800,          // IP");
        let _ = writeln!(w, "{pad}-);               // other");
        let _ = writeln!(
            w,
            "in{i} -> hf{i} :: HostEtherFilter({}, DROP_OWN true) -> c{i};",
            f.ether
        );
        let _ = writeln!(
            w,
            "arpq{i} :: ARPQuerier({}, {}) -> out{i};",
            f.addr, f.ether
        );
        let _ = writeln!(
            w,
            "c{i}[0] -> ar{i} :: ARPResponder({} {}) -> out{i};",
            f.addr, f.ether
        );
        let _ = writeln!(w, "c{i}[1] -> [1]arpq{i};");
        let _ = writeln!(w, "c{i}[2] -> Paint({paint}) -> ip;");
        let _ = writeln!(w, "c{i}[3] -> other{i} :: Discard;");
    }

    // Per-interface output paths.
    for (i, f) in ifaces.iter().enumerate() {
        let paint = i + 1;
        let a = f.addr;
        let others: Vec<String> = ifaces
            .iter()
            .filter(|g| g.addr != a)
            .map(|g| g.addr.to_string())
            .collect();
        let gio_args = if others.is_empty() {
            a.to_string()
        } else {
            format!("{a}, {}", others.join(" "))
        };
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "// Forwarding out {}, with ICMP errors back through rt.",
            f.name
        );
        let _ = writeln!(w, "rt[{paint}] -> db{i} :: DropBroadcasts");
        let _ = writeln!(w, "      -> cp{i} :: PaintTee({paint})");
        let _ = writeln!(w, "      -> gio{i} :: IPGWOptions({gio_args})");
        let _ = writeln!(w, "      -> FixIPSrc({a})");
        let _ = writeln!(w, "      -> dt{i} :: DecIPTTL");
        let _ = writeln!(w, "      -> fr{i} :: IPFragmenter($MTU{i})");
        let _ = writeln!(w, "      -> [0]arpq{i};");
        let _ = writeln!(w, "cp{i}[1] -> ICMPError({a}, redirect, host) -> rt;");
        let _ = writeln!(w, "gio{i}[1] -> ICMPError({a}, parameterproblem) -> rt;");
        let _ = writeln!(w, "dt{i}[1] -> ICMPError({a}, timeexceeded) -> rt;");
        let _ = writeln!(
            w,
            "fr{i}[1] -> ICMPError({a}, unreachable, needfrag, PMTU $MTU{i}) -> rt;"
        );
    }
    s
}

/// `n` example interfaces: `conf/iprouter.click` has the first two, the
/// networks of Click's fake-iprouter (eth0 1.0.0.1/8, eth1 2.0.0.1/8); the
/// others are eth`i` (i+1).0.0.1/8.
#[allow(dead_code)] // for the CLI; the tests use it
pub fn example_ifaces(n: usize) -> Vec<Iface> {
    (0..n)
        .map(|i| {
            let (addr, ether) = match i {
                0 => (Ipv4Addr::new(1, 0, 0, 1), "00:00:c0:ae:67:ef".to_string()),
                1 => (Ipv4Addr::new(2, 0, 0, 1), "00:00:c0:4f:71:ef".to_string()),
                _ => (
                    Ipv4Addr::new(i as u8 + 1, 0, 0, 1),
                    format!("00:00:c0:{:02x}:00:ef", i as u8),
                ),
            };
            Iface {
                name: format!("eth{i}"),
                addr,
                prefix_len: 8,
                ether,
                mtu: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interfaces() {
        let f = parse_iface("eth0:10.0.0.1/24:00:11:22:33:44:55").unwrap();
        assert_eq!(
            f,
            Iface {
                name: "eth0".into(),
                addr: Ipv4Addr::new(10, 0, 0, 1),
                prefix_len: 24,
                ether: "00:11:22:33:44:55".into(),
                mtu: None,
            }
        );
        assert_eq!(f.network(), Ipv4Addr::new(10, 0, 0, 0));
        assert_eq!(f.broadcast(), Ipv4Addr::new(10, 0, 0, 255));
        assert_eq!(f.mtu(), 1500);

        let f = parse_iface("veth-a:192.168.7.9/255.255.252.0:0-1B-2c-3:4:5:mtu=9000").unwrap_err();
        assert!(f.contains("6 bytes"), "{f}");
        let f = parse_iface("veth-a:192.168.7.9/255.255.252.0:0-1B-2c-3-4-5:MTU=9000").unwrap();
        assert_eq!(f.prefix_len, 22);
        assert_eq!(f.ether, "00:1b:2c:03:04:05");
        assert_eq!(f.mtu, Some(9000));
        assert_eq!(f.broadcast(), Ipv4Addr::new(192, 168, 7, 255));
    }

    #[test]
    fn rejects_bad_interfaces() {
        for (spec, why) in [
            ("eth0", "expected NAME"),
            ("eth0:10.0.0.1:00:11:22:33:44:55", "needs a /PREFIX"),
            (":10.0.0.1/24:00:11:22:33:44:55", "1 to 15 characters"),
            (
                "a_very_long_interface:10.0.0.1/24:00:11:22:33:44:55",
                "1 to 15",
            ),
            ("et h0:10.0.0.1/24:00:11:22:33:44:55", "not allowed"),
            ("eth0:10.0.0.256/24:00:11:22:33:44:55", "not an IPv4"),
            ("eth0:10.0.0.1/33:00:11:22:33:44:55", "1 to 30"),
            ("eth0:10.0.0.1/31:00:11:22:33:44:55", "1 to 30"),
            ("eth0:10.0.0.1/0:00:11:22:33:44:55", "1 to 30"),
            (
                "eth0:10.0.0.1/255.0.255.0:00:11:22:33:44:55",
                "not contiguous",
            ),
            ("eth0:10.0.0.1/x:00:11:22:33:44:55", "neither"),
            ("eth0:10.0.0.0/24:00:11:22:33:44:55", "network or broadcast"),
            (
                "eth0:10.0.0.255/24:00:11:22:33:44:55",
                "network or broadcast",
            ),
            ("eth0:10.0.0.1/24:00:11:22:33:44", "6 bytes"),
            ("eth0:10.0.0.1/24:00:11:22:33:44:5g", "bad byte"),
            ("eth0:10.0.0.1/24:00:11:22:33:44:555", "bad byte"),
            ("eth0:10.0.0.1/24:01:00:5e:00:00:01", "multicast"),
            ("eth0:10.0.0.1/24:00:11:22:33:44:55:mtu=67", "at least 68"),
            (
                "eth0:10.0.0.1/24:00:11:22:33:44:55:mtu=70000",
                "not a number",
            ),
            (
                "eth0:10.0.0.1/24:00:11:22:33:44:55:mtu=1500:mtu=1400",
                "twice",
            ),
            (
                "eth0:10.0.0.1/24:00:11:22:33:44:55:speed=10",
                "unknown option",
            ),
            ("eth0:10.0.0.1/24:mtu=1500", "missing the Ethernet"),
        ] {
            match parse_iface(spec) {
                Ok(f) => panic!("{spec}: accepted as {f:?}"),
                Err(e) => assert!(e.contains(why), "{spec}: {e} (wanted '{why}')"),
            }
        }
    }

    #[test]
    fn validates_interface_lists() {
        let p = |s: &str| parse_iface(s).unwrap();
        assert!(validate(&[]).unwrap_err().contains("at least one"));
        let a = p("eth0:10.0.0.1/24:00:11:22:33:44:55");
        let b = p("eth1:10.0.1.1/24:00:11:22:33:44:56");
        assert_eq!(validate(&[a.clone(), b.clone()]), Ok(()));
        let e = validate(&[a.clone(), p("eth0:10.0.2.1/24:00:11:22:33:44:57")]).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = validate(&[a.clone(), p("eth1:10.0.0.1/16:00:11:22:33:44:57")]).unwrap_err();
        assert!(e.contains("same address"), "{e}");
        let e = validate(&[a, p("eth1:10.0.0.2/24:00:11:22:33:44:57")]).unwrap_err();
        assert!(e.contains("same network"), "{e}");
        assert_eq!(validate(&example_ifaces(8)), Ok(()));
    }

    #[test]
    fn generated_routes_and_paths() {
        let ifaces = vec![
            parse_iface("eth0:10.0.0.1/24:00:11:22:33:44:55").unwrap(),
            parse_iface("wan:192.0.2.2/30:00:11:22:33:44:66:mtu=576").unwrap(),
        ];
        let c = generate(&ifaces, Device::Pcap);
        for want in [
            "define($IN0 eth0-in.pcap, $OUT0 eth0-out.pcap, $MTU0 1500,",
            "$IN1 wan-in.pcap, $OUT1 wan-out.pcap, $MTU1 576,",
            "$HOST host.pcap);",
            "DriverManager(pause 2, wait 0.1s, stop);",
            "rt :: RadixIPLookup(10.0.0.1/32 0,",
            "10.0.0.255/32 0,",
            "10.0.0.0/32 0,",
            "192.0.2.2/32 0,",
            "192.0.2.3/32 0,",
            "192.0.2.0/32 0,",
            "255.255.255.255/32 0,",
            "0.0.0.0/32 0,",
            "10.0.0.0/24 1,",
            "192.0.2.0/30 2);",
            "CheckIPHeader(INTERFACES 10.0.0.1/24 192.0.2.2/30, DETAILS true)",
            "rt[0] -> tohost :: ToDump($HOST, ENCAP IP);",
            "in1 :: FromDump($IN1, STOP true);",
            "out1 :: Queue(200) -> to1 :: ToDump($OUT1);",
            "in1 -> hf1 :: HostEtherFilter(00:11:22:33:44:66, DROP_OWN true) -> c1;",
            "arpq1 :: ARPQuerier(192.0.2.2, 00:11:22:33:44:66) -> out1;",
            "c1[0] -> ar1 :: ARPResponder(192.0.2.2 00:11:22:33:44:66) -> out1;",
            "c1[2] -> Paint(2) -> ip;",
            "rt[2] -> db1 :: DropBroadcasts",
            "-> cp1 :: PaintTee(2)",
            "-> gio1 :: IPGWOptions(192.0.2.2, 10.0.0.1)",
            "-> FixIPSrc(192.0.2.2)",
            "-> fr1 :: IPFragmenter($MTU1)",
            "fr1[1] -> ICMPError(192.0.2.2, unreachable, needfrag, PMTU $MTU1) -> rt;",
            "cp0[1] -> ICMPError(10.0.0.1, redirect, host) -> rt;",
        ] {
            assert!(c.contains(want), "missing {want:?} in:\n{c}");
        }
        let l = generate(&ifaces, Device::Linux);
        for want in [
            "define($MTU0 1500,\n       $MTU1 576);",
            "in0 :: FromDevice(eth0, SNIFFER false);",
            "out1 :: Queue(200) -> to1 :: ToDevice(wan);",
            "rt[0] -> self :: IPClassifier(icmp type echo and (dst host 10.0.0.1 or dst host 192.0.2.2), -);",
            "self[0] -> ICMPPingResponder -> rt;",
            "self[1] -> tohost :: Discard;",
        ] {
            assert!(l.contains(want), "missing {want:?} in:\n{l}");
        }
        for absent in ["FromDump", "ToDump", "DriverManager", "$IN0", "$HOST"] {
            assert!(!l.contains(absent), "{absent} in:\n{l}");
        }
    }

    /// An empty pcap file (microseconds, Ethernet).
    fn empty_pcap(path: &std::path::Path) {
        let mut h = Vec::new();
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&[0; 8]);
        h.extend_from_slice(&65535u32.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        std::fs::write(path, h).unwrap();
    }

    /// The pcap configurations build (every element configures: what
    /// `paraclick check` does) for 1, 2, 3 and 8 interfaces, on empty input
    /// files; so do the Linux ones with their devices replaced.
    #[test]
    fn generated_configurations_build() {
        let reg = paraclick_io::full_registry();
        let dir = tempfile::tempdir().unwrap();
        for n in [1, 2, 3, 8] {
            let text = generate(&example_ifaces(n), Device::Pcap);
            let src = paraclick_lang::Source {
                name: format!("make-ip-conf-{n}"),
                text: text.clone(),
            };
            let mut defines = Vec::new();
            for i in 0..n {
                let p = dir.path().join(format!("in{i}.pcap"));
                empty_pcap(&p);
                defines.push((format!("IN{i}"), p.display().to_string()));
                let p = dir.path().join(format!("out{i}.pcap"));
                defines.push((format!("OUT{i}"), p.display().to_string()));
            }
            let p = dir.path().join("host.pcap");
            defines.push(("HOST".into(), p.display().to_string()));
            let opts = paraclick_runtime::BuildOptions {
                pin: false,
                defines,
                ..paraclick_runtime::BuildOptions::default()
            };
            if let Err(d) = paraclick_runtime::Router::build(&src, &reg, &opts) {
                let msgs: Vec<String> = d.iter().map(|d| d.to_string()).collect();
                panic!("{n} interfaces:\n{}\n{text}", msgs.join("\n"));
            }
            // The Linux one, its devices replaced by Idle and Discard.
            let mut text = generate(&example_ifaces(n), Device::Linux);
            for i in 0..n {
                text = text
                    .replace(&format!("FromDevice(eth{i}, SNIFFER false)"), "Idle")
                    .replace(&format!("ToDevice(eth{i})"), "Discard");
            }
            assert!(!text.contains("Device("), "{text}");
            let src = paraclick_lang::Source {
                name: format!("make-ip-conf-linux-{n}"),
                text: text.clone(),
            };
            let opts = paraclick_runtime::BuildOptions {
                pin: false,
                ..paraclick_runtime::BuildOptions::default()
            };
            if let Err(d) = paraclick_runtime::Router::build(&src, &reg, &opts) {
                let msgs: Vec<String> = d.iter().map(|d| d.to_string()).collect();
                panic!("{n} interfaces (Linux):\n{}\n{text}", msgs.join("\n"));
            }
        }
    }
}
