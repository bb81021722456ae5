//! Trace sources: the element every single-output trace reader is
//! ([`TraceSource`]: the handlers, task and pull they share, written once
//! around the class's [`TraceReader`]), the bounded line reader
//! FromIPSummaryDump, FromNetFlowSummaryDump and FromCapDump share, and
//! the reader of the last two ([`TextTrace`]): a file of text lines, each
//! turned into packet descriptions ([`Values`], built into packets by the
//! IP summary dump's builder) by the class's line parser. Not an element
//! class of its own.

use crate::common::{
    add_trace_task, open_input, sampling_prob_text, EndAction, ErrorCount, Produced, Sampler,
    Timing,
};
use crate::ipsumdump::{build, BuildOpts, FlowId, Values};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::{
    ConfigCx, Cx, DynHandler, Element, Handler, HandlerCx, InitCx, PerThreadCount,
};
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Lines longer than this are bad (and skipped), keeping memory bounded.
pub(crate) const MAX_LINE: u64 = 1 << 16;

/// Reads the next line of `r` into `line` (without its newline), adding
/// the bytes consumed to `pos`. `None` at end of file, `Err` for a read
/// error, `Ok(false)` for a line longer than [`MAX_LINE`] (skipped to its
/// end, never held whole).
pub(crate) fn read_line(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    pos: &mut u64,
) -> Result<Option<bool>, String> {
    line.clear();
    let n = r
        .by_ref()
        .take(MAX_LINE)
        .read_until(b'\n', line)
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Ok(None);
    }
    *pos += n as u64;
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        return Ok(Some(true));
    }
    if (n as u64) < MAX_LINE {
        return Ok(Some(true)); // last line, no newline
    }
    // Too long: skip to the end of the line.
    loop {
        line.clear();
        let n = r
            .by_ref()
            .take(MAX_LINE)
            .read_until(b'\n', line)
            .map_err(|e| e.to_string())?;
        *pos += n as u64;
        if n == 0 || line.last() == Some(&b'\n') {
            line.clear();
            return Ok(Some(false));
        }
    }
}

/// What a line of a text trace describes.
pub(crate) enum Parsed {
    /// A comment, a blank line, a header.
    Nothing,
    /// A bad line: skipped, counted in `errors`.
    Bad(String),
    /// `n` packets (at least 1) like `v`, see [`Record`].
    Record(Box<Record>),
}

/// Packets a line describes: `n` copies of `v`, timestamps spread evenly
/// from `v`'s to `end` (when given), each `len_total / n` bytes long (the
/// first `len_total % n` one more) when `len_total` is given. With
/// `whole_bytes`, the packet's extra length annotation makes its length
/// plus extra length that many bytes (a packet standing for a flow).
/// `fix` runs on each built packet (annotations the builder does not set).
pub(crate) struct Record {
    pub v: Values,
    pub n: u64,
    pub end: Option<Timestamp>,
    pub len_total: Option<u64>,
    pub whole_bytes: Option<u64>,
    /// The packet number annotations (FromCapDump's).
    pub numbers: Option<[u32; 2]>,
    pub fix: Option<fn(&mut Packet, &Values)>,
}

/// A class's line parser: the element's options and the line's text.
pub(crate) type LineParser = fn(&TextOpts, &str) -> Parsed;

/// Options a class's parser reads.
pub(crate) struct TextOpts {
    /// FromNetFlowSummaryDump's MULTIPACKET, LINK.
    pub multipacket: bool,
    pub link: u8,
    /// FromCapDump's FLOWID and AGGREGATE.
    pub flowid: Option<FlowId>,
    pub aggregate: u32,
}

/// Packets of a record still to emit.
struct Pending {
    rec: Box<Record>,
    next: u64,
}

struct State {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    pos: u64,
    line_no: u64,
    line: Vec<u8>,
    pending: Option<Pending>,
    /// A built packet held for TIMING or a full pool.
    held: Option<Packet>,
    timing: Timing,
    sampler: Sampler,
    done: bool,
}

/// What every single-output trace source keeps besides its reading
/// state: the arguments and counts its shared handlers read and write.
pub struct Core {
    pub(crate) filename: String,
    pub(crate) active: AtomicBool,
    pub(crate) count: PerThreadCount,
    pub(crate) errors: ErrorCount,
    pub(crate) burst: AtomicUsize,
    pub(crate) end: EndAction,
    pub(crate) timing: bool,
    pub(crate) push: bool,
    pub(crate) sample: u32,
    pub(crate) filesize: Option<u64>,
}

