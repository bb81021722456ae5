//! # TruncateIPPayload
//!
//! TruncateIPPayload([LENGTH, TRANSPORT, keyword EXTRA_LENGTH])
//!
//! Limits payload length.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Shortens IP packets to have a payload of at most LENGTH bytes. Normally
//! the payload begins at the end of the transport header (TCP, UDP and
//! ICMP headers are understood; for TCP the data offset field gives the
//! header length). If TRANSPORT is false, or the packet is a later
//! fragment (nonzero fragment offset) or another protocol, the payload
//! begins at the end of the IP header. IP packets are those with a network
//! header annotation; non-IP packets are truncated to at most LENGTH
//! bytes. Headers are not changed (the IP length fields still give the
//! original lengths), as for Truncate.
//!
//! Arguments:
//! - `LENGTH` (unsigned integer, default 0): the payload bytes to keep.
//! - `TRANSPORT` (boolean, default true): whether the payload starts after
//!   the transport header.
//! - `EXTRA_LENGTH` (boolean, default true): add the removed bytes to the
//!   packets' extra length annotations.
//!
//! Handlers: `length` (read/write): the LENGTH argument.
//!
//! Example: keep only headers for a trace
//!
//!     ... -> CheckIPHeader(14) -> TruncateIPPayload -> ToDump(hdrs.pcap);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct TruncateIPPayload {
    len: AtomicUsize,
    transport: bool,
    extra: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("TruncateIPPayload", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TruncateIPPayload, String> {
    let mut a = cx.args();
    let len = a.read_p::<usize>("LENGTH").unwrap_or(0);
    let transport = a.read_p::<bool>("TRANSPORT").unwrap_or(true);
    let extra = a.read("EXTRA_LENGTH").unwrap_or(true);
    a.complete()?;
    Ok(TruncateIPPayload {
        len: AtomicUsize::new(len),
        transport,
        extra,
    })
}

impl TruncateIPPayload {
    /// Where the payload starts, in bytes from the packet's data start
    /// (0 for non-IP packets). May lie past the end of a short packet.
    #[inline]
    fn payload_start(&self, p: &Packet) -> usize {
        let Some(net) = p.network_header_offset() else {
            return 0;
        };
        let Ok(n) = usize::try_from(net) else {
            return 0;
        };
        let d = p.data();
        let Some(&vihl) = d.get(n) else {
            return n;
        };
        let hlen = p
            .network_header_length()
            .unwrap_or(usize::from(vihl & 0x0f) * 4);
        let start = n + hlen;
        if !self.transport || d.len() < n + 20 {
            return start;
        }
        let frag = u16::from_be_bytes([d[n + 6], d[n + 7]]) & 0x1fff;
        if frag != 0 {
            return start;
        }
        start
            + match d[n + 9] {
                6 => d.get(start + 12).map_or(20, |b| usize::from(b >> 4) * 4),
                1 | 17 => 8,
                _ => 0,
            }
    }
}

impl Action for TruncateIPPayload {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "length",
        |e, _| e.len.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.len.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let keep = self
            .payload_start(p)
            .saturating_add(self.len.load(Ordering::Relaxed));
        if p.len() > keep {
            let cut = p.len() - keep;
            p.take(cut);
            if self.extra {
                let a = p.anno_mut();
                a.extra_length = a.extra_length.saturating_add(cut as u32);
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn keeps_transport_headers() {
        let h = harness("TruncateIPPayload", 1);
        let udp = Ip::new("1.0.0.1", "2.0.0.2", 0).udp(1, 2, b"hello").bytes();
        let tcp = Ip::new("1.0.0.1", "2.0.0.2", 0)
            .tcp_full(1, 2, 3, 4, 0x10, 100, &[], b"data")
            .bytes();
        let icmp = Ip::new("1.0.0.1", "2.0.0.2", 0)
            .icmp(8, 0, [0, 1, 0, 2], b"ping data")
            .bytes();
        let other = Ip::new("1.0.0.1", "2.0.0.2", 47).payload(b"gre").bytes();
        h.push(
            0,
            vec![marked(&udp), marked(&tcp), marked(&icmp), marked(&other)],
        );
        let out = h.output(0);
        assert_eq!(out[0].data(), &udp[..28]);
        assert_eq!(out[0].anno().extra_length, 5);
        assert_eq!(out[1].len(), 40);
        assert_eq!(out[2].data(), &icmp[..28]);
        assert_eq!(out[3].data(), &other[..20]);
        assert_eq!(out[3].anno().extra_length, 3);
    }

    #[test]
    fn tcp_options_length_and_handler() {
        let mut tcp = Ip::new("1.0.0.1", "2.0.0.2", 0)
            .tcp(1, 2, 3, 4, 0x10, 100)
            .bytes();
        // Data offset 8 words: 12 bytes of options, then 6 of data.
        tcp[32] = 8 << 4;
        tcp.extend_from_slice(&[1; 18]);
        let h = harness("TruncateIPPayload(2)", 1);
        h.push(0, vec![marked(&tcp)]);
        assert_eq!(h.output(0)[0].data(), &tcp[..20 + 32 + 2]);
        h.write("length", "100").unwrap();
        h.push(0, vec![marked(&tcp)]);
        assert_eq!(h.output(0)[0].data(), &tcp[..]);
        assert_eq!(h.read("length").unwrap(), "100");
    }

    #[test]
    fn transport_false_fragments_and_offsets() {
        let udp = Ip::new("1.0.0.1", "2.0.0.2", 0).udp(1, 2, b"hello").bytes();
        let h = harness("TruncateIPPayload(1, false)", 1);
        h.push(0, vec![marked(&udp)]);
        assert_eq!(h.output(0)[0].data(), &udp[..21]);

        let frag = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .frag(3)
            .payload(b"0123456789")
            .bytes();
        let h = harness("TruncateIPPayload(EXTRA_LENGTH false)", 1);
        // Behind an Ethernet header, with IP options.
        let opt = Ip::new("1.0.0.1", "2.0.0.2", 0)
            .options(&[1, 1, 1, 0])
            .udp(1, 2, b"abc")
            .bytes();
        let mut framed = vec![0u8; 14];
        framed.extend_from_slice(&opt);
        let mut p = pkt(&framed);
        p.set_network_header(14, 24);
        h.push(0, vec![marked(&frag), p]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &frag[..20]);
        assert_eq!(out[0].anno().extra_length, 0);
        assert_eq!(out[1].len(), 14 + 24 + 8);
    }

    #[test]
    fn non_ip_and_short_packets() {
        let h = harness("TruncateIPPayload(3)", 1);
        let mut short = marked(&Ip::new("1.0.0.1", "2.0.0.2", 6).bytes());
        short.take(15);
        h.push(0, vec![pkt(&[9; 10]), pkt(&[9; 2]), short]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[9; 3]);
        assert_eq!(out[1].data(), &[9; 2]);
        assert_eq!(out[2].len(), 5, "short IP header kept, not grown");
        assert_err(
            try_harness("TruncateIPPayload(x)", 1),
            "e :: TruncateIPPayload: LENGTH: expected unsigned integer",
        );
        assert_err(
            try_harness("TruncateIPPayload(1, maybe)", 1),
            "e :: TruncateIPPayload: TRANSPORT: expected boolean (true or false)",
        );
    }
}
