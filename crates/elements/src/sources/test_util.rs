//! The sources' tests use the crate's one kit ([`crate::test_kit`]); a
//! source under test has no inputs.

#![allow(dead_code)] // not every test uses every helper

pub use crate::test_kit::*;

use paraclick_runtime::testing::Harness;

pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    try_source(decl, noutputs)
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    source(decl, noutputs)
}
