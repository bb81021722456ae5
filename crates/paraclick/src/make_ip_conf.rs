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
//!
//! IPv6: the address field may hold an IPv6 address in brackets,
//! `[2001:db8::1]/64`, alone or after the IPv4 one and a comma
//! (`eth0:10.0.0.1/24,[2001:db8::1]/64:00:11:22:33:44:55`); every interface
//! carries the same families. The router then also has an IPv6 path: a
//! CheckIP6Header input, a LookupIP6Route table `rt6`, neighbour discovery
//! per interface (IP6NDSolicitor, IP6NDAdvertiser with the router flag)
//! and per interface DecIP6HLIM and CheckLength(MTU) whose failures become
//! ICMPv6 time exceeded and packet too big (an IPv6 MTU is at least 1280).
//! IPv6 packets for the router's own addresses go to `tohost`.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One router interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    /// Device name (`eth0`); pcap file names are derived from it.
    pub name: String,
    /// The router's IPv4 address on the interface and the network's prefix
    /// length, if the interface carries IPv4.
    pub v4: Option<(Ipv4Addr, u8)>,
    /// The router's IPv6 address on the interface and the network's prefix
    /// length, if the interface carries IPv6.
    pub v6: Option<(Ipv6Addr, u8)>,
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
    /// The IPv4 address (`0.0.0.0` on an IPv6-only interface).
    pub fn addr(&self) -> Ipv4Addr {
        self.v4.map_or(Ipv4Addr::UNSPECIFIED, |(a, _)| a)
    }
    /// The IPv4 prefix length (0 on an IPv6-only interface).
    pub fn prefix_len(&self) -> u8 {
        self.v4.map_or(0, |(_, l)| l)
    }
    fn mask(&self) -> u32 {
        prefix_mask(self.prefix_len())
    }
    /// The IPv4 network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr()) & self.mask())
    }
    /// The IPv4 directed broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr()) | !self.mask())
    }
    /// The IPv6 network, `PREFIX/LEN` (None on an IPv4-only interface).
    pub fn network6(&self) -> Option<(Ipv6Addr, u8)> {
        self.v6
            .map(|(a, l)| (Ipv6Addr::from(u128::from(a) & prefix_mask6(l)), l))
    }
    /// The MTU, or [`DEFAULT_MTU`].
    pub fn mtu(&self) -> u16 {
        self.mtu.unwrap_or(DEFAULT_MTU)
    }
    /// The addresses as written in comments: `10.0.0.1/24 2001:db8::1/64`.
    fn addrs_shown(&self) -> String {
        let mut v = Vec::new();
        if let Some((a, l)) = self.v4 {
            v.push(format!("{a}/{l}"));
        }
        if let Some((a, l)) = self.v6 {
            v.push(format!("{a}/{l}"));
        }
        v.join(" ")
    }
}

fn prefix_mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
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

/// Splits `spec` at the colons outside `[...]`.
fn split_fields(spec: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in spec.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                out.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&spec[start..]);
    out
}

fn parse_v4(addr: &str, p: &str) -> Result<(Ipv4Addr, u8), String> {
    let a: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IPv4 address"))?;
    let len = parse_prefix(p)?;
    if !(1..=30).contains(&len) {
        return Err(format!(
            "prefix length {len}: must be 1 to 30 (the network needs distinct network and broadcast addresses)"
        ));
    }
    let host = u32::from(a) & !prefix_mask(len);
    if host == 0 || host == !prefix_mask(len) {
        return Err(format!("{a} is the network or broadcast address of /{len}"));
    }
    Ok((a, len))
}

fn parse_v6(addr: &str, p: &str) -> Result<(Ipv6Addr, u8), String> {
    let a: Ipv6Addr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IPv6 address"))?;
    let len: u8 = p
        .parse()
        .ok()
        .filter(|_| p.chars().all(|c| c.is_ascii_digit()))
        .ok_or_else(|| format!("'{p}' is not an IPv6 prefix length"))?;
    if !(1..=127).contains(&len) {
        return Err(format!("IPv6 prefix length {len}: must be 1 to 127"));
    }
    if a.is_multicast() || a.is_unspecified() || a.is_loopback() {
        return Err(format!("{a} cannot be an interface address"));
    }
    if u128::from(a) & !prefix_mask6(len) == 0 {
        return Err(format!(
            "{a} is the subnet-router anycast address of /{len} (RFC 4291)"
        ));
    }
    Ok((a, len))
}

