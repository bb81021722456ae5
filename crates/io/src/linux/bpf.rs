//! Socket filters for the receive rings: tcpdump expressions (FromDevice's
//! BPF_FILTER and PRIORITY_FILTER) compiled by libpcap into classic BPF,
//! which the kernel runs on each frame before it reaches a ring. Not an
//! element.
//!
//! A device read with a priority path has two rings: the priority ring
//! takes the frames that match `(BPF_FILTER) and (PRIORITY_FILTER)`, the
//! main ring those that match `(BPF_FILTER) and not (PRIORITY_FILTER)`.
//! The two filters are complementary by construction, so no frame is
//! delivered twice and none that BPF_FILTER accepts is lost between them.

// libc for `sock_filter`, the instruction SO_ATTACH_FILTER takes: rustix
// has no type for it.

/// One classic BPF instruction (the kernel's `struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// A compiled filter program, as the kernel takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    insns: Vec<Insn>,
}

/// `BPF_RET | BPF_K`: return a constant (0 rejects the frame, otherwise
/// the number of bytes to keep).
const RET_K: u16 = 0x06;
/// The kernel's limit on a classic BPF program's length (BPF_MAXINSNS).
const MAX_INSNS: usize = 4096;

impl Program {
    /// The program as the kernel's `sock_filter` array.
    pub fn to_sock_filter(&self) -> Vec<libc::sock_filter> {
        self.insns
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect()
    }
}

/// Compiles the tcpdump expression `expr` for Ethernet frames; `what`
/// names it in errors (the keyword).
pub fn compile(what: &str, expr: &str) -> Result<Program, String> {
    let bad = |e: String| format!("{what}: bad filter expression '{expr}': {e}");
    let dead = pcap::Capture::dead(pcap::Linktype::ETHERNET)
        .map_err(|e| format!("{what}: libpcap cannot compile filters here: {e}"))?;
    let prog = dead.compile(expr, true).map_err(|e| bad(e.to_string()))?;
    let mut insns = Vec::with_capacity(prog.get_instructions().len());
    for i in prog.get_instructions() {
        // The pcap crate shows an instruction as "code jt jf k".
        let text = i.to_string();
        let f: Vec<&str> = text.split_whitespace().collect();
        let parsed = match f.as_slice() {
            [c, t, e, k] => (|| {
                Some(Insn {
                    code: c.parse().ok()?,
                    jt: t.parse().ok()?,
                    jf: e.parse().ok()?,
                    k: k.parse().ok()?,
                })
            })(),
            _ => None,
        };
        let mut insn = parsed.ok_or_else(|| bad(format!("unreadable instruction '{text}'")))?;
        // libpcap's dead handle accepts a frame by returning its snapshot
        // length (65535), and a socket filter's return value cuts the
        // frame: accept whole frames (64 KB super-frames included).
        if insn.code == RET_K && insn.k != 0 {
            insn.k = u32::MAX;
        }
        insns.push(insn);
    }
    if insns.is_empty() {
        return Err(bad("empty program".into()));
    }
    if insns.len() > MAX_INSNS {
        return Err(bad(format!(
            "{} instructions, more than the kernel's {MAX_INSNS}",
            insns.len()
        )));
    }
    Ok(Program { insns })
}

/// The default PRIORITY_FILTER (with `PRIORITY true`): what a router's
/// control plane needs to get through an overload — address resolution
/// (ARP), ICMP (pings to the router, errors) and ICMPv6 (neighbour
/// discovery, pings).
pub const DEFAULT_PRIORITY_FILTER: &str = "arp or icmp or icmp6";

/// The filters of a device's rings, as given (expressions) and compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxFilters {
    /// BPF_FILTER: what is emitted at all (None: everything).
    pub bpf_filter: Option<String>,
    /// PRIORITY_FILTER: what goes through the priority ring (None: no
    /// priority ring).
    pub priority_filter: Option<String>,
    /// The main ring's program (None: no filter).
    pub main: Option<Program>,
    /// The priority ring's program.
    pub priority: Option<Program>,
}

impl RxFilters {
    /// Builds and compiles the rings' filters from BPF_FILTER and
    /// PRIORITY_FILTER (an empty expression is none, as in Click).
    pub fn new(
        bpf_filter: Option<String>,
        priority_filter: Option<String>,
    ) -> Result<Self, String> {
        let bpf_filter = bpf_filter.filter(|s| !s.trim().is_empty());
        let priority_filter = priority_filter.filter(|s| !s.trim().is_empty());
        // Each expression alone first, so an error names the keyword.
        if let Some(f) = &bpf_filter {
            compile("BPF_FILTER", f)?;
        }
        if let Some(p) = &priority_filter {
            compile("PRIORITY_FILTER", p)?;
        }
        let (main_expr, prio_expr) =
            Self::expressions(bpf_filter.as_deref(), priority_filter.as_deref());
        let main = main_expr.map(|e| compile("BPF_FILTER", &e)).transpose()?;
        let priority = prio_expr
            .map(|e| compile("PRIORITY_FILTER", &e))
            .transpose()?;
        Ok(RxFilters {
            bpf_filter,
            priority_filter,
            main,
            priority,
        })
    }

