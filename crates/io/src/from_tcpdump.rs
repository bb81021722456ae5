//! # FromTcpdump
//!
//! FromTcpdump(FILENAME [, keywords STOP, ACTIVE, ZERO, CHECKSUM, SAMPLE, ABSOLUTE_SEQ, TIMING, END_CALL, BURST])
//!
//! Reads packets from an ASCII tcpdump output file.
//!
//! Reads the text `tcpdump` prints (with `-n`, optionally `-v`), builds
//! an IPv4 or IPv6 packet resembling each line it understands, and emits it;
//! optionally stops the router at the end. FILENAME `-` is the standard
//! input. A file compressed with gzip(1) or bzip2(1) is read through
//! zcat(1) or bzcat(1) (the standard input is never uncompressed); then
//! `filepos` counts uncompressed bytes.
//!
//! Like Click's, FromTcpdump understands only part of tcpdump's output:
//! mostly TCP, some UDP, and the common ICMP messages. Lines tcpdump 4
//! prints (`12:00:01.5 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [P.], seq
//! 1:101, ack 1, win 502, length 100`) and tcpdump 3 printed
//! (`1018330170.887165 1.0.0.1.3153 > 1.0.0.2.21: P 1:101(100) ack 1 win
//! 5840`); timestamps as printed by default (time of day, on day 0 of the
//! epoch), `-tt` (seconds since the epoch), `-tttt` (date and time, taken
//! as UTC) or `-t` (none: zero); an `-e` Ethernet prefix is skipped. UDP
//! lines need `length N` or a final `(N)` (the UDP payload length); ICMP
//! echo request/reply (with id and seq), unreachables, time exceeded and
//! redirects are recognized. Relative TCP sequence numbers (tcpdump's
//! default) are made absolute again per connection; give ABSOLUTE_SEQ true
//! for `tcpdump -S` output. A TCP line without `seq` gets the next
//! sequence number of its direction. TCP options tcpdump prints (MSS,
//! window scale, SACK permitted, timestamps, NOP, EOL, and SACK blocks,
//! `sack 2 {101:201}{301:401}`, one option with its blocks, made absolute
//! like the acknowledgement number) are rebuilt. With `-v`, the IP header
//! line (`IP (tos 0x0, ttl 64, id 1, offset 0, flags [DF], proto TCP (6),
//! length 40)`) gives the TOS, TTL, ID, fragment flags and offset and IP
//! length, and a later fragment without ports is built as one; without
//! `-v` packets get TTL 100, ID 0.
//!
//! IPv6: `IP6 2001:db8::1.40000 > 2001:db8::2.80: ...` lines (and `-e`
//! lines of ethertype IPv6) build IPv6 packets with the same TCP and UDP
//! parsing, and ICMPv6 from `ICMP6, echo request, id 7, seq 1, length 64`
//! (echo request and reply with id and seq, destination unreachable with
//! its code, packet too big, time exceeded, parameter problem, router and
//! neighbor solicitation and advertisement, redirect). With `-v`, `IP6
//! (class 0x10, hlim 64, next-header TCP (6) payload length: 44)` gives
//! the traffic class, hop limit and length; without it the hop limit is
//! 100. Extension headers are not rebuilt.
//!
//! Blank lines and other indented lines (`-vv` details, hex dumps) are
//! skipped. Any other line that does not parse (ARP, fragments without
//! ports, unknown ICMP messages) is skipped and counted in `errors`; the
//! first such error is printed to standard error. Host and port names
//! (tcpdump run without `-n`: `host.example.http`, `2001:db8::2.http`)
//! cannot be turned back into addresses: such a line is skipped and
//! counted in `errors` with a message saying so, never built with a wrong
//! address.
//!
//! Packets carry the timestamp and IP header annotations, and, when
//! CHECKSUM is false, the extra length annotation for the data they do
//! not hold (as FromIPSummaryDump builds them).
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to read: a regular file (a FIFO or a
//!   device is refused, since opening or reading it could block while the
//!   configuration is built), or `-` for the standard input.
//! - `STOP` (boolean, default false): ask the router to stop at the end.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): data not set by the dump is zero.
//!   paraclick always zeroes it (false is accepted).
//! - `CHECKSUM` (boolean, default false): if true, packets hold their
//!   whole IP length of data and have correct IP, TCP, UDP and ICMP
//!   checksums; if false, they stop after the transport header and the
//!   checksums are zero (Click's are unset: "random garbage").
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with this
//!   probability.
//! - `ABSOLUTE_SEQ` (boolean, default false; a paraclick addition): the
//!   file's TCP sequence numbers are absolute (`tcpdump -S`).
//! - `TIMING` (boolean, default false; a paraclick addition, as FromDump's):
//!   keep the spacing of the lines' timestamps: the first packet goes at
//!   once, each later one when as much time has passed on the router's
//!   clock (simulated under `--simtime`) as the timestamps say. A full
//!   queue downstream then drops rather than pauses the reading.
//! - `END_CALL` (write handler and value; a paraclick addition, as
//!   FromDump's): written at the end of the file instead of setting
//!   `active` to false. Not together with STOP true.
//! - `BURST` (integer, default 1; a paraclick addition): packets per task
//!   run. 1 is Click's one packet per run. A larger BURST is faster, but
//!   each element then handles a whole batch before the next one, so what
//!   several elements print interleaves per batch rather than per packet
//!   (see FromDump's BURST).
//!
//! Handlers:
//! - `count` (read): packets emitted. `errors` (read): lines skipped as bad.
//! - `active` (read/write), `sampling_prob` (read).
//! - `encap` (read): `IP` (for ToDump's USE_ENCAP_FROM).
//! - `filesize` (bytes, or `-`), `filepos` (read).
//! - `stop` (write): sets `active` to false and stops the router.
//! - `reset_timing` (write): restarts TIMING's clock at the next packet.
//!
//! Example:
//!
//!     // tcpdump -n -tt -r trace.pcap > trace.txt
//!     FromTcpdump(trace.txt, STOP true, CHECKSUM true) -> CheckIPHeader -> ToDump(out.pcap, ENCAP IP);

use crate::common::{
    add_trace_task, sample_fixed, sampling_prob_text, EndAction, ErrorCount, Produced, Sampler,
    Timing, TRACE_BURST,
};
use crate::decompress::open_maybe_compressed;
use crate::ipsumdump::{build, BuildOpts, Values};
use crate::tcpdump_text::SeqTracker;
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount};
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Lines longer than this are bad (and skipped), keeping memory bounded.
const MAX_LINE: u64 = 1 << 16;

