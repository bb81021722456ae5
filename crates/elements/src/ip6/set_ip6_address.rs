//! # SetIP6Address
//!
//! SetIP6Address(ADDR)
//!
//! Sets the IPv6 destination annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets every packet's destination IPv6 address annotation (`DST_IP6`) to
//! ADDR (an IPv6 address or an AddressInfo name).
//!
//! Handlers:
//! - `addr` (read/write): ADDR.
//!
//! Example:
//!
//!     ... -> SetIP6Address(2001:db8::1) -> IP6NDSolicitor(...);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct SetIP6Address {
    hi: AtomicU64,
    lo: AtomicU64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIP6Address", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIP6Address, String> {
    let mut a = cx.args();
    let addr = a.read_mp::<Ipv6Addr>("ADDR");
    a.complete()?;
    let e = SetIP6Address {
        hi: AtomicU64::new(0),
        lo: AtomicU64::new(0),
    };
    e.store(addr);
    Ok(e)
}

impl SetIP6Address {
    fn store(&self, a: Ipv6Addr) {
        let v = u128::from(a);
        self.hi.store((v >> 64) as u64, Ordering::Relaxed);
        self.lo.store(v as u64, Ordering::Relaxed);
    }

    fn load(&self) -> Ipv6Addr {
        let v = (u128::from(self.hi.load(Ordering::Relaxed)) << 64)
            | u128::from(self.lo.load(Ordering::Relaxed));
        Ipv6Addr::from(v)
    }
}

impl Action for SetIP6Address {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "addr",
        |e, _| e.load().to_string(),
        |e, v, hx| {
            e.store(hx.arg(v)?);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.anno_mut().set_dst_ip6(self.load());
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn sets_annotation_and_handler() {
        let h = harness("SetIP6Address(2001:db8::9)", 1);
        h.push(0, vec![pkt(&[0; 10])]);
        assert_eq!(h.output(0)[0].anno().dst_ip6(), a6("2001:db8::9"));
        h.write("addr", "fe80::1").unwrap();
        assert_eq!(h.read("addr").unwrap(), "fe80::1");
        h.push(0, vec![pkt(&[0; 10])]);
        assert_eq!(h.output(0)[0].anno().dst_ip6(), a6("fe80::1"));
        assert_err(
            h.write("addr", "1.2.3.4"),
            "e.addr: expected IPv6 address, not '1.2.3.4'",
        );
        assert_err(
            try_harness("SetIP6Address(1.2.3.4)", 1),
            "e :: SetIP6Address: ADDR: expected IPv6 address, not '1.2.3.4'",
        );
    }
}
