//! Live capture: the packets crossing one connection, written to a pcap
//! file while the router runs, without reconfiguring it.
//!
//! `write capture ELEMENT[PORT] FILE [N] [ENCAP]` (the global `capture`
//! write handler; `paraclick ctl capture ...`) starts copying every packet
//! that leaves output PORT (default 0) of ELEMENT, pushed or pulled, into a
//! bounded lock-free ring ([`crate::ring::Ring`], multi-producer: every
//! thread that moves packets over the connection may copy them) that a
//! writer thread of its own empties into FILE, in the pcap format ToDump
//! writes ([`pcap_header`], [`pcap_record`]: the same code). A copy is
//! the packet's pcap record (its first 2000 bytes), made by the thread that
//! moves the packet, in memory of its own: never one of the router's
//! packet buffers, so a capture cannot starve the router's pools. It stops after
//! N packets, on `write capture stop`, or when the router stops. ENCAP is
//! the file's link type: `ETHER` (default), `IP` or a number.
//!
//! The data path never waits for the capture: a copy that finds the ring
//! full ([`RING`] copies) or the copies waiting already holding
//! [`BUDGET`] bytes is not made and is counted as the capture's drop; the
//! packet itself goes on. The ring is allocated by the first capture.
//! When no capture runs, a hop pays one relaxed load of a flag per
//! `push`/`pull` call (not per packet).
//!
//! The writer sleeps while the ring is nearly empty: a thread that leaves
//! `WAKE` (64) copies or more in the ring and finds the writer's `sleeping`
//! flag set wakes it (one load of that flag per copied batch; the wake
//! itself, an unpark, once per `WAKE` copies at most). A trickle waits
//! at most `BACKSTOP` (5 ms). Awake, the writer takes up to `BURST` (256) copies
//! at a time into a 1 MiB buffer, which it writes out when full and when
//! the ring runs dry. At 1 Mpps the ring holds 64 ms of packets, so a
//! writer the scheduler keeps off the CPU for a while loses nothing.
//!
//! Files: FILE is one name in the directory given at start-up
//! ([`set_directory`], `--capture-dir`), never a path: no `/`, not `.` or
//! `..`; it is created, and must not exist (no file, FIFO or symbolic
//! link is opened or followed). Without that directory `capture` is
//! refused. FILE `-` keeps the pcap stream in memory (at most
//! [`PIPE_BYTES`], beyond which packets are the capture's drops) for the
//! `capture_data` read handler, which hands out what is there (in
//! hexadecimal): `paraclick
//! ctl capture E F - | tcpdump -r -` reads it live.
//!
//! `read capture`: the state, one `KEY VALUE` a line: `state` (`idle`,
//! `starting` until every thread sees the capture, `running`, `done`), `connection`, `file`, `captured` (copies put in
//! the ring), `written` (records written), `dropped` (copies not made,
//! or not written) and `error` (a failed write).

use crate::core::Core;
use crate::cx::Cx;
use crate::ring::{Consumer, Ring};
use paraclick_packet::{Batch, Packet, Timestamp};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Copies the ring holds.
pub const RING: usize = 1 << 16;
/// Bytes the copies waiting in the ring may hold in all.
pub const BUDGET: usize = 32 << 20;
/// Copies in the ring at which a copying thread wakes a sleeping writer.
const WAKE: usize = 64;
/// The longest a writer sleeps with fewer than [`WAKE`] copies waiting.
const BACKSTOP: Duration = Duration::from_millis(5);
/// Copies the writer takes from the ring at a time.
const BURST: usize = 256;
/// Bytes a capture to `-` keeps for `capture_data`.
pub const PIPE_BYTES: usize = 4 << 20;
/// Bytes `capture_data` returns at most per read.
const DATA_CHUNK: usize = 256 << 10;
/// The snapshot length of capture files (ToDump's default).
const SNAPLEN: u32 = 2000;

static DIRECTORY: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The directory capture files are written in (`--capture-dir`); set once,
/// before the router runs. Without it, `capture` is refused.
pub fn set_directory(dir: Option<PathBuf>) {
    let _ = DIRECTORY.set(dir);
}

