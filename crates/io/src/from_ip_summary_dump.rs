//! # FromIPSummaryDump
//!
//! FromIPSummaryDump(FILENAME [, keywords DATA, STOP, TIMING, ACTIVE, ZERO, CHECKSUM, PROTO, SAMPLE, CONTENTS, FLOWID, ALLOW_NONEXISTENT, BURST])
//!
//! Reads packets from an IP summary dump file.
//!
//! Reads IP packet descriptions from a file in Click's IP summary dump
//! format (as written by ToIPSummaryDump or ipsumdump), builds an IPv4
//! packet from each line, and emits it; optionally stops the router at the
//! end of the file. FILENAME `-` is the standard input. The file is read
//! line by line through a buffer.
//!
//! The format: lines starting with `!` are comments and directives
//! (`!IPSummaryDump 1.3`; `!data` or `!contents` followed by the field
//! names of the data lines; `!flowid SRC SPORT DST DPORT [PROTO]` giving
//! default addresses and ports; `!proto PROTO` (`T`, `U`, `I`, a
//! number or a name such as `icmp`) giving the protocol of the following lines' packets when they
//! name none, in place of the PROTO keyword); lines starting with `#` and blank lines
//! are ignored; every other line describes one packet, its fields separated
//! by spaces, `-` for a field that is not known. A line may hold fewer
//! fields than `!data` names. A line that does not parse (a bad value, or
//! no `!data` line before it) is skipped and counted in `errors`; the first
//! such error is printed to standard error.
//!
//! Binary dumps (ToIPSummaryDump's `BINARY true`, ipsumdump `--binary`):
//! after a `!binary` line the rest of the file is binary records, each a
//! 4-byte length word in network byte order (the word included; its high
//! bit marks a metadata record, whose text is handled like a `!` or `#`
//! line), then the fields of the `!data` line (or CONTENTS) in order, in
//! the fixed widths Click documents: 8 bytes for `timestamp` and
//! `first_timestamp` (seconds, microseconds), `ntimestamp` (seconds,
//! nanoseconds) and `ts_usec1`; 4 for `ts_sec`, `ts_usec`, `ip_src`,
//! `ip_dst`, `ip_len`, `udp_len`, `payload_len`, `ip_capture_len`, `count`,
//! `tcp_seq`, `tcp_ack`; 2 for `sport`, `dport`, `ip_id`, `ip_fragoff` (the
//! IP flags and offset word); 1 for `ip_proto`, `ip_tos`, `ip_ttl`,
//! `ip_frag` (its character), `tcp_flags`, `direction` (the paint value);
//! 2 for `tcp_window` (these two as Click 2.x writes them); 16 for `payload_md5` and
//! `payload_md5_hex`; 6 for `eth_src` and `eth_dst`; a length byte then
//! the option bytes for `ip_opt`, `tcp_opt`, `tcp_ntopt`, `tcp_sack`.
//! Other fields have no documented binary form: a `!binary` line after a
//! `!data` line naming one ends the file with an error. A record too short for its fields, a truncated record at the
//! end of the file, or a field value that is not valid is skipped and
//! counted in `errors`; a length word below 4 (nothing to resynchronize
//! on) ends the file with a counted error.
//!
//! Fields understood: `timestamp` (`ts`), `ntimestamp`, `ts_sec`,
//! `ts_usec`, `ts_usec1`, `ip_src` (`src`), `ip_dst` (`dst`), `ip_tos`,
//! `ip_dscp`, `ip_ecn`, `ip_ttl`, `ip_frag`, `ip_fragoff`, `ip_id`,
//! `ip_sum`, `ip_proto` (`T`, `U`, `I` or a number), `ip_hl`, `ip_len`
//! (`len`), `sport`, `dport`, `tcp_seq`, `tcp_ack`, `tcp_off`, `tcp_flags`
//! (letters `FSRPAUECN`, `.` for none, or a number), `tcp_window`,
//! `tcp_urp`, `udp_len`, `icmp_type`, `icmp_code`, `payload_len`, `count`
//! (sets the extra packets annotation), `direction`/`link`/`paint` (sets
//! the paint annotation; `>` is 0, `<` is 1). `ip_capture_len`, `eth_src`,
//! `eth_dst` and `wire_len` are accepted and ignored; other names are an
//! error. Also, in ToIPSummaryDump's forms: `ip_opt` and `tcp_opt` (the
//! options are built into the headers; `tcp_ntopt` and `tcp_sack` build
//! the options they list; consecutive SACK block words, `sack1-5;sack9-12`,
//! build one SACK option with those blocks, up to 4, as TCP stacks send
//! them and as ToIPSummaryDump writes such an option back, where real
//! Click builds one option per block), `icmp_type_name`, `icmp_code_name`
//! (as in Click, `icmp_type` and `icmp_type_name` each take a name or a
//! number, and so do `icmp_code` and `icmp_code_name`; a code name is
//! looked up under the line's type, wherever that is on the line),
//! `icmp_flowid`, `icmp_seq`, `icmp_nextmtu`, `payload`
//! (a word as is, or a double-quoted string, which may hold spaces, with
//! Click's backslash substitutions: `\n`, `\t`, one to three octal digits,
//! `\x` and hex digits, `\<hex data>`, any other `\c` is `c`; the packet's
//! payload, and its length when `ip_len` and `payload_len` are absent),
//! `aggregate`
//! and `first_timestamp` (set those annotations), `payload_md5` and
//! `payload_md5_hex` (checked for form, then ignored), `ip6_src` and
//! `ip6_dst` (the line builds an IPv6 packet: a 40-byte header with the
//! hop limit from `ip_ttl`, traffic class from `ip_tos`, next header from
//! `ip_proto`, then a TCP, UDP or ICMPv6 (58) header). Numbers are read
//! as Click reads them: decimal, hexadecimal after `0x`, octal after a
//! leading `0` (`010` is 8).
//!
//! Built packets are IPv4 with a correct header length, the header
//! checksum of `ip_sum`, else a correct one with CHECKSUM true, else 0
//! (Click leaves it unset), TTL 100 unless given, the
//! protocol from `ip_proto`, else FLOWID's, else the one the transport
//! fields imply, else the last `!proto` line's, else PROTO. First fragments of TCP, UDP and ICMP packets
//! get a transport header. The IP length is `ip_len`, else headers plus
//! `payload_len`. Packets carry the timestamp, the IP header annotation,
//! and, when shorter than their IP length, the extra length annotation.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to read: a regular file (a FIFO or a
//!   device is refused, since opening or reading it could block while the
//!   configuration is built), or `-` for the standard input.
//! - `DATA` (string): the dump's text itself, instead of a FILENAME
//!   (`FromIPSummaryDump(DATA "!data ip_dst\n1.0.0.1\n1.0.0.2")`; a
//!   configuration string may span lines). Give FILENAME or DATA, not
//!   both. Messages name it `DATA`.
//! - `STOP` (boolean, default false): ask the router to stop at the end.
//! - `TIMING` (boolean, default false): keep the original spacing between
//!   packets (the first goes at once) on the router's clock (simulated
//!   under `--simtime`). Without TIMING, a full queue
//!   downstream pauses the reading rather than dropping packets.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): data not set by the dump is zero.
//!   paraclick always zeroes it (false is accepted).
//! - `CHECKSUM` (boolean, default false): if true, packets hold data bytes
//!   for their whole IP length and have correct IP, TCP, UDP and ICMP
//!   checksums; if false, packets stop after the transport header (the
//!   rest counted in the extra length annotation) and the checksums are
//!   zero (Click's are unset: "random garbage").
//! - `PROTO` (byte, default 6): the IP protocol when nothing gives one.
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with this
//!   probability.
//! - `CONTENTS` (or `FIELDS`; space-separated field names): the fields of
//!   data lines until a `!data` line says otherwise.
//! - `FLOWID` (`SRC SPORT DST DPORT [PROTO]`): default addresses and ports.
//! - `ALLOW_NONEXISTENT` (boolean, default false): a missing file is an
//!   empty dump rather than an error.
//! - `END_CALL` (write handler and value): called at the end of the file
//!   instead of setting `active` false (a paraclick addition, as in
//!   FromDump). Exclusive with STOP.
//! - `BURST` (integer, default 1; a paraclick addition): packets per task
//!   run. 1 is Click's one packet per run. A larger BURST is faster, but
//!   each element then handles a whole batch before the next one, so what
//!   several elements print interleaves per batch rather than per packet
//!   (see FromDump's BURST).
//! - `MULTIPACKET` (boolean): only false is supported.
//!
//! Handlers:
//! - `count` (read): packets emitted. `reset_counts` (write): resets it.
//! - `active` (read/write), `sampling_prob` (read).
//! - `encap` (read): `IP` (for ToDump's USE_ENCAP_FROM).
//! - `filename`, `filesize` (bytes, or `-`), `filepos` (read).
//! - `stop` (write): sets `active` to false and stops the router.
//! - `errors` (read): lines skipped as bad (a paraclick addition).
//!
//! Example:
//!
//!     FromIPSummaryDump(trace.txt, STOP true, CHECKSUM true) -> CheckIPHeader -> Discard;

