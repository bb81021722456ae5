//! # StatelessTCPResponder
//!
//! StatelessTCPResponder([DATA, keyword MSS])
//!
//! Answers TCP segments as a server that sends DATA, keeping no state.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Each input packet is a TCP segment (its IP header annotation set, as
//! CheckIPHeader or MarkIPHeader leave it); its output is the reply a TCP
//! server would send on a connection that delivers DATA and closes,
//! computed from that segment alone, so the element needs no connection
//! table and any number of clients may connect at once. Click ships this
//! class without documentation (and with no ports); this is paraclick's
//! reading of its idea, answering a TCP segment with the stateless reply
//! that carries DATA.
//!
//! The server's initial sequence number is a fixed function of the
//! connection's addresses and ports, so every later segment of the
//! connection says, by its acknowledgment number, how much of DATA the
//! client has received. The replies:
//!
//! - a SYN (without ACK): SYN ACK, acknowledging the SYN, with an MSS
//!   option announcing MSS;
//! - a segment with ACK whose acknowledgment lies in DATA: the next
//!   segment of DATA from the acknowledged point (at most MSS bytes, and
//!   no more than the client's window unless the window is 0, when the
//!   reply is a bare ACK), with FIN when it reaches the end of DATA;
//! - an acknowledgment of all of DATA but not of the FIN: FIN ACK;
//! - after the FIN is acknowledged, an ACK for a segment that carries
//!   data or a FIN; a bare acknowledgment of the FIN needs no answer and
//!   is dropped (`nothing to answer`);
//! - an acknowledgment outside DATA and its FIN (not this server's
//!   connection): RST, with the sequence number the segment acknowledged,
//!   as TCP answers a segment for no connection.
//!
//! Every reply acknowledges the client's sequence number plus its data
//! and FIN. Replies are new 20-byte-header IPv4 datagrams (TTL 64, DF)
//! from the segment's destination to its source, with correct IP and TCP
//! checksums, a window of 65535, and the destination IP annotation set to
//! the client. Segments with RST get no answer (`reset`); packets that are
//! not a first fragment of a TCP segment with a whole TCP header are
//! dropped (`not a TCP segment`).
//!
//! Arguments:
//! - `DATA` (string, default empty): what the server sends.
//! - `MSS` (integer 1 to 65495, default 536, a paraclick addition): the
//!   largest segment sent.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Strip(14) -> CheckIPHeader -> IPClassifier(tcp dst port 80)
//!         -> StatelessTCPResponder("HTTP/1.0 200 OK\r\n\r\nhello\n")
//!         -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> Queue -> ToDevice(eth0);