/// The 24-byte header of a pcap file: this machine's byte order,
/// version 2.4, microsecond (or, with `nano`, nanosecond) timestamps.
pub fn pcap_header(snaplen: u32, linktype: u32, nano: bool) -> [u8; 24] {
    let magic: u32 = if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&magic.to_ne_bytes());
    h[4..6].copy_from_slice(&2u16.to_ne_bytes());
    h[6..8].copy_from_slice(&4u16.to_ne_bytes());
    // thiszone and sigfigs: 0.
    h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
    h[20..24].copy_from_slice(&linktype.to_ne_bytes());
    h
}

/// Writes `p`'s pcap record: at most `snaplen` bytes (0: all), its
/// original length (plus its extra length annotation with
/// `extra_length`), and its timestamp, or (none) the time of the first
/// such packet of the call, kept in `now`.
pub fn pcap_record(
    out: &mut impl Write,
    p: &Packet,
    snaplen: u32,
    nano: bool,
    extra_length: bool,
    now: &mut Option<Timestamp>,
) -> std::io::Result<()> {
    let len = p.len();
    let cap = if snaplen == 0 {
        len
    } else {
        len.min(snaplen as usize)
    };
    let mut orig = len as u64;
    if extra_length {
        orig += u64::from(p.anno().extra_length);
    }
    let mut ts = p.timestamp();
    if ts.is_zero() {
        ts = *now.get_or_insert_with(Timestamp::now);
    }
    let sec = ts.sec().clamp(0, i64::from(u32::MAX)) as u32;
    let frac = if nano { ts.nsec() } else { ts.usec() };
    let mut hdr = [0u8; 16];
    hdr[0..4].copy_from_slice(&sec.to_ne_bytes());
    hdr[4..8].copy_from_slice(&frac.to_ne_bytes());
    hdr[8..12].copy_from_slice(&(cap as u32).to_ne_bytes());
    hdr[12..16].copy_from_slice(&(orig.min(u64::from(u32::MAX)) as u32).to_ne_bytes());
    out.write_all(&hdr)?;
    out.write_all(&p.data()[..cap])
}

/// What the data path and the writer share.
struct Shared {
    /// The connection: its source element and output port.
    elem: AtomicU32,
    port: AtomicU32,
    /// Tags the copies of the running capture (a copy a thread made just
    /// as an earlier capture ended is skipped by the next one's writer).
    session: AtomicU32,
    /// Copies admitted so far, and at most.
    taken: AtomicU64,
    limit: AtomicU64,
    captured: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    /// The copies (session, pcap record), allocated by the first capture.
    ring: OnceLock<Ring<(u32, Box<[u8]>)>>,
    /// Bytes of the copies in the ring.
    pending: AtomicUsize,
    /// For a capture to `-`: the bytes not yet read by `capture_data`.
    pipe: Mutex<Vec<u8>>,
    /// The capture runs (the writer's view of [`Tap::on`]: both are set
    /// and cleared together).
    active: AtomicBool,
    /// The writer has finished.
    done: AtomicBool,
    /// Every worker has seen [`Tap::on`] since this capture began (the
    /// data path reads the flag only when the sync epoch moves): until
    /// then the capture is `starting`.
    armed: AtomicBool,
    /// The writer is parked (or about to park): a thread that leaves
    /// [`WAKE`] or more copies in the ring wakes it.
    sleeping: AtomicBool,
    /// The running writer's thread, to unpark.
    writer: Mutex<Option<std::thread::Thread>>,
}

impl Shared {
    /// Wakes the writer if it sleeps (it clears `sleeping` itself too).
    #[cold]
    fn wake(&self) {
        if self.sleeping.swap(false, Ordering::AcqRel) {
            if let Some(t) = &*self.writer.lock().unwrap_or_else(|e| e.into_inner()) {
                t.unpark();
            }
        }
    }
}

/// A router's capture state (one capture at a time).
pub(crate) struct Tap {
    /// A capture is running: the data path looks at `shared`.
    pub(crate) on: AtomicBool,
    shared: Arc<Shared>,
    control: Mutex<Control>,
}

