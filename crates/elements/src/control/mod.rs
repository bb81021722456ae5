//! Control elements: Script and DriverManager, which script a running
//! router through its handlers and manage its stop requests.

use paraclick_runtime::Registry;

pub mod driver_manager;
pub mod script;
pub mod script_lang;

pub fn register(reg: &mut Registry) {
    reg.register(script::spec());
    reg.register(driver_manager::spec());
}