use crate::common::{open_input, sample_fixed, EndAction, Produced, Sampler, Timing, TRACE_BURST};
use crate::ipsumdump::{
    build, parse_fields, parse_value, split_words, BuildOpts, Field, FlowId, Values,
};
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::args::Raw;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Kind};
use std::io::{BufReader, Read};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use crate::text_trace::{Core, TraceArgs, TraceReader, TraceSource, MAX_LINE};

/// FromIPSummaryDump: a trace source reading summary dump lines (or
/// binary records).
pub type FromIPSummaryDump = TraceSource<IpSumReader>;

/// How FromIPSummaryDump reads its file.
pub struct IpSumReader {
    state: Mutex<State>,
    checksum: bool,
    default_proto: u8,
}

struct State {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    /// Bytes consumed.
    pos: u64,
    line_no: u64,
    /// Columns of data lines (`None`: a column to ignore).
    fields: Vec<Option<Field>>,
    minor: u32,
    /// After a `!binary` line: records, not lines.
    binary: bool,
    flowid: Option<FlowId>,
    /// The protocol a `!proto` line set for the lines after it.
    proto: Option<u8>,
    line: Vec<u8>,
    pending: Option<Packet>,
    pending_values: Option<Values>,
    timing: Timing,
    sampler: Sampler,
    done: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromIPSummaryDump", "0/1", "a", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromIPSummaryDump, String> {
    let mut a = cx.args();
    let filename = a.read_p::<String>("FILENAME");
    let data = a.read::<paraclick_runtime::args::Bytes>("DATA");
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let timing = a.read::<bool>("TIMING").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let _zero = a.read::<bool>("ZERO").unwrap_or(true);
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(false);
    let proto = a.read::<u8>("PROTO").unwrap_or(6);
    let multipacket = a.read::<bool>("MULTIPACKET").unwrap_or(false);
    let sample = a.read::<f64>("SAMPLE").unwrap_or(1.0);
    let contents = match a.read::<Raw>("CONTENTS") {
        Some(c) => Some(c),
        None => a.read::<Raw>("FIELDS"),
    };
    let flowid = a.read::<String>("FLOWID");
    let allow_nonexistent = a.read::<bool>("ALLOW_NONEXISTENT").unwrap_or(false);
    let end_call = a.read::<String>("END_CALL");
    let burst = a.read::<usize>("BURST").unwrap_or(TRACE_BURST);
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    if multipacket {
        return Err("MULTIPACKET true is not supported".into());
    }
    let sample = sample_fixed(sample)?;
    let end = EndAction::from_args(stop, end_call)?;
    let fields = match contents {
        Some(Raw(c)) => parse_fields(&c)
            .map_err(|e| format!("CONTENTS: {e}"))?
            .into_iter()
            .map(Some)
            .collect(),
        None => Vec::new(),
    };
    let flowid =
        match flowid {
            Some(f) => Some(FlowId::parse(&f).ok_or_else(|| {
                format!("FLOWID: expected 'SRC SPORT DST DPORT [PROTO]', not '{f}'")
            })?),
            None => None,
        };
    let (filename, reader, filesize) = match (filename, data) {
        (Some(_), Some(_)) => return Err("give FILENAME or DATA, not both".into()),
        (None, None) => return Err("missing mandatory FILENAME (or DATA) argument".into()),
        (None, Some(d)) => {
            let size = d.0.len() as u64;
            let r: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(d.0));
            ("DATA".to_string(), Some(BufReader::new(r)), Some(size))
        }
        (Some(filename), None) => {
            cx.allowed_file(&filename)?;
            let (reader, filesize) = match open_input(&filename) {
                Ok((r, size)) => (Some(BufReader::with_capacity(1 << 16, r)), size),
                Err(_) if allow_nonexistent && !std::path::Path::new(&filename).exists() => {
                    (None, None)
                }
                Err(e) => return Err(e),
            };
            (filename, reader, filesize)
        }
    };
    let args = TraceArgs {
        filename,
        end,
        active,
        timing,
        sample,
        burst,
    };
    let seed = args.filename.len() as u64 ^ 0x1b5d;
    Ok(TraceSource {
        core: Core::new(cx, &args, filesize),
        reader: IpSumReader {
            state: Mutex::new(State {
                reader,
                pos: 0,
                line_no: 0,
                fields,
                minor: 3,
                binary: false,
                flowid,
                proto: None,
                line: Vec::with_capacity(256),
                pending: None,
                pending_values: None,
                timing: Timing::default(),
                sampler: Sampler::new(sample, seed),
                done: false,
            }),
            checksum,
            default_proto: proto,
        },
    })
}

