// The element crates share one documentation extractor.
include!("../elements/build.rs");
