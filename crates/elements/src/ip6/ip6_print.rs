//! # IP6Print
//!
//! IP6Print([LABEL, keywords CONTENTS, NBYTES, OUTFILE, ACTIVE])
//!
//! Prints IPv6 packets, one line each, in tcpdump's style.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! For each packet with an IPv6 header at its network header annotation,
//! writes a line to standard error (or OUTFILE), preceded by `LABEL: ` if
//! LABEL is not empty, and passes the packet on unchanged:
//!
//! - UDP: `SRC.SPORT > DST.DPORT: udp LEN`
//! - TCP: `SRC.SPORT > DST.DPORT: tcp LEN` (LEN: the segment's length)
//! - ICMPv6: `SRC > DST: icmp6 NAME` (`echo request id ID seq SEQ`,
//!   `echo reply ...`, `neighbor solicitation who has TARGET`, `neighbor
//!   advertisement tgt is TARGET`, `time exceeded`, `packet too big mtu
//!   MTU`, `unreachable code C`, `parameter problem pointer P`, or
//!   `type T code C`)
//! - otherwise: `SRC > DST: nxt NH LEN`
//!
//! followed by ` (hlim H)`. A packet without an IPv6 header prints
//! `(not IPv6)`; one whose extension headers are malformed prints
//! `SRC > DST: bad extension headers`.
//!
//! Keywords:
//! - `CONTENTS` (boolean, default false): after the line, also print the
//!   packet's first NBYTES bytes (from the start of its data) in hex, on
//!   lines that begin with two spaces: four bytes to a group, groups
//!   separated by a space, 24 bytes to a line.
//! - `NBYTES` (unsigned, default 1500): how many bytes CONTENTS prints.
//! - `OUTFILE` (file name): write the lines to this file instead.
//!   The file is created (or truncated) when the router starts running,
//!   not by `paraclick check` nor by a configuration that fails to build;
//!   its directory must exist.
//! - `ACTIVE` (boolean, default true): if false, print nothing.
//!
//! Handlers:
//! - `active` (read/write).
//!
//! Example:
//!
//!     ... -> CheckIP6Header -> IP6Print(in) -> ...