#[derive(Default)]
struct Control {
    /// `ELEM[PORT] -> PEER[PORT]`, the file, and whether it goes to `-`.
    connection: String,
    file: String,
    pipe: bool,
    started: bool,
    error: Arc<Mutex<Option<String>>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Tap {
    pub(crate) fn new() -> Tap {
        Tap {
            on: AtomicBool::new(false),
            shared: Arc::new(Shared {
                elem: AtomicU32::new(u32::MAX),
                port: AtomicU32::new(0),
                session: AtomicU32::new(0),
                taken: AtomicU64::new(0),
                limit: AtomicU64::new(0),
                captured: AtomicU64::new(0),
                written: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                ring: OnceLock::new(),
                pending: AtomicUsize::new(0),
                pipe: Mutex::new(Vec::new()),
                active: AtomicBool::new(false),
                done: AtomicBool::new(true),
                armed: AtomicBool::new(false),
                sleeping: AtomicBool::new(false),
                writer: Mutex::new(None),
            }),
            control: Mutex::new(Control::default()),
        }
    }
}

/// The data path's hook: `batch` leaves output `port` of element `elem`.
/// Called only while a capture runs.
#[cold]
#[inline(never)]
pub(crate) fn hop(cx: &Cx<'_>, elem: usize, port: usize, batch: &Batch) {
    let sh = &*cx.core.tap.shared;
    if sh.elem.load(Ordering::Relaxed) as usize != elem
        || sh.port.load(Ordering::Relaxed) as usize != port
    {
        return;
    }
    copy(cx, sh, batch.iter());
}

/// [`hop`] for one packet.
#[cold]
#[inline(never)]
pub(crate) fn hop_one(cx: &Cx<'_>, elem: usize, port: usize, p: &Packet) {
    let sh = &*cx.core.tap.shared;
    if sh.elem.load(Ordering::Relaxed) as usize != elem
        || sh.port.load(Ordering::Relaxed) as usize != port
    {
        return;
    }
    copy(cx, sh, std::iter::once(p));
}

fn copy<'a>(cx: &Cx<'_>, sh: &Shared, ps: impl ExactSizeIterator<Item = &'a Packet>) {
    let n = ps.len() as u64;
    let limit = sh.limit.load(Ordering::Relaxed);
    let before = sh.taken.fetch_add(n, Ordering::Relaxed);
    if before >= limit {
        off(&cx.core.tap);
        return;
    }
    let Some(ring) = sh.ring.get() else {
        return;
    };
    let k = n.min(limit - before);
    let session = sh.session.load(Ordering::Relaxed);
    let producer = cx.producer();
    let (mut made, mut lost, mut bytes) = (0, 0, 0);
    let mut room = BUDGET.saturating_sub(sh.pending.load(Ordering::Relaxed));
    let mut now = None;
    for p in ps.take(k as usize) {
        let size = 16 + p.len().min(SNAPLEN as usize);
        if size > room {
            lost += 1;
            continue;
        }
        let mut rec = Vec::with_capacity(size);
        let _ = pcap_record(&mut rec, p, SNAPLEN, false, true, &mut now);
        match ring.push(&producer, (session, rec.into_boxed_slice())) {
            Ok(()) => {
                made += 1;
                bytes += size;
                room -= size;
            }
            Err(_) => lost += 1,
        }
    }
    if made > 0 {
        sh.pending.fetch_add(bytes, Ordering::Relaxed);
        sh.captured.fetch_add(made, Ordering::Relaxed);
        // The writer sleeps until a batch worth writing waits (or its
        // backstop): one load of a flag the writer rarely writes.
        if sh.sleeping.load(Ordering::Relaxed) && ring.len() >= WAKE {
            sh.wake();
        }
    }
    if lost > 0 {
        sh.dropped.fetch_add(lost, Ordering::Relaxed);
    }
    if before + n >= limit {
        off(&cx.core.tap);
    }
}

/// Ends the capture (its writer then drains the ring and finishes).
fn off(tap: &Tap) {
    tap.on.store(false, Ordering::Relaxed);
    tap.shared.active.store(false, Ordering::Relaxed);
    tap.shared.wake();
}

/// `ELEMENT[PORT]` → (element, port).
fn parse_connection(core: &Core, s: &str) -> Result<(usize, usize), String> {
    let (name, port) = match s.strip_suffix(']').and_then(|x| x.rsplit_once('[')) {
        Some((n, p)) => (
            n,
            p.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad port in '{s}'"))?,
        ),
        None => (s, 0),
    };
    let &e = core
        .names
        .get(name)
        .ok_or_else(|| format!("no element named '{name}'"))?;
    peer_of(core, e, port)
        .map(|_| (e, port))
        .ok_or_else(|| format!("{name} has no connected output {port}"))
}