pub struct FromTcpdump {
    filename: String,
    state: Mutex<State>,
    active: AtomicBool,
    count: PerThreadCount,
    errors: ErrorCount,
    burst: usize,
    end: EndAction,
    push: bool,
    sample: u32,
    checksum: bool,
    filesize: Option<u64>,
    timing: bool,
}

struct State {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    pos: u64,
    line_no: u64,
    line: Vec<u8>,
    seqs: SeqTracker,
    sampler: Sampler,
    /// A parsed line whose packet could not be allocated yet, or (TIMING)
    /// is not due yet.
    pending: Option<Values>,
    timing: Timing,
    done: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromTcpdump", "0/1", "a", make)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromTcpdump, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let _zero = a.read::<bool>("ZERO").unwrap_or(true);
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(false);
    let sample = a.read::<f64>("SAMPLE").unwrap_or(1.0);
    let absolute = a.read::<bool>("ABSOLUTE_SEQ").unwrap_or(false);
    let timing = a.read::<bool>("TIMING").unwrap_or(false);
    let end_call = a.read::<String>("END_CALL");
    let burst = a.read::<usize>("BURST").unwrap_or(TRACE_BURST);
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let sample = sample_fixed(sample)?;
    cx.allowed_file(&filename)?;
    let (reader, filesize) = open_maybe_compressed(&filename)?;
    Ok(FromTcpdump {
        state: Mutex::new(State {
            reader: Some(BufReader::with_capacity(1 << 16, reader)),
            pos: 0,
            line_no: 0,
            line: Vec::with_capacity(256),
            seqs: SeqTracker::new(absolute),
            sampler: Sampler::new(sample, filename.len() as u64 ^ 0x7cd),
            pending: None,
            timing: Timing::default(),
            done: false,
        }),
        filename,
        active: AtomicBool::new(active),
        count: PerThreadCount::new(cx.nthreads),
        errors: ErrorCount::default(),
        burst,
        end: EndAction::from_args(stop, end_call)?,
        push: cx.output_is_push(0),
        sample,
        checksum,
        filesize,
        timing,
    })
}

