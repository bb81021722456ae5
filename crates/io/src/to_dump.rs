//! # ToDump
//!
//! ToDump(FILENAME [, SNAPLEN, ENCAP, keywords USE_ENCAP_FROM, EXTRA_LENGTH, NANO, UNBUFFERED, BURST])
//!
//! Writes packets to a tcpdump (libpcap) file.
//!
//! Writes incoming packets to FILENAME in `tcpdump -w` format, readable by
//! `tcpdump -r`, Wireshark, or FromDump. FILENAME `-` is the standard
//! output. Each record carries the packet's timestamp annotation (the
//! current time if the packet has none, as in Click); its original length is the packet length plus, with EXTRA_LENGTH, the extra
//! length annotation (so a truncated capture read by FromDump is written
//! back as it was). The file is in this machine's byte order.
//!
//! Output is buffered; it is flushed when the router is dropped (and by the
//! `flush` handler), so the file is complete once the router is gone.
//!
//! Ports: 1 input, 0 or 1 outputs. Processing: agnostic. With an output,
//! every packet written is emitted on it. Used as a pull sink (pull input,
//! no output), ToDump owns a task that pulls up to BURST packets per run.
//!
//! Arguments:
//! - `FILENAME` (string): the file to write, created or truncated when
//!   the router starts running (not by `paraclick check`, nor by a
//!   configuration that fails to build): at its first timer pass, its
//!   first packet or a `flush`, whichever comes first. Its directory must
//!   exist.
//! - `SNAPLEN` (integer, default 2000): write at most this many bytes of
//!   each packet; 0 means whole packets.
//! - `ENCAP` (default `ETHER`): the first header packets have: `ETHER`,
//!   `IP` (raw IPv4, link type 101), `FDDI`, `ATM`, `802_11`, `SLL`,
//!   `AIRONET`, `HDLC`, `PPP_HDLC`, `PPP`, `SUNATM`, `PRISM`, `NULL`, or a
//!   link-type number.
//! - `USE_ENCAP_FROM` (space-separated element names): take the
//!   encapsulation from these elements (FromDump, FromIPSummaryDump); they
//!   must agree. At most one of ENCAP and USE_ENCAP_FROM.
//! - `EXTRA_LENGTH` (boolean, default true): add the extra length
//!   annotation to each record's original length.
//! - `NANO` (boolean, default false): write a nanosecond-precision file
//!   (magic `0xA1B23C4D`); otherwise microseconds, as a Click built without
//!   nanosecond timestamps writes.
//! - `UNBUFFERED` (boolean, default false): write each batch straight
//!   through to the file.
//! - `BURST` (integer, default 32): packets pulled per task run.
//!
//! Handlers:
//! - `count` (read): packets written. `reset_counts` (write): resets it.
//! - `drops` (read): packets not written because writing failed (a full
//!   disk, a closed pipe): the batch whose write failed and every packet
//!   after it. The first failure is reported once, as an error naming the
//!   file, and the router keeps running (a paraclick addition).
//! - `filename` (read).
//! - `flush` (write): flushes buffered output to the file (a paraclick
//!   addition).
//!
//! Example:
//!
//!     InfiniteSource(LENGTH 60, LIMIT 10, STOP true) -> ToDump(out.pcap, SNAPLEN 96);

use crate::common::{encap_name, open_output, parse_encap, ErrorCount};
use crate::from_dump::FromDump;
use crate::from_ip_summary_dump::FromIPSummaryDump;
use paraclick_elements::outfile::{check_path, Deferred, Out};
use paraclick_packet::Batch;
use paraclick_runtime::capture::{pcap_header, pcap_record};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::MutexGuard;

type Writer = BufWriter<Box<dyn Write + Send>>;

/// Header snaplen written when SNAPLEN is 0 (tcpdump's largest).
const WHOLE_PACKET_SNAPLEN: u32 = 262_144;