/// Parses `NAME:ADDRS:ETHER[:mtu=N]` (see the module documentation), where
/// ADDRS is `A.B.C.D/PREFIX`, `[IPV6]/LEN` or both separated by a comma.
pub fn parse_iface(spec: &str) -> Result<Iface, String> {
    let bad = |msg: String| format!("interface '{spec}': {msg}");
    if spec.matches('[').count() != spec.matches(']').count() {
        return Err(bad("an IPv6 address's '[' is missing its ']'".into()));
    }
    let fields = split_fields(spec);
    if fields.len() < 3 {
        return Err(bad(
            "expected NAME:ADDR/PREFIX:ETHER[:mtu=N], e.g. eth0:10.0.0.1/24:00:11:22:33:44:55 \
             or eth0:10.0.0.1/24,[2001:db8::1]/64:00:11:22:33:44:55"
                .into(),
        ));
    }
    let name = fields[0];
    valid_name(name).map_err(bad)?;
    let (mut v4, mut v6) = (None, None);
    for one in fields[1].split(',') {
        let (a, p) = one
            .rsplit_once('/')
            .ok_or_else(|| bad(format!("'{one}' needs a /PREFIX")))?;
        if let Some(a6) = a.strip_prefix('[') {
            let a6 = a6
                .strip_suffix(']')
                .ok_or_else(|| bad(format!("'{a}': missing ']'")))?;
            if v6.is_some() {
                return Err(bad("more than one IPv6 address".into()));
            }
            v6 = Some(parse_v6(a6, p).map_err(bad)?);
        } else {
            if v4.is_some() {
                return Err(bad("more than one IPv4 address".into()));
            }
            v4 = Some(parse_v4(a, p).map_err(bad)?);
        }
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
    if v6.is_some() && mtu.unwrap_or(DEFAULT_MTU) < 1280 {
        return Err(bad(format!(
            "mtu {}: an IPv6 link needs at least 1280 (RFC 8200)",
            mtu.unwrap_or(DEFAULT_MTU)
        )));
    }
    if rest.is_empty() {
        return Err(bad("missing the Ethernet address".into()));
    }
    let ether = parse_ether(rest).map_err(bad)?;
    if u8::from_str_radix(&ether[..2], 16).is_ok_and(|b| b & 1 == 1) {
        return Err(bad(format!("{ether} is a group (multicast) address")));
    }
    Ok(Iface {
        name: name.to_string(),
        v4,
        v6,
        ether,
        mtu,
    })
}

/// Checks a whole interface list: at least one interface, distinct names,
/// distinct addresses and distinct networks. (Call it before [`generate`].)
pub fn validate(ifaces: &[Iface]) -> Result<(), String> {
    if ifaces.is_empty() {
        return Err("make-ip-conf: give at least one interface".into());
    }
    let with4 = ifaces.iter().filter(|f| f.v4.is_some()).count();
    let with6 = ifaces.iter().filter(|f| f.v6.is_some()).count();
    for (count, family) in [(with4, "IPv4"), (with6, "IPv6")] {
        if count != 0 && count != ifaces.len() {
            return Err(format!(
                "{family} on {count} of {} interfaces: give every interface an {family} address, or none",
                ifaces.len()
            ));
        }
    }
    for (i, a) in ifaces.iter().enumerate() {
        for b in &ifaces[..i] {
            if a.name == b.name {
                return Err(format!("interface {} is given twice", a.name));
            }
            if a.v4.is_some() && a.addr() == b.addr() {
                return Err(format!(
                    "interfaces {} and {} have the same address {}",
                    b.name,
                    a.name,
                    a.addr()
                ));
            }
            if a.v4.is_some() && a.network() == b.network() && a.prefix_len() == b.prefix_len() {
                return Err(format!(
                    "interfaces {} and {} are on the same network {}/{}",
                    b.name,
                    a.name,
                    a.network(),
                    a.prefix_len()
                ));
            }
            if let (Some((x, _)), Some((y, _))) = (a.v6, b.v6) {
                if x == y {
                    return Err(format!(
                        "interfaces {} and {} have the same address {x}",
                        b.name, a.name
                    ));
                }
            }
            if let (Some((n, l)), Some(m)) = (a.network6(), b.network6()) {
                if (n, l) == m {
                    return Err(format!(
                        "interfaces {} and {} are on the same network {n}/{l}",
                        b.name, a.name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Writes the router configuration for `ifaces` (which should pass
/// [`validate`]). Interface `i` is painted `i + 1` and is output `i + 1`
/// of the routing table `rt` (IPv4) and `rt6` (IPv6); output 0 is the host.
/// Each family appears when the interfaces carry it; an IPv4-only list
/// gives exactly make-ip-conf.pl's router.
pub fn generate(ifaces: &[Iface], device: Device) -> String {
    let n = ifaces.len();
    let has4 = ifaces.iter().all(|f| f.v4.is_some());
    let has6 = ifaces.iter().all(|f| f.v6.is_some());
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
    if has6 {
        w.push_str(if has4 {
            "// IPv6 too (dual stack): each interface's Classifier also separates
// neighbour solicitations, advertisements and IPv6; IPv6 has its own
"
        } else {
            "// IPv6 only: each interface's Classifier separates neighbour
// solicitations, advertisements and IPv6; IPv6 has its own
"
        });
        w.push_str(
            "// input path (CheckIP6Header), routing table rt6 (output i+1 is interface
// i, 0 the router's addresses), neighbour discovery (IP6NDSolicitor,
// IP6NDAdvertiser) and per-interface output path (DecIP6HLIM, CheckLength
// for the MTU) whose errors become ICMPv6 errors (time exceeded, packet
// too big) that go back into rt6. Both families share the output Queues.
//
",
        );
    }
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
            w.push_str(" \\\n//       ");
            if has4 {
                w.push_str("-h cip.drop_details -h rt.table");
            } else {
                w.push_str("-h cip6.drops -h rt6.table");
            }
            w.push_str(" -h tohost.count\n");
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
            f.addrs_shown(),
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

    if has4 {
        write_v4_input(w, ifaces, device);
    }
    if has6 {
        write_v6_input(w, ifaces, device, has4);
    }

    // Per-interface devices, neighbours and classification.
    for (i, f) in ifaces.iter().enumerate() {
        let paint = i + 1;
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "// {}: {}, {}, MTU {}.",
            f.name,
            f.addrs_shown(),
            f.ether,
            f.mtu()
        );
        match device {
            Device::Pcap => {
                if i == 0 {
                    let _ = writeln!(
                        w,
                        "// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's\n\
                         // one packet per run: Click's order of side effects, at twice the cost)."
                    );
                }
                let _ = writeln!(w, "in{i} :: FromDump($IN{i}, STOP true, BURST 32);");
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
        // (pattern, comment, what the output goes to)
        let mut outs: Vec<(&str, &str, String)> = Vec::new();
        if let Some((a, _)) = f.v4 {
            outs.push((
                "12/0806 20/0001",
                "ARP requests",
                format!("ar{i} :: ARPResponder({a} {}) -> out{i};", f.ether),
            ));
            outs.push(("12/0806 20/0002", "ARP replies", format!("[1]arpq{i};")));
            outs.push((
                "12/0800",
                if has6 { "IPv4" } else { "IP" },
                format!("Paint({paint}) -> ip;"),
            ));
        }
        if f.v6.is_some() {
            outs.push((
                "12/86dd 20/3aff 54/87",
                "neighbour solicitations",
                format!("ns{i} :: Tee(2);"),
            ));
            outs.push((
                "12/86dd 20/3aff 54/88",
                "neighbour advertisements",
                format!("[1]nds{i};"),
            ));
            outs.push(("12/86dd", "IPv6", format!("Paint({paint}) -> ip6;")));
        }
        outs.push(("-", "other", format!("other{i} :: Discard;")));
        let head = format!("c{i} :: Classifier(");
        let pad = " ".repeat(head.len());
        let width = outs.iter().map(|o| o.0.len() + 1).max().unwrap_or(0) + 2;
        for (k, (pat, comment, _)) in outs.iter().enumerate() {
            let punct = if k + 1 == outs.len() { ");" } else { "," };
            let _ = writeln!(
                w,
                "{}{:<width$}// {comment}",
                if k == 0 { &head } else { &pad },
                format!("{pat}{punct}"),
            );
        }
        let _ = writeln!(
            w,
            "in{i} -> hf{i} :: HostEtherFilter({}, DROP_OWN true) -> c{i};",
            f.ether
        );
        if let Some((a, _)) = f.v4 {
            let _ = writeln!(w, "arpq{i} :: ARPQuerier({a}, {}) -> out{i};", f.ether);
        }
        if let Some((a, _)) = f.v6 {
            let _ = writeln!(w, "nds{i} :: IP6NDSolicitor({a}, {}) -> out{i};", f.ether);
        }
        for (k, (_, _, to)) in outs.iter().enumerate() {
            let _ = writeln!(w, "c{i}[{k}] -> {to}");
        }
        if let Some((a, _)) = f.v6 {
            let _ = writeln!(
                w,
                "ns{i}[0] -> IP6NDAdvertiser({a} {}, ROUTER true) -> out{i};",
                f.ether
            );
            let _ = writeln!(w, "ns{i}[1] -> [1]nds{i};");
        }
    }

    // Per-interface output paths.
    if has4 {
        for (i, f) in ifaces.iter().enumerate() {
            let paint = i + 1;
            let a = f.addr();
            let others: Vec<String> = ifaces
                .iter()
                .filter(|g| g.addr() != a)
                .map(|g| g.addr().to_string())
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
    }
    if has6 {
        for (i, f) in ifaces.iter().enumerate() {
            let Some((a, _)) = f.v6 else { continue };
            let paint = i + 1;
            let _ = writeln!(w);
            let _ = writeln!(
                w,
                "// IPv6 forwarding out {}, with ICMPv6 errors back through rt6.",
                f.name
            );
            let _ = writeln!(
                w,
                "rt6[{paint}] -> dh{i} :: DecIP6HLIM -> cl{i} :: CheckLength($MTU{i}) -> [0]nds{i};"
            );
            let _ = writeln!(w, "dh{i}[1] -> ICMP6Error({a}, timeexceeded) -> rt6;");
            let _ = writeln!(
                w,
                "cl{i}[1] -> ICMP6Error({a}, packettoobig, PMTU $MTU{i}) -> rt6;"
            );
        }
    }
    s
}

/// The IPv4 routing table, input path and host output.
fn write_v4_input(w: &mut String, ifaces: &[Iface], device: Device) {
    let _ = writeln!(
        w,
        "// Routing table: the host (0), then one output per interface."
    );
    let mut routes = Vec::new();
    for f in ifaces {
        routes.push(format!("{}/32 0", f.addr()));
        routes.push(format!("{}/32 0", f.broadcast()));
        routes.push(format!("{}/32 0", f.network()));
    }
    routes.push("255.255.255.255/32 0".into());
    routes.push("0.0.0.0/32 0".into());
    for (i, f) in ifaces.iter().enumerate() {
        routes.push(format!("{}/{} {}", f.network(), f.prefix_len(), i + 1));
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
        .map(|f| format!("{}/{}", f.addr(), f.prefix_len()))
        .collect();
    let _ = writeln!(
        w,
        "// IP input, shared by every interface: check the header (RFC 1812 5.2.2),"
    );
    let _ = writeln!(
        w,
        "// drop broadcast sources as Click does (STRICT_SRC: every 5.3.7 martian), look the destination up."
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
                .map(|f| format!("dst host {}", f.addr()))
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
}

/// The IPv6 routing table, input path and host output (shared with IPv4's
/// when there is one).
fn write_v6_input(w: &mut String, ifaces: &[Iface], device: Device, has4: bool) {
    if has4 {
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "// IPv6 routing table: the router's addresses (0), then one output per interface."
    );
    let mut routes = Vec::new();
    for f in ifaces {
        if let Some((a, _)) = f.v6 {
            routes.push(format!("{a}/128 0"));
        }
    }
    for (i, f) in ifaces.iter().enumerate() {
        if let Some((net, len)) = f.network6() {
            routes.push(format!("{net}/{len} {}", i + 1));
        }
    }
    let _ = writeln!(
        w,
        "rt6 :: LookupIP6Route({});",
        routes.join(",\n                       ")
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "// IPv6 input, shared by every interface: check the header (RFC 8200),"
    );
    let _ = writeln!(w, "// look the destination up.");
    let _ = writeln!(w, "ip6 :: Strip(14)");
    let _ = writeln!(w, "  -> cip6 :: CheckIP6Header");
    let _ = writeln!(w, "  -> GetIP6Address(24)");
    let _ = writeln!(w, "  -> rt6;");
    let _ = writeln!(w);
    let host = match (device, has4) {
        (_, true) => "tohost",
        (Device::Pcap, false) => "tohost :: ToDump($HOST, ENCAP IP)",
        (Device::Linux, false) => "tohost :: Discard",
    };
    let _ = writeln!(
        w,
        "// IPv6 packets for the router itself go to {}.",
        if device == Device::Pcap {
            "the host"
        } else {
            "tohost (discarded)"
        }
    );
    let _ = writeln!(w, "rt6[0] -> {host};");
}

/// `n` example interfaces: `conf/iprouter.click` has the first two, the
/// networks of Click's fake-iprouter (eth0 1.0.0.1/8, eth1 2.0.0.1/8); the
/// others are eth`i` (i+1).0.0.1/8.
// Used by this file's tests and by tests/iprouter.rs (which includes
// this file), not by the binary.
#[cfg_attr(not(test), allow(dead_code))]
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
                v4: Some((addr, 8)),
                v6: None,
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
                v4: Some((Ipv4Addr::new(10, 0, 0, 1), 24)),
                v6: None,
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
        assert_eq!(f.prefix_len(), 22);
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
            "in1 :: FromDump($IN1, STOP true, BURST 32);",
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

    #[test]
    fn parses_ipv6_and_dual_stack_interfaces() {
        let f =
            parse_iface("r0:10.0.1.1/24,[2001:db8:1::1]/64:02:00:00:00:01:01:mtu=1400").unwrap();
        assert_eq!(f.v4, Some((Ipv4Addr::new(10, 0, 1, 1), 24)));
        assert_eq!(f.v6, Some(("2001:db8:1::1".parse().unwrap(), 64)));
        assert_eq!(f.network6(), Some(("2001:db8:1::".parse().unwrap(), 64)));
        assert_eq!(f.ether, "02:00:00:00:01:01");
        assert_eq!(f.mtu, Some(1400));
        let f = parse_iface("wan:[2001:db8:ff::9]/48:02:00:00:00:01:02").unwrap();
        assert_eq!(f.v4, None);
        assert_eq!(f.network6(), Some(("2001:db8:ff::".parse().unwrap(), 48)));
        for (spec, why) in [
            ("e:[2001:db8::1]:02:00:00:00:01:01", "needs a /PREFIX"),
            ("e:[2001:db8::1/64:02:00:00:00:01:01", "missing its ']'"),
            ("e:[2001:db8::g]/64:02:00:00:00:01:01", "not an IPv6"),
            ("e:[2001:db8::1]/128:02:00:00:00:01:01", "1 to 127"),
            ("e:[2001:db8::1]/x:02:00:00:00:01:01", "prefix length"),
            ("e:[ff02::1]/64:02:00:00:00:01:01", "cannot be"),
            ("e:[2001:db8::]/64:02:00:00:00:01:01", "anycast"),
            (
                "e:[2001:db8::1]/64,[2001:db8:1::1]/64:02:00:00:00:01:01",
                "more than one IPv6",
            ),
            (
                "e:10.0.0.1/8,10.1.0.1/16:02:00:00:00:01:01",
                "more than one IPv4",
            ),
            ("e:[2001:db8::1]/64:02:00:00:00:01:01:mtu=1000", "1280"),
        ] {
            match parse_iface(spec) {
                Ok(f) => panic!("{spec}: accepted as {f:?}"),
                Err(e) => assert!(e.contains(why), "{spec}: {e} (wanted '{why}')"),
            }
        }
        let p = |s: &str| parse_iface(s).unwrap();
        let a = p("a:10.0.1.1/24,[2001:db8:1::1]/64:02:00:00:00:01:01");
        let b = p("b:10.0.2.1/24,[2001:db8:2::1]/64:02:00:00:00:01:02");
        assert_eq!(validate(&[a.clone(), b]), Ok(()));
        let e = validate(&[a.clone(), p("b:10.0.2.1/24:02:00:00:00:01:02")]).unwrap_err();
        assert!(e.contains("IPv6 on 1 of 2"), "{e}");
        let e = validate(&[
            a.clone(),
            p("b:10.0.2.1/24,[2001:db8:1::2]/64:02:00:00:00:01:02"),
        ])
        .unwrap_err();
        assert!(e.contains("same network 2001:db8:1::/64"), "{e}");
        let e =
            validate(&[a, p("b:10.0.2.1/24,[2001:db8:1::1]/60:02:00:00:00:01:02")]).unwrap_err();
        assert!(e.contains("same address 2001:db8:1::1"), "{e}");
    }

    fn dual_ifaces(n: usize, v4: bool) -> Vec<Iface> {
        (0..n)
            .map(|i| {
                let four = if v4 {
                    format!("10.0.{}.1/24,", i + 1)
                } else {
                    String::new()
                };
                parse_iface(&format!(
                    "eth{i}:{four}[2001:db8:{:x}::1]/64:02:00:00:00:{:02x}:01",
                    i + 1,
                    i + 1
                ))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn generated_ipv6_routes_and_paths() {
        let c = generate(&dual_ifaces(2, true), Device::Linux);
        for want in [
            "rt :: RadixIPLookup(10.0.1.1/32 0,",
            "rt6 :: LookupIP6Route(2001:db8:1::1/128 0,",
            "2001:db8:2::/64 2);",
            "-> cip6 :: CheckIP6Header",
            "rt6[0] -> tohost;",
            "self[1] -> tohost :: Discard;",
            "12/0800,                // IPv4",
            "12/86dd 20/3aff 54/87,  // neighbour solicitations",
            "nds1 :: IP6NDSolicitor(2001:db8:2::1, 02:00:00:00:02:01) -> out1;",
            "c1[3] -> ns1 :: Tee(2);",
            "c1[4] -> [1]nds1;",
            "c1[5] -> Paint(2) -> ip6;",
            "c1[6] -> other1 :: Discard;",
            "ns0[0] -> IP6NDAdvertiser(2001:db8:1::1 02:00:00:00:01:01, ROUTER true) -> out0;",
            "rt6[2] -> dh1 :: DecIP6HLIM -> cl1 :: CheckLength($MTU1) -> [0]nds1;",
            "cl0[1] -> ICMP6Error(2001:db8:1::1, packettoobig, PMTU $MTU0) -> rt6;",
            "fr1[1] -> ICMPError(10.0.2.1, unreachable, needfrag, PMTU $MTU1) -> rt;",
        ] {
            assert!(c.contains(want), "missing {want:?} in:\n{c}");
        }
        let c = generate(&dual_ifaces(2, false), Device::Pcap);
        assert!(
            c.contains("rt6[0] -> tohost :: ToDump($HOST, ENCAP IP);"),
            "{c}"
        );
        for absent in [
            "RadixIPLookup",
            "ARPQuerier",
            "CheckIPHeader",
            "12/0800",
            "DecIPTTL",
        ] {
            assert!(!c.contains(absent), "{absent} in:\n{c}");
        }
        // IPv4-only output does not mention IPv6.
        let c = generate(&example_ifaces(2), Device::Pcap);
        for absent in ["rt6", "IP6", "86dd"] {
            assert!(!c.contains(absent), "{absent} in:\n{c}");
        }
    }

    /// The dual-stack and IPv6-only configurations build, pcap and Linux
    /// (devices replaced), for 1, 2 and 5 interfaces.
    #[test]
    fn generated_ipv6_configurations_build() {
        let reg = paraclick_io::full_registry();
        let dir = tempfile::tempdir().unwrap();
        for v4 in [true, false] {
            for n in [1, 2, 5] {
                let ifaces = dual_ifaces(n, v4);
                assert_eq!(validate(&ifaces), Ok(()));
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
                let mut linux = generate(&ifaces, Device::Linux);
                for i in 0..n {
                    linux = linux
                        .replace(&format!("FromDevice(eth{i}, SNIFFER false)"), "Idle")
                        .replace(&format!("ToDevice(eth{i})"), "Discard");
                }
                for (text, defines) in [(generate(&ifaces, Device::Pcap), defines), (linux, vec![])]
                {
                    let src = paraclick_lang::Source {
                        name: format!("make-ip-conf-v6-{n}-{v4}"),
                        text: text.clone(),
                    };
                    let opts = paraclick_runtime::BuildOptions {
                        pin: false,
                        defines,
                        ..paraclick_runtime::BuildOptions::default()
                    };
                    if let Err(d) = paraclick_runtime::Router::build(&src, &reg, &opts) {
                        let msgs: Vec<String> = d.iter().map(|d| d.to_string()).collect();
                        panic!("{n} interfaces:\n{}\n{text}", msgs.join("\n"));
                    }
                }
            }
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
