//! # IPClassifier
//!
//! IPClassifier(PATTERN_1, ..., PATTERN_N)
//!
//! Classifies IP packets by contents, with tcpdump-like patterns.
//!
//! Ports: 1 input, N outputs (one per pattern). Processing: push.
//!
//! Each packet goes out the output of the first pattern it matches;
//! packets matching no pattern are dropped (counted). The IP header is
//! found by the packet's network header annotation (CheckIPHeader,
//! MarkIPHeader set it); without one, at the start of the packet data.
//!
//! Pattern primitives:
//! - `ip proto PROTO`: PROTO is a number or `icmp`, `igmp`, `ipip`, `tcp`,
//!   `udp` (also `gre`, `esp`, `ah`, `sctp`).
//! - `[SRCORDST] host ADDR`: SRCORDST is `src`, `dst`, `src or dst`
//!   (the default) or `src and dst`.
//! - `[SRCORDST] net NET`: NET is `ADDR/LEN`, `ADDR/MASK` or
//!   `ADDR mask MASK`.
//! - `[SRCORDST] [tcp | udp] port PORT`: PORT is a number, a range
//!   `LO-HI`, or a name (`echo`, `discard`, `daytime`, `chargen`,
//!   `ftp-data`, `ftp`, `ssh`, `telnet`, `smtp`, `domain`, `dns`, `bootps`,
//!   `bootpc`, `tftp`, `finger`, `www`, `http`, `pop3`, `sunrpc`, `auth`,
//!   `nntp`, `ntp`, `netbios-ns`, `netbios-dgm`, `netbios-ssn`, `snmp`,
//!   `snmp-trap`, `irc`, `imap3`, `https`, `rip`, `route`, `imaps`,
//!   `pop3s`). Without `tcp` or `udp`, either is accepted.
//! - `ip vers V` (0-15), `ip hl HL` (0-15, in 32-bit words), `ip id ID`,
//!   `ip tos TOS`, `ip dscp DSCP` (0-63), `ip ttl TTL`.
//! - `ip ect` (ECN field not 0), `ip ce` (ECN field 3).
//! - `ip frag` (more-fragments set or offset not 0), `ip unfrag` (= `not
//!   ip frag`).
//! - `tcp opt FLAG`: FLAG is `syn`, `fin`, `ack`, `rst`, `psh` or `urg`;
//!   matches TCP packets with that flag set.
//! - `tcp win WIN`.
//! - `icmp type TYPE`: a number or `echo-reply`, `unreachable`,
//!   `sourcequench`, `redirect`, `echo`, `routeradvert`, `routersolicit`,
//!   `timeexceeded`, `parameterproblem`, `timestamp`, `timestamp-reply`,
//!   `inforeq`, `inforeq-reply`, `maskreq`, `maskreq-reply`.
//! - `ip[POS:LEN] VALUE`: LEN (1-4, default 1) bytes of the IP header at
//!   POS. `transp[POS:LEN]` likewise in the transport header, and
//!   `tcp[..]`, `udp[..]`, `icmp[..]` for one protocol.
//! - `[SRCORDST] ether host ETH`: the Ethernet source and/or destination
//!   address is ETH (`00:01:02:03:04:05`, `0-1-2-3-4-5`, or an AddressInfo
//!   name with one). It reads the packet's MAC header annotation, which
//!   must be set (FromDevice, MarkMACHeader, EtherEncap set it) and come
//!   before the IP header; without one, the test does not hold (nor its
//!   `!=`). An Ethernet address alone means `ether host` (`src
//!   0:1:2:3:4:5`, `host 9:A:B:C:D:E`).
//! - `tcpudp`: TCP or UDP; as a qualifier, `tcpudp port 53` is `port 53`.
//! - `true`, `false`.
//!
//! Connectives: `and` (`&&`), `or` (`||`), `not` (`!`), parentheses, and
//! `C ? A : B` (the colon surrounded by spaces). `not` binds tightest,
//! then `and`, then `or`, then `?:`. Adjacent primitives are joined by
//! `and` (`fin ack` means FIN and ACK set). A whole pattern of `-`, `any`
//! or `all` matches every packet.
//!
//! Relations: integer primitives accept `==`, `!=`, `<`, `>`, `<=`, `>=`
//! before the value (`dst port > 1023`), and a mask: `DIRECTIVE & MASK
//! [[OP] VALUE]` (`src tcp port & 10 == 8`; without a value, the masked
//! field must not be 0). `host` and `net` accept `==` and `!=`, and an
//! address mask: `src host & 255.0.0.255 == 10.0.0.1`; `tcp opt` none. A
//! primitive may start with `&` or a relation to repeat the previous
//! one's type: `src 10.0.0.0 & 8.0.0.0 = 8.0.0.0` is `src host 10.0.0.0
//! and src host & 8.0.0.0 = 8.0.0.0`. For primitives about a protocol's header (`port`, `tcp opt`,
//! `tcp win`, `icmp type`, `tcp[..]`), the relation applies to packets of
//! that protocol only: `src tcp port != 5` matches TCP packets whose
//! source port is not 5 (`!(src tcp port 5)` also matches non-TCP
//! packets). With `src or dst`, `!=` means neither: `host != A` is `not
//! host A`.
//!
//! Keywords may be omitted: `tcp` for `ip proto tcp`, `www` for `port
//! www`, `syn` for `tcp opt syn`, `10.0.0.0/24` for `net 10.0.0.0/24`,
//! `10.0.0.1` for `host 10.0.0.1`, `src 10.0.0.1` for `src host
//! 10.0.0.1`, `unfrag` for `ip unfrag`, `tcp 80` for `tcp port 80`. A
//! value alone after another primitive repeats that primitive's
//! qualifiers when it fits them: `src port 80 or 81` is `src port 80 or
//! src port 81`; `dst tcp port 8000 or 8080` likewise. A name defined by
//! AddressInfo stands for its address: for its network where no `host`
//! keyword says otherwise (`src INTERNALNET`).
//!
//! Port, ICMP type, TCP flag and window tests, and `transp[..]`, only match
//! first fragments. The transport header follows the IP header's own
//! header length, so IP options are handled. A test about bytes beyond
//! the end of the packet does not hold (so its negation does).
//!
//! Patterns are compiled at configuration time into a decision program
//! over (offset, mask, range) tests; errors name the offending word. A
//! pattern no packet can reach draws a warning.
//!
//! Handlers:
//! - `program` (read): the compiled program in Click's format: numbered
//!   steps `N OFFSET/VALUE%MASK  yes->T  no->T` testing aligned 32-bit
//!   words (IP header words numbered from 256, transport header words
//!   from 512, as Click), T being `step N`, `[OUTPUT]` or `[X]` (drop);
//!   then `safe length` and `alignment offset 0`. A transport test
//!   follows Click's first-fragment test (`260/00000000%00001fff`) on its
//!   path; a range that is not one masked value splits into aligned
//!   blocks; a negated test shows `short->yes` (a packet too short for
//!   the word goes the way a matching word does). The steps are
//!   paraclick's compiled program, optimized as Click's is: a test that
//!   earlier tests on every path to it decide is skipped, and the
//!   branches a path contradicts go where the contradiction leads; a
//!   range is clamped to its field and written as a masked value where it
//!   is one (`port >= 1024` is `port & 0xfc00 != 0`); and two tests of one
//!   word that together are one (`syn and not ack`, `src or dst port >=
//!   1024`) become one. For the listings of Click's own tests this gives
//!   Click's listing, step for step; elsewhere the order or the merging
//!   may differ from Click's optimiser (a field straddling two words
//!   prints as `ip[OFF:WIDTH] in LO-HI`).
//! - `tests` (read): the compiled program in paraclick's form, one test
//!   per line (bytes, shift and mask, condition, and where each outcome
//!   goes).
//!
//! Example:
//!
//!     IPClassifier(10.0.0.0/24 and syn,
//!                  10.0.0.0/24 and fin ack,
//!                  10.0.0.0/24 and tcp,
//!                  -);
//!
//!     IPClassifier(dst tcp port 8000 or 8080,
//!                  dst tcp port > 1023,
//!                  tcp);

