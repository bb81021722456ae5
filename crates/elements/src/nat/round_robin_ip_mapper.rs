//! # RoundRobinIPMapper
//!
//! RoundRobinIPMapper(PATTERN1, ..., PATTERNn)
//!
//! A mapper for rewriters: chooses patterns in turn.
//!
//! Ports: none.
//!
//! Each PATTERN is `SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT` (for the
//! address rewriters `SADDR DADDR FOUTPUT ROUTPUT`), as in IPRewriter's
//! `pattern` specification. A rewriter whose INPUTSPEC is this element's
//! name gives each new flow the next pattern in turn (a simple load
//! balancer). Output ports are checked against each rewriter using it.
//!
//! Example:
//!
//!     rr :: RoundRobinIPMapper(- - 10.0.0.1 80 0 1, - - 10.0.0.2 80 0 1);
//!     IPRewriter(rr, drop)

use super::mapper::make_round_robin;
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    ClassSpec::element("RoundRobinIPMapper", "0/0", "a", make_round_robin)
        .shared("a round-robin turn shared by all flows")
}