use paraclick_packet::wire::{Ipv4Header, TcpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::args::Bytes;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;

pub struct StatelessTCPResponder {
    data: Vec<u8>,
    mss: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &[
    "not a TCP segment",
    "reset",
    "nothing to answer",
    "no packet buffer",
];
const NOT_TCP: u8 = 0;
const RESET: u8 = 1;
const NOTHING: u8 = 2;
const NO_BUFFER: u8 = 3;

const FIN: u16 = 0x01;
const SYN: u16 = 0x02;
const RST: u16 = 0x04;
const PSH: u16 = 0x08;
const ACK: u16 = 0x10;

pub fn spec() -> ClassSpec {
    ClassSpec::action("StatelessTCPResponder", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StatelessTCPResponder, String> {
    let mut a = cx.args();
    let data = a.read_p::<Bytes>("DATA").map(|b| b.0).unwrap_or_default();
    let mss = a.read::<usize>("MSS").unwrap_or(536);
    a.complete()?;
    if !(1..=65495).contains(&mss) {
        return Err(format!("MSS must be between 1 and 65495, not {mss}"));
    }
    Ok(StatelessTCPResponder { data, mss })
}

/// The server's initial sequence number on the connection from
/// `client:cport` to `server:sport`: a fixed mix of the four.
pub(crate) fn isn(client: Ipv4Addr, cport: u16, server: Ipv4Addr, sport: u16) -> u32 {
    let mut x = (u64::from(u32::from(client)) << 32) | u64::from(u32::from(server));
    x ^= (u64::from(cport) << 16 | u64::from(sport)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x as u32
}

/// A reply segment's fields.
struct Reply<'a> {
    seq: u32,
    ack: u32,
    flags: u16,
    mss_option: Option<u16>,
    data: &'a [u8],
}

/// What one segment asks for.
enum Answer<'a> {
    Send(Reply<'a>),
    Drop(u8),
}

/// The fields of the segment being answered.
struct Seg {
    seq: u32,
    ack: u32,
    flags: u16,
    window: u16,
    /// Data bytes the segment carries.
    len: u32,
    isn: u32,
}

impl StatelessTCPResponder {
    fn answer(&self, s: &Seg) -> Answer<'_> {
        let fin_in = u32::from(s.flags & FIN != 0);
        if s.flags & RST != 0 {
            return Answer::Drop(RESET);
        }
        if s.flags & SYN != 0 && s.flags & ACK == 0 {
            return Answer::Send(Reply {
                seq: s.isn,
                ack: s.seq.wrapping_add(1),
                flags: SYN | ACK,
                mss_option: Some(self.mss as u16),
                data: &[],
            });
        }
        if s.flags & ACK == 0 {
            return Answer::Drop(NOTHING);
        }
        let ack_out = s
            .seq
            .wrapping_add(s.len)
            .wrapping_add(fin_in)
            .wrapping_add(u32::from(s.flags & SYN != 0));
        let total = self.data.len() as u64;
        // Where the client's acknowledgment lies in the server's stream.
        let off = u64::from(s.ack.wrapping_sub(s.isn.wrapping_add(1)));
        let first = s.isn.wrapping_add(1);
        if off > total + 1 {
            return Answer::Send(Reply {
                seq: s.ack,
                ack: 0,
                flags: RST,
                mss_option: None,
                data: &[],
            });
        }
        if off == total + 1 {
            if s.len == 0 && fin_in == 0 {
                return Answer::Drop(NOTHING);
            }
            return Answer::Send(Reply {
                seq: first.wrapping_add(total as u32).wrapping_add(1),
                ack: ack_out,
                flags: ACK,
                mss_option: None,
                data: &[],
            });
        }
        let off = off as usize;
        let rest = &self.data[off..];
        let room = if s.window == 0 {
            0
        } else {
            usize::from(s.window)
        };
        let n = rest.len().min(self.mss).min(room);
        let seg = &rest[..n];
        let ends = n == rest.len() && s.window != 0 || rest.is_empty();
        let mut flags = ACK;
        if !seg.is_empty() {
            flags |= PSH;
        }
        if ends {
            flags |= FIN;
        }
        Answer::Send(Reply {
            seq: first.wrapping_add(off as u32),
            ack: ack_out,
            flags,
            mss_option: None,
            data: seg,
        })
    }
}

/// The reply datagram from `src:sport` to `dst:dport`.
fn build(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16, r: &Reply<'_>) -> Option<Packet> {
    let thl = if r.mss_option.is_some() { 24 } else { 20 };
    let total = 20 + thl + r.data.len();
    let mut b = vec![0u8; total];
    {
        let mut h = Ipv4Header::new_unchecked(&mut b[..20]);
        h.set_version(4);
        h.set_header_len(20);
        h.set_total_len(total as u16);
        h.set_dont_frag(true);
        h.set_ttl(64);
        h.set_protocol(6);
        h.set_src_addr(src);
        h.set_dst_addr(dst);
        h.fill_checksum();
    }
    if let Some(mss) = r.mss_option {
        b[40..44].copy_from_slice(&[2, 4, (mss >> 8) as u8, mss as u8]);
    }
    b[20 + thl..].copy_from_slice(r.data);
    {
        let mut t = TcpHeader::new_unchecked(&mut b[20..]);
        t.set_src_port(sport);
        t.set_dst_port(dport);
        t.set_seq_number(r.seq);
        t.set_ack_number(r.ack);
        t.set_header_len(thl);
        t.set_flags(r.flags);
        t.set_window_len(65535);
        t.fill_checksum(src, dst);
    }
    let mut p = Packet::from_slice(&b)?;
    p.set_network_header(0, 20);
    p.anno_mut().dst_ip = dst;
    Some(p)
}

impl Action for StatelessTCPResponder {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("data", |e, _| {
        String::from_utf8_lossy(&e.data).into_owned()
    })];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(ip) = super::checked_ip(p) else {
            return Verdict::DropFor(NOT_TCP);
        };
        if ip.protocol() != 6 || ip.frag_offset_units() != 0 {
            return Verdict::DropFor(NOT_TCP);
        }
        let seg = ip.payload();
        if seg.len() < 20 {
            return Verdict::DropFor(NOT_TCP);
        }
        let t = TcpHeader::new_unchecked(seg);
        let thl = t.header_len();
        if thl < 20 || thl > seg.len() {
            return Verdict::DropFor(NOT_TCP);
        }
        let (client, server) = (ip.src_addr(), ip.dst_addr());
        let (cport, sport) = (t.src_port(), t.dst_port());
        let s = Seg {
            seq: t.seq_number(),
            ack: t.ack_number(),
            flags: t.flags(),
            window: t.window_len(),
            len: (seg.len() - thl) as u32,
            isn: isn(client, cport, server, sport),
        };
        match self.answer(&s) {
            Answer::Drop(r) => Verdict::DropFor(r),
            Answer::Send(r) => match build(server, sport, client, cport, &r) {
                Some(mut q) => {
                    q.set_timestamp(p.timestamp());
                    *p = q;
                    Verdict::Out(0)
                }
                None => Verdict::DropFor(NO_BUFFER),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::isn;
    use crate::test_kit::*;
    use paraclick_packet::wire::{Ipv4Header, TcpHeader};

    const C: &str = "10.0.0.1";
    const S: &str = "10.0.0.2";

    /// A client segment to port 80.
    fn seg(seq: u32, ack: u32, flags: u8, win: u16, data: &[u8]) -> paraclick_packet::Packet {
        marked(
            &Ip::new(C, S, 6)
                .tcp_full(4000, 80, seq, ack, flags, win, &[], data)
                .bytes(),
        )
    }

    /// (seq, ack, flags, payload) of a reply, its checksums checked.
    fn fields(p: &paraclick_packet::Packet) -> (u32, u32, u16, Vec<u8>) {
        let ip = Ipv4Header::new_checked(p.data()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!((ip.src_addr(), ip.dst_addr()), (ip_(S), ip_(C)));
        assert_eq!(p.anno().dst_ip, ip_(C));
        let seg = ip.payload();
        let t = TcpHeader::new_unchecked(seg);
        assert_eq!(
            transport_checksum(ip.src_addr(), ip.dst_addr(), 6, seg),
            t.checksum(),
            "TCP checksum"
        );
        assert_eq!((t.src_port(), t.dst_port()), (80, 4000));
        (
            t.seq_number(),
            t.ack_number(),
            t.flags(),
            seg[t.header_len()..].to_vec(),
        )
    }

    fn ip_(s: &str) -> std::net::Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn serves_data_over_a_whole_connection() {
        let h = harness("StatelessTCPResponder(\"hello, world\", MSS 5)", 1);
        let i = isn(ip_(C), 4000, ip_(S), 80);
        h.push(0, vec![seg(100, 0, 0x02, 1000, b"")]);
        let out = h.output(0);
        let (sq, ak, fl, d) = fields(&out[0]);
        assert_eq!((sq, ak, fl, d.len()), (i, 101, 0x12, 0));
        // The MSS option announces 5.
        assert_eq!(&out[0].data()[40..44], &[2, 4, 0, 5]);
        // The handshake's ACK carrying a request: the first 5 bytes.
        h.push(0, vec![seg(101, i + 1, 0x18, 1000, b"GET /")]);
        let (sq, ak, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((sq, ak, fl, &d[..]), (i + 1, 106, 0x18, &b"hello"[..]));
        // Each acknowledgment gets the next piece; the last has FIN.
        h.push(0, vec![seg(106, i + 6, 0x10, 1000, b"")]);
        let (sq, _, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((sq, fl, &d[..]), (i + 6, 0x18, &b", wor"[..]));
        h.push(0, vec![seg(106, i + 11, 0x10, 1000, b"")]);
        let (sq, _, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((sq, fl, &d[..]), (i + 11, 0x19, &b"ld"[..]));
        // A window of 1 limits the segment; a lost piece is sent again.
        h.push(0, vec![seg(106, i + 6, 0x10, 1, b"")]);
        let (_, _, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((fl, &d[..]), (0x18, &b","[..]));
        // All data acknowledged, not the FIN: FIN again.
        h.push(0, vec![seg(106, i + 13, 0x10, 1000, b"")]);
        let (sq, _, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((sq, fl, d.len()), (i + 13, 0x11, 0));
        // The client's FIN after ours is acknowledged.
        h.push(0, vec![seg(106, i + 14, 0x11, 1000, b"")]);
        let (sq, ak, fl, _) = fields(&h.output(0)[0]);
        assert_eq!((sq, ak, fl), (i + 14, 107, 0x10));
        // A bare acknowledgment of our FIN needs no answer; RSTs get none.
        h.push(0, vec![seg(107, i + 14, 0x10, 1000, b"")]);
        h.push(0, vec![seg(107, i + 14, 0x14, 1000, b"")]);
        assert!(h.output(0).is_empty());
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "reset 1\nnothing to answer 1\n"
        );
    }

    #[test]
    fn foreign_acknowledgments_get_a_reset_and_bad_packets_drop() {
        let h = harness("StatelessTCPResponder(abc)", 1);
        let i = isn(ip_(C), 4000, ip_(S), 80);
        h.push(0, vec![seg(5, i.wrapping_add(1000), 0x10, 100, b"")]);
        let (sq, _, fl, _) = fields(&h.output(0)[0]);
        assert_eq!((sq, fl), (i.wrapping_add(1000), 0x04));
        let udp = marked(&Ip::new(C, S, 17).udp(1, 2, b"x").bytes());
        let frag = marked(
            &Ip::new(C, S, 6)
                .frag(10)
                .tcp(4000, 80, 1, 1, 0x10, 1)
                .bytes(),
        );
        let short = marked(&Ip::new(C, S, 6).payload(&[0; 10]).bytes());
        h.push(0, vec![udp, frag, short, pkt(&[0u8; 30])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.read("drop_reasons").unwrap(), "not a TCP segment 4\n");
    }

    #[test]
    fn empty_data_closes_at_once_and_bad_mss_is_an_error() {
        let h = harness("StatelessTCPResponder", 1);
        let i = isn(ip_(C), 4000, ip_(S), 80);
        h.push(0, vec![seg(1, i + 1, 0x10, 100, b"")]);
        let (_, _, fl, d) = fields(&h.output(0)[0]);
        assert_eq!((fl, d.len()), (0x11, 0));
        let e = try_harness("StatelessTCPResponder(x, MSS 0)", 1)
            .err()
            .unwrap();
        assert!(e.contains("MSS must be between 1 and 65495"), "{e}");
    }
}