/// What a line turned into.
enum Line {
    Packet(Box<Values>),
    Nothing,
    Bad(String),
    Eof,
    Fatal(String),
}

impl State {
    /// Reads the next line into `self.line` (without its newline); `None`
    /// at end of file, `Err` for a read error, `Ok(false)` for an
    /// over-long line (skipped).
    fn read_line(&mut self) -> Result<Option<bool>, String> {
        let Some(r) = self.reader.as_mut() else {
            return Ok(None);
        };
        let got = crate::text_trace::read_line(r, &mut self.line, &mut self.pos)?;
        if got.is_some() {
            self.line_no += 1;
        }
        Ok(got)
    }

    /// Reads and decodes the next binary record (after `!binary`).
    fn next_record(&mut self) -> Line {
        use crate::ipsumdump_binary::{decode, field_len, width, META};
        let Some(r) = self.reader.as_mut() else {
            return Line::Eof;
        };
        let mut word = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match r.read(&mut word[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Line::Fatal(e.to_string()),
            }
        }
        self.pos += got as u64;
        if got == 0 {
            return Line::Eof;
        }
        self.line_no += 1;
        if got < 4 {
            return Line::Bad(format!("truncated binary record ({got} of 4 length bytes)"));
        }
        let w = u32::from_be_bytes(word);
        let len = u64::from(w & !META);
        if len < 4 {
            return Line::Fatal(format!("binary record length {len} (at least 4)"));
        }
        let body = len - 4;
        self.line.clear();
        let res = if body > MAX_LINE {
            std::io::copy(&mut r.by_ref().take(body), &mut std::io::sink())
        } else {
            r.by_ref()
                .take(body)
                .read_to_end(&mut self.line)
                .map(|n| n as u64)
        };
        let n = match res {
            Ok(n) => n,
            Err(e) => return Line::Fatal(e.to_string()),
        };
        self.pos += n;
        if n < body {
            return Line::Bad(format!("truncated binary record ({n} of {body} bytes)"));
        }
        if body > MAX_LINE {
            return Line::Bad(format!("binary record longer than {MAX_LINE} bytes"));
        }
        if w & META != 0 {
            while matches!(self.line.last(), Some(b'\n' | b'\r')) {
                self.line.pop();
            }
            return self.text_line();
        }
        let mut v = Values::default();
        let mut off = 0;
        for f in self.fields.iter().flatten() {
            if let Err(e) = width(*f) {
                return Line::Fatal(e);
            }
            let Some(b) = field_len(*f, &self.line[off..]).map(|n| &self.line[off..off + n]) else {
                return Line::Bad(format!(
                    "binary record of {body} bytes too short for its fields"
                ));
            };
            off += b.len();
            let ok = decode(*f, b).and_then(|w| match w.as_str() {
                "-" => Some(()),
                w => parse_value(*f, w, &mut v, self.minor),
            });
            if ok.is_none() {
                return Line::Bad(format!("bad {} in binary record", f.name()));
            }
        }
        Line::Packet(Box::new(v))
    }

