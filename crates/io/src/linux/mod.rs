//! Linux network devices: FromDevice reads an interface through an
//! AF_PACKET TPACKET_V2 (or V3) receive ring (with fanout groups for several
//! queues), MultiFromDevice polls several such queues in one task,
//! ToDevice writes one with `sendmmsg`; FromHost and ToHost exchange
//! Ethernet frames with the Linux stack through a tap device. Elsewhere
//! than Linux these classes do not exist.

#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
pub mod from_device;
#[cfg(target_os = "linux")]
pub mod from_host;
#[cfg(target_os = "linux")]
pub mod kernel_tun;
#[cfg(target_os = "linux")]
pub mod multi_from_device;
#[cfg(target_os = "linux")]
mod offload;
#[cfg(target_os = "linux")]
mod ring;
#[cfg(target_os = "linux")]
mod rx;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod xdp;
#[cfg(target_os = "linux")]
mod xdp_pass;

/// The `count` and `drops` statistics of a device element (its handlers
/// `count`, `drops` and `reset_counts`).
#[cfg(target_os = "linux")]
pub(crate) struct DevCounts {
    pub count: paraclick_runtime::PerThreadCount,
    pub drops: paraclick_runtime::PerThreadCount,
}

#[cfg(target_os = "linux")]
impl DevCounts {
    pub fn new(nthreads: usize) -> DevCounts {
        DevCounts {
            count: paraclick_runtime::PerThreadCount::new(nthreads),
            drops: paraclick_runtime::PerThreadCount::new(nthreads),
        }
    }

    /// The `reset_counts` handler.
    pub fn reset(&self) {
        self.count.reset();
        self.drops.reset();
    }
}
#[cfg(target_os = "linux")]
pub(crate) mod tap;
#[cfg(target_os = "linux")]
pub mod to_device;
#[cfg(target_os = "linux")]
pub mod to_host;

use paraclick_runtime::Registry;

/// Registers FromDevice, MultiFromDevice, ToDevice, FromHost and ToHost
/// (on Linux).
pub fn register(reg: &mut Registry) {
    #[cfg(target_os = "linux")]
    {
        reg.register(from_device::spec());
        reg.alias("PollDevice", "FromDevice");
        reg.register(multi_from_device::spec());
        reg.register(to_device::spec());
        reg.register(from_host::spec());
        reg.register(to_host::spec());
        reg.register(kernel_tun::tun_spec());
        reg.register(kernel_tun::tap_spec());
    }
    #[cfg(not(target_os = "linux"))]
    let _ = reg;
}
