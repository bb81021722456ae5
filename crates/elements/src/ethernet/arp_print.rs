//! # ARPPrint
//!
//! ARPPrint([LABEL, keywords TIMESTAMP, ETHER, ACTIVE, OUTFILE])
//!
//! Pretty-prints ARP packets a la tcpdump.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prints each ARP packet in a human-readable, tcpdump-like form, preceded
//! by LABEL, and passes it on unchanged: `arp who-has 10.0.0.2 tell
//! 10.0.0.1`, `arp reply 10.0.0.2 is-at 00-11-22-33-44-55`, and the RARP
//! and InARP forms. The ARP header is at the packet's network header; a
//! packet without one is taken as an Ethernet frame if its Ethernet type is
//! ARP (0x0806) and as a bare ARP packet otherwise. Lines go to standard
//! error, or to OUTFILE.
//!
//! Arguments:
//! - `LABEL` (string, default empty): text printed before each packet.
//! - `TIMESTAMP` (boolean, default true): print each packet's timestamp.
//! - `ETHER` (boolean, default false): print the Ethernet source and
//!   destination addresses, when the packet has an Ethernet header.
//! - `ACTIVE` (boolean, default true): whether to print.
//! - `OUTFILE` (file name): append lines to this file instead. The file
//!   is opened (created if need be) when the router starts running, not
//!   by `paraclick check`; its directory must exist.
//!
//! Handlers:
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     c[0] -> ARPPrint(in, TIMESTAMP false) -> ...
//!     // in: arp who-has 10.0.0.2 tell 10.0.0.1

use crate::outfile::OutFile;
use paraclick_packet::wire::{ethertype, EtherAddr};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, Verdict};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct ArpPrint {
    label: String,
    timestamp: bool,
    ether: bool,
    active: AtomicBool,
    outfile: Option<OutFile>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("ARPPrint", "1/1", "a", make)
        .shared("a printer: one output, in packet order, for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ArpPrint, String> {
    let mut a = cx.args();
    let label = a.read_p::<String>("LABEL").unwrap_or_default();
    let timestamp = a.read::<bool>("TIMESTAMP").unwrap_or(true);
    let ether = a.read::<bool>("ETHER").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let outfile = a.read::<String>("OUTFILE");
    a.complete()?;
    // Opened when the router runs: a check or a rejected configuration
    // leaves the file alone.
    let outfile = outfile.map(|f| OutFile::new(f, true)).transpose()?;
    Ok(ArpPrint {
        label,
        timestamp,
        ether,
        active: AtomicBool::new(active),
        outfile,
    })
}

fn ether_at(b: &[u8], at: usize) -> EtherAddr {
    EtherAddr([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5]])
}

