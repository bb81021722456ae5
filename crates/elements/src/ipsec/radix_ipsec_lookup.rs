//! # RadixIPsecLookup
//!
//! RadixIPsecLookup(ADDR1/MASK1 \[GW1] OUT1 \[SPI1], ADDR2/MASK2 \[GW2] OUT2 \[SPI2], ... \[, keywords SATABLE])
//!
//! RadixIPsecLookup(ADDR/MASK \[GW] OUT \[SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE], ...)
//!
//! IP route lookup that also chooses security associations: the entry
//! point of Click's split IPsec chains.
//!
//! Ports: 1 input, at least 2 outputs. Processing: agnostic.
//!
//! Looks up each packet's destination IP annotation (or, when that is
//! 0.0.0.0, its IP header's destination) by longest-prefix match, sets
//! the annotation to the route's gateway (or to the destination, when the
//! route has none) and emits the packet on the route's output, as
//! RadixIPLookup. As in Click (IPsecRouteTable), outputs 0 and 1 are the
//! IPsec ones:
//!
//! - A route with an SPI (it must lead to output 1, the outbound tunnel
//!   chain) sets the packet's SA annotation to the SA of that SPI in the
//!   IPsecSATable: IPsecESPEncap, IPsecAES / IPsecDES, IPsecAuthHMACSHA1
//!   and IPsecEncap then encrypt with it.
//! - A route to output 0 is this gateway's tunnel endpoint: an ESP packet
//!   for it gets the SA its SPI names (the inbound chain, StripIPHeader,
//!   IPsecAuthHMACSHA1(1), IPsecAES(0), IPsecESPUnencap, verifies and
//!   decrypts with it), and is trimmed to its IP total length (link-layer
//!   padding would otherwise sit where the ICV is expected). An ESP
//!   packet whose SPI is in no SA is dropped and counted in the table's
//!   `unknown_spi`; a packet that is not ESP (or is an ESP fragment, or
//!   malformed) goes to output 2 when there is one (Click sends it to the
//!   host there), else it is dropped (`not_esp`).
//!
//! A route names its SA in one of two ways:
//!
//! - paraclick's: by SPI alone, the SA being in an IPsecSATable (any of
//!   its algorithms);
//! - Click's: inline, `SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE` after the
//!   output: an AES-128-CBC + HMAC-SHA1-96 SA (`aes128-sha1`) with that
//!   SPI (decimal, or hex with `0x`; not 0), the 16-byte encryption and
//!   authentication keys, REPLAY the first sequence number sent (and the
//!   start of the receive window), OOSIZE the anti-replay window (0 to
//!   128). Each key is either 16 characters taken as bytes (what Click's
//!   parser takes) or 32 hex digits, optionally after `0x` (Click itself
//!   rejects those as "key has bad length", although its sample
//!   configuration ipsec-router.click writes them so; paraclick reads
//!   them as the 16 bytes they spell). The element then holds these SAs
//!   as its own table, and the other Click-style IPsec elements of the
//!   configuration use it as they would the only IPsecSATable (a
//!   configuration has either an IPsecSATable or inline SAs, not both).
//!   As in Click, the SA serves both directions: outbound through this
//!   route, inbound for ESP packets carrying its SPI.
//!
//! Click passes a pointer to the SA in the annotations; here the
//! annotation holds the SA's index in the table. Routes are fixed at
//! configuration (no `add` or `remove` handlers).
//!
//! Packets with no route are dropped (counted).
//!
//! Keywords: `SATABLE`: the IPsecSATable (default: the configuration's
//! only one).
//!
//! Handlers:
//! - `table` (read): the routes, one a line, `ADDR/MASK GW OUT [SPI]`.
//! - `lookup` (read with an address parameter): `OUT GW [SPI]`, or -1.
//! - `not_esp` (read): non-ESP packets to output 0 dropped.
//!
//! Example:
//!
//!     sat :: IPsecSATable(0x1001 aes128gcm16 0x..., 0x2002 aes128gcm16 0x...);
//!     rt :: RadixIPsecLookup(192.0.2.1/32 0,             // ESP to us
//!                            10.2.0.0/16 198.51.100.1 1 0x1001, // the tunnel
//!                            10.1.0.0/16 2,              // local site
//!                            198.51.100.1/32 3);         // the peer

use super::sa::SecurityAssociation;
use super::sa::{esp_bounds, esp_spi, parse_hex_key, parse_spi, Alg, DropReason, Integ, SaConfig};
use super::sa_table::{set_sa_anno, state, SaTable, TableRef};
use crate::iproute::lpm::{Lpm, Route};
use crate::iproute::route_table::parse_route;
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, HandlerCx, InitCx, PerThreadCount, Verdict,
};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

#[derive(Clone, Debug)]
struct IpsecRoute {
    addr: u32,
    len: u8,
    gw: u32,
    port: u32,
    spi: Option<u32>,
}

