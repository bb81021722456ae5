//! The PASS filter of FromDevice/MultiFromDevice METHOD XDP: which frames
//! the XDP program gives to the kernel's stack (XDP_PASS) instead of the
//! router's AF_XDP sockets. Not an element.
//!
//! The program (`xdp_pass.bpf.c`, built from source by build.rs) is
//! fixed; the filter is data: a few rules it reads from a map. The
//! filter's language is a small part of tcpdump's: alternatives joined by
//! `or`, each a list of primitives joined by `and`:
//!
//! - `arp`, `ip`, `ip6`: the frame's type;
//! - `icmp`, `icmp6`, `tcp`, `udp`: the IP protocol (`icmp` implies
//!   `ip`, `icmp6` implies `ip6`);
//! - `dst host ADDR`: the IPv4 or IPv6 destination address (which sets
//!   the family), or, with `arp`, the address an ARP frame asks for or
//!   answers (its target protocol address);
//! - `dst port N`: the TCP or UDP destination port (with neither `tcp`
//!   nor `udp`, either).
//!
//! No parentheses or `not`; `and` binds tighter than `or`, as in tcpdump.
//! A frame is passed if it matches an alternative: it has every field
//! the alternative names. IPv4 fragments after the first, and IPv6
//! packets with extension headers, have no port.

use std::net::IpAddr;

/// Alternatives the program holds at most (its map's size).
pub const MAX_RULES: usize = 16;

/// One alternative, as the program's `struct pcx_pass_rule`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub arp: bool,
    /// 4 or 6, 0 for either.
    pub family: u8,
    /// IP protocol, 0 for any.
    pub proto: u8,
    pub dst: Option<IpAddr>,
    pub port: Option<u16>,
}

impl Rule {
    /// The rule as the program reads it (`struct pcx_pass_rule`: six
    /// bytes, the port in network order, 16 address bytes).
    pub fn bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0] = 1;
        b[1] = self.arp as u8;
        b[2] = self.family;
        b[3] = self.proto;
        b[4] = self.dst.is_some() as u8;
        b[5] = self.port.is_some() as u8;
        b[6..8].copy_from_slice(&self.port.unwrap_or(0).to_be_bytes());
        match self.dst {
            Some(IpAddr::V4(a)) => b[8..12].copy_from_slice(&a.octets()),
            Some(IpAddr::V6(a)) => b[8..24].copy_from_slice(&a.octets()),
            None => {}
        }
        b
    }
}

/// A parsed PASS filter: its text and its rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassFilter {
    pub text: String,
    pub rules: Vec<Rule>,
}

const IPPROTO_ICMP: u8 = 1;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_ICMPV6: u8 = 58;