    fn next_line(&mut self) -> Line {
        if self.binary {
            return self.next_record();
        }
        let ok = match self.read_line() {
            Ok(None) => return Line::Eof,
            Ok(Some(ok)) => ok,
            Err(e) => return Line::Fatal(e),
        };
        if !ok {
            return Line::Bad(format!("line longer than {MAX_LINE} bytes"));
        }
        let Ok(text) = std::str::from_utf8(&self.line) else {
            return Line::Bad("not text".into());
        };
        let _ = text;
        self.text_line()
    }

    /// Handles the text line in `self.line`.
    fn text_line(&mut self) -> Line {
        let Ok(text) = std::str::from_utf8(&self.line) else {
            return Line::Bad("not text".into());
        };
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            return Line::Nothing;
        }
        if let Some(d) = text.strip_prefix('!') {
            let (word, rest) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
            let rest = rest.trim();
            match word {
                "IPSummaryDump" => {
                    self.minor = rest
                        .split_once('.')
                        .and_then(|(_, m)| m.split_whitespace().next())
                        .and_then(|m| m.parse().ok())
                        .unwrap_or(3);
                }
                "data" | "contents" => {
                    let mut bad = None;
                    self.fields = split_words(rest)
                        .iter()
                        .map(|w| {
                            let f = Field::lookup(w);
                            if f.is_none() && bad.is_none() {
                                bad = Some(format!("unknown field '{w}' in !{word} line"));
                            }
                            f
                        })
                        .collect();
                    if let Some(b) = bad {
                        return Line::Bad(b);
                    }
                }
                "proto" => {
                    let mut v = Values::default();
                    match parse_value(Field::IpProto, rest, &mut v, self.minor) {
                        Some(()) if v.proto.is_some() => self.proto = v.proto,
                        _ => return Line::Bad("bad !proto line".into()),
                    }
                }
                "flowid" => match FlowId::parse(rest) {
                    Some(f) => self.flowid = Some(f),
                    None => return Line::Bad("bad !flowid line".into()),
                },
                "binary" => {
                    if self.fields.iter().any(|f| f.is_none()) {
                        return Line::Fatal(
                            "!binary after a !data line with unknown fields".into(),
                        );
                    }
                    let fields: Vec<Field> = self.fields.iter().flatten().copied().collect();
                    if let Err(e) = crate::ipsumdump_binary::check(&fields) {
                        return Line::Fatal(format!("!binary: {e}"));
                    }
                    self.binary = true;
                }
                _ => {}
            }
            return Line::Nothing;
        }
        if self.fields.is_empty() {
            return Line::Bad("no '!data' line (or CONTENTS) names the fields".into());
        }
        let mut v = Values::default();
        let words = crate::ipsumdump_ext::line_words(text);
        // ICMP code names mean something only with the type, which may
        // come later on the line: code fields are read last.
        let is_code = |f: &Field| matches!(f, Field::IcmpCode | Field::IcmpCodeName);
        for codes in [false, true] {
            for (i, w) in words.iter().enumerate() {
                let Some(Some(f)) = self.fields.get(i) else {
                    continue;
                };
                if *w == "-" || is_code(f) != codes {
                    continue;
                }
                if parse_value(*f, w, &mut v, self.minor).is_none() {
                    return Line::Bad(format!("bad {} '{w}'", f.name()));
                }
            }
        }
        Line::Packet(Box::new(v))
    }
}

