//! IP classification with tcpdump-like patterns: IPClassifier and IPFilter.
//!
//! `lang` parses a pattern into an AST; `program` compiles the patterns of
//! an element into one decision program over header-field tests, run once
//! per packet without allocation.

use paraclick_runtime::Registry;

pub mod ip_classifier;
pub mod ip_filter;
pub mod lang;
pub mod program;

/// A reference interpreter of pattern ASTs for differential tests (unit
/// tests and the fuzz targets); not used by the elements.
#[doc(hidden)]
pub mod interp;
#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests;

pub fn register(reg: &mut Registry) {
    reg.register(ip_classifier::spec());
    reg.register(ip_filter::spec());
    reg.set_packet_filter(trace_filter);
}

/// The packet tracer's filter (`trace add N FILTER`): an IPClassifier
/// pattern, tested on packets where they enter the router (see
/// `Program::classify_entering`).
pub fn trace_filter(
    text: &str,
    env: &paraclick_runtime::ArgEnv,
) -> Result<paraclick_runtime::trace::PacketFilter, String> {
    let e = lang::parse_pattern(text, env)?;
    let prog = program::Program::compile(&[(e, program::Action::Out(0))]);
    Ok(std::sync::Arc::new(move |p: &paraclick_packet::Packet| {
        matches!(
            prog.classify_entering(p),
            paraclick_runtime::Verdict::Out(0)
        )
    }))
}