/// The element and input port output `port` of `e` leads to: a push
/// connection's from `e`'s outputs, a pull one's from its puller's inputs.
fn peer_of(core: &Core, e: usize, port: usize) -> Option<(usize, usize)> {
    if let Some(p) = core.ports[e].outputs.get(port) {
        if p.elem != u32::MAX {
            return Some((p.elem as usize, p.port as usize));
        }
    }
    core.ports.iter().enumerate().find_map(|(i, ps)| {
        ps.inputs
            .iter()
            .position(|p| p.elem as usize == e && p.port as usize == port)
            .map(|k| (i, k))
    })
}

/// Creates `name` in the capture directory: one new file, never a path, an
/// existing file, a FIFO or a link.
fn create(name: &str) -> Result<(std::fs::File, PathBuf), String> {
    let Some(Some(dir)) = DIRECTORY.get() else {
        return Err(
            "capture to a file needs a capture directory (paraclick --capture-dir DIR)".into(),
        );
    };
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(format!(
            "'{name}': a capture file is a name in the capture directory, not a path"
        ));
    }
    let path = dir.join(name);
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((f, path))
}

/// The `capture` write handler.
pub(crate) fn write(core: &Core, value: &str) -> Result<(), String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    let tap = &core.tap;
    let mut ctl = tap.control.lock().unwrap_or_else(|e| e.into_inner());
    if words.as_slice() == ["stop"] {
        off(tap);
        return Ok(());
    }
    let [conn, file, rest @ ..] = words.as_slice() else {
        return Err("expected ELEMENT[PORT] FILE [N] [ENCAP], or stop".into());
    };
    let (mut limit, mut linktype) = (u64::MAX, 1u32);
    for w in rest {
        if let Ok(n) = w.parse::<u64>() {
            if n == 0 {
                return Err("N must be at least 1".into());
            }
            limit = n;
        } else {
            linktype = match w.to_ascii_uppercase().as_str() {
                "ETHER" => 1,
                "IP" => 101,
                "IP6" => 229,
                _ => return Err(format!("'{w}' is neither a count nor ETHER, IP or IP6")),
            };
        }
    }
    let (e, port) = parse_connection(core, conn)?;
    let sh = &tap.shared;
    if ctl.started && !sh.done.load(Ordering::Acquire) {
        return Err(format!(
            "a capture of {} is running (write capture stop first)",
            ctl.connection
        ));
    }
    if let Some(w) = ctl.writer.take() {
        let _ = w.join();
    }
    let pipe = *file == "-";
    let out: Box<dyn Write + Send> = if pipe {
        sh.pipe.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Box::new(PipeOut(sh.clone()))
    } else {
        let (f, _) = create(file)?;
        Box::new(std::io::BufWriter::with_capacity(1 << 20, f))
    };
    let (to, to_port) = peer_of(core, e, port).unwrap_or((e, 0));
    ctl.connection = format!(
        "{}[{port}] -> [{to_port}]{}",
        core.slots[e].name, core.slots[to].name
    );
    ctl.file = file.to_string();
    ctl.pipe = pipe;
    ctl.started = true;
    let error = Arc::new(Mutex::new(None));
    ctl.error = error.clone();
    let session = sh.session.load(Ordering::Relaxed).wrapping_add(1);
    sh.session.store(session, Ordering::Relaxed);
    for c in [&sh.taken, &sh.captured, &sh.written, &sh.dropped] {
        c.store(0, Ordering::Relaxed);
    }
    sh.limit.store(limit, Ordering::Relaxed);
    sh.elem.store(e as u32, Ordering::Relaxed);
    sh.port.store(port as u32, Ordering::Relaxed);
    sh.done.store(false, Ordering::Release);
    sh.armed.store(false, Ordering::Relaxed);
    sh.active.store(true, Ordering::Relaxed);
    let _ = sh.ring.get_or_init(|| Ring::with_modes(RING, true, false));
    let shared = sh.clone();
    let w = std::thread::Builder::new()
        .name("paraclick-capture".into())
        .spawn(move || writer(shared, session, out, linktype, error));
    match w {
        Ok(w) => {
            *sh.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(w.thread().clone());
            ctl.writer = Some(w)
        }
        Err(e) => {
            sh.active.store(false, Ordering::Relaxed);
            sh.done.store(true, Ordering::Release);
            return Err(e.to_string());
        }
    }
    tap.on.store(true, Ordering::Release);
    Ok(())
}

/// A capture to `-`: into the bounded buffer `capture_data` reads.
struct PipeOut(Arc<Shared>);

