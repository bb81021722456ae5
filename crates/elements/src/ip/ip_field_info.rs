//! # IPFieldInfo
//!
//! IPFieldInfo()
//!
//! Stores the names of IP packet fields.
//!
//! Ports: none.
//!
//! Holds the database of IP, TCP, UDP and ICMP header field names that
//! AggregateIP's FIELD (and so the elements that take a field as it does)
//! understands, and answers lookups of fields through its handlers. The
//! names are built in (every element knows them whether or not an
//! IPFieldInfo is configured, as in Click, where this element is not meant
//! for configurations); it takes no arguments.
//!
//! A field is a name (`ip tos`, `tcp flags`, `udp dport`, `sport`, ...; the
//! `names` handler lists them all) or an offset-length specification
//! (`ip[8:2]`, `transp{0-3}`, `data[4]`, ...), either optionally masked
//! (`ip src/8`, `ip[8:2] & 0x3F0`); see AggregateIP for the forms.
//!
//! Handlers:
//! - `lookup` (read with a parameter FIELD): `HEADER PROTO BIT_OFFSET
//!   BIT_LENGTH`, where HEADER is `ip`, `transp` or `payload` (what the
//!   offset counts from), PROTO the protocol the field needs (`any`,
//!   `tcpudp`, or a protocol name such as `tcp`), and the offset and
//!   length are in bits (`lookup tcp flags` gives `transp tcp 104 8`). A
//!   field that does not parse is an error saying why.
//! - `names` (read): the field names, one a line.
//!
//! Example:
//!
//!     f :: IPFieldInfo;
//!     // paraclick ctl read 'f.lookup ip src/8'  ->  ip any 96 8

use crate::analysis::aggregate_ip::{parse_field, Header, Proto, FIELD_NAMES};
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

pub struct IPFieldInfo;

pub fn spec() -> ClassSpec {
    ClassSpec::element("IPFieldInfo", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPFieldInfo, String> {
    cx.args().complete()?;
    Ok(IPFieldInfo)
}

/// The `lookup` handler's answer for FIELD.
pub(crate) fn lookup(field: &str) -> Result<String, String> {
    let f = parse_field(field, false)?;
    let header = match f.header {
        Header::Ip => "ip",
        Header::Transp => "transp",
        Header::Data => "payload",
    };
    let proto = match f.proto {
        Proto::Any => "any".to_string(),
        Proto::TcpOrUdp => "tcpudp".to_string(),
        Proto::One(1) => "icmp".to_string(),
        Proto::One(6) => "tcp".to_string(),
        Proto::One(17) => "udp".to_string(),
        Proto::One(n) => n.to_string(),
    };
    Ok(format!(
        "{header} {proto} {} {}",
        f.bit_offset, f.bit_length
    ))
}

impl Element for IPFieldInfo {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read_param("lookup", |_, param, _| {
            lookup(param.ok_or("lookup needs a FIELD")?)
        }),
        Handler::read("names", |_, _| {
            FIELD_NAMES.iter().map(|f| format!("{}\n", f.0)).collect()
        }),
    ];
}

#[cfg(test)]
mod tests {
    use super::lookup;
    use crate::test_kit::*;

    #[test]
    fn fields_by_name_offset_and_mask() {
        for (q, a) in [
            ("ip tos", "ip any 8 8"),
            ("ip fragoff", "ip any 51 13"),
            ("tcp flags", "transp tcp 104 8"),
            ("tcp ackf", "transp tcp 107 1"),
            ("udp dport", "transp udp 16 16"),
            ("icmp code", "transp icmp 8 8"),
            ("sport", "transp tcpudp 0 16"),
            ("ip src/8", "ip any 96 8"),
            ("ip[8:2] & 0x3F0", "ip any 70 6"),
            ("transp{3-5}", "transp any 3 3"),
            ("data[4]", "payload tcpudp 32 8"),
        ] {
            assert_eq!(lookup(q).as_deref(), Ok(a), "{q}");
        }
        for q in ["ip nosuch", "ip[8:9]", "ip tos/9", "ip[8:2] & 0x5"] {
            assert!(lookup(q).is_err(), "{q}");
        }
    }

    #[test]
    fn element_handlers_and_no_arguments() {
        let r = build(&reg(), "f :: IPFieldInfo;");
        assert_eq!(handler(&r, "f.lookup ip dst"), "ip any 128 32");
        let names = handler(&r, "f.names");
        assert_eq!(names.lines().count(), 41);
        assert!(names.lines().any(|l| l == "tcp urp"));
        assert!(!build_err(&reg(), "IPFieldInfo(x);").is_empty());
    }
}
