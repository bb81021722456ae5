//! # IPsecESPUnencap
//!
//! IPsecESPUnencap([keywords SATABLE])
//!
//! Removes the ESP header and trailer, the last step of Click's split
//! inbound IPsec chain.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects data at the ESP header of a packet that IPsecAuthHMACSHA1 (or
//! IPsecAuthHMACSHA256) verified and IPsecAES or IPsecDES decrypted, with
//! the SA annotation RadixIPsecLookup set from its SPI (see
//! IPsecSATable). Checks the trailer: padding bytes 1, 2, 3, ... that fit
//! (`bad_padding`), next header 4 and a sound inner IPv4 header
//! (`not_esp`), both counted in the SA. The output is the inner packet,
//! trimmed to its total length, with the network header annotation set,
//! the destination IP annotation set to its destination (so it can be
//! routed again), and the SA annotation cleared; the SA counts it
//! (`packets`, `bytes`).
//!
//! Unlike Click's IPsecESPUnencap, the anti-replay check is done (by the
//! step that authenticates, before decryption, RFC 4303 §3.4.3), and a
//! packet that was not verified and decrypted is refused
//! (`out_of_order`), as is one without an SA annotation (`no_sa`).
//!
//! Handlers: `no_sa`, `out_of_order` (read).
//!
//! Example:
//!
//!     rt[0] -> StripIPHeader -> IPsecAuthHMACSHA1(1) -> IPsecAES(0)
//!           -> IPsecESPUnencap -> CheckIPHeader -> [0]rt;

use super::sa;
use super::sa_table::{clear_sa_anno, state, TableRef};
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};
use std::net::Ipv4Addr;

pub struct IPsecESPUnencap {
    table: TableRef,
    no_sa: PerThreadCount,
    out_of_order: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPsecESPUnencap", "1/1", "a", make)
        .shared("ESP: one security association's replay window for all flows")
        .drop_reasons(super::sa::REASONS)
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecESPUnencap, String> {
    let mut a = cx.args();
    let table: Option<String> = a.read("SATABLE");
    a.complete()?;
    Ok(IPsecESPUnencap {
        table: TableRef::new(table),
        no_sa: PerThreadCount::new(cx.nthreads),
        out_of_order: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for IPsecESPUnencap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("no_sa", |e, _| e.no_sa.get().to_string()),
        Handler::read("out_of_order", |e, _| e.out_of_order.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.table.initialize(ix)
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        let Some((_, sa, st)) = self.table.sa_of(p) else {
            self.no_sa.inc(t);
            return Verdict::DropFor(sa::NO_SA);
        };
        let need = state::INBOUND | state::VERIFIED | state::DECRYPTED;
        if st & need != need {
            self.out_of_order.inc(t);
            return Verdict::DropFor(sa::OUT_OF_ORDER);
        }
        match sa.esp_unencap(t, p) {
            Ok(()) => {
                clear_sa_anno(p);
                let d = p.data();
                p.anno_mut().dst_ip = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
                Verdict::Out(0)
            }
            Err(r) => r.verdict(),
        }
    }
}
