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

// libc for `sock_filter`, the instruction SO_ATTACH_FILTER takes (rustix
// has no type for it), and for dlopen (libpcap, below).

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
    let code = libpcap::Code::compile(expr).map_err(|e| match e {
        libpcap::Error::Unavailable(e) => {
            format!("{what}: libpcap cannot compile filters here: {e}")
        }
        libpcap::Error::Compile(e) => bad(e),
    })?;
    let mut insns = Vec::with_capacity(code.insns().len());
    for &(code, jt, jf, k) in code.insns() {
        let mut insn = Insn { code, jt, jf, k };
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

/// libpcap, opened (`dlopen`) the first time a filter is compiled rather
/// than linked: a router without BPF_FILTER or PRIORITY_FILTER maps
/// neither it nor the libraries it pulls in (D-Bus, systemd, gcrypt and
/// four compressors on Debian, about 1 MB of every run's resident
/// memory and a share of its start-up).
mod libpcap {
    use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
    use std::sync::{Mutex, OnceLock};

    /// `struct bpf_insn`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct BpfInsn {
        code: u16,
        jt: u8,
        jf: u8,
        k: u32,
    }

    /// `struct bpf_program`.
    #[repr(C)]
    struct BpfProgram {
        bf_len: c_uint,
        bf_insns: *mut BpfInsn,
    }

    /// `struct pcap_pkthdr`.
    #[repr(C)]
    struct PktHdr {
        ts: libc::timeval,
        caplen: u32,
        len: u32,
    }

    type OpenDead = unsafe extern "C" fn(c_int, c_int) -> *mut c_void;
    type Compile =
        unsafe extern "C" fn(*mut c_void, *mut BpfProgram, *const c_char, c_int, u32) -> c_int;
    type GetErr = unsafe extern "C" fn(*mut c_void) -> *mut c_char;
    type FreeCode = unsafe extern "C" fn(*mut BpfProgram);
    type Close = unsafe extern "C" fn(*mut c_void);
    type OfflineFilter = unsafe extern "C" fn(*const BpfProgram, *const PktHdr, *const u8) -> c_int;

    struct Lib {
        open_dead: OpenDead,
        compile: Compile,
        geterr: GetErr,
        freecode: FreeCode,
        close: Close,
        /// The tests' reference matcher.
        #[cfg_attr(not(test), allow(dead_code))]
        offline_filter: OfflineFilter,
        /// Serialises pcap_compile (not reentrant before libpcap 1.8).
        lock: Mutex<()>,
    }

    /// `DLT_EN10MB`: Ethernet.
    const DLT_EN10MB: c_int = 1;
    /// `PCAP_NETMASK_UNKNOWN`.
    const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

    #[derive(Debug)]
    pub enum Error {
        /// libpcap could not be loaded.
        Unavailable(String),
        /// libpcap's message about the expression.
        Compile(String),
    }

    fn dlerror() -> String {
        // SAFETY: dlerror returns null or a NUL-terminated string valid
        // until the next dl* call on this thread; it is copied at once.
        unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "unknown error".into()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        }
    }

    fn load() -> Result<Lib, String> {
        let mut handle = std::ptr::null_mut();
        let mut why = String::new();
        for name in [c"libpcap.so.0.8", c"libpcap.so.1", c"libpcap.so"] {
            // SAFETY: a NUL-terminated library name; the handle is kept
            // for the life of the process (never dlclose'd), so the
            // function pointers taken from it stay valid.
            handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !handle.is_null() {
                break;
            }
            why = dlerror();
        }
        if handle.is_null() {
            return Err(why);
        }
        let sym = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: a live handle and a NUL-terminated symbol name.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            if p.is_null() {
                Err(format!("{}: {}", name.to_string_lossy(), dlerror()))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is the libpcap function of that name, whose
        // C signature (pcap/pcap.h) the type spells.
        unsafe {
            Ok(Lib {
                open_dead: std::mem::transmute::<*mut c_void, OpenDead>(sym(c"pcap_open_dead")?),
                compile: std::mem::transmute::<*mut c_void, Compile>(sym(c"pcap_compile")?),
                geterr: std::mem::transmute::<*mut c_void, GetErr>(sym(c"pcap_geterr")?),
                freecode: std::mem::transmute::<*mut c_void, FreeCode>(sym(c"pcap_freecode")?),
                close: std::mem::transmute::<*mut c_void, Close>(sym(c"pcap_close")?),
                offline_filter: std::mem::transmute::<*mut c_void, OfflineFilter>(sym(
                    c"pcap_offline_filter",
                )?),
                lock: Mutex::new(()),
            })
        }
    }

    fn lib() -> Result<&'static Lib, Error> {
        static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
        LIB.get_or_init(load)
            .as_ref()
            .map_err(|e| Error::Unavailable(e.clone()))
    }

    /// A compiled program, libpcap's (freed on drop).
    pub struct Code {
        lib: &'static Lib,
        prog: BpfProgram,
        insns: Vec<(u16, u8, u8, u32)>,
    }

    impl Code {
        /// Compiles `expr` for Ethernet frames (snapshot length 65535,
        /// optimised), as tcpdump would.
        pub fn compile(expr: &str) -> Result<Code, Error> {
            let lib = lib()?;
            let text = CString::new(expr)
                .map_err(|_| Error::Compile("a NUL byte in the expression".into()))?;
            let _g = lib.lock.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: libpcap's documented calls on a dead handle of our
            // own; `prog` is filled by pcap_compile only on success (then
            // owned by the returned Code, which frees it once), and the
            // error string is copied before the handle is closed.
            unsafe {
                let dead = (lib.open_dead)(DLT_EN10MB, 65535);
                if dead.is_null() {
                    return Err(Error::Unavailable("pcap_open_dead failed".into()));
                }
                let mut prog = BpfProgram {
                    bf_len: 0,
                    bf_insns: std::ptr::null_mut(),
                };
                let r = (lib.compile)(dead, &mut prog, text.as_ptr(), 1, NETMASK_UNKNOWN);
                if r != 0 {
                    let e = CStr::from_ptr((lib.geterr)(dead))
                        .to_string_lossy()
                        .into_owned();
                    (lib.close)(dead);
                    return Err(Error::Compile(e));
                }
                (lib.close)(dead);
                let insns = if prog.bf_insns.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(prog.bf_insns, prog.bf_len as usize)
                        .iter()
                        .map(|i| (i.code, i.jt, i.jf, i.k))
                        .collect()
                };
                Ok(Code { lib, prog, insns })
            }
        }

        /// The instructions: (code, jt, jf, k).
        pub fn insns(&self) -> &[(u16, u8, u8, u32)] {
            &self.insns
        }

        /// Whether libpcap's own interpreter accepts `frame`.
        #[cfg(test)]
        pub fn matches(&self, frame: &[u8]) -> bool {
            let hdr = PktHdr {
                ts: libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                },
                caplen: frame.len() as u32,
                len: frame.len() as u32,
            };
            // SAFETY: a program pcap_compile made, a header whose caplen
            // is the frame's length, and the frame.
            unsafe { (self.lib.offline_filter)(&self.prog, &hdr, frame.as_ptr()) != 0 }
        }
    }

    impl Drop for Code {
        fn drop(&mut self) {
            // SAFETY: the program pcap_compile filled, freed once.
            unsafe { (self.lib.freecode)(&mut self.prog) }
        }
    }

    // SAFETY: a Code owns its program (no libpcap handle); libpcap's
    // functions are plain code and data.
    unsafe impl Send for Code {}
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
        super::libpcap::Code::compile(expr).unwrap().matches(frame)
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
