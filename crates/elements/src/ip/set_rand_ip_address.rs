//! # SetRandIPAddress
//!
//! SetRandIPAddress(PREFIX \[, LIMIT])
//!
//! Sets destination IP address annotations randomly.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets each packet's destination IP address annotation to a random
//! address within PREFIX (its network bits kept, the host bits drawn at
//! random). If LIMIT is given, at most LIMIT distinct addresses are
//! generated: LIMIT addresses are drawn once, at configuration, and each
//! packet gets one of them at random. The draws come from the generator
//! RandomSeed seeds; seeded, the addresses are Click's for the same seed
//! (as Click's, a seeded draw then never sets the top bit of the
//! address's last byte).
//!
//! Arguments:
//! - `PREFIX` (IP prefix, mandatory), such as `10.0.0.0/8`.
//! - `LIMIT` (integer, at least 1, at most 2^20).
//!
//! Example:
//!
//!     ... -> SetRandIPAddress(10.0.0.0/16, 100) -> StoreIPAddress(16) -> ...

use paraclick_packet::wire::Ipv4Prefix;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

pub struct SetRandIPAddress {
    network: u32,
    host_mask: u32,
    /// LIMIT's addresses, drawn once.
    pool: Vec<Ipv4Addr>,
}

/// The most addresses LIMIT may ask for.
const MAX_LIMIT: u64 = 1 << 20;

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetRandIPAddress", "1/1", "a", make)
        .stateless()
        .shared_when(&[("LIMIT", "at most LIMIT distinct addresses over all flows")])
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetRandIPAddress, String> {
    let mut a = cx.args();
    let prefix = a.read_mp::<Ipv4Prefix>("PREFIX");
    let limit = a.read_p::<u64>("LIMIT");
    a.complete()?;
    if limit.is_some_and(|l| l == 0 || l > MAX_LIMIT) {
        return Err(format!("LIMIT must be between 1 and {MAX_LIMIT}"));
    }
    let host_mask = if prefix.len >= 32 {
        0
    } else {
        u32::MAX >> prefix.len
    };
    let mut e = SetRandIPAddress {
        network: u32::from(prefix.network()),
        host_mask,
        pool: Vec::new(),
    };
    if let Some(l) = limit {
        e.pool = (0..l).map(|_| e.draw()).collect();
    }
    Ok(e)
}

impl SetRandIPAddress {
    /// A random address of the prefix. Seeded, as Click's: one draw's
    /// bytes, in little-endian order, are the address's host bits (so,
    /// as in Click, a seeded draw never sets the top bit of the last
    /// byte); unseeded, uniform host bits.
    fn draw(&self) -> Ipv4Addr {
        let r = if crate::util::is_seeded() {
            crate::util::random().swap_bytes()
        } else {
            fastrand::u32(..)
        };
        Ipv4Addr::from(self.network | (r & self.host_mask))
    }
}

impl Action for SetRandIPAddress {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.anno_mut().dst_ip = if self.pool.is_empty() {
            self.draw()
        } else {
            self.pool[crate::util::random_range(0, self.pool.len() as u32 - 1) as usize]
        };
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use std::collections::HashSet;

    fn addrs(decl: &str, n: usize) -> Vec<std::net::Ipv4Addr> {
        let h = harness(decl, 1);
        h.push(0, pkts(n, 60));
        h.output(0).iter().map(|p| p.anno().dst_ip).collect()
    }

    #[test]
    fn addresses_stay_in_the_prefix_and_vary() {
        let a = addrs("SetRandIPAddress(10.1.0.0/16)", 1000);
        assert!(a.iter().all(|x| x.octets()[..2] == [10, 1]));
        assert!(a.iter().collect::<HashSet<_>>().len() > 900);
        let a = addrs("SetRandIPAddress(192.168.3.7/32)", 10);
        assert!(a.iter().all(|x| *x == ip("192.168.3.7")));
    }

    #[test]
    fn limit_bounds_the_distinct_addresses() {
        let a = addrs("SetRandIPAddress(10.0.0.0/8, 5)", 2000);
        let distinct: HashSet<_> = a.iter().collect();
        assert!(distinct.len() <= 5 && distinct.len() >= 2, "{distinct:?}");
        assert!(a.iter().all(|x| x.octets()[0] == 10));
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("SetRandIPAddress(10.0.0.0/8, 0)", 1),
            "e :: SetRandIPAddress: LIMIT must be between 1 and 1048576",
        );
        assert_err(
            try_harness("SetRandIPAddress", 1),
            "e :: SetRandIPAddress: missing mandatory PREFIX argument",
        );
    }
}