impl Core {
    /// The shared part of a source configured with these arguments.
    pub(crate) fn new(cx: &ConfigCx<'_>, a: &TraceArgs, filesize: Option<u64>) -> Core {
        Core {
            filename: a.filename.clone(),
            active: AtomicBool::new(a.active),
            count: PerThreadCount::new(cx.nthreads),
            errors: ErrorCount::default(),
            burst: AtomicUsize::new(a.burst),
            end: a.end.clone(),
            timing: a.timing,
            push: cx.output_is_push(0),
            sample: a.sample,
            filesize,
        }
    }

    /// Counts a bad record or line and prints the first (`CLASS: FILE:WHERE: msg`).
    pub(crate) fn report(&self, cx: &Cx<'_>, class: &str, at: &str, msg: &str) {
        self.errors.report(
            &format!("{} :: {class}", cx.element_name()),
            &format!("{}:{at}: {msg}", self.filename),
        );
    }
}

/// The arguments every single-output trace source reads.
pub(crate) struct TraceArgs {
    pub filename: String,
    pub end: EndAction,
    pub active: bool,
    pub timing: bool,
    pub sample: u32,
    pub burst: usize,
}

/// How a trace source reads its file: the part that differs between
/// classes.
pub trait TraceReader: Send + Sync + Sized + 'static {
    /// Reads up to `max` packets (fewer when a packet waits for its time,
    /// the pool is empty, or the file ends).
    fn produce(&self, core: &Core, cx: &mut Cx<'_>, max: usize) -> Produced;
    /// The `filepos` handler: bytes of the (uncompressed) file consumed.
    fn filepos(&self) -> u64;
    /// Packets held back (for the conservation check).
    fn queued(&self) -> usize;
    /// Handlers of the class's own, beyond those every trace source has.
    fn extra_handlers(&self) -> Vec<DynHandler> {
        Vec::new()
    }
    /// Reads one of [`TraceReader::extra_handlers`].
    fn read_extra(&self, _core: &Core, _name: &str) -> Option<Result<String, String>> {
        None
    }
    /// Writes one of [`TraceReader::extra_handlers`].
    fn write_extra(
        &self,
        _core: &Core,
        _name: &str,
        _value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        None
    }
}

/// A single-output trace source (FromIPSummaryDump,
/// FromNetFlowSummaryDump, FromCapDump, FromNLANRDump): the handlers, the
/// task and the pull every one has, written once, around the class's
/// [`TraceReader`].
pub struct TraceSource<R> {
    pub(crate) core: Core,
    pub(crate) reader: R,
}

impl<R: TraceReader> TraceSource<R> {
    /// Packets emitted so far.
    pub fn count(&self) -> u64 {
        self.core.count.get()
    }
}

impl<R: TraceReader> Element for TraceSource<R> {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.core.count.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.core.count.reset();
            Ok(())
        }),
        Handler::read("sampling_prob", |e, _| sampling_prob_text(e.core.sample)),
        Handler::rw(
            "active",
            |e, _| e.core.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.core.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("encap", |_, _| "IP".into()),
        Handler::read("filename", |e, _| e.core.filename.clone()),
        Handler::read("filesize", |e, _| {
            e.core
                .filesize
                .map_or_else(|| "-".into(), |s| s.to_string())
        }),
        Handler::read("filepos", |e, _| e.reader.filepos().to_string()),
        Handler::write("stop", |e, _, hx| {
            e.core.active.store(false, Ordering::Relaxed);
            hx.request_stop();
            Ok(())
        }),
        Handler::read("errors", |e, _| e.core.errors.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        add_trace_task(ix, self.core.push, self.core.timing);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let c = &self.core;
        self.reader
            .produce(c, cx, c.burst.load(Ordering::Relaxed))
            .finish_push(cx, &c.end, &c.active)
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let c = &self.core;
        self.reader
            .produce(c, cx, max.max(1))
            .finish(cx, &c.end, &c.active)
            .0
    }

    fn queued(&self) -> usize {
        self.reader.queued()
    }

    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        self.reader.extra_handlers()
    }

    fn read_dynamic(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<Result<String, String>> {
        self.reader.read_extra(&self.core, name)
    }

    fn write_dynamic(
        &self,
        name: &str,
        value: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        self.reader.write_extra(&self.core, name, value, hx)
    }
}

/// The reader of a line-oriented trace file (FromNetFlowSummaryDump,
/// FromCapDump): each line through the class's [`LineParser`].
pub struct LineReader {
    class: &'static str,
    parse: LineParser,
    opts: TextOpts,
    checksum: bool,
    state: Mutex<State>,
}

/// A source reading a line-oriented trace file (FromNetFlowSummaryDump,
/// FromCapDump).
pub type TextTrace = TraceSource<LineReader>;

/// What the classes' constructors read before [`TextTrace::new`].
pub(crate) struct TextArgs {
    pub filename: String,
    pub stop: bool,
    pub active: bool,
    pub timing: bool,
    pub checksum: bool,
    pub sample: u32,
    pub burst: usize,
}

