//! # IP6NDAdvertiser
//!
//! IP6NDAdvertiser(ENTRY, ..., keywords ROUTER)
//!
//! Answers IPv6 neighbour solicitations.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Each ENTRY is `IP6/LEN ETH` (or `IP6 ETH`, meaning /128, or an
//! AddressInfo name with an IPv6 and an Ethernet address, meaning that
//! address /128): IP6NDAdvertiser answers for every target within IP6/LEN
//! with Ethernet address ETH, so it can answer for the host's own
//! addresses as well as act as a proxy for a whole prefix.
//!
//! Input packets are Ethernet frames holding a neighbour solicitation
//! (RFC 4861 §4.3). A valid solicitation (hop limit 255, checksum, code 0,
//! well-formed options, target not multicast; from `::` only to a
//! solicited-node address) whose target an entry covers is answered with a
//! neighbour advertisement on output 0: from the target to the
//! solicitation's source (to `ff02::1`, without the solicited flag, when
//! that source is `::`), Ethernet destination the solicitation's source
//! link-layer address option or else the frame's source, hop limit 255,
//! flags solicited and override (and router with ROUTER true), and a
//! target link-layer address option. Other packets are dropped (counted).
//!
//! Keywords:
//! - `ROUTER` (boolean, default false): set the router flag, as a router
//!   answering for its own addresses should (RFC 4861 §7.2.4).
//!
//! Handlers:
//! - `table` (read): the entries, `IP6/LEN ETH` per line.
//! - `count` (read): advertisements sent.
//!
//! Example:
//!
//!     c :: Classifier(12/86dd 20/3aff 54/87, ...);
//!     c[0] -> IP6NDAdvertiser(2001:db8::1 00:00:c0:ae:67:ef, ROUTER true)
//!          -> Queue -> ToDevice(eth0);

use super::nd::{build_frame, parse_frame};
use paraclick_packet::wire::icmpv6::{nd_flags, NdRepr};
use paraclick_packet::wire::{EtherAddr, Ipv6Prefix};
use paraclick_packet::Packet;
use paraclick_runtime::args::FromArg;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::fmt::Write as _;
use std::net::Ipv6Addr;

pub struct IP6NDAdvertiser {
    entries: Vec<(Ipv6Prefix, EtherAddr)>,
    router: bool,
    count: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["not answered"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IP6NDAdvertiser", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6NDAdvertiser, String> {
    let mut a = cx.args();
    let router = a.read::<bool>("ROUTER").unwrap_or(false);
    let rest = a.rest();
    a.complete()?;
    let mut entries = Vec::new();
    for (i, arg) in rest.iter().enumerate() {
        let words: Vec<&str> = arg.split_whitespace().collect();
        let entry = match words[..] {
            [name] => {
                let ip = Ipv6Addr::from_arg(name, cx.env)?;
                let eth = EtherAddr::from_arg(name, cx.env)?;
                Ok((Ipv6Prefix::host(ip), eth))
            }
            [p, e] => Ipv6Prefix::from_arg(p, cx.env)
                .and_then(|p| Ok((p, EtherAddr::from_arg(e, cx.env)?))),
            _ => Err("expected 'IP6/LEN ETH'".to_string()),
        };
        entries.push(entry.map_err(|e| format!("argument {}: {e}", i + 1))?);
    }
    if entries.is_empty() {
        return Err("expected at least one 'IP6/LEN ETH' entry".into());
    }
    Ok(IP6NDAdvertiser {
        entries,
        router,
        count: PerThreadCount::new(cx.nthreads),
    })
}

impl IP6NDAdvertiser {
    /// The Ethernet address answering for `target`, if any.
    pub fn lookup(&self, target: Ipv6Addr) -> Option<EtherAddr> {
        self.entries
            .iter()
            .filter(|(p, _)| p.contains(target))
            .max_by_key(|(p, _)| p.len)
            .map(|&(_, e)| e)
    }

