//! # IPsecEncap
//!
//! IPsecEncap(PROTO [, SRC, DST, keywords TTL, TOS, DF, SATABLE])
//!
//! Encapsulates packets in an IPv4 header: the outer header of an ESP
//! tunnel, the last step of Click's split outbound IPsec chain.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends an IPv4 header with protocol PROTO (a number, or `esp`, `ah`,
//! `ipip`), source SRC and destination DST, sets the network header
//! annotation on it and the destination IP annotation to DST, as Click's
//! IPsecEncap. When SRC or DST is not given, the packet's SA (see
//! IPsecSATable) supplies its tunnel endpoints, and DST falls back to
//! the destination IP annotation (the gateway RadixIPsecLookup set), as
//! in Click. A packet that ends up without a source or destination is
//! dropped (`no_address`).
//!
//! A packet with an SA annotation must have been through IPsecESPEncap,
//! the cipher and the integrity step (`out_of_order` otherwise); the SA
//! counts it (`packets`, `bytes`: the ESP packet's length) and the SA
//! annotation is cleared. The IP ID is the low 16 bits of the ESP
//! sequence number (otherwise a counter).
//!
//! Keywords: `TTL` (default 250, Click's), `TOS` (default 0), `DF` (bool,
//! default false).
//!
//! Handlers: `src`, `dst` (read), `no_address`, `out_of_order` (read).
//!
//! Example:
//!
//!     ... -> IPsecAuthHMACSHA1(0) -> IPsecEncap(esp, 192.0.2.1) -> [0]rt;

use super::sa;
use super::sa_table::{clear_sa_anno, state, TableRef};
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, Ordering};

pub struct IPsecEncap {
    proto: u8,
    src: Option<Ipv4Addr>,
    dst: Option<Ipv4Addr>,
    ttl: u8,
    tos: u8,
    df: bool,
    table: TableRef,
    id: AtomicU16,
    no_address: PerThreadCount,
    out_of_order: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPsecEncap", "1/1", "a", make)
        .shared("one IP ID sequence for all packets")
        .drop_reasons(super::sa::REASONS)
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn proto(s: &str) -> Result<u8, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = match t.as_str() {
        "ip-in-ip" | "ipv4" => "ipip",
        t => t,
    };
    paraclick_packet::wire::ip_proto::by_name(t)
        .or_else(|| t.parse::<u8>().ok())
        .ok_or_else(|| format!("bad PROTO '{s}' (a number 0-255, esp, ah or ipip)"))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPsecEncap, String> {
    let mut a = cx.args();
    let p: String = a.read_mp("PROTO");
    let src: Option<Ipv4Addr> = a.read_p("SRC");
    let dst: Option<Ipv4Addr> = a.read_p("DST");
    let ttl: u8 = a.read("TTL").unwrap_or(250);
    let tos: u8 = a.read("TOS").unwrap_or(0);
    let df: bool = a.read("DF").unwrap_or(false);
    let table: Option<String> = a.read("SATABLE");
    a.complete()?;
    Ok(IPsecEncap {
        proto: proto(&p)?,
        src,
        dst,
        ttl,
        tos,
        df,
        table: TableRef::new(table),
        id: AtomicU16::new(1),
        no_address: PerThreadCount::new(cx.nthreads),
        out_of_order: PerThreadCount::new(cx.nthreads),
    })
}

fn show(a: Option<Ipv4Addr>) -> String {
    a.map(|a| a.to_string()).unwrap_or_else(|| "-".into())
}

impl Action for IPsecEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("src", |e, _| show(e.src)),
        Handler::read("dst", |e, _| show(e.dst)),
        Handler::read("no_address", |e, _| e.no_address.get().to_string()),
        Handler::read("out_of_order", |e, _| e.out_of_order.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.table.initialize_optional(ix)
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        let sa = match self.table.sa_of(p) {
            Some((_, sa, st)) => {
                if st != state::ENCAP | state::ENCRYPTED | state::AUTHED {
                    self.out_of_order.inc(t);
                    return Verdict::DropFor(sa::OUT_OF_ORDER);
                }
                Some(sa)
            }
            None => None,
        };
        let unset = |a: Ipv4Addr| (!a.is_unspecified()).then_some(a);
        let src = self.src.or_else(|| sa.and_then(|s| unset(s.src)));
        let dst = self
            .dst
            .or_else(|| sa.and_then(|s| unset(s.dst)))
            .or_else(|| unset(p.anno().dst_ip));
        let (Some(src), Some(dst)) = (src, dst) else {
            self.no_address.inc(t);
            return Verdict::DropFor(sa::NO_ADDRESS);
        };
        let total = p.len() + 20;
        if total > 65535 || p.push(20).is_err() {
            self.no_address.inc(t);
            return Verdict::DropFor(sa::NO_ADDRESS);
        }
        let id = match (sa, p.data().get(26..28)) {
            (Some(_), Some(s)) => u16::from_be_bytes([s[0], s[1]]),
            _ => self.id.fetch_add(1, Ordering::Relaxed),
        };
        let d = p.data_mut();
        d[0] = 0x45;
        d[1] = self.tos;
        d[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        d[4..6].copy_from_slice(&id.to_be_bytes());
        d[6..8].copy_from_slice(&(if self.df { 0x4000u16 } else { 0 }).to_be_bytes());
        d[8] = self.ttl;
        d[9] = self.proto;
        d[10..12].fill(0);
        d[12..16].copy_from_slice(&src.octets());
        d[16..20].copy_from_slice(&dst.octets());
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        p.set_network_header(0, 20);
        p.anno_mut().dst_ip = dst;
        if let Some(sa) = sa {
            sa.count_sent(t, total);
            clear_sa_anno(p);
        }
        Verdict::Out(0)
    }
}
