//! # IPFilter
//!
//! IPFilter(ACTION_1 PATTERN_1, ..., ACTION_N PATTERN_N)
//!
//! Filters IP packets by contents.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Each argument is a filter: an ACTION and a tcpdump-like PATTERN (see
//! IPClassifier for the pattern syntax). Packets are tested against the
//! filters in order and handled by the ACTION of the first that matches:
//! a port number sends the packet out that output; `allow` is `0`; `drop`
//! (or `deny`) drops it (counted, reason `denied`). Packets matching no
//! filter are dropped (counted, reason `no match`). An output number must name a connected output. With no
//! filters at all (`IPFilter()`), every packet is dropped. A filter
//! whose pattern no packet can match (`tcp and udp`) gets a warning; one
//! that only earlier filters leave no packet for does not, as in Click.
//!
//! The IP header is found by the packet's network header annotation
//! (CheckIPHeader, MarkIPHeader set it); without one, at the start of the
//! packet data.
//!
//! Compatibility: `deny` once meant output 1 when the element had two
//! outputs; it now means `drop`, and prints a warning on an element with
//! more than one output (as Click does).
//!
//! Handlers:
//! - `program` (read): the compiled program in Click's format (see
//!   IPClassifier).
//! - `tests` (read): the compiled program in paraclick's form, one field
//!   test per line.
//!
//! Example:
//!
//!     AddressInfo(INTERNALNET 10.0.0.0/8, BASTION 10.1.0.1);
//!     IPFilter(deny src INTERNALNET,
//!              allow src BASTION && dst INTERNALNET
//!                 && tcp && src port www && dst port > 1023 && ack,
//!              allow dst INTERNALNET && tcp && dst port 22,
//!              deny all);