    fn answer(&self, p: &Packet) -> Option<Packet> {
        let ns = parse_frame(p.data())?;
        let NdRepr::NeighborSolicit { target, lladdr } = ns.repr else {
            return None;
        };
        let eth = self.lookup(target)?;
        let (dst, mut flags) = if ns.src.is_unspecified() {
            (
                Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
                nd_flags::OVERRIDE,
            )
        } else {
            (ns.src, nd_flags::SOLICITED | nd_flags::OVERRIDE)
        };
        if self.router {
            flags |= nd_flags::ROUTER;
        }
        let eth_dst = if ns.src.is_unspecified() {
            EtherAddr([0x33, 0x33, 0, 0, 0, 1])
        } else {
            lladdr.unwrap_or(ns.eth_src)
        };
        let na = NdRepr::NeighborAdvert {
            flags,
            target,
            lladdr: Some(eth),
        };
        let mut q = build_frame(eth_dst, eth, target, dst, &na)?;
        q.anno_mut().device = p.anno().device;
        Some(q)
    }
}

impl Action for IP6NDAdvertiser {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| {
            let mut s = String::new();
            for (p, en) in &e.entries {
                let _ = writeln!(s, "{p} {en}");
            }
            s
        }),
        Handler::read("count", |e, _| e.count.get().to_string()),
    ];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.answer(p) {
            Some(q) => {
                *p = q;
                self.count.inc(cx.thread());
                Verdict::Out(0)
            }
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::nd::{build_frame, parse_frame};
    use crate::test_kit::*;
    use paraclick_packet::wire::icmpv6::NdRepr;
    use paraclick_packet::wire::ipv6::addr;
    use paraclick_packet::wire::EtherAddr;

    fn ns(src: &str, target: &str, ll: Option<EtherAddr>) -> paraclick_packet::Packet {
        let t = a6(target);
        let dst = addr::solicited_node(&t);
        build_frame(
            EtherAddr(addr::multicast_ether(&dst)),
            EtherAddr([2, 0, 0, 0, 0, 9]),
            a6(src),
            dst,
            &NdRepr::NeighborSolicit {
                target: t,
                lladdr: ll,
            },
        )
        .unwrap()
    }

    #[test]
    fn answers_for_its_addresses() {
        let h = harness(
            "IP6NDAdvertiser(2001:db8::1 02:00:00:00:00:01, 2001:db8:5::/64 02:00:00:00:00:05, \
             ROUTER true)",
            1,
        );
        h.push(
            0,
            vec![
                ns(
                    "fe80::9",
                    "2001:db8::1",
                    Some(EtherAddr([2, 0, 0, 0, 0, 0x19])),
                ),
                ns("2001:db8::9", "2001:db8:5::77", None),
                ns("::", "2001:db8::1", None),
                ns("fe80::9", "2001:db8::2", None),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        assert_eq!(h.drops(), 1, "not ours");
        let na = parse_frame(out[0].data()).unwrap();
        assert_eq!(&out[0].data()[..6], &[2, 0, 0, 0, 0, 0x19], "to the SLLA");
        assert_eq!(na.src, a6("2001:db8::1"));
        assert_eq!(na.dst, a6("fe80::9"));
        assert_eq!(
            na.repr,
            NdRepr::NeighborAdvert {
                flags: 0xe0,
                target: a6("2001:db8::1"),
                lladdr: Some(EtherAddr([2, 0, 0, 0, 0, 1]))
            }
        );
        assert_eq!(
            &out[1].data()[..6],
            &[2, 0, 0, 0, 0, 9],
            "to the frame source"
        );
        let na = parse_frame(out[1].data()).unwrap();
        assert!(matches!(
            na.repr,
            NdRepr::NeighborAdvert {
                lladdr: Some(EtherAddr([2, 0, 0, 0, 0, 5])),
                ..
            }
        ));
        let dad = parse_frame(out[2].data()).unwrap();
        assert_eq!(dad.dst, a6("ff02::1"));
        assert!(matches!(
            dad.repr,
            NdRepr::NeighborAdvert { flags: 0xa0, .. }
        ));
        assert_eq!(h.read("count").unwrap(), "3");
        assert_eq!(h.read("table").unwrap().lines().count(), 2);
    }

    #[test]
    fn names_and_errors() {
        let h = harness(
            "IP6NDAdvertiser(r0); AddressInfo(r0 2001:db8::1/64 02:00:00:00:00:01)",
            1,
        );
        h.push(
            0,
            vec![
                ns("fe80::9", "2001:db8::1", None),
                ns("fe80::9", "2001:db8::2", None),
            ],
        );
        assert_eq!(h.output(0).len(), 1, "a name means its address only");
        assert_err(
            try_harness("IP6NDAdvertiser()", 1),
            "e :: IP6NDAdvertiser: expected at least one 'IP6/LEN ETH' entry",
        );
        assert_err(
            try_harness("IP6NDAdvertiser(2001:db8::1)", 1),
            "e :: IP6NDAdvertiser: expected Ethernet address, not '2001:db8::1'",
        );
        assert_err(
            try_harness("IP6NDAdvertiser(2001:db8::1 1:2:3:4:5:6 7)", 1),
            "e :: IP6NDAdvertiser: argument 1: expected 'IP6/LEN ETH'",
        );
    }
}
