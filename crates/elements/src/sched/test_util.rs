//! The schedulers' tests use the crate's one kit ([`crate::test_kit`]).

#![allow(dead_code)] // not every test uses every helper

pub use crate::test_kit::*;
