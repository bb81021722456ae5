//! Which classes the planner may replicate, and which are queues and
//! schedulers: facts about element classes, kept here together.

use super::*;

/// Whether instances of `class` may be replicated in a flow split, and if
/// not, why.
pub fn replicable(class: &str) -> Result<(), String> {
    const STATELESS: &[&str] = &[
        "Strip",
        "Unstrip",
        "CheckIPHeader",
        "CheckIPHeader2",
        "MarkIPHeader",
        "Classifier",
        "IPClassifier",
        "IPFilter",
        "EtherEncap",
        "EtherRewrite",
        "DecIPTTL",
        "SetIPChecksum",
        "SetUDPChecksum",
        "SetTCPChecksum",
        "CheckUDPHeader",
        "CheckTCPHeader",
        "CheckICMPHeader",
        "GetIPAddress",
        "SetIPAddress",
        "StoreIPAddress",
        "Paint",
        "PaintSwitch",
        "CheckPaint",
        "WorkPackage",
        "Null",
        "StripIPHeader",
        "IPGWOptions",
        "FixIPSrc",
        "DropBroadcasts",
        // Drops frames not for this host by their Ethernet address; no
        // state, no counts.
        "HostEtherFilter",
        "LookupIPRoute",
        "StaticIPLookup",
        "RadixIPLookup",
        "DirectIPLookup",
        "LinearIPLookup",
        "RangeIPLookup",
        "SortedIPLookup",
        "LookupIPRouteMP",
        "IPInputCombo",
        "IPOutputCombo",
        "SetIPDSCP",
        "EtherMirror",
        "IPMirror",
        "Discard",
        // Fragments of one packet share its addresses, which the hash
        // covers (the ports are left out when a reassembler is
        // replicated).
        "IPReassembler",
    ];
    if STATELESS.contains(&class) {
        return Ok(());
    }
    // Each replica counts its flows; the original's handlers report the
    // sums (Counter's REPLICAS, written by the rewrite): the name the
    // user reads keeps its meaning. Not with calls ([`replicable_el`]).
    if class == "Counter" {
        return Ok(());
    }
    Err(match class {
        c if c.ends_with("Queue") => "a queue: one FIFO for all flows".into(),
        "AverageCounter" => {
            "its rate is measured over all flows (summed replicas are not written)".into()
        }
        "IPRewriter" | "TCPRewriter" | "UDPRewriter" | "ICMPPingRewriter" | "ICMPRewriter" => {
            "NAT: one port allocator and mapping table for all flows (and both directions)".into()
        }
        "IPsecESPTunnelEncap" | "IPsecESPEncap" => {
            "ESP: one security association's sequence numbers for all flows".into()
        }
        "IPsecESPTunnelUnencap" | "IPsecESPUnencap" => {
            "ESP: one security association's replay window for all flows".into()
        }
        "ARPQuerier" | "ARPResponder" => "ARP: one table / answers for all hosts".into(),
        "ToDump" | "ToIPSummaryDump" | "ToDevice" => {
            "an output: one file or device for all flows".into()
        }
        c if c.contains("Shaper") || c.contains("Meter") || c.contains("Sched") => {
            "a rate or schedule shared by all flows".into()
        }
        _ => "not known to be free of state shared across flows".into(),
    })
}

/// [`replicable`] for one element of the configuration: a Counter with
/// COUNT_CALL or BYTE_COUNT_CALL is kept whole (each replica's count
/// would reach N on its own).
pub fn replicable_el(e: &FlatElement) -> Result<(), String> {
    if e.class == "Counter" && e.config.contains("COUNT_CALL") {
        return Err(
            "its COUNT_CALL or BYTE_COUNT_CALL fires when all flows' count reaches N".into(),
        );
    }
    replicable(&e.class)
}

pub(crate) fn is_queue(class: &str) -> bool {
    class.ends_with("Queue")
}

/// Classes of a pull path a scheduler replication may copy: schedulers
/// that keep no rate (each replica schedules its own flow groups; a
/// shaper's or a rated scheduler's rate would have to be shared out).
pub(crate) fn replicable_sched(class: &str) -> bool {
    matches!(
        class,
        "PrioSched"
            | "RoundRobinSched"
            | "DRRSched"
            | "StrideSched"
            | "SimplePrioSched"
            | "SimpleRoundRobinSched"
    )
}
