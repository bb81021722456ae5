//! # IPFragmenter
//!
//! IPFragmenter(MTU [, keywords HONOR_DF, VERBOSE, HEADROOM])
//!
//! Fragments large IP packets (RFC 791).
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! Expects IP packets with the network header set (CheckIPHeader,
//! MarkIPHeader). A packet whose IP part (from the network header to the
//! end) is at most MTU bytes goes to output 0 unchanged. A larger packet
//! whose don't-fragment bit (DF) is clear is split into fragments, emitted
//! on output 0 in order, first fragment first. A larger packet with DF set
//! goes to output 1, ordinarily an `ICMPError(ADDR, unreachable, needfrag)`
//! (dropped, counted, if output 1 is not connected); see HONOR_DF.
//!
//! Fragments follow RFC 791: each carries as much data as fits in MTU in a
//! multiple of 8 bytes (the last one the rest), its offset (added to the
//! packet's own, so fragments can be fragmented again), MF on all but the
//! last (which keeps the packet's MF), its own total length and header
//! checksum. The first fragment carries every option; later ones only the
//! options whose copied flag is set (such as source routes), padded with
//! end-of-options bytes. Every fragment gets the packet's annotations; the
//! first fragment is the original packet, cut short, so it keeps any link
//! header in front of the IP header, while later fragments start at their
//! IP header (Strip link headers before IPFragmenter). Bytes after the IP
//! total length (link-layer padding) are not copied. A packet that cannot
//! be fragmented (MTU below its header length plus 8, or a malformed
//! header) is dropped, counted.
//!
//! Keyword arguments:
//! - `HONOR_DF` (boolean, default true): if false, ignore the DF bit and
//!   fragment every packet larger than MTU.
//! - `VERBOSE` (boolean, default false): print a message for every packet
//!   sent to output 1 because of DF (otherwise only for the first 5).
//! - `HEADROOM` (unsigned): headroom of the second and later fragments
//!   (default: the packet pool's default headroom, room for an Ethernet
//!   header and more).
//!
//! Handlers:
//! - `fragments` (read): fragments emitted (every piece of every packet
//!   fragmented, the first included).
//! - `drops` (read): packets too large for MTU that had DF set (sent to
//!   output 1).
//!
//! Example:
//!
//!     ... -> fr :: IPFragmenter(1500) -> Queue(200) -> ...
//!     fr[1] -> ICMPError(18.26.4.24, unreachable, needfrag) -> ...

use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{
    ClassSpec, ConfigCx, Cx, Element, Handler, Hop, PerThreadCount, RoutingElement,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// Default headroom of later fragments (the pool's).
const DEFAULT_HEADROOM: usize = 128;

pub struct IPFragmenter {
    mtu: usize,
    honor_df: bool,
    verbose: bool,
    headroom: usize,
    fragments: PerThreadCount,
    drops: PerThreadCount,
    df_messages: AtomicU64,
    /// Whether output 1 (packets with DF set) is connected.
    df_output: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::routing("IPFragmenter", "1/1-2", "h", make)
        .stateless()
        .drop_reasons(REASONS)
}

/// Why IPFragmenter drops a packet (its `drop_reasons`).
const REASONS: &[&str] = &[
    "DF set",
    "bad IP header",
    "MTU too small",
    "out of packet buffers",
];
const DF_SET: u8 = 0;
const BAD_HEADER: u8 = 1;
const MTU_TOO_SMALL: u8 = 2;
const NO_BUFFERS: u8 = 3;

fn make(cx: &mut ConfigCx<'_>) -> Result<IPFragmenter, String> {
    let mut a = cx.args();
    let mtu = a.read_mp::<u32>("MTU") as usize;
    let honor_df = a.read::<bool>("HONOR_DF").unwrap_or(true);
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let headroom = a.read::<u32>("HEADROOM").map(|h| h as usize);
    a.complete()?;
    if mtu < 8 {
        return Err(format!(
            "MTU {mtu} is too small (at least 8, and 28 to fragment anything)"
        ));
    }
    if headroom.is_some_and(|h| h > 65535) {
        return Err("HEADROOM too large".into());
    }
    Ok(IPFragmenter {
        mtu,
        honor_df,
        verbose,
        headroom: headroom.unwrap_or(DEFAULT_HEADROOM),
        fragments: PerThreadCount::new(cx.nthreads),
        drops: PerThreadCount::new(cx.nthreads),
        df_messages: AtomicU64::new(0),
        df_output: cx.noutputs > 1,
    })
}

/// Length of the IP part of a packet: from the network header (or the
/// data start, if none is set) to the end.
#[inline]
fn ip_len(p: &Packet) -> usize {
    p.network_len().unwrap_or_else(|| p.len())
}

/// The options of `opts` whose copied flag is set, in order, padded with
/// end-of-options bytes to a multiple of 4: (buffer, length).
fn copied_options(opts: &[u8]) -> ([u8; 40], usize) {
    let mut out = [0u8; 40];
    let mut n = 0;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,  // end of option list
            1 => i += 1, // no-operation: not copied
            kind => {
                let Some(&l) = opts.get(i + 1) else { break };
                let l = usize::from(l);
                if l < 2 || i + l > opts.len() {
                    break; // malformed: copy nothing more
                }
                if kind & 0x80 != 0 {
                    out[n..n + l].copy_from_slice(&opts[i..i + l]);
                    n += l;
                }
                i += l;
            }
        }
    }
    (out, n.div_ceil(4) * 4)
}

