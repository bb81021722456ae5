//! # FTPPortMapper
//!
//! FTPPortMapper(CONTROL_REWRITER, DATA_REWRITER, DATA_REWRITER_INPUT)
//!
//! Lets active FTP through a rewriter: translates the address and port in
//! FTP control connections' `PORT` commands.
//!
//! Ports: 1 input, 1 output. Processing: push.
//!
//! Expects FTP control packets (IP, with the IP header annotation set),
//! on their way to CONTROL_REWRITER, a TCPRewriter that translates the
//! control connection. A packet whose TCP payload begins with a complete
//! `PORT h1,h2,h3,h4,p1,p2` command line, of a control connection
//! CONTROL_REWRITER has a mapping for, announces data port
//! `h1.h2.h3.h4:p1*256+p2`. FTPPortMapper then:
//!
//! - makes the data connection's mapping in DATA_REWRITER (any rewriter;
//!   it may be CONTROL_REWRITER), as if its first packet, from the
//!   announced address and port to the control connection's destination
//!   address and port minus one (FTP's data port), had arrived on input
//!   DATA_REWRITER_INPUT (usually a `pattern` specification);
//! - rewrites the command to announce that mapping's new source address
//!   and port instead (the line's end, `\n` or `\r\n`, and anything after
//!   it stay), with the IP length and both checksums;
//! - tells CONTROL_REWRITER that the connection's sequence numbers change
//!   by the difference in length from the end of this command on: it
//!   shifts later sequence numbers of this direction, and the other
//!   direction's acknowledgement numbers and SACK blocks back (see
//!   TCPRewriter).
//!
//! The packet's addresses and ports are left for CONTROL_REWRITER.
//! Packets that are not such commands pass unchanged. A retransmitted
//! command is rewritten again without changing the sequence numbers
//! twice.
//!
//! Handlers:
//! - `mapped` (read): PORT commands rewritten.
//!
//! Example:
//!
//!     IPRewriterPatterns(to_world 192.0.2.1 1024-65535# - -);
//!     rw :: TCPRewriter(pattern to_world 0 1, drop);
//!     from_lan -> CheckIPHeader -> IPClassifier(tcp dst port 21)
//!         -> FTPPortMapper(rw, rw, 0) -> [0]rw;

use super::flow::{ip_offset, FlowId, TCP};
use super::rewriter::{clock_ms, Class, MapHandle, Rewriter};
use paraclick_packet::wire::checksum;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::net::Ipv4Addr;
use std::sync::OnceLock;