use super::lang::parse_pattern;
use super::program::{Action, Program};
use paraclick_packet::Packet;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct IPClassifier {
    prog: Program,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPClassifier", "1/-", "h", make)
        .stateless()
        .drop_reasons(&["no match"])
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPClassifier, String> {
    let patterns = cx.args().rest_all();
    if patterns.is_empty() {
        return Err("missing patterns: need one pattern per output port".into());
    }
    let mut rules = Vec::with_capacity(patterns.len());
    for (i, p) in patterns.iter().enumerate() {
        let e = parse_pattern(p, cx.env).map_err(|m| format!("pattern {i}: {m}"))?;
        rules.push((e, Action::Out(i)));
    }
    if cx.noutputs != rules.len() {
        return Err(format!(
            "{} patterns but {} outputs: need one pattern per output port",
            rules.len(),
            cx.noutputs
        ));
    }
    let prog = Program::compile(&rules);
    for &i in prog.unmatchable() {
        eprintln!(
            "{} :: IPClassifier: warning: pattern {i} ('{}') matches no packets",
            cx.name, patterns[i]
        );
    }
    Ok(IPClassifier { prog })
}

impl paraclick_runtime::Action for IPClassifier {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("program", |e, _| e.prog.click_listing()),
        Handler::read("tests", |e, _| e.prog.listing()),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.prog.classify(p) {
            Verdict::Drop => Verdict::DropFor(0),
            v => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ipfilter::test_util::*;
    use crate::test_kit::*;

    const SYN: u8 = 0x02;
    const FIN: u8 = 0x01;
    const ACK: u8 = 0x10;

    /// A TCP packet tagged with IP id `id`, marked.
    fn tcp(id: u16, src: &str, dport: u16, flags: u8) -> paraclick_packet::Packet {
        marked(
            &Ip::new(src, "8.8.8.8", 0)
                .id(id)
                .tcp(1234, dport, 1, 2, flags, 100)
                .bytes(),
        )
    }

    fn udp(id: u16, src: &str, dport: u16) -> paraclick_packet::Packet {
        marked(
            &Ip::new(src, "8.8.8.8", 0)
                .id(id)
                .udp(53, dport, b"q")
                .bytes(),
        )
    }

    #[test]
    fn click_example_outputs() {
        let h = harness(
            "IPClassifier(10.0.0.0/24 and syn, 10.0.0.0/24 and fin ack, 10.0.0.0/24 and tcp, -)",
            4,
        );
        h.push(
            0,
            vec![
                tcp(1, "10.0.0.1", 80, SYN),
                tcp(2, "10.0.0.1", 80, FIN | ACK),
                tcp(3, "10.0.0.1", 80, ACK),
                udp(4, "10.0.0.1", 53),
                tcp(5, "10.0.1.1", 80, SYN),
                marked(&[0x45]), // truncated: only '-' holds
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![1]);
        assert_eq!(ids(&h.output(1)), vec![2]);
        assert_eq!(ids(&h.output(2)), vec![3]);
        assert_eq!(ids(&h.output(3)), vec![4, 5, 0]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn unmatched_packets_are_dropped_and_counted() {
        let h = harness(
            "IPClassifier(dst tcp port 8000 or 8080, dst tcp port > 1023, tcp)",
            3,
        );
        h.push(
            0,
            vec![
                tcp(1, "1.1.1.1", 8080, 0),
                tcp(2, "1.1.1.1", 5000, 0),
                tcp(3, "1.1.1.1", 80, 0),
                udp(4, "1.1.1.1", 8080),
                udp(5, "1.1.1.1", 80),
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![1]);
        assert_eq!(ids(&h.output(1)), vec![2]);
        assert_eq!(ids(&h.output(2)), vec![3]);
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("drop_reasons").unwrap(), "no match 2\n");
    }

    #[test]
    fn unmarked_packets_use_the_data_start() {
        let h = harness("IPClassifier(udp port 53, -)", 2);
        let bytes = Ip::new("1.1.1.1", "2.2.2.2", 0)
            .id(9)
            .udp(53, 53, b"")
            .bytes();
        let mut framed = vec![0u8; 14];
        framed.extend_from_slice(&bytes);
        framed[4..6].copy_from_slice(&[0, 10]); // tag 10 where ids() looks
        h.push(
            0,
            vec![
                paraclick_packet::Packet::from_slice(&bytes).unwrap(),
                paraclick_packet::Packet::from_slice(&framed).unwrap(),
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![9]);
        assert_eq!(ids(&h.output(1)), vec![10]);
    }

    #[test]
    fn address_info_names_and_arguments() {
        let h = harness(
            "IPClassifier(INTERNALNET and tcp, // comment\n src BASTION, -); \
             AddressInfo(INTERNALNET 10.0.0.0/8, BASTION 192.168.0.1)",
            3,
        );
        h.push(
            0,
            vec![
                tcp(1, "10.9.9.9", 80, 0),
                udp(2, "192.168.0.1", 53),
                udp(3, "10.9.9.9", 53),
            ],
        );
        assert_eq!(ids(&h.output(0)), vec![1]);
        assert_eq!(ids(&h.output(1)), vec![2]);
        assert_eq!(ids(&h.output(2)), vec![3]);
    }

    #[test]
    fn configuration_errors() {
        let e = try_harness("IPClassifier(tcp, udp)", 3).err().unwrap();
        assert!(
            e.contains("2 patterns but 3 outputs: need one pattern per output port"),
            "{e}"
        );
        let e = try_harness("IPClassifier(tcp, src hots 1.2.3.4)", 2)
            .err()
            .unwrap();
        assert!(e.contains("pattern 1: unknown word 'hots'"), "{e}");
        let e = try_harness("IPClassifier(tcp, , udp)", 3).err().unwrap();
        assert!(e.contains("pattern 1: empty pattern"), "{e}");
        let e = try_harness("IPClassifier(port 99999)", 1).err().unwrap();
        assert!(
            e.contains("pattern 0: '99999' out of range for 'port' (0-65535)"),
            "{e}"
        );
        assert_err(
            try_harness("IPClassifier()", 0),
            "e :: IPClassifier: missing patterns: need one pattern per output port",
        );
    }

    #[test]
    fn program_handler() {
        let h = harness("IPClassifier(ip ttl 64, -)", 2);
        assert_eq!(
            h.read("tests").unwrap(),
            "start: step 0\n  0  ip[8] == 64  yes: [0]  no: [1]\n"
        );
    }
}
