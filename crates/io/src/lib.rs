//! Device and trace elements: pcap files (FromDump, ToDump), Click's IP
//! summary dumps, and (later) Linux interfaces.

use paraclick_runtime::Registry;

mod docs {
    include!(concat!(env!("OUT_DIR"), "/docs.rs"));
}

/// Registers every element class of this crate.
pub fn register(reg: &mut Registry) {
    paraclick_elements::attach_docs(reg, docs::DOCS);
}

/// A registry with every element class paraclick has.
pub fn full_registry() -> Registry {
    let mut r = paraclick_elements::registry();
    register(&mut r);
    r
}
