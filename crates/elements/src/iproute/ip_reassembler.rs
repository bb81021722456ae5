//! # IPReassembler
//!
//! IPReassembler([keywords HIMEM, MAX_MEMORY, TIMEOUT])
//!
//! Reassembles fragmented IP packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push.
//!
//! Expects IP packets with the network header set (CheckIPHeader,
//! MarkIPHeader). Packets that are not fragments (MF clear, offset zero)
//! pass to output 0 unchanged. Fragments are held until every byte of their
//! datagram (identified by source, destination, protocol and
//! identification) has arrived, in whatever order; the whole datagram is
//! then emitted on output 0. It is the fragment with offset 0, grown: it
//! keeps that fragment's link header, annotations and IP header (with every
//! option), with MF and the offset cleared, the total length set and the
//! checksum recomputed. The other fragments are freed (counted as drops of
//! this element: packets are conserved, N fragments in, 1 datagram out).
//!
//! Overlapping fragments: data that has arrived is never overwritten; a
//! later fragment only fills the bytes still missing, and a fragment that
//! brings nothing new (a duplicate) is dropped at once. Malformed fragments
//! are dropped, counted: a fragment with MF set whose data is not a
//! multiple of 8 bytes or is empty, one reaching beyond 65535 bytes, a last
//! fragment (MF clear) disagreeing with an earlier one about where the
//! datagram ends, or data beyond that end.
//!
//! A datagram whose fragments have been dormant (no new fragment) for
//! TIMEOUT is given up: if output 1 is connected, one packet holding all
//! its received data at their proper offsets (holes zero-filled) goes there
//! (headed by the lowest-offset fragment's header, MF set, its offset and
//! total length describing that span), for instance to an
//! `ICMPError(ADDR, timeexceeded, reassembly)`; otherwise its fragments are
//! dropped. Timeouts are checked by a timer (every TIMEOUT/3, at most every
//! 10 s) and as fragments arrive.
//!
//! Memory is bounded: held fragments are counted by the size of their
//! buffers plus bookkeeping, and when the total exceeds HIMEM the least
//! recently active datagrams are dropped until it is below 3/4 of HIMEM.
//! Fragments are kept in one table locked per fragment (fragments are the
//! slow path; other packets take no lock).
//!
//! Keyword arguments:
//! - `HIMEM` (unsigned, bytes, default 262144): the memory bound.
//! - `MAX_MEMORY` (unsigned, bytes): the same as HIMEM (paraclick name).
//! - `TIMEOUT` (time, default 30 s): how long an incomplete datagram may
//!   stay dormant.
//!
//! Click's `MAX_MTU_ANNO` is not supported.
//!
//! Handlers (paraclick additions):
//! - `mem_used` (read): bytes of memory held for fragments.
//! - `datagrams` (read): incomplete datagrams held.
//! - `fragments` (read): fragments held.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> r :: IPReassembler -> ...
//!     r[1] -> ICMPError(18.26.4.24, timeexceeded, reassembly) -> ...

use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bookkeeping bytes counted per held fragment and per datagram.
const FRAG_OVERHEAD: usize = 64;
const DATAGRAM_OVERHEAD: usize = 128;
const DEFAULT_HIMEM: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    src: u32,
    dst: u32,
    id: u16,
    proto: u8,
}

struct Frag {
    start: u32,
    end: u32,
    hlen: u32,
    p: Packet,
}

struct Datagram {
    /// Held fragments, in arrival order.
    frags: Vec<Frag>,
    /// Payload byte ranges received, sorted, disjoint, merged.
    covered: Vec<(u32, u32)>,
    /// Payload length, once the last fragment has told.
    total: Option<u32>,
    mem: usize,
    last: Instant,
}

struct State {
    map: HashMap<Key, Datagram>,
    mem: usize,
    next_reap: Instant,
}