enum Outcome {
    /// Fragmented: the pieces went into the output batch.
    Done,
    /// DF set: to output 1.
    DontFragment(Packet),
    /// Cannot be fragmented: drop, for this reason.
    Bad(Packet, u8),
}

impl IPFragmenter {
    /// Splits `p` (larger than the MTU) into fragments appended to `out`.
    fn fragment(&self, cx: &mut Cx<'_>, mut p: Packet, out: &mut Batch) -> Outcome {
        let (hlen, total, flags_df, more, off_units) = {
            let Some(nh) = p.network_header() else {
                return Outcome::Bad(p, BAD_HEADER);
            };
            let Ok(h) = Ipv4Header::new_checked(nh) else {
                return Outcome::Bad(p, BAD_HEADER);
            };
            (
                h.header_len(),
                usize::from(h.total_len()),
                h.dont_frag(),
                h.more_frags(),
                usize::from(h.frag_offset_units()),
            )
        };
        if total <= self.mtu {
            // Only link-layer padding made it too long: drop the padding.
            let extra = ip_len(&p) - total;
            p.take(extra);
            out.push(p);
            return Outcome::Done;
        }
        if flags_df && self.honor_df {
            return Outcome::DontFragment(p);
        }
        if self.mtu < hlen + 8 {
            return Outcome::Bad(p, MTU_TOO_SMALL);
        }
        let first_len = (self.mtu - hlen) & !7;
        let payload_len = total - hlen;
        let (later_opts, later_olen) = {
            let nh = p.network_header().unwrap_or(&[]);
            copied_options(nh.get(20..hlen).unwrap_or(&[]))
        };
        let later_hlen = 20 + later_olen;
        let later_len = (self.mtu - later_hlen) & !7;
        // Later fragments first (they copy from the packet), into `rest`.
        let mut rest = Batch::new();
        let mut pos = first_len;
        while pos < payload_len {
            let len = later_len.min(payload_len - pos);
            let last = pos + len == payload_len;
            let Some(mut q) = Packet::make(self.headroom, later_hlen + len, 0) else {
                // Pool exhausted: the datagram is lost.
                cx.drop_batch_for(NO_BUFFERS, rest);
                return Outcome::Bad(p, NO_BUFFERS);
            };
            {
                let nh = p.network_header().unwrap_or(&[]);
                let d = q.data_mut();
                d[..20].copy_from_slice(&nh[..20]);
                d[20..later_hlen].copy_from_slice(&later_opts[..later_olen]);
                d[later_hlen..].copy_from_slice(&nh[hlen + pos..hlen + pos + len]);
                let mut h = Ipv4Header::new_unchecked(&mut d[..]);
                h.set_header_len(later_hlen);
                h.set_total_len((later_hlen + len) as u16);
                h.set_frag_offset_units((off_units + pos / 8) as u16);
                h.set_more_frags(more || !last);
                h.fill_checksum();
            }
            *q.anno_mut() = *p.anno();
            q.set_trace(p.trace());
            q.set_network_header(0, later_hlen);
            rest.push(q);
            pos += len;
        }
        // The first fragment is the packet itself, cut short.
        let keep = hlen + first_len;
        let extra = ip_len(&p) - keep;
        p.take(extra);
        if let Some(nh) = p.network_header_mut() {
            let mut h = Ipv4Header::new_unchecked(nh);
            h.set_total_len(keep as u16);
            h.set_more_frags(true);
            h.fill_checksum();
        }
        self.fragments.add(cx.thread(), 1 + rest.len() as u64);
        out.push(p);
        out.append(&mut rest);
        Outcome::Done
    }

