//! paraclick's fuzz targets, each a plain function `fn(&[u8])` that
//! panics when an invariant fails (not only when the code under test
//! panics). `fuzz/` wraps each in a libFuzzer target for `cargo fuzz`;
//! `tests/corpus.rs` replays the seed corpus and every crash input found
//! (`fuzz/regressions/TARGET/`) on stable in the normal `cargo test`.
//!
//! | target | what it feeds | what it checks |
//! |---|---|---|
//! | `config` | bytes as configuration text | parse/print round trip; check and check-only build over the full registry agree, never panic |
//! | `config_structured` | configurations built from the grammar | the same |
//! | `packet_elements` | packets (raw, or valid headers mutated) with annotations, through each packet element | out + counted drops = in; no pool buffer leaked |
//! | `pcap_reader` | a pcap file | FromDump emits as many packets as it counts, leaks nothing |
//! | `ipsumdump_reader` | an IP summary dump file | FromIPSummaryDump the same |
//! | `text_trace_reader` | a NetFlow summary or `cap` file | FromNetFlowSummaryDump and FromCapDump the same |
//! | `ipfilter` | IPFilter/IPClassifier patterns and packets | print/parse round trip; compiled program agrees with the reference interpreter |
//! | `script` | Script instructions and expressions | parse and substitution never panic; arithmetic agrees with Rust's |
//! | `config_run` | grammar-built configurations (also deep, exponential and long shapes, huge numbers) | built, initialized and run for a moment in simulated time: no panic, stops when asked, handlers readable |
//! | `control` | a control-socket client's bytes, against a small router | no panic or hang; the replies are well-formed, at most one per line sent |

mod config;
mod control;
mod ipfilter;
mod packets;
mod readers;
mod run;
mod script;
mod structured;

pub use config::config;
pub use control::control;
pub use ipfilter::ipfilter;
pub use packets::packet_elements;
pub use readers::{ipsumdump_reader, pcap_reader, text_trace_reader};
pub use run::config_run;
pub use script::script;
pub use structured::config_structured;

/// The bound on the elements a fuzzed configuration may expand to
/// (`--max-elements`). Smaller than the default (tested at its value in
/// crates/lang/tests/bounds.rs) so that an exponential compound costs the
/// fuzzer milliseconds, not seconds, while still stopping at the bound.
pub(crate) const MAX_ELEMENTS: usize = 20_000;

/// Parse options for fuzzed configurations: [`MAX_ELEMENTS`].
pub(crate) fn parse_options() -> paraclick_lang::ParseOptions {
    paraclick_lang::ParseOptions {
        max_elements: MAX_ELEMENTS,
        ..Default::default()
    }
}

/// A fuzz target: panics when an invariant fails.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/NAME.rs` and
/// `fuzz/corpus/NAME/` call it.
pub const TARGETS: &[(&str, Target)] = &[
    ("config", config),
    ("config_structured", config_structured),
    ("packet_elements", packet_elements),
    ("pcap_reader", pcap_reader),
    ("ipsumdump_reader", ipsumdump_reader),
    ("text_trace_reader", text_trace_reader),
    ("ipfilter", ipfilter),
    ("script", script),
    ("control", control),
    ("config_run", config_run),
];

/// The registry `paraclick` uses: every element and I/O class.
pub(crate) fn registry() -> &'static paraclick_runtime::Registry {
    use std::sync::OnceLock;
    static REG: OnceLock<paraclick_runtime::Registry> = OnceLock::new();
    REG.get_or_init(paraclick_io::full_registry)
}