pub struct IPReassembler {
    state: Mutex<State>,
    himem: usize,
    timeout: Duration,
    interval: Duration,
    two_outputs: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &[
    "no room",
    "fragment of a failed datagram",
    "expired",
    "memory limit",
    "not a fragment",
    "inconsistent fragment",
    "duplicate fragment",
    "merged into its datagram",
];

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPReassembler", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .per_flow()
        .flow_key(paraclick_runtime::FlowKey::Addresses)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPReassembler, String> {
    let mut a = cx.args();
    let himem = a.read::<u64>("HIMEM");
    let max_memory = a.read::<u64>("MAX_MEMORY");
    let timeout = a
        .read::<Duration>("TIMEOUT")
        .unwrap_or(Duration::from_secs(30));
    let mtu_anno = a.read::<String>("MAX_MTU_ANNO");
    a.complete()?;
    if mtu_anno.is_some() {
        return Err("MAX_MTU_ANNO is not supported".into());
    }
    let himem = max_memory.or(himem).map_or(DEFAULT_HIMEM, |m| m as usize);
    if timeout.is_zero() {
        return Err("TIMEOUT must be positive".into());
    }
    let interval = (timeout / 3).clamp(Duration::from_millis(1), Duration::from_secs(10));
    Ok(IPReassembler {
        state: Mutex::new(State {
            map: HashMap::new(),
            mem: 0,
            next_reap: Instant::now() + interval,
        }),
        himem,
        timeout,
        interval,
        two_outputs: cx.noutputs >= 2,
    })
}

// ----- byte-range sets (sorted, disjoint, merged) -----

fn covers(set: &[(u32, u32)], s: u32, e: u32) -> bool {
    set.iter().any(|&(a, b)| a <= s && e <= b)
}

fn add_range(set: &mut Vec<(u32, u32)>, s: u32, e: u32) {
    if s >= e {
        return;
    }
    let (mut s, mut e) = (s, e);
    // Absorb every range that overlaps or touches [s, e).
    set.retain(|&(a, b)| {
        if b < s || a > e {
            true
        } else {
            s = s.min(a);
            e = e.max(b);
            false
        }
    });
    let i = set.partition_point(|&(a, _)| a < s);
    set.insert(i, (s, e));
}

/// The parts of [s, e) not in `set`.
fn gaps(set: &[(u32, u32)], s: u32, e: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut pos = s;
    for &(a, b) in set {
        if b <= pos {
            continue;
        }
        if a >= e {
            break;
        }
        if a > pos {
            out.push((pos, a.min(e)));
        }
        pos = pos.max(b);
        if pos >= e {
            break;
        }
    }
    if pos < e {
        out.push((pos, e));
    }
    out
}

/// True if the packet's IP header says it is a fragment (quick test).
#[inline]
fn is_fragment(p: &Packet) -> bool {
    p.network_header()
        .and_then(|h| h.get(6..8))
        .is_some_and(|b| u16::from_be_bytes([b[0], b[1]]) & 0x3fff != 0)
}

struct FragInfo {
    key: Key,
    start: u32,
    end: u32,
    hlen: u32,
    more: bool,
}

/// Reads a fragment's header; `None` if it is malformed.
fn frag_info(p: &Packet) -> Option<FragInfo> {
    let h = Ipv4Header::new_checked(p.network_header()?).ok()?;
    let hlen = h.header_len() as u32;
    let start = u32::from(h.frag_offset());
    let plen = u32::from(h.total_len()) - hlen;
    let end = start + plen;
    let more = h.more_frags();
    if more && (plen == 0 || plen & 7 != 0) {
        return None;
    }
    if hlen + end > 65535 {
        return None;
    }
    Some(FragInfo {
        key: Key {
            src: u32::from(h.src_addr()),
            dst: u32::from(h.dst_addr()),
            id: h.ident(),
            proto: h.protocol(),
        },
        start,
        end,
        hlen,
        more,
    })
}

/// Bytes from the network header to the end of a held packet.
fn ip_len(p: &Packet) -> usize {
    p.network_header().map_or(0, |h| h.len())
}

impl IPReassembler {
    /// Builds one packet from `frags`: the fragment at `base` (the first
    /// to arrive with the lowest offset) grown to reach payload offset
    /// `end`, the others' data copied where no earlier-arrived fragment put
    /// data. `complete`: a whole datagram (MF and offset cleared) rather
    /// than a timed-out span (MF set). The other fragments are dropped.
    fn merge(
        cx: &mut Cx<'_>,
        mut frags: Vec<Frag>,
        base: usize,
        end: u32,
        complete: bool,
    ) -> Option<Packet> {
        let b = frags.remove(base);
        let (bstart, bend, bhlen) = (b.start, b.end, b.hlen as usize);
        let mut p = b.p;
        let want = bhlen + (end - bstart) as usize;
        let have = bhlen + (bend - bstart) as usize;
        let ok = want <= 65535 && {
            let extra = ip_len(&p) - have;
            p.take(extra);
            p.put(want - have).is_ok()
        };
        if !ok {
            cx.drop_packet_for(0, p);
            for f in frags {
                cx.drop_packet_for(1, f.p);
            }
            return None;
        }
        let mut done: Vec<(u32, u32)> = Vec::new();
        for (k, f) in frags.iter().enumerate() {
            if k == base {
                add_range(&mut done, bstart, bend);
            }
            let src = f.p.network_header().unwrap_or(&[]);
            for (s, e) in gaps(&done, f.start, f.end.min(end)) {
                let from = f.hlen as usize + (s - f.start) as usize;
                let to = bhlen + (s - bstart) as usize;
                let n = (e - s) as usize;
                if let (Some(src), Some(dst)) = (
                    src.get(from..from + n),
                    p.network_header_mut().and_then(|d| d.get_mut(to..to + n)),
                ) {
                    dst.copy_from_slice(src);
                }
            }
            add_range(&mut done, f.start, f.end);
        }
        if let Some(nh) = p.network_header_mut() {
            let mut h = Ipv4Header::new_unchecked(nh);
            h.set_total_len(want as u16);
            if complete {
                h.set_more_frags(false);
                h.set_frag_offset(0);
            } else {
                h.set_more_frags(true);
            }
            h.fill_checksum();
        }
        for f in frags {
            cx.drop_packet_for(7, f.p);
        }
        Some(p)
    }