enum Line {
    Packet(Box<Values>),
    Nothing,
    Bad(String),
    Eof,
}

impl State {
    fn next_line(&mut self) -> Line {
        let Some(r) = self.reader.as_mut() else {
            return Line::Eof;
        };
        self.line.clear();
        let n = match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut self.line) {
            Ok(0) => return Line::Eof,
            Ok(n) => n,
            Err(e) => {
                self.reader = None;
                return Line::Bad(format!("read error: {e}"));
            }
        };
        self.pos += n as u64;
        self.line_no += 1;
        if self.line.last() != Some(&b'\n') && n as u64 >= MAX_LINE {
            // Too long: skip the rest of the line.
            loop {
                self.line.clear();
                match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut self.line) {
                    Ok(0) | Err(_) => break,
                    Ok(m) => {
                        self.pos += m as u64;
                        if self.line.last() == Some(&b'\n') {
                            break;
                        }
                    }
                }
            }
            return Line::Bad(format!("line longer than {MAX_LINE} bytes"));
        }
        let Ok(text) = std::str::from_utf8(&self.line) else {
            return Line::Bad("not text".into());
        };
        match self.seqs.parse_line(text.trim_end_matches(['\n', '\r'])) {
            Ok(Some(v)) => Line::Packet(Box::new(v)),
            Ok(None) => Line::Nothing,
            Err(e) => Line::Bad(e),
        }
    }
}

impl FromTcpdump {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Up to `max` packets; whether anything happened; whether the file
    /// ended; (TIMING) when the next packet is due.
    fn produce(&self, cx: &mut Cx<'_>, max: usize) -> Produced {
        if !self.active.load(Ordering::Relaxed) {
            return Produced::idle();
        }
        let mut st = self.lock();
        if st.done {
            return Produced::idle();
        }
        // The router's clock: simulated time under --simtime.
        let now = cx.now();
        let (mut out, mut progress, mut ended) = (None::<Batch>, false, false);
        let mut wait = None;
        let mut emitted = 0;
        let mut examined = 0;
        while emitted < max && examined < max.saturating_mul(8).max(256) {
            examined += 1;
            let v = match st.pending.take() {
                Some(v) => v,
                None => match st.next_line() {
                    Line::Packet(v) => {
                        if !st.sampler.keep() {
                            progress = true;
                            continue;
                        }
                        *v
                    }
                    Line::Nothing => {
                        progress = true;
                        continue;
                    }
                    Line::Bad(msg) => {
                        self.errors.report(
                            &format!("{} :: FromTcpdump", cx.element_name()),
                            &format!("{}:{}: {msg}", self.filename, st.line_no),
                        );
                        progress = true;
                        continue;
                    }
                    Line::Eof => {
                        st.done = true;
                        ended = true;
                        break;
                    }
                },
            };
            if self.timing {
                let ts = v.ts.unwrap_or_default();
                if let Some(due) = st.timing.wait_until(ts, now) {
                    st.pending = Some(v);
                    wait = Some(due);
                    break;
                }
            }
            let opts = BuildOpts {
                checksum: self.checksum,
                default_proto: 6,
                flowid: None,
            };
            match build(&v, &opts) {
                Some(p) => {
                    out.get_or_insert_with(Batch::new).push(p);
                    emitted += 1;
                }
                None => {
                    // Packet pool exhausted: try this line again later.
                    st.pending = Some(v);
                    break;
                }
            }
        }
        drop(st);
        if emitted > 0 {
            progress = true;
            self.count.add(cx.thread(), emitted as u64);
        }
        Produced {
            out,
            progress,
            ended,
            wait,
            ..Produced::default()
        }
    }
}

