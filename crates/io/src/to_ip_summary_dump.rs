//! # ToIPSummaryDump
//!
//! ToIPSummaryDump(FILENAME [, keywords CONTENTS, HEADER, VERBOSE, BANNER, MULTIPACKET, BAD_PACKETS, CAREFUL_TRUNC, EXTRA_LENGTH, BURST])
//!
//! Writes packet summary information to an ASCII file.
//!
//! Writes one line per packet to FILENAME in Click's IP summary dump
//! format, with the fields CONTENTS names, separated by single spaces; a
//! field that does not apply to a packet (`sport` of an ICMP packet) is a
//! dash `-`. FILENAME `-` is the standard output. The dump begins with
//! `!IPSummaryDump 1.3`, then (with BANNER) `!creator "BANNER"`, (with
//! VERBOSE) `!host` and `!runtime` lines, and `!data` naming the fields.
//!
//! Accepted packets: IP fields are read from the packet's network header
//! annotation (set by CheckIPHeader, MarkIPHeader, FromDump FORCE_IP or on
//! raw-IP traces, FromIPSummaryDump); a packet without one whose MAC header
//! annotation marks an Ethernet frame of type 0x0800 (as FromDump sets on
//! Ethernet traces) is read after the Ethernet header. Other packets print
//! `-` for IP, TCP, UDP and ICMP fields. A header that is not IPv4 (bad
//! version, header length, or total length) counts as absent.
//!
//! Fields (synonyms in parentheses; a name without `_` may drop its `ip_`
//! prefix, and spaces may stand for underscores):
//! `timestamp` (`ts`; seconds and microseconds, `996033261.451094`),
//! `ntimestamp` (nanoseconds), `ts_sec`, `ts_usec`, `ts_usec1`, `ip_src`,
//! `ip_dst`, `ip_tos`, `ip_dscp`, `ip_ecn` (`no`, `ect1`, `ect2`, `ce`),
//! `ip_ttl`, `ip_frag` (`F` first fragment, `f` later one, `!` DF, `.`
//! none), `ip_fragoff` (offset in bytes, `+` for MF, `!` for DF), `ip_id`,
//! `ip_sum`, `ip_proto` (`T`, `U`, `I` or a number), `ip_hl`, `ip_len`
//! (`length`), `ip_capture_len`, `sport`, `dport`, `tcp_seq`, `tcp_ack`,
//! `tcp_off`, `tcp_flags` (letters of FIN SYN RST PSH ACK URG ECE CWR NS:
//! `FSRPAUECN`, in that order; `.` for none), `tcp_window`, `tcp_urp`,
//! `udp_len`, `icmp_type`, `icmp_code`, `payload_len` (IP length less the
//! IP header and the TCP or UDP header), `count` (1 + extra packets
//! annotation), `direction` (paint 0 `>`, 1 `<`, else the number), `link`
//! and `paint` (the paint annotation), `eth_src`, `eth_dst` (from the MAC
//! header), `wire_len` (the packet's length).
//!
//! More fields: `ip_opt` (`ip_options`; IP options, separated by `;`:
//! `rr{10.0.0.1,20.0.0.2}+5` for record route with room for 5 more,
//! `ssrr{1.0.0.1,1.0.0.2^1.0.0.3}` and `lsrr{...}` with `^` at the
//! pointer, `98` for an option without data, `99=0:5:10` for one with
//! data (timestamps too); `.` for none, `?` for malformed options),
//! `tcp_opt` (`tcp_options`; `mss1400`, `wscale10`, `sackok`, `sack95-98`
//! per SACK block, so a SACK option with two blocks is `sack1-5;sack9-12`,
//! as Click writes it; `ts669063908:38382731`, and the generic forms),
//! `tcp_ntopt` (the same without timestamps), `tcp_sack` (SACK and
//! SACK-permitted only), `icmp_type_name` (`echo-reply`, `unreachable`,
//! `sourcequench`, `redirect`, `echo`, `routeradvert`, `routersolicit`,
//! `timeexceeded`, `parameterproblem`, `timestamp`, `timestamp-reply`,
//! `inforeq`, `inforeq-reply`, `maskreq`, `maskreq-reply`, or the number),
//! `icmp_code_name` (`needfrag`, `port`, ... or the number),
//! `icmp_flowid` (`icmp_id`) and `icmp_seq` (echo, timestamp, information
//! and mask messages), `icmp_nextmtu` (unreachable/needfrag), `payload`
//! (the captured bytes after the IP and TCP or UDP headers, as a quoted
//! string as Click writes it: `\"`, `\\` and `\$` escaped, `\t`, `\n`
//! and `\r`, and other bytes outside printable ASCII as three octal
//! digits, `\000` to `\377`), `payload_md5` (its MD5 digest in Click's
//! 22-character form: 6 bits per
//! character, least significant first, of the digest read as a
//! little-endian number; digits `a-z`, `A-Z`, `0-9`, `_`, `@`, so the MD5
//! of nothing is `u3bJz@iaYsq6aMaMSJVq_b`) and `payload_md5_hex` (32 hex
//! digits), `aggregate` (`agg`; the aggregate annotation, which
//! AggregateIP and AggregateIPFlows set), `first_timestamp` (`first_ts`;
//! the first timestamp annotation).
//!
//! IPv6 packets (version 6 at the network header, or Ethernet type
//! 0x86DD): `ip6_src` and `ip6_dst` print the addresses (`-` for IPv4
//! packets, as `ip_src`/`ip_dst` are for IPv6 ones); `ip_ttl` is the hop
//! limit, `ip_proto` the next header, `ip_len` 40 plus the payload length,
//! `ip_hl` 40; transport fields read the header right after the fixed
//! header (extension headers are not walked). IPv4-only fields print `-`.
//!
//! Ports: 1 input, 0 or 1 outputs. Processing: agnostic input, push output
//! (`a/h`). Packets are emitted on the output if it exists. With a pull
//! input it owns a task that pulls up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to write, created or truncated when
//!   the router starts running (not by `paraclick check`, nor by a
//!   configuration that fails to build): at its first timer pass, its
//!   first packet or a `flush`, whichever comes first. Its directory must
//!   exist.
//! - `CONTENTS` (or `FIELDS`; space-separated field names, default
//!   `ip_src ip_dst`): the fields of each line.
//! - `HEADER` (boolean, default true): write the `!` lines at the start.
//! - `VERBOSE` (boolean, default false): also write `!host` and `!runtime`.
//! - `BANNER` (string): write `!creator "BANNER"`.
//! - `MULTIPACKET` (boolean, default false): for packets standing for
//!   several (extra packets annotation), write one line per packet unless
//!   CONTENTS has `count`.
//! - `BAD_PACKETS` (boolean, default false): write a `!bad MESSAGE` line
//!   before each packet with a bad IP or TCP header.
//! - `CAREFUL_TRUNC` (boolean, default true): write `!bad truncated IP
//!   missing N` before packets whose data plus extra length falls short of
//!   their IP length.
//! - `EXTRA_LENGTH` (boolean, default true): count the extra length
//!   annotation.
//! - `BURST` (integer, default 32): packets pulled per task run.
//! - `BINARY` (boolean, default false): after the header and a `!binary`
//!   line, write Click's packed binary records instead of text lines: each
//!   record a 4-byte length word (network byte order, the word included;
//!   high bit set for metadata records such as `!bad` lines), then the
//!   fields in order, each in the width Click documents (see
//!   FromIPSummaryDump). Fields without a documented binary form (`ip_hl`,
//!   `ip_sum`, `ip_dscp`, `ip_ecn`, `tcp_off`, `tcp_urp`, `icmp_*`,
//!   `link`, `paint`, `wire_len`, `payload`, `aggregate`, `ip6_*`) are a
//!   configuration error with BINARY true; `direction` (1 byte) and
//!   `tcp_window` (2 bytes) are written as Click 2.x writes them.
//!   Values that do not apply are zeros (an empty option list for the
//!   option fields).
//!
//! Output is buffered and flushed when the router is dropped or the `flush`
//! handler is written.
//!
//! Handlers:
//! - `flush` (write): flushes buffered output to the file.
//! - `count` (read): packets written; `filename` (read) (paraclick additions).
//!
//! Example:
//!
//!     FromDump(trace.pcap, FORCE_IP true, STOP true)
//!         -> ToIPSummaryDump(-, CONTENTS timestamp ip_src sport ip_dst dport ip_proto tcp_flags);

