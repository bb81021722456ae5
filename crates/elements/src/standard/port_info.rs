//! # PortInfo
//!
//! PortInfo(NAME PORT[/PROTOCOL], ...)
//!
//! Stores named TCP/UDP port information.
//!
//! Ports: none.
//!
//! Gives mnemonic names to TCP and UDP port numbers. Each argument is
//! `NAME PORT[/PROTOCOL]`, PROTOCOL being `tcp` or `udp` (without it the
//! name is for both). An argument may hold several names, as in
//! `NAME PORT/PROTOCOL NAME...` (extra names are aliases), and text from
//! `#` on is a comment, so lines of /etc/services can be used as they
//! are. Lookups are answered through the `lookup` handler, and UDPIPEncap's
//! port arguments take the names. As in Click, a PortInfo inside a
//! compound element defines its names for that compound only (overriding
//! outer ones there); PortInfo is configured before the elements that use
//! its names. Names no PortInfo defines fall back to a fixed table of
//! well-known services (`ssh`, `domain`, `www`, ...; see IPClassifier).
//!
//! Handlers:
//! - `lookup` (read with a parameter `NAME[/PROTOCOL]`): the port number.
//!
//! Example:
//!
//!     PortInfo(ssh 22, http 80/tcp, domain 53/udp dns);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

/// (name, port, protocol: None for both)
type Entry = (String, u16, Option<&'static str>);

pub struct PortInfo {
    entries: Vec<Entry>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("PortInfo", "0/0", "a", make)
        .phase(-100)
        .stateless()
}

fn proto(s: &str) -> Option<&'static str> {
    match s.to_ascii_lowercase().as_str() {
        "tcp" => Some("tcp"),
        "udp" => Some("udp"),
        _ => None,
    }
}

fn parse(arg: &str, out: &mut Vec<Entry>) -> Result<(), String> {
    let text = arg.split('#').next().unwrap_or("");
    let w: Vec<&str> = text.split_whitespace().collect();
    if w.is_empty() {
        return Ok(()); // a comment
    }
    let bad = || format!("'{arg}': expected NAME PORT[/PROTOCOL]");
    if w.len() < 2 {
        return Err(bad());
    }
    let (num, pr) = match w[1].split_once('/') {
        Some((n, p)) => (n, Some(proto(p).ok_or_else(bad)?)),
        None => (w[1], None),
    };
    let port: u16 = num.parse().map_err(|_| bad())?;
    for name in std::iter::once(w[0]).chain(w[2..].iter().copied()) {
        if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Err(format!("'{arg}': bad name '{name}'"));
        }
        out.push((name.to_string(), port, pr));
    }
    Ok(())
}

fn make(cx: &mut ConfigCx<'_>) -> Result<PortInfo, String> {
    let mut a = cx.args();
    let mut entries = Vec::new();
    for arg in a.rest_all() {
        if let Err(e) = parse(&arg, &mut entries) {
            a.error(e);
        }
    }
    a.complete()?;
    // Names hold in the compound the PortInfo is in (and those inside it).
    let scope = cx
        .name
        .rfind('/')
        .map_or("", |i| &cx.name[..=i])
        .to_string();
    for (name, port, proto) in &entries {
        cx.env.ports.push(paraclick_runtime::args::PortName {
            scope: scope.clone(),
            name: name.clone(),
            port: *port,
            proto: *proto,
        });
    }
    Ok(PortInfo { entries })
}

impl PortInfo {
    /// The port named `name` for protocol `pr` (`None`: either).
    pub fn lookup(&self, name: &str, pr: Option<&str>) -> Option<u16> {
        self.entries
            .iter()
            .rev()
            .find(|(n, _, p)| n == name && (p.is_none() || pr.is_none() || *p == pr))
            .map(|e| e.1)
    }
}

impl Element for PortInfo {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read_param("lookup", |e, param, _| {
        let q = param.ok_or("lookup needs a NAME")?.trim();
        let (name, pr) = match q.split_once('/') {
            Some((n, p)) => (n, Some(proto(p).ok_or("PROTOCOL must be tcp or udp")?)),
            None => (q, None),
        };
        e.lookup(name, pr)
            .map(|p| p.to_string())
            .ok_or_else(|| format!("no port named '{q}'"))
    })];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn names_ports_and_protocols() {
        let conf = "p :: PortInfo(ssh 22, http 80/tcp www, domain 53/UDP # dns, #only a comment);";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        let look = |q: &str| r.read_handler(&format!("p.lookup {q}"));
        assert_eq!(look("ssh").unwrap(), "22");
        assert_eq!(look("ssh/udp").unwrap(), "22");
        assert_eq!(look("www").unwrap(), "80");
        assert_eq!(look("http/tcp").unwrap(), "80");
        assert_err(look("http/udp"), "no port named 'http/udp'");
        assert_eq!(look("domain").unwrap(), "53");
        assert_err(look("dns"), "no port named 'dns'");
        for (bad, want) in [
            (
                "x",
                "<config>:1:1: PortInfo@1 :: PortInfo: 'x': expected NAME PORT[/PROTOCOL]",
            ),
            (
                "x 70000",
                "<config>:1:1: PortInfo@1 :: PortInfo: 'x 70000': expected NAME PORT[/PROTOCOL]",
            ),
            (
                "x 1/sctp",
                "<config>:1:1: PortInfo@1 :: PortInfo: 'x 1/sctp': expected NAME PORT[/PROTOCOL]",
            ),
            (
                "9 10",
                "<config>:1:1: PortInfo@1 :: PortInfo: '9 10': bad name '9'",
            ),
            (
                "x y",
                "<config>:1:1: PortInfo@1 :: PortInfo: 'x y': expected NAME PORT[/PROTOCOL]",
            ),
        ] {
            let conf = format!("PortInfo({bad});");
            assert_err(Router::from_str(&conf, &reg(), 1), want);
        }
    }
}
