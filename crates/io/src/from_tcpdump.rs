//! # FromTcpdump
//!
//! FromTcpdump(FILENAME [, keywords STOP, ACTIVE, ZERO, CHECKSUM, SAMPLE, ABSOLUTE_SEQ, BURST])
//!
//! Reads packets from an ASCII tcpdump output file.
//!
//! Reads the text `tcpdump` prints (with `-n`, optionally `-v`), builds
//! an IPv4 packet resembling each line it understands, and emits it;
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
//! window scale, SACK permitted, timestamps, NOP, EOL; not SACK blocks)
//! are rebuilt. With `-v`, the IP header line (`IP (tos 0x0, ttl 64, id
//! 1, offset 0, flags [DF], proto TCP (6), length 40)`) gives the TOS,
//! TTL, ID, fragment flags and offset and IP length, and a later fragment
//! without ports is built as one; without `-v` packets get TTL 100, ID 0.
//! Blank lines and other indented lines (`-vv` details, hex dumps) are
//! skipped. Any
//! other line that does not parse (IPv6, ARP, names instead of numeric
//! addresses, fragments without ports) is skipped and counted in
//! `errors`; the first such error is printed to standard error.
//!
//! Packets carry the timestamp and IP header annotations, and, when
//! CHECKSUM is false, the extra length annotation for the data they do
//! not hold (as FromIPSummaryDump builds them).
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to read.
//! - `STOP` (boolean, default false): ask the router to stop at the end.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): data not set by the dump is zero.
//!   paraclick always zeroes it (false is accepted).
//! - `CHECKSUM` (boolean, default false): if true, packets hold their
//!   whole IP length of data and have correct TCP, UDP and ICMP checksums;
//!   if false, they stop after the transport header and the transport
//!   checksum is zero. The IP header checksum is always set.
//! - `SAMPLE` (real between 0 and 1, default 1): emit each packet with this
//!   probability.
//! - `ABSOLUTE_SEQ` (boolean, default false; a paraclick addition): the
//!   file's TCP sequence numbers are absolute (`tcpdump -S`).
//! - `BURST` (integer, default 32): packets per task run.
//!
//! Handlers:
//! - `count` (read): packets emitted. `errors` (read): lines skipped as bad.
//! - `active` (read/write), `sampling_prob` (read).
//! - `encap` (read): `IP` (for ToDump's USE_ENCAP_FROM).
//! - `filesize` (bytes, or `-`), `filepos` (read).
//! - `stop` (write): sets `active` to false and stops the router.
//!
//! Example:
//!
//!     // tcpdump -n -tt -r trace.pcap > trace.txt
//!     FromTcpdump(trace.txt, STOP true, CHECKSUM true) -> CheckIPHeader -> ToDump(out.pcap, ENCAP IP);

use crate::common::{
    add_trace_task, sample_fixed, sampling_prob_text, EndAction, ErrorCount, Sampler,
};
use crate::decompress::open_maybe_compressed;
use crate::ipsumdump::{build, BuildOpts, Values};
use crate::tcpdump_text::SeqTracker;
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Counter, Cx, Element, Handler, InitCx};
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Lines longer than this are bad (and skipped), keeping memory bounded.
const MAX_LINE: u64 = 1 << 16;

pub struct FromTcpdump {
    filename: String,
    state: Mutex<State>,
    active: AtomicBool,
    count: Counter,
    errors: ErrorCount,
    burst: usize,
    end: EndAction,
    push: bool,
    sample: u32,
    checksum: bool,
    filesize: Option<u64>,
}