pub struct RadixIPsecLookup {
    lpm: Lpm,
    routes: Vec<IpsecRoute>,
    /// SA index of each route (from its SPI), resolved at initialize.
    sa_index: OnceLock<Vec<Option<u32>>>,
    table: TableRef,
    /// The SAs given inline in Click's syntax, if any.
    inline: Option<Arc<SaTable>>,
    noutputs: usize,
    not_esp: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("RadixIPsecLookup", "1/2-", "a", make).shared(
        "IPsec: one security association table (sequence numbers, replay windows) for all flows",
    )
        .drop_reasons(super::sa::REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RadixIPsecLookup, String> {
    let mut a = cx.args();
    let table: Option<String> = a.read("SATABLE");
    let args = a.rest_all();
    let env = &*cx.env;
    let mut routes: Vec<IpsecRoute> = Vec::new();
    let mut errs = Vec::new();
    let mut inline_sas: Vec<SecurityAssociation> = Vec::new();
    let mut named_spis = 0;
    for (i, text) in args.iter().enumerate() {
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        // ADDR/MASK [GW] OUT, then nothing, an SPI, or Click's five SA words.
        let parsed = [0usize, 1, 5].into_iter().find_map(|extra| {
            let n = words.len().checked_sub(extra)?;
            let r = parse_route(&words[..n].join(" "), env, false)?;
            Some((r, &words[n..]))
        });
        let Some((r, extra)) = parsed else {
            errs.push(format!(
                "route {}: expected 'ADDR/MASK [GATEWAY] OUTPUT [SPI]' or 'ADDR/MASK [GATEWAY] \
                 OUTPUT SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE', not '{text}'",
                i + 1
            ));
            continue;
        };
        let port = match r.port {
            Some(p) if p >= 0 && (p as usize) < cx.noutputs => p as u32,
            _ => {
                errs.push(format!("route {}: bad OUTPUT in '{text}'", i + 1));
                continue;
            }
        };
        let spi = match extra {
            [] => Ok(None),
            [spi] => {
                named_spis += 1;
                parse_spi(spi).map(Some)
            }
            _ => inline_sa(extra, cx.nthreads).map(|sa| {
                let spi = sa.spi;
                inline_sas.push(sa);
                Some(spi)
            }),
        };
        let spi = match spi {
            Ok(s) => s,
            Err(e) => {
                errs.push(format!("route {}: {e}", i + 1));
                continue;
            }
        };
        if spi.is_some() && port != 1 {
            errs.push(format!(
                "route {}: a route with an SPI must lead to output 1 (the tunnel)",
                i + 1
            ));
            continue;
        }
        routes.retain(|o| !(o.addr == r.addr && o.len == r.len));
        routes.push(IpsecRoute {
            addr: r.addr,
            len: r.len,
            gw: r.gw,
            port,
            spi,
        });
    }
    let inline = if inline_sas.is_empty() {
        None
    } else if table.is_some() {
        errs.push("give the SAs inline or in the SATABLE, not both".into());
        None
    } else if named_spis > 0 {
        errs.push("every route with an SPI must give its SA inline when one does".into());
        None
    } else {
        match SaTable::new(inline_sas, cx.nthreads) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => {
                errs.push(e);
                None
            }
        }
    };
    if !errs.is_empty() {
        return Err(errs.join("\n"));
    }
    let mut lpm = Lpm::new();
    for (i, r) in routes.iter().enumerate() {
        // The trie's "port" is the index of our route, which holds the SPI.
        lpm.insert(Route::new(r.addr, r.len, 0, i as u32));
    }
    Ok(RadixIPsecLookup {
        lpm,
        routes,
        sa_index: OnceLock::new(),
        table: match &inline {
            Some(t) => TableRef::fixed(t.clone()),
            None => TableRef::new(table),
        },
        inline,
        noutputs: cx.noutputs,
        not_esp: PerThreadCount::new(cx.nthreads),
    })
}

/// One of Click's 16-byte keys: 16 characters as bytes, or 32 hex digits.
fn click_key(s: &str, what: &str) -> Result<Vec<u8>, String> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if hex.len() == 32 {
        if let Ok(k) = parse_hex_key(hex) {
            return Ok(k);
        }
    }
    if s.len() == 16 {
        return Ok(s.as_bytes().to_vec());
    }
    Err(format!(
        "{what} must be 16 bytes: 16 characters or 32 hex digits, not '{s}'"
    ))
}

