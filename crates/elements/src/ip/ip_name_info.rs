//! # IPNameInfo
//!
//! IPNameInfo()
//!
//! Stores name information about IP packets.
//!
//! Ports: none.
//!
//! Holds the IP-related names paraclick's elements understand, and answers
//! lookups of them through its handlers. The names are built in (every
//! element knows them whether or not an IPNameInfo is configured, as in
//! Click, where this element is not meant for configurations); it takes no
//! arguments. The databases and their names:
//!
//! - `proto` (IP protocols): dccp 33, icmp 1, igmp 2, ipip 4, sctp 132,
//!   tcp 6, udp 17, and Click's pseudo-protocols tcpudp 256, transp 258,
//!   payload 259; then the names of /etc/protocols.
//! - `port` (TCP and UDP ports): auth, bootpc, bootps, chargen, daytime,
//!   discard, dns, domain, echo, finger, ftp, ftp-data, http, https,
//!   imap3, imaps, irc, netbios-dgm, netbios-ns, netbios-ssn, nntp, ntp,
//!   pop3, pop3s, rip, route, smtp, snmp, snmp-trap, ssh, sunrpc, telnet,
//!   tftp, www; then the names of /etc/services.
//! - `icmp_type` (ICMP types): echo, echo-reply, inforeq, inforeq-reply,
//!   maskreq, maskreq-reply, parameterproblem, redirect, routeradvert,
//!   routersolicit, sourcequench, timeexceeded, timestamp,
//!   timestamp-reply, unreachable.
//! - `unreachable` (ICMP unreachable codes): filterprohibited, host,
//!   hostprecedence, hostprohibited, hostunknown, isolated, needfrag, net,
//!   netprohibited, netunknown, port, precedencecutoff, protocol,
//!   srcroutefail, toshost, tosnet.
//! - `redirect` (ICMP redirect codes): host, net, toshost, tosnet.
//! - `timeexceeded` (ICMP time exceeded codes): reassembly, transit.
//! - `parameterproblem` (ICMP parameter problem codes): erroratptr,
//!   length, missingopt.
//!
//! The system files are read at a lookup, at most their first 1 MiB;
//! a name the built-in table has is never taken from them.
//!
//! Handlers:
//! - `lookup` (read with a parameter `DATABASE NAME`): the name's number
//!   (`lookup port ssh` gives 22); with a number for NAME, the number's
//!   first built-in name (`lookup proto 6` gives `tcp`). An unknown
//!   database or name is an error.
//! - `databases` (read): the database names, one a line.
//!
//! Example:
//!
//!     i :: IPNameInfo;
//!     // paraclick ctl read 'i.lookup icmp_type echo-reply'  ->  0

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

pub struct IPNameInfo;

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPNameInfo", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPNameInfo, String> {
    cx.args().complete()?;
    Ok(IPNameInfo)
}

/// Click's pseudo-protocols, which the protocol database names after the
/// real protocols' names.
const PSEUDO_PROTOCOLS: &[(&str, u32)] = &[("tcpudp", 256), ("transp", 258), ("payload", 259)];

const DATABASES: &[&str] = &[
    "proto",
    "port",
    "icmp_type",
    "unreachable",
    "redirect",
    "timeexceeded",
    "parameterproblem",
];

/// The built-in names of `db`, `None` for an unknown database.
fn builtin(db: &str) -> Option<Vec<(&'static str, u32)>> {
    let codes = |t: u8| {
        crate::icmp::icmp_error::codes(t)
            .iter()
            .map(|&(n, v)| (n, u32::from(v)))
            .collect()
    };
    Some(match db {
        "proto" => paraclick_packet::wire::ip_proto::NAMES
            .iter()
            .map(|&(n, p)| (n, u32::from(p)))
            .chain(PSEUDO_PROTOCOLS.iter().copied())
            .collect(),
        "port" => crate::ipfilter::lang::PORT_NAMES.to_vec(),
        "icmp_type" => crate::ipfilter::lang::ICMP_TYPES.to_vec(),
        "unreachable" => codes(3),
        "redirect" => codes(5),
        "timeexceeded" => codes(11),
        "parameterproblem" => codes(12),
        _ => return None,
    })
}

