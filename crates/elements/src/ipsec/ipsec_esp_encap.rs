//! # IPsecESPEncap
//!
//! IPsecESPEncap([SPI, keywords SATABLE])
//!
//! Adds the ESP header and trailer (RFC 4303), the first step of Click's
//! split outbound IPsec chain.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects an IPv4 packet at the data start and an SA annotation from
//! RadixIPsecLookup (see IPsecSATable); without one, the SA whose SPI is
//! the SPI argument, when given. Prepends the ESP header (the SA's SPI and
//! its next sequence number, from 1; with several threads each takes
//! numbers from a block of 16 it reserved, so numbers have gaps and never
//! repeat, see IPsecESPTunnelEncap) and the IV (AES-GCM: the 64-bit sequence counter, RFC
//! 4106; CBC: the counter encrypted under a random per-SA key), and
//! appends the default padding 1, 2, 3, ... up to the SA cipher's block
//! (Click's element pads to 8 bytes for DES; here to 16 for AES-CBC, 8 for
//! 3DES, 4 for GCM), the pad length and the next header 4 (IPv4).
//! Encryption and the ICV are the next elements' work: IPsecAES or
//! IPsecDES, then IPsecAuthHMACSHA1 or IPsecAuthHMACSHA256.
//!
//! Packets without an SA (`no_sa`), already past this step
//! (`out_of_order`), not IPv4, or whose SA's sequence numbers are used up
//! are dropped and counted (the last two in the SA's counters, see
//! IPsecSATable).
//!
//! Click's IPsecESPEncap knows only DES's 8-byte blocks and a fixed
//! 8-byte IV; the algorithms here are the SA table's (AES-GCM, AES-CBC,
//! 3DES-CBC).
//!
//! Handlers: `no_sa`, `out_of_order` (read): drops by reason.
//!
//! Example:
//!
//!     rt[1] -> IPsecESPEncap -> IPsecAES(1) -> IPsecAuthHMACSHA1(0)
//!           -> IPsecEncap(50, 192.0.2.1) -> ...

use super::sa;
use super::sa::parse_spi;
use super::sa_table::{set_sa_anno, set_state, state, TableRef};
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};
use std::sync::OnceLock;

pub struct IPsecESPEncap {
    table: TableRef,
    spi: Option<u32>,
    default_sa: OnceLock<Option<u32>>,
    no_sa: PerThreadCount,
    out_of_order: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPsecESPEncap", "1/1", "a", make)
        .shared("ESP: one security association's sequence numbers for all flows")
        .drop_reasons(super::sa::REASONS)
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecESPEncap, String> {
    let mut a = cx.args();
    let spi: Option<String> = a.read_p("SPI");
    let table: Option<String> = a.read("SATABLE");
    a.complete()?;
    let spi = spi.map(|s| parse_spi(&s)).transpose()?;
    Ok(IPsecESPEncap {
        table: TableRef::new(table),
        spi,
        default_sa: OnceLock::new(),
        no_sa: PerThreadCount::new(cx.nthreads),
        out_of_order: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for IPsecESPEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("no_sa", |e, _| e.no_sa.get().to_string()),
        Handler::read("out_of_order", |e, _| e.out_of_order.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.table.initialize(ix)?;
        let d = match self.spi {
            Some(spi) => Some(
                self.table
                    .get()
                    .and_then(|t| t.index_of(spi))
                    .ok_or_else(|| format!("SPI 0x{spi:08x} is in no SA of the table"))?,
            ),
            None => None,
        };
        let _ = self.default_sa.set(d);
        Ok(())
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        if super::sa_table::sa_anno(p).is_none() {
            match self.default_sa.get().copied().flatten() {
                Some(i) => set_sa_anno(p, i, 0),
                None => {
                    self.no_sa.inc(t);
                    return Verdict::DropFor(sa::NO_SA);
                }
            }
        }
        let Some((_, sa, st)) = self.table.sa_of(p) else {
            self.no_sa.inc(t);
            return Verdict::DropFor(sa::NO_SA);
        };
        if st != 0 {
            self.out_of_order.inc(t);
            return Verdict::DropFor(sa::OUT_OF_ORDER);
        }
        match sa.esp_encap(t, p) {
            Ok(()) => {
                set_state(p, state::ENCAP);
                Verdict::Out(0)
            }
            Err(r) => r.verdict(),
        }
    }
}