impl PassFilter {
    /// Parses `text`; an error names the word at fault.
    pub fn parse(text: &str) -> Result<PassFilter, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() {
            return Err("PASS: empty filter".into());
        }
        let mut rules = Vec::new();
        for alt in words.split(|w| w.eq_ignore_ascii_case("or")) {
            rules.push(Self::alternative(alt)?);
        }
        if rules.len() > MAX_RULES {
            return Err(format!(
                "PASS: {} alternatives ('or'), at most {MAX_RULES}",
                rules.len()
            ));
        }
        Ok(PassFilter {
            text: text.trim().to_string(),
            rules,
        })
    }

    fn alternative(words: &[&str]) -> Result<Rule, String> {
        if words.is_empty() {
            return Err("PASS: 'or' needs something on each side".into());
        }
        let mut r = Rule::default();
        let mut ip_only = false;
        let set_family = |r: &mut Rule, f: u8, why: &str| -> Result<(), String> {
            if r.arp || (r.family != 0 && r.family != f) {
                return Err(format!("PASS: '{why}' contradicts what comes before it"));
            }
            r.family = f;
            Ok(())
        };
        let set_proto = |r: &mut Rule, p: u8, why: &str| -> Result<(), String> {
            if r.arp || (r.proto != 0 && r.proto != p) {
                return Err(format!("PASS: '{why}' contradicts what comes before it"));
            }
            r.proto = p;
            Ok(())
        };
        let mut i = 0;
        while i < words.len() {
            let w = words[i].to_ascii_lowercase();
            if w == "and" {
                if i == 0 || i + 1 == words.len() || words[i + 1].eq_ignore_ascii_case("and") {
                    return Err("PASS: 'and' needs something on each side".into());
                }
                i += 1;
                continue;
            }
            match w.as_str() {
                "arp" => {
                    if r.family != 0 || r.proto != 0 || r.port.is_some() || ip_only {
                        return Err("PASS: 'arp' contradicts what comes before it".into());
                    }
                    if matches!(r.dst, Some(IpAddr::V6(_))) {
                        return Err("PASS: 'arp' asks for IPv4 addresses".into());
                    }
                    r.arp = true;
                    r.family = 0;
                }
                "ip" => set_family(&mut r, 4, "ip")?,
                "ip6" => set_family(&mut r, 6, "ip6")?,
                "icmp" => {
                    set_family(&mut r, 4, "icmp")?;
                    set_proto(&mut r, IPPROTO_ICMP, "icmp")?;
                }
                "icmp6" => {
                    set_family(&mut r, 6, "icmp6")?;
                    set_proto(&mut r, IPPROTO_ICMPV6, "icmp6")?;
                }
                "tcp" => set_proto(&mut r, IPPROTO_TCP, "tcp")?,
                "udp" => set_proto(&mut r, IPPROTO_UDP, "udp")?,
                "dst" => {
                    let what = words.get(i + 1).map(|s| s.to_ascii_lowercase());
                    let val = words.get(i + 2);
                    match (what.as_deref(), val) {
                        (Some("host"), Some(a)) => {
                            let addr: IpAddr = a.parse().map_err(|_| {
                                format!("PASS: 'dst host {a}': not an IPv4 or IPv6 address")
                            })?;
                            if r.dst.is_some() {
                                return Err("PASS: two 'dst host' in one alternative".into());
                            }
                            match addr {
                                IpAddr::V4(_) if !r.arp => set_family(&mut r, 4, a)?,
                                IpAddr::V4(_) => {}
                                IpAddr::V6(_) => set_family(&mut r, 6, a)?,
                            }
                            r.dst = Some(addr);
                        }
                        (Some("port"), Some(p)) => {
                            let port: u16 = p
                                .parse()
                                .map_err(|_| format!("PASS: 'dst port {p}': not a port number"))?;
                            if r.arp
                                || (r.proto != 0
                                    && r.proto != IPPROTO_TCP
                                    && r.proto != IPPROTO_UDP)
                            {
                                return Err(format!("PASS: 'dst port {p}' needs TCP or UDP"));
                            }
                            ip_only = true;
                            r.port = Some(port);
                        }
                        _ => {
                            return Err(
                                "PASS: 'dst' is followed by 'host ADDRESS' or 'port NUMBER'".into(),
                            )
                        }
                    }
                    i += 3;
                    continue;
                }
                _ => {
                    return Err(format!(
                        "PASS: unknown word '{}' (known: arp, ip, ip6, icmp, icmp6, tcp, udp, \
                         dst host ADDRESS, dst port NUMBER, and, or)",
                        words[i]
                    ))
                }
            }
            i += 1;
        }
        if !r.arp && r.family == 0 && r.proto == 0 && r.dst.is_none() && r.port.is_none() {
            return Err("PASS: an alternative matches nothing in particular".into());
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_rules() {
        let f = PassFilter::parse("arp and dst host 10.0.1.100 or icmp and dst host 10.0.1.100")
            .unwrap();
        assert_eq!(f.rules.len(), 2);
        assert_eq!(
            f.rules[0],
            Rule {
                arp: true,
                family: 0,
                proto: 0,
                dst: Some("10.0.1.100".parse().unwrap()),
                port: None
            }
        );
        assert_eq!(f.rules[1].family, 4);
        assert_eq!(f.rules[1].proto, IPPROTO_ICMP);
        let f =
            PassFilter::parse("tcp dst port 22 or ip6 and dst host 2001:db8::1 or arp").unwrap();
        assert_eq!(f.rules[0].port, Some(22));
        assert_eq!(f.rules[0].proto, IPPROTO_TCP);
        assert_eq!(f.rules[0].family, 0);
        assert_eq!(f.rules[1].family, 6);
        assert!(f.rules[2].arp && f.rules[2].dst.is_none());
        // The program's layout.
        let b = f.rules[0].bytes();
        assert_eq!(&b[..8], &[1, 0, 0, 6, 0, 1, 0, 22]);
        let b = PassFilter::parse("dst host 10.0.0.1").unwrap().rules[0].bytes();
        assert_eq!(&b[..12], &[1, 0, 4, 0, 1, 0, 0, 0, 10, 0, 0, 1]);
        assert_eq!(&b[12..], &[0; 12]);
    }

    #[test]
    fn bad_filters_say_why() {
        for (f, want) in [
            ("", "empty"),
            ("arp and icmp", "'icmp' contradicts"),
            ("ip and ip6", "'ip6' contradicts"),
            ("tcp and udp", "'udp' contradicts"),
            ("icmp dst port 7", "needs TCP or UDP"),
            ("dst host 10.0.0.300", "not an IPv4 or IPv6 address"),
            ("dst port 70000", "not a port number"),
            ("dst", "'dst' is followed by"),
            ("tcp or", "'or' needs"),
            ("tcp and", "'and' needs"),
            ("src host 10.0.0.1", "unknown word 'src'"),
            ("arp and dst host ::1", "contradicts"),
        ] {
            let e = PassFilter::parse(f).unwrap_err();
            assert!(e.contains(want), "{f}: {e}");
        }
        let many = vec!["arp"; MAX_RULES + 1].join(" or ");
        assert!(PassFilter::parse(&many).unwrap_err().contains("at most 16"));
    }
}
