//! # IPGWOptions
//!
//! IPGWOptions(MYADDR [, OTHERADDRS])
//!
//! Processes the IP options every router must process.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects IP packets with their IP header annotation set. Processes the
//! options every router handles, not only the destination: Record Route
//! and Internet Timestamp (RFC 791 3.1, RFC 1812 5.3.13; the source route
//! options are left alone). MYADDR is the router's address on the
//! interface downstream of the element (RFC 1812 4.2.2.2), so IPGWOptions
//! usually sits on the output path.
//!
//! - Record Route: if the route data has room at the pointer, MYADDR is
//!   recorded there and the pointer advanced by 4.
//! - Timestamp: the time is milliseconds since midnight UT. Flag 0 records
//!   a timestamp; flag 1 records MYADDR and a timestamp; flag 3 records a
//!   timestamp if the prespecified address at the pointer is MYADDR or one
//!   of OTHERADDRS. If the option is full, its overflow count is
//!   incremented instead.
//!
//! If it changes the packet, IPGWOptions recomputes the IP header
//! checksum. Packets without options pass untouched.
//!
//! A malformed option (no length byte, a length below 2 or beyond the
//! header, a pointer below its minimum, an unknown timestamp flag, or an
//! overflow count that would overflow) sends the packet, unchanged, to
//! output 1 if it is connected (or drops it), with its ICMP parameter
//! problem annotation (`ICMP_PARAMPROB`) set to the offset of the bad byte
//! from the start of the IP header: connect output 1 to
//! `ICMPError(ADDR, parameterproblem)`. A packet without an IP header
//! annotation, or whose header is shorter than its IHL says, is dropped.
//!
//! Arguments:
//! - `MYADDR` (IP address, mandatory): the outgoing interface's address.
//! - `OTHERADDRS` (space-separated IP addresses): the router's other
//!   addresses, for prespecified timestamps.
//!
//! Handlers:
//! - `drops` (read): packets with bad options.
//!
//! Example:
//!
//!     ... -> gio :: IPGWOptions(18.26.4.24) -> FixIPSrc(18.26.4.24) -> ...;
//!     gio[1] -> ICMPError(18.26.4.24, parameterproblem) -> ...;

use super::{IpList, IP_MIN_HLEN};
use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::net::Ipv4Addr;
use std::time::{SystemTime, UNIX_EPOCH};

const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_RR: u8 = 7;
const OPT_TS: u8 = 68;