impl Element for FromTcpdump {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("errors", |e, _| e.errors.get().to_string()),
        Handler::read("sampling_prob", |e, _| sampling_prob_text(e.sample)),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("encap", |_, _| "IP".into()),
        Handler::read("filesize", |e, _| {
            e.filesize.map_or_else(|| "-".into(), |s| s.to_string())
        }),
        Handler::read("filepos", |e, _| e.lock().pos.to_string()),
        Handler::write("stop", |e, _, hx| {
            e.active.store(false, Ordering::Relaxed);
            hx.request_stop();
            Ok(())
        }),
        Handler::write("reset_timing", |e, _, _| {
            e.lock().timing.reset();
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        add_trace_task(ix, self.push, self.timing);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        self.produce(cx, self.burst)
            .finish_push(cx, &self.end, &self.active)
    }

    fn run_timer(&self, _cx: &mut Cx<'_>, _timer: usize) {}

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        self.produce(cx, max.max(1))
            .finish(cx, &self.end, &self.active)
            .0
    }

    fn queued(&self) -> usize {
        usize::from(self.lock().pending.is_some())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_packet::wire::{Ipv4Header, TcpHeader};

    /// tcpdump 4.99 text of a short TCP connection, a UDP and an ICMP
    /// packet, with two lines it cannot use (written for this test).
    const TEXT: &str = "\
1000000000.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [S], seq 1000, win 8192, length 0
1000000001.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [S.], seq 5000, ack 1001, win 65535, length 0
1000000002.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [.], ack 1, win 8192, length 0
1000000003.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [P.], seq 1:101, ack 1, win 8192, length 100: HTTP
this line is not tcpdump output
1000000004.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [.], ack 101, win 65535, length 0
1000000005.000000 ARP, Request who-has 10.0.0.9 tell 10.0.0.1, length 28

1000000007.500000 IP 10.0.0.3.4000 > 10.0.0.4.5000: UDP, length 32
1000000008.500000 IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 7, seq 1, length 64
";

    fn read_text(
        text: &str,
        extra: &str,
    ) -> (Vec<paraclick_packet::Packet>, paraclick_runtime::Router) {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}, STOP true{extra}) -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        (sink(&r, "s"), r)
    }