use super::lang::parse_pattern;
use super::program::{Action, Program};
use paraclick_packet::Packet;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct IPFilter {
    prog: Program,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPFilter", "1/-", "h", make)
        .stateless()
        .drop_reasons(&["denied", "no match"])
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPFilter, String> {
    let filters = cx.args().rest_all();
    let mut rules = Vec::with_capacity(filters.len());
    let mut warned_deny = false;
    for (i, f) in filters.iter().enumerate() {
        let f = f.trim();
        let (act, pat) = match f.find(|c: char| c.is_ascii_whitespace()) {
            Some(k) => (&f[..k], f[k..].trim()),
            None => (f, ""),
        };
        let action = match act {
            "allow" => Action::Out(0),
            "drop" => Action::Drop,
            "deny" => {
                if cx.noutputs > 1 && !warned_deny {
                    warned_deny = true;
                    eprintln!(
                        "{} :: IPFilter: warning: 'deny' means 'drop', not output 1",
                        cx.name
                    );
                }
                Action::Drop
            }
            _ => match act.parse::<usize>() {
                Ok(n) => Action::Out(n),
                Err(_) => {
                    return Err(format!(
                        "filter {i}: unknown action '{act}' (expected 'allow', 'drop', 'deny' or an output number)"
                    ))
                }
            },
        };
        if let Action::Out(n) = action {
            if n >= cx.noutputs {
                return Err(format!(
                    "filter {i}: output {n} out of range ({} outputs)",
                    cx.noutputs
                ));
            }
        }
        if pat.is_empty() {
            return Err(format!("filter {i}: missing pattern after '{act}'"));
        }
        let e = parse_pattern(pat, cx.env).map_err(|m| format!("filter {i}: {m}"))?;
        rules.push((e, action));
    }
    let prog = Program::compile(&rules);
    // As in Click, a filter that earlier filters leave no packet for is
    // not reported (`allow tcp, allow tcp port 80` is a normal way to
    // write a rule set); one whose pattern no packet can match is.
    for &i in prog.unmatchable() {
        if !Program::matches_nothing(&rules[i].0) {
            continue;
        }
        eprintln!(
            "{} :: IPFilter: warning: filter {i} ('{}') matches no packets",
            cx.name,
            filters[i].trim()
        );
    }
    Ok(IPFilter { prog })
}

impl paraclick_runtime::Action for IPFilter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("program", |e, _| e.prog.click_listing()),
        Handler::read("tests", |e, _| e.prog.listing()),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.prog.classify(p) {
            // No rule matched; a `drop` rule gives DropFor(0), "denied".
            Verdict::Drop => Verdict::DropFor(1),
            v => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ipfilter::test_util::*;
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    const ACK: u8 = 0x10;

    fn tcp(id: u16, src: &str, dst: &str, sport: u16, dport: u16, flags: u8) -> Packet {
        marked(
            &Ip::new(src, dst, 0)
                .id(id)
                .tcp(sport, dport, 1, 2, flags, 100)
                .bytes(),
        )
    }

    fn udp(id: u16, src: &str, dst: &str, sport: u16, dport: u16) -> Packet {
        marked(&Ip::new(src, dst, 0).id(id).udp(sport, dport, b"q").bytes())
    }

    fn icmp(id: u16) -> Packet {
        marked(
            &Ip::new("1.1.1.1", "2.2.2.2", 0)
                .id(id)
                .icmp(8, 0, [0; 4], b"")
                .bytes(),
        )
    }

    #[test]
    fn actions() {
        let h = harness(
            "IPFilter(allow tcp, deny udp port 53, 1 icmp, drop igmp, 0 udp)",
            2,
        );
        h.push(
            0,
            vec![
                tcp(1, "1.1.1.1", "2.2.2.2", 1, 2, 0),
                udp(2, "1.1.1.1", "2.2.2.2", 53, 53),
                icmp(3),
                udp(4, "1.1.1.1", "2.2.2.2", 5, 6),
                marked(&Ip::new("1.1.1.1", "2.2.2.2", 2).id(5).bytes()), // IGMP
                marked(&Ip::new("1.1.1.1", "2.2.2.2", 99).id(6).bytes()), // no match
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![1, 4]);
        assert_eq!(ids(&h.output(1)), vec![3]);
        assert_eq!(h.drops(), 3, "deny, drop, and no match");
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "denied 2\nno match 1\n",
            "a deny rule and no rule at all are told apart"
        );
    }

    #[test]
    fn allow_only_drops_the_rest() {
        let h = harness("IPFilter(allow src 10.0.0.0/8 && dst port www)", 1);
        h.push(
            0,
            vec![
                tcp(1, "10.0.0.1", "2.2.2.2", 1000, 80, 0),
                tcp(2, "11.0.0.1", "2.2.2.2", 1000, 80, 0),
                udp(3, "10.0.0.1", "2.2.2.2", 1000, 80),
                tcp(4, "10.0.0.1", "2.2.2.2", 80, 1000, 0),
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![1, 3]);
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn click_firewall_example() {
        let h = harness(
            "IPFilter(deny src INTERNALNET, \
             allow src BASTION && dst INTERNALNET && tcp && src port www && dst port > 1023 && ack, \
             allow dst INTERNALNET && tcp && dst port 22, \
             allow src BASTION && dst INTERNAL_DNS && udp && src port 53 && dst port 53, \
             deny all); \
             AddressInfo(INTERNALNET 10.0.0.0/8, BASTION 192.168.1.1, INTERNAL_DNS 10.0.0.53)",
            1,
        );
        h.push(
            0,
            vec![
                tcp(1, "10.0.0.5", "10.0.0.6", 22, 22, 0), // spoofed inside source
                tcp(2, "192.168.1.1", "10.0.0.6", 80, 2000, ACK),
                tcp(3, "192.168.1.1", "10.0.0.6", 80, 2000, 0), // no ack
                tcp(4, "8.8.8.8", "10.0.0.6", 5555, 22, 0),
                udp(5, "192.168.1.1", "10.0.0.53", 53, 53),
                udp(6, "192.168.1.1", "10.0.0.54", 53, 53),
                tcp(7, "8.8.8.8", "10.0.0.6", 5555, 23, 0),
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![2, 4, 5]);
        assert_eq!(h.drops(), 4);
    }

    #[test]
    fn configuration_errors() {
        let cases = [
            ("IPFilter(allow tcp, 2 udp)", 2, "filter 1: output 2 out of range (2 outputs)"),
            ("IPFilter(accept tcp)", 1, "filter 0: unknown action 'accept' (expected 'allow', 'drop', 'deny' or an output number)"),
            ("IPFilter(allow)", 1, "filter 0: missing pattern after 'allow'"),
            ("IPFilter(allow tcp, drop udp or)", 1, "filter 1: unexpected end of pattern"),
            ("IPFilter(allow tcp, drop (udp) 1.2.3)", 1, "filter 1: unknown word '1.2.3'"),
            ("IPFilter(allow host 1.2.3.4 80)", 1, "filter 0: missing type before '80' (e.g. 'port 80')"),
        ];
        for (conf, n, want) in cases {
            let e = try_harness(conf, n)
                .err()
                .unwrap_or_else(|| panic!("{conf} accepted"));
            assert!(e.contains(want), "{conf}: {e}");
        }
    }

    #[test]
    fn no_filters_drop_everything() {
        let h = harness("IPFilter()", 1);
        h.push(
            0,
            vec![marked(
                &Ip::new("10.0.0.1", "10.0.0.2", 6)
                    .tcp(1, 2, 0, 0, 0x02, 0)
                    .bytes(),
            )],
        );
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 1);
        assert_eq!(
            h.read("program").unwrap(),
            "all->[X]\nsafe length 0\nalignment offset 0\n"
        );
    }

    #[test]
    fn click_program_handler() {
        // The same text as Click's for this filter.
        let h = harness(
            "IPFilter(allow tcp dst port 80, deny src net 10.0.0.0/8, allow all)",
            1,
        );
        assert_eq!(
            h.read("program").unwrap(),
            " 0 264/00060000%00ff0000  yes->step 1  no->step 3\n\
             \x201 260/00000000%00001fff  yes->step 2  no->step 3\n\
             \x202 512/00000050%0000ffff  yes->[0]  no->step 3\n\
             \x203 268/0a000000%ff000000  yes->[X]  no->[0]\n\
             safe length 516\nalignment offset 0\n"
        );
        // A range is tested by aligned blocks.
        let h = harness("IPFilter(allow tcp dst port 1000-1004, deny all)", 1);
        let p = h.read("program").unwrap();
        assert!(
            p.contains("512/000003e8%0000fffc  yes->[0]  no->step 3\n"),
            "{p}"
        );
        assert!(
            p.contains("512/000003ec%0000ffff  yes->[0]  no->[X]\n"),
            "{p}"
        );
        let h = harness("IPFilter(allow all)", 1);
        assert!(h.read("program").unwrap().starts_with("all->[0]\n"));
    }

    #[test]
    fn rules_with_one_action_share_their_tests() {
        // Every way leads to output 0: no test is left.
        let h = harness(
            "IPFilter(allow tcp && dst 10.0.0.0/32, allow udp && src port 53, allow all)",
            1,
        );
        assert_eq!(
            h.read("program").unwrap(),
            "all->[0]\nsafe length 0\nalignment offset 0\n"
        );
        let h = harness("IPFilter(allow tcp, allow all)", 1);
        assert!(h.read("program").unwrap().starts_with("all->[0]\n"));
        // Outputs that differ keep their test.
        let h = harness("IPClassifier(tcp, -)", 2);
        assert!(h
            .read("program")
            .unwrap()
            .starts_with(" 0 264/00060000%00ff0000  yes->[0]  no->[1]\n"));
    }

    #[test]
    fn program_handler() {
        let h = harness("IPFilter(drop ip frag, allow -)", 1);
        assert_eq!(
            h.read("tests").unwrap(),
            "start: step 0\n  0  ip[6:2] & 0x3fff != 0  yes: drop  no: [0]\n"
        );
    }
}