    /// Gives up a dormant datagram: one packet of what arrived for output 1,
    /// or drops.
    fn expire(&self, cx: &mut Cx<'_>, d: Datagram, side: &mut Batch) {
        if !self.two_outputs || d.frags.is_empty() {
            for f in d.frags {
                cx.drop_packet_for(2, f.p);
            }
            return;
        }
        let lo = d.frags.iter().map(|f| f.start).min().unwrap_or(0);
        let base = d.frags.iter().position(|f| f.start == lo).unwrap_or(0);
        let hi = d.frags.iter().map(|f| f.end).max().unwrap_or(0);
        if let Some(p) = Self::merge(cx, d.frags, base, hi, false) {
            side.push(p);
        }
    }

    /// Expires every datagram dormant for TIMEOUT.
    fn reap(&self, cx: &mut Cx<'_>, st: &mut State, now: Instant, side: &mut Batch) {
        st.next_reap = now + self.interval;
        let dead: Vec<Key> = st
            .map
            .iter()
            .filter(|(_, d)| now.saturating_duration_since(d.last) >= self.timeout)
            .map(|(k, _)| *k)
            .collect();
        for k in dead {
            if let Some(d) = st.map.remove(&k) {
                st.mem -= d.mem;
                self.expire(cx, d, side);
            }
        }
    }