impl Write for PipeOut {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut p = self.0.pipe.lock().unwrap_or_else(|e| e.into_inner());
        if p.len() + b.len() > PIPE_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "capture buffer full",
            ));
        }
        p.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn writer(
    sh: Arc<Shared>,
    session: u32,
    mut out: Box<dyn Write + Send>,
    linktype: u32,
    error: Arc<Mutex<Option<String>>>,
) {
    let fail = |e: std::io::Error| {
        *error.lock().unwrap_or_else(|x| x.into_inner()) = Some(e.to_string());
    };
    let mut ok = true;
    if let Err(e) = out.write_all(&pcap_header(SNAPLEN, linktype, false)) {
        fail(e);
        ok = false;
    }
    let consumer = Consumer::new();
    let Some(ring) = sh.ring.get() else {
        sh.done.store(true, Ordering::Release);
        return;
    };
    let mut batch: Vec<(u32, Box<[u8]>)> = Vec::with_capacity(BURST);
    let mut idle_after_off = 0;
    loop {
        batch.clear();
        let n = ring.pop_burst(&consumer, &mut batch, BURST);
        if n == 0 {
            if !sh.active.load(Ordering::Relaxed) {
                // Off: a copy in flight (a thread that saw the capture on
                // just before) lands within a moment.
                idle_after_off += 1;
                if idle_after_off > 20 {
                    break;
                }
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            // Write what the buffer holds, then sleep until a thread
            // leaves a batch in the ring (or the backstop, for a trickle).
            let _ = out.flush();
            sh.sleeping.store(true, Ordering::SeqCst);
            if ring.len() < WAKE && sh.active.load(Ordering::SeqCst) {
                std::thread::park_timeout(BACKSTOP);
            }
            sh.sleeping.store(false, Ordering::Relaxed);
            continue;
        }
        idle_after_off = 0;
        let mut written = 0;
        let mut bytes = 0;
        for (s, rec) in batch.drain(..) {
            bytes += rec.len();
            if s != session {
                continue;
            }
            if ok {
                // One write per record: a capture to `-` takes it whole
                // or not at all.
                match out.write_all(&rec) {
                    Ok(()) => written += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        // `-` and nobody reading: the capture's drop.
                        sh.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        fail(e);
                        ok = false;
                        sh.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
            } else {
                sh.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        sh.pending.fetch_sub(bytes, Ordering::Relaxed);
        sh.written.fetch_add(written, Ordering::Relaxed);
    }
    if let Err(e) = out.flush() {
        if ok {
            fail(e);
        }
    }
    drop(out);
    sh.done.store(true, Ordering::Release);
}

/// The `capture` read handler.
pub(crate) fn read(core: &Core) -> String {
    let ctl = core.tap.control.lock().unwrap_or_else(|e| e.into_inner());
    let sh = &core.tap.shared;
    if !ctl.started {
        return "state idle\n".into();
    }
    let state = if sh.done.load(Ordering::Acquire) {
        "done"
    } else if sh.armed.load(Ordering::Acquire) {
        "running"
    } else {
        "starting"
    };
    let mut s = format!(
        "state {state}\nconnection {}\nfile {}\ncaptured {}\nwritten {}\ndropped {}\n",
        ctl.connection,
        ctl.file,
        sh.captured.load(Ordering::Relaxed),
        sh.written.load(Ordering::Relaxed),
        sh.dropped.load(Ordering::Relaxed),
    );
    if let Some(e) = &*ctl.error.lock().unwrap_or_else(|e| e.into_inner()) {
        s.push_str(&format!("error {e}\n"));
    }
    s
}

/// The `capture_data` read handler: the pcap bytes of a capture to `-`
/// not read yet (at most 256 KiB at a time), in hexadecimal (handler
/// values are text).
pub(crate) fn data(core: &Core) -> String {
    let mut p = core
        .tap
        .shared
        .pipe
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let n = p.len().min(DATA_CHUNK);
    let mut s = String::with_capacity(2 * n);
    for b in p.drain(..n) {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Stops a running capture and waits for its writer (the router stops or
/// is dropped).
pub(crate) fn stop_and_join(core: &Core) {
    off(&core.tap);
    let w = core
        .tap
        .control
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .writer
        .take();
    if let Some(w) = w {
        let _ = w.join();
    }
}

/// After [`write`] started a capture and every worker crossed the
/// barrier: the capture is `running`.
pub(crate) fn armed(core: &Core) {
    core.tap.shared.armed.store(true, Ordering::Release);
}
