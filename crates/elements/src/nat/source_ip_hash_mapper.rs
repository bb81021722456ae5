//! # SourceIPHashMapper
//!
//! SourceIPHashMapper(NNODES SEED, PATTERN1, ..., PATTERNn)
//!
//! A mapper for rewriters: chooses patterns by consistent hashing of the
//! source address.
//!
//! Ports: none.
//!
//! PATTERNs as RoundRobinIPMapper's. Every pattern gets NNODES points on
//! a hash ring seeded by SEED; a new flow takes the pattern whose point
//! follows the hash of its source address, so one source always maps to
//! one pattern, and adding or removing a pattern moves few sources.
//!
//! Example:
//!
//!     sh :: SourceIPHashMapper(32 0xbadbeef, - - 10.0.0.1 - 0 1, - - 10.0.0.2 - 0 1);
//!     IPRewriter(sh, drop)

use super::mapper::make_source_hash;
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    ClassSpec::element("SourceIPHashMapper", "0/0", "a", make_source_hash).stateless()
}
