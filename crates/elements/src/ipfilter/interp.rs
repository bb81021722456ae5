//! A straightforward interpreter of pattern ASTs, written from the
//! documented semantics independently of `program.rs`'s lowering, to
//! cross-check the compiled programs. Test-only.

use super::lang::{Expr, IpField, Op, PortProto, Prim, Rel, Sd};
use super::program::Action;
use paraclick_packet::wire::Ipv4Header;
use paraclick_runtime::Verdict;

/// The IP header view, if `ip` holds at least `need` bytes.
fn hdr(ip: &[u8], need: usize) -> Option<Ipv4Header<&[u8]>> {
    (ip.len() >= need).then(|| Ipv4Header::new_unchecked(ip))
}

fn rel_holds(r: &Rel, v: u32) -> bool {
    let v = v & r.mask.unwrap_or(u32::MAX);
    match r.op {
        Op::Eq => v == r.a,
        Op::Ne => v != r.a,
        Op::Lt => v < r.a,
        Op::Le => v <= r.a,
        Op::Gt => v > r.a,
        Op::Ge => v >= r.a,
        Op::In => r.a <= v && v <= r.b,
        Op::NotIn => !(r.a <= v && v <= r.b),
        Op::Nonzero => v != 0,
    }
}

fn protocol(ip: &[u8]) -> Option<u8> {
    hdr(ip, 10).map(|h| h.protocol())
}

/// The transport header (from the IHL on), in a first fragment.
fn transport(ip: &[u8]) -> Option<&[u8]> {
    let h = hdr(ip, 8)?;
    if h.frag_offset() != 0 {
        return None;
    }
    ip.get(h.ihl() as usize * 4..)
}

fn bytes_be(d: &[u8], off: usize, len: usize) -> Option<u32> {
    let b = d.get(off..off + len)?;
    Some(b.iter().fold(0u32, |x, &y| (x << 8) | u32::from(y)))
}

fn combine(sd: Sd, s: bool, d: bool) -> bool {
    match sd {
        Sd::Src => s,
        Sd::Dst => d,
        Sd::Or => s || d,
        Sd::And => s && d,
    }
}

fn prim(p: &Prim, ip: &[u8]) -> bool {
    match *p {
        Prim::Addr { sd, addr, mask, ne } => {
            let test = |a: Option<u32>| a.is_some_and(|a| ((a & mask) == addr) != ne);
            let s = test(hdr(ip, 16).map(|h| u32::from(h.src_addr())));
            let d = test(hdr(ip, 20).map(|h| u32::from(h.dst_addr())));
            combine(if ne { sd.dual() } else { sd }, s, d)
        }
        // This view has no MAC header: Ethernet tests fail.
        Prim::Ether { .. } => false,
        Prim::Ip { field, rel } => {
            let v = match field {
                IpField::Vers => hdr(ip, 1).map(|h| u32::from(h.version())),
                IpField::Hl => hdr(ip, 1).map(|h| u32::from(h.ihl())),
                IpField::Tos => hdr(ip, 2).map(|h| u32::from(h.tos())),
                IpField::Dscp => hdr(ip, 2).map(|h| u32::from(h.dscp())),
                IpField::Id => hdr(ip, 6).map(|h| u32::from(h.ident())),
                IpField::Ttl => hdr(ip, 9).map(|h| u32::from(h.ttl())),
                IpField::Proto => protocol(ip).map(u32::from),
            };
            v.is_some_and(|v| rel_holds(&rel, v))
        }
        Prim::Frag => hdr(ip, 8).is_some_and(|h| h.more_frags() || h.frag_offset() != 0),
        Prim::Ect => hdr(ip, 2).is_some_and(|h| h.ecn() != 0),
        Prim::Ce => hdr(ip, 2).is_some_and(|h| h.ecn() == 3),
        Prim::Port { sd, proto, rel } => {
            let pr = protocol(ip);
            let proto_ok = match proto {
                PortProto::Tcp => pr == Some(6),
                PortProto::Udp => pr == Some(17),
                PortProto::Any => pr == Some(6) || pr == Some(17),
            };
            let Some(th) = transport(ip).filter(|_| proto_ok) else {
                return false;
            };
            let s = bytes_be(th, 0, 2).is_some_and(|v| rel_holds(&rel, v));
            let d = bytes_be(th, 2, 2).is_some_and(|v| rel_holds(&rel, v));
            combine(if rel.op.is_negative() { sd.dual() } else { sd }, s, d)
        }
        Prim::TcpOpt(flag) => {
            protocol(ip) == Some(6)
                && transport(ip)
                    .and_then(|t| t.get(13))
                    .is_some_and(|&f| f & flag != 0)
        }
        Prim::TcpWin(rel) => {
            protocol(ip) == Some(6)
                && transport(ip)
                    .and_then(|t| bytes_be(t, 14, 2))
                    .is_some_and(|v| rel_holds(&rel, v))
        }
        Prim::IcmpType(rel) => {
            protocol(ip) == Some(1)
                && transport(ip)
                    .and_then(|t| t.first())
                    .is_some_and(|&v| rel_holds(&rel, u32::from(v)))
        }
        Prim::IpBytes { off, len, rel } => {
            bytes_be(ip, off as usize, len as usize).is_some_and(|v| rel_holds(&rel, v))
        }
        Prim::TranspBytes {
            proto,
            off,
            len,
            rel,
        } => {
            proto.is_none_or(|p| protocol(ip) == Some(p))
                && transport(ip)
                    .and_then(|t| bytes_be(t, off as usize, len as usize))
                    .is_some_and(|v| rel_holds(&rel, v))
        }
    }
}

/// Evaluates a pattern on the bytes from the IP header on.
pub fn eval(e: &Expr, ip: &[u8]) -> bool {
    match e {
        Expr::Const(b) => *b,
        Expr::Prim(p) => prim(p, ip),
        Expr::Not(x) => !eval(x, ip),
        Expr::And(v) => v.iter().all(|x| eval(x, ip)),
        Expr::Or(v) => v.iter().any(|x| eval(x, ip)),
        Expr::Cond(c, a, b) => {
            if eval(c, ip) {
                eval(a, ip)
            } else {
                eval(b, ip)
            }
        }
    }
}

/// What a list of rules does with `ip`: the first match's action.
pub fn classify(rules: &[(Expr, Action)], ip: &[u8]) -> Verdict {
    for (e, a) in rules {
        if eval(e, ip) {
            return match *a {
                Action::Out(k) => Verdict::Out(k),
                Action::Drop => Verdict::DropFor(0),
            };
        }
    }
    Verdict::Drop
}
