//! # AggregateLength
//!
//! AggregateLength([keywords IP])
//!
//! Sets the aggregate annotation based on packet length.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Sets the aggregate annotation of every passing packet to its length
//! plus its extra length annotation (the bytes a truncated capture or a
//! summary dump left out), so AggregateCounter can count packets per
//! length.
//!
//! Keywords:
//! - `IP` (boolean, default false): count only the bytes from the IP
//!   header on. Packets without an IP header annotation then go to
//!   output 1, or are dropped (reason `no IP header`) if it is not
//!   connected.
//!
//! Example:
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!         -> AggregateLength(IP true) -> ac :: AggregateCounter -> Discard;
//!     DriverManager(wait_pause, write ac.write_text_file -);

use super::set_aggregate;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

/// Why AggregateLength drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["no IP header"];
const NO_IP: u8 = 0;

pub struct AggregateLength {
    ip: bool,
    /// Output 1 is connected.
    second: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateLength", "1/1-2", "a/ah", make)
        .stateless()
        .metadata_only()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateLength, String> {
    let mut a = cx.args();
    let ip = a.read::<bool>("IP").unwrap_or(false);
    a.complete()?;
    Ok(AggregateLength {
        ip,
        second: cx.noutputs > 1,
    })
}

impl Action for AggregateLength {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let len = if self.ip {
            match p.network_header() {
                Some(h) => h.len(),
                None if self.second => return Verdict::Out(1),
                None => return Verdict::DropFor(NO_IP),
            }
        } else {
            p.len()
        };
        let v = (len as u32).saturating_add(p.anno().extra_length);
        set_aggregate(p, v);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::aggregate;
    use crate::test_kit::*;

    #[test]
    fn length_plus_extra_length() {
        let h = harness("AggregateLength", 1);
        let mut p = pkt(&[0; 60]);
        p.anno_mut().extra_length = 40;
        h.push(0, vec![p, pkt(&[1; 7])]);
        let out = h.output(0);
        assert_eq!(out.iter().map(aggregate).collect::<Vec<_>>(), [100, 7]);
    }

    #[test]
    fn ip_counts_from_the_ip_header() {
        let h = harness("AggregateLength(IP true)", 2);
        let ip = Ip::new("1.0.0.1", "2.0.0.2", 17).udp(1, 2, b"abcd").bytes();
        let mut framed = vec![0u8; 14];
        framed.extend_from_slice(&ip);
        let mut p = pkt(&framed);
        p.set_network_header(14, 20);
        h.push(0, vec![p, pkt(&[0; 30])]);
        assert_eq!(aggregate(&h.output(0)[0]), ip.len() as u32);
        assert_eq!(h.output(1).len(), 1);
        // Without output 1: a counted drop with its reason.
        let h = harness("AggregateLength(IP true)", 1);
        h.push(0, vec![pkt(&[0; 30])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.read("drop_reasons").unwrap(), "no IP header 1\n");
        assert_err(try_harness("AggregateLength(IP maybe)", 1), "IP");
    }
}