impl IpSumReader {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TraceReader for IpSumReader {
    fn produce(&self, core: &Core, cx: &mut Cx<'_>, max: usize) -> Produced {
        let mut r = Produced::default();
        if !core.active.load(Ordering::Relaxed) {
            return Produced::idle();
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.done {
            return Produced::idle();
        }
        let now = cx.now(); // the router's clock: simulated under --simtime
        let budget = max.saturating_mul(8).max(256);
        let mut emitted = 0;
        let mut examined = 0;
        while emitted < max && examined < budget {
            examined += 1;
            let p = match st.pending.take() {
                Some(p) => p,
                None => {
                    let v = match st.pending_values.take() {
                        Some(v) => Line::Packet(Box::new(v)),
                        None => st.next_line(),
                    };
                    let v = match v {
                        Line::Packet(v) => *v,
                        Line::Nothing => {
                            r.progress = true;
                            continue;
                        }
                        Line::Bad(msg) => {
                            core.report(cx, "FromIPSummaryDump", &st.line_no.to_string(), &msg);
                            r.progress = true;
                            continue;
                        }
                        Line::Eof => {
                            st.done = true;
                            r.ended = true;
                            break;
                        }
                        Line::Fatal(msg) => {
                            core.report(cx, "FromIPSummaryDump", &st.line_no.to_string(), &msg);
                            st.reader = None;
                            st.done = true;
                            r.ended = true;
                            break;
                        }
                    };
                    if !st.sampler.keep() {
                        r.progress = true;
                        continue;
                    }
                    let opts = BuildOpts {
                        checksum: self.checksum,
                        default_proto: st.proto.unwrap_or(self.default_proto),
                        flowid: st.flowid,
                    };
                    match build(&v, &opts) {
                        Some(p) => p,
                        None => {
                            // Packet pool exhausted: try this line again later.
                            st.pending_values = Some(v);
                            break;
                        }
                    }
                }
            };
            if core.timing {
                if let Some(due) = st.timing.wait_until(p.timestamp(), now) {
                    st.pending = Some(p);
                    r.wait = Some(due);
                    break;
                }
            }
            r.out.get_or_insert_with(Batch::new).push(p);
            emitted += 1;
        }
        drop(guard);
        if emitted > 0 {
            r.progress = true;
            core.count.add(cx.thread(), emitted as u64);
        }
        r
    }

    fn filepos(&self) -> u64 {
        self.lock().pos
    }

    fn queued(&self) -> usize {
        usize::from(self.lock().pending.is_some())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_packet::wire::{Ipv4Header, TcpHeader, UdpHeader};

    #[test]
    fn timing_runs_on_the_router_clock() {
        // Under --simtime SetTimestamp stamps packets with the simulated
        // time they were emitted: 40 s apart, as the dump says. (On the
        // wall clock the run would outlast `run`'s 20 s watchdog.)
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("d.txt");
        std::fs::write(&a, "!data timestamp ip_src\n100 1.0.0.1\n140 1.0.0.2\n").unwrap();
        let r = build_simtime(
            &full_registry(),
            &format!(
                "FromIPSummaryDump({}, STOP true, TIMING true) -> SetTimestamp -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 2);
        let d = got[1].timestamp().0 - got[0].timestamp().0;
        assert!((40_000_000_000..40_001_000_000).contains(&d), "{d} ns");
    }

    #[test]
    fn inactive_it_costs_no_cpu_until_activated() {
        // The text traces' shared tail: inactive, the worker sleeps until
        // the write to `active`.
        sleeps_until_written(
            "f :: FromIPSummaryDump(ACTIVE false, DATA \"!data ip_dst\n1.0.0.1\n1.0.0.2\n1.0.0.3\") \
             -> c :: Counter -> Discard;",
            "f",
            "f.active",
            "c.count",
            "3",
        );
    }

    #[test]
    fn data_instead_of_a_file() {
        let r = build(
            &full_registry(),
            "FromIPSummaryDump(STOP true, DATA \"!data ip_dst timestamp\n1.0.0.1 1\n\
             # a comment\n1.0.0.3 2\") -> s :: TestSink;",
        );
        run(&r);
        let got = sink(&r, "s");
        let dsts: Vec<String> = got
            .iter()
            .map(|p| {
                Ipv4Header::new_checked(p.data())
                    .unwrap()
                    .dst_addr()
                    .to_string()
            })
            .collect();
        assert_eq!(dsts, ["1.0.0.1", "1.0.0.3"]);
        assert_eq!(got[1].timestamp().0, 2_000_000_000);
        for (conf, want) in [
            (
                "FromIPSummaryDump(x.txt, DATA \"!data ip_dst\") -> Discard;",
                "give FILENAME or DATA, not both",
            ),
            (
                "FromIPSummaryDump(STOP true) -> Discard;",
                "missing mandatory FILENAME (or DATA) argument",
            ),
        ] {
            let e = paraclick_runtime::testing::build_err(&full_registry(), conf);
            assert!(e.contains(want), "{conf}: {e}");
        }
    }

    #[test]
    fn proto_lines_set_the_default_protocol() {
        // `!proto` gives the protocol of later lines that name none (the
        // PROTO keyword's role); a line's own ip_proto still wins; a bad
        // `!proto` line is skipped and counted, the previous one stays.
        let r = build(
            &full_registry(),
            "f :: FromIPSummaryDump(STOP true, PROTO 17, DATA \"!data ip_dst ip_proto\n\
             1.0.0.1\n!proto 9\n1.0.0.2\n1.0.0.3 T\n!proto 300\n1.0.0.4\n\
             !proto I\n1.0.0.5\n!proto gre\n1.0.0.6\n!proto nosuch\n1.0.0.7\") -> s :: TestSink;",
        );
        run(&r);
        let protos: Vec<u8> = sink(&r, "s")
            .iter()
            .map(|p| Ipv4Header::new_checked(p.data()).unwrap().protocol())
            .collect();
        // Names Click knows (`!proto gre`) too; an unknown name is bad.
        assert_eq!(protos, [17, 9, 6, 9, 1, 47, 47]);
        assert_eq!(r.read_handler("f.errors").unwrap(), "2");
    }

    #[test]
    fn stop_comes_after_the_last_packet() {
        // The DriverManager resets the counter once the file has ended:
        // every packet, the last too, went through before.
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("d.txt");
        std::fs::write(
            &a,
            "!data timestamp ip_src\n1 1.0.0.1\n2 1.0.0.2\n3 1.0.0.3\n",
        )
        .unwrap();
        let r = build_simtime(
            &full_registry(),
            &format!(
                "FromIPSummaryDump({}, STOP true, TIMING true) -> c :: Counter -> Discard; \
                 DriverManager(pause, write c.reset, stop)",
                q(&a)
            ),
        );
        run(&r);
        assert_eq!(r.read_handler("c.count").unwrap(), "0");
    }

    /// Reads `input` with FromIPSummaryDump(`from`) and writes it with
    /// ToIPSummaryDump(`to`); returns the text written and the router.
    fn through(input: &str, from: &str, to: &str) -> (String, paraclick_runtime::Router) {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        let b = dir.path().join("out.txt");
        std::fs::write(&a, input).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true{from}) -> t :: ToIPSummaryDump({}{to});",
                q(&a),
                q(&b)
            ),
        );
        run(&r);
        r.write_handler("t.flush", "").unwrap();
        (std::fs::read_to_string(&b).unwrap(), r)
    }

    const FIELDS: &str = "timestamp ip_src sport ip_dst dport ip_proto ip_len payload_len ip_ttl ip_tos ip_id ip_frag ip_fragoff tcp_flags tcp_seq tcp_ack tcp_window count direction";

    fn dump() -> String {
        format!(
            "!IPSummaryDump 1.3\n!data {FIELDS}\n\
             1000000000.000001 10.0.0.1 1234 10.0.0.2 80 T 40 0 64 0 1 ! 0! S 100 0 8192 1 >\n\
             1000000000.500000 10.0.0.2 80 10.0.0.1 1234 T 140 100 63 16 2 . 0 PA 5000 101 65535 3 <\n\
             1000000001.000000 10.0.0.3 53 10.0.0.4 5353 U 60 32 255 0 3 . 0 - - - - 1 >\n\
             1000000001.250000 10.0.0.4 - 10.0.0.3 - I 84 64 100 0 4 . 0 - - - - 1 >\n\
             1000000002.000000 10.0.0.5 1 10.0.0.6 2 T 1500 1460 64 0 5 F 0+ A 1 2 3 1 >\n\
             1000000002.000100 10.0.0.5 - 10.0.0.6 - T 500 480 64 0 5 f 1480 - - - - 1 >\n\
             1000000003.000000 10.0.0.7 - 10.0.0.8 - 47 24 4 1 0 6 . 0 - - - - 1 2\n\
             1000000003.000001 10.0.0.7 9 10.0.0.8 10 T 40 0 1 0 7 . 0 FSRPAUECN 4294967295 1 0 1 >\n"
        )
    }

    #[test]
    fn parse_print_round_trip_is_exact() {
        for checksum in [false, true] {
            let (out, r) = through(
                &dump(),
                &format!(", CHECKSUM {checksum}"),
                &format!(", CONTENTS {FIELDS}"),
            );
            assert_eq!(out, dump(), "CHECKSUM {checksum}");
            assert_eq!(handler(&r, "f.count"), "8");
            assert_eq!(handler(&r, "f.errors"), "0");
            assert_eq!(handler(&r, "t.count"), "8");
            assert_eq!(handler(&r, "f.encap"), "IP");
            assert_eq!(handler(&r, "f.filepos"), dump().len().to_string());
            assert_eq!(handler(&r, "f.filesize"), dump().len().to_string());
        }
    }

    #[test]
    fn icmp_types_and_codes_read_by_name_in_any_field_order() {
        // Click's regression tests FromIPSummaryDump-01 and -02 give type
        // names in the `icmp_type` field. A code name needs its type,
        // which may come later on the line (real Click reads this input
        // alike: 8, then 0, then 3 with code 4).
        let (out, r) = through(
            "!data ip_src ip_dst icmp_type\n!proto I\n\
             18.26.4.44 10.0.0.4 echo\n\
             10.0.0.4 18.26.4.44 echo-reply\n\
             !data ip_src icmp_code icmp_type_name\n\
             1.0.0.1 needfrag unreachable\n\
             1.0.0.1 needfrag echo\n",
            ", CHECKSUM true",
            ", CONTENTS ip_src icmp_type icmp_type_name icmp_code icmp_code_name, HEADER false",
        );
        assert_eq!(
            out,
            "18.26.4.44 8 echo 0 0\n\
             10.0.0.4 0 echo-reply 0 0\n\
             1.0.0.1 3 unreachable 4 needfrag\n"
        );
        // `needfrag` is no code of echo.
        assert_eq!(handler(&r, "f.errors"), "1");
    }

    #[test]
    fn packets_have_correct_checksums() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, dump()).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true, CHECKSUM true) -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 8);
        for p in &got {
            assert_eq!(p.network_header_offset(), Some(0));
            let ip = Ipv4Header::new_checked(p.data()).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(usize::from(ip.total_len()), p.len());
            assert_eq!(p.anno().extra_length, 0);
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            if ip.frag_offset() == 0 && !ip.more_frags() {
                match ip.protocol() {
                    6 => assert!(TcpHeader::new_checked(ip.payload())
                        .unwrap()
                        .verify_checksum(src, dst)),
                    17 => assert!(UdpHeader::new_checked(ip.payload())
                        .unwrap()
                        .verify_checksum(src, dst)),
                    _ => {}
                }
            }
        }
        assert_eq!(got[0].timestamp(), ts(1_000_000_000, 1000));
        assert_eq!(got[1].anno().extra_packets, 2);
        assert_eq!(got[1].anno().paint, 1);
        assert_eq!(got[2].data()[9], 17);
        // Without CHECKSUM, packets stop after the transport header.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true) -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got[1].len(), 40);
        assert_eq!(got[1].anno().extra_length, 100);
        assert_eq!(
            Ipv4Header::new_checked(got[1].data()).err(),
            Some(paraclick_packet::wire::WireError::Truncated),
            "short of its IP length"
        );
        // ...and their IP checksum is left zero, as Click leaves it unset.
        assert_eq!(Ipv4Header::new_unchecked(got[1].data()).checksum(), 0);
    }

    #[test]
    fn bad_lines_are_skipped_and_counted() {
        let input = "!IPSummaryDump 1.3\n\
                     1.0.0.9 2.0.0.9 9\n\
                     !data ip_src ip_dst ip_ttl\n\
                     1.0.0.1 2.0.0.2 5\n\
                     1.0.0.1 2.0.0.999 5\n\
                     garbage\n\
                     1.0.0.3 2.0.0.3 300\n\
                     # a comment\n\
                     \n\
                     1.0.0.4 2.0.0.4\r\n\
                     1.0.0.5 - 7 extra words\n\
                     \u{1}\u{2} \n\
                     1.0.0.6 2.0.0.6 6";
        let (out, r) = through(input, "", ", CONTENTS src dst ttl proto len, HEADER false");
        assert_eq!(
            out,
            "1.0.0.1 2.0.0.2 5 T 40\n1.0.0.4 2.0.0.4 100 T 40\n1.0.0.5 0.0.0.0 7 T 40\n1.0.0.6 2.0.0.6 6 T 40\n"
        );
        assert_eq!(handler(&r, "f.count"), "4");
        assert_eq!(handler(&r, "f.errors"), "5");
        // An unknown field in !data is an error for that line; its column
        // is ignored.
        let (out, r) = through(
            "!data ip_src frob ip_dst\n1.1.1.1 x 2.2.2.2\n",
            "",
            ", CONTENTS src dst, HEADER false",
        );
        assert_eq!(out, "1.1.1.1 2.2.2.2\n");
        assert_eq!(handler(&r, "f.errors"), "1");
        // After !binary, three bytes are a truncated record: an error.
        let (out, r) = through(
            "!data ip_src\n1.1.1.1\n!binary\n\0\0\0",
            "",
            ", HEADER false, CONTENTS src",
        );
        assert_eq!(out, "1.1.1.1\n");
        assert_eq!(handler(&r, "f.errors"), "1");
    }

    #[test]
    fn flowids_defaults_and_timestamps() {
        let (out, _) = through(
            "!data ip_len\n100\n!flowid 3.3.3.3 30 4.4.4.4 40 T\n200\n",
            ", FLOWID 1.1.1.1 10 2.2.2.2 20 U",
            ", CONTENTS src sport dst dport proto len udp_len, HEADER false",
        );
        assert_eq!(
            out,
            "1.1.1.1 10 2.2.2.2 20 U 100 80\n3.3.3.3 30 4.4.4.4 40 T 200 -\n"
        );
        let (out, _) = through(
            "!data ts_sec ts_usec ip_proto\n5 42 1\n6 7 U\n",
            ", PROTO 17",
            ", CONTENTS ntimestamp ts_usec1 proto icmp_type sport, HEADER false",
        );
        assert_eq!(
            out,
            "5.000042000 5000042 I 0 -\n6.000007000 6000007 U - 0\n"
        );
        let (out, _) = through(
            "!data ntimestamp ip_hl tcp_off ip_ecn ip_dscp\n1.123456789 24 28 ce 10\n",
            "",
            ", CONTENTS ntimestamp ip_hl tcp_off ip_ecn ip_dscp ip_tos len payload_len, HEADER false",
        );
        assert_eq!(out, "1.123456789 24 28 ce 10 43 52 0\n");
        // Version 1.0 dumps count fragment offsets in 8-byte units.
        let (out, _) = through(
            "!IPSummaryDump 1.0\n!data ip_fragoff\n185+\n",
            "",
            ", CONTENTS ip_fragoff ip_frag, HEADER false",
        );
        assert_eq!(out, "1480+ f\n");
    }

    #[test]
    fn configuration_errors() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, "").unwrap();
        for (conf, msg) in [
            ("CONTENTS src frob", "unknown field 'frob'"),
            ("FLOWID 1.1.1.1 2", "FLOWID"),
            ("MULTIPACKET true", "MULTIPACKET"),
            ("SAMPLE 3", "SAMPLE"),
        ] {
            let e = build_err(
                &full_registry(),
                &format!("FromIPSummaryDump({}, {conf}) -> TestSink;", q(&a)),
            );
            assert!(e.contains(msg), "{conf}: {e}");
        }
        let missing = dir.path().join("missing.txt");
        let e = build_err(
            &full_registry(),
            &format!("FromIPSummaryDump({}) -> TestSink;", q(&missing)),
        );
        assert!(e.contains("No such file"), "{e}");
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, ALLOW_NONEXISTENT true, STOP true) -> s :: TestSink;",
                q(&missing)
            ),
        );
        run(&r);
        assert_eq!(handler(&r, "f.count"), "0");
        assert_eq!(handler(&r, "f.filesize"), "-");
    }

    #[test]
    fn pull_sampling_and_stop_handler() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        let mut text = String::from("!data ip_src\n");
        for i in 0..50 {
            text.push_str(&format!("1.0.0.{i}\n"));
        }
        std::fs::write(&a, &text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}) -> u :: Unqueue -> s :: TestSink;",
                q(&a)
            ),
        );
        assert_eq!(r.pull_from("f", 0, 20).unwrap().unwrap().len(), 20);
        assert_eq!(r.pull_from("f", 0, 100).unwrap().unwrap().len(), 30);
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(handler(&r, "f.active"), "false");
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, SAMPLE 0) -> u :: Unqueue -> s :: TestSink;",
                q(&a)
            ),
        );
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(handler(&r, "f.sampling_prob"), "0");
        // Writing `stop` stops the router.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, ACTIVE false) -> s :: TestSink;",
                q(&a)
            ),
        );
        r.write_handler("f.stop", "").unwrap();
        run(&r);
        assert_eq!(handler(&r, "f.active"), "false");
        assert_eq!(handler(&r, "f.count"), "0");
    }
}

