//! The paraclick element library: one file per element (or small family),
//! in folders by field. Each file begins with the element's documentation
//! (synopsis, ports, processing, arguments, handlers, example), which
//! `paraclick doc CLASS` prints.

// The headers' indented examples are Click configurations, which rustdoc
// would otherwise try to parse as Rust (the crate has no doctests).
#![allow(rustdoc::invalid_rust_codeblocks)]

use paraclick_runtime::Registry;

pub mod analysis;
pub mod control;
pub mod ethernet;
pub mod icmp;
pub mod ip;
pub mod ip6;
pub mod ipfilter;
pub mod iproute;
pub mod ipsec;
pub mod nat;
pub mod outfile;
pub mod qos;
pub mod robust;
pub mod sched;
pub mod sources;
pub mod standard;
pub mod util;

#[cfg(test)]
mod robust_tests;
/// The tests' one kit, also for other crates' tests (feature `test-kit`).
#[cfg(any(test, feature = "test-kit"))]
pub mod test_kit;

mod docs {
    include!(concat!(env!("OUT_DIR"), "/docs.rs"));
}

/// The documentation of every element class in this crate.
pub fn docs() -> &'static [(&'static str, &'static str)] {
    docs::DOCS
}

/// Registers every element class of this crate.
pub fn register_all(reg: &mut Registry) {
    standard::register(reg);
    analysis::register(reg);
    sources::register(reg);
    sched::register(reg);
    control::register(reg);
    ethernet::register(reg);
    ip::register(reg);
    ip6::register(reg);
    iproute::register(reg);
    ipsec::register(reg);
    icmp::register(reg);
    ipfilter::register(reg);
    nat::register(reg);
    qos::register(reg);
    attach_docs(reg, docs());
}

/// Gives registered classes the documentation found for them.
pub fn attach_docs(reg: &mut Registry, docs: &[(&'static str, &'static str)]) {
    for (name, doc) in docs {
        reg.set_doc(name, doc);
    }
}

/// A registry with every class of this crate.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    register_all(&mut r);
    r
}

#[cfg(test)]
mod doc_tests {
    /// A header escapes a synopsis's brackets for rustdoc (`\[CAPACITY]`);
    /// `paraclick doc` shows them as written in Click (`[CAPACITY]`).
    #[test]
    fn printed_docs_show_brackets_unescaped() {
        let r = super::registry();
        let queue = r.doc("Queue").expect("Queue has docs");
        assert!(queue.starts_with("Queue([CAPACITY])\n"), "{queue}");
        let tee = r.doc("PullTee").expect("PullTee has docs");
        assert!(tee.starts_with("PullTee([N])\n"), "{tee}");
        for (class, doc) in super::docs() {
            assert!(!doc.contains("\\["), "{class}: a `\\[` reached the doc");
        }
    }
}
