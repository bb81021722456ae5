//! User-level devices: sockets.

use paraclick_runtime::Registry;

pub mod mcast_socket;
pub mod raw_socket;
pub mod socket;

pub fn register(reg: &mut Registry) {
    reg.register(socket::spec());
    reg.register(raw_socket::spec());
    reg.register(mcast_socket::spec());
}