pub struct FTPPortMapper {
    control: String,
    data: String,
    input: usize,
    /// The two rewriters, found at initialization.
    rws: OnceLock<(MapHandle, MapHandle)>,
    mapped: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FTPPortMapper", "1/1", "h/h", make)
        .shared("FTP: makes mappings in a rewriter's shared table")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FTPPortMapper, String> {
    let mut a = cx.args();
    let control: String = a.read_mp("CONTROL_REWRITER");
    let data: String = a.read_mp("DATA_REWRITER");
    let input: usize = a.read_mp("DATA_REWRITER_INPUT");
    a.complete()?;
    Ok(FTPPortMapper {
        control,
        data,
        input,
        rws: OnceLock::new(),
        mapped: PerThreadCount::new(cx.nthreads),
    })
}

/// A `PORT` command at the start of `payload`: its address and port, and
/// where its arguments end (the line's end follows).
fn parse_port(payload: &[u8]) -> Option<(Ipv4Addr, u16, usize)> {
    let rest = payload.strip_prefix(b"PORT ")?;
    let eol = rest.iter().position(|&b| b == b'\n')?;
    let mut end = eol;
    if end > 0 && rest[end - 1] == b'\r' {
        end -= 1;
    }
    let args = std::str::from_utf8(&rest[..end]).ok()?;
    let v: Vec<u8> = args
        .trim()
        .split(',')
        .map(|x| x.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .ok()?;
    let [a, b, c, d, p1, p2] = v[..] else {
        return None;
    };
    Some((
        Ipv4Addr::new(a, b, c, d),
        u16::from(p1) << 8 | u16::from(p2),
        5 + end,
    ))
}

impl FTPPortMapper {
    fn try_map(&self, cx: &Cx<'_>, p: &mut Packet) -> Option<()> {
        let (control, data) = self.rws.get()?;
        let ip = ip_offset(p)?;
        let d = p.data();
        let h = d.get(ip..ip + 20)?;
        let hlen = usize::from(h[0] & 15) * 4;
        if h[9] != TCP || u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0 {
            return None;
        }
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let th = ip + hlen;
        let t = d.get(th..th + 20)?;
        let thlen = usize::from(t[12] >> 4) * 4;
        let pay = th + thlen;
        let end = ip + total;
        if end > d.len() || pay > end {
            return None;
        }
        let (addr, port, cmd_end) = parse_port(&d[pay..end])?;
        let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        let sport = u16::from_be_bytes([t[0], t[1]]);
        let dport = u16::from_be_bytes([t[2], t[3]]);
        let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
        let ctl = FlowId::new(src, sport, dst, dport);
        let now = clock_ms(cx);
        if !control.has_mapping(TCP, ctl, now) {
            return None;
        }
        let data_flow = FlowId::new(addr, port, dst, dport.wrapping_sub(1));
        let new = data.map_as_input(self.input, TCP, data_flow, now)?;
        let a = Ipv4Addr::from(new.saddr).octets();
        let text = format!(
            "PORT {},{},{},{},{},{}",
            a[0],
            a[1],
            a[2],
            a[3],
            new.sport >> 8,
            new.sport & 0xff
        );
        let old_len = end - pay;
        let mut payload = text.into_bytes();
        payload.extend_from_slice(&d[pay + cmd_end..end]);
        let new_len = payload.len();
        let new_total = total + new_len - old_len;
        let new_end = pay + new_len;
        if new_total > 65535 {
            return None;
        }
        let tail: Vec<u8> = d[end..].to_vec();
        p.set_len(new_end + tail.len()).ok()?;
        let d = p.data_mut();
        d[pay..new_end].copy_from_slice(&payload);
        d[new_end..].copy_from_slice(&tail);
        d[ip + 2..ip + 4].copy_from_slice(&(new_total as u16).to_be_bytes());
        d[ip + 10] = 0;
        d[ip + 11] = 0;
        let c = checksum::checksum(&d[ip..ip + hlen]);
        d[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        d[th + 16] = 0;
        d[th + 17] = 0;
        let seg = &d[th..new_end];
        let ps = checksum::pseudo_header_sum(src, dst, TCP, seg.len() as u16);
        let c = !checksum::combine(&[ps, checksum::sum(seg)]);
        d[th + 16..th + 18].copy_from_slice(&c.to_be_bytes());
        let change = new_len as i64 - old_len as i64;
        if change != 0 {
            control
                .table
                .add_seq_delta(TCP, ctl, seq.wrapping_add(old_len as u32), change as i32);
        }
        Some(())
    }
}

/// Whether `p` may carry a PORT command (its TCP payload starts so).
fn maybe_port(p: &Packet) -> bool {
    let Some(ip) = ip_offset(p) else {
        return false;
    };
    let d = p.data();
    let Some(h) = d.get(ip..ip + 20) else {
        return false;
    };
    let th = ip + usize::from(h[0] & 15) * 4;
    if h[9] != TCP {
        return false;
    }
    let Some(&off) = d.get(th + 12) else {
        return false;
    };
    let pay = th + usize::from(off >> 4) * 4;
    d.get(pay..pay + 5) == Some(b"PORT ")
}

impl Element for FTPPortMapper {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("mapped", |e, _| e.mapped.get().to_string())];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let find = |n: &str, what: &str| -> Result<MapHandle, String> {
            let i = ix
                .find(n)
                .ok_or_else(|| format!("{what}: no element named '{n}'"))?;
            ix.element::<Rewriter>(i)
                .map(Rewriter::map_handle)
                .ok_or_else(|| format!("{what}: '{n}' is not a rewriter"))
        };
        let control = find(&self.control, "CONTROL_REWRITER")?;
        if control.class != Class::Tcp {
            return Err(format!(
                "CONTROL_REWRITER: '{}' must be a TCPRewriter",
                self.control
            ));
        }
        let data = find(&self.data, "DATA_REWRITER")?;
        if self.input >= data.ninputs {
            return Err(format!(
                "DATA_REWRITER_INPUT: '{}' has no input {}",
                self.data, self.input
            ));
        }
        let _ = self.rws.set((control, data));
        Ok(())
    }

    /// Packets go on in order; a PORT command goes on alone, after the
    /// packets before it (which may be the ones that make the control
    /// connection's mapping downstream) and before those after it.
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        if !batch.iter().any(maybe_port) {
            cx.push(0, batch);
            return;
        }
        let mut run = Batch::new();
        for mut p in batch {
            if !maybe_port(&p) {
                run.push(p);
                continue;
            }
            if !run.is_empty() {
                cx.push(0, std::mem::take(&mut run));
            }
            if self.try_map(cx, &mut p).is_some() {
                self.mapped.inc(cx.thread());
            }
            cx.push(0, Batch::from(vec![p]));
        }
        if !run.is_empty() {
            cx.push(0, run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_port;
    use std::net::Ipv4Addr;

    #[test]
    fn port_commands() {
        assert_eq!(
            parse_port(b"PORT 10,0,0,2,3,9\r\nNOOP\r\n"),
            Some((Ipv4Addr::new(10, 0, 0, 2), 777, 17))
        );
        assert_eq!(
            parse_port(b"PORT 1,2,3,4,0,21\n"),
            Some((Ipv4Addr::new(1, 2, 3, 4), 21, 17))
        );
        assert_eq!(parse_port(b"PORT 1,2,3,4,0,21"), None, "no line end");
        assert_eq!(parse_port(b"PORT 1,2,3,4,0\n"), None);
        assert_eq!(parse_port(b"PORT 1,2,3,256,0,1\n"), None);
        assert_eq!(
            parse_port(b"NOOP\nPORT 1,2,3,4,0,21\n"),
            None,
            "first command only"
        );
    }
}
