//! # Print
//!
//! Print([LABEL, MAXLENGTH, keywords CONTENTS, TIMESTAMP, PRINTANNO, HEADROOM, ACTIVE])
//!
//! Prints packet contents to standard error.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prints one line per packet, then passes it on unchanged:
//!
//!     LABEL: TIMESTAMP: (hHEADROOM tTAILROOM)  LEN | ANNO | CONTENTS
//!
//! `LABEL: ` appears if LABEL is not empty, `TIMESTAMP: ` (seconds and
//! microseconds since 1970) with TIMESTAMP true, the headroom part with
//! HEADROOM true. LEN is the packet length, right-aligned in four columns.
//! ` | ANNO` (PRINTANNO true) is the user annotation bytes in hex.
//! ` | CONTENTS` shows up to MAXLENGTH bytes of data: in hex, lowercase,
//! in groups of four bytes separated by spaces (`  54 | 02010101 01000201
//! ...`), or in ASCII, in groups of eight characters, each after a
//! space (`  13 |  Hello, w orld!`), with `.` for unprintable bytes; with
//! no bytes to show (an empty packet, MAXLENGTH 0) the part and its bar
//! are left out (`   0`), as Click's Print. Each line is written with one call, so lines from
//! several threads do not interleave.
//!
//! Arguments:
//! - `LABEL` (string, default empty).
//! - `MAXLENGTH` (integer, default 24): bytes of contents to print;
//!   negative means the whole packet.
//! - `CONTENTS` (`NONE`, `HEX` or `ASCII`; or a boolean, true meaning
//!   `HEX`; default `HEX`).
//! - `TIMESTAMP` (boolean, default false): print the timestamp annotation.
//! - `PRINTANNO` (boolean, default false): print the user annotation bytes.
//! - `HEADROOM` (boolean, default false): print headroom and tailroom.
//! - `ACTIVE` (boolean, default true): whether to print at all.
//!
//! Handlers:
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Print(in, 64) -> ...
//!     // in:   98 | 00163e0a 0b0c0016 3e010203 08004500 00540000 40004001 ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThread, Verdict};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// How Print shows packet data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    None,
    Hex,
    Ascii,
}

impl Contents {
    fn parse(s: &str) -> Result<Contents, String> {
        let s = s.trim();
        match s.to_ascii_uppercase().as_str() {
            "NONE" => Ok(Contents::None),
            "HEX" => Ok(Contents::Hex),
            "ASCII" => Ok(Contents::Ascii),
            _ => match <bool as paraclick_runtime::FromArg>::from_arg(
                s,
                &paraclick_runtime::ArgEnv::default(),
            ) {
                Ok(true) => Ok(Contents::Hex),
                Ok(false) => Ok(Contents::None),
                Err(_) => Err(format!("CONTENTS: expected NONE, HEX or ASCII, not '{s}'")),
            },
        }
    }
}

/// What Print prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintOpts {
    pub label: String,
    /// Bytes of contents to show; `None` for all.
    pub maxlength: Option<usize>,
    pub contents: Contents,
    pub timestamp: bool,
    pub print_anno: bool,
    pub headroom: bool,
}