    #[test]
    fn builds_packets_and_counts_bad_lines() {
        let (got, r) = read_text(TEXT, ", CHECKSUM true");
        assert_eq!(got.len(), 7);
        assert_eq!(handler(&r, "f.count"), "7");
        assert_eq!(handler(&r, "f.errors"), "2");
        assert_eq!(handler(&r, "f.encap"), "IP");
        assert_eq!(handler(&r, "f.filepos"), TEXT.len().to_string());
        assert_eq!(handler(&r, "f.filesize"), TEXT.len().to_string());
        let lens: Vec<usize> = got.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [40, 40, 40, 140, 40, 60, 84]);
        let p = &got[3];
        assert_eq!(p.timestamp().sec(), 1_000_000_003);
        let ip = Ipv4Header::new_checked(p.data()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.protocol(), 6);
        let tcp = TcpHeader::new_checked(&p.data()[20..]).unwrap();
        assert_eq!((tcp.seq_number(), tcp.ack_number()), (1001, 5001));
        assert_eq!(
            (tcp.src_port(), tcp.dst_port(), tcp.window_len()),
            (1234, 80, 8192)
        );
        assert_eq!(got[6].data()[9], 1);
        assert_eq!(got[6].data()[20], 8); // echo request
        assert_eq!(got[5].data()[9], 17);
    }

    #[test]
    fn without_checksum_packets_stop_after_the_headers() {
        let (got, _) = read_text(TEXT, "");
        assert_eq!(got[3].len(), 40);
        assert_eq!(got[3].anno().extra_length, 100);
    }

    #[test]
    fn sampling_and_inactive() {
        let (got, r) = read_text(TEXT, ", SAMPLE 0");
        assert!(got.is_empty());
        assert_eq!(handler(&r, "f.sampling_prob"), "0");
        assert_eq!(handler(&r, "f.errors"), "2");
        assert!(build_err(
            &full_registry(),
            "FromTcpdump(/nonexistent/x.txt) -> Discard"
        )
        .contains("nonexistent"));
        assert!(
            build_err(&full_registry(), "FromTcpdump(x, SAMPLE 2) -> Discard").contains("SAMPLE")
        );
    }

    #[test]
    fn compressed_files_are_uncompressed() {
        for (prog, ext) in [("gzip", "gz"), ("bzip2", "bz2")] {
            let dir = tempfile::tempdir().unwrap();
            let a = dir.path().join("in.txt");
            std::fs::write(&a, TEXT).unwrap();
            if !paraclick_runtime::testing::have_tool(prog, "--version", prog) {
                continue;
            }
            let s = std::process::Command::new(prog).arg(&a).status().unwrap();
            assert!(s.success(), "{prog} {}", a.display());
            let z = dir.path().join(format!("in.txt.{ext}"));
            let r = build(
                &full_registry(),
                &format!("f :: FromTcpdump({}, STOP true) -> s :: TestSink;", q(&z)),
            );
            run(&r);
            assert_eq!(sink(&r, "s").len(), 7, "{prog}");
            assert_eq!(handler(&r, "f.errors"), "2", "{prog}");
            assert_eq!(handler(&r, "f.filepos"), TEXT.len().to_string(), "{prog}");
        }
    }

    fn tcpdump_installed() -> bool {
        paraclick_runtime::testing::have_tool("tcpdump", "--version", "tcpdump")
    }

    /// What `tcpdump -n -tt [-v] -r pcap` prints.
    fn tcpdump_text(pcap: &std::path::Path, verbose: bool) -> String {
        let mut args = vec!["-n", "-tt"];
        if verbose {
            args.push("-v");
        }
        let out = std::process::Command::new("tcpdump")
            .args(&args)
            .arg("-r")
            .arg(pcap)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    /// With tcpdump installed, text it prints from a pcap this test writes
    /// rebuilds the same TCP/IP headers (skipped without tcpdump).
    #[test]
    fn tcpdump_round_trip_if_installed() {
        if !tcpdump_installed() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let frames = [
            eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x02, 0),
            eth_tcp([10, 0, 0, 2], [10, 0, 0, 1], 80, 1234, 0x12, 0),
            eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x18, 50),
        ];
        let recs: Vec<Rec<'_>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| Rec {
                sec: 1_500_000_000 + i as u32,
                frac: 250_000,
                orig_len: f.len() as u32,
                data: f,
            })
            .collect();
        let pcap = dir.path().join("a.pcap");
        std::fs::write(&pcap, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        for verbose in [false, true] {
            let text = tcpdump_text(&pcap, verbose);
            let (got, r) = read_text(&text, ", CHECKSUM true");
            assert_eq!(handler(&r, "f.errors"), "0", "{text}");
            assert_eq!(got.len(), 3, "{text}");
            for (p, f) in got.iter().zip(&frames) {
                // IP addresses, ports, seq, ack, flags, window equal the frame's.
                let ip = &f[14..];
                assert_eq!(&p.data()[12..20], &ip[12..20], "{text}");
                assert_eq!(&p.data()[20..28], &ip[20..28], "{text}");
                // tcpdump prints no ack for a packet without the ACK flag.
                if ip[33] & 0x10 != 0 {
                    assert_eq!(&p.data()[28..32], &ip[28..32], "{text}");
                }
                assert_eq!(&p.data()[32..36], &ip[32..36], "{text}");
                assert_eq!(p.len(), ip.len(), "{text}");
                if verbose {
                    // -v prints TOS, length, ID, flags, TTL and protocol:
                    // with CHECKSUM the whole IP header is the frame's.
                    assert_eq!(&p.data()[..20], &ip[..20], "{text}");
                }
                assert_eq!(p.timestamp().usec(), 250_000);
            }
        }
    }

    #[test]
    fn timing_paces_packets_on_the_router_clock() {
        let text = "\
100.000000 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 1
102.000000 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 2
137.500000 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 3
137.500000 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 4
";
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, text).unwrap();
        // Under --simtime the router's clock is simulated: SetTimestamp
        // stamps each packet with the time it was emitted. (On the wall
        // clock the run would outlast `run`'s 20 s watchdog.)
        let r = build_simtime(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}, STOP true, TIMING true) -> SetTimestamp -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 4);
        let t0 = got[0].timestamp().0;
        let offs: Vec<i64> = got.iter().map(|p| p.timestamp().0 - t0).collect();
        for (off, want) in offs
            .iter()
            .zip([0, 2_000_000_000, 37_500_000_000, 37_500_000_000])
        {
            assert!(
                (want..want + 1_000_000).contains(off),
                "emitted at {offs:?}, want 0, 2 s, 37.5 s, 37.5 s"
            );
        }
        // In real time too (a short trace): never early.
        let text = "5.000 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 1\n5.040 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 1\n";
        std::fs::write(&a, text).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}, STOP true, TIMING true) -> SetTimestamp -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 2);
        assert!(got[1].timestamp().0 - got[0].timestamp().0 >= 40_000_000);
        // Without TIMING the packets keep their trace timestamps.
        let (got, _) = read_text(text, "");
        assert_eq!(got[1].timestamp().0 - got[0].timestamp().0, 40_000_000);
    }

    #[test]
    fn end_call_writes_a_handler_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("in.txt");
        std::fs::write(&a, TEXT).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}, END_CALL u.active false) -> u :: Unqueue -> s :: TestSink;",
                q(&a)
            ),
        );
        assert_eq!(handler(&r, "u.active"), "true");
        assert_eq!(r.pull_from("f", 0, 100).unwrap().unwrap().len(), 7);
        assert_eq!(handler(&r, "u.active"), "false");
        assert!(r.pull_from("f", 0, 100).unwrap().is_none());
        assert_eq!(
            handler(&r, "f.active"),
            "true",
            "END_CALL replaces deactivation"
        );
        // Pushed: the handler may stop the router.
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromTcpdump({}, END_CALL f.stop) -> s :: TestSink;",
                q(&a)
            ),
        );
        run(&r);
        assert_eq!(sink(&r, "s").len(), 7);
        assert!(build_err(
            &full_registry(),
            &format!(
                "FromTcpdump({}, STOP true, END_CALL f.stop) -> Discard;",
                q(&a)
            )
        )
        .contains("mutually exclusive"));
    }

    #[test]
    fn ipv6_lines_build_ipv6_packets() {
        let text = "\
1500000000.250000 IP6 2001:db8::1.40000 > 2001:db8::2.80: Flags [S], seq 1000, win 64800, options [mss 1440,sackOK,nop,nop,TS val 100 ecr 0,nop,wscale 7,nop,nop], length 0
1500000001.250000 IP6 2001:db8::2.80 > 2001:db8::1.40000: Flags [S.], seq 5000, ack 1001, win 64260, options [mss 1440], length 0
1500000004.250000 IP6 2001:db8::1.40000 > 2001:db8::2.80: Flags [.], ack 1, win 502, options [nop,nop,sack 2 {101:201}{301:401}], length 0
1500000005.250000 IP6 (hlim 63, next-header UDP (17) payload length: 28) 2001:db8::1.4000 > 2001:db8::2.5000: [udp sum ok] UDP, length 20
1500000006.250000 IP6 2001:db8::1 > 2001:db8::2: ICMP6, echo request, id 7, seq 1, length 64
1500000008.250000 IP6 2001:db8::2 > 2001:db8::1: ICMP6, destination unreachable, unreachable port [|icmp6]
1500000009.250000 IP6 fe80::1 > ff02::1: ICMP6, router solicitation, length 16
";
        let (got, r) = read_text(text, ", CHECKSUM true");
        assert_eq!(handler(&r, "f.errors"), "0");
        assert_eq!(got.len(), 7);
        for p in &got {
            assert_eq!(p.data()[0] >> 4, 6);
        }
        let syn = got[0].data();
        assert_eq!(
            &syn[8..24],
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets()
        );
        assert_eq!((syn[6], syn.len()), (6, 40 + 44));
        assert_eq!(&syn[40..44], &[0x9c, 0x40, 0, 80]);
        // The options exactly as printed, NOPs included.
        assert_eq!(
            &syn[60..84],
            &[2, 4, 5, 0xa0, 4, 2, 1, 1, 8, 10, 0, 0, 0, 100, 0, 0, 0, 0, 1, 3, 3, 7, 1, 1]
        );
        // One SACK option with two blocks, made absolute (ack base 5000).
        let sack = got[2].data();
        assert_eq!(u32::from_be_bytes(sack[48..52].try_into().unwrap()), 5001);
        let mut want = vec![1, 1, 5, 18];
        for x in [5101u32, 5201, 5301, 5401] {
            want.extend_from_slice(&x.to_be_bytes());
        }
        assert_eq!(&sack[60..80], &want[..]);
        let udp = got[3].data();
        assert_eq!((udp[6], udp[7], udp.len()), (17, 63, 40 + 28));
        let echo = got[4].data();
        assert_eq!((echo[6], echo.len()), (58, 40 + 64));
        assert_eq!(&echo[40..48], &[128, 0, echo[42], echo[43], 0, 7, 0, 1]);
        assert_eq!((got[5].data()[40], got[5].data()[41]), (1, 4));
        assert_eq!(got[6].data()[40], 133);
    }

    #[test]
    fn host_and_port_names_are_counted_errors() {
        let text = "\
1.0 IP host.example.http > 10.0.0.2.2: Flags [S], seq 1, win 1, length 0
1.0 IP 10.0.0.1.1 > 10.0.0.2.domain: UDP, length 3
1.0 IP6 2001:db8::1.40000 > 2001:db8::2.http: Flags [S], seq 1, win 1, length 0
1.0 IP6 localhost > ip6-allnodes: ICMP6, echo request, id 1, seq 1, length 64
1.0 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 3
";
        let (got, r) = read_text(text, "");
        assert_eq!(got.len(), 1, "only the numeric line");
        assert_eq!(handler(&r, "f.errors"), "4");
        let mut t = crate::tcpdump_text::SeqTracker::new(false);
        for line in text.lines().take(4) {
            let e = t.parse_line(line).unwrap_err();
            assert!(
                e.contains("host or port name") && e.contains("tcpdump -n"),
                "{e}"
            );
        }
    }

    /// tcpdump's own text of IPv6 packets (TCP with SACK blocks, UDP,
    /// ICMPv6 echo), printed from a pcap of packets FromIPSummaryDump
    /// builds, rebuilds the same packets (skipped without tcpdump).
    #[test]
    fn ipv6_and_sack_round_trip_through_tcpdump_if_installed() {
        if !tcpdump_installed() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("in.ipsum");
        std::fs::write(
            &dump,
            "!data ntimestamp ip6_src sport ip6_dst dport ip_proto ip_ttl tcp_flags tcp_seq tcp_ack tcp_window tcp_opt payload_len icmp_type icmp_code icmp_flowid icmp_seq\n\
             1500000000.250000000 2001:db8::1 40000 2001:db8::2 80 T 64 S 1000 0 64800 mss1440;sackok;nop;nop;ts100:0;nop;wscale7 0 - - - -\n\
             1500000001.250000000 2001:db8::2 80 2001:db8::1 40000 T 64 SA 5000 1001 64260 mss1440 0 - - - -\n\
             1500000002.250000000 2001:db8::1 40000 2001:db8::2 80 T 64 A 1001 5001 502 . 0 - - - -\n\
             1500000003.250000000 2001:db8::2 80 2001:db8::1 40000 T 64 PA 5001 1001 502 . 100 - - - -\n\
             1500000004.250000000 2001:db8::1 40000 2001:db8::2 80 T 64 A 1001 5001 502 nop;nop;sack5101-5201;sack5301-5401 0 - - - -\n\
             1500000005.250000000 2001:db8::1 4000 2001:db8::2 5000 U 64 - - - - - 20 - - - -\n\
             1500000006.250000000 2001:db8::1 - 2001:db8::2 - 58 64 - - - - - 56 128 0 7 1\n\
             1500000007.250000000 2001:db8::2 - 2001:db8::1 - 58 64 - - - - - 56 129 0 7 1\n",
        )
        .unwrap();
        let pcap = dir.path().join("v6.pcap");
        let r = build(&full_registry(), &format!(
            "f :: FromIPSummaryDump({}, STOP true, CHECKSUM true) -> t :: Tee -> ToDump({}, ENCAP IP); t[1] -> s :: TestSink;",
            q(&dump),
            q(&pcap)
        ));
        run(&r);
        assert_eq!(handler(&r, "f.errors"), "0");
        let want = sink(&r, "s");
        drop(r);
        assert_eq!(want.len(), 8);
        for verbose in [false, true] {
            let text = tcpdump_text(&pcap, verbose);
            assert!(text.contains("sack 2 {101:201}{301:401}"), "{text}");
            let (got, r) = read_text(&text, ", CHECKSUM true");
            assert_eq!(handler(&r, "f.errors"), "0", "{text}");
            assert_eq!(got.len(), want.len(), "{text}");
            for (p, w) in got.iter().zip(&want) {
                let (mut a, mut b) = (p.data().to_vec(), w.data().to_vec());
                if !verbose {
                    // Without -v tcpdump does not print the hop limit.
                    a[7] = 0;
                    b[7] = 0;
                }
                assert_eq!(a, b, "{text}");
                assert_eq!(p.timestamp(), w.timestamp());
            }
        }
    }
}