    /// The expressions of the main and the priority ring.
    pub fn expressions(bpf: Option<&str>, prio: Option<&str>) -> (Option<String>, Option<String>) {
        match (bpf, prio) {
            (None, None) => (None, None),
            (Some(b), None) => (Some(b.to_string()), None),
            (None, Some(p)) => (Some(format!("not ({p})")), Some(p.to_string())),
            (Some(b), Some(p)) => (
                Some(format!("({b}) and not ({p})")),
                Some(format!("({b}) and ({p})")),
            ),
        }
    }

    /// Whether the device gets a priority ring.
    pub fn has_priority(&self) -> bool {
        self.priority.is_some()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An Ethernet frame with `ethertype` and `payload`.
    fn ether(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 1, 1, 2, 0, 0, 0, 1, 2];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f.resize(f.len().max(60), 0);
        f
    }

    /// An IPv4 packet of protocol `proto` from 10.0.1.2 to `dst`.
    fn ipv4(proto: u8, dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 1, 2];
        p.extend_from_slice(&dst);
        let len = (20 + l4.len()) as u16;
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p.extend_from_slice(l4);
        ether(0x0800, &p)
    }

    /// Sample frames: (name, frame, a control frame of the default filter).
    pub(crate) fn samples() -> Vec<(&'static str, Vec<u8>, bool)> {
        let arp = ether(
            0x0806,
            &[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 1, 2, 10, 0, 1, 2],
        );
        let ping = ipv4(1, [10, 0, 1, 1], &[8, 0, 0, 0, 0, 1, 0, 1]);
        let udp = ipv4(17, [10, 0, 2, 2], &[4, 0, 0, 9, 0, 8, 0, 0]);
        let tcp = ipv4(6, [10, 0, 2, 2], &[0; 20]);
        let mut v6 = vec![0x60, 0, 0, 0, 0, 8, 58, 255];
        v6.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        v6.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        v6.extend_from_slice(&[133, 0, 0, 0, 0, 0, 0, 0]);
        let nd = ether(0x86dd, &v6);
        vec![
            ("arp", arp, true),
            ("icmp echo", ping, true),
            ("udp", udp, false),
            ("tcp", tcp, false),
            ("icmp6", nd, true),
        ]
    }

    /// Whether libpcap's own interpreter accepts `frame` with `expr`.
    fn pcap_matches(expr: &str, frame: &[u8]) -> bool {
        let dead = pcap::Capture::dead(pcap::Linktype::ETHERNET).unwrap();
        dead.compile(expr, true).unwrap().filter(frame)
    }

    /// A small classic-BPF interpreter (the instructions libpcap emits for
    /// these expressions), to run the programs exactly as attached.
    pub(crate) fn run(p: &Program, pkt: &[u8]) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let mut mem = [0u32; 16];
        let load = |off: usize, n: usize| -> Option<u32> {
            let b = pkt.get(off..off + n)?;
            Some(b.iter().fold(0u32, |v, &c| v << 8 | c as u32))
        };
        while let Some(i) = p.insns.get(pc) {
            pc += 1;
            let k = i.k as usize;
            let src = if i.code & 0x08 != 0 { x } else { i.k };
            match i.code & 0x07 {
                0x00 => {
                    // ld: W, H, B sizes; ABS, IND, LEN, IMM, MEM modes.
                    let n = match i.code & 0x18 {
                        0x00 => 4,
                        0x08 => 2,
                        _ => 1,
                    };
                    a = match i.code & 0xe0 {
                        0x20 => match load(k, n) {
                            Some(v) => v,
                            None => return 0,
                        },
                        0x40 => match load(x as usize + k, n) {
                            Some(v) => v,
                            None => return 0,
                        },
                        0x80 => pkt.len() as u32,
                        0x00 => i.k,
                        0x60 => mem[k & 15],
                        m => panic!("ld mode {m:#x}"),
                    };
                }
                0x01 => {
                    x = match i.code & 0xe0 {
                        0x00 => i.k,
                        0x60 => mem[k & 15],
                        0x80 => pkt.len() as u32,
                        // ldxb 4*([k]&0xf)
                        0xa0 => match load(k, 1) {
                            Some(v) => (v & 15) * 4,
                            None => return 0,
                        },
                        m => panic!("ldx mode {m:#x}"),
                    };
                }
                0x02 => mem[k & 15] = a,
                0x03 => mem[k & 15] = x,
                0x04 => {
                    a = match i.code & 0xf0 {
                        0x00 => a.wrapping_add(src),
                        0x10 => a.wrapping_sub(src),
                        0x20 => a.wrapping_mul(src),
                        0x30 => a.checked_div(src).unwrap_or(0),
                        0x40 => a | src,
                        0x50 => a & src,
                        0x60 => a.wrapping_shl(src),
                        0x70 => a.wrapping_shr(src),
                        0x80 => a.wrapping_neg(),
                        op => panic!("alu op {op:#x}"),
                    }
                }
                0x05 => {
                    let taken = match i.code & 0xf0 {
                        0x00 => {
                            pc += k;
                            continue;
                        }
                        0x10 => a == src,
                        0x20 => a > src,
                        0x30 => a >= src,
                        0x40 => a & src != 0,
                        op => panic!("jmp op {op:#x}"),
                    };
                    pc += if taken { i.jt } else { i.jf } as usize;
                }
                0x06 => return if i.code & 0x18 == 0x10 { a } else { i.k },
                _ => {
                    if i.code & 0xf8 == 0 {
                        x = a;
                    } else {
                        a = x;
                    }
                }
            }
        }
        0
    }

    #[test]
    fn expressions_compile_and_accept_whole_frames() {
        let p = compile("BPF_FILTER", "arp or icmp").unwrap();
        assert!(p.insns.len() > 2);
        // Accepting returns are "keep everything", never libpcap's 65535.
        let rets: Vec<u32> = p
            .insns
            .iter()
            .filter(|i| i.code == RET_K)
            .map(|i| i.k)
            .collect();
        assert!(rets.contains(&0) && rets.contains(&u32::MAX), "{rets:?}");
        assert_eq!(p.to_sock_filter().len(), p.insns.len());
        for (name, f, control) in samples() {
            let want = name == "arp" || name == "icmp echo";
            assert_eq!(run(&p, &f) != 0, want, "{name}");
            // The program as attached agrees with libpcap's own reading.
            assert_eq!(pcap_matches("arp or icmp", &f), want, "{name}");
            let d = compile("PRIORITY_FILTER", DEFAULT_PRIORITY_FILTER).unwrap();
            assert_eq!(run(&d, &f) != 0, control, "default filter, {name}");
        }
    }

    #[test]
    fn bad_expressions_are_errors_naming_the_keyword() {
        for bad in [
            "arp or",
            "icmp and and udp",
            "port 99999999",
            "(arp",
            "ip[",
            "a\0b",
        ] {
            let e = compile("PRIORITY_FILTER", bad).unwrap_err();
            assert!(
                e.starts_with("PRIORITY_FILTER: bad filter expression"),
                "{e}"
            );
        }
        let e = RxFilters::new(Some("ip and".into()), None).unwrap_err();
        assert!(e.starts_with("BPF_FILTER:"), "{e}");
        let e = RxFilters::new(None, Some("((arp".into())).unwrap_err();
        assert!(e.starts_with("PRIORITY_FILTER:"), "{e}");
    }

    #[test]
    fn main_and_priority_rings_split_every_frame_once() {
        // No filters: no programs, no priority ring.
        let f = RxFilters::new(None, Some("  ".into())).unwrap();
        assert!(f.main.is_none() && !f.has_priority());
        for (bpf, prio) in [
            (None, Some(DEFAULT_PRIORITY_FILTER)),
            (Some("ip or arp"), Some(DEFAULT_PRIORITY_FILTER)),
            (Some("not tcp"), Some("arp or udp")),
            (Some("ip"), None),
        ] {
            let f = RxFilters::new(bpf.map(Into::into), prio.map(Into::into)).unwrap();
            assert_eq!(f.has_priority(), prio.is_some());
            for (name, frame, _) in samples() {
                let wanted = bpf.is_none_or(|b| pcap_matches(b, &frame));
                let on_main = f.main.as_ref().is_none_or(|p| run(p, &frame) != 0);
                let on_prio = f.priority.as_ref().is_some_and(|p| run(p, &frame) != 0);
                // Exactly once if BPF_FILTER takes it, never otherwise.
                assert_eq!(
                    u32::from(on_main) + u32::from(on_prio),
                    u32::from(wanted),
                    "{bpf:?} {prio:?} {name}"
                );
                if let (Some(p), true) = (prio, wanted) {
                    assert_eq!(on_prio, pcap_matches(p, &frame), "{bpf:?} {prio:?} {name}");
                }
            }
        }
    }
}