pub struct ToDump {
    filename: String,
    snaplen: u32,
    linktype: AtomicU32,
    use_encap_from: Vec<String>,
    extra_length: bool,
    nano: bool,
    unbuffered: bool,
    out: Deferred<Writer>,
    count: PerThreadCount,
    drops: PerThreadCount,
    errors: ErrorCount,
    pull_sink: bool,
    burst: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ToDump", "1/0-1", "a", make)
        .dead_code(paraclick_runtime::DeadCode::Sink)
        .shared("an output: one file or device for all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ToDump, String> {
    let mut a = cx.args();
    let filename = a.read_mp::<String>("FILENAME");
    let snaplen = a.read_p::<u32>("SNAPLEN").unwrap_or(2000);
    let encap = a.read_p::<String>("ENCAP");
    let use_encap_from = a.read::<String>("USE_ENCAP_FROM");
    let extra_length = a.read::<bool>("EXTRA_LENGTH").unwrap_or(true);
    let nano = a.read::<bool>("NANO").unwrap_or(false);
    let unbuffered = a.read::<bool>("UNBUFFERED").unwrap_or(false);
    let burst = a.read::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    check_path(&filename).map_err(|e| format!("FILENAME: {e}"))?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    if encap.is_some() && use_encap_from.is_some() {
        return Err("supply at most one of ENCAP and USE_ENCAP_FROM".into());
    }
    let linktype = match &encap {
        Some(e) => parse_encap(e).ok_or_else(|| format!("ENCAP: unknown encapsulation '{e}'"))?,
        None => 1,
    };
    let use_encap_from: Vec<String> = use_encap_from
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Ok(ToDump {
        filename,
        snaplen,
        linktype: AtomicU32::new(linktype),
        use_encap_from,
        extra_length,
        nano,
        unbuffered,
        out: Deferred::new(),
        count: PerThreadCount::new(cx.nthreads),
        drops: PerThreadCount::new(cx.nthreads),
        errors: ErrorCount::default(),
        pull_sink: cx.input_is_pull(0) && cx.noutputs == 0,
        burst,
    })
}

/// The link type of another element's `encap` (for USE_ENCAP_FROM).
fn encap_of(ix: &InitCx<'_>, i: usize) -> Option<u32> {
    if let Some(f) = ix.element::<FromDump>(i) {
        return Some(f.linktype());
    }
    if ix.element::<FromIPSummaryDump>(i).is_some() {
        return Some(101);
    }
    if let Some(t) = ix.element::<ToDump>(i) {
        return Some(t.linktype.load(Ordering::Relaxed));
    }
    None
}

impl ToDump {
    /// Opens the file and writes its header.
    fn open(&self) -> Result<Writer, String> {
        let out = open_output(&self.filename)?;
        let mut out = if self.unbuffered {
            BufWriter::with_capacity(0, out)
        } else {
            BufWriter::with_capacity(1 << 16, out)
        };
        let snaplen = if self.snaplen == 0 {
            WHOLE_PACKET_SNAPLEN
        } else {
            self.snaplen
        };
        // The header a live capture writes too (paraclick_runtime::capture).
        let bytes = pcap_header(snaplen, self.linktype.load(Ordering::Relaxed), self.nano);
        out.write_all(&bytes)
            .and_then(|_| out.flush())
            .map_err(|e| format!("{}: {e}", self.filename))?;
        Ok(out)
    }

    /// The output, opened first if the router has just started.
    fn lock_open(&self, cx: &Cx<'_>) -> MutexGuard<'_, Out<Writer>> {
        self.out.lock_open(
            || self.open(),
            |e| {
                self.errors
                    .report(&format!("{} :: ToDump", cx.element_name()), e)
            },
        )
    }

    /// Appends the batch's records to the file.
    fn write_batch(&self, cx: &mut Cx<'_>, b: &Batch) {
        if b.is_empty() {
            return;
        }
        let mut guard = self.lock_open(cx);
        let Some(out) = guard.as_mut() else {
            // The file failed earlier (or never opened): counted drops.
            self.drops.add(cx.thread(), b.len() as u64);
            return;
        };
        let mut res = Ok(());
        // Packets without a timestamp (made inside the router, such as ARP
        // queries) are stamped with the time they are written, as Click's
        // ToDump does: read the clock at most once per batch. The record
        // is the one a live capture writes (paraclick_runtime::capture).
        let mut now = None;
        for p in b.iter() {
            res = pcap_record(
                &mut *out,
                p,
                self.snaplen,
                self.nano,
                self.extra_length,
                &mut now,
            );
            if res.is_err() {
                break;
            }
        }
        if res.is_ok() && self.unbuffered {
            res = out.flush();
        }
        match res {
            Ok(()) => self.count.add(cx.thread(), b.len() as u64),
            Err(e) => {
                self.drops.add(cx.thread(), b.len() as u64);
                self.errors.report(
                    &format!("{} :: ToDump", cx.element_name()),
                    &format!("{}: {e}; no more packets will be written", self.filename),
                );
                guard.close();
            }
        }
    }

    /// Flushes buffered records to the file.
    pub fn flush(&self) -> Result<(), String> {
        match self.out.lock().as_mut() {
            Some(out) => out.flush().map_err(|e| format!("{}: {e}", self.filename)),
            None => Ok(()),
        }
    }

    /// Packets written so far.
    pub fn count(&self) -> u64 {
        self.count.get()
    }
}

impl Drop for ToDump {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            eprintln!("ToDump: {e}");
        }
    }
}

