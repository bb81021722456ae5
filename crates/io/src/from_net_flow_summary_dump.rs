//! # FromNetFlowSummaryDump
//!
//! FromNetFlowSummaryDump(FILENAME [, keywords STOP, ACTIVE, ZERO, MULTIPACKET, LINK, TIMING, CHECKSUM, BURST])
//!
//! Reads packets from a NetFlow summary file.
//!
//! Reads flow records from a file of NetFlow data in the ASCII summary
//! format below, builds an IPv4 packet from each, and emits it;
//! optionally stops the router at the end of the file. FILENAME `-` is the
//! standard input.
//!
//! The format: lines are read one at a time (at most 65536 bytes; a longer
//! line is skipped as bad). Blank lines and lines starting with `!` or `#`
//! are ignored. A data line has 15 or more fields separated by vertical
//! bars `|`; these are read:
//!
//!     Field  Meaning                       Example
//!     0      source IP address             192.4.1.32
//!     1      destination IP address        18.26.4.44
//!     3      input interface number        14
//!     4      output interface number       16
//!     5      packet count in flow          5
//!     6      byte count in flow            10932
//!     7      flow timestamp (UNIX-style)   998006995
//!     8      flow end timestamp            998006999
//!     9      source port                   3917
//!     10     destination port              80
//!     12     TCP flags (OR of all packets) 18
//!     13     IP protocol                   6
//!     14     IP TOS bits                   0
//!
//! A line with fewer fields or a value that does not parse (a packet
//! count of 0 included) is skipped and counted in `errors`; the first such
//! error is printed to standard error with the file name and line number.
//!
//! Built packets are IPv4 with header length 5 (IP and transport
//! checksums only with CHECKSUM true, as Click), TCP or UDP
//! headers as the protocol says, the other data zero. A packet's
//! timestamp annotation is the flow end timestamp, or the flow timestamp
//! when the end is zero; its first timestamp annotation is the flow
//! timestamp. Without MULTIPACKET a flow is one packet whose IP length is
//! the flow's mean packet length, whose extra packets annotation is the
//! packet count minus one, and whose length plus extra length annotation
//! is the flow's byte count (so AggregateCounter and the rate elements
//! count the whole flow). The paint annotation is the link (see LINK).
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Keywords:
//! - `STOP` (boolean, default false): ask the router to stop at the end.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): data not set by the dump is zero.
//!   paraclick always zeroes it (false is accepted).
//! - `MULTIPACKET` (boolean, default false): emit one packet per packet
//!   of the flow, their timestamps spread evenly from the flow timestamp
//!   to the flow end timestamp, their lengths sharing the byte count.
//! - `LINK` (`input`, `output` or `both`; default `input`): the paint
//!   annotation is the input interface number, the output interface
//!   number (each pinned at 255), or both, the input's in the upper 4 bits
//!   and the output's in the lower 4 (each pinned at 15).
//! - `TIMING` (boolean, default false): keep the original spacing between
//!   packets on the router's clock (simulated under `--simtime`).
//! - `CHECKSUM` (boolean, default false): packets hold data bytes for
//!   their whole IP length and correct TCP/UDP checksums (a paraclick
//!   addition, as in FromIPSummaryDump).
//! - `BURST` (integer, default 1, as FromIPSummaryDump): packets per task
//!   run (a paraclick addition; Click emits one packet per run).
//!
//! Handlers:
//! - `count` (read): packets emitted. `reset_counts` (write): resets it.
//! - `active` (read/write).
//! - `encap` (read): `IP` (for ToDump's USE_ENCAP_FROM).
//! - `filename`, `filesize` (bytes, or `-`), `filepos` (read).
//! - `stop` (write): sets `active` to false and stops the router.
//! - `errors` (read): lines skipped as bad (a paraclick addition).
//!
//! Example:
//!
//!     FromNetFlowSummaryDump(flows.txt, STOP true) -> ac :: AggregateCounter(BYTES true) -> Discard;

use crate::ipsumdump::Values;
use crate::text_trace::{Parsed, Record, TextArgs, TextOpts, TextTrace};
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromNetFlowSummaryDump", "0/1", "a", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

const LINK_INPUT: u8 = 0;
const LINK_OUTPUT: u8 = 1;
const LINK_BOTH: u8 = 2;