impl Default for PrintOpts {
    fn default() -> Self {
        PrintOpts {
            label: String::new(),
            maxlength: Some(24),
            contents: Contents::Hex,
            timestamp: false,
            print_anno: false,
            headroom: false,
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` in hex, in groups of four bytes.
fn push_hex(out: &mut String, bytes: &[u8]) {
    for (i, &b) in bytes.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            out.push(' ');
        }
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
}

/// Appends `bytes` as text, in groups of eight each after a space (the
/// first too, as Click's Print), `.` for unprintables.
fn push_ascii(out: &mut String, bytes: &[u8]) {
    for (i, &b) in bytes.iter().enumerate() {
        if i % 8 == 0 {
            out.push(' ');
        }
        out.push(if (32..127).contains(&b) {
            b as char
        } else {
            '.'
        });
    }
}

/// Appends Print's line for `p` (with its newline) to `out`.
pub fn format_packet(out: &mut String, o: &PrintOpts, p: &Packet) {
    if !o.label.is_empty() {
        out.push_str(&o.label);
        out.push_str(": ");
    }
    if o.timestamp {
        let _ = write!(out, "{}: ", p.timestamp());
    }
    if o.headroom {
        let _ = write!(out, "(h{} t{}) ", p.headroom(), p.tailroom());
    }
    let _ = write!(out, "{:4}", p.len());
    if o.print_anno {
        out.push_str(" | ");
        push_hex(out, &p.anno().user);
    }
    let data = p.data();
    let data = match o.maxlength {
        Some(m) if m < data.len() => &data[..m],
        _ => data,
    };
    // As Click: no ` | ` when there are no bytes to print (an empty
    // packet, MAXLENGTH 0).
    match o.contents {
        // No bytes to show (an empty packet, MAXLENGTH 0): no ` | `.
        _ if data.is_empty() => {}
        Contents::None => {}
        _ if data.is_empty() => {}
        Contents::Hex => {
            out.push_str(" | ");
            push_hex(out, data);
        }
        Contents::Ascii => {
            out.push_str(" | ");
            push_ascii(out, data);
        }
    }
    out.push('\n');
}

pub struct Print {
    opts: PrintOpts,
    active: AtomicBool,
    buf: PerThread<String>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Print", "1/1", "a", make)
        .shared("a printer: one output, in packet order, for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Print, String> {
    let mut a = cx.args();
    let label = a.read_p::<String>("LABEL").unwrap_or_default();
    let maxlength = a.read_p::<i64>("MAXLENGTH").unwrap_or(24);
    let contents = match a.read::<String>("CONTENTS") {
        Some(s) => Contents::parse(&s)?,
        None => Contents::Hex,
    };
    let timestamp = a.read::<bool>("TIMESTAMP").unwrap_or(false);
    let print_anno = a.read::<bool>("PRINTANNO").unwrap_or(false);
    let headroom = a.read::<bool>("HEADROOM").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    a.complete()?;
    let opts = PrintOpts {
        label,
        maxlength: usize::try_from(maxlength).ok(),
        contents,
        timestamp,
        print_anno,
        headroom,
    };
    Ok(Print {
        opts,
        active: AtomicBool::new(active),
        buf: PerThread::new(cx.nthreads, |_| String::with_capacity(256)),
    })
}

impl Action for Print {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "active",
        |e, _| e.active.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.active.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if self.active.load(Ordering::Relaxed) {
            let buf = self.buf.get(cx);
            buf.clear();
            format_packet(buf, &self.opts, p);
            let _ = std::io::stderr().write_all(buf.as_bytes());
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;
    use paraclick_packet::Timestamp;

    fn line(o: &PrintOpts, p: &Packet) -> String {
        let mut s = String::new();
        format_packet(&mut s, o, p);
        s
    }

    /// The frame of Click's ARPQuerier-01 test (a 54-byte TCP/IP packet
    /// in Ethernet), whose Print(MAXLENGTH 32) line Click's test expects.
    fn click_frame() -> Packet {
        let mut v = vec![0u8; 54];
        let head = [
            0x02, 0x01, 0x01, 0x01, 0x01, 0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x08, 0x00,
            0x45, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x64, 0x06, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x02, 0x00,
        ];
        v[..32].copy_from_slice(&head);
        pkt(&v)
    }

    #[test]
    fn click_format_hex() {
        let o = PrintOpts {
            maxlength: Some(32),
            ..PrintOpts::default()
        };
        assert_eq!(
            line(&o, &click_frame()),
            "  54 | 02010101 01000201 01010101 08004500 00280000 00006406 00000000 00000200\n"
        );
        // default MAXLENGTH 24
        assert_eq!(
            line(&PrintOpts::default(), &click_frame()),
            "  54 | 02010101 01000201 01010101 08004500 00280000 00006406\n"
        );
    }

    #[test]
    fn click_format_whole_packet() {
        // Click's IPFragmenter-01 expects this for Print(CONTENTS true,
        // MAXLENGTH 1000) on a 24-byte fragment.
        let p = pkt(&[
            0x45, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x02, 0x64, 0x06, 0x36, 0x95, 0x12, 0x1a,
            0x04, 0x2c, 0x0a, 0x00, 0x00, 0x04, 0x8f, 0x55, 0x00, 0x00,
        ]);
        let o = PrintOpts {
            maxlength: Some(1000),
            ..PrintOpts::default()
        };
        assert_eq!(
            line(&o, &p),
            "  24 | 45000018 00000002 64063695 121a042c 0a000004 8f550000\n"
        );
        let all = PrintOpts {
            maxlength: None,
            ..PrintOpts::default()
        };
        assert_eq!(line(&all, &p), line(&o, &p));
    }

    #[test]
    fn label_timestamp_headroom_anno() {
        let mut p = pkt(&[0xde, 0xad, 0xbe, 0xef, 0x01]);
        p.set_timestamp(Timestamp::from_parts(1, 500_000));
        p.anno_mut().user[0] = 0xab;
        p.anno_mut().user[23] = 0x01;
        let o = PrintOpts {
            label: "ok".into(),
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &p), "ok:    5 | deadbeef 01\n");
        let o = PrintOpts {
            label: "ok".into(),
            timestamp: true,
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &p), "ok: 1.000500:    5 | deadbeef 01\n");
        let o = PrintOpts {
            timestamp: true,
            contents: Contents::None,
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &p), "1.000500:    5\n");
        let o = PrintOpts {
            headroom: true,
            contents: Contents::None,
            ..PrintOpts::default()
        };
        assert_eq!(
            line(&o, &p),
            format!("(h{} t{})    5\n", p.headroom(), p.tailroom())
        );
        let o = PrintOpts {
            print_anno: true,
            maxlength: Some(2),
            ..PrintOpts::default()
        };
        assert_eq!(
            line(&o, &p),
            "   5 | ab000000 00000000 00000000 00000000 00000000 00000001 | dead\n"
        );
    }

    #[test]
    fn ascii_and_lengths() {
        let p = pkt(b"Hello, world!\n\x00\x7f paraclick");
        let o = PrintOpts {
            contents: Contents::Ascii,
            maxlength: None,
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &p), "  26 |  Hello, w orld!...  paracli ck\n");
        // No bytes shown: no bar either, as Click's.
        let o = PrintOpts {
            maxlength: Some(0),
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &p), "  26\n");
        assert_eq!(line(&PrintOpts::default(), &pkt(&[])), "   0\n");
        let big = Packet::zeroed(12345).unwrap();
        let o = PrintOpts {
            contents: Contents::None,
            ..PrintOpts::default()
        };
        assert_eq!(line(&o, &big), "12345\n");
    }

    #[test]
    fn contents_argument() {
        assert_eq!(Contents::parse("hex"), Ok(Contents::Hex));
        assert_eq!(Contents::parse("ASCII"), Ok(Contents::Ascii));
        assert_eq!(Contents::parse("NONE"), Ok(Contents::None));
        assert_eq!(Contents::parse("true"), Ok(Contents::Hex));
        assert_eq!(Contents::parse("false"), Ok(Contents::None));
        assert_err(
            Contents::parse("binary"),
            "CONTENTS: expected NONE, HEX or ASCII, not 'binary'",
        );
    }

    #[test]
    fn element_passes_packets_and_has_active_handler() {
        let h = harness("Print(test, 4, CONTENTS ASCII, ACTIVE false)", 1);
        h.push(0, vec![pkt(&[1, 2]), pkt(&[3])]);
        assert_eq!(tags(&h.output(0)), vec![1, 3]);
        assert_eq!(h.read("active").unwrap(), "false");
        h.write("active", "true").unwrap();
        assert_eq!(h.read("active").unwrap(), "true");
        h.push(0, vec![pkt(b"printed by a test")]);
        assert_eq!(h.output(0).len(), 1);
        assert_err(
            h.write("active", "perhaps"),
            "e.active: expected boolean (true or false)",
        );
        assert_err(
            try_harness("Print(a, b)", 1),
            "e :: Print: MAXLENGTH: expected integer",
        );
        assert_err(
            try_harness("Print(CONTENTS binary)", 1),
            "e :: Print: CONTENTS: expected NONE, HEX or ASCII, not 'binary'",
        );
        assert_err(
            try_harness("Print(FOO 1)", 1),
            "e :: Print: unknown keyword FOO",
        );
    }
}
