//! # FromCapDump
//!
//! FromCapDump(FILENAME [, keywords STOP, ACTIVE, ZERO, CHECKSUM, SAMPLE, FLOWID, AGGREGATE, TIMING, BURST])
//!
//! Reads packets from a 'cap' output file.
//!
//! Reads TCP packet descriptions from a file written by Mark Allman's
//! `cap` tool and emits the TCP packets they describe. An example:
//!
//!     SND 0
//!     INF - cap v2.13
//!     SYN > 1046102982.856142 0 0 40 0
//!     SYN < 1046102982.931832 0 0 40 0
//!     DAT > 1046102982.931941 1 1 1500 1460
//!     ACK < 1046102983.156387 1 1 40 0
//!     DAT > 1046102996.137294 5068 5000 1500 1460 FIN
//!
//! `SYN`, `DAT` and `ACK` lines have these fields: the packet type, the
//! direction (`>` from the sender, `<` from the receiver), the timestamp
//! in seconds since the epoch, the unique packet number, the packet
//! sequence number, the IP length, the payload length, and optional flags
//! (`FIN`). Other lines (`SND`, `INF`, blank lines, `#` comments) are
//! ignored. Lines are read one at a time (at most 65536 bytes); a data
//! line with missing or bad fields is skipped and counted in `errors`, and
//! the first such error is printed to standard error with the file name
//! and line number. FILENAME `-` is the standard input.
//!
//! Packets are IPv4 with a correct header length (the IP header checksum
//! is set only with CHECKSUM true, as FromIPSummaryDump and Click do),
//! and a TCP header: from FLOWID's source to its destination for `>`
//! lines, the other way for `<` lines. TCP flags: SYN for `SYN` lines
//! (SYN and ACK from the receiver), ACK for `DAT` and `ACK` lines, plus
//! FIN with the `FIN` flag. The IP length is the line's; packets stop
//! after the TCP header (the rest is in the extra length annotation)
//! unless CHECKSUM is true. Annotations: the timestamp; the aggregate
//! (AGGREGATE); the paint, 0 for `SYN` and `DAT` lines and 1 for `ACK`
//! lines; packet number 0 (Click's first `PACKET_NUMBER`) the unique
//! packet number, and packet number 1 the packet sequence number (see
//! AggregatePacketCounter).
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Keywords:
//! - `STOP` (boolean, default false): ask the router to stop at the end.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): data not set by the dump is zero.
//!   paraclick always zeroes it (false is accepted).
//! - `CHECKSUM` (boolean, default false): packets hold data bytes for
//!   their whole IP length and have correct TCP checksums.
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with
//!   this probability (fixed point: see `sampling_prob`).
//! - `FLOWID` (`SRC SPORT DST DPORT [PROTO]`, default
//!   `1.0.0.1 1 2.0.0.2 2`): the sender's and receiver's addresses and
//!   ports.
//! - `AGGREGATE` (unsigned, default 1): the aggregate annotation.
//! - `TIMING` (boolean, default false): keep the original spacing between
//!   packets on the router's clock (a paraclick addition).
//! - `BURST` (integer, default 1, as FromIPSummaryDump): packets per task
//!   run (a paraclick addition; Click emits one packet per run).
//!
//! Handlers:
//! - `sampling_prob` (read): the sampling probability used.
//! - `active` (read/write).
//! - `encap` (read): `IP`.
//! - `filename`, `filesize` (bytes, or `-`), `filepos` (read).
//! - `stop` (write): sets `active` to false and stops the router.
//! - `count` (read), `reset_counts` (write): packets emitted.
//! - `errors` (read): lines skipped as bad (a paraclick addition).
//!
//! Example: undelivered data packets (see AggregatePacketCounter).
//!
//!     FromCapDump(transfer.s, STOP true) -> CheckPaint(0) -> Discard;