use crate::common::{open_output, ErrorCount};
use crate::ipsumdump::{data_line, parse_fields, Field, View, ViewOpts};
use paraclick_elements::outfile::{check_path, Deferred, Out};
use paraclick_packet::{Batch, Timestamp};
use paraclick_runtime::args::Raw;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::io::{BufWriter, Write};
use std::sync::MutexGuard;

pub struct ToIPSummaryDump {
    filename: String,
    fields: Vec<Field>,
    header: bool,
    verbose: bool,
    banner: Option<String>,
    multipacket: bool,
    opts: ViewOpts,
    binary: bool,
    out: Deferred<Writer>,
    count: PerThreadCount,
    errors: ErrorCount,
    pull_input: bool,
    burst: usize,
}

struct Writer {
    w: BufWriter<Box<dyn Write + Send>>,
    line: String,
    bad: String,
    /// A binary record being built.
    rec: Vec<u8>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ToIPSummaryDump", "1/0-1", "a/h", make)
        .dead_code(paraclick_runtime::DeadCode::Sink)
        .shared("an output: one file or device for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ToIPSummaryDump, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let contents = match a.read::<Raw>("CONTENTS") {
        Some(c) => Some(c),
        None => a.read::<Raw>("FIELDS"),
    };
    let header = a.read::<bool>("HEADER").unwrap_or(true);
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let banner = a.read::<String>("BANNER");
    let multipacket = a.read::<bool>("MULTIPACKET").unwrap_or(false);
    let bad_packets = a.read::<bool>("BAD_PACKETS").unwrap_or(false);
    let careful_trunc = a.read::<bool>("CAREFUL_TRUNC").unwrap_or(true);
    let extra_length = a.read::<bool>("EXTRA_LENGTH").unwrap_or(true);
    let binary = a.read::<bool>("BINARY").unwrap_or(false);
    let burst = a.read::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    check_path(&filename).map_err(|e| format!("FILENAME: {e}"))?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let fields = match contents {
        Some(Raw(c)) => parse_fields(&c).map_err(|e| format!("CONTENTS: {e}"))?,
        None => vec![Field::IpSrc, Field::IpDst],
    };
    if binary {
        crate::ipsumdump_binary::check(&fields).map_err(|e| format!("BINARY: {e}"))?;
    }
    Ok(ToIPSummaryDump {
        multipacket: multipacket && !fields.contains(&Field::Count),
        filename,
        fields,
        header,
        verbose,
        banner,
        opts: ViewOpts {
            extra_length,
            careful_trunc,
            bad_packets,
        },
        binary,
        out: Deferred::new(),
        count: PerThreadCount::new(cx.nthreads),
        errors: ErrorCount::default(),
        pull_input: cx.input_is_pull(0),
        burst,
    })
}

