//! Control elements: Script and DriverManager, which script a running
//! router through its handlers and manage its stop requests, and
//! ControlSocket, which opens the handlers to other programs.

use paraclick_runtime::Registry;

pub mod control_socket;
pub mod driver_manager;
pub mod handler_task;
pub mod progress_bar;
pub mod quit_watcher;
pub mod random_seed;
pub mod script;
pub mod script_lang;

pub fn register(reg: &mut Registry) {
    reg.register(script::spec());
    reg.register(driver_manager::spec());
    reg.register(control_socket::spec());
    reg.register(random_seed::spec());
    reg.register(handler_task::spec());
    reg.register(progress_bar::spec());
    reg.register(quit_watcher::spec());
}