pub struct IPGWOptions {
    my: Ipv4Addr,
    others: Vec<u32>,
    drops: PerThreadCount,
    error_out: Verdict,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["bad IP options", "no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPGWOptions", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<IPGWOptions, String> {
    let mut a = cx.args();
    let my = a.read_mp::<Ipv4Addr>("MYADDR");
    let others = a
        .read_p::<IpList>("OTHERADDRS")
        .map_or_else(Vec::new, |l| l.0);
    a.complete()?;
    Ok(IPGWOptions {
        my,
        others: others.into_iter().map(u32::from).collect(),
        drops: PerThreadCount::new(cx.nthreads),
        error_out: if cx.noutputs >= 2 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

/// Milliseconds since midnight UT (RFC 791's timestamp).
fn ms_since_midnight() -> u32 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    ((d.as_secs() % 86_400) * 1000 + u64::from(d.subsec_millis())) as u32
}

/// Processes the Record Route and Timestamp options of `hdr`, a whole IP
/// header (`hdr.len()` is its header length). Returns whether it changed
/// anything, or the offset (from the header start) of the first bad byte.
/// On an error, options before the bad one may have been processed: the
/// element works on a copy and leaves such packets unchanged.
pub(crate) fn process_options(
    hdr: &mut [u8],
    my: Ipv4Addr,
    others: &[u32],
    clock: &dyn Fn() -> u32,
) -> Result<bool, usize> {
    let hlen = hdr.len();
    let mut changed = false;
    let mut now: Option<u32> = None;
    let mut oi = IP_MIN_HLEN;
    while oi < hlen {
        let kind = hdr[oi];
        if kind == OPT_EOL {
            break;
        }
        if kind == OPT_NOP {
            oi += 1;
            continue;
        }
        let Some(&xlen) = hdr.get(oi + 1) else {
            return Err(oi);
        };
        let xlen = usize::from(xlen);
        if xlen < 2 || oi + xlen > hlen {
            return Err(oi + 1);
        }
        let o = &mut hdr[oi..oi + xlen];
        match kind {
            OPT_RR => {
                if xlen < 3 {
                    return Err(oi + 1);
                }
                let ptr = usize::from(o[2]);
                if ptr < 4 {
                    return Err(oi + 2);
                }
                if ptr + 3 <= xlen {
                    o[ptr - 1..ptr + 3].copy_from_slice(&my.octets());
                    o[2] = (ptr + 4) as u8;
                    changed = true;
                }
            }
            OPT_TS => {
                if xlen < 4 {
                    return Err(oi + 1);
                }
                let ptr = usize::from(o[2]);
                let (overflow, flags) = (o[3] >> 4, o[3] & 0x0f);
                if ptr < 5 {
                    return Err(oi + 2);
                }
                let slot = match flags {
                    0 => 4,
                    1 | 3 => 8,
                    _ => return Err(oi + 3),
                };
                if ptr + slot - 1 <= xlen {
                    let at = ptr - 1;
                    let ts_at = match flags {
                        0 => Some(at),
                        1 => {
                            o[at..at + 4].copy_from_slice(&my.octets());
                            Some(at + 4)
                        }
                        _ => {
                            let a = u32::from_be_bytes([o[at], o[at + 1], o[at + 2], o[at + 3]]);
                            (a == u32::from(my) || others.contains(&a)).then_some(at + 4)
                        }
                    };
                    if let Some(t) = ts_at {
                        let ts = *now.get_or_insert_with(clock);
                        o[t..t + 4].copy_from_slice(&ts.to_be_bytes());
                        o[2] = (ptr + slot) as u8;
                        changed = true;
                    }
                } else {
                    if overflow == 15 {
                        return Err(oi + 3);
                    }
                    o[3] = ((overflow + 1) << 4) | flags;
                    changed = true;
                }
            }
            _ => {}
        }
        oi += xlen;
    }
    Ok(changed)
}

impl Action for IPGWOptions {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(nh) = p.network_header_mut() else {
            return Verdict::DropFor(1);
        };
        let Some(&vihl) = nh.first() else {
            return Verdict::DropFor(1);
        };
        let hlen = usize::from(vihl & 0x0f) * 4;
        if hlen == IP_MIN_HLEN && nh.len() >= IP_MIN_HLEN {
            return Verdict::Out(0);
        }
        self.with_options(cx, p, hlen)
    }
}

impl IPGWOptions {
    /// A header with options (or a bad length): out of line, so the usual
    /// packet's check above needs no stack frame.
    #[cold]
    #[inline(never)]
    fn with_options(&self, cx: &mut Cx<'_>, p: &mut Packet, hlen: usize) -> Verdict {
        let Some(nh) = p.network_header_mut() else {
            return Verdict::DropFor(1);
        };
        let Some(hdr) = nh.get_mut(..hlen).filter(|h| h.len() >= IP_MIN_HLEN) else {
            return Verdict::DropFor(1);
        };
        // Work on a copy so that a packet with a bad option leaves
        // unchanged (the options area is at most 40 bytes).
        let mut copy = [0u8; 60];
        let copy = &mut copy[..hlen];
        copy.copy_from_slice(hdr);
        match process_options(copy, self.my, &self.others, &ms_since_midnight) {
            Ok(false) => Verdict::Out(0),
            Ok(true) => {
                hdr.copy_from_slice(copy);
                Ipv4Header::new_unchecked(hdr).fill_checksum();
                Verdict::Out(0)
            }
            Err(off) => {
                self.drops.inc(cx.thread());
                p.anno_mut().icmp_param_off = off as u8;
                self.error_out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::process_options;
    use crate::test_kit::*;
    use std::net::Ipv4Addr;

    const MY: Ipv4Addr = Ipv4Addr::new(18, 26, 4, 24);

    fn with_opts(o: &[u8]) -> Vec<u8> {
        Ip::new("1.0.0.1", "2.0.0.2", 17)
            .options(o)
            .payload(b"data")
            .bytes()
    }

    /// Runs the element on a packet with options `o`; returns the output
    /// port, the packet's bytes and its param problem annotation.
    fn run(o: &[u8]) -> (usize, Vec<u8>, u8) {
        let h = harness("IPGWOptions(18.26.4.24, 10.0.0.1 10.0.0.2)", 2);
        h.push(0, vec![marked(&with_opts(o))]);
        let (a, b) = (h.output(0), h.output(1));
        let (port, p) = match (a.len(), b.len()) {
            (1, 0) => (0, &a[0]),
            (0, 1) => (1, &b[0]),
            other => panic!("{other:?}"),
        };
        (port, p.data().to_vec(), p.anno().icmp_param_off)
    }

    #[test]
    fn no_options_untouched() {
        let h = harness("IPGWOptions(18.26.4.24)", 2);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 6).payload(b"xyz").bytes();
        let mut bad_cksum = d.clone();
        bad_cksum[10] ^= 1;
        h.push(0, vec![marked(&d), marked(&bad_cksum)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(out[1].data(), &bad_cksum[..]);
    }

    #[test]
    fn record_route() {
        // Room for two addresses, pointer at the first slot.
        let (port, got, _) = run(&[7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(port, 0);
        assert_eq!(got, with_opts(&[7, 11, 8, 18, 26, 4, 24, 0, 0, 0, 0]));
        // Second slot.
        let (_, got, _) = run(&[7, 11, 8, 9, 9, 9, 9, 0, 0, 0, 0]);
        assert_eq!(got, with_opts(&[7, 11, 12, 9, 9, 9, 9, 18, 26, 4, 24]));
        // Full: unchanged.
        let full = [7, 11, 12, 9, 9, 9, 9, 8, 8, 8, 8];
        let (port, got, _) = run(&full);
        assert_eq!(port, 0);
        assert_eq!(got, with_opts(&full));
        // Behind NOPs and an unknown option, and followed by EOL.
        let (_, got, _) = run(&[1, 1, 0x88, 4, 0, 0, 7, 7, 4, 0, 0, 0, 0, 0]);
        assert_eq!(
            got,
            with_opts(&[1, 1, 0x88, 4, 0, 0, 7, 7, 8, 18, 26, 4, 24, 0])
        );
        assert!(ip_checksum_ok(&got));
    }

    #[test]
    fn source_routes_left_alone() {
        let lsrr = [131, 11, 4, 5, 5, 5, 5, 6, 6, 6, 6];
        let (port, got, _) = run(&lsrr);
        assert_eq!((port, got), (0, with_opts(&lsrr)));
    }

    #[test]
    fn bad_options_to_output_1_with_offset() {
        for (opts, off) in [
            (&[7, 11, 3, 0, 0, 0, 0, 0, 0, 0, 0][..], 22), // RR pointer < 4
            (&[7, 2, 1, 1][..], 21),                       // RR length < 3
            (&[7, 40, 4, 0][..], 21),                      // length beyond header
            (&[0x88, 1, 0, 0][..], 21),                    // length < 2
            (&[1, 1, 1, 7][..], 23),                       // no length byte
            (&[68, 12, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], 22), // TS pointer < 5
            (&[68, 12, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0][..], 23), // TS flag 2
            (&[68, 3, 5, 0][..], 21),                      // TS length < 4
            (&[68, 8, 9, 0xf0, 0, 0, 0, 0][..], 23),       // TS full, overflow 15
            (&[1, 7, 7, 4, 0, 0, 0, 0, 68, 4, 3, 0][..], 30), // second option bad
        ] {
            let (port, got, pp) = run(opts);
            assert_eq!(port, 1, "{opts:?}");
            assert_eq!(pp, off, "{opts:?}");
            assert_eq!(got, with_opts(opts), "unchanged: {opts:?}");
        }
    }

    #[test]
    fn timestamps_exact() {
        let clock = || 0x0102_0304u32;
        let others = [u32::from(Ipv4Addr::new(10, 0, 0, 2))];
        let check = |opts: &[u8], want: &[u8], changed: bool| {
            let mut hdr = vec![0x45; 20];
            hdr.extend_from_slice(opts);
            hdr[0] = 0x40 | (hdr.len() / 4) as u8;
            let r = process_options(&mut hdr, MY, &others, &clock);
            assert_eq!(r, Ok(changed), "{opts:?}");
            assert_eq!(&hdr[20..], want, "{opts:?}");
        };
        // Flag 0: timestamps only.
        check(
            &[68, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[68, 12, 9, 0, 1, 2, 3, 4, 0, 0, 0, 0],
            true,
        );
        // Flag 1: address and timestamp.
        check(
            &[68, 12, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0],
            &[68, 12, 13, 1, 18, 26, 4, 24, 1, 2, 3, 4],
            true,
        );
        // Flag 3: prespecified, ours (an other address).
        check(
            &[68, 12, 5, 3, 10, 0, 0, 2, 0, 0, 0, 0],
            &[68, 12, 13, 3, 10, 0, 0, 2, 1, 2, 3, 4],
            true,
        );
        // Flag 3: not ours: skipped.
        check(
            &[68, 12, 5, 3, 10, 0, 0, 3, 0, 0, 0, 0],
            &[68, 12, 5, 3, 10, 0, 0, 3, 0, 0, 0, 0],
            false,
        );
        // Full: overflow counted.
        check(
            &[68, 8, 9, 0x21, 7, 7, 7, 7],
            &[68, 8, 9, 0x31, 7, 7, 7, 7],
            true,
        );
        // Record route and timestamp together.
        check(
            &[7, 7, 4, 0, 0, 0, 0, 68, 8, 5, 0, 0, 0, 0, 0, 0],
            &[7, 7, 8, 18, 26, 4, 24, 68, 8, 9, 0, 1, 2, 3, 4, 0],
            true,
        );
    }

    #[test]
    fn timestamp_through_element() {
        let (port, got, _) = run(&[68, 12, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(port, 0);
        let ts = u32::from_be_bytes([got[28], got[29], got[30], got[31]]);
        assert!(ts < 86_400_000);
        let mut o = [68, 12, 13, 1, 18, 26, 4, 24, 0, 0, 0, 0];
        o[8..].copy_from_slice(&ts.to_be_bytes());
        assert_eq!(got, with_opts(&o));
        assert!(ip_checksum_ok(&got));
    }

    #[test]
    fn drops_and_missing_header() {
        let h = harness("IPGWOptions(18.26.4.24)", 1);
        let bad = with_opts(&[7, 11, 3, 0, 0, 0, 0, 0, 0, 0, 0]);
        let good = with_opts(&[7, 7, 4, 0, 0, 0, 0]);
        h.push(
            0,
            vec![marked(&bad), pkt(&good), marked(&good[..23]), marked(&good)],
        );
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 3);
        assert_eq!(h.read("drops").unwrap(), "1");
    }

    #[test]
    fn random_options_never_panic() {
        let h = harness("IPGWOptions(18.26.4.24, 1.1.1.1)", 2);
        let mut rng = Rng::new(71);
        let kinds = [0u8, 1, 7, 68, 131, 137, 148, 0x99];
        for _ in 0..5000 {
            let n = 4 * (1 + rng.below(10));
            let mut o: Vec<u8> = rng.bytes(n);
            for b in o.iter_mut() {
                match rng.below(4) {
                    0 => *b = kinds[rng.below(kinds.len())],
                    1 => *b %= 16,
                    _ => {}
                }
            }
            h.push(0, vec![marked(&with_opts(&o))]);
        }
        let ok = h.output(0);
        for p in &ok {
            assert!(ip_checksum_ok(p.data()));
        }
        assert_eq!(ok.len() + h.output(1).len(), 5000);
    }

    #[test]
    fn bad_config() {
        for (bad, want) in [
            (
                "IPGWOptions",
                "e :: IPGWOptions: missing mandatory MYADDR argument",
            ),
            (
                "IPGWOptions(1.2.3)",
                "e :: IPGWOptions: MYADDR: expected IP address, not '1.2.3'",
            ),
            (
                "IPGWOptions(1.2.3.4, 5.6)",
                "e :: IPGWOptions: OTHERADDRS: expected IP address, not '5.6'",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
