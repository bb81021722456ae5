//! # Paint
//!
//! Paint(COLOR [, ANNO])
//!
//! Sets each packet's paint annotation to COLOR.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Arguments:
//! - `COLOR` (integer 0..255, mandatory): the color.
//! - `ANNO` (annotation, default `PAINT`): the one-byte annotation to set.
//!   `PAINT` is the paint annotation, `ICMP_PARAMPROB` the ICMP parameter
//!   problem offset, and an integer 0..23 names a byte of the user
//!   annotation area (paraclick has no byte-addressed annotation area, so
//!   Click's numeric offsets mean user bytes here), as does a one-byte
//!   name an AnnotationInfo element defined.
//!
//! Handlers:
//! - `color` (read/write): the color to paint.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Paint(1) -> ...

use paraclick_packet::anno::USER_ANNO_SIZE;
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU8, Ordering};

/// A one-byte annotation, as Paint, PaintTee, CheckPaint and PaintSwitch's
/// `ANNO` argument names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnoByte {
    /// The paint annotation (`PAINT`).
    Paint,
    /// The ICMP parameter problem offset (`ICMP_PARAMPROB`).
    IcmpParamProb,
    /// Byte `i` of the user annotation area.
    User(u8),
}

impl AnnoByte {
    #[inline]
    pub fn get(self, p: &Packet) -> u8 {
        let a = p.anno();
        match self {
            AnnoByte::Paint => a.paint,
            AnnoByte::IcmpParamProb => a.icmp_param_off,
            AnnoByte::User(i) => a.user[i as usize],
        }
    }

    #[inline]
    pub fn set(self, p: &mut Packet, v: u8) {
        let a = p.anno_mut();
        match self {
            AnnoByte::Paint => a.paint = v,
            AnnoByte::IcmpParamProb => a.icmp_param_off = v,
            AnnoByte::User(i) => a.user[i as usize] = v,
        }
    }
}

impl FromArg for AnnoByte {
    const WHAT: &'static str = "one-byte annotation";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        match s.trim() {
            "PAINT" | "PAINT_ANNO" => Ok(AnnoByte::Paint),
            "ICMP_PARAMPROB" | "ICMP_PARAMPROB_ANNO" => Ok(AnnoByte::IcmpParamProb),
            other if env.anno_name(other).is_some() => match env.anno_name(other) {
                Some((off, 1)) if off < USER_ANNO_SIZE => Ok(AnnoByte::User(off as u8)),
                _ => Err(format!(
                    "expected {}, not '{other}' (an annotation of another size)",
                    Self::WHAT
                )),
            },
            other => match u8::from_arg(other, env) {
                Ok(i) if (i as usize) < USER_ANNO_SIZE => Ok(AnnoByte::User(i)),
                _ => Err(format!(
                    "expected {} (PAINT, ICMP_PARAMPROB or a user byte 0..{}), not '{other}'",
                    Self::WHAT,
                    USER_ANNO_SIZE - 1
                )),
            },
        }
    }
    fn placeholder() -> Self {
        AnnoByte::Paint
    }
}

pub struct Paint {
    color: AtomicU8,
    anno: AnnoByte,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Paint", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<Paint, String> {
    let mut a = cx.args();
    let color = a.read_mp::<u8>("COLOR");
    let anno = a.read_p::<AnnoByte>("ANNO").unwrap_or(AnnoByte::Paint);
    a.complete()?;
    Ok(Paint {
        color: AtomicU8::new(color),
        anno,
    })
}

impl Action for Paint {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "color",
        |e, _| e.color.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.color.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.anno.set(p, self.color.load(Ordering::Relaxed));
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn paints_and_color_handler() {
        let h = harness("Paint(7)", 1);
        h.push(0, vec![pkt(&[1, 2, 3]), pkt(&[4])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| p.anno().paint == 7));
        assert_eq!(out[0].data(), &[1, 2, 3]);
        assert_eq!(h.read("color").unwrap(), "7");
        h.write("color", "200").unwrap();
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(h.output(0)[0].anno().paint, 200);
        assert_err(h.write("color", "256"), "e.color: 256 out of range");
        assert_eq!(h.read("color").unwrap(), "200");
    }

    #[test]
    fn other_annotation_bytes() {
        let h = harness("Paint(9, ANNO 3)", 1);
        h.push(0, vec![pkt(&[1])]);
        let p = &h.output(0)[0];
        assert_eq!(p.anno().user[3], 9);
        assert_eq!(p.anno().paint, 0);
        let h = harness("Paint(4, ICMP_PARAMPROB)", 1);
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(h.output(0)[0].anno().icmp_param_off, 4);
    }

    #[test]
    fn bad_config() {
        assert!(try_harness("Paint", 1).err().unwrap().contains("COLOR"));
        assert_err(
            try_harness("Paint(300)", 1),
            "e :: Paint: COLOR: 300 out of range",
        );
        assert_err(try_harness("Paint(1, ANNO 24)", 1), "e :: Paint: ANNO: expected one-byte annotation (PAINT, ICMP_PARAMPROB or a user byte 0..23), not '24'");
        assert_err(try_harness("Paint(1, ANNO FOO)", 1), "e :: Paint: ANNO: expected one-byte annotation (PAINT, ICMP_PARAMPROB or a user byte 0..23), not 'FOO'");
    }
}
