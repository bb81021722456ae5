//! # ICMPRewriter
//!
//! ICMPRewriter(MAPS [, keywords DST_ANNO, REPLY_ANNO])
//!
//! Rewrites ICMP error packets about flows other rewriters translate.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! MAPS is a space-separated list of rewriter elements (IPRewriter,
//! TCPRewriter, UDPRewriter, IPAddrRewriter, IPAddrPairRewriter,
//! ICMPPingRewriter). An ICMP error (destination unreachable, source
//! quench, redirect, time exceeded, parameter problem) quotes the header
//! of the packet that caused it. If that packet's flow was translated by
//! one of the MAPS, the error is made to fit the untranslated flow: the
//! quoted header's addresses and ports (or echo identifier) are mapped
//! back, with its checksums, and the error's own destination (and source,
//! if it was the quoted packet's destination) follow. The ICMP checksum is
//! recomputed, the IP header checksum updated. Rewritten errors go to
//! output 0; other packets to output 1 unchanged, or are dropped if it is
//! not connected. The packet's IP header annotation must be set.
//!
//! Keywords:
//! - `DST_ANNO` (boolean, default true): set the destination address
//!   annotation of rewritten errors to their new destination.
//! - `REPLY_ANNO` (one-byte annotation, as Paint's `ANNO`): an error about
//!   a flow's forward packets travels as the flow's replies do; set this
//!   annotation to the value the rewriter (given the same REPLY_ANNO)
//!   keeps for the flow's replies.
//!
//! Handlers:
//! - `rewritten` (read): errors rewritten.
//!
//! Example:
//!
//!     rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, drop);
//!     icmp_errors -> ICMPRewriter(rw) -> to_private;

use super::flow::{ip_offset, rewrite, FlowId, PacketFlow, ICMP, TCP, UDP};
use super::rewriter::Rewriter;
use super::table::FlowTable;
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

pub struct ICMPRewriter {
    names: Vec<String>,
    maps: OnceLock<Vec<Arc<FlowTable>>>,
    dst_anno: bool,
    reply_anno: Option<crate::standard::paint::AnnoByte>,
    noutputs: usize,
    rewritten: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no mapping"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMPRewriter", "1/1-2", "h/h", make)
        .drop_reasons(DROP_REASONS)
        .shared("NAT: one port allocator and mapping table for all flows (and both directions)")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ICMPRewriter, String> {
    let noutputs = cx.noutputs;
    let mut a = cx.args();
    let maps: String = a.read_mp("MAPS");
    let dst_anno = a.read::<bool>("DST_ANNO").unwrap_or(true);
    let reply_anno = a.read("REPLY_ANNO");
    a.complete()?;
    let names: Vec<String> = maps.split_whitespace().map(String::from).collect();
    if names.is_empty() {
        return Err("MAPS: at least one rewriter required".into());
    }
    Ok(ICMPRewriter {
        names,
        maps: OnceLock::new(),
        dst_anno,
        reply_anno,
        noutputs,
        rewritten: PerThreadCount::new(cx.nthreads),
    })
}

#[inline]
fn rd16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}

fn rd32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

impl ICMPRewriter {
    fn unmatched(&self) -> Verdict {
        if self.noutputs > 1 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        }
    }

    fn try_rewrite(&self, p: &mut Packet, now: u64) -> Option<()> {
        let maps = self.maps.get()?;
        let ip = ip_offset(p)?;
        let d = p.data();
        let h = d.get(ip..ip + 20)?;
        let hlen = usize::from(h[0] & 15) * 4;
        if h[9] != ICMP || hlen < 20 || u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0 {
            return None;
        }
        let icmp = ip + hlen;
        let ty = *d.get(icmp)?;
        if !matches!(ty, 3 | 4 | 5 | 11 | 12) {
            return None;
        }
        let inner = icmp + 8;
        let ih = d.get(inner..inner + 20)?;
        let ihlen = usize::from(ih[0] & 15) * 4;
        if ih[0] >> 4 != 4 || ihlen < 20 {
            return None;
        }
        let iproto = ih[9];
        let ith = inner + ihlen;
        let (sport, dport) = match iproto {
            TCP | UDP => {
                d.get(ith + 3)?;
                (rd16(d, ith), rd16(d, ith + 2))
            }
            ICMP => {
                // Only errors about echo requests/replies carry an identifier.
                let t = *d.get(ith)?;
                if t != 8 && t != 0 {
                    return None;
                }
                d.get(ith + 5)?;
                let id = rd16(d, ith + 4);
                (id, id)
            }
            _ => (0, 0),
        };
        let f = FlowId {
            saddr: rd32(d, inner + 12),
            daddr: rd32(d, inner + 16),
            sport,
            dport,
        };
        let reply = f.reverse();
        let (new_reply, anno) = maps.iter().find_map(|t| {
            let g = t.guard();
            t.lookup(iproto, reply, now, &g).map(|r| {
                let anno = (r.dir == 1).then_some(r.flow.reply_anno);
                (reply.with(r.to(), r.mask()), anno)
            })
        })?;
        let new_inner = new_reply.reverse();
        let outer_src = rd32(d, ip + 12);
        let outer_dst = rd32(d, ip + 16);
        let total = usize::from(rd16(d, ip + 2)).clamp(hlen, d.len() - ip);
        let end = ip + total;
        let d = p.data_mut();
        // The quoted packet (its own checksums, ports or identifier).
        let pf = PacketFlow {
            proto: iproto,
            id: f,
            ip: inner,
            th: if matches!(iproto, TCP | UDP | ICMP) {
                ith
            } else {
                0
            },
            tcp_flags: 0,
            has_data: false,
        };
        rewrite(&mut d[..end], &pf, new_inner);
        // The error's own addresses.
        let mut of = f.reverse();
        of.saddr = outer_src;
        of.daddr = outer_dst;
        let mut nf = of;
        if outer_dst == f.saddr {
            nf.daddr = new_inner.saddr;
        }
        if outer_src == f.daddr {
            nf.saddr = new_inner.daddr;
        }
        let opf = PacketFlow {
            proto: ICMP,
            id: FlowId {
                sport: 0,
                dport: 0,
                ..of
            },
            ip,
            th: 0,
            tcp_flags: 0,
            has_data: false,
        };
        rewrite(
            d,
            &opf,
            FlowId {
                sport: 0,
                dport: 0,
                ..nf
            },
        );
        d[icmp + 2] = 0;
        d[icmp + 3] = 0;
        let c = checksum::checksum(&d[icmp..end]);
        d[icmp + 2..icmp + 4].copy_from_slice(&c.to_be_bytes());
        if self.dst_anno {
            p.anno_mut().dst_ip = Ipv4Addr::from(nf.daddr);
        }
        if let (Some(a), Some(v)) = (self.reply_anno, anno) {
            a.set(p, v);
        }
        Some(())
    }
}

impl Action for ICMPRewriter {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("rewritten", |e, _| {
        e.rewritten.get().to_string()
    })];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let mut maps = Vec::new();
        for n in &self.names {
            let i = ix
                .find(n)
                .ok_or_else(|| format!("MAPS: no element named '{n}'"))?;
            let rw = ix
                .element::<Rewriter>(i)
                .ok_or_else(|| format!("MAPS: '{n}' is not a rewriter"))?;
            maps.push(rw.table_arc());
        }
        let _ = self.maps.set(maps);
        Ok(())
    }

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.try_rewrite(p, super::rewriter::clock_ms(cx)) {
            Some(()) => {
                self.rewritten.inc(cx.thread());
                Verdict::Out(0)
            }
            None => self.unmatched(),
        }
    }
}