impl Element for ToDump {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.count.reset();
            Ok(())
        }),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("filename", |e, _| e.filename.clone()),
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
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if !self.use_encap_from.is_empty() {
            let mut found: Option<(u32, &str)> = None;
            for name in &self.use_encap_from {
                let i = ix
                    .find(name)
                    .ok_or_else(|| format!("USE_ENCAP_FROM: no element named '{name}'"))?;
                let l = encap_of(ix, i).ok_or_else(|| {
                    format!("USE_ENCAP_FROM: element '{name}' has no 'encap' handler")
                })?;
                match found {
                    Some((prev, pname)) if prev != l => {
                        return Err(format!(
                            "USE_ENCAP_FROM: '{pname}' has encapsulation {} but '{name}' has {}",
                            encap_name(prev),
                            encap_name(l)
                        ))
                    }
                    _ => found = Some((l, name)),
                }
            }
            if let Some((l, _)) = found {
                self.linktype.store(l, Ordering::Relaxed);
            }
        }
        if ix.checking() {
            return Ok(()); // a check must not create or truncate the file
        }
        // Opened when the router runs (a timer at zero, or the first
        // packet): a rejected configuration leaves the file alone.
        ix.schedule_after(0, std::time::Duration::ZERO);
        if self.pull_sink {
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
        // Without an output, written packets are consumed here.
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(0, max)?;
        self.write_batch(cx, &b);
        Some(b)
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        crate::common::run_pull_sink(cx, self.burst, |cx, b| self.write_batch(cx, b))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use paraclick_packet::{Packet, Timestamp};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    fn frames() -> Vec<Vec<u8>> {
        (0..5)
            .map(|i| {
                eth_tcp(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    1000 + i,
                    80,
                    0x18,
                    10 * i as usize,
                )
            })
            .collect()
    }

    #[test]
    fn pcap_round_trip_is_byte_identical() {
        let dir = tempfile::tempdir().unwrap();
        let f = frames();
        for nano in [false, true] {
            let recs: Vec<Rec<'_>> = f
                .iter()
                .enumerate()
                .map(|(i, d)| Rec {
                    sec: 1_500_000_000 + i as u32,
                    frac: if nano { 123_456_789 } else { 654_321 },
                    orig_len: d.len() as u32 + if i == 4 { 7 } else { 0 },
                    data: d,
                })
                .collect();
            // ToDump writes little-endian files on this machine, with
            // SNAPLEN 2000 in the header: so does this one.
            let input = pcap_bytes(cfg!(target_endian = "big"), nano, 2000, 1, &recs);
            let a = dir.path().join(format!("a{nano}.pcap"));
            let b = dir.path().join(format!("b{nano}.pcap"));
            std::fs::write(&a, &input).unwrap();
            let r = build(
                &full_registry(),
                &format!(
                    "FromDump({}, STOP true) -> t :: ToDump({}, NANO {nano});",
                    q(&a),
                    q(&b)
                ),
            );
            run(&r);
            assert_eq!(handler(&r, "t.count"), "5");
            assert_eq!(handler(&r, "t.filename"), b.display().to_string());
            drop(r);
            assert_eq!(std::fs::read(&b).unwrap(), input, "nano {nano}");
        }
    }

    /// A full disk (/dev/full: every write fails with ENOSPC) when the file
    /// header is written, as the router starts: the packets are counted
    /// drops, none written. (Full mid-run: tests/netns/faults.sh, on a
    /// small tmpfs.)
    #[test]
    fn a_full_disk_at_start_drops_the_packets() {
        if !std::path::Path::new("/dev/full").exists() {
            return;
        }
        let r = Router::from_str(
            "InfiniteSource(LIMIT 3, STOP true) -> t :: ToDump(/dev/full)",
            &full_registry(),
            1,
        )
        .unwrap();
        r.run();
        assert_eq!(r.read_handler("t.count").unwrap(), "0");
        assert_eq!(r.read_handler("t.drops").unwrap(), "3");
    }

    /// The file is created or truncated only when the router runs: not by
    /// a check, nor by a configuration another element makes fail.
    #[test]
    fn the_file_is_untouched_until_the_router_runs() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("keep.pcap");
        std::fs::write(&a, "kept").unwrap();
        let conf = format!(
            "InfiniteSource(LIMIT 3, STOP true) -> t :: ToDump({})",
            a.display()
        );
        let check = paraclick_runtime::BuildOptions {
            check_only: true,
            ..Default::default()
        };
        let src = paraclick_lang::Source {
            name: "c".into(),
            text: conf.clone(),
        };
        drop(Router::build(&src, &full_registry(), &check).unwrap());
        assert_eq!(std::fs::read(&a).unwrap(), b"kept");
        let bad = format!("{conf}; Idle -> Queue(0) -> Discard");
        assert_err(
            Router::from_str(&bad, &full_registry(), 1),
            "<config>:1:87: Queue@4 :: Queue: CAPACITY must be at least 1",
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"kept");
        let r = Router::from_str(&conf, &full_registry(), 1).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"kept");
        r.run();
        drop(r);
        let len = paraclick_elements::sources::DEFAULT_DATA.len();
        assert_eq!(std::fs::read(&a).unwrap().len(), 24 + 3 * (16 + len));
        // No such directory: an error at once.
        let e = Router::from_str(
            "Idle -> ToDump(/nonexistent-dir/x.pcap)",
            &full_registry(),
            1,
        )
        .err()
        .unwrap();
        assert!(e[0].message.contains("no directory"), "{}", e[0].message);
    }

    /// Packets made here, written by ToDump, read back by FromDump.
    fn generated(nano: bool, extra: &str) -> Vec<Packet> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gen.pcap");
        let r = build(
            &full_registry(),
            &format!("Idle -> t :: ToDump({}, NANO {nano}{extra});", q(&path)),
        );
        let mut sent = Vec::new();
        for (i, d) in frames().iter().enumerate() {
            let mut p = Packet::from_slice(d).unwrap();
            p.set_timestamp(ts(
                1_700_000_000 + i as i64,
                100_000_000 * i as u32 + 12_345,
            ));
            sent.push(p);
        }
        r.push_into("t", 0, paraclick_packet::Batch::from(sent))
            .unwrap();
        assert_eq!(handler(&r, "t.count"), "5");
        drop(r); // flushes
        let r = build(
            &full_registry(),
            &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
        );
        run(&r);
        sink(&r, "s")
    }

    /// A packet without a timestamp annotation is written with the
    /// current time (Click's ToDump), not the epoch.
    #[test]
    fn unstamped_packets_get_the_current_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("now.pcap");
        let r = build(
            &full_registry(),
            &format!("Idle -> t :: ToDump({});", q(&path)),
        );
        let f = frames();
        let mut stamped = Packet::from_slice(&f[1]).unwrap();
        stamped.set_timestamp(ts(1_600_000_000, 5_000));
        let sent = vec![Packet::from_slice(&f[0]).unwrap(), stamped];
        let before = Timestamp::now();
        r.push_into("t", 0, paraclick_packet::Batch::from(sent))
            .unwrap();
        let after = Timestamp::now();
        drop(r);
        let r = build(
            &full_registry(),
            &format!("f :: FromDump({}, STOP true) -> s :: TestSink;", q(&path)),
        );
        run(&r);
        let got = sink(&r, "s");
        assert_eq!(got.len(), 2);
        let t = got[0].timestamp();
        // Microsecond files: compare at microsecond precision.
        assert!(
            t.0 / 1000 >= before.0 / 1000 && t.0 / 1000 <= after.0 / 1000,
            "{t:?} not in [{before:?}, {after:?}]"
        );
        assert_eq!(got[1].timestamp(), ts(1_600_000_000, 5_000));
    }

    #[test]
    fn generated_packets_round_trip() {
        let f = frames();
        let got = generated(true, "");
        assert_eq!(got.len(), 5);
        for (i, p) in got.iter().enumerate() {
            assert_eq!(p.data(), &f[i][..]);
            assert_eq!(
                p.timestamp(),
                ts(1_700_000_000 + i as i64, 100_000_000 * i as u32 + 12_345)
            );
        }
        // Microseconds lose the nanoseconds.
        let got = generated(false, "");
        for (i, p) in got.iter().enumerate() {
            assert_eq!(p.data(), &f[i][..]);
            assert_eq!(
                p.timestamp(),
                ts(1_700_000_000 + i as i64, 100_000_000 * i as u32 + 12_000)
            );
        }
        // SNAPLEN cuts packets; the original length survives as extra length.
        let got = generated(true, ", SNAPLEN 60");
        for (i, p) in got.iter().enumerate() {
            assert_eq!(p.data(), &f[i][..f[i].len().min(60)]);
            assert_eq!(
                p.anno().extra_length as usize,
                f[i].len().saturating_sub(60)
            );
        }
    }

    #[test]
    fn encapsulation_and_pull_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let frame = eth_tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x02, 0);
        let ip = &frame[14..];
        let recs: Vec<Rec<'_>> = (0..3)
            .map(|i| Rec {
                sec: 7 + i,
                frac: 0,
                orig_len: 40,
                data: ip,
            })
            .collect();
        let a = dir.path().join("raw.pcap");
        std::fs::write(&a, pcap_bytes(false, false, 65535, 101, &recs)).unwrap();
        // USE_ENCAP_FROM, with ToDump in pull context (an output).
        let b = dir.path().join("b.pcap");
        let r = build(&full_registry(), &format!(
            "f :: FromDump({}, STOP true) -> t :: ToDump({}, USE_ENCAP_FROM f) -> Unqueue -> s :: TestSink;",
            q(&a),
            q(&b)
        ));
        run(&r);
        assert_eq!(sink(&r, "s").len(), 3);
        drop(r);
        let out = std::fs::read(&b).unwrap();
        assert_eq!(u32::from_ne_bytes(out[20..24].try_into().unwrap()), 101);
        assert_eq!(out.len(), 24 + 3 * (16 + 40));
        // ENCAP by name; ToDump as a pull sink owns a task.
        let c = dir.path().join("c.pcap");
        let r = build(
            &full_registry(),
            &format!(
                "FromDump({}) -> Queue(100) -> t :: ToDump({}, ENCAP IP, SNAPLEN 0);",
                q(&a),
                q(&c)
            ),
        );
        run_until(&r, |r| r.read_handler("t.count").unwrap() == "3");
        drop(r);
        let out = std::fs::read(&c).unwrap();
        assert_eq!(u32::from_ne_bytes(out[16..20].try_into().unwrap()), 262_144);
        assert_eq!(u32::from_ne_bytes(out[20..24].try_into().unwrap()), 101);
        assert_eq!(out.len(), 24 + 3 * (16 + 40));
        // Errors.
        let e = build_err(
            &full_registry(),
            &format!("Idle -> ToDump({}, ENCAP FROB);", q(&c)),
        );
        assert!(e.contains("unknown encapsulation"), "{e}");
        let e = build_err(
            &full_registry(),
            &format!("i :: Idle -> ToDump({}, USE_ENCAP_FROM i);", q(&c)),
        );
        assert!(e.contains("no 'encap' handler"), "{e}");
        let e = build_err(
            &full_registry(),
            &format!("Idle -> ToDump({}, ENCAP IP, USE_ENCAP_FROM x);", q(&c)),
        );
        assert!(e.contains("at most one"), "{e}");
        let e = build_err(
            &full_registry(),
            &format!(
                "Idle -> ToDump({});",
                q(&dir.path().join("no/such/dir/x.pcap"))
            ),
        );
        assert!(e.contains("no directory"), "{e}");
    }

    #[test]
    fn two_threads_two_sources_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = frames();
        let recs: Vec<Rec<'_>> = (0..200)
            .map(|i| Rec {
                sec: i,
                frac: 0,
                orig_len: f[0].len() as u32,
                data: &f[0],
            })
            .collect();
        let a = dir.path().join("a.pcap");
        let b = dir.path().join("b.pcap");
        std::fs::write(&a, pcap_bytes(false, false, 65535, 1, &recs)).unwrap();
        let conf = format!(
            "f1 :: FromDump({a}, BURST 7) -> t :: ToDump({b}); f2 :: FromDump({a}, BURST 5) -> t;",
            a = q(&a),
            b = q(&b)
        );
        let r = paraclick_runtime::Router::from_str(&conf, &full_registry(), 2).unwrap();
        run_until(&r, |r| r.read_handler("t.count").unwrap() == "400");
        drop(r);
        let out = std::fs::read(&b).unwrap();
        assert_eq!(out.len(), 24 + 400 * (16 + f[0].len()));
        // Every record is whole: walk them.
        let mut at = 24;
        while at < out.len() {
            let cap = u32::from_ne_bytes(out[at + 8..at + 12].try_into().unwrap()) as usize;
            assert_eq!(cap, f[0].len());
            assert_eq!(&out[at + 16..at + 16 + cap], &f[0][..]);
            at += 16 + cap;
        }
    }

    #[test]
    fn flush_handler_completes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.pcap");
        let r = build(
            &full_registry(),
            &format!("Idle -> t :: ToDump({});", q(&path)),
        );
        let p = Packet::from_slice(&[1, 2, 3]).unwrap();
        r.push_into("t", 0, paraclick_packet::Batch::one(p))
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 24);
        r.write_handler("t.flush", "").unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 24 + 16 + 3);
        r.write_handler("t.reset_counts", "").unwrap();
        assert_eq!(handler(&r, "t.count"), "0");
    }
}
