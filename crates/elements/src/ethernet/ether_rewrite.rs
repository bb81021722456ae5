//! # EtherRewrite
//!
//! EtherRewrite(SRC, DST)
//!
//! Rewrites the source and destination Ethernet addresses.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Overwrites the source and destination addresses of each packet's
//! Ethernet header (at the start of the packet) with SRC and DST; the
//! Ethernet type is left untouched. Useful when a link has a single
//! possible next hop. Packets shorter than an Ethernet header are dropped.
//!
//! Arguments:
//! - `SRC` (Ethernet address): the new source address.
//! - `DST` (Ethernet address): the new destination address.
//!
//! Handlers:
//! - `src` (read/write): the SRC address.
//! - `dst` (read/write): the DST address.
//!
//! Example:
//!
//!     EtherRewrite(1:1:1:1:1:1, 2:2:2:2:2:2)

use super::AtomicEther;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct EtherRewrite {
    src: AtomicEther,
    dst: AtomicEther,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("EtherRewrite", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EtherRewrite, String> {
    let mut a = cx.args();
    let src = a.read_mp::<EtherAddr>("SRC");
    let dst = a.read_mp::<EtherAddr>("DST");
    a.complete()?;
    Ok(EtherRewrite {
        src: AtomicEther::new(src),
        dst: AtomicEther::new(dst),
    })
}

impl Action for EtherRewrite {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| e.src.get().to_string(),
            |e, v, hx| {
                e.src.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| e.dst.get().to_string(),
            |e, v, hx| {
                e.dst.set(hx.arg(v)?);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < 14 {
            return Verdict::DropFor(0);
        }
        let h = p.data_mut();
        h[0..6].copy_from_slice(&self.dst.get().0);
        h[6..12].copy_from_slice(&self.src.get().0);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn rewrites_addresses_keeps_type() {
        let h = harness("EtherRewrite(1:1:1:1:1:1, 2:2:2:2:2:2)", 1);
        let f = ether_frame(eth("9:9:9:9:9:9"), eth("8:8:8:8:8:8"), 0x0806, &[7, 7]);
        h.push(0, vec![pkt(&f), pkt(&[0; 13])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].data(),
            &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 6, 7, 7]
        );
        assert_eq!(h.drops(), 1);
        h.write("src", "3:3:3:3:3:3").unwrap();
        assert_eq!(h.read("src").unwrap(), "03-03-03-03-03-03");
        assert_eq!(h.read("dst").unwrap(), "02-02-02-02-02-02");
        h.push(0, vec![pkt(&f)]);
        assert_eq!(
            &h.output(0)[0].data()[..12],
            &[2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3]
        );
    }
}