#[cfg(test)]
mod garbage_tests {
    use crate::test_util::*;

    /// Random lines never panic; every line either makes a packet or is
    /// counted as bad.
    #[test]
    fn random_lines_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let words = [
            "-",
            ".",
            "!",
            "F",
            "f",
            "0",
            "1",
            "255",
            "256",
            "65536",
            "4294967296",
            "1.2.3.4",
            "1.2.3",
            "T",
            "U",
            "I",
            "SA",
            "Q",
            "0+",
            "8!",
            "x",
            "<",
            ">",
            "1.5",
            "-1",
            "0x10",
            "99999999999999999999999",
        ];
        let mut x: u64 = 42;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut text = String::from(
            "!data timestamp src sport dst dport proto len payload_len ttl tos id frag fragoff tcp_flags tcp_seq tcp_off ip_hl udp_len icmp_type count direction\n",
        );
        for _ in 0..500 {
            let n = rnd() % 25;
            let line: Vec<&str> = (0..n)
                .map(|_| words[(rnd() % words.len() as u64) as usize])
                .collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
        let path = dir.path().join("g.txt");
        std::fs::write(&path, &text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true, CHECKSUM true) -> s :: TestSink;",
                q(&path)
            ),
        );
        run(&r);
        let count: u64 = handler(&r, "f.count").parse().unwrap();
        let errors: u64 = handler(&r, "f.errors").parse().unwrap();
        // Blank lines and lines starting with '!' (comments) are neither.
        let other = text
            .lines()
            .skip(1)
            .filter(|l| l.trim().is_empty() || l.starts_with('!'))
            .count() as u64;
        assert!(other > 0 && count > 0 && errors > 0);
        assert_eq!(count + errors + other, 500);
        assert_eq!(sink(&r, "s").len() as u64, count);
    }
}