    #[cold]
    fn df_message(&self, cx: &Cx<'_>, p: &Packet) {
        let n = self.df_messages.fetch_add(1, Ordering::Relaxed);
        if self.verbose || n < 5 {
            let dst = p
                .network_header()
                .filter(|h| h.len() >= 20)
                .map(|h| format!("{}.{}.{}.{}", h[16], h[17], h[18], h[19]))
                .unwrap_or_default();
            eprintln!(
                "{}: packet to {dst} too large for MTU {} with DF set",
                cx.element_name(),
                self.mtu
            );
        }
    }
}

impl Element for IPFragmenter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("fragments", |e, _| e.fragments.get().to_string()),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
    ];

    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        self.push(cx, port, Batch::one(p))
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        // The longest packet against the MTU: no early exit, so the loop
        // has no branch per packet (batches over the MTU are rare).
        if batch.iter().fold(0, |m, p| m.max(ip_len(p))) <= self.mtu {
            if !batch.is_empty() {
                cx.push(0, batch);
            }
            return;
        }
        let mut out = Batch::new();
        let mut df = Batch::new();
        for p in batch.drain() {
            if ip_len(&p) <= self.mtu {
                out.push(p);
                continue;
            }
            match self.fragment(cx, p, &mut out) {
                Outcome::Done => {}
                Outcome::DontFragment(p) => {
                    self.drops.inc(cx.thread());
                    self.df_message(cx, &p);
                    df.push(p);
                }
                Outcome::Bad(p, reason) => cx.drop_packet_for(reason, p),
            }
        }
        if !out.is_empty() {
            cx.push(0, out);
        }
        if !df.is_empty() {
            if self.df_output {
                cx.push(1, df);
            } else {
                cx.drop_batch_for(DF_SET, df);
            }
        }
    }
}

// A packet that fits is only a choice of output: its hop runs in the
// framework's single-packet loop; one to fragment comes to `push_packet`.
impl RoutingElement for IPFragmenter {
    #[inline]
    fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
        if ip_len(p) <= self.mtu {
            Hop::Out(0)
        } else {
            Hop::Push
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::{harness, header, ip, ip_bytes, ip_packet, try_harness};
    use paraclick_packet::wire::checksum;
    use paraclick_runtime::testing::assert_err;

    /// Loose source route (copied), record route (not copied), NOP,
    /// router alert (copied), EOL: 24 bytes of options.
    fn options() -> Vec<u8> {
        let mut o = vec![131, 11, 4, 1, 2, 3, 4, 5, 6, 7, 8]; // LSRR, 2 slots
        o.extend_from_slice(&[7, 7, 4, 0, 0, 0, 0]); // RR, 1 slot
        o.push(1); // NOP
        o.extend_from_slice(&[148, 4, 0, 0]); // router alert
        o.push(0); // EOL
        o
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    fn frag_fields(p: &Packet) -> (usize, usize, bool, usize) {
        let h = header(p);
        (
            h.header_len(),
            usize::from(h.frag_offset()),
            h.more_frags(),
            usize::from(h.total_len()),
        )
    }

    #[test]
    fn small_packets_pass_unchanged() {
        let h = harness("IPFragmenter(1500)", 1);
        let bytes = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            5,
            true,
            &[],
            &payload(1480),
        );
        h.push(0, vec![ip_packet(&[], &bytes)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &bytes[..]);
        assert_eq!(h.read("fragments").unwrap(), "0");
    }

    /// A batch whose last packet alone is over the MTU: the packets before
    /// it pass unchanged and in order, that one is fragmented.
    #[test]
    fn one_long_packet_at_the_end_of_a_batch_is_fragmented() {
        let h = harness("IPFragmenter(576)", 1);
        let short = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &[],
            &payload(556),
        );
        let long = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            2,
            false,
            &[],
            &payload(557),
        );
        let mut v: Vec<Packet> = (0..7).map(|_| ip_packet(&[], &short)).collect();
        v.push(ip_packet(&[], &long));
        h.push(0, v);
        let out = h.output(0);
        assert_eq!(out.len(), 9);
        for q in &out[..7] {
            assert_eq!(q.data(), &short[..]);
        }
        assert_eq!(frag_fields(&out[7]), (20, 0, true, 572));
        assert_eq!(frag_fields(&out[8]), (20, 552, false, 25));
        assert_eq!(h.read("fragments").unwrap(), "2");
    }