use crate::common::sample_fixed;
use crate::ipsumdump::{FlowId, Values};
use crate::text_trace::{Parsed, Record, TextArgs, TextOpts, TextTrace};
use paraclick_packet::Timestamp;
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};
use std::net::Ipv4Addr;

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromCapDump", "0/1", "a", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TextTrace, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let _zero = a.read::<bool>("ZERO").unwrap_or(true);
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(false);
    let sample = a.read::<f64>("SAMPLE").unwrap_or(1.0);
    let flowid = a.read::<String>("FLOWID");
    let aggregate = a.read::<u32>("AGGREGATE").unwrap_or(1);
    let timing = a.read::<bool>("TIMING").unwrap_or(false);
    let burst = a
        .read::<usize>("BURST")
        .unwrap_or(crate::common::TRACE_BURST);
    a.complete()?;
    let flowid = match flowid {
        Some(f) => FlowId::parse(&f)
            .ok_or_else(|| format!("FLOWID: expected 'SRC SPORT DST DPORT [PROTO]', not '{f}'"))?,
        None => FlowId {
            src: Ipv4Addr::new(1, 0, 0, 1),
            sport: 1,
            dst: Ipv4Addr::new(2, 0, 0, 2),
            dport: 2,
            proto: None,
        },
    };
    let opts = TextOpts {
        multipacket: false,
        link: 0,
        flowid: Some(flowid),
        aggregate,
    };
    let args = TextArgs {
        filename,
        stop,
        active,
        timing,
        checksum,
        sample: sample_fixed(sample)?,
        burst,
    };
    TextTrace::new(cx, "FromCapDump", parse, opts, args)
}

fn parse(o: &TextOpts, line: &str) -> Parsed {
    let w: Vec<&str> = line.split_whitespace().collect();
    let ty = match w.first() {
        Some(&t @ ("SYN" | "DAT" | "ACK")) => t,
        _ => return Parsed::Nothing,
    };
    match record(o, ty, &w) {
        Ok(r) => Parsed::Record(Box::new(r)),
        Err(e) => Parsed::Bad(e),
    }
}

