//! Packet schedulers and thread placement.

use paraclick_runtime::Registry;

pub fn register(_reg: &mut Registry) {}