/// Click's quoting for the banner: double quotes, with `"` and `\` escaped.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// `Tue Jul 24 17:53:30 2001` (UTC).
fn ctime(sec: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = sec.div_euclid(86_400);
    let rem = sec.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

impl ToIPSummaryDump {
    /// Opens the file and writes its header.
    fn open(&self) -> Result<Writer, String> {
        let out = open_output(&self.filename)?;
        let mut w = BufWriter::with_capacity(1 << 16, out);
        if self.header {
            w.write_all(self.header_text().as_bytes())
                .map_err(|e| format!("{}: {e}", self.filename))?;
        }
        if self.binary {
            w.write_all(b"!binary\n")
                .map_err(|e| format!("{}: {e}", self.filename))?;
        }
        Ok(Writer {
            w,
            line: String::with_capacity(256),
            bad: String::new(),
            rec: Vec::new(),
        })
    }

    /// The output, opened first if the router has just started.
    fn lock_open(&self, cx: &Cx<'_>) -> MutexGuard<'_, Out<Writer>> {
        self.out.lock_open(
            || self.open(),
            |e| {
                self.errors
                    .report(&format!("{} :: ToIPSummaryDump", cx.element_name()), e)
            },
        )
    }

    /// The `!` lines at the start of the dump.
    fn header_text(&self) -> String {
        let mut h = String::from("!IPSummaryDump 1.3\n");
        if let Some(b) = &self.banner {
            h.push_str(&format!("!creator {}\n", quote(b)));
        }
        if self.verbose {
            let now = Timestamp::now();
            h.push_str(&format!("!host {}\n", hostname()));
            h.push_str(&format!("!runtime {now} ({})\n", ctime(now.sec())));
        }
        h.push_str(&data_line(&self.fields));
        h
    }

    /// Turns `wr.bad` and the packet's fields into binary records in
    /// `wr.rec`: a metadata record for the `!bad` line, then one packet
    /// record per copy.
    fn binary_records(&self, wr: &mut Writer, v: &View<'_>, copies: usize) {
        use crate::ipsumdump_binary::{encode, record};
        wr.rec.clear();
        if !wr.bad.is_empty() {
            record(&mut wr.rec, true, wr.bad.as_bytes());
        }
        let mut body = Vec::with_capacity(64);
        for f in &self.fields {
            wr.line.clear();
            v.write(&mut wr.line, *f);
            encode(*f, &wr.line, &mut body);
        }
        for _ in 0..copies {
            record(&mut wr.rec, false, &body);
        }
    }

    fn write_batch(&self, cx: &mut Cx<'_>, b: &Batch) {
        if b.is_empty() {
            return;
        }
        let mut guard = self.lock_open(cx);
        let Some(wr) = guard.as_mut() else {
            return;
        };
        let mut res = Ok(());
        for p in b.iter() {
            wr.line.clear();
            wr.bad.clear();
            let v = View::new(p, &self.opts, &mut wr.bad);
            let copies = if self.multipacket {
                1 + p.anno().extra_packets as usize
            } else {
                1
            };
            if self.binary {
                self.binary_records(wr, &v, copies);
                res = wr.w.write_all(&wr.rec);
                if res.is_err() {
                    break;
                }
                continue;
            }
            for (i, f) in self.fields.iter().enumerate() {
                if i > 0 {
                    wr.line.push(' ');
                }
                v.write(&mut wr.line, *f);
            }
            wr.line.push('\n');
            res = wr.w.write_all(wr.bad.as_bytes());
            for _ in 0..copies {
                if res.is_ok() {
                    res = wr.w.write_all(wr.line.as_bytes());
                }
            }
            if res.is_err() {
                break;
            }
        }
        match res {
            Ok(()) => self.count.add(cx.thread(), b.len() as u64),
            Err(e) => {
                self.errors.report(
                    &format!("{} :: ToIPSummaryDump", cx.element_name()),
                    &format!("{}: {e}; no more packets will be written", self.filename),
                );
                guard.close();
            }
        }
    }

    /// Flushes buffered lines to the file.
    pub fn flush(&self) -> Result<(), String> {
        match self.out.lock().as_mut() {
            Some(wr) => wr.w.flush().map_err(|e| format!("{}: {e}", self.filename)),
            None => Ok(()),
        }
    }
}

impl Drop for ToIPSummaryDump {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            eprintln!("ToIPSummaryDump: {e}");
        }
    }
}

