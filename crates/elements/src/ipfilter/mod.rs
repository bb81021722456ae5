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
}
