//! (being written)

use paraclick_runtime::Registry;

pub fn register(_reg: &mut Registry) {}