fn record(o: &TextOpts, ty: &str, w: &[&str]) -> Result<Record, String> {
    if w.len() < 7 {
        return Err(format!(
            "{ty} line with {} fields (expected 7 or more)",
            w.len()
        ));
    }
    let from_sender = match w[1] {
        ">" => true,
        "<" => false,
        d => return Err(format!("bad direction '{d}' (expected > or <)")),
    };
    let ts = Timestamp::parse(w[2])
        .filter(|t| t.0 >= 0)
        .ok_or_else(|| format!("bad timestamp '{}'", w[2]))?;
    let int = |i: usize, what: &str| -> Result<u32, String> {
        w[i].parse::<u32>()
            .map_err(|_| format!("bad {what} '{}'", w[i]))
    };
    let uniq = int(3, "packet number")?;
    let seq = int(4, "sequence number")?;
    let iplen = int(5, "IP length")?;
    let _payload = int(6, "payload length")?;
    if iplen > 0xffff {
        return Err(format!("IP length {iplen} too large"));
    }
    let mut flags: u16 = match (ty, from_sender) {
        ("SYN", true) => 0x02,
        ("SYN", false) => 0x12,
        _ => 0x10,
    };
    for f in &w[7..] {
        match *f {
            "FIN" => flags |= 0x01,
            other => return Err(format!("unknown flag '{other}'")),
        }
    }
    let Some(f) = o.flowid else {
        return Err("no FLOWID".into());
    };
    let ((src, sport), (dst, dport)) = if from_sender {
        ((f.src, f.sport), (f.dst, f.dport))
    } else {
        ((f.dst, f.dport), (f.src, f.sport))
    };
    let v = Values {
        ts: Some(ts),
        src: Some(src),
        dst: Some(dst),
        sport: Some(sport),
        dport: Some(dport),
        proto: Some(6),
        tcp_flags: Some(flags),
        len: Some(iplen),
        paint: Some(u8::from(ty == "ACK")),
        aggregate: Some(o.aggregate),
        ..Values::default()
    };
    Ok(Record {
        v,
        n: 1,
        end: None,
        len_total: None,
        whole_bytes: None,
        numbers: Some([uniq, seq]),
        fix: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_elements::analysis::{aggregate, packet_number};
    use paraclick_packet::wire::{Ipv4Header, TcpHeader};
    use paraclick_packet::{Packet, Timestamp};

    const CAP: &str = "SND 0\n\
        INF - cap v2.13\n\
        SYN > 1046102982.856142 0 0 40 0\n\
        SYN < 1046102982.931832 0 0 40 0\n\
        DAT > 1046102982.931941 1 1 1500 1460\n\
        ACK < 1046102983.156387 1 1 40 0\n\
        DAT > 1046102996.137294 5068 5000 1500 1460 FIN\n\
        DAT ? 1046102996.2 5069 5001 1500 1460\n\
        ACK < 1046102996.3 5069 5001 40\n\
        DAT > 1046102996.4 5070 5002 1500 1460 URG\n";

    fn read(text: &str, extra: &str) -> (Vec<Packet>, String) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("0.s");
        std::fs::write(&f, text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "c :: FromCapDump({}, STOP true{extra}) -> s :: TestSink;",
                q(&f)
            ),
        );
        run(&r);
        (sink(&r, "s"), handler(&r, "c.errors"))
    }

    fn flow(p: &Packet) -> (String, u16, String, u16, u16) {
        let ip = Ipv4Header::new_unchecked(p.data());
        let t = TcpHeader::new_checked(&p.data()[20..]).unwrap();
        (
            ip.src_addr().to_string(),
            t.src_port(),
            ip.dst_addr().to_string(),
            t.dst_port(),
            t.flags(),
        )
    }

    #[test]
    fn packets_and_annotations_from_a_cap_file() {
        let (ps, errors) = read(CAP, "");
        assert_eq!(ps.len(), 5);
        // A bad direction, too few fields, an unknown flag.
        assert_eq!(errors, "3");
        let f: Vec<_> = ps.iter().map(flow).collect();
        let fwd = |flags| ("1.0.0.1".to_string(), 1, "2.0.0.2".to_string(), 2, flags);
        let rev = |flags| ("2.0.0.2".to_string(), 2, "1.0.0.1".to_string(), 1, flags);
        assert_eq!(f, [fwd(0x02), rev(0x12), fwd(0x10), rev(0x10), fwd(0x11)]);
        let paints: Vec<u8> = ps.iter().map(|p| p.anno().paint).collect();
        assert_eq!(paints, [0, 0, 0, 1, 0]);
        let nums: Vec<(u32, u32)> = ps
            .iter()
            .map(|p| (packet_number(p, 0), packet_number(p, 1)))
            .collect();
        assert_eq!(nums, [(0, 0), (0, 0), (1, 1), (1, 1), (5068, 5000)]);
        assert!(ps.iter().all(|p| aggregate(p) == 1));
        assert_eq!(
            ps[2].timestamp(),
            Timestamp::from_parts(1046102982, 931_941_000)
        );
        // IP length 1500: the packet stops after the TCP header.
        let ip = Ipv4Header::new_unchecked(ps[2].data());
        assert_eq!(ip.total_len(), 1500);
        // No IP checksum without CHECKSUM true, as Click leaves it unset.
        assert_eq!(ip.checksum(), 0);
        assert_eq!(ps[2].len() as u32 + ps[2].anno().extra_length, 1500);
    }

    #[test]
    fn flowid_aggregate_checksum_and_sampling() {
        let (ps, _) = read(
            CAP,
            ", FLOWID \"10.0.0.1 80 10.0.0.2 1024\", AGGREGATE 7, CHECKSUM true",
        );
        assert_eq!(flow(&ps[1]).0, "10.0.0.2");
        assert_eq!(flow(&ps[1]).1, 1024);
        assert!(ps.iter().all(|p| aggregate(p) == 7));
        assert_eq!(ps[2].len(), 1500);
        let (none, _) = read(CAP, ", SAMPLE 0");
        assert!(none.is_empty());
        for (conf, want) in [
            (
                "FromCapDump(/nonexistent/x, SAMPLE 2) -> Discard;",
                "SAMPLE must be between 0 and 1",
            ),
            (
                "FromCapDump(/nonexistent/x, FLOWID 1.0.0.1) -> Discard;",
                "FLOWID: expected",
            ),
            ("FromCapDump(/nonexistent/x, BURST 0) -> Discard;", "BURST"),
        ] {
            let e = build_err(&full_registry(), conf);
            assert!(e.contains(want), "{conf}: {e}");
        }
    }
}