/// Click's inline SA: `SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE`.
fn inline_sa(w: &[&str], nthreads: usize) -> Result<SecurityAssociation, String> {
    let [spi, ek, ak, replay, oosize] = w else {
        return Err(format!(
            "expected 'SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE' after the output, not '{}'",
            w.join(" ")
        ));
    };
    let spi = match spi.strip_prefix("0x").or_else(|| spi.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => spi.parse::<u32>(),
    }
    .ok()
    .filter(|&v| v != 0)
    .ok_or_else(|| format!("SPI: expected a nonzero 32-bit number, not '{spi}'"))?;
    let mut key = click_key(ek, "ENCRYPT_KEY")?;
    key.extend(click_key(ak, "AUTH_KEY")?);
    // Click's HMAC-SHA1 key is 16 bytes; the SA takes 20. HMAC pads a key
    // with zeros to the hash's block size, so the 16 bytes followed by 4
    // zeros are the same key.
    key.extend([0u8; 4]);
    let replay: u32 = replay
        .parse()
        .map_err(|_| format!("REPLAY: expected a 32-bit number, not '{replay}'"))?;
    let oosize: u32 = oosize
        .parse()
        .map_err(|_| format!("OOSIZE: expected a number, not '{oosize}'"))?;
    let sa = SecurityAssociation::new(
        &SaConfig {
            spi,
            alg: Alg::AesCbc {
                key_len: 16,
                integ: Integ::Sha1,
            },
            key,
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            replay_window: oosize,
        },
        nthreads,
    )?;
    sa.set_next_seq(u64::from(replay.max(1)));
    Ok(sa)
}

impl RadixIPsecLookup {
    fn route_of(&self, addr: Ipv4Addr) -> Option<(usize, &IpsecRoute)> {
        let h = self.lpm.lookup(u32::from(addr))?;
        let i = h.port as usize;
        self.routes.get(i).map(|r| (i, r))
    }

    fn dump(&self) -> String {
        let mut rs = self.routes.clone();
        rs.sort_by_key(|r| (r.addr, r.len));
        let mut s = String::new();
        for r in rs {
            let _ = write!(s, "{}/{}\t", Ipv4Addr::from(r.addr), r.len);
            if r.gw != 0 {
                let _ = write!(s, "{}\t", Ipv4Addr::from(r.gw));
            } else {
                s.push_str("-\t");
            }
            let _ = write!(s, "{}", r.port);
            if let Some(spi) = r.spi {
                let _ = write!(s, "\t0x{spi:08x}");
            }
            s.push('\n');
        }
        s
    }

    fn lookup_text(&self, v: Option<&str>, hx: &HandlerCx<'_>) -> Result<String, String> {
        let v = v.ok_or("lookup needs an address: 'lookup 10.0.0.1'")?;
        let a: Ipv4Addr = hx.arg(v.trim())?;
        Ok(match self.route_of(a) {
            None => "-1".into(),
            Some((_, r)) => {
                let mut s = r.port.to_string();
                if r.gw != 0 {
                    let _ = write!(s, " {}", Ipv4Addr::from(r.gw));
                }
                if let Some(spi) = r.spi {
                    let _ = write!(s, " 0x{spi:08x}");
                }
                s
            }
        })
    }

    #[inline]
    fn inbound(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        let d = p.data();
        let spi_and_end = esp_spi(d).and_then(|spi| esp_bounds(d).map(|(_, end)| (spi, end)));
        let Ok((spi, end)) = spi_and_end else {
            if self.noutputs > 2 {
                return Verdict::Out(2);
            }
            self.not_esp.inc(t);
            return DropReason::NotEsp.verdict();
        };
        let Some(table) = self.table.get() else {
            return Verdict::Drop;
        };
        match table.index_of(spi) {
            Some(i) => {
                let extra = p.len() - end;
                p.take(extra);
                set_sa_anno(p, i, state::INBOUND);
                Verdict::Out(0)
            }
            None => {
                table.unknown_spi.inc(t);
                DropReason::UnknownSpi.verdict()
            }
        }
    }
}

impl Action for RadixIPsecLookup {
    /// Its inline SAs' table, if it has one, to the elements that use it
    /// as an IPsecSATable.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, RadixIPsecLookup, Arc<SaTable> => |r| r.inline.as_ref()?)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| e.dump()),
        Handler::read_param("lookup", |e, v, hx| e.lookup_text(v, hx)),
        Handler::read("not_esp", |e, _| e.not_esp.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.table.initialize(ix)?;
        let table = self.table.get().ok_or("no IPsecSATable")?;
        let mut idx = Vec::with_capacity(self.routes.len());
        for r in &self.routes {
            idx.push(match r.spi {
                Some(spi) => Some(table.index_of(spi).ok_or_else(|| {
                    format!(
                        "route to output 1 names SPI 0x{spi:08x}, which is in no SA of the table"
                    )
                })?),
                None => None,
            });
        }
        let _ = self.sa_index.set(idx);
        Ok(())
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let mut dst = p.anno().dst_ip;
        if dst.is_unspecified() {
            match p.network_header() {
                Some(h) if h.len() >= 20 => dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]),
                _ => return Verdict::Drop,
            }
        }
        let Some((i, r)) = self.route_of(dst) else {
            return Verdict::DropFor(super::sa::NO_ROUTE);
        };
        p.anno_mut().dst_ip = if r.gw != 0 { Ipv4Addr::from(r.gw) } else { dst };
        if r.port == 0 {
            return self.inbound(cx, p);
        }
        if let Some(Some(sa)) = self.sa_index.get().and_then(|v| v.get(i)) {
            set_sa_anno(p, *sa, 0);
        }
        Verdict::Out(r.port as usize)
    }
}
