//! # SetPacketType
//!
//! SetPacketType(TYPE)
//!
//! Sets the packet type annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets passing packets' packet type annotation to TYPE. The annotation
//! says how the packet arrived at the link level (sent to this host,
//! broadcast, ...); ToHost hands it to Linux, and elements such as
//! DropBroadcasts and ICMPError read it. TYPE is one of `HOST`,
//! `BROADCAST`, `MULTICAST`, `OTHERHOST`, `OUTGOING`, `LOOPBACK` or
//! `FASTROUTE` (case does not matter).
//!
//! Arguments:
//! - `TYPE` (mandatory).
//!
//! Handlers:
//! - `type` (read): TYPE.
//!
//! Example:
//!
//!     ... -> SetPacketType(BROADCAST) -> DropBroadcasts -> ...

use paraclick_packet::anno::PacketType;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct SetPacketType {
    ty: PacketType,
}

const NAMES: &[(&str, PacketType)] = &[
    ("HOST", PacketType::Host),
    ("BROADCAST", PacketType::Broadcast),
    ("MULTICAST", PacketType::Multicast),
    ("OTHERHOST", PacketType::OtherHost),
    ("OUTGOING", PacketType::Outgoing),
    ("LOOPBACK", PacketType::Loopback),
    ("FASTROUTE", PacketType::FastRoute),
];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetPacketType", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetPacketType, String> {
    let mut a = cx.args();
    let word = a.read_mp::<String>("TYPE");
    a.complete()?;
    let ty = NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(word.trim()))
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            format!(
                "TYPE: expected one of HOST, BROADCAST, MULTICAST, OTHERHOST, OUTGOING, LOOPBACK, FASTROUTE, not '{}'",
                word.trim()
            )
        })?;
    Ok(SetPacketType { ty })
}

impl Action for SetPacketType {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("type", |e, _| {
        NAMES
            .iter()
            .find(|(_, t)| *t == e.ty)
            .map(|(n, _)| n.to_string())
            .unwrap_or_default()
    })];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.anno_mut().packet_type = self.ty;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::anno::PacketType;

    #[test]
    fn sets_the_annotation() {
        for (word, ty) in [
            ("BROADCAST", PacketType::Broadcast),
            ("otherhost", PacketType::OtherHost),
            ("HOST", PacketType::Host),
            ("LOOPBACK", PacketType::Loopback),
        ] {
            let h = harness(&format!("SetPacketType({word})"), 1);
            let mut p = pkt(&[0; 20]);
            p.anno_mut().packet_type = PacketType::Multicast;
            h.push(0, vec![p]);
            assert_eq!(h.output(0)[0].anno().packet_type, ty, "{word}");
            assert_eq!(h.read("type").unwrap(), word.to_ascii_uppercase());
        }
    }

    #[test]
    fn bad_type() {
        assert_err(
            try_harness("SetPacketType(SIDEWAYS)", 1),
            "e :: SetPacketType: TYPE: expected one of HOST, BROADCAST, MULTICAST, OTHERHOST, OUTGOING, LOOPBACK, FASTROUTE, not 'SIDEWAYS'",
        );
        assert_err(
            try_harness("SetPacketType", 1),
            "e :: SetPacketType: missing mandatory TYPE argument",
        );
    }
}