impl Element for ToIPSummaryDump {
    const HANDLERS: &'static [Handler<Self>] = &[
        // An operator's flush of a router that ran opens the file if no
        // packet or timer has yet.
        Handler::write("flush", |e, _, _| {
            let mut failed = None;
            drop(
                e.out
                    .lock_open(|| e.open(), |m| failed = Some(m.to_string())),
            );
            match failed {
                Some(m) => Err(m),
                None => e.flush(),
            }
        }),
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("filename", |e, _| e.filename.clone()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if ix.checking() {
            return Ok(()); // a check must not create or truncate the file
        }
        // Opened when the router runs (a timer at zero, or the first
        // packet): a rejected configuration leaves the file alone.
        ix.schedule_after(0, std::time::Duration::ZERO);
        if self.pull_input {
            crate::common::add_pull_sink_task(ix);
        }
        Ok(())
    }

    /// The router runs: the file is opened and its header written.
    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        drop(self.lock_open(cx));
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.write_batch(cx, &batch);
        if cx.noutputs() > 0 {
            cx.push(0, batch);
        }
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        crate::common::run_pull_sink(cx, self.burst, |cx, b| self.write_batch(cx, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_format() {
        assert_eq!(ctime(996_022_410), "Wed Jul 25 00:53:30 2001");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }

    #[test]
    fn banner_quoting() {
        assert_eq!(quote(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    }
}

#[cfg(test)]
mod router_tests {
    use crate::test_util::*;
    use paraclick_packet::Packet;

    #[test]
    fn pcap_to_summary_text() {
        let dir = tempfile::tempdir().unwrap();
        let f0 = eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x02, 0);
        let f1 = eth_tcp([10, 0, 0, 2], [10, 0, 0, 1], 80, 1234, 0x12, 1000);
        let mut arp = vec![0xffu8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let recs = [
            Rec {
                sec: 1_600_000_000,
                frac: 123_456,
                orig_len: 54,
                data: &f0,
            },
            Rec {
                sec: 1_600_000_001,
                frac: 7,
                orig_len: f1.len() as u32,
                data: &f1[..96],
            },
            Rec {
                sec: 1_600_000_002,
                frac: 0,
                orig_len: 42,
                data: &arp,
            },
        ];
        let a = dir.path().join("in.pcap");
        let b = dir.path().join("out.txt");
        std::fs::write(&a, pcap_bytes(false, false, 96, 1, &recs)).unwrap();
        let r = build(&full_registry(), &format!(
            "FromDump({}, STOP true) -> t :: ToIPSummaryDump({}, CONTENTS ts src sport dst dport proto len \"tcp flags\" eth_src eth_dst payload_len ip_capture_len wire_len, BANNER \"test \\\"run\\\"\");",
            q(&a),
            q(&b)
        ));
        run(&r);
        assert_eq!(handler(&r, "t.count"), "3");
        drop(r);
        assert_eq!(
            std::fs::read_to_string(&b).unwrap(),
            "!IPSummaryDump 1.3\n\
             !creator \"test \\\"run\\\"\"\n\
             !data timestamp ip_src sport ip_dst dport ip_proto ip_len tcp_flags eth_src eth_dst payload_len ip_capture_len wire_len\n\
             1600000000.123456 10.0.0.1 1234 10.0.0.2 80 T 40 S 02-00-00-00-00-01 02-00-00-00-00-02 0 40 54\n\
             1600000001.000007 10.0.0.2 80 10.0.0.1 1234 T 1040 SA 02-00-00-00-00-01 02-00-00-00-00-02 1000 82 96\n\
             1600000002.000000 - - - - - 42 - FF-FF-FF-FF-FF-FF FF-FF-FF-FF-FF-FF 42 42 42\n"
        );
    }

    fn ip_packet(len: usize, ver_ihl: u8, ip_len: u16) -> Packet {
        let mut p = Packet::zeroed(len).unwrap();
        let d = p.data_mut();
        d[0] = ver_ihl;
        d[2..4].copy_from_slice(&ip_len.to_be_bytes());
        d[9] = 17;
        d[12..16].copy_from_slice(&[9, 9, 9, 9]);
        p.set_network_header(0, 20);
        p
    }

    #[test]
    fn bad_packets_and_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join("out.txt");
        let r = build(&full_registry(), &format!(
            "Idle -> t :: ToIPSummaryDump({}, CONTENTS src len sport, BAD_PACKETS true, HEADER false) -> s :: TestSink;",
            q(&b)
        ));
        let mut short = ip_packet(24, 0x45, 100);
        let pkts = vec![
            ip_packet(28, 0x45, 28),
            ip_packet(28, 0x65, 28),
            ip_packet(28, 0x44, 28),
            ip_packet(28, 0x45, 10),
            ip_packet(24, 0x45, 100),
            {
                short.anno_mut().extra_length = 76;
                short
            },
            Packet::from_slice(&[1, 2, 3]).unwrap(),
            ip_packet(40, 0x45, 28),
        ];
        r.push_into("t", 0, paraclick_packet::Batch::from(pkts))
            .unwrap();
        assert_eq!(sink(&r, "s").len(), 8, "packets pass through");
        drop(r);
        assert_eq!(
            std::fs::read_to_string(&b).unwrap(),
            "9.9.9.9 28 0\n\
             !bad truncated IPv6 header\n- 28 -\n\
             !bad IP header length 4\n- 28 -\n\
             !bad IP length 10\n- 28 -\n\
             !bad truncated IP missing 76\n9.9.9.9 100 0\n\
             9.9.9.9 100 0\n\
             - 3 -\n\
             9.9.9.9 28 0\n"
        );
        // Without BAD_PACKETS only truncation is noted; CAREFUL_TRUNC false
        // drops that too.
        for (opt, want) in [
            ("", "- 28\n!bad truncated IP missing 76\n9.9.9.9 100\n"),
            (", CAREFUL_TRUNC false", "- 28\n9.9.9.9 100\n"),
        ] {
            let r = build(
                &full_registry(),
                &format!(
                    "Idle -> t :: ToIPSummaryDump({}, CONTENTS src len, HEADER false{opt});",
                    q(&b)
                ),
            );
            let pkts = vec![ip_packet(28, 0x65, 28), ip_packet(24, 0x45, 100)];
            r.push_into("t", 0, paraclick_packet::Batch::from(pkts))
                .unwrap();
            drop(r);
            assert_eq!(std::fs::read_to_string(&b).unwrap(), want, "{opt}");
        }
    }

    #[test]
    fn headers_multipacket_and_pull_input() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join("out.txt");
        let r = build(
            &full_registry(),
            &format!(
                "Idle -> t :: ToIPSummaryDump({}, VERBOSE true, MULTIPACKET true);",
                q(&b)
            ),
        );
        let mut p = ip_packet(28, 0x45, 28);
        p.anno_mut().extra_packets = 2;
        r.push_into("t", 0, paraclick_packet::Batch::one(p))
            .unwrap();
        drop(r);
        let text = std::fs::read_to_string(&b).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "!IPSummaryDump 1.3");
        assert!(lines[1].starts_with("!host "), "{text}");
        assert!(
            lines[2].starts_with("!runtime ") && lines[2].ends_with(')'),
            "{text}"
        );
        assert_eq!(
            &lines[3..],
            [
                "!data ip_src ip_dst",
                "9.9.9.9 0.0.0.0",
                "9.9.9.9 0.0.0.0",
                "9.9.9.9 0.0.0.0"
            ]
        );
        // A pull input: ToIPSummaryDump pulls with its own task.
        let a = dir.path().join("in.txt");
        std::fs::write(&a, "!data ip_src\n1.1.1.1\n2.2.2.2\n").unwrap();
        let r = build(&full_registry(), &format!(
            "FromIPSummaryDump({}) -> Queue -> t :: ToIPSummaryDump({}, HEADER false, CONTENTS src count) -> s :: TestSink;",
            q(&a),
            q(&b)
        ));
        run_until(&r, |r| r.read_handler("t.count").unwrap() == "2");
        assert_eq!(sink(&r, "s").len(), 2);
        drop(r);
        assert_eq!(
            std::fs::read_to_string(&b).unwrap(),
            "1.1.1.1 1\n2.2.2.2 1\n"
        );
        for (conf, msg) in [
            (
                "BINARY true, CONTENTS src ip_sum",
                "no documented binary form",
            ),
            ("BINARY true, CONTENTS tcp_urp", "no documented binary form"),
            ("CONTENTS src zz", "unknown field 'zz'"),
        ] {
            let e = build_err(
                &full_registry(),
                &format!("Idle -> ToIPSummaryDump({}, {conf});", q(&b)),
            );
            assert!(e.contains(msg), "{e}");
        }
    }
}
