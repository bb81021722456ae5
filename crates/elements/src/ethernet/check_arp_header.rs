//! # CheckARPHeader
//!
//! CheckARPHeader([OFFSET, keywords OFFSET, VERBOSE, DETAILS])
//!
//! Checks ARP headers.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Input packets should have ARP headers starting OFFSET bytes in. Checks
//! that the packet's length is reasonable: it must hold the 8-byte fixed
//! ARP header, and the two hardware and two protocol addresses whose
//! lengths that header gives (`8 + 2*HLN + 2*PLN` bytes). Valid packets go
//! to output 0 unchanged; invalid packets leave on output 1 if it is
//! connected, and are dropped otherwise. A message is printed for the
//! first invalid packet (every one with VERBOSE).
//!
//! Arguments:
//! - `OFFSET` (unsigned integer, default 0): byte position at which the ARP
//!   header begins.
//! - `VERBOSE` (boolean, default false): print a message for every invalid
//!   packet.
//! - `DETAILS` (boolean, default false): count invalid packets per reason
//!   (the `drop_details` handler).
//!
//! Handlers:
//! - `count` (read): valid packets seen.
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, with DETAILS): one line per reason,
//!   `%15u packets due to: %24s`, for `too small for header` and
//!   `bad address lengths`.
//!
//! Example:
//!
//!     ... -> Classifier(12/0806) -> CheckARPHeader(14) -> ARPResponder(...);

use crate::ip::{CheckHandlers, CheckStats, Checker};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

const REASONS: &[&str] = &["too small for header", "bad address lengths"];
const TOO_SMALL: usize = 0;
const BAD_ADDRS: usize = 1;

/// Length of ARP's fixed part: hrd, pro, hln, pln, op.
const FIXED_LEN: usize = 8;

pub struct CheckARPHeader {
    offset: usize,
    stats: CheckStats,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckARPHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckARPHeader, String> {
    let mut a = cx.args();
    let offset = a.read_p::<usize>("OFFSET").unwrap_or(0);
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let details = a.read::<bool>("DETAILS").unwrap_or(false);
    a.complete()?;
    Ok(CheckARPHeader {
        offset,
        stats: CheckStats::new(
            cx.nthreads,
            REASONS,
            "ARP header check failed",
            verbose,
            details,
            cx.noutputs,
        ),
    })
}

impl CheckARPHeader {
    #[inline]
    fn check(&self, p: &Packet) -> Result<(), usize> {
        let arp = p.data().get(self.offset..).ok_or(TOO_SMALL)?;
        if arp.len() < FIXED_LEN {
            return Err(TOO_SMALL);
        }
        let (hln, pln) = (usize::from(arp[4]), usize::from(arp[5]));
        if arp.len() < FIXED_LEN + 2 * (hln + pln) {
            return Err(BAD_ADDRS);
        }
        Ok(())
    }
}

impl Checker for CheckARPHeader {
    fn check_stats(&self) -> &CheckStats {
        &self.stats
    }
}

impl Action for CheckARPHeader {
    const HANDLERS: &'static [Handler<Self>] = CheckHandlers::<Self>::TABLE;

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.stats.verdict(cx, self.check(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ArpRepr;

    fn request() -> Vec<u8> {
        arp_frame(
            eth("ff:ff:ff:ff:ff:ff"),
            eth("0:1:2:3:4:5"),
            &ArpRepr::request(eth("0:1:2:3:4:5"), ip("10.0.0.1"), ip("10.0.0.2")),
        )
    }

    #[test]
    fn valid_passes_short_fails() {
        let h = harness("CheckARPHeader(14, DETAILS true)", 2);
        let good = request();
        assert_eq!(good.len(), 14 + 28);
        let fixed_only = good[..14 + 8].to_vec();
        let tiny = good[..14 + 5].to_vec();
        let mut big_lens = good.clone();
        big_lens[14 + 4] = 200;
        h.push(
            0,
            vec![pkt(&good), pkt(&fixed_only), pkt(&tiny), pkt(&big_lens)],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &good[..]);
        assert_eq!(h.output(1).len(), 3);
        assert_eq!(h.read("count").unwrap(), "1");
        assert_eq!(h.read("drops").unwrap(), "3");
        let d = h.read("drop_details").unwrap();
        let n: Vec<u64> = d
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(n, vec![1, 2]);
    }

    #[test]
    fn offset_keyword_and_drop_without_output_1() {
        let h = harness("CheckARPHeader(OFFSET 14)", 1);
        let good = request();
        h.push(0, vec![pkt(&good), pkt(&good[..10]), pkt(&good[..20])]);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 2);
        assert_err(h.read("drop_details"), "drop_details needs DETAILS true");
        // Offset 0: the ARP header without Ethernet.
        let h = harness("CheckARPHeader", 1);
        h.push(0, vec![pkt(&good[14..])]);
        assert_eq!(h.output(0).len(), 1);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("CheckARPHeader(x)", 1),
            "e :: CheckARPHeader: OFFSET: expected unsigned integer",
        );
        assert_err(
            try_harness("CheckARPHeader(1, 2)", 1),
            "e :: CheckARPHeader: too many arguments ('2')",
        );
    }
}
