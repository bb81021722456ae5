//! Device and trace elements: pcap files (FromDump, ToDump), Click's IP
//! summary dumps and tcpdump text, Linux interfaces (`linux`) and sockets
//! (`userlevel`).

use paraclick_runtime::Registry;

mod common;
mod decompress;
mod flow_pattern;
pub mod from_cap_dump;
pub mod from_dump;
pub mod from_ip_summary_dump;
pub mod from_net_flow_summary_dump;
pub mod from_nlanr_dump;
pub mod from_tcpdump;
mod ipsumdump;
mod ipsumdump_binary;
mod ipsumdump_ext;
mod linux;
mod tcpdump_text;
mod text_trace;
pub mod to_dump;
pub mod to_ip_flow_dumps;
pub mod to_ip_summary_dump;
pub mod userlevel;

#[cfg(test)]
mod ipsumdump_roundtrip_tests;
#[cfg(test)]
mod test_util;

mod docs {
    include!(concat!(env!("OUT_DIR"), "/docs.rs"));
}

/// Registers every element class of this crate.
pub fn register(reg: &mut Registry) {
    reg.register(from_dump::spec());
    reg.register(to_dump::spec());
    reg.register(from_ip_summary_dump::spec());
    reg.register(from_net_flow_summary_dump::spec());
    reg.register(from_cap_dump::spec());
    reg.register(from_nlanr_dump::spec());
    reg.register(to_ip_summary_dump::spec());
    reg.register(from_tcpdump::spec());
    reg.register(to_ip_flow_dumps::spec());
    linux::register(reg);
    userlevel::register(reg);
    paraclick_elements::attach_docs(reg, docs::DOCS);
}

/// A registry with every element class paraclick has.
pub fn full_registry() -> Registry {
    let mut r = paraclick_elements::registry();
    register(&mut r);
    r
}

#[cfg(test)]
mod tests {
    use paraclick_runtime::{FlowState, Kind};

    /// Every class says what it keeps across flows: the planner reads it
    /// from the class, not from a list of names.
    #[test]
    fn every_class_declares_its_flow_state() {
        let r = super::full_registry();
        let undeclared: Vec<&str> = r
            .names()
            .into_iter()
            .filter(|n| r.get(n).unwrap().flow_state == FlowState::Undeclared)
            .collect();
        assert!(
            undeclared.is_empty(),
            "classes without a declared flow state (say .stateless(), .per_flow() \
             or .shared(reason) in their ClassSpec): {undeclared:?}"
        );
    }

    #[test]
    fn known_facts_of_some_classes() {
        let r = super::full_registry();
        let spec = |n: &str| r.get(n).unwrap_or_else(|| panic!("{n} not registered"));
        assert_eq!(spec("Queue").kind, Kind::Queue);
        assert_eq!(
            spec("Queue").flow_state,
            FlowState::Shared("a queue: one FIFO for all flows")
        );
        assert_eq!(spec("DecIPTTL").flow_state, FlowState::Stateless);
        assert_eq!(spec("DecIPTTL").kind, Kind::Plain);
        assert_eq!(spec("Counter").flow_state, FlowState::PerFlow);
        let FlowState::Shared(why) = spec("IPRewriter").flow_state else {
            panic!("IPRewriter: {:?}", spec("IPRewriter").flow_state);
        };
        assert!(why.starts_with("NAT:"), "{why}");
        assert_eq!(spec("InfiniteSource").kind, Kind::Source);
        assert_eq!(spec("PrioSched").kind, Kind::Scheduler);
        assert_eq!(spec("FromDump").kind, Kind::Source);
        assert_eq!(spec("ToDevice").kind, Kind::Device);
        assert!(spec("FromDevice").fanout_queues && spec("PollDevice").fanout_queues);
        assert!(!spec("MultiFromDevice").fanout_queues && !spec("ToDevice").fanout_queues);
        // An alias has its target's facts.
        assert_eq!(
            spec("LookupIPRoute").flow_state,
            spec("StaticIPLookup").flow_state
        );
        // What the planner and the rate search read, declared by the
        // classes the decisions were once made by name for.
        for n in [
            "PrioSched",
            "SimplePrioSched",
            "RoundRobinSched",
            "SimpleRoundRobinSched",
            "DRRSched",
            "StrideSched",
            "Unqueue",
        ] {
            assert!(spec(n).replicable_with_queues, "{n}");
        }
        for n in ["RatedUnqueue", "TimeSortedSched", "PullSwitch", "Queue"] {
            assert!(!spec(n).replicable_with_queues, "{n}");
        }
        assert!(spec("Counter").sums_replicas && spec("FromDevice").sums_replicas);
        assert_eq!(
            spec("Counter")
                .shared_when
                .iter()
                .map(|k| k.0)
                .collect::<Vec<_>>(),
            ["COUNT_CALL", "BYTE_COUNT_CALL"]
        );
        assert_eq!(
            spec("IPReassembler").flow_key,
            paraclick_runtime::FlowKey::Addresses
        );
        assert_eq!(
            spec("Counter").flow_key,
            paraclick_runtime::FlowKey::AddressesAndPorts
        );
        use paraclick_runtime::HeaderChange;
        assert_eq!(spec("Strip").header_change, HeaderChange::StripsArg);
        assert_eq!(spec("Unstrip").header_change, HeaderChange::UnstripsArg);
        assert_eq!(spec("EtherEncap").header_change, HeaderChange::Prepends(14));
        assert_eq!(
            spec("IPsecESPTunnelUnencap").header_change,
            HeaderChange::Unknown
        );
        assert_eq!(spec("CheckIPHeader").header_change, HeaderChange::Keeps);
        let rate = |n: &str| spec(n).rate.map(|r| (r.handler, r.may_run_freely));
        assert_eq!(rate("RatedSource"), Some(("rate", false)));
        assert_eq!(rate("FastUDPFlows"), Some(("rate", true)));
        assert_eq!(rate("InfiniteSource"), None);
    }

    #[test]
    fn classes_are_registered_with_their_docs() {
        let r = super::full_registry();
        for class in [
            "FromDump",
            "ToDump",
            "FromIPSummaryDump",
            "ToIPSummaryDump",
            "FromTcpdump",
            "ToIPFlowDumps",
        ] {
            let doc = r
                .doc(class)
                .unwrap_or_else(|| panic!("{class} not registered"));
            assert!(
                doc.starts_with(&format!("{class}(FILENAME"))
                    || doc.starts_with(&format!("{class}(OUTPUT_PATTERN")),
                "{class}: {doc}"
            );
            assert!(
                doc.contains("Handlers:") && doc.contains("Example:"),
                "{class}"
            );
        }
    }
}