impl TextTrace {
    pub(crate) fn new(
        cx: &mut ConfigCx<'_>,
        class: &'static str,
        parse: LineParser,
        opts: TextOpts,
        a: TextArgs,
    ) -> Result<TextTrace, String> {
        paraclick_elements::util::check_burst(a.burst)?;
        cx.allowed_file(&a.filename)?;
        let (r, filesize) = open_input(&a.filename)?;
        let args = TraceArgs {
            end: EndAction::from_args(a.stop, None)?,
            filename: a.filename,
            active: a.active,
            timing: a.timing,
            sample: a.sample,
            burst: a.burst,
        };
        Ok(TraceSource {
            core: Core::new(cx, &args, filesize),
            reader: LineReader {
                class,
                parse,
                opts,
                checksum: a.checksum,
                state: Mutex::new(State {
                    reader: Some(BufReader::with_capacity(1 << 16, r)),
                    pos: 0,
                    line_no: 0,
                    line: Vec::with_capacity(256),
                    pending: None,
                    held: None,
                    timing: Timing::default(),
                    sampler: Sampler::new(a.sample, args.filename.len() as u64 ^ 0x7e11),
                    done: false,
                }),
            },
        })
    }
}

impl LineReader {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The next packet of the pending record, `None` when it is used up
    /// (or the packet pool is empty: then it stays pending).
    fn next_of(&self, pend: &mut Pending) -> Option<Packet> {
        let rec = &*pend.rec;
        let i = pend.next;
        let mut v = rec.v.clone();
        if let (Some(end), Some(start)) = (rec.end, rec.v.ts) {
            let span = i128::from(end.0) - i128::from(start.0);
            let at = if rec.n > 1 {
                span * i128::from(i) / i128::from(rec.n - 1)
            } else {
                span
            };
            v.ts = Some(Timestamp((i128::from(start.0) + at) as i64));
        }
        if let Some(total) = rec.len_total {
            let each = total / rec.n + u64::from(i < total % rec.n);
            v.len = Some(each.min(0xffff) as u32);
        }
        let opts = BuildOpts {
            checksum: self.checksum,
            default_proto: 6,
            flowid: None,
        };
        let mut p = build(&v, &opts)?;
        if let Some(b) = rec.whole_bytes {
            let extra = b.saturating_sub(p.len() as u64);
            p.anno_mut().extra_length = u32::try_from(extra).unwrap_or(u32::MAX);
        }
        if let Some([a, b]) = rec.numbers {
            paraclick_elements::analysis::set_packet_number(&mut p, 0, a);
            paraclick_elements::analysis::set_packet_number(&mut p, 1, b);
        }
        if let Some(f) = rec.fix {
            f(&mut p, &v);
        }
        pend.next += 1;
        Some(p)
    }
}

impl TraceReader for LineReader {
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
        let now = cx.now();
        let budget = max.saturating_mul(8).max(256);
        let (mut emitted, mut examined) = (0, 0);
        while emitted < max && examined < budget {
            examined += 1;
            let p = if let Some(p) = st.held.take() {
                p
            } else if let Some(pend) = st.pending.as_mut() {
                if pend.next >= pend.rec.n {
                    st.pending = None;
                    continue;
                }
                let Some(p) = self.next_of(pend) else {
                    break; // packet pool exhausted: try again later
                };
                if !st.sampler.keep() {
                    r.progress = true;
                    continue;
                }
                p
            } else {
                let Some(reader) = st.reader.as_mut() else {
                    st.done = true;
                    r.ended = true;
                    break;
                };
                let ok = match read_line(reader, &mut st.line, &mut st.pos) {
                    Ok(None) => {
                        st.done = true;
                        r.ended = true;
                        break;
                    }
                    Ok(Some(ok)) => {
                        st.line_no += 1;
                        ok
                    }
                    Err(e) => {
                        core.report(cx, self.class, &st.line_no.to_string(), &e);
                        st.reader = None;
                        st.done = true;
                        r.ended = true;
                        break;
                    }
                };
                r.progress = true;
                let parsed = if !ok {
                    Parsed::Bad(format!("line longer than {MAX_LINE} bytes"))
                } else {
                    match std::str::from_utf8(&st.line) {
                        Ok(text) => (self.parse)(&self.opts, text),
                        Err(_) => Parsed::Bad("not text".into()),
                    }
                };
                match parsed {
                    Parsed::Nothing => {}
                    Parsed::Bad(msg) => core.report(cx, self.class, &st.line_no.to_string(), &msg),
                    Parsed::Record(rec) => st.pending = Some(Pending { rec, next: 0 }),
                }
                continue;
            };
            if core.timing {
                if let Some(due) = st.timing.wait_until(p.timestamp(), now) {
                    st.held = Some(p);
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
        usize::from(self.lock().held.is_some())
    }
}
