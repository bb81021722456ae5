//! # AddressInfo
//!
//! AddressInfo(NAME ADDRESS [ADDRESS...], ...)
//!
//! Specifies address information: mnemonic names for addresses.
//!
//! Ports: none.
//!
//! Each argument `NAME ADDRESS [ADDRESS...]` associates the ADDRESSes with
//! NAME, which other elements' configuration strings may then use in
//! place of the address. An ADDRESS is an IPv4 address (`10.0.0.1`), an
//! IPv4 prefix (`10.0.0.1/8` or `10.0.0.1/255.0.0.0`: the name then
//! stands for the address 10.0.0.1 and for the network 10.0.0.1/8), an
//! IPv6 address (`2001:db8::1`) or prefix (`2001:db8::1/64`), or an
//! Ethernet address (`00:50:BA:85:84:A9` or `00-50-BA-85-84-A9`). A name
//! can have one IPv4 address or prefix, one IPv6 address or prefix and one
//! Ethernet address at once; the context decides which is meant, and a
//! suffix makes it explicit: `NAME:ip`, `NAME:ipnet`, `NAME:bcast` (the
//! prefix's broadcast address), `NAME:ip6`, `NAME:ip6net`, `NAME:eth`.
//!
//! As in Click, a host network device's name not defined by AddressInfo
//! stands for that device's addresses wherever an address is read
//! (`SetIPAddress(eth0)`, `ARPQuerier(eth0)`, `EtherEncap(0x0800, eth0,
//! eth1)`), with the same suffixes and `eth0:gw` for the default gateway
//! reached through the device (from the kernel's routing table).
//!
//! AddressInfo is configured before every other element, wherever it
//! appears. As in Click, names defined inside a compound element are
//! local to it: an element looks a name up from the innermost compound
//! enclosing it outwards, so a compound's (or a substrate slice's) `if0`
//! is its own, and a top-level name holds everywhere it is not redefined.
//!
//! Example:
//!
//!     AddressInfo(mauer 10.0.0.1/24 00:50:BA:85:84:A9);
//!     ... -> IPEncap(6, mauer, 10.0.0.2)               // as IP address
//!         -> EtherEncap(0x0800, mauer, 1:2:3:4:5:6)   // as Ethernet address

use paraclick_packet::wire::{EtherAddr, Ipv4Prefix, Ipv6Prefix};
use paraclick_runtime::args::{AddrEntry, ArgEnv};
use paraclick_runtime::{ClassSpec, ConfigCx, Element};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

pub struct AddressInfo;

pub fn spec() -> ClassSpec {
    ClassSpec::element("AddressInfo", "0/0", "a", make)
        .stateless()
        .phase(-100)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AddressInfo, String> {
    let args = cx.args().rest_all();
    let mut errs = Vec::new();
    for arg in &args {
        if let Err(e) = define(cx.env, arg) {
            errs.push(e);
        }
    }
    if errs.is_empty() {
        Ok(AddressInfo)
    } else {
        Err(errs.join("; "))
    }
}

fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '.' | '-'))
}

/// Parses one `NAME ADDRESS [ADDRESS...]` argument into `env`.
pub fn define(env: &mut ArgEnv, arg: &str) -> Result<(), String> {
    let mut words = arg.split_ascii_whitespace();
    let Some(name) = words.next() else {
        return Err("empty argument: expected NAME ADDRESS".into());
    };
    if !valid_name(name) {
        return Err(format!("'{name}' is not a valid name"));
    }
    let mut e = AddrEntry::default();
    let mut any = false;
    for w in words {
        any = true;
        if let Ok(eth) = EtherAddr::from_str(w) {
            if e.ether.replace(eth).is_some_and(|old| old != eth) {
                return Err(format!("{name}: more than one Ethernet address"));
            }
        } else if let Ok(ip) = Ipv4Addr::from_str(w) {
            if e.ip.replace(ip).is_some_and(|old| old != ip) {
                return Err(format!("{name}: more than one IP address"));
            }
        } else if w.contains('/') && Ipv4Prefix::from_str(w).is_ok() {
            let p = Ipv4Prefix::from_str(w).map_err(|_| format!("bad prefix '{w}'"))?;
            if e.ip.is_some_and(|old| old != p.addr) || e.prefix_len.is_some() {
                return Err(format!("{name}: more than one IP address"));
            }
            e.ip = Some(p.addr);
            e.prefix_len = Some(p.len);
        } else if let Ok(ip6) = Ipv6Addr::from_str(w) {
            if e.ip6.replace(ip6).is_some_and(|old| old != ip6) {
                return Err(format!("{name}: more than one IPv6 address"));
            }
        } else if w.contains('/') && Ipv6Prefix::from_str(w).is_ok() {
            let p = Ipv6Prefix::from_str(w).map_err(|_| format!("bad prefix '{w}'"))?;
            if e.ip6.is_some_and(|old| old != p.addr) || e.prefix6_len.is_some() {
                return Err(format!("{name}: more than one IPv6 address"));
            }
            e.ip6 = Some(p.addr);
            e.prefix6_len = Some(p.len);
        } else {
            return Err(format!(
                "{name}: '{w}' is not an IP address, IP prefix or Ethernet address"
            ));
        }
    }
    if !any {
        return Err(format!("{name}: expected at least one address"));
    }
    // A name holds in the AddressInfo's own compound (and those inside).
    let name = &format!("{}{name}", env.scope);
    match env.names.get_mut(name) {
        None => {
            env.names.insert(name.to_string(), e);
        }
        Some(old) => {
            // Another AddressInfo (or argument) may add what this one
            // lacks, but not contradict it.
            let conflict = (old.ip.is_some() && e.ip.is_some() && old.ip != e.ip)
                || (old.prefix_len.is_some()
                    && e.prefix_len.is_some()
                    && old.prefix_len != e.prefix_len)
                || (old.ether.is_some() && e.ether.is_some() && old.ether != e.ether)
                || (old.ip6.is_some() && e.ip6.is_some() && old.ip6 != e.ip6)
                || (old.prefix6_len.is_some()
                    && e.prefix6_len.is_some()
                    && old.prefix6_len != e.prefix6_len);
            if conflict {
                return Err(format!("'{name}' is already defined differently"));
            }
            old.ip = old.ip.or(e.ip);
            old.prefix_len = old.prefix_len.or(e.prefix_len);
            old.ether = old.ether.or(e.ether);
            old.ip6 = old.ip6.or(e.ip6);
            old.prefix6_len = old.prefix6_len.or(e.prefix6_len);
        }
    }
    Ok(())
}

