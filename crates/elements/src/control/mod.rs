//! Control elements: Script and DriverManager, which script a running
//! router through its handlers and manage its stop requests, and
//! ControlSocket, which opens the handlers to other programs.

use paraclick_runtime::Registry;

pub mod control_socket;
pub mod driver_manager;
pub mod random_seed;
pub mod script;
pub mod script_lang;

pub fn register(reg: &mut Registry) {
    reg.register(script::spec());
    reg.register(driver_manager::spec());
    reg.register(control_socket::spec());
    reg.register(random_seed::spec());
}
