//! The host's network interfaces as address names, as Click reads them:
//! wherever an address is expected, a device name (`eth0`) stands for the
//! device's IPv4 address, prefix and Ethernet address, and `eth0:gw` for
//! the default gateway reached through it.
//!
//! Interfaces are read once per process, at the first lookup of a name
//! that no AddressInfo defines.

use paraclick_packet::wire::EtherAddr;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// Addresses an AddressInfo element defined under a name (or a host
/// interface has: its IPv4 address and prefix, its Ethernet address).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddrEntry {
    pub ip: Option<Ipv4Addr>,
    pub prefix_len: Option<u8>,
    pub ether: Option<EtherAddr>,
    /// An IPv6 address, and its prefix length if given as a prefix.
    pub ip6: Option<Ipv6Addr>,
    pub prefix6_len: Option<u8>,
}

static IFACES: OnceLock<HashMap<String, AddrEntry>> = OnceLock::new();

/// The addresses of the host interface `name`, if there is one.
pub fn interface(name: &str) -> Option<&'static AddrEntry> {
    IFACES.get_or_init(read_interfaces).get(name)
}

fn read_interfaces() -> HashMap<String, AddrEntry> {
    let mut map: HashMap<String, AddrEntry> = HashMap::new();
    for (name, ip, len) in ipv4_addresses() {
        let e = map.entry(name).or_default();
        // The first address of a device is its primary one.
        if e.ip.is_none() {
            e.ip = Some(ip);
            e.prefix_len = Some(len);
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for d in dir.flatten() {
            let name = d.file_name().to_string_lossy().into_owned();
            let mac = std::fs::read_to_string(d.path().join("address")).unwrap_or_default();
            if let Ok(eth) = mac.trim().parse::<EtherAddr>() {
                map.entry(name).or_default().ether = Some(eth);
            }
        }
    }
    map
}

fn ipv4_addresses() -> Vec<(String, Ipv4Addr, u8)> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `head`; we free it
    // below with freeifaddrs and do not keep pointers into it.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list getifaddrs returned,
        // valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of at least
        // the family field.
        let family = unsafe { (*ifa.ifa_addr).sa_family };
        if i32::from(family) != libc::AF_INET {
            continue;
        }
        // SAFETY: the family is AF_INET, so the address is a sockaddr_in.
        let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
        let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
        let len = if ifa.ifa_netmask.is_null() {
            32
        } else {
            // SAFETY: the netmask of an AF_INET address is a sockaddr_in.
            let m = unsafe { &*(ifa.ifa_netmask as *const libc::sockaddr_in) };
            u32::from_be(m.sin_addr.s_addr).count_ones() as u8
        };
        // SAFETY: ifa_name is a non-null NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        out.push((name, ip, len));
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// The default gateway reached through device `dev`, from the kernel's
/// IPv4 routing table (`/proc/net/route`).
pub fn gateway(dev: &str) -> Option<Ipv4Addr> {
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    gateway_in(&table, dev)
}

/// Finds `dev`'s default route (destination 0, mask 0) in the text of
/// `/proc/net/route`; addresses there are hexadecimal in host order.
fn gateway_in(table: &str, dev: &str) -> Option<Ipv4Addr> {
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 8 || f[0] != dev || f[1] != "00000000" || f[7] != "00000000" {
            return None;
        }
        let gw = u32::from_str_radix(f[2], 16).ok()?;
        // The kernel prints the address's in-memory (network order)
        // bytes as a native-endian number.
        (gw != 0).then(|| Ipv4Addr::from(gw.to_ne_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_known() {
        let lo = interface("lo").expect("lo exists");
        assert_eq!(lo.ip, Some(Ipv4Addr::LOCALHOST));
        assert_eq!(lo.prefix_len, Some(8));
        assert_eq!(lo.ether, Some(EtherAddr([0; 6])));
        assert!(interface("no-such-device0").is_none());
    }

    #[test]
    fn default_route() {
        let t = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n\
                 eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n\
                 eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\n";
        assert_eq!(gateway_in(t, "eth0"), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(gateway_in(t, "eth1"), None);
    }
}