impl Element for AddressInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::reg;
    use paraclick_runtime::args::FromArg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::{Args, Router};
    use std::sync::Mutex;

    fn env(args: &[&str]) -> Result<ArgEnv, String> {
        let mut env = ArgEnv::default();
        for a in args {
            define(&mut env, a)?;
        }
        Ok(env)
    }

    #[test]
    fn defines_names() {
        let env = env(&["mauer 10.0.0.1/24 00:50:BA:85:84:A9", "mazu 10.0.0.10"]).unwrap();
        let mut a = Args::new("mauer, mauer, mauer:ipnet, mazu, mauer:bcast", &env);
        assert_eq!(a.read_p::<Ipv4Addr>("A"), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(
            a.read_p::<EtherAddr>("B"),
            Some(EtherAddr([0x00, 0x50, 0xba, 0x85, 0x84, 0xa9]))
        );
        assert_eq!(
            a.read_p::<Ipv4Prefix>("C").unwrap().to_string(),
            "10.0.0.1/24"
        );
        assert_eq!(a.read_p::<Ipv4Addr>("D"), Some(Ipv4Addr::new(10, 0, 0, 10)));
        assert_eq!(
            a.read_p::<Ipv4Addr>("E"),
            Some(Ipv4Addr::new(10, 0, 0, 255))
        );
        a.complete().unwrap();
        assert_err(
            EtherAddr::from_arg("mazu", &env),
            "expected Ethernet address, not 'mazu'",
        );
        let e = env.lookup("mauer").unwrap();
        assert_eq!(e.prefix_len, Some(24));
    }

    #[test]
    fn names_in_a_compound_are_its_own() {
        let mut env = ArgEnv::default();
        define(&mut env, "if0 10.0.0.1").unwrap();
        env.scope = "a/".into();
        define(&mut env, "if0 10.0.1.1").unwrap();
        env.scope = "b/".into();
        define(&mut env, "if0 10.0.2.1").unwrap();
        let seen = |env: &mut ArgEnv, scope: &str| {
            env.scope = scope.into();
            env.lookup("if0").and_then(|e| e.ip)
        };
        assert_eq!(seen(&mut env, "a/"), Some(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(seen(&mut env, "a/x/"), Some(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(seen(&mut env, "b/"), Some(Ipv4Addr::new(10, 0, 2, 1)));
        assert_eq!(seen(&mut env, "c/"), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(seen(&mut env, ""), Some(Ipv4Addr::new(10, 0, 0, 1)));
    }

    #[test]
    fn prefix_forms_and_merging() {
        let env = env(&[
            "n 1.0.0.1/255.0.0.0",
            "n 02-00-00-00-00-01",
            "h 1.2.3.4 1.2.3.4/16",
        ])
        .unwrap();
        let n = env.lookup("n").unwrap();
        assert_eq!(n.ip, Some(Ipv4Addr::new(1, 0, 0, 1)));
        assert_eq!(n.prefix_len, Some(8));
        assert_eq!(n.ether, Some(EtherAddr([2, 0, 0, 0, 0, 1])));
        assert_eq!(env.lookup("h").unwrap().prefix_len, Some(16));
    }

    #[test]
    fn ipv6_addresses_and_prefixes() {
        let env = env(&[
            "if0 10.0.1.1/24 2001:db8:1::1/64 02:00:00:00:01:01",
            "h6 fe80::1",
            "h6 fe80::1",
        ])
        .unwrap();
        let e = env.lookup("if0").unwrap();
        assert_eq!(e.ip, Some(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(e.ip6, Some("2001:db8:1::1".parse().unwrap()));
        assert_eq!(e.prefix6_len, Some(64));
        let mut a = Args::new("if0, if0, if0:ip6, if0, h6", &env);
        assert_eq!(a.read_p::<Ipv4Addr>("A"), Some(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(
            a.read_p::<Ipv6Addr>("B"),
            Some("2001:db8:1::1".parse().unwrap())
        );
        assert_eq!(a.read_p::<Ipv6Prefix>("C").unwrap().len, 128);
        assert_eq!(
            a.read_p::<Ipv6Prefix>("D").unwrap().to_string(),
            "2001:db8:1::1/64"
        );
        assert_eq!(a.read_p::<Ipv6Addr>("E"), Some("fe80::1".parse().unwrap()));
        assert_err(
            Ipv4Addr::from_arg("h6", &env),
            "expected IP address, not 'h6'",
        );
    }

    #[test]
    fn bad_arguments() {
        for (bad, want) in [
            (&["x"][..], "x: expected at least one address"),
            (
                &["x 1.2.3"],
                "x: '1.2.3' is not an IP address, IP prefix or Ethernet address",
            ),
            (
                &["x 1.2.3.4/33"],
                "x: '1.2.3.4/33' is not an IP address, IP prefix or Ethernet address",
            ),
            (&["x ::1 ::2"], "x: more than one IPv6 address"),
            (
                &["x ::1/200"],
                "x: '::1/200' is not an IP address, IP prefix or Ethernet address",
            ),
            (&["x ::1/64 ::2/64"], "x: more than one IPv6 address"),
            (&["x ::1", "x ::2"], "'x' is already defined differently"),
            (&["x 1.2.3.4 1.2.3.5"], "x: more than one IP address"),
            (
                &["x 1:2:3:4:5:6 1:2:3:4:5:7"],
                "x: more than one Ethernet address",
            ),
            (&["1.2.3.4 1.2.3.4"], "'1.2.3.4' is not a valid name"),
            (
                &["x 1.2.3.4", "x 1.2.3.5"],
                "'x' is already defined differently",
            ),
            (&["x 1.0.0.0/8 2.0.0.0/8"], "x: more than one IP address"),
        ] {
            assert_err(env(bad), want);
        }
        assert!(env(&["x 1.2.3.4", "x 1.2.3.4 0:1:2:3:4:5"]).is_ok());
    }

    /// A test element that reads addresses, to see AddressInfo's names
    /// resolve in another element's configuration.
    struct AddrUser {
        got: Mutex<(Ipv4Addr, EtherAddr, Ipv4Prefix)>,
    }
    impl Element for AddrUser {}

    fn make_user(cx: &mut ConfigCx<'_>) -> Result<AddrUser, String> {
        let mut a = cx.args();
        let ip = a.read_mp::<Ipv4Addr>("IP");
        let eth = a.read_mp::<EtherAddr>("ETH");
        let net = a.read_mp::<Ipv4Prefix>("NET");
        a.complete()?;
        Ok(AddrUser {
            got: Mutex::new((ip, eth, net)),
        })
    }

    #[test]
    fn names_resolve_in_other_elements_whatever_the_order() {
        let mut r = reg();
        r.register(ClassSpec::element("AddrUser", "0/0", "a", make_user));
        let router = Router::from_str(
            "u :: AddrUser(foo, foo:eth, foo:ipnet);\n\
             AddressInfo(foo 1.0.0.1/8 00:01:02:03:04:05);",
            &r,
            1,
        )
        .map_err(|d| {
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap();
        let u = router.element::<AddrUser>("u").unwrap();
        let got = *u.got.lock().unwrap();
        assert_eq!(got.0, Ipv4Addr::new(1, 0, 0, 1));
        assert_eq!(got.1, EtherAddr([0, 1, 2, 3, 4, 5]));
        assert_eq!(got.2.to_string(), "1.0.0.1/8");
        // an unknown name is a configuration error of the user
        let err = Router::from_str("u :: AddrUser(bar, bar, bar);", &r, 1)
            .err()
            .unwrap();
        assert!(err.iter().any(|d| d.message.contains("'bar'")));
        // a bad AddressInfo is reported
        assert_err(Router::from_str("AddressInfo(foo 1.2.3);", &r, 1), "<config>:1:1: AddressInfo@1 :: AddressInfo: foo: '1.2.3' is not an IP address, IP prefix or Ethernet address");
    }
}
