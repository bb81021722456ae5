//! # SetEtherAddress
//!
//! SetEtherAddress(ADDR, ANNO)
//!
//! Sets an Ethernet address annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets the ANNO Ethernet address annotation of each packet to the static
//! address ADDR. An Ethernet address annotation is six bytes of the user
//! annotation area; ANNO is the offset of the first of them (0 to 18).
//! GetEtherAddress fills such an annotation from packet data.
//!
//! Arguments:
//! - `ADDR` (Ethernet address): the address to store.
//! - `ANNO` (user annotation offset, 0 to 18): where the six bytes go.
//!
//! Handlers: `addr` (read/write): the ADDR argument.
//!
//! Example:
//!
//!     ... -> SetEtherAddress(00:01:02:03:04:05, 0) -> ...;

use super::AtomicEther;
use paraclick_packet::anno::USER_ANNO_SIZE;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

/// A six-byte Ethernet address annotation: an offset into the user
/// annotation area with room for six bytes (SetEtherAddress's and
/// GetEtherAddress's `ANNO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtherAnno(pub usize);

impl EtherAnno {
    #[inline]
    pub fn get(self, p: &Packet) -> EtherAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&p.anno().user[self.0..self.0 + 6]);
        EtherAddr(a)
    }

    #[inline]
    pub fn set(self, p: &mut Packet, a: EtherAddr) {
        p.anno_mut().user[self.0..self.0 + 6].copy_from_slice(&a.0);
    }
}

impl FromArg for EtherAnno {
    const WHAT: &'static str = "Ethernet address annotation";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        match usize::from_arg(s, env) {
            Ok(i) if i <= USER_ANNO_SIZE - 6 => Ok(EtherAnno(i)),
            _ => Err(format!(
                "expected {} (a user annotation offset 0..{}), not '{}'",
                Self::WHAT,
                USER_ANNO_SIZE - 6,
                s.trim()
            )),
        }
    }
    fn placeholder() -> Self {
        EtherAnno(0)
    }
}

pub struct SetEtherAddress {
    addr: AtomicEther,
    anno: EtherAnno,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetEtherAddress", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetEtherAddress, String> {
    let mut a = cx.args();
    let addr = a.read_mp::<EtherAddr>("ADDR");
    let anno = a.read_mp::<EtherAnno>("ANNO");
    a.complete()?;
    Ok(SetEtherAddress {
        addr: AtomicEther::new(addr),
        anno,
    })
}

impl Action for SetEtherAddress {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "addr",
        |e, _| e.addr.get().to_string(),
        |e, v, hx| {
            e.addr.set(hx.arg(v)?);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.anno.set(p, self.addr.get());
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn sets_the_annotation_only() {
        let h = harness("SetEtherAddress(0:1:2:3:4:5, 4)", 1);
        h.push(0, vec![pkt(&[9; 20])]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[9; 20]);
        let u = out[0].anno().user;
        assert_eq!(&u[4..10], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(&u[..4], &[0; 4]);
        assert_eq!(&u[10..], &[0; 14]);
        h.write("addr", "a:b:c:d:e:f").unwrap();
        assert_eq!(h.read("addr").unwrap(), "0A-0B-0C-0D-0E-0F");
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(
            &h.output(0)[0].anno().user[4..10],
            &[10, 11, 12, 13, 14, 15]
        );
        assert_err(
            h.write("addr", "bogus"),
            "e.addr: expected Ethernet address, not 'bogus'",
        );
    }

    #[test]
    fn last_offset_and_bad_config() {
        let h = harness("SetEtherAddress(ff:ff:ff:ff:ff:ff, ANNO 18)", 1);
        h.push(0, vec![pkt(&[0])]);
        assert_eq!(&h.output(0)[0].anno().user[18..], &[0xff; 6]);
        assert_err(try_harness("SetEtherAddress(0:1:2:3:4:5, 19)", 1), "e :: SetEtherAddress: ANNO: expected Ethernet address annotation (a user annotation offset 0..18), not '19'");
        // An offset near usize::MAX overflowed the bound check.
        let e = try_harness("SetEtherAddress(0:1:2:3:4:5, 18446744073709551615)", 1);
        assert!(e.err().unwrap().contains("annotation offset"));
        assert_err(
            try_harness("SetEtherAddress(0:1:2:3:4:5)", 1),
            "e :: SetEtherAddress: missing mandatory ANNO argument",
        );
        assert_err(
            try_harness("SetEtherAddress(0:1:2:3:4, 0)", 1),
            "e :: SetEtherAddress: ADDR: expected Ethernet address, not '0:1:2:3:4'",
        );
    }
}
