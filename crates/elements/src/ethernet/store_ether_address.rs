//! # StoreEtherAddress
//!
//! StoreEtherAddress(ADDR, OFFSET)
//!
//! Stores an Ethernet address in packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic.
//!
//! Writes the 6-byte Ethernet address ADDR into each packet at OFFSET,
//! which is a byte offset or `src` (6, the Ethernet source) or `dst` (0,
//! the destination). A packet too short to hold the address at OFFSET
//! goes to output 1 if there is one, else is dropped.
//!
//! Arguments:
//! - `ADDR` (Ethernet address, or an AddressInfo or interface name).
//! - `OFFSET` (`src`, `dst` or an integer).
//!
//! Handlers: `addr` (read/write).
//!
//! Example:
//!
//!     ... -> StoreEtherAddress(00:01:02:03:04:05, src) -> ToDevice(eth0);

use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::RwLock;

pub struct StoreEtherAddress {
    addr: RwLock<EtherAddr>,
    offset: usize,
    has_reject: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["rejected"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StoreEtherAddress", "1/1-2", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StoreEtherAddress, String> {
    let has_reject = cx.noutputs > 1;
    let mut a = cx.args();
    let addr = a.read_mp::<EtherAddr>("ADDR");
    let off = a.read_mp::<String>("OFFSET");
    a.complete()?;
    let offset = match off.as_str() {
        "src" => 6,
        "dst" => 0,
        o => o
            .parse::<usize>()
            .map_err(|_| format!("OFFSET: expected 'src', 'dst' or an offset, not '{o}'"))?,
    };
    Ok(StoreEtherAddress {
        addr: RwLock::new(addr),
        offset,
        has_reject,
    })
}

impl Action for StoreEtherAddress {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "addr",
        |e, _| e.addr.read().unwrap_or_else(|x| x.into_inner()).to_string(),
        |e, v, hx| {
            *e.addr.write().unwrap_or_else(|x| x.into_inner()) = hx.arg(v)?;
            Ok(())
        },
    )];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < self.offset + 6 {
            return if self.has_reject {
                Verdict::Out(1)
            } else {
                Verdict::DropFor(0)
            };
        }
        let a = *self.addr.read().unwrap_or_else(|x| x.into_inner());
        p.data_mut()[self.offset..self.offset + 6].copy_from_slice(&a.0);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn writes_at_src_dst_or_offset() {
        let h = harness("StoreEtherAddress(0:1:2:3:4:5, src)", 1);
        h.push(0, vec![pkt(&[0xFF; 14]), pkt(&[0xFF; 11])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].data()[..6], &[0xFF; 6]);
        assert_eq!(&out[0].data()[6..12], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("addr").unwrap(), "00-01-02-03-04-05");

        let h = harness("StoreEtherAddress(0:1:2:3:4:5, dst)", 2);
        h.write("addr", "a:b:c:d:e:f").unwrap();
        h.push(0, vec![pkt(&[0xFF; 14]), pkt(&[0xFF; 5])]);
        assert_eq!(&h.output(0)[0].data()[..6], &[10, 11, 12, 13, 14, 15]);
        assert_eq!(h.output(1).len(), 1, "too short: output 1");

        let h = harness("StoreEtherAddress(0:1:2:3:4:5, 2)", 1);
        h.push(0, vec![pkt(&[0xFF; 8])]);
        assert_eq!(h.output(0)[0].data(), &[0xFF, 0xFF, 0, 1, 2, 3, 4, 5]);

        assert_err(
            try_harness("StoreEtherAddress(0:1:2:3:4:5, middle)", 1),
            "e :: StoreEtherAddress: OFFSET: expected 'src', 'dst' or an offset, not 'middle'",
        );
        assert_err(
            try_harness("StoreEtherAddress(nonsense, src)", 1),
            "e :: StoreEtherAddress: ADDR: expected Ethernet address, not 'nonsense'",
        );
        assert_err(
            try_harness("StoreEtherAddress(0:1:2:3:4:5)", 1),
            "e :: StoreEtherAddress: missing mandatory OFFSET argument",
        );
    }
}