/// The number `name` has in a system file of /etc/services' or
/// /etc/protocols' form: `NAME NUMBER[/PROTO] ALIAS...` (`PROTOCOL NUMBER
/// ALIAS...`), `#` comments.
pub(crate) fn from_system_text(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let l = l.split('#').next().unwrap_or("");
        let mut w = l.split_whitespace();
        let first = w.next()?;
        let num = w.next()?;
        let n: u32 = num.split('/').next()?.parse().ok()?;
        (first == name || w.any(|a| a == name)).then_some(n)
    })
}

fn system_file(db: &str) -> Option<String> {
    use std::io::Read;
    let path = match db {
        "proto" => "/etc/protocols",
        "port" => "/etc/services",
        _ => return None,
    };
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut s = String::new();
    f.take(1 << 20).read_to_string(&mut s).ok()?;
    Some(s)
}

/// The `lookup` handler's answer to `DATABASE NAME`.
pub(crate) fn lookup(param: &str) -> Result<String, String> {
    let mut w = param.split_whitespace();
    let (Some(db), Some(name), None) = (w.next(), w.next(), w.next()) else {
        return Err(format!("expected 'DATABASE NAME', not '{param}'"));
    };
    let names = builtin(db).ok_or_else(|| {
        format!(
            "unknown database '{db}' (databases: {})",
            DATABASES.join(", ")
        )
    })?;
    if let Ok(n) = name.parse::<u32>() {
        return names
            .iter()
            .find(|&&(_, v)| v == n)
            .map(|&(s, _)| s.to_string())
            .ok_or_else(|| format!("{db}: no name for {n}"));
    }
    if let Some(&(_, v)) = names.iter().find(|&&(s, _)| s == name) {
        return Ok(v.to_string());
    }
    system_file(db)
        .and_then(|t| from_system_text(&t, name))
        .map(|v| v.to_string())
        .ok_or_else(|| format!("{db}: unknown name '{name}'"))
}

impl Element for IPNameInfo {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read_param("lookup", |_, param, _| {
            lookup(param.ok_or("lookup needs 'DATABASE NAME'")?)
        }),
        Handler::read("databases", |_, _| {
            DATABASES.iter().map(|d| format!("{d}\n")).collect()
        }),
    ];
}

#[cfg(test)]
mod tests {
    use super::{from_system_text, lookup};
    use crate::test_kit::*;

    #[test]
    fn names_and_numbers_of_every_database() {
        for (q, a) in [
            ("proto dccp", "33"),
            ("proto tcpudp", "256"),
            ("proto transp", "258"),
            ("proto payload", "259"),
            ("proto 17", "udp"),
            ("port ssh", "22"),
            ("port snmp-trap", "162"),
            ("port 53", "domain"),
            ("icmp_type echo-reply", "0"),
            ("icmp_type maskreq-reply", "18"),
            ("unreachable needfrag", "4"),
            ("unreachable precedencecutoff", "15"),
            ("redirect toshost", "3"),
            ("timeexceeded reassembly", "1"),
            ("parameterproblem length", "2"),
        ] {
            assert_eq!(lookup(q).as_deref(), Ok(a), "{q}");
        }
        for (q, e) in [
            ("proto nosuchproto", "unknown name 'nosuchproto'"),
            ("colors red", "unknown database 'colors'"),
            ("port", "expected 'DATABASE NAME'"),
            ("redirect 9", "no name for 9"),
        ] {
            let got = lookup(q).unwrap_err();
            assert!(got.contains(e), "{q}: {got}");
        }
    }

    #[test]
    fn system_files_are_read_by_name_and_alias() {
        let text = "# comment\nssh 22/tcp\nmyservice 7777/tcp my-alias # x\nbad line\n";
        assert_eq!(from_system_text(text, "myservice"), Some(7777));
        assert_eq!(from_system_text(text, "my-alias"), Some(7777));
        assert_eq!(from_system_text(text, "x"), None);
        assert_eq!(from_system_text("ip 0 IP\nicmp 1 ICMP\n", "ICMP"), Some(1));
    }

    #[test]
    fn element_handlers_and_no_arguments() {
        let r = build(&reg(), "i :: IPNameInfo;");
        assert_eq!(handler(&r, "i.lookup port www"), "80");
        assert!(handler(&r, "i.databases").starts_with("proto\nport\n"));
        let e = build_err(&reg(), "IPNameInfo(1);");
        assert!(!e.is_empty());
    }
}