    /// Drops the least recently active datagrams until memory is below
    /// 3/4 of HIMEM.
    fn shrink(&self, cx: &mut Cx<'_>, st: &mut State) {
        let low = self.himem / 4 * 3;
        while st.mem > low {
            let Some(k) = st.map.iter().min_by_key(|(_, d)| d.last).map(|(k, _)| *k) else {
                break;
            };
            if let Some(d) = st.map.remove(&k) {
                st.mem -= d.mem;
                for f in d.frags {
                    cx.drop_packet_for(3, f.p);
                }
            }
        }
    }

    /// Takes in one fragment; a completed datagram goes to `out`.
    fn fragment(&self, cx: &mut Cx<'_>, p: Packet, out: &mut Batch, side: &mut Batch) {
        let Some(fi) = frag_info(&p) else {
            cx.drop_packet_for(4, p);
            return;
        };
        let now = cx.now();
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        if now >= st.next_reap {
            self.reap(cx, st, now, side);
        }
        let d = st.map.entry(fi.key).or_insert_with(|| Datagram {
            frags: Vec::new(),
            covered: Vec::new(),
            total: None,
            mem: DATAGRAM_OVERHEAD,
            last: now,
        });
        let fresh = d.frags.is_empty() && d.total.is_none();
        if fresh {
            st.mem += DATAGRAM_OVERHEAD;
        }
        // Consistency with what is known of the datagram's end.
        let known_end = d.covered.last().map_or(0, |r| r.1);
        let bad = if fi.more {
            d.total.is_some_and(|t| fi.end > t)
        } else {
            d.total.is_some_and(|t| t != fi.end) || known_end > fi.end
        };
        if bad {
            // (A fresh datagram has nothing to disagree with.)
            cx.drop_packet_for(5, p);
            return;
        }
        d.last = now;
        if !fi.more {
            d.total = Some(fi.end);
        }
        if fi.start == fi.end || covers(&d.covered, fi.start, fi.end) {
            // Nothing new: an empty last fragment (its end is noted) or a
            // duplicate.
            cx.drop_packet_for(6, p);
        } else {
            let m = p.buffer_len() + FRAG_OVERHEAD;
            d.mem += m;
            st.mem += m;
            add_range(&mut d.covered, fi.start, fi.end);
            d.frags.push(Frag {
                start: fi.start,
                end: fi.end,
                hlen: fi.hlen,
                p,
            });
        }
        let complete = match d.total {
            Some(t) => d.covered.len() == 1 && d.covered[0] == (0, t),
            None => false,
        };
        if complete {
            let d = st.map.remove(&fi.key).expect("datagram present");
            st.mem -= d.mem;
            let t = d.total.unwrap_or(0);
            let base = d.frags.iter().position(|f| f.start == 0).unwrap_or(0);
            if let Some(p) = Self::merge(cx, d.frags, base, t, true) {
                out.push(p);
            }
        } else if st.mem > self.himem {
            self.shrink(cx, st);
        }
    }

    /// Processes a batch: (packets for output 0, packets for output 1).
    fn process(&self, cx: &mut Cx<'_>, mut batch: Batch) -> (Batch, Batch) {
        if !batch.iter().any(is_fragment) {
            return (batch, Batch::new());
        }
        let mut out = Batch::new();
        let mut side = Batch::new();
        for p in batch.drain() {
            if is_fragment(&p) {
                self.fragment(cx, p, &mut out, &mut side);
            } else {
                out.push(p);
            }
        }
        (out, side)
    }