fn make(cx: &mut ConfigCx<'_>) -> Result<TextTrace, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let _zero = a.read::<bool>("ZERO").unwrap_or(true);
    let multipacket = a.read::<bool>("MULTIPACKET").unwrap_or(false);
    let link = a.read::<String>("LINK");
    let timing = a.read::<bool>("TIMING").unwrap_or(false);
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(false);
    let burst = a
        .read::<usize>("BURST")
        .unwrap_or(crate::common::TRACE_BURST);
    a.complete()?;
    let link = match link.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("input") => LINK_INPUT,
        Some("output") => LINK_OUTPUT,
        Some("both") => LINK_BOTH,
        Some(o) => {
            return Err(format!(
                "LINK: expected 'input', 'output' or 'both', not '{o}'"
            ))
        }
    };
    let opts = TextOpts {
        multipacket,
        link,
        flowid: None,
        aggregate: 0,
    };
    let args = TextArgs {
        filename,
        stop,
        active,
        timing,
        checksum,
        sample: 1 << crate::common::SAMPLING_SHIFT,
        burst,
    };
    TextTrace::new(cx, "FromNetFlowSummaryDump", parse, opts, args)
}

fn num<T: std::str::FromStr>(fields: &[&str], i: usize, what: &str) -> Result<T, String> {
    let w = fields[i].trim();
    w.parse()
        .map_err(|_| format!("field {i} ({what}): bad value '{w}'"))
}

fn time(fields: &[&str], i: usize, what: &str) -> Result<Timestamp, String> {
    let w = fields[i].trim();
    Timestamp::parse(w)
        .filter(|t| t.0 >= 0)
        .ok_or_else(|| format!("field {i} ({what}): bad time '{w}'"))
}

/// Sets what the packet builder does not: the first timestamp.
fn first_ts(p: &mut Packet, v: &Values) {
    if let Some(t) = v.first_ts {
        paraclick_elements::standard::set_timestamp::set_first_timestamp(p, t);
    }
}

fn parse(o: &TextOpts, line: &str) -> Parsed {
    let t = line.trim();
    if t.is_empty() || t.starts_with('!') || t.starts_with('#') {
        return Parsed::Nothing;
    }
    match parse_record(o, t) {
        Ok(r) => Parsed::Record(Box::new(r)),
        Err(e) => Parsed::Bad(e),
    }
}

