//! User-level devices and system settings: sockets, the kernel's packet
//! filter (KernelFilter), the process's user ID (ChangeUID).

use paraclick_runtime::Registry;

pub mod change_uid;
pub mod kernel_filter;
pub mod mcast_socket;
pub mod raw_socket;
pub mod socket;

pub fn register(reg: &mut Registry) {
    reg.register(socket::spec());
    reg.register(raw_socket::spec());
    reg.register(mcast_socket::spec());
    reg.register(change_uid::spec());
    reg.register(kernel_filter::spec());
}