struct State {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    pos: u64,
    line_no: u64,
    line: Vec<u8>,
    seqs: SeqTracker,
    sampler: Sampler,
    /// A parsed line whose packet could not be allocated yet.
    pending: Option<Values>,
    done: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromTcpdump", "0/1", "a", make)
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
    let burst = a.read::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let sample = sample_fixed(sample)?;
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
            done: false,
        }),
        filename,
        active: AtomicBool::new(active),
        count: Counter::new(cx.nthreads),
        errors: ErrorCount::default(),
        burst,
        end: EndAction::from_args(stop, None)?,
        push: cx.output_is_push(0),
        sample,
        checksum,
        filesize,
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

    /// Up to `max` packets; whether anything happened; whether the file ended.
    fn produce(&self, cx: &mut Cx<'_>, max: usize) -> (Option<Batch>, bool, bool) {
        if !self.active.load(Ordering::Relaxed) {
            return (None, false, false);
        }
        let mut st = self.lock();
        if st.done {
            return (None, false, false);
        }
        let (mut out, mut progress, mut ended) = (None::<Batch>, false, false);
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
        (out, progress, ended)
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
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        add_trace_task(ix, self.push, false);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let (out, progress, ended) = self.produce(cx, self.burst);
        if let Some(b) = out {
            cx.push(0, b);
        }
        if ended {
            self.end.run(cx, &self.active);
        }
        progress
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let (out, _, ended) = self.produce(cx, max.max(1));
        if ended {
            self.end.run(cx, &self.active);
        }
        out
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
        let r = build(&format!(
            "f :: FromTcpdump({}, STOP true{extra}) -> s :: TestSink;",
            q(&a)
        ));
        run(&r);
        (sink(&r, "s"), r)
    }

    #[test]
    fn builds_packets_and_counts_bad_lines() {
        let (got, r) = read_text(TEXT, ", CHECKSUM true");
        assert_eq!(got.len(), 7);
        assert_eq!(h(&r, "f.count"), "7");
        assert_eq!(h(&r, "f.errors"), "2");
        assert_eq!(h(&r, "f.encap"), "IP");
        assert_eq!(h(&r, "f.filepos"), TEXT.len().to_string());
        assert_eq!(h(&r, "f.filesize"), TEXT.len().to_string());
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
        assert_eq!(h(&r, "f.sampling_prob"), "0");
        assert_eq!(h(&r, "f.errors"), "2");
        assert!(build_err("FromTcpdump(/nonexistent/x.txt) -> Discard").contains("nonexistent"));
        assert!(build_err("FromTcpdump(x, SAMPLE 2) -> Discard").contains("SAMPLE"));
    }

    #[test]
    fn compressed_files_are_uncompressed() {
        for (prog, ext) in [("gzip", "gz"), ("bzip2", "bz2")] {
            let dir = tempfile::tempdir().unwrap();
            let a = dir.path().join("in.txt");
            std::fs::write(&a, TEXT).unwrap();
            match std::process::Command::new(prog).arg(&a).status() {
                Ok(s) if s.success() => {}
                _ => {
                    eprintln!("{prog} not available; skipped");
                    continue;
                }
            }
            let z = dir.path().join(format!("in.txt.{ext}"));
            let r = build(&format!(
                "f :: FromTcpdump({}, STOP true) -> s :: TestSink;",
                q(&z)
            ));
            run(&r);
            assert_eq!(sink(&r, "s").len(), 7, "{prog}");
            assert_eq!(h(&r, "f.errors"), "2", "{prog}");
            assert_eq!(h(&r, "f.filepos"), TEXT.len().to_string(), "{prog}");
        }
    }

    /// With tcpdump installed, text it prints from a pcap this test writes
    /// rebuilds the same TCP/IP headers (skipped without tcpdump).
    #[test]
    fn tcpdump_round_trip_if_installed() {
        let Ok(out) = std::process::Command::new("tcpdump")
            .arg("--version")
            .output()
        else {
            eprintln!("tcpdump not installed; skipped");
            return;
        };
        if !out.status.success() {
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
            let mut args = vec!["-n", "-tt"];
            if verbose {
                args.push("-v");
            }
            let out = std::process::Command::new("tcpdump")
                .args(&args)
                .arg("-r")
                .arg(&pcap)
                .output()
                .unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            let (got, r) = read_text(&text, ", CHECKSUM true");
            assert_eq!(h(&r, "f.errors"), "0", "{text}");
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
}
