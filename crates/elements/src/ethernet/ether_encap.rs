//! # EtherEncap
//!
//! EtherEncap(ETHERTYPE, SRC, DST)
//!
//! Encapsulates packets in an Ethernet header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends to each packet the 14-byte Ethernet header its arguments
//! specify and marks it as the packet's link-layer header. ETHERTYPE is
//! given in host order (`0x0800` for IP).
//!
//! Arguments:
//! - `ETHERTYPE` (integer, 0 to 0xFFFF): the Ethernet type.
//! - `SRC` (Ethernet address): the source address.
//! - `DST` (Ethernet address): the destination address.
//!
//! For IP packets you probably want ARPQuerier instead.
//!
//! Handlers:
//! - `src` (read/write): the SRC address.
//! - `dst` (read/write): the DST address.
//! - `ethertype` (read/write): the ETHERTYPE, in decimal.
//!
//! Example:
//!
//!     EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)

use super::AtomicEther;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU16, Ordering};

pub struct EtherEncap {
    ethertype: AtomicU16,
    src: AtomicEther,
    dst: AtomicEther,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("EtherEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Prepends(14))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EtherEncap, String> {
    let mut a = cx.args();
    let ethertype = a.read_mp::<u16>("ETHERTYPE");
    let src = a.read_mp::<EtherAddr>("SRC");
    let dst = a.read_mp::<EtherAddr>("DST");
    a.complete()?;
    Ok(EtherEncap {
        ethertype: AtomicU16::new(ethertype),
        src: AtomicEther::new(src),
        dst: AtomicEther::new(dst),
    })
}

/// Prepends an Ethernet header; false if no buffer could hold it.
#[inline]
pub(crate) fn encap(p: &mut Packet, dst: EtherAddr, src: EtherAddr, ethertype: u16) -> bool {
    if p.push(14).is_err() {
        return false;
    }
    // One length check for the whole header (the push made room for it).
    let Some(h) = p.data_mut().first_chunk_mut::<14>() else {
        return false;
    };
    h[0..6].copy_from_slice(&dst.0);
    h[6..12].copy_from_slice(&src.0);
    h[12..14].copy_from_slice(&ethertype.to_be_bytes());
    p.set_mac_header(0);
    true
}

impl Action for EtherEncap {
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
        Handler::rw(
            "ethertype",
            |e, _| e.ethertype.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.ethertype.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let ty = self.ethertype.load(Ordering::Relaxed);
        if encap(p, self.dst.get(), self.src.get(), ty) {
            Verdict::Out(0)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn prepends_header() {
        let h = harness("EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1);
        h.push(0, vec![pkt(&[0x45, 0, 0, 20]), pkt(&[])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].data(),
            &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0, 0x45, 0, 0, 20]
        );
        assert_eq!(out[0].mac_header_offset(), Some(0));
        assert_eq!(out[1].data(), &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn handlers_change_the_header() {
        let h = harness("EtherEncap(2054, 00:01:02:03:04:05, ff:ff:ff:ff:ff:ff)", 1);
        assert_eq!(h.read("src").unwrap(), "00-01-02-03-04-05");
        assert_eq!(h.read("dst").unwrap(), "FF-FF-FF-FF-FF-FF");
        assert_eq!(h.read("ethertype").unwrap(), "2054");
        h.write("dst", "0a:0b:0c:0d:0e:0f").unwrap();
        h.write("ethertype", "0x88b5").unwrap();
        assert_err(
            h.write("src", "nonsense"),
            "e.src: expected Ethernet address, not 'nonsense'",
        );
        assert_err(
            h.write("ethertype", "70000"),
            "e.ethertype: 70000 out of range",
        );
        h.push(0, vec![pkt(&[9])]);
        let out = h.output(0);
        assert_eq!(
            out[0].data(),
            &[10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 0x88, 0xb5, 9]
        );
    }

    #[test]
    fn bad_configuration() {
        assert_err(
            try_harness("EtherEncap(0x0800, 1:1:1:1:1:1)", 1),
            "e :: EtherEncap: missing mandatory DST argument",
        );
        assert_err(
            try_harness("EtherEncap(0x10000, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1),
            "e :: EtherEncap: ETHERTYPE: 0x10000 out of range",
        );
        assert_err(
            try_harness("EtherEncap(0x0800, 1:1:1:1:1, 2:2:2:2:2:2)", 1),
            "e :: EtherEncap: SRC: expected Ethernet address, not '1:1:1:1:1'",
        );
    }
}
