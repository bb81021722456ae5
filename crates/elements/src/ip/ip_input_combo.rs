//! # IPInputCombo
//!
//! IPInputCombo(COLOR [, BADSRC, keywords INTERFACES, BADSRC, GOODDST])
//!
//! Input combo for IP routing.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! One element doing the common work of an IP router's input path, the
//! same as
//!
//!     elementclass IPInputCombo { $COLOR, $BADADDRS |
//!       input[0] -> Paint($COLOR)
//!             -> Strip(14)
//!             -> CheckIPHeader($BADADDRS)
//!             -> GetIPAddress(16)
//!             -> [0]output;
//!     }
//!
//! Each packet is painted COLOR, loses its first 14 bytes (the Ethernet
//! header), has its IP header checked as CheckIPHeader does (a valid
//! packet gets its network header annotation, is trimmed to the IP total
//! length and gets its destination IP annotation), and leaves on output 0.
//! A packet that fails the IP header check is dropped (and counted).
//!
//! Arguments:
//! - `COLOR` (integer 0..255): the paint annotation to set.
//! - `BADSRC` (positional, space-separated IP addresses): CheckIPHeader's
//!   old-style bad source list, to which 0.0.0.0 and 255.255.255.255 are
//!   added.
//!
//! Keywords (as CheckIPHeader's):
//! - `INTERFACES` (space-separated IP prefixes): the router's interface
//!   addresses (their broadcast addresses are bad sources, the addresses
//!   are good destinations).
//! - `BADSRC` (space-separated IP addresses): bad source addresses.
//! - `GOODDST` (space-separated IP addresses): destinations exempt from
//!   the source check.
//!
//! Handlers:
//! - `drops` (read): packets dropped because their IP header was bad.
//!
//! Example:
//!
//!     FromDevice(eth0) -> c0 :: Classifier(12/0806, 12/0800, -);
//!     c0[1] -> IPInputCombo(1, INTERFACES 18.26.4.24/24) -> rt :: StaticIPLookup(...);

use super::check_ip_header::{make_checker, CheckIPHeader};
use super::get_ip_address::{self, GetIPAddress};
use crate::standard::paint::{self, Paint};
use crate::standard::strip::{self, Strip};
use paraclick_lang::check::PortKind;
use paraclick_packet::Packet;
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct IPInputCombo {
    paint: Paint,
    strip: Strip,
    check: CheckIPHeader,
    get: GetIPAddress,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPInputCombo", "1/1", "a", make)
        .stateless()
        .drop_reasons(super::check_ip_header::REASONS)
        // Its Strip(14): the IP header is 14 bytes nearer the front after it.
        .header_change(paraclick_runtime::HeaderChange::Strips(14))
}

