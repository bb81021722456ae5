//! # ARPFaker
//!
//! ARPFaker(DSTIP, DSTETH, SRCIP, SRCETH)
//!
//! Periodically generates an ARP reply.
//!
//! Ports: no inputs, 1 output. Processing: push.
//!
//! One second after the router starts, and every 10 seconds after that,
//! sends an ARP "reply" to DSTIP at DSTETH claiming that SRCIP has the
//! Ethernet address SRCETH: a 42-byte frame, Ethernet header (from SRCETH
//! to DSTETH, type 0x0806) and ARP reply (sender SRCETH/SRCIP, target
//! DSTETH/DSTIP). You probably want ARPResponder instead.
//!
//! Handlers:
//! - `count` (read): replies sent.
//!
//! Example:
//!
//!     ARPFaker(18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c)
//!         -> ToDevice(eth0);

use paraclick_packet::wire::EtherAddr;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::net::Ipv4Addr;
use std::time::Duration;

pub struct ARPFaker {
    frame: [u8; 42],
    count: PerThreadCount,
}

const TIMER: usize = 0;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ARPFaker", "0/1", "h", make)
        .stateless()
        .kind(paraclick_runtime::Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ARPFaker, String> {
    let mut a = cx.args();
    let dst_ip = a.read_mp::<Ipv4Addr>("DSTIP");
    let dst_eth = a.read_mp::<EtherAddr>("DSTETH");
    let src_ip = a.read_mp::<Ipv4Addr>("SRCIP");
    let src_eth = a.read_mp::<EtherAddr>("SRCETH");
    a.complete()?;
    let mut f = [0u8; 42];
    f[0..6].copy_from_slice(&dst_eth.0);
    f[6..12].copy_from_slice(&src_eth.0);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    f[22..28].copy_from_slice(&src_eth.0);
    f[28..32].copy_from_slice(&src_ip.octets());
    f[32..38].copy_from_slice(&dst_eth.0);
    f[38..42].copy_from_slice(&dst_ip.octets());
    Ok(ARPFaker {
        frame: f,
        count: PerThreadCount::new(cx.nthreads),
    })
}

impl Element for ARPFaker {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("count", |e, _| e.count.get().to_string())];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.schedule_after(TIMER, Duration::from_secs(1));
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(mut p) = Packet::from_slice(&self.frame) {
            p.set_timestamp(cx.timestamp());
            p.set_mac_header(0);
            self.count.inc(cx.thread());
            cx.push(0, Batch::one(p));
        }
        cx.schedule_after(TIMER, Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ArpRepr;
    use paraclick_runtime::testing::Harness;

    /// What ARPFaker sent in the first `ms` simulated milliseconds.
    fn sent_within(ms: u64) -> Vec<paraclick_packet::Packet> {
        let h = Harness::simulated(
            &reg(),
            &format!(
                "ARPFaker(18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c); \
                 Script(wait {ms}ms, stop)"
            ),
            0,
            1,
        )
        .unwrap();
        run(&h.router);
        h.output(0)
    }

    #[test]
    fn replies_after_one_second_then_every_ten() {
        assert!(sent_within(990).is_empty());
        let out = sent_within(1010);
        assert_eq!(out.len(), 1);
        let want = arp_frame(
            eth("0:e0:2b:b:1a:0"),
            eth("00:a0:c9:9c:fd:9c"),
            &ArpRepr::reply(
                eth("00:a0:c9:9c:fd:9c"),
                ip("18.26.4.99"),
                eth("0:e0:2b:b:1a:0"),
                ip("18.26.4.1"),
            ),
        );
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(sent_within(10_990).len(), 1);
        assert_eq!(sent_within(11_010).len(), 2);
        assert_eq!(sent_within(21_010).len(), 3);
    }

    #[test]
    fn bad_config() {
        assert!(try_source("ARPFaker(1.2.3.4, 0:1:2:3:4:5, 1.2.3.5)", 1).is_err());
        assert!(try_source("ARPFaker(1.2.3.4, 0:1:2:3:4, 1.2.3.5, 0:1:2:3:4:5)", 1).is_err());
    }
}
