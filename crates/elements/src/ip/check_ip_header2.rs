//! # CheckIPHeader2
//!
//! CheckIPHeader2([OFFSET, keywords OFFSET, INTERFACES, BADSRC, GOODDST, CHECKSUM, VERBOSE, DETAILS])
//!
//! Checks IP headers, but not their checksums.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Behaves exactly like CheckIPHeader, except that it does not check
//! packets' IP checksums unless `CHECKSUM true` is given.
//!
//! Handlers: `count`, `drops`, `drop_details` (with DETAILS), as
//! CheckIPHeader.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Strip(14) -> CheckIPHeader2 -> ...;

use super::check_ip_header::{make_checker, CheckIPHeader};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckIPHeader2", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(super::check_ip_header::REASONS)
        .click_alignment(paraclick_runtime::ClickAlignment::NeedsAtOffsetArg {
            modulus: 4,
            offset: 0,
        })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckIPHeader, String> {
    make_checker(cx, false)
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn checksum_not_checked_by_default() {
        let h = harness("CheckIPHeader2", 2);
        let mut d = Ip::new("1.0.0.1", "2.0.0.2", 17).payload(b"abc").bytes();
        d[10] ^= 0xff;
        let mut v6 = d.clone();
        v6[0] = 0x65;
        let mut padded = d.clone();
        padded.extend_from_slice(&[0; 20]);
        h.push(0, vec![pkt(&d), pkt(&v6), pkt(&padded), pkt(&d[..10])]);
        let ok = h.output(0);
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].data(), &d[..]);
        assert_eq!(ok[1].data(), &d[..], "padding trimmed");
        assert_eq!(ok[0].anno().dst_ip, ip("2.0.0.2"));
        assert_eq!(h.output(1).len(), 2);
        assert_eq!(h.read("drops").unwrap(), "2");
    }

    #[test]
    fn checksum_keyword_turns_it_on() {
        let h = harness("CheckIPHeader2(CHECKSUM true, DETAILS true)", 2);
        let mut d = Ip::new("1.0.0.1", "2.0.0.2", 17).bytes();
        d[10] ^= 0xff;
        h.push(0, vec![pkt(&d)]);
        assert_eq!(h.output(1).len(), 1);
        assert!(h
            .read("drop_details")
            .unwrap()
            .contains("1 packets due to:          bad IP checksum"));
    }
}