/// Configures one part of a combo element (an element of class `part`
/// with configuration `config` and `noutputs` push outputs) with the
/// combo's own configuration context; errors name the part.
pub(crate) fn configure_part<T>(
    cx: &mut ConfigCx<'_>,
    part: &str,
    config: &str,
    noutputs: usize,
    make: fn(&mut ConfigCx<'_>) -> Result<T, String>,
) -> Result<T, String> {
    let kinds = [PortKind::Push; 2];
    let mut sub = ConfigCx {
        name: cx.name,
        class: part,
        config,
        ninputs: 1,
        noutputs,
        input_kinds: &kinds[..1],
        output_kinds: &kinds[..noutputs.min(2)],
        nthreads: cx.nthreads,
        env: &mut *cx.env,
    };
    make(&mut sub).map_err(|e| format!("{part}: {e}"))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPInputCombo, String> {
    let mut a = cx.args();
    let color = a.read_mp::<u8>("COLOR");
    let interfaces = a.read::<Raw>("INTERFACES");
    let badsrc = a.read::<Raw>("BADSRC");
    let gooddst = a.read::<Raw>("GOODDST");
    // The positional BADSRC (a keyword BADSRC is read above).
    let mut rest = a.rest().into_iter().filter(|s| !s.trim().is_empty());
    let old_badsrc = rest.next().map(|s| Raw(s.trim().to_string()));
    if let Some(extra) = rest.next() {
        a.error(format!("too many arguments ('{}')", extra.trim()));
    }
    a.complete()?;
    // CheckIPHeader's old syntax is BADSRC2 [, OFFSET]: an empty second
    // argument keeps a lone address list from being read as an OFFSET.
    let mut check = match old_badsrc {
        Some(Raw(l)) => format!("{l}, "),
        None => String::new(),
    };
    for (k, v) in [
        ("INTERFACES", interfaces),
        ("BADSRC", badsrc),
        ("GOODDST", gooddst),
    ] {
        if let Some(Raw(v)) = v {
            check.push_str(&format!(", {k} {v}"));
        }
    }
    let check = check.trim_start_matches(", ");
    Ok(IPInputCombo {
        paint: configure_part(cx, "Paint", &color.to_string(), 1, paint::make)?,
        strip: configure_part(cx, "Strip", "14", 1, strip::make)?,
        check: configure_part(cx, "CheckIPHeader", check, 1, |cx| make_checker(cx, true))?,
        get: configure_part(cx, "GetIPAddress", "16", 1, get_ip_address::make)?,
    })
}

impl Action for IPInputCombo {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.check.drops().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        // Paint and Strip always pass the packet on.
        self.paint.action(cx, p);
        self.strip.action(cx, p);
        match self.check.action(cx, p) {
            Verdict::Out(0) => self.get.action(cx, p),
            // CheckIPHeader's reasons are this class's too.
            v @ Verdict::DropFor(_) => v,
            _ => Verdict::Drop,
        }
    }
}

/// A harness around `Chain`, the compound class `def` defines (a chain
/// of separate elements to compare a combo with), fed through `e :: Null`.
#[cfg(test)]
pub(crate) fn chain_harness(def: &str, noutputs: usize) -> paraclick_runtime::testing::Harness {
    let mut conf = format!("{def}\nTestSource -> e :: Null -> c :: Chain;\n");
    for i in 0..noutputs {
        conf.push_str(&format!("c[{i}] -> o{i} :: TestSink;\n"));
    }
    let router = paraclick_runtime::Router::from_str(&conf, &crate::test_kit::reg(), 1)
        .unwrap_or_else(|d| {
            panic!(
                "{conf}: {:?}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    paraclick_runtime::testing::Harness { router }
}

#[cfg(test)]
mod tests {
    use super::chain_harness;
    use crate::test_kit::*;
    use paraclick_packet::PacketType;

    fn frame(d: &[u8]) -> Vec<u8> {
        ether_frame(
            eth("00:01:02:03:04:05"),
            eth("00:0a:0b:0c:0d:0e"),
            0x0800,
            d,
        )
    }

    #[test]
    fn paints_strips_checks_and_annotates() {
        let h = harness("IPInputCombo(3)", 1);
        let d = Ip::new("18.26.4.44", "10.0.0.8", 17)
            .udp(1, 2, b"data")
            .bytes();
        let mut f = frame(&d);
        f.extend_from_slice(&[0; 9]); // link padding
        h.push(0, vec![pkt(&f)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(out[0].anno().paint, 3);
        assert_eq!(out[0].anno().dst_ip, ip("10.0.0.8"));
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].network_header_length(), Some(20));
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn bad_headers_are_counted_drops() {
        let h = harness("IPInputCombo(1)", 1);
        let mut d = Ip::new("1.0.0.1", "2.0.0.2", 17).payload(b"x").bytes();
        d[10] ^= 1;
        h.push(0, vec![pkt(&frame(&d)), pkt(&[0; 10])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.read("drops").unwrap(), "2");
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn source_checks_follow_checkipheader() {
        // Old-style positional BADSRC adds 0.0.0.0 and 255.255.255.255.
        for (decl, src, dst, ok) in [
            ("IPInputCombo(0, 1.2.3.4)", "1.2.3.4", "9.9.9.9", false),
            ("IPInputCombo(0, 1.2.3.4)", "0.0.0.0", "9.9.9.9", false),
            ("IPInputCombo(0, 1.2.3.4)", "5.5.5.5", "9.9.9.9", true),
            (
                "IPInputCombo(0, INTERFACES 18.26.4.9/24)",
                "18.26.4.255",
                "1.1.1.1",
                false,
            ),
            (
                "IPInputCombo(0, INTERFACES 18.26.4.9/24)",
                "18.26.4.255",
                "18.26.4.9",
                true,
            ),
            (
                "IPInputCombo(0, BADSRC 7.7.7.7, GOODDST 8.8.8.8)",
                "7.7.7.7",
                "1.1.1.1",
                false,
            ),
            (
                "IPInputCombo(0, BADSRC 7.7.7.7, GOODDST 8.8.8.8)",
                "7.7.7.7",
                "8.8.8.8",
                true,
            ),
            ("IPInputCombo(0)", "224.0.0.1", "1.1.1.1", true),
        ] {
            let h = harness(decl, 1);
            let d = Ip::new(src, dst, 17).payload(b"x").bytes();
            h.push(0, vec![pkt(&frame(&d))]);
            assert_eq!(h.output(0).len() == 1, ok, "{decl} {src} -> {dst}");
        }
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            ("IPInputCombo", "e :: IPInputCombo: missing mandatory COLOR argument"),
            ("IPInputCombo(256)", "e :: IPInputCombo: COLOR: 256 out of range"),
            ("IPInputCombo(1, 1.2.3)", "e :: IPInputCombo: CheckIPHeader: BADSRC: expected IP address, not '1.2.3'"),
            ("IPInputCombo(1, INTERFACES 1.2.3.4/40)", "e :: IPInputCombo: CheckIPHeader: INTERFACES: expected IP prefix, not '1.2.3.4/40'"),
            ("IPInputCombo(1, OFFSET 2)", "e :: IPInputCombo: unknown keyword OFFSET"),
            ("IPInputCombo(1, 1.2.3.4, 5)", "e :: IPInputCombo: too many arguments ('5')"),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }

    /// What the test compares: bytes, annotations, header marks.
    fn summary(ps: &[paraclick_packet::Packet]) -> Vec<String> {
        ps.iter()
            .map(|p| {
                format!(
                    "{:?} {:?} {:?} {:?}",
                    p.data(),
                    p.anno(),
                    p.network_header_offset(),
                    p.network_header_length()
                )
            })
            .collect()
    }

    #[test]
    fn same_as_the_chain_of_elements() {
        let args = "5, INTERFACES 10.0.0.1/8 192.168.1.1/24, GOODDST 1.2.3.4";
        let chain = "elementclass Chain { input -> Paint(5) -> Strip(14) \
             -> CheckIPHeader(INTERFACES 10.0.0.1/8 192.168.1.1/24, GOODDST 1.2.3.4) \
             -> GetIPAddress(16) -> output }";
        let combo = harness(&format!("IPInputCombo({args})"), 1);
        let sep = chain_harness(chain, 1);
        let mut rng = Rng::new(11);
        for round in 0..300 {
            let mut ps = Vec::new();
            for _ in 0..8 {
                let mut d = rng.datagram().bytes();
                if rng.chance(3) {
                    let i = rng.below(d.len());
                    d[i] = rng.u8();
                }
                let mut f = frame(&d);
                let cut = if rng.chance(5) {
                    rng.below(f.len() + 1)
                } else {
                    f.len()
                };
                f.truncate(cut);
                let mut p = pkt(&f);
                p.anno_mut().packet_type = PacketType::Host;
                ps.push(p);
            }
            let copy: Vec<_> = ps.iter().map(|p| p.clone_packet().unwrap()).collect();
            combo.push(0, ps);
            sep.push(0, copy);
            assert_eq!(
                summary(&combo.output(0)),
                summary(&sep.output(0)),
                "round {round}"
            );
        }
        assert_eq!(combo.drops(), sep.drops());
        assert!(combo.drops() > 0);
        assert_eq!(combo.read("drops").unwrap(), combo.drops().to_string());
    }
}