use crate::outfile::OutFile;
use paraclick_packet::wire::icmpv6::{icmpv6_type, Icmpv6Header};
use paraclick_packet::wire::ipv6::next_header;
use paraclick_packet::wire::Ipv6Header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, Verdict};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct IP6Print {
    label: String,
    contents: bool,
    nbytes: usize,
    active: AtomicBool,
    outfile: Option<OutFile>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IP6Print", "1/1", "a", make)
        .shared("a printer: one output, in packet order, for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6Print, String> {
    let mut a = cx.args();
    let label = a.read_p::<String>("LABEL").unwrap_or_default();
    let contents = a.read::<bool>("CONTENTS").unwrap_or(false);
    let nbytes = a.read::<usize>("NBYTES").unwrap_or(1500);
    let outfile = a.read::<String>("OUTFILE");
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    a.complete()?;
    // Opened when the router runs: a check or a rejected configuration
    // leaves the file alone.
    let outfile = outfile.map(|f| OutFile::new(f, false)).transpose()?;
    Ok(IP6Print {
        label,
        contents,
        nbytes,
        active: AtomicBool::new(active),
        outfile,
    })
}

/// The line for one packet (without label or newline).
pub fn format_ip6(p: &Packet) -> String {
    let Some(h) = p
        .network_header()
        .and_then(|nh| Ipv6Header::new_checked(nh).ok())
    else {
        return "(not IPv6)".into();
    };
    let (src, dst) = (h.src_addr(), h.dst_addr());
    let mut s = String::new();
    let Ok(u) = h.upper_layer() else {
        let _ = write!(s, "{src} > {dst}: bad extension headers");
        return s;
    };
    let rest = h.payload().get(u.offset..).unwrap_or(&[]);
    let ports = |r: &[u8]| {
        (r.len() >= 4).then(|| {
            (
                u16::from_be_bytes([r[0], r[1]]),
                u16::from_be_bytes([r[2], r[3]]),
            )
        })
    };
    match u.protocol {
        next_header::UDP | next_header::TCP if !u.later_fragment && ports(rest).is_some() => {
            let (sp, dp) = ports(rest).unwrap_or((0, 0));
            let name = if u.protocol == next_header::UDP {
                "udp"
            } else {
                "tcp"
            };
            let _ = write!(s, "{src}.{sp} > {dst}.{dp}: {name} {}", rest.len());
        }
        next_header::ICMPV6 if rest.len() >= 8 => {
            let m = Icmpv6Header::new_unchecked(rest);
            let _ = write!(s, "{src} > {dst}: icmp6 ");
            let _ = match m.msg_type() {
                icmpv6_type::ECHO_REQUEST => {
                    write!(s, "echo request id {} seq {}", m.ident(), m.seq())
                }
                icmpv6_type::ECHO_REPLY => write!(s, "echo reply id {} seq {}", m.ident(), m.seq()),
                icmpv6_type::NEIGHBOR_SOLICIT if rest.len() >= 24 => {
                    write!(s, "neighbor solicitation who has {}", m.target())
                }
                icmpv6_type::NEIGHBOR_ADVERT if rest.len() >= 24 => {
                    write!(s, "neighbor advertisement tgt is {}", m.target())
                }
                icmpv6_type::TIME_EXCEEDED => write!(s, "time exceeded"),
                icmpv6_type::PACKET_TOO_BIG => write!(s, "packet too big mtu {}", m.mtu()),
                icmpv6_type::DEST_UNREACH => write!(s, "unreachable code {}", m.code()),
                icmpv6_type::PARAM_PROBLEM => {
                    write!(s, "parameter problem pointer {}", m.pointer())
                }
                t => write!(s, "type {t} code {}", m.code()),
            };
        }
        nh => {
            let _ = write!(s, "{src} > {dst}: nxt {nh} {}", rest.len());
        }
    }
    let _ = write!(s, " (hlim {})", h.hop_limit());
    s
}

/// The CONTENTS dump: `"  "` then the first `nbytes` of `data` in hex,
/// a space after every 4th byte, a new line (indented by two spaces) after
/// every 24th.
pub fn hex_contents(data: &[u8], nbytes: usize) -> String {
    let n = data.len().min(nbytes);
    let mut s = String::with_capacity(2 + n * 3);
    s.push_str("  ");
    for (i, b) in data[..n].iter().enumerate() {
        let _ = write!(s, "{b:02x}");
        if i % 24 == 23 {
            s.push_str("\n  ");
        } else if i % 4 == 3 {
            s.push(' ');
        }
    }
    s
}

impl Action for IP6Print {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "active",
        |e, _| e.active.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.active.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.outfile.is_some() && !ix.checking() {
            ix.schedule_after(0, std::time::Duration::ZERO);
        }
        Ok(())
    }

    /// The router runs: OUTFILE is opened (created or truncated).
    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(f) = &self.outfile {
            f.start(cx.element_name());
        }
    }

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if !self.active.load(Ordering::Relaxed) {
            return Verdict::Out(0);
        }
        let mut line = String::new();
        if !self.label.is_empty() {
            line.push_str(&self.label);
            line.push_str(": ");
        }
        line.push_str(&format_ip6(p));
        line.push('\n');
        if self.contents {
            line.push_str(hex_contents(p.data(), self.nbytes).trim_end());
            line.push('\n');
        }
        match &self.outfile {
            Some(f) => f.write(cx.element_name(), line.as_bytes()),
            None => {
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::{format_ip6, hex_contents};
    use crate::test_kit::*;

    #[test]
    fn formats() {
        let udp = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1234, 53, b"abc")
            .bytes();
        assert_eq!(
            format_ip6(&marked(&udp)),
            "2001:db8::1.1234 > 2001:db8::2.53: udp 11 (hlim 64)"
        );
        let echo = Ip6::new("::1", "::2", 58)
            .icmp6(128, 0, [0, 7, 0, 9], b"")
            .bytes();
        assert_eq!(
            format_ip6(&marked(&echo)),
            "::1 > ::2: icmp6 echo request id 7 seq 9 (hlim 64)"
        );
        let ptb = Ip6::new("::1", "::2", 58)
            .icmp6(2, 0, [0, 0, 5, 120], b"")
            .hlim(255)
            .bytes();
        assert_eq!(
            format_ip6(&marked(&ptb)),
            "::1 > ::2: icmp6 packet too big mtu 1400 (hlim 255)"
        );
        let other = Ip6::new("::1", "::2", 59).payload(&[0; 5]).bytes();
        assert_eq!(format_ip6(&marked(&other)), "::1 > ::2: nxt 59 5 (hlim 64)");
        let bad = Ip6::new("::1", "::2", 60).payload(&[59, 9]).bytes();
        assert_eq!(
            format_ip6(&marked(&bad)),
            "::1 > ::2: bad extension headers"
        );
        assert_eq!(format_ip6(&pkt(&udp)), "(not IPv6)");
    }

    #[test]
    fn contents_dump() {
        let data: Vec<u8> = (0u8..30).collect();
        assert_eq!(hex_contents(&data, 6), "  00010203 0405");
        assert_eq!(
            hex_contents(&data, 1500),
            "  00010203 04050607 08090a0b 0c0d0e0f 10111213 14151617\n  18191a1b 1c1d"
        );
        assert_eq!(hex_contents(&data, 0), "  ");
    }

    #[test]
    fn contents_and_nbytes_keywords() {
        let path = std::env::temp_dir().join(format!("ip6print-c-{}.txt", std::process::id()));
        let h = harness(
            &format!(
                "IP6Print(v6, NBYTES 8, CONTENTS true, OUTFILE {})",
                path.display()
            ),
            1,
        );
        let udp = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1, 2, b"")
            .bytes();
        h.push(0, vec![marked(&udp)]);
        assert_eq!(h.output(0).len(), 1);
        drop(h);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "v6: 2001:db8::1.1 > 2001:db8::2.2: udp 8 (hlim 64)\n  60000000 00081140\n"
        );
    }

    #[test]
    fn prints_to_file() {
        let path = std::env::temp_dir().join(format!("ip6print-{}.txt", std::process::id()));
        let h = harness(&format!("IP6Print(x, OUTFILE {})", path.display()), 1);
        let udp = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1, 2, b"")
            .bytes();
        h.push(0, vec![marked(&udp)]);
        assert_eq!(h.output(0).len(), 1);
        drop(h);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "x: 2001:db8::1.1 > 2001:db8::2.2: udp 8 (hlim 64)\n");
    }
}