fn ip_at(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

impl ArpPrint {
    /// The line printed for `p` (without newline).
    pub fn format(&self, p: &Packet) -> String {
        let mut s = String::new();
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        if self.timestamp {
            let _ = write!(s, "{}: ", p.timestamp());
        }
        let data = p.data();
        let arp_off = match p.network_header_offset() {
            Some(o) if o >= 0 => o as usize,
            _ if data.len() >= 14 && data[12..14] == ethertype::ARP.to_be_bytes() => 14,
            _ => 0,
        };
        if self.ether {
            let mac = match p.mac_header_offset() {
                Some(o) if o >= 0 => o as usize,
                _ => 0,
            };
            if mac + 14 <= arp_off && mac + 14 <= data.len() {
                let _ = write!(s, "{} > {}: ", ether_at(data, mac + 6), ether_at(data, mac));
            }
        }
        let a = data.get(arp_off..).unwrap_or(&[]);
        if a.len() < 28 {
            let _ = write!(s, "truncated-arp ({})", a.len());
            return s;
        }
        let hrd = u16::from_be_bytes([a[0], a[1]]);
        let pro = u16::from_be_bytes([a[2], a[3]]);
        let (hln, pln) = (a[4], a[5]);
        let op = u16::from_be_bytes([a[6], a[7]]);
        if (pro != ethertype::IPV4 && pro != 0x1000) || pln != 4 || hln != 6 {
            let _ = write!(
                s,
                "arp-#{op} for proto #{pro} ({pln}) hardware #{hrd} ({hln})"
            );
            return s;
        }
        let (sha, spa, tha, tpa) = (ether_at(a, 8), ip_at(a, 14), ether_at(a, 18), ip_at(a, 24));
        if pro == 0x1000 {
            s.push_str("trailer-");
        }
        let _ = match op {
            1 => {
                let _ = write!(s, "arp who-has {tpa}");
                if !tha.is_zero() {
                    let _ = write!(s, " ({tha})");
                }
                write!(s, " tell {spa}")
            }
            2 => write!(s, "arp reply {spa} is-at {sha}"),
            3 => write!(s, "rarp who-is {tha} tell {sha}"),
            4 => write!(s, "rarp reply {tha} at {tpa}"),
            8 => write!(s, "invarp who-is {tha} tell {sha}"),
            9 => write!(s, "invarp reply {tha} at {tpa}"),
            _ => write!(s, "arp-#{op}"),
        };
        if hrd != 1 {
            let _ = write!(s, " hardware #{hrd}");
        }
        s
    }
}

impl Action for ArpPrint {
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

    /// The router runs: OUTFILE is opened.
    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(f) = &self.outfile {
            f.start(cx.element_name());
        }
    }

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if self.active.load(Ordering::Relaxed) {
            let mut line = self.format(p);
            match &self.outfile {
                Some(f) => {
                    line.push('\n');
                    f.write(cx.element_name(), line.as_bytes());
                }
                None => eprintln!("{line}"),
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::ArpPrint;
    use crate::test_kit::*;
    use paraclick_packet::wire::{ArpOp, ArpRepr};
    use paraclick_packet::Timestamp;

    fn printer(label: &str, ts: bool, ether: bool) -> ArpPrint {
        ArpPrint {
            label: label.into(),
            timestamp: ts,
            ether,
            active: true.into(),
            outfile: None,
        }
    }

    fn request() -> Vec<u8> {
        let r = ArpRepr::request(eth("0:11:22:33:44:55"), ip("10.0.0.1"), ip("10.0.0.2"));
        arp_frame(eth("ff:ff:ff:ff:ff:ff"), eth("0:11:22:33:44:55"), &r)
    }

    fn reply() -> Vec<u8> {
        let r = ArpRepr::reply(
            eth("0:aa:bb:cc:dd:ee"),
            ip("10.0.0.2"),
            eth("0:11:22:33:44:55"),
            ip("10.0.0.1"),
        );
        arp_frame(eth("0:11:22:33:44:55"), eth("0:aa:bb:cc:dd:ee"), &r)
    }

    #[test]
    fn formats_like_tcpdump() {
        let pr = printer("", false, false);
        assert_eq!(
            pr.format(&pkt(&request())),
            "arp who-has 10.0.0.2 tell 10.0.0.1"
        );
        assert_eq!(
            pr.format(&pkt(&reply())),
            "arp reply 10.0.0.2 is-at 00-AA-BB-CC-DD-EE"
        );
        // A bare ARP packet, a target hardware address, other operations.
        let mut r = ArpRepr::request(eth("0:1:2:3:4:5"), ip("1.1.1.1"), ip("2.2.2.2"));
        r.target_hardware_addr = eth("0:0:0:0:0:9");
        assert_eq!(
            pr.format(&pkt(&arp_bytes(&r))),
            "arp who-has 2.2.2.2 (00-00-00-00-00-09) tell 1.1.1.1"
        );
        r.operation = ArpOp::from(3u16);
        assert_eq!(
            pr.format(&pkt(&arp_bytes(&r))),
            "rarp who-is 00-00-00-00-00-09 tell 00-01-02-03-04-05"
        );
        r.operation = ArpOp::from(4u16);
        assert_eq!(
            pr.format(&pkt(&arp_bytes(&r))),
            "rarp reply 00-00-00-00-00-09 at 2.2.2.2"
        );
        r.operation = ArpOp::from(77u16);
        let mut b = arp_bytes(&r);
        assert_eq!(pr.format(&pkt(&b)), "arp-#77");
        b[1] = 6;
        assert_eq!(pr.format(&pkt(&b)), "arp-#77 hardware #6");
        b[5] = 16;
        assert_eq!(
            pr.format(&pkt(&b)),
            "arp-#77 for proto #2048 (16) hardware #6 (6)"
        );
        assert_eq!(pr.format(&pkt(&request()[..30])), "truncated-arp (16)");
    }

    #[test]
    fn label_timestamp_ether_and_network_header() {
        let pr = printer("in", true, true);
        let mut p = pkt(&request());
        p.set_timestamp(Timestamp::from_parts(1000, 1500));
        assert_eq!(
            pr.format(&p),
            "in: 1000.000001: 00-11-22-33-44-55 > FF-FF-FF-FF-FF-FF: arp who-has 10.0.0.2 tell 10.0.0.1"
        );
        // A network header annotation wins; no room for Ethernet before it.
        let mut p = pkt(&reply());
        p.pull(14);
        p.set_network_header(0, 28);
        let pr = printer("", false, true);
        assert_eq!(pr.format(&p), "arp reply 10.0.0.2 is-at 00-AA-BB-CC-DD-EE");
    }

    #[test]
    fn passes_packets_and_writes_outfile() {
        let path = std::env::temp_dir().join(format!("arpprint-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let h = harness(
            &format!("ARPPrint(x, TIMESTAMP false, OUTFILE {})", path.display()),
            1,
        );
        h.push(0, vec![pkt(&request()), pkt(&reply())]);
        h.write("active", "false").unwrap();
        assert_eq!(h.read("active").unwrap(), "false");
        h.push(0, vec![pkt(&request())]);
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].data(), &request()[..]);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "x: arp who-has 10.0.0.2 tell 10.0.0.1\nx: arp reply 10.0.0.2 is-at 00-AA-BB-CC-DD-EE\n"
        );
        assert_err(
            try_harness("ARPPrint(OUTFILE /nonexistent/dir/file)", 1),
            "e :: ARPPrint: OUTFILE: /nonexistent/dir/file: no directory /nonexistent/dir",
        );
    }
}