    fn stats(&self) -> (usize, usize, usize) {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let frags = st.map.values().map(|d| d.frags.len()).sum();
        (st.mem, st.map.len(), frags)
    }
}

impl Element for IPReassembler {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("mem_used", |e, _| e.stats().0.to_string()),
        Handler::read("datagrams", |e, _| e.stats().1.to_string()),
        Handler::read("fragments", |e, _| e.stats().2.to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.schedule_after(0, self.interval);
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let (out, side) = self.process(cx, batch);
        if !out.is_empty() {
            cx.push(0, out);
        }
        if !side.is_empty() {
            cx.push(1, side);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let batch = cx.pull(0, max)?;
        let (out, side) = self.process(cx, batch);
        if !side.is_empty() {
            cx.push(1, side);
        }
        (!out.is_empty()).then_some(out)
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let mut side = Batch::new();
        {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let now = cx.now();
            self.reap(cx, &mut st, now, &mut side);
        }
        if !side.is_empty() {
            cx.push(1, side);
        }
        cx.schedule_after(0, self.interval);
    }

    fn queued(&self) -> usize {
        self.stats().2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::Rng;
    use crate::test_kit::{harness, header, ip, ip_bytes, ip_packet, try_harness};
    use paraclick_runtime::testing::assert_err;

    /// Fragment `dgram` (a datagram's bytes, 20-byte header) for payload
    /// bytes [s, e), MF as given; `fill` replaces the data when Some.
    fn frag(dgram: &[u8], s: usize, e: usize, mf: bool, fill: Option<u8>) -> Packet {
        let mut v = dgram[..20].to_vec();
        match fill {
            Some(b) => v.extend(std::iter::repeat_n(b, e - s)),
            None => v.extend_from_slice(&dgram[20 + s..20 + e]),
        }
        {
            let mut h = Ipv4Header::new_unchecked(&mut v[..]);
            h.set_total_len((20 + e - s) as u16);
            h.set_frag_offset(s as u16);
            h.set_more_frags(mf);
            h.fill_checksum();
        }
        ip_packet(&[], &v)
    }

    fn datagram(id: u16, n: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8 ^ (id as u8)).collect();
        ip_bytes(ip("1.0.0.1"), ip("2.0.0.2"), 17, id, false, &[], &data)
    }

    fn conserved(h: &paraclick_runtime::testing::Harness, pushed: usize, out: usize) {
        let held: usize = h.read("fragments").unwrap().parse().unwrap();
        assert_eq!(pushed as u64, out as u64 + h.drops() + held as u64);
    }

    #[test]
    fn range_sets() {
        let mut s = Vec::new();
        add_range(&mut s, 10, 20);
        add_range(&mut s, 30, 40);
        add_range(&mut s, 0, 5);
        assert_eq!(s, [(0, 5), (10, 20), (30, 40)]);
        assert!(covers(&s, 12, 20));
        assert!(!covers(&s, 12, 21));
        assert_eq!(gaps(&s, 0, 50), [(5, 10), (20, 30), (40, 50)]);
        assert_eq!(gaps(&s, 12, 18), []);
        assert_eq!(gaps(&s, 3, 12), [(5, 10)]);
        add_range(&mut s, 5, 30);
        assert_eq!(s, [(0, 40)]);
        add_range(&mut s, 40, 48);
        assert_eq!(s, [(0, 48)]);
        add_range(&mut s, 7, 7);
        assert_eq!(s, [(0, 48)]);
    }

    #[test]
    fn non_fragments_pass() {
        let h = harness("IPReassembler", 1);
        let d = datagram(1, 100);
        h.push(
            0,
            vec![ip_packet(&[], &d), crate::test_kit::packet_to("3.3.3.3")],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(h.read("mem_used").unwrap(), "0");
    }

    #[test]
    fn out_of_order_with_duplicates() {
        let h = harness("IPReassembler", 1);
        let d = datagram(7, 100);
        let mut a = frag(&d, 0, 40, true, None);
        a.anno_mut().paint = 3;
        h.push(
            0,
            vec![frag(&d, 80, 100, false, None), frag(&d, 40, 80, true, None)],
        );
        assert_eq!(h.output(0).len(), 0);
        assert_eq!(h.read("datagrams").unwrap(), "1");
        assert_eq!(h.read("fragments").unwrap(), "2");
        assert!(h.read("mem_used").unwrap().parse::<usize>().unwrap() > 0);
        // A duplicate is dropped at once.
        h.push(0, vec![frag(&d, 40, 80, true, None)]);
        assert_eq!(h.drops(), 1);
        h.push(0, vec![a]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(
            out[0].anno().paint,
            3,
            "annotations of the offset-0 fragment"
        );
        assert!(header(&out[0]).verify_checksum());
        assert_eq!(h.read("mem_used").unwrap(), "0");
        assert_eq!(h.read("datagrams").unwrap(), "0");
        conserved(&h, 4, 1);
    }

    #[test]
    fn overlaps_keep_first_data() {
        let h = harness("IPReassembler", 1);
        let d = datagram(9, 64);
        // [16,48) of 0xaa first, then [0,32) real (only [0,16) is new), then
        // [24,64) of 0xbb (only [48,64) is new), then nothing is missing.
        h.push(
            0,
            vec![
                frag(&d, 16, 48, true, Some(0xaa)),
                frag(&d, 0, 32, true, None),
                frag(&d, 24, 64, false, Some(0xbb)),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        let got = header(&out[0]).payload().to_vec();
        assert_eq!(&got[..16], &d[20..36]);
        assert!(got[16..48].iter().all(|&b| b == 0xaa));
        assert!(got[48..].iter().all(|&b| b == 0xbb));
        assert_eq!(header(&out[0]).total_len(), 84);
        conserved(&h, 3, 1);
    }

    #[test]
    fn separate_datagrams_do_not_mix() {
        let h = harness("IPReassembler", 1);
        let d1 = datagram(1, 48);
        let d2 = datagram(2, 48);
        let mut d3 = d1.clone();
        d3[9] = 6; // same id, other protocol
        Ipv4Header::new_unchecked(&mut d3[..]).fill_checksum();
        h.push(
            0,
            vec![
                frag(&d1, 0, 24, true, None),
                frag(&d2, 24, 48, false, None),
                frag(&d3, 0, 24, true, None),
                frag(&d2, 0, 24, true, None),
                frag(&d1, 24, 48, false, None),
            ],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &d2[..]);
        assert_eq!(out[1].data(), &d1[..]);
        assert_eq!(h.read("datagrams").unwrap(), "1");
    }

    #[test]
    fn malformed_fragments_are_dropped() {
        let h = harness("IPReassembler", 1);
        let d = datagram(3, 200);
        // MF with a length that is not a multiple of 8.
        h.push(0, vec![frag(&d, 0, 20, true, None)]);
        assert_eq!(h.drops(), 1);
        // Beyond 65535 bytes.
        let mut big = frag(&d, 0, 16, true, None);
        {
            let nh = big.network_header_mut().unwrap();
            let mut hd = Ipv4Header::new_unchecked(nh);
            hd.set_frag_offset_units(0x1fff);
            hd.fill_checksum();
        }
        h.push(0, vec![big]);
        assert_eq!(h.drops(), 2);
        // Last fragment says 100, a later one claims data past it.
        h.push(
            0,
            vec![
                frag(&d, 80, 100, false, None),
                frag(&d, 96, 120, true, None),
            ],
        );
        assert_eq!(h.drops(), 3);
        // A second last fragment disagreeing about the end.
        h.push(0, vec![frag(&d, 104, 120, false, None)]);
        assert_eq!(h.drops(), 4);
        // Truncated header.
        let mut t = frag(&d, 0, 8, true, None);
        t.take(20);
        h.push(0, vec![t]);
        assert_eq!(h.drops(), 5);
        assert_eq!(h.read("fragments").unwrap(), "1");
        assert_err(
            try_harness("IPReassembler(MAX_MTU_ANNO 20)", 1),
            "e :: IPReassembler: MAX_MTU_ANNO is not supported",
        );
        assert_err(
            try_harness("IPReassembler(TIMEOUT 0)", 1),
            "e :: IPReassembler: TIMEOUT must be positive",
        );
        assert_err(
            try_harness("IPReassembler(HIMEM x)", 1),
            "e :: IPReassembler: HIMEM: expected unsigned integer",
        );
    }

    /// The element in simulated time (the test moves the clock).
    fn sim(decl: &str, nout: usize) -> paraclick_runtime::testing::Harness {
        paraclick_runtime::testing::Harness::simulated(&crate::test_kit::reg(), decl, 1, nout)
            .unwrap()
    }

    #[test]
    fn timeout_sends_the_span_to_output_1() {
        let d = datagram(5, 96);
        let other = datagram(6, 32);
        // Simulated time. Dormant 1 ns less than TIMEOUT: kept (any
        // fragment arriving makes the element look for dormant ones).
        let h = sim("IPReassembler(TIMEOUT 30ms)", 2);
        h.push(
            0,
            vec![frag(&d, 56, 80, true, None), frag(&d, 16, 40, true, None)],
        );
        h.advance(Duration::from_millis(30) - Duration::from_nanos(1));
        h.push(0, vec![frag(&other, 0, 16, true, None)]);
        assert!(h.output(1).is_empty(), "given up before TIMEOUT");
        assert_eq!(h.read("datagrams").unwrap(), "2");
        // Dormant for TIMEOUT: its span goes to output 1.
        let h = sim("IPReassembler(TIMEOUT 30ms)", 2);
        h.push(
            0,
            vec![frag(&d, 56, 80, true, None), frag(&d, 16, 40, true, None)],
        );
        h.advance(Duration::from_millis(30));
        h.push(0, vec![frag(&other, 0, 16, true, None)]);
        let side = h.output(1);
        assert_eq!(side.len(), 1);
        let hd = header(&side[0]);
        assert_eq!(hd.frag_offset(), 16);
        assert!(hd.more_frags());
        assert!(hd.verify_checksum());
        assert_eq!(hd.total_len(), 20 + 64);
        let got = hd.payload();
        assert_eq!(&got[..24], &d[36..60]);
        assert!(got[24..40].iter().all(|&b| b == 0), "hole is zeroed");
        assert_eq!(&got[40..64], &d[76..100]);
        assert_eq!(h.read("datagrams").unwrap(), "1");
        conserved(&h, 3, 1);
        // With one output, dormant fragments are dropped.
        let h = sim("IPReassembler(TIMEOUT 30ms)", 1);
        h.push(
            0,
            vec![frag(&d, 0, 16, true, None), frag(&d, 32, 48, true, None)],
        );
        h.advance(Duration::from_millis(30));
        h.push(0, vec![frag(&other, 0, 16, true, None)]);
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("datagrams").unwrap(), "1");
        let mem: usize = h.read("mem_used").unwrap().parse().unwrap();
        assert!(mem < 4096, "timed-out memory freed ({mem})");
    }

    #[test]
    fn memory_is_bounded() {
        let h = harness("IPReassembler(MAX_MEMORY 30000)", 1);
        let mut pushed = 0;
        for id in 0..100u16 {
            let d = datagram(id, 64);
            h.push(0, vec![frag(&d, 0, 32, true, None)]);
            pushed += 1;
            let mem: usize = h.read("mem_used").unwrap().parse().unwrap();
            assert!(mem <= 30000, "mem {mem}");
        }
        assert!(h.drops() > 50);
        conserved(&h, pushed, 0);
        // The most recent datagrams survive and complete.
        let d = datagram(99, 64);
        h.push(0, vec![frag(&d, 32, 64, false, None)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &d[..]);
    }

    #[test]
    fn link_header_and_options_of_first_fragment() {
        let h = harness("IPReassembler", 1);
        let opts = [131, 7, 4, 9, 9, 9, 9, 0];
        let data: Vec<u8> = (0..64).collect();
        let d = ip_bytes(ip("1.0.0.1"), ip("2.0.0.2"), 6, 77, false, &opts, &data);
        // First fragment: full header with options and a MAC header.
        let mut f0 = d[..28].to_vec();
        f0.extend_from_slice(&data[..32]);
        {
            let mut hd = Ipv4Header::new_unchecked(&mut f0[..]);
            hd.set_total_len(60);
            hd.set_more_frags(true);
            hd.fill_checksum();
        }
        // Second: options dropped (as a fragmenter may), 20-byte header.
        let mut f1 = d[..20].to_vec();
        f1.extend_from_slice(&data[32..]);
        {
            let mut hd = Ipv4Header::new_unchecked(&mut f1[..]);
            hd.set_header_len(20);
            hd.set_total_len(52);
            hd.set_frag_offset(32);
            hd.fill_checksum();
        }
        let mac = [0x11; 14];
        h.push(0, vec![ip_packet(&[0x22; 14], &f1), ip_packet(&mac, &f0)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].data()[..14], &mac);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(&out[0].data()[14..], &d[..]);
    }

    /// IPFragmenter then IPReassembler give back the datagram, byte for
    /// byte, for random sizes, MTUs, options, orders and duplicates.
    #[test]
    fn fragment_then_reassemble_round_trip() {
        let mut rng = Rng::new(1812);
        for round in 0..150 {
            let mtu = 68 + rng.below(1500);
            let n = 1 + rng.below(9000);
            let with_opts = rng.below(3) == 0;
            let opts: &[u8] = if with_opts {
                &[131, 7, 4, 1, 2, 3, 4, 7, 3, 4, 1, 148, 4, 0, 0, 0]
            } else {
                &[]
            };
            let data: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
            let id = rng.next_u32() as u16;
            let d = ip_bytes(ip("10.0.0.1"), ip("10.9.9.9"), 17, id, false, opts, &data);
            let fr = harness(&format!("IPFragmenter({mtu})"), 1);
            fr.push(0, vec![ip_packet(&[], &d)]);
            let mut frags = fr.output(0);
            assert!(frags.iter().all(|p| p.len() <= mtu));
            if d.len() > mtu {
                assert!(frags.len() >= 2, "round {round}");
            }
            // Shuffle, and duplicate a few.
            for i in (1..frags.len()).rev() {
                let j = rng.below(i + 1);
                frags.swap(i, j);
            }
            let ndup = if frags.len() >= 2 { rng.below(3) } else { 0 };
            for _ in 0..ndup {
                let k = rng.below(frags.len());
                let c = frags[k].clone_packet().unwrap();
                frags.insert(rng.below(frags.len() + 1), c);
            }
            let pushed = frags.len();
            let re = harness("IPReassembler(HIMEM 10000000)", 1);
            // One by one, and in batches.
            if round % 2 == 0 {
                for f in frags {
                    re.push(0, vec![f]);
                }
            } else {
                re.push(0, frags);
            }
            let out = re.output(0);
            assert_eq!(out.len(), 1, "round {round}: mtu {mtu} n {n}");
            assert_eq!(out[0].data(), &d[..], "round {round}: mtu {mtu} n {n}");
            conserved(&re, pushed, 1);
        }
    }

    #[test]
    fn pull_mode() {
        let conf = "q :: Queue(100); r :: IPReassembler;
                    Idle -> q -> r -> u :: Unqueue -> Discard;";
        let router = paraclick_runtime::Router::from_str(conf, &crate::registry(), 1)
            .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
        let d = datagram(11, 48);
        let plain = datagram(12, 10);
        let b = Batch::from(vec![
            frag(&d, 24, 48, false, None),
            ip_packet(&[], &plain),
            frag(&d, 0, 24, true, None),
        ]);
        router.push_into("q", 0, b).unwrap();
        let got = router.pull_from("r", 0, 32).unwrap().unwrap();
        let got: Vec<Vec<u8>> = got.iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(got, [plain.clone(), d.clone()]);
        assert!(router.pull_from("r", 0, 32).unwrap().is_none());
    }
}