    #[test]
    fn fragments_with_offsets_flags_and_checksums() {
        let h = harness("IPFragmenter(576)", 1);
        let data = payload(1400);
        let bytes = ip_bytes(ip("1.0.0.1"), ip("2.0.0.2"), 17, 0x1234, false, &[], &data);
        let mut p = ip_packet(&[], &bytes);
        p.anno_mut().paint = 7;
        p.anno_mut().dst_ip = ip("9.9.9.9");
        h.push(0, vec![p]);
        let out = h.output(0);
        // 556 bytes of data fit in 576 - 20 = 556: 552 (multiple of 8).
        let want = [(0, 552, true), (552, 552, true), (1104, 296, false)];
        assert_eq!(out.len(), want.len());
        let mut joined = Vec::new();
        for (q, &(off, len, mf)) in out.iter().zip(&want) {
            assert!(q.len() <= 576);
            let hdr = header(q);
            assert_eq!(frag_fields(q), (20, off, mf, 20 + len));
            assert!(hdr.verify_checksum());
            assert_eq!(hdr.ident(), 0x1234);
            assert_eq!(hdr.src_addr(), ip("1.0.0.1"));
            assert_eq!(hdr.protocol(), 17);
            assert!(!hdr.dont_frag());
            assert_eq!(q.anno().paint, 7);
            assert_eq!(q.anno().dst_ip, ip("9.9.9.9"));
            assert_eq!(q.network_header_offset(), Some(0));
            assert_eq!(q.network_header_length(), Some(20));
            joined.extend_from_slice(hdr.payload());
        }
        assert_eq!(joined, data);
        assert_eq!(h.read("fragments").unwrap(), "3");
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn options_copied_only_when_copy_bit_set() {
        let h = harness("IPFragmenter(200)", 1);
        let opts = options();
        let data = payload(500);
        let bytes = ip_bytes(ip("1.0.0.1"), ip("2.0.0.2"), 6, 9, false, &opts, &data);
        h.push(0, vec![ip_packet(&[], &bytes)]);
        let out = h.output(0);
        // First: 44-byte header, (200-44)&!7 = 152 bytes. Later: LSRR (11) +
        // router alert (4) = 15, padded to 16: 36-byte header, 160 bytes.
        let first = header(&out[0]);
        assert_eq!(first.header_len(), 44);
        assert_eq!(first.options(), &opts[..]);
        assert_eq!(first.payload().len(), 152);
        let mut later_opts = vec![131, 11, 4, 1, 2, 3, 4, 5, 6, 7, 8, 148, 4, 0, 0, 0];
        later_opts.truncate(16);
        for q in &out[1..] {
            let hq = header(q);
            assert_eq!(hq.header_len(), 36);
            assert_eq!(hq.options(), &later_opts[..]);
            assert!(hq.verify_checksum());
            assert!(q.len() <= 200);
        }
        let offs: Vec<_> = out.iter().map(|q| frag_fields(q).1).collect();
        assert_eq!(offs, [0, 152, 312, 472]);
        let mut joined = Vec::new();
        for q in &out {
            joined.extend_from_slice(header(q).payload());
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn df_goes_to_output_1() {
        let h = harness("IPFragmenter(500)", 2);
        let big = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            true,
            &[],
            &payload(600),
        );
        let small = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            2,
            true,
            &[],
            &payload(100),
        );
        h.push(0, vec![ip_packet(&[], &big), ip_packet(&[], &small)]);
        let o1 = h.output(1);
        assert_eq!(o1.len(), 1);
        assert_eq!(o1[0].data(), &big[..]);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.read("fragments").unwrap(), "0");
        // Without output 1, DF packets are dropped (counted).
        let h = harness("IPFragmenter(500)", 1);
        h.push(0, vec![ip_packet(&[], &big)]);
        assert_eq!(h.output(0).len(), 0);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.read("drop_reasons").unwrap(), "DF set 1\n");
    }

    #[test]
    fn honor_df_false_fragments_anyway() {
        let h = harness("IPFragmenter(500, HONOR_DF false)", 2);
        let big = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            true,
            &[],
            &payload(600),
        );
        h.push(0, vec![ip_packet(&[], &big)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert!(header(&out[0]).dont_frag());
        assert_eq!(h.output(1).len(), 0);
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn link_header_stays_on_first_fragment_and_padding_goes() {
        let h = harness("IPFragmenter(300, HEADROOM 40)", 1);
        let data = payload(400);
        let mut bytes = ip_bytes(ip("1.0.0.1"), ip("2.0.0.2"), 17, 1, false, &[], &data);
        let ip_total = bytes.len();
        bytes.extend_from_slice(&[0xee; 6]); // padding after the datagram
        let mac = [0xaa; 14];
        h.push(0, vec![ip_packet(&mac, &bytes)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(&out[0].data()[..14], &mac);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].len(), 14 + 20 + 280);
        assert_eq!(out[1].len(), 20 + 120);
        assert_eq!(out[1].headroom(), 40);
        assert_eq!(20 + 280 + 120, ip_total);
        // Small but padded past the MTU: the padding is trimmed, no fragments.
        let mut small = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &[],
            &payload(270),
        );
        let want = small.clone();
        small.extend_from_slice(&[0; 20]);
        h.push(0, vec![ip_packet(&[], &small)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &want[..]);
    }

    #[test]
    fn fragments_of_a_fragment_keep_offsets_and_mf() {
        let h = harness("IPFragmenter(100)", 1);
        let mut bytes = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &[],
            &payload(160),
        );
        {
            let mut hd = Ipv4Header::new_unchecked(&mut bytes[..]);
            hd.set_frag_offset(800);
            hd.set_more_frags(true);
            hd.fill_checksum();
        }
        h.push(0, vec![ip_packet(&[], &bytes)]);
        let f: Vec<_> = h.output(0).iter().map(frag_fields).collect();
        assert_eq!(f, [(20, 800, true, 100), (20, 880, true, 100)]);
    }

    #[test]
    fn unfragmentable_and_malformed_are_dropped() {
        // MTU 30 leaves 10 bytes after a 20-byte header: 8 per fragment.
        let h = harness("IPFragmenter(30)", 1);
        let opts = options();
        let bytes = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &opts,
            &payload(40),
        );
        h.push(0, vec![ip_packet(&[], &bytes)]);
        assert_eq!(h.output(0).len(), 0);
        assert_eq!(h.drops(), 1);
        // Total length beyond the packet.
        let mut bad = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &[],
            &payload(40),
        );
        bad[2] = 0x10;
        h.push(0, vec![ip_packet(&[], &bad)]);
        assert_eq!(h.drops(), 2);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "bad IP header 1\nMTU too small 1\n"
        );
        // A plain 60-byte packet works: 8-byte pieces.
        let ok = ip_bytes(
            ip("1.0.0.1"),
            ip("2.0.0.2"),
            17,
            1,
            false,
            &[],
            &payload(40),
        );
        h.push(0, vec![ip_packet(&[], &ok)]);
        assert_eq!(h.output(0).len(), 5);
        assert_err(
            try_harness("IPFragmenter()", 1),
            "e :: IPFragmenter: missing mandatory MTU argument",
        );
        assert_err(
            try_harness("IPFragmenter(4)", 1),
            "e :: IPFragmenter: MTU 4 is too small (at least 8, and 28 to fragment anything)",
        );
        assert_err(
            try_harness("IPFragmenter(1500, FOO 1)", 1),
            "e :: IPFragmenter: unknown keyword FOO",
        );
    }

    #[test]
    fn copied_options_parser() {
        assert_eq!(copied_options(&[]).1, 0);
        let (o, n) = copied_options(&[1, 1, 131, 3, 4, 0]);
        assert_eq!(&o[..n], &[131, 3, 4, 0]);
        // Malformed length stops copying.
        let (o, n) = copied_options(&[137, 3, 4, 131, 1, 0]);
        assert_eq!(&o[..n], &[137, 3, 4, 0]);
        assert_eq!(checksum::sum(&o[n..]), 0);
    }
}