fn parse_record(o: &TextOpts, t: &str) -> Result<Record, String> {
    let f: Vec<&str> = t.splitn(16, '|').collect();
    if f.len() < 15 {
        return Err(format!("{} fields (expected at least 15)", f.len()));
    }
    let src = num(&f, 0, "source address")?;
    let dst = num(&f, 1, "destination address")?;
    let input: u32 = num(&f, 3, "input interface")?;
    let output: u32 = num(&f, 4, "output interface")?;
    let packets: u64 = num(&f, 5, "packet count")?;
    let bytes: u64 = num(&f, 6, "byte count")?;
    let start = time(&f, 7, "flow timestamp")?;
    let end = time(&f, 8, "flow end timestamp")?;
    let sport: u16 = num(&f, 9, "source port")?;
    let dport: u16 = num(&f, 10, "destination port")?;
    let flags: u8 = num(&f, 12, "TCP flags")?;
    let proto: u8 = num(&f, 13, "IP protocol")?;
    let tos: u8 = num(&f, 14, "IP TOS")?;
    if packets == 0 {
        return Err("packet count 0".into());
    }
    let paint = match o.link {
        LINK_INPUT => input.min(255) as u8,
        LINK_OUTPUT => output.min(255) as u8,
        _ => (input.min(15) << 4 | output.min(15)) as u8,
    };
    let mut v = Values {
        src: Some(src),
        dst: Some(dst),
        proto: Some(proto),
        tos: Some(tos),
        paint: Some(paint),
        first_ts: Some(start),
        ..Values::default()
    };
    if proto == 6 || proto == 17 {
        v.sport = Some(sport);
        v.dport = Some(dport);
    }
    if proto == 6 {
        v.tcp_flags = Some(u16::from(flags));
    }
    let last = if end.is_zero() { start } else { end };
    if o.multipacket {
        v.ts = Some(start);
        return Ok(Record {
            v,
            n: packets,
            end: Some(last),
            len_total: Some(bytes),
            whole_bytes: None,
            numbers: None,
            fix: Some(first_ts),
        });
    }
    v.ts = Some(last);
    v.count = Some(u32::try_from(packets).unwrap_or(u32::MAX));
    v.len = Some((bytes / packets).min(0xffff) as u32);
    Ok(Record {
        v,
        n: 1,
        end: None,
        len_total: None,
        whole_bytes: Some(bytes),
        numbers: None,
        fix: Some(first_ts),
    })
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_elements::standard::set_timestamp::first_timestamp;
    use paraclick_packet::wire::{Ipv4Header, TcpHeader};
    use paraclick_packet::{Packet, Timestamp};

    const FLOWS: &str = "! a comment\n\
        # another\n\
        \n\
        192.4.1.32|18.26.4.44|0|14|16|5|10932|998006995|998006999|3917|80|0|18|6|0\n\
        1.0.0.1|2.0.0.2|9.9.9.9|300|2|2|100|10.5|0|53|5353|0|0|17|16|more|fields\n\
        1.0.0.1|2.0.0.2|0|1|2|0|40|1|0|53|53|0|0|17|4\n\
        1.0.0.1|2.0.0.2|0|1|2\n\
        1.0.0.x|2.0.0.2|0|1|2|1|40|1|0|53|53|0|0|17|4\n";

    /// The packets FromNetFlowSummaryDump(file, STOP true EXTRA) emits,
    /// and its `errors` handler.
    fn read(text: &str, extra: &str) -> (Vec<Packet>, String) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("flows.txt");
        std::fs::write(&f, text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "n :: FromNetFlowSummaryDump({}, STOP true{extra}) -> s :: TestSink;",
                q(&f)
            ),
        );
        run(&r);
        (sink(&r, "s"), handler(&r, "n.errors"))
    }

    #[test]
    fn one_packet_per_flow_standing_for_the_flow() {
        let (ps, errors) = read(FLOWS, "");
        assert_eq!(ps.len(), 2);
        // Three bad lines: a zero packet count, too few fields, a bad address.
        assert_eq!(errors, "3");
        let ip = Ipv4Header::new_unchecked(ps[0].data());
        assert_eq!(ip.src_addr().to_string(), "192.4.1.32");
        assert_eq!(ip.dst_addr().to_string(), "18.26.4.44");
        assert_eq!(ip.protocol(), 6);
        assert_eq!(ip.total_len(), 10932 / 5);
        // No IP checksum without CHECKSUM true, as Click leaves it unset.
        assert_eq!(ip.checksum(), 0);
        let tcp = TcpHeader::new_checked(&ps[0].data()[20..]).unwrap();
        assert_eq!((tcp.src_port(), tcp.dst_port()), (3917, 80));
        assert_eq!(ps[0].data()[33], 18, "TCP flags");
        let a = ps[0].anno();
        assert_eq!(a.extra_packets, 4);
        assert_eq!(ps[0].len() as u32 + a.extra_length, 10932);
        assert_eq!(a.paint, 14, "LINK input");
        assert_eq!(ps[0].timestamp(), Timestamp::from_parts(998006999, 0));
        assert_eq!(first_timestamp(&ps[0]), Timestamp::from_parts(998006995, 0));
        // Second flow: UDP, TOS 16, end 0 so stamped with the start,
        // input interface 300 pinned at 255.
        let ip = Ipv4Header::new_unchecked(ps[1].data());
        assert_eq!((ip.protocol(), ps[1].data()[1]), (17, 16));
        assert_eq!(ps[1].timestamp(), Timestamp::from_parts(10, 500_000_000));
        assert_eq!(ps[1].anno().paint, 255);
        assert_eq!(ps[1].len() as u32 + ps[1].anno().extra_length, 100);
    }

    #[test]
    fn multipacket_spreads_packets_over_the_flow() {
        let line = "1.0.0.1|2.0.0.2|0|3|20|3|301|100|102|1|2|0|0|17|0\n";
        let (ps, _) = read(line, ", MULTIPACKET true, LINK both, CHECKSUM true");
        assert_eq!(ps.len(), 3);
        let ts: Vec<i64> = ps.iter().map(|p| p.timestamp().0).collect();
        assert_eq!(ts, [100_000_000_000, 101_000_000_000, 102_000_000_000]);
        let lens: Vec<usize> = ps.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [101, 100, 100]);
        assert!(ps.iter().all(|p| p.anno().extra_packets == 0));
        // LINK both: input 3 in the upper 4 bits, output 20 pinned at 15.
        assert_eq!(ps[0].anno().paint, 0x3f);
        let (ps, _) = read(line, ", LINK output");
        assert_eq!(ps[0].anno().paint, 20);
    }

    #[test]
    fn bad_arguments_and_long_lines() {
        let e = paraclick_runtime::testing::build_err(
            &full_registry(),
            "FromNetFlowSummaryDump(/nonexistent/x, LINK sideways) -> Discard;",
        );
        assert!(
            e.contains("LINK: expected 'input', 'output' or 'both'"),
            "{e}"
        );
        let mut text = "x".repeat(200_000);
        text.push('\n');
        text.push_str("1.0.0.1|2.0.0.2|0|3|20|1|40|100|0|1|2|0|0|17|0\n");
        let (ps, errors) = read(&text, "");
        assert_eq!((ps.len(), errors.as_str()), (1, "1"));
    }
}
