//! # HostEtherFilter
//!
//! HostEtherFilter(ETHER [, DROP_OWN, DROP_OTHER, keywords OFFSET])
//!
//! Drops Ethernet packets sent to other machines.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic input, output 0
//! agnostic, output 1 push.
//!
//! Expects Ethernet packets and acts like the Ethernet input hardware of a
//! device with address ETHER. It sets each packet's packet type annotation
//! to HOST (destination ETHER), BROADCAST (FF-FF-FF-FF-FF-FF), MULTICAST
//! (any other group address) or OTHERHOST (any other unicast address), and
//! emits most packets on output 0. If DROP_OWN is true, packets whose
//! source address is ETHER are filtered out; if DROP_OTHER is true,
//! packets with a unicast destination other than ETHER are filtered out.
//! Filtered packets go to output 1 if it exists and are dropped otherwise.
//! Packets too short to hold an Ethernet header at OFFSET are dropped.
//!
//! Arguments:
//! - `ETHER` (Ethernet address): this host's address.
//! - `DROP_OWN` (boolean, default false): filter packets sent by ETHER.
//! - `DROP_OTHER` (boolean, default true): filter packets for other hosts.
//! - `OFFSET` (integer, default 0): where the Ethernet header starts.
//!
//! Example:
//!
//!     FromDevice(eth0) -> HostEtherFilter(00:0a:95:9d:68:16, DROP_OWN true)
//!         -> Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -) -> ...

use paraclick_packet::wire::EtherAddr;
use paraclick_packet::{Packet, PacketType};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct HostEtherFilter {
    addr: EtherAddr,
    drop_own: bool,
    drop_other: bool,
    offset: usize,
    /// Port for filtered packets (1), or `None` to drop them.
    filtered: Option<usize>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["not for this host", "too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("HostEtherFilter", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<HostEtherFilter, String> {
    let mut a = cx.args();
    let addr = a.read_mp::<EtherAddr>("ETHER");
    let drop_own = a.read_p::<bool>("DROP_OWN").unwrap_or(false);
    let drop_other = a.read_p::<bool>("DROP_OTHER").unwrap_or(true);
    let offset = a.read::<usize>("OFFSET").unwrap_or(0);
    a.complete()?;
    Ok(HostEtherFilter {
        addr,
        drop_own,
        drop_other,
        offset,
        filtered: (cx.noutputs >= 2).then_some(1),
    })
}

impl HostEtherFilter {
    #[inline]
    fn filter(&self) -> Verdict {
        match self.filtered {
            Some(port) => Verdict::Out(port),
            None => Verdict::DropFor(0),
        }
    }
}

impl Action for HostEtherFilter {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(h) = p.data().get(self.offset..self.offset.saturating_add(14)) else {
            return Verdict::DropFor(1);
        };
        let dst = EtherAddr([h[0], h[1], h[2], h[3], h[4], h[5]]);
        let own_src = h[6..12] == self.addr.0;
        let ty = if dst == self.addr {
            PacketType::Host
        } else if dst.is_broadcast() {
            PacketType::Broadcast
        } else if dst.is_multicast() {
            PacketType::Multicast
        } else {
            PacketType::OtherHost
        };
        p.anno_mut().packet_type = ty;
        if (self.drop_own && own_src) || (self.drop_other && ty == PacketType::OtherHost) {
            return self.filter();
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::PacketType;

    const ME: &str = "00:0a:95:9d:68:16";

    fn frame(dst: &str, src: &str) -> Vec<u8> {
        ether_frame(eth(dst), eth(src), 0x0800, &[1, 2, 3])
    }

    fn all() -> Vec<paraclick_packet::Packet> {
        vec![
            pkt(&frame(ME, "1:1:1:1:1:1")),                  // host
            pkt(&frame("ff:ff:ff:ff:ff:ff", "1:1:1:1:1:1")), // broadcast
            pkt(&frame("01:00:5e:00:00:01", "1:1:1:1:1:1")), // multicast
            pkt(&frame("2:2:2:2:2:2", "1:1:1:1:1:1")),       // other host
            pkt(&frame("ff:ff:ff:ff:ff:ff", ME)),            // own
        ]
    }

    #[test]
    fn classifies_and_drops_other_hosts() {
        let h = harness(&format!("HostEtherFilter({ME})"), 1);
        h.push(0, all());
        let out = h.output(0);
        let types: Vec<_> = out.iter().map(|p| p.anno().packet_type).collect();
        assert_eq!(
            types,
            [
                PacketType::Host,
                PacketType::Broadcast,
                PacketType::Multicast,
                PacketType::Broadcast
            ]
        );
        assert_eq!(out[0].data(), &frame(ME, "1:1:1:1:1:1")[..]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn second_output_and_drop_own() {
        let h = harness(&format!("HostEtherFilter({ME}, true)"), 2);
        h.push(0, all());
        assert_eq!(h.output(0).len(), 3);
        let filtered = h.output(1);
        assert_eq!(filtered.len(), 2);
        assert_eq!(filtered[0].anno().packet_type, PacketType::OtherHost);
        assert_eq!(filtered[1].data(), &frame("ff:ff:ff:ff:ff:ff", ME)[..]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn keep_other_hosts_and_offset() {
        let h = harness(
            &format!("HostEtherFilter({ME}, DROP_OTHER false, OFFSET 2)"),
            1,
        );
        let mut f = vec![0xaa, 0xbb];
        f.extend(frame("2:2:2:2:2:2", "1:1:1:1:1:1"));
        h.push(0, vec![pkt(&f), pkt(&f[..15])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().packet_type, PacketType::OtherHost);
        assert_eq!(h.drops(), 1);
    }
}
