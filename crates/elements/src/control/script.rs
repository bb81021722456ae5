//! # Script
//!
//! Script(INSTRUCTIONS..., [keywords TYPE])
//!
//! Scripts a router configuration: sets variables, calls handlers, waits,
//! and stops the router.
//!
//! Ports: normally none; any number of inputs and outputs with TYPE PACKET
//! (the default TYPE of a Script with ports).
//! Processing: agnostic inputs, agnostic (push in push context) outputs.
//!
//! Each configuration argument is an instruction; Script runs them in
//! order. Text in instructions is substituted first (see below). The `q`
//! forms (`setq`, `writeq`, ...) then remove one layer of quotes; the
//! plain forms keep quotes (`set x "$(c.count)"` stores `"0"`, `setq`
//! stores `0`).
//!
//! Handler instructions:
//! - `set VAR TEXT`, `setq VAR TEXT`: sets variable `$VAR`.
//! - `init VAR TEXT`, `initq`: sets `$VAR` once, before the script first
//!   runs (or is first touched through a handler); later a no-op.
//! - `export VAR [TEXT]`, `exportq`: like `init`, and makes `$VAR`
//!   readable as the handler `VAR`.
//! - `print [>FILE | >>FILE] [TEXT | HANDLER]`: prints to standard output
//!   (or writes / appends to FILE) followed by a newline. An argument that
//!   starts with a letter, `@` or `_` is a read handler whose value is
//!   printed; otherwise one layer of quotes is removed and the text
//!   printed. `printn` prints no newline; `printq`/`printnq` also unquote
//!   a handler's value.
//! - `read HANDLER [ARGS]`, `readq`: prints `HANDLER:` and the value to
//!   standard error.
//! - `write HANDLER [ARGS]`, `writeq`: calls a write handler; `$?` is 0
//!   after success, negative (-22) after an error. A failed write prints
//!   `While calling 'HANDLER ARGS':` and the handler's message, indented,
//!   to standard error; the script's own errors are printed as
//!   `NAME :: CLASS: MESSAGE`.
//!
//! Blocking instructions:
//! - `pause [COUNT]` (also `wait_stop`, `wait_step`): blocks until the
//!   `step` handler has been called COUNT times (default 1). In a driver
//!   script each driver stop request is a step. `wait` with no argument is
//!   `pause`.
//! - `wait TIME` (also `wait_time`): waits TIME (Click time units), or until
//!   a step, whichever comes first. This is a timer, not a sleep.
//!
//! Control instructions:
//! - `label LABEL`; `goto LABEL [CONDITION]` jumps when CONDITION (a
//!   Boolean after substitution) is true or absent. `goto exit`, `goto
//!   end`, `goto stop`, `goto error` and `goto loop` (or `begin`) act like
//!   those instructions. A script that executes 1000 jumps without
//!   blocking is stopped with the error `too many jumps, giving up`. A `wait` of no time (`wait 0s`)
//!   lets the rest of the router run before the script goes on, but does
//!   not count as blocking.
//! - `loop`: back to the first instruction.
//! - `end`, `exit`: end the script (an `end` is implied after the last
//!   instruction). In packet scripts `end` emits the packet on output 0 and
//!   `exit` drops it.
//! - `stop`: ends the script and asks the router to stop (a driver script,
//!   or DriverManager, may intercept the request; a driver's own `stop`
//!   stops the router).
//! - `return [VALUE]`, `returnq`: ends the script; VALUE is the result of
//!   the `run` handler (or, in packet scripts, the output port).
//! - `error [MSG]`, `errorq`: ends the script with an error (the `run`
//!   handler fails with MSG; otherwise MSG is printed to standard error).
//!
//! Substitutions: `$VAR` and `${VAR}` are variables (unknown ones stay as
//! written); `$(HANDLER [ARGS...])` is a read handler's value, nested
//! substitutions allowed. A handler name without an element is this
//! Script's own (`$(add $x 1)`), then a global handler. Nothing inside
//! single quotes is substituted. Special variables: `$args` (the `run`
//! handler's argument), `$1`, `$2`, ... (its words), `$#` (their count),
//! `$?` (last write status), `$0` (the handler a PROXY script runs for),
//! `$write` (whether it was a write), `$input` (a PACKET script's input
//! port), `$$` (the process id).
//!
//! Keywords:
//! - `TYPE`: `ACTIVE` (default without ports): runs when the router starts. `PASSIVE`:
//!   runs only through the `run` handler. `DRIVER`: an active script that
//!   manages the router's stop requests (see DriverManager); at most one
//!   per router. `PROXY`: runs for any handler of the element other than
//!   the predefined ones, with `$0` the handler's name. `PACKET` (default
//!   with ports): runs for
//!   each packet, `$input` its input port; `end` or `return N` emit it on
//!   output 0 or N, `exit` drops it. `SIGNAL SIGNO...`: runs soon after
//!   the process receives one of the signals (numbers, or names such as
//!   `INT`, `HUP`, `USR1`; KILL, STOP and the fault signals SEGV, BUS,
//!   FPE, ILL, TRAP and SYS are refused). Signals that arrive before the
//!   script runs are one delivery. The script is the signals' handler from
//!   initialization on; after a run that ends without blocking it is
//!   again, but not while a run is blocked (`wait`), and not after `exit`.
//!   When no script handles a signal any more, it gets back the action it
//!   had before (by default, INT and TERM stop the router, USR1 and most
//!   others end the process). Several scripts may handle one signal: each
//!   runs, in configuration order. A signal carries no data: nothing of
//!   it but its arrival reaches the script.
//!
//! Handlers:
//! - `run` (read/write, read with parameters): runs the script from the
//!   start (the written value, or the read's parameter, is `$args`);
//!   reading returns the value of `return` (`$(s.run 1 2)`). A run fails if
//!   the script ends in `error`.
//! - `step` (write): advances past the current blocking instruction; a
//!   number steps past that many.
//! - `goto` (write): continues the script at the named label.
//! - each `export`ed variable (read).
//! - `set` (write): `VAR VALUE` sets variable `$VAR` to VALUE.
//! - `get` (read with parameters): `$(get VAR)` is `$VAR`'s value.
//! - `shift` (read with parameters, or write): removes the first word of
//!   variable VAR and returns it (`$(shift VAR)`).
//! - expression handlers, used as `$(NAME ARGS...)`: `add`, `sub`, `mul`,
//!   `div` (real), `idiv` (integer), `mod`, `rem`, `neg`, `abs`; `eq`,
//!   `ne`, `lt`, `gt`, `le`, `ge` (numeric, else bytewise); `not`, `and`,
//!   `or`, `nand`, `nor`, `if COND A B`, `in X A B...`; `sprintf FMT
//!   ARGS...` (C's conversions); `random [N | N1 N2]`; `length`,
//!   `unquote`; `readable`, `writable` (handler names); `now`.
//! - `cat FILE`, `catq FILE` (the file's text, `catq` quoted): private,
//!   as in Click: scripts call them (`$(cat FILE)`, another Script's
//!   `$(s.cat FILE)`), but they are not listed in `handlers` and a
//!   control socket gets 511 for them (they would read any file the
//!   router can, past the files a `hotconfig` may read).
//! - `kill SIGNAL PID...` (read with parameters, from the script's own
//!   text only, as `$(kill USR1 $$)`; not a handler a control socket
//!   reaches): sends SIGNAL to the processes; process ids must be
//!   positive (no process groups). A signal this process catches and
//!   sends itself is counted before the call returns, so its SIGNAL
//!   scripts run before the sender's next `wait` ends.
//!
//! Differences from Click: ACTIVE and DRIVER scripts start when the router
//! starts running (a timer at time 0), not during initialization. A
//! SIGNAL script's element has a task that looks for its signals on each
//! scheduler pass. A PACKET script cannot block: a blocking
//! instruction ends it as `end`. In pull context a packet for another
//! output than the pulled one is pushed there (outputs after the first
//! are push, `ah`). A `run` read (or PROXY read) that
//! ends in `error` prints the message to standard error and the read
//! fails as if there were no such handler (read handlers cannot return
//! errors here).
//!
//! Example:
//!
//!     src :: InfiniteSource -> c :: Counter -> Discard;
//!     Script(wait 1s, print "sent $(c.count)", write src.active false, stop);
//!
//!     s :: Script(TYPE PASSIVE, return $(add $(c1.count) $(c2.count)));

use super::script_lang::{
    builtin, expand, parse_bool, split_first, Env, Insn, Op, Program, Target, BUILTINS,
};
use paraclick_lang::args::{split_words, unquote};
use paraclick_runtime::args::parse_duration;
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, DriverElement, DynHandler, Element, HandlerCx, InitCx,
};
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

/// Jumps a script may make without blocking before it is stopped.
const MAX_JUMPS: u32 = 1000;
/// `$?` after a failed write (Click's -EINVAL).
const WRITE_ERROR: i32 = -22;

/// The handlers every Script has (exported variables are added per
/// element).
static BASE_HANDLERS: &[(&str, bool, bool)] = &[
    ("run", true, true),
    ("step", false, true),
    ("goto", false, true),
    ("add", true, false),
    ("sub", true, false),
    ("mul", true, false),
    ("div", true, false),
    ("idiv", true, false),
    ("mod", true, false),
    ("rem", true, false),
    ("neg", true, false),
    ("abs", true, false),
    ("eq", true, false),
    ("ne", true, false),
    ("lt", true, false),
    ("gt", true, false),
    ("le", true, false),
    ("ge", true, false),
    ("not", true, false),
    ("and", true, false),
    ("or", true, false),
    ("nand", true, false),
    ("nor", true, false),
    ("if", true, false),
    ("in", true, false),
    ("sprintf", true, false),
    ("random", true, false),
    ("length", true, false),
    ("unquote", true, false),
    ("now", true, false),
    ("readable", true, false),
    ("writable", true, false),
    ("get", true, false),
    ("shift", true, true),
    ("set", false, true),
];

/// Expression handlers only scripts may call, not listed in `handlers`
/// nor reachable from a control socket (Click's private handlers; `kill`
/// is never a handler).
const PRIVATE_HANDLERS: &[&str] = &["cat", "catq"];

/// Handlers the router gives every element (a PROXY script leaves them
/// alone).
const ROUTER_HANDLERS: &[&str] = paraclick_runtime::handler::BUILTIN;

/// What starts a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptType {
    Active,
    Passive,
    Driver,
    Proxy,
    Packet,
    Signal,
}

impl ScriptType {
    /// The type and, for SIGNAL, its signals.
    fn parse(s: &str) -> Result<(ScriptType, Vec<i32>), String> {
        let (t, rest) = split_first(s);
        let ty = match t {
            "ACTIVE" => ScriptType::Active,
            "PASSIVE" => ScriptType::Passive,
            "DRIVER" => ScriptType::Driver,
            "PROXY" => ScriptType::Proxy,
            "PACKET" | "PUSH" => ScriptType::Packet,
            "SIGNAL" => {
                let mut sigs = Vec::new();
                for w in split_words(rest) {
                    let sig = paraclick_runtime::signals::parse_catchable(&w)
                        .map_err(|e| format!("TYPE SIGNAL: {e}"))?;
                    if !sigs.contains(&sig) {
                        sigs.push(sig);
                    }
                }
                if sigs.is_empty() {
                    return Err("TYPE SIGNAL: missing signal".into());
                }
                return Ok((ScriptType::Signal, sigs));
            }
            _ => return Err(format!("TYPE: unknown script type '{t}'")),
        };
        if rest.is_empty() {
            Ok((ty, Vec::new()))
        } else {
            Err(format!("TYPE: unexpected '{rest}'"))
        }
    }

    /// Starts by itself when the router starts.
    fn autostart(self) -> bool {
        matches!(self, ScriptType::Active | ScriptType::Driver)
    }
}

/// Where the interpreter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Never run.
    Idle,
    Running,
    /// Blocked in `pause`: steps still needed.
    Paused(u32),
    /// Blocked in `wait TIME`: the wait's sequence number.
    Waiting(u64),
    /// Ended.
    Done,
}

/// How a run of the script came to a halt.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Blocked,
    End,
    Exit,
    Stop,
    Return(String),
    Error(String),
}

/// The interpreter's state (one run at a time).
struct Exec {
    /// The next instruction.
    pos: usize,
    st: St,
    /// `init` and `export` instructions have run.
    inited: bool,
    /// `$?`.
    status: i32,
    /// `$args`, `$0`, `$write`, `$input` of the current run.
    args: String,
    hname: String,
    hwrite: bool,
    input: Option<usize>,
    wait_seq: u64,
    /// Jumps counted before a `wait` of no time: such a wait yields (the
    /// script resumes at the next timer pass, so the router's tasks and
    /// handlers run) but does not block, so the jump limit goes on
    /// counting across it. `label a, wait 0s, goto a` took a whole core
    /// forever.
    zero_wait_jumps: u32,
}

pub struct Script {
    ty: ScriptType,
    prog: Program,
    exports: Vec<String>,
    noutputs: usize,
    vars: Mutex<HashMap<String, String>>,
    exec: Mutex<Exec>,
    /// Events that arrived while the interpreter was busy (a step written
    /// by the script itself, a stop request raised by one of its handler
    /// calls, a timer on another thread); whoever holds the interpreter
    /// handles them before letting go.
    pending_steps: AtomicU64,
    pending_stops: AtomicU64,
    /// 1 + the wait sequence of a timer that fired while busy; 0 if none.
    pending_timer: AtomicU64,
    /// The wait sequence the timer is armed for (0: the start).
    armed: AtomicU64,
    /// TYPE SIGNAL: the signals, and the generation of each last seen.
    signals: Vec<i32>,
    sig_seen: Vec<AtomicU64>,
    /// TYPE SIGNAL: whether the script is installed as the signals'
    /// handler (from initialization on; not while a run is blocked, nor
    /// after `exit`).
    sig_installed: Mutex<bool>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["dropped by the script"];

pub fn spec() -> ClassSpec {
    ClassSpec::driver("Script", "-/-", "ah/ah", make)
        .drop_reasons(DROP_REASONS)
        .shared("a script: one program state for the router")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Script, String> {
    make_with(cx, ScriptType::Active)
}

/// Configures a Script whose TYPE defaults to `default` (DriverManager
/// is a Script of default TYPE DRIVER).
pub fn make_with(cx: &mut ConfigCx<'_>, default: ScriptType) -> Result<Script, String> {
    let mut a = cx.args();
    let has_ports = cx.ninputs > 0 || cx.noutputs > 0;
    let (ty, signals) = match a.read::<String>("TYPE") {
        Some(t) => ScriptType::parse(&t)?,
        // PACKET is the default for a Script with ports.
        None if has_ports && default == ScriptType::Active => (ScriptType::Packet, Vec::new()),
        None => (default, Vec::new()),
    };
    let insns = a.rest_all();
    a.complete()?;
    if ty != ScriptType::Packet && has_ports {
        return Err("only TYPE PACKET scripts have ports".into());
    }
    let prog = Program::parse(&insns, ty == ScriptType::Driver)?;
    let exports = prog.exports();
    Ok(Script {
        ty,
        prog,
        exports,
        noutputs: cx.noutputs,
        vars: Mutex::new(HashMap::new()),
        exec: Mutex::new(Exec {
            pos: 0,
            st: St::Idle,
            inited: false,
            status: 0,
            args: String::new(),
            hname: String::new(),
            hwrite: false,
            input: None,
            wait_seq: 0,
            zero_wait_jumps: 0,
        }),
        pending_steps: AtomicU64::new(0),
        pending_stops: AtomicU64::new(0),
        pending_timer: AtomicU64::new(0),
        armed: AtomicU64::new(0),
        sig_seen: signals.iter().map(|_| AtomicU64::new(0)).collect(),
        signals,
        sig_installed: Mutex::new(false),
    })
}

/// What substitution sees: the script's variables and handlers.
struct Subst<'a, 'r> {
    s: &'a Script,
    ex: &'a Exec,
    hx: &'a HandlerCx<'r>,
}

impl Env for Subst<'_, '_> {
    fn var(&mut self, name: &str) -> Option<String> {
        self.s.var(self.ex, name)
    }

    fn call(&mut self, text: &str) -> Result<String, String> {
        self.s.read_call(self.hx, text)
    }
}

thread_local! {
    /// Scripts whose interpreter this thread holds (to refuse re-entry
    /// instead of deadlocking).
    static HELD: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Marks a Script's interpreter as held by this thread while it lives.
struct Held(usize);

impl Held {
    fn new(s: &Script) -> Held {
        let a = s as *const Script as usize;
        HELD.with(|h| h.borrow_mut().push(a));
        Held(a)
    }

    fn here(s: &Script) -> bool {
        let a = s as *const Script as usize;
        HELD.with(|h| h.borrow().contains(&a))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|h| {
            let mut v = h.borrow_mut();
            if let Some(i) = v.iter().rposition(|x| *x == self.0) {
                v.remove(i);
            }
        });
    }
}

/// Prints a script error as Click does, under the element's declaration:
/// `s :: Script: MESSAGE`.
fn report(hx: &HandlerCx<'_>, msg: &str) {
    eprintln!("{}: {}", declaration(hx), msg);
}

/// `NAME :: CLASS` of the element a handler call is for.
fn declaration(hx: &HandlerCx<'_>) -> String {
    let name = hx.element_name();
    match hx.read(&format!("{name}.class")) {
        Ok(class) => format!("{name} :: {class}"),
        Err(_) => name.to_string(),
    }
}

/// A failed `write` instruction's error as Click prints it: the call as
/// context, then the handler's message indented (`While calling 'r.add
/// 10.0.0.0/8 1': ...`).
fn write_error_text(spec: &str, value: &str, err: &str) -> String {
    let h = spec.rsplit_once('.').map_or(spec, |(_, h)| h);
    // The router prefixes the handler's own message with `ELEMENT.HANDLER: `.
    let msg = err
        .split_once(": ")
        .filter(|(pre, _)| pre.ends_with(&format!(".{h}")) && !pre.contains(' '))
        .map_or(err, |(_, m)| m);
    let call = if value.is_empty() {
        spec.to_string()
    } else {
        format!("{spec} {value}")
    };
    format!("While calling '{call}':\n  {msg}")
}

impl Script {
    pub fn script_type(&self) -> ScriptType {
        self.ty
    }

    /// Installs this SIGNAL script as its signals' handler, or removes it.
    /// Deliveries before an installation are not this script's.
    fn install_signals(&self, on: bool) {
        let mut inst = self.sig_installed.lock().unwrap_or_else(|e| e.into_inner());
        if *inst == on {
            return;
        }
        for (i, &sig) in self.signals.iter().enumerate() {
            if on {
                if let Err(e) = paraclick_runtime::signals::catch(sig) {
                    eprintln!("Script: {e}");
                    continue;
                }
                self.sig_seen[i].store(paraclick_runtime::signals::generation(sig), SeqCst);
            } else {
                paraclick_runtime::signals::release(sig);
            }
        }
        *inst = on;
    }

    /// Whether one of this SIGNAL script's signals arrived since it last
    /// looked (marking them seen: deliveries before a run coalesce).
    fn signal_arrived(&self) -> bool {
        if !*self.sig_installed.lock().unwrap_or_else(|e| e.into_inner()) {
            return false;
        }
        let mut any = false;
        for (i, &sig) in self.signals.iter().enumerate() {
            let g = paraclick_runtime::signals::generation(sig);
            if self.sig_seen[i].swap(g, SeqCst) != g {
                any = true;
            }
        }
        any
    }

    /// `$(kill SIGNAL PID...)`: sends a signal to processes.
    fn kill_call(args: &str) -> Result<String, String> {
        let words = split_words(args);
        let Some((sig, pids)) = words.split_first() else {
            return Err("kill: expected 'SIGNAL PID...'".into());
        };
        let sig =
            paraclick_runtime::signals::parse(&unquote(sig)).map_err(|e| format!("kill: {e}"))?;
        if pids.is_empty() {
            return Err("kill: expected 'SIGNAL PID...'".into());
        }
        for p in pids {
            let pid = unquote(p)
                .parse::<i64>()
                .map_err(|_| format!("kill: bad process id '{p}'"))?;
            paraclick_runtime::signals::kill(sig, pid).map_err(|e| format!("kill: {e}"))?;
        }
        Ok(String::new())
    }

    /// The value of a script variable.
    pub fn variable(&self, name: &str) -> Option<String> {
        self.vars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    fn set_var(&self, name: &str, v: String) {
        self.vars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), v);
    }

    /// The `shift` handler: removes the first word of variable `name` and
    /// returns it.
    fn shift_var(&self, name: &str) -> String {
        let mut vars = self.vars.lock().unwrap_or_else(|e| e.into_inner());
        let Some(v) = vars.get_mut(name) else {
            return String::new();
        };
        let t = v.trim_start();
        let (first, rest) = split_first(t);
        let first = first.to_string();
        *v = rest.trim_start().to_string();
        first
    }

    fn try_exec(&self) -> Option<(MutexGuard<'_, Exec>, Held)> {
        match self.exec.try_lock() {
            Ok(g) => Some((g, Held::new(self))),
            Err(TryLockError::Poisoned(e)) => Some((e.into_inner(), Held::new(self))),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Runs `f` on the interpreter unless it is busy (`None`), then handles
    /// the events that arrived meanwhile.
    fn with_exec<R>(&self, hx: &HandlerCx<'_>, f: impl FnOnce(&mut Exec) -> R) -> Option<R> {
        let (mut g, held) = self.try_exec()?;
        let r = f(&mut g);
        self.drain(&mut g, hx);
        drop(g);
        drop(held);
        self.kick(hx);
        Some(r)
    }

    fn has_pending(&self) -> bool {
        self.pending_timer.load(SeqCst) > 0
            || self.pending_steps.load(SeqCst) > 0
            || self.pending_stops.load(SeqCst) > 0
    }

    /// Handles pending events if the interpreter is free; if it is not,
    /// its holder will.
    fn kick(&self, hx: &HandlerCx<'_>) {
        while self.has_pending() {
            let Some((mut g, _held)) = self.try_exec() else {
                return;
            };
            self.drain(&mut g, hx);
        }
    }

    fn drain(&self, ex: &mut Exec, hx: &HandlerCx<'_>) {
        loop {
            let mut any = false;
            let t = self.pending_timer.swap(0, SeqCst);
            if t > 0 {
                any = true;
                self.on_timer(ex, hx, t - 1);
            }
            let n = self.pending_steps.swap(0, SeqCst);
            if n > 0 {
                any = true;
                self.steps(ex, hx, n);
            }
            let s = self.pending_stops.swap(0, SeqCst);
            for _ in 0..s {
                any = true;
                self.stop_event(ex, hx);
            }
            if !any {
                return;
            }
        }
    }

    /// `$name`: the special variables, then the script's own.
    fn var(&self, ex: &Exec, name: &str) -> Option<String> {
        match name {
            "args" => return Some(ex.args.clone()),
            "#" => return Some(split_words(&ex.args).len().to_string()),
            "?" => return Some(ex.status.to_string()),
            "$" => return Some(std::process::id().to_string()),
            "0" => return Some(ex.hname.clone()),
            "write" if self.ty == ScriptType::Proxy => return Some(ex.hwrite.to_string()),
            "input" if self.ty == ScriptType::Packet => {
                return ex.input.map(|i| i.to_string());
            }
            _ => {}
        }
        if name.bytes().all(|c| c.is_ascii_digit()) {
            let n: usize = name.parse().ok()?;
            let words = split_words(&ex.args);
            return Some(words.get(n - 1).cloned().unwrap_or_default());
        }
        self.variable(name)
    }

    /// Substitutes `text`, reporting failed handler calls.
    fn subst(&self, ex: &Exec, hx: &HandlerCx<'_>, text: &str) -> String {
        if !text.contains('$') {
            return text.to_string();
        }
        let mut errs = Vec::new();
        let r = expand(text, &mut Subst { s: self, ex, hx }, &mut errs);
        for e in errs {
            report(hx, &e);
        }
        r
    }

    /// An instruction's text, substituted (and unquoted for `q` forms).
    fn text(&self, ex: &Exec, hx: &HandlerCx<'_>, insn: &Insn) -> String {
        let t = self.subst(ex, hx, &insn.text);
        if insn.q {
            unquote(&t)
        } else {
            t
        }
    }

    /// This element's own read handlers with arguments: the expression
    /// handlers and exported variables.
    fn local_read(
        &self,
        hx: &HandlerCx<'_>,
        h: &str,
        args: &str,
    ) -> Option<Result<String, String>> {
        if h == "now" {
            // The router's clock: simulated under --simtime.
            return Some(Ok(hx.timestamp().to_string()));
        }
        if let Some(r) = builtin(h, args) {
            return Some(r);
        }
        match h {
            // Only from the script's own text: not a handler others (a
            // control socket) can call.
            "kill" => Some(Self::kill_call(args)),
            "get" => Some(Ok(self.variable(&unquote(args.trim())).unwrap_or_default())),
            "shift" => Some(Ok(self.shift_var(&unquote(args.trim())))),
            "readable" | "writable" => {
                let write = h == "writable";
                let all = split_words(args)
                    .iter()
                    .all(|w| self.handler_exists(hx, &unquote(w), write));
                Some(Ok(all.to_string()))
            }
            _ if self.exports.iter().any(|e| e == h) => {
                Some(Ok(self.variable(h).unwrap_or_default()))
            }
            _ => None,
        }
    }

    fn handler_exists(&self, hx: &HandlerCx<'_>, spec: &str, write: bool) -> bool {
        match spec.rsplit_once('.') {
            None => {
                let own = self
                    .own_handler(spec)
                    .is_some_and(|(r, w)| if write { w } else { r });
                own || if write {
                    spec == "stop"
                } else {
                    matches!(spec, "version" | "list" | "config" | "nthreads")
                }
            }
            Some((e, h)) => match hx.read(&format!("{e}.handlers")) {
                Ok(list) => list.lines().any(|l| match l.split_once('\t') {
                    Some((n, mode)) => n == h && mode.contains(if write { 'w' } else { 'r' }),
                    None => false,
                }),
                Err(_) => false,
            },
        }
    }

    /// `$(HANDLER ARGS)`: this Script's handlers first (a name without an
    /// element, or this element's name), the expression handlers of other
    /// Scripts, then any read handler.
    fn read_call(&self, hx: &HandlerCx<'_>, text: &str) -> Result<String, String> {
        let (spec, args) = split_first(text);
        self.read_args(hx, spec, args)
    }

    /// Reads handler `spec` with parameter `args`, taken as it is (a
    /// `readq` parameter may start or end with white space).
    fn read_args(&self, hx: &HandlerCx<'_>, spec: &str, args: &str) -> Result<String, String> {
        if spec.is_empty() {
            return Err("missing handler name".into());
        }
        let (elem, h) = match spec.rsplit_once('.') {
            Some((e, h)) => (Some(e), h),
            None => (None, spec),
        };
        let mine = match elem {
            None => true,
            Some(e) => hx.find(e) == Some(hx.element_index()),
        };
        if mine {
            if let Some(r) = self.local_read(hx, h, args) {
                return r;
            }
        } else if let Some(e) = elem {
            // Another element that is a Script, of whatever class
            // (DriverManager's are): its expression handlers take
            // arguments, which a handler read does not.
            let script = hx
                .find(e)
                .is_some_and(|i| hx.element::<Script>(i).is_some());
            if script && (BUILTINS.contains(&h) || h == "readable" || h == "writable") {
                if let Some(r) = self.local_read(hx, h, args) {
                    return r;
                }
            }
        }
        if !args.is_empty() {
            return hx.read(&format!("{spec} {args}"));
        }
        hx.read(spec)
    }

    fn write_call(&self, hx: &HandlerCx<'_>, spec: &str, value: &str) -> Result<(), String> {
        let own = !spec.contains('.') && self.own_handler(spec).is_some_and(|(_, w)| w);
        if own {
            hx.write(&format!("{}.{}", hx.element_name(), spec), value)
        } else {
            hx.write(spec, value)
        }
    }

    fn print(&self, ex: &Exec, hx: &HandlerCx<'_>, insn: &Insn, newline: bool) {
        let mut rest = insn.text.trim();
        let mut file = None;
        if let Some(r) = rest.strip_prefix('>') {
            let (append, r) = match r.strip_prefix('>') {
                Some(r) => (true, r),
                None => (false, r),
            };
            let (f, r) = split_first(r);
            if f.is_empty() {
                report(hx, "print: missing file name");
                return;
            }
            file = Some((unquote(&self.subst(ex, hx, f)), append));
            rest = r;
        }
        let handler = rest
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '@' || c == '_');
        let mut out = if handler {
            match self.read_call(hx, &self.subst(ex, hx, rest)) {
                Ok(v) if insn.q => unquote(&v),
                Ok(v) => v,
                Err(e) => {
                    report(hx, &e);
                    return;
                }
            }
        } else {
            unquote(&self.subst(ex, hx, rest))
        };
        if newline {
            out.push('\n');
        }
        match file {
            None => {
                let mut so = std::io::stdout().lock();
                let _ = so.write_all(out.as_bytes());
                let _ = so.flush();
            }
            Some((path, append)) => {
                let r = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(append)
                    .truncate(!append)
                    .open(&path)
                    .and_then(|mut f| f.write_all(out.as_bytes()));
                if let Err(e) = r {
                    report(hx, &format!("print: {path}: {e}"));
                }
            }
        }
    }

    fn read_insn(&self, ex: &Exec, hx: &HandlerCx<'_>, insn: &Insn) {
        let t = self.subst(ex, hx, &insn.text);
        let (spec, args) = split_first(&t);
        let args = if insn.q {
            unquote(args)
        } else {
            args.to_string()
        };
        match self.read_args(hx, spec, &args) {
            Ok(v) => {
                let nl = if v.ends_with('\n') { "" } else { "\n" };
                // This Script's own handlers are named with the element.
                let name = if !spec.contains('.') && self.own_handler(spec).is_some() {
                    format!("{}.{spec}", hx.element_name())
                } else {
                    spec.to_string()
                };
                eprint!("{name}:\n{v}{nl}");
            }
            Err(e) => report(hx, &e),
        }
    }

    fn write_insn(&self, ex: &mut Exec, hx: &HandlerCx<'_>, insn: &Insn) {
        let t = self.subst(ex, hx, &insn.text);
        let (spec, value) = split_first(&t);
        let value = if insn.q {
            unquote(value)
        } else {
            value.to_string()
        };
        match self.write_call(hx, spec, &value) {
            Ok(()) => ex.status = 0,
            Err(e) => {
                ex.status = WRITE_ERROR;
                eprintln!("{}", write_error_text(spec, &value, &e));
            }
        }
    }

    /// Runs instructions from `ex.pos` until the script blocks or ends.
    fn resume(&self, ex: &mut Exec, hx: &HandlerCx<'_>) -> Outcome {
        ex.st = St::Running;
        let mut jumps = std::mem::take(&mut ex.zero_wait_jumps);
        loop {
            let Some(insn) = self.prog.insns.get(ex.pos) else {
                return Outcome::End;
            };
            ex.pos += 1;
            match insn.op {
                Op::Set => {
                    let v = self.text(ex, hx, insn);
                    self.set_var(&insn.name, v);
                }
                Op::Init | Op::Export | Op::Label => {}
                Op::Print { newline } => self.print(ex, hx, insn, newline),
                Op::Read => self.read_insn(ex, hx, insn),
                Op::Write => self.write_insn(ex, hx, insn),
                Op::Pause => {
                    let t = unquote(self.subst(ex, hx, &insn.text).trim());
                    let n = if t.is_empty() {
                        1
                    } else {
                        match t.parse::<u32>() {
                            Ok(n) => n,
                            Err(_) => return Outcome::Error(format!("pause: bad count '{t}'")),
                        }
                    };
                    if n > 0 {
                        ex.st = St::Paused(n);
                        return Outcome::Blocked;
                    }
                }
                Op::Wait => {
                    let t = unquote(self.subst(ex, hx, &insn.text).trim());
                    if t.is_empty() {
                        ex.st = St::Paused(1);
                        return Outcome::Blocked;
                    }
                    let Some(d) = parse_duration(&t) else {
                        return Outcome::Error(format!("wait: bad time '{t}'"));
                    };
                    if d.is_zero() {
                        ex.zero_wait_jumps = jumps;
                    }
                    ex.wait_seq += 1;
                    ex.st = St::Waiting(ex.wait_seq);
                    self.armed.store(ex.wait_seq, SeqCst);
                    hx.schedule_after(0, d);
                    return Outcome::Blocked;
                }
                Op::Goto | Op::Loop => {
                    let target = if insn.op == Op::Loop {
                        Target::Loop
                    } else {
                        if !insn.text.is_empty() {
                            let c = unquote(self.subst(ex, hx, &insn.text).trim());
                            match parse_bool(&c) {
                                Some(true) => {}
                                Some(false) => continue,
                                None => {
                                    return Outcome::Error(format!("goto: bad condition '{c}'"))
                                }
                            }
                        }
                        let label = if insn.name.contains('$') {
                            unquote(self.subst(ex, hx, &insn.name).trim())
                        } else {
                            insn.name.clone()
                        };
                        match self.prog.target(&label) {
                            Some(t) => t,
                            None => return Outcome::Error(format!("goto: no label '{label}'")),
                        }
                    };
                    match target {
                        Target::Pos(p) => ex.pos = p,
                        Target::Loop => ex.pos = 0,
                        Target::Exit => return Outcome::Exit,
                        Target::End => return Outcome::End,
                        Target::Stop => return Outcome::Stop,
                        Target::Error => return Outcome::Error(String::new()),
                    }
                    jumps += 1;
                    if jumps >= MAX_JUMPS {
                        return Outcome::Error("too many jumps, giving up".into());
                    }
                }
                Op::End => return Outcome::End,
                Op::Exit => return Outcome::Exit,
                Op::Stop => return Outcome::Stop,
                Op::Return => return Outcome::Return(self.text(ex, hx, insn)),
                Op::Error => return Outcome::Error(self.text(ex, hx, insn)),
            }
        }
    }

    /// Settles a run: an ended script is done; errors are reported (unless
    /// the caller returns them); `stop` asks the router to stop, and a
    /// driver script's end stops it.
    fn finish(&self, ex: &mut Exec, hx: &HandlerCx<'_>, o: Outcome, report_err: bool) -> Outcome {
        if self.ty == ScriptType::Signal {
            // Blocked: not installed until the run completes; `exit`:
            // not installed again; any other end: installed again.
            self.install_signals(!matches!(o, Outcome::Blocked | Outcome::Exit));
        }
        if o == Outcome::Blocked {
            return o;
        }
        ex.st = St::Done;
        if let Outcome::Error(m) = &o {
            if report_err && !m.is_empty() {
                report(hx, m);
            }
        }
        if self.ty == ScriptType::Driver {
            hx.stop_now();
        } else if o == Outcome::Stop {
            hx.request_stop();
        }
        o
    }

    fn ensure_init(&self, ex: &mut Exec, hx: &HandlerCx<'_>) {
        if ex.inited {
            return;
        }
        ex.inited = true;
        for insn in &self.prog.insns {
            if matches!(insn.op, Op::Init | Op::Export) {
                let v = self.text(ex, hx, insn);
                self.set_var(&insn.name, v);
            }
        }
    }

    fn begin_run(&self, ex: &mut Exec, hx: &HandlerCx<'_>, hname: &str, args: &str, write: bool) {
        if let St::Waiting(_) = ex.st {
            hx.unschedule(0);
        }
        self.ensure_init(ex, hx);
        ex.pos = 0;
        ex.args = args.to_string();
        ex.hname = hname.to_string();
        ex.hwrite = write;
        ex.input = None;
    }

    /// Starts an active or driver script.
    fn start(&self, ex: &mut Exec, hx: &HandlerCx<'_>) {
        self.begin_run(ex, hx, "", "", false);
        let o = self.resume(ex, hx);
        self.finish(ex, hx, o, true);
    }

    /// Runs the script for a handler (`run`, or any handler of a PROXY).
    fn run_for(
        &self,
        ex: &mut Exec,
        hx: &HandlerCx<'_>,
        hname: &str,
        args: &str,
        write: bool,
    ) -> Outcome {
        self.begin_run(ex, hx, hname, args, write);
        let o = self.resume(ex, hx);
        self.finish(ex, hx, o, false)
    }

    fn on_timer(&self, ex: &mut Exec, hx: &HandlerCx<'_>, seq: u64) {
        match ex.st {
            St::Idle if seq == 0 && self.ty.autostart() => self.start(ex, hx),
            St::Waiting(s) if s == seq => {
                let o = self.resume(ex, hx);
                self.finish(ex, hx, o, true);
            }
            _ => {}
        }
    }

    /// Steps past `n` blocking instructions.
    fn steps(&self, ex: &mut Exec, hx: &HandlerCx<'_>, n: u64) {
        let mut left = n;
        while left > 0 {
            match ex.st {
                St::Idle if self.ty.autostart() => self.start(ex, hx),
                St::Paused(k) if k > 1 => {
                    left -= 1;
                    ex.st = St::Paused(k - 1);
                }
                St::Paused(_) | St::Waiting(_) => {
                    left -= 1;
                    if let St::Waiting(_) = ex.st {
                        hx.unschedule(0);
                    }
                    let o = self.resume(ex, hx);
                    self.finish(ex, hx, o, true);
                }
                _ => return,
            }
        }
    }

    /// A stop request reached this driver script: it steps a blocked
    /// script; a script that has ended lets the router stop.
    fn stop_event(&self, ex: &mut Exec, hx: &HandlerCx<'_>) {
        if ex.st == St::Idle {
            self.start(ex, hx);
        }
        match ex.st {
            St::Paused(_) | St::Waiting(_) => self.steps(ex, hx, 1),
            _ => hx.stop_now(),
        }
    }

    fn goto_label(&self, ex: &mut Exec, hx: &HandlerCx<'_>, label: &str) -> Result<(), String> {
        let label = label.trim();
        let t = self
            .prog
            .target(label)
            .ok_or_else(|| format!("no label '{label}'"))?;
        if let St::Waiting(_) = ex.st {
            hx.unschedule(0);
        }
        self.ensure_init(ex, hx);
        let o = match t {
            Target::Pos(p) => {
                ex.pos = p;
                self.resume(ex, hx)
            }
            Target::Loop => {
                ex.pos = 0;
                self.resume(ex, hx)
            }
            Target::Exit => Outcome::Exit,
            Target::End => Outcome::End,
            Target::Stop => Outcome::Stop,
            Target::Error => Outcome::Error(String::new()),
        };
        self.finish(ex, hx, o, true);
        Ok(())
    }

    /// Runs a PACKET script for one packet; the output port, or `None` to
    /// drop it.
    fn packet_port(&self, ex: &mut Exec, hx: &HandlerCx<'_>, input: usize) -> Option<usize> {
        self.begin_run(ex, hx, "", "", false);
        ex.input = Some(input);
        let o = self.resume(ex, hx);
        if let St::Waiting(_) = ex.st {
            hx.unschedule(0);
        }
        ex.st = St::Done;
        match o {
            Outcome::Blocked | Outcome::End => Some(0),
            Outcome::Stop => {
                hx.request_stop();
                Some(0)
            }
            Outcome::Exit => None,
            Outcome::Return(v) => unquote(v.trim()).parse().ok(),
            Outcome::Error(m) => {
                if !m.is_empty() {
                    report(hx, &m);
                }
                None
            }
        }
    }

    /// Runs the script for each packet of `batch` (arriving on `input`),
    /// sorting them by output port.
    fn classify(
        &self,
        hx: &HandlerCx<'_>,
        input: usize,
        mut batch: Batch,
    ) -> (Vec<(usize, Batch)>, Batch) {
        let mut outs: Vec<(usize, Batch)> = Vec::new();
        let mut dropped = Batch::new();
        if Held::here(self) {
            // A handler this script called sent a packet back into it.
            report(hx, "packet arrived while the script was running; dropped");
            dropped.append(&mut batch);
            return (outs, dropped);
        }
        {
            let mut g = self.exec.lock().unwrap_or_else(|e| e.into_inner());
            let _held = Held::new(self);
            for p in batch.drain() {
                match self.packet_port(&mut g, hx, input) {
                    Some(o) if o < self.noutputs => match outs.iter_mut().find(|(k, _)| *k == o) {
                        Some((_, b)) => b.push(p),
                        None => outs.push((o, Batch::one(p))),
                    },
                    _ => dropped.push(p),
                }
            }
            self.drain(&mut g, hx);
        }
        self.kick(hx);
        (outs, dropped)
    }

    /// Whether `name` is one of this script's own handlers, and if so
    /// whether it reads and writes: the predefined ones, then the
    /// exported variables (read only).
    fn own_handler(&self, name: &str) -> Option<(bool, bool)> {
        BASE_HANDLERS
            .iter()
            .find(|h| h.0 == name)
            .map(|h| (h.1, h.2))
            .or_else(|| {
                self.exports
                    .iter()
                    .any(|e| e == name)
                    .then_some((true, false))
            })
    }

    /// Whether a PROXY script answers handler `name` (any but its
    /// predefined handlers and the router's).
    fn proxies(&self, name: &str) -> bool {
        self.ty == ScriptType::Proxy
            && !ROUTER_HANDLERS.contains(&name)
            && self.own_handler(name).is_none()
    }

    /// Reads handler `name` with `args` (empty without a parameter): `run`
    /// and a PROXY's handlers run the script with `$args` set; expression
    /// handlers take their operands.
    fn read_with(
        &self,
        name: &str,
        args: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<String, String>> {
        Some(match name {
            "run" => self.proxy(hx, "run", args, false).map_err(|e| {
                report(hx, &format!("run: {e}"));
                format!("run: {e}")
            }),
            _ if args.is_empty() && self.exports.iter().any(|e| e == name) => {
                self.with_exec(hx, |ex| self.ensure_init(ex, hx));
                Ok(self.variable(name).unwrap_or_default())
            }
            _ if self.proxies(name) => self.proxy(hx, name, args, false).map_err(|e| {
                report(hx, &format!("{name}: {e}"));
                format!("{name}: {e}")
            }),
            // Private, as in Click: scripts call them (see `read_args`),
            // the control plane cannot: `cat` would read any file the
            // router can, past the files policy a hotconfig is held to.
            _ if PRIVATE_HANDLERS.contains(&name) => return None,
            _ => self
                .local_read(hx, name, args)?
                .inspect_err(|e| report(hx, e)),
        })
    }

    fn proxy(
        &self,
        hx: &HandlerCx<'_>,
        name: &str,
        args: &str,
        write: bool,
    ) -> Result<String, String> {
        match self.with_exec(hx, |ex| self.run_for(ex, hx, name, args, write)) {
            Some(Outcome::Return(v)) => Ok(v),
            Some(Outcome::Error(e)) if e.is_empty() => Err("script error".into()),
            Some(Outcome::Error(e)) => Err(e),
            Some(_) => Ok(String::new()),
            None => Err("script is already running".into()),
        }
    }
}

impl Element for Script {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.ty.autostart() {
            ix.schedule_after(0, Duration::ZERO);
        }
        if self.ty == ScriptType::Signal {
            // The task looks for deliveries each scheduler pass (before
            // the pass's timers), so a signal the router sends itself is
            // handled before its next timer.
            ix.add_task();
            if !ix.checking() {
                self.install_signals(true);
            }
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.signal_arrived() {
            return false;
        }
        let hx = cx.handler_cx();
        if self
            .with_exec(&hx, |ex| {
                self.begin_run(ex, &hx, "", "", false);
                let o = self.resume(ex, &hx);
                self.finish(ex, &hx, o, true);
            })
            .is_none()
        {
            // The interpreter is busy (a handler call of another thread):
            // look again next pass.
            for s in &self.sig_seen {
                s.store(0, SeqCst);
            }
        }
        true
    }

    fn run_timer(&self, cx: &mut Cx<'_>, timer: usize) {
        if timer != 0 {
            return;
        }
        let hx = cx.handler_cx();
        let armed = self.armed.load(SeqCst);
        let ran = self.with_exec(&hx, |ex| {
            let seq = match ex.st {
                St::Waiting(s) => s,
                _ => 0,
            };
            self.on_timer(ex, &hx, seq)
        });
        if ran.is_none() {
            self.pending_timer.store(armed + 1, SeqCst);
            self.kick(&hx);
        }
    }

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let hx = cx.handler_cx();
        let (outs, dropped) = self.classify(&hx, port, batch);
        for (o, b) in outs {
            cx.push(o, b);
        }
        if !dropped.is_empty() {
            cx.drop_batch_for(0, dropped);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let batch = cx.pull(port, max)?;
        let hx = cx.handler_cx();
        let (outs, dropped) = self.classify(&hx, port, batch);
        let mut keep = None;
        for (o, b) in outs {
            if o == port {
                keep = Some(b);
            } else {
                cx.push(o, b);
            }
        }
        if !dropped.is_empty() {
            cx.drop_batch_for(0, dropped);
        }
        keep
    }

    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        let base = BASE_HANDLERS.iter().map(|&(name, read, write)| DynHandler {
            name: name.to_string(),
            read,
            write,
            // `run` and the expression handlers read with parameters.
            param: read,
        });
        let exports = self.exports.iter().map(|e| DynHandler {
            name: e.clone(),
            read: true,
            write: false,
            param: false,
        });
        base.chain(exports).collect()
    }

    fn read_dynamic(&self, name: &str, hx: &HandlerCx<'_>) -> Option<Result<String, String>> {
        self.read_with(name, "", hx)
    }

    fn read_dynamic_param(
        &self,
        name: &str,
        param: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<String, String>> {
        self.read_with(name, param, hx)
    }

    fn write_dynamic(
        &self,
        name: &str,
        value: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        Some(match name {
            "run" => self.proxy(hx, "run", value.trim(), true).map(|_| ()),
            "step" => {
                let v = value.trim();
                let n = if v.is_empty() {
                    1
                } else {
                    match v.parse::<u64>() {
                        Ok(n) => n,
                        Err(_) => return Some(Err(format!("expected step count, not '{v}'"))),
                    }
                };
                if self.with_exec(hx, |ex| self.steps(ex, hx, n)).is_none() {
                    self.pending_steps.fetch_add(n, SeqCst);
                    self.kick(hx);
                }
                Ok(())
            }
            "set" => {
                let (var, v) = split_first(value.trim());
                if var.is_empty() {
                    return Some(Err("set: missing variable name".into()));
                }
                self.set_var(var, v.trim().to_string());
                Ok(())
            }
            "shift" => {
                self.shift_var(&unquote(value.trim()));
                Ok(())
            }
            "goto" => self
                .with_exec(hx, |ex| self.goto_label(ex, hx, value))
                .unwrap_or_else(|| Err("script is already running".into())),
            _ if self.proxies(name) => self.proxy(hx, name, value.trim(), true).map(|_| ()),
            _ => return None,
        })
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        self.install_signals(false);
    }
}

impl DriverElement for Script {
    fn is_driver(&self) -> bool {
        self.ty == ScriptType::Driver
    }

    fn stop_requested(&self, hx: &HandlerCx<'_>) {
        if self.with_exec(hx, |ex| self.stop_event(ex, hx)).is_none() {
            self.pending_stops.fetch_add(1, SeqCst);
            self.kick(hx);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;
    use std::time::{Duration, Instant};

    // The Script and DriverManager tests' routers, from the one kit.
    use crate::test_kit::{self as kit, reg};

    pub(crate) fn build(conf: &str) -> Router {
        kit::build(&reg(), conf)
    }

    pub(crate) fn build_threads(conf: &str, threads: usize) -> Router {
        let opts = paraclick_runtime::BuildOptions {
            threads,
            pin: false,
            ..Default::default()
        };
        kit::build_with(&reg(), conf, &opts)
    }

    pub(crate) fn build_err(conf: &str) -> String {
        kit::build_err(&reg(), conf)
    }

    /// Runs the router until it stops by itself (the kit's watchdog fails
    /// the test otherwise); how long it ran.
    pub(crate) fn run(r: &Router) -> Duration {
        let t = Instant::now();
        kit::run(r);
        t.elapsed()
    }

    pub(crate) fn read(r: &Router, h: &str) -> String {
        kit::handler(r, h)
    }

    #[test]
    fn waits_on_a_timer_then_writes_and_stops() {
        let r = build(
            "src :: InfiniteSource -> c :: Counter -> Discard;
             Script(wait 0.05, write src.active false, stop);",
        );
        let took = run(&r);
        assert!(took >= Duration::from_millis(50), "stopped after {took:?}");
        assert_eq!(read(&r, "src.active"), "false");
        let n: u64 = read(&r, "c.count").parse().unwrap();
        assert!(n > 0);
        assert_eq!(read(&r, "src.count"), n.to_string());
    }

    #[test]
    fn goto_loop_counts_in_an_exported_variable() {
        let r = build(
            "s :: Script(export x 0, label top, set x $(add $x 1), goto top $(lt $x 5), stop);",
        );
        assert_eq!(read(&r, "s.x"), "0", "export initializes before running");
        run(&r);
        assert_eq!(read(&r, "s.x"), "5");
        assert!(read(&r, "s.handlers").contains("x\tr\n"));
        assert!(read(&r, "s.handlers").contains("run\trw\n"));
    }

    #[test]
    fn substitutes_handler_values_keeping_or_removing_quotes() {
        let r = build(
            "src :: InfiniteSource(LIMIT 10) -> c :: Counter -> Discard;
             s :: Script(export n, export q, export r, export w,
                         wait 0.05, set n $(c.count), set q \"$(c.count)\",
                         setq r \"$(c.count)\", set w '$(c.count)', stop);",
        );
        run(&r);
        assert_eq!(read(&r, "s.n"), "10");
        assert_eq!(read(&r, "s.q"), "\"10\"");
        assert_eq!(read(&r, "s.r"), "10");
        assert_eq!(read(&r, "s.w"), "'$(c.count)'");
    }

    #[test]
    fn reads_handlers_with_a_parameter() {
        let r = build(
            "Idle -> rt :: RadixIPLookup(10.0.0.0/8 1.2.3.4 1, 0/0 0) -> Discard; rt[1] -> Discard;
             s :: Script(TYPE PASSIVE, return $(rt.lookup 10.9.8.7)/$(rt.lookup 192.168.0.1));",
        );
        assert_eq!(read(&r, "s.run"), "1 1.2.3.4/0");
    }

    #[test]
    fn passive_scripts_run_through_the_run_handler() {
        let r = build(
            "Idle -> c1 :: Counter -> Discard; Idle -> c2 :: Counter -> Discard;
             sum :: Script(TYPE PASSIVE, return $(add $(c1.count) $(c2.count) 7));
             s :: Script(TYPE PASSIVE, export last, set last $(add $1 $2):$#:$args, return $last);
             e :: Script(TYPE PASSIVE, error oops $1);
             other :: Script(TYPE PASSIVE, return $(sum.mul 6 7) $(readable c1.count sum.run) $(writable c1.count) $(writable sum.step));",
        );
        assert_eq!(read(&r, "sum.run"), "7");
        r.write_handler("s.run", "3 4").unwrap();
        assert_eq!(read(&r, "s.last"), "7:2:3 4");
        let err = r.write_handler("e.run", "now").unwrap_err();
        assert!(err.contains("oops now"), "{err}");
        assert_err(r.read_handler("e.run"), "run: oops ");
        assert_eq!(read(&r, "other.run"), "42 true false true");
        // Expression handlers read without arguments.
        assert_eq!(read(&r, "sum.add"), "0");
    }

    /// Another Script's expression handlers are found through its type,
    /// not a list of class names: a class of this program whose elements
    /// are Scripts (as DriverManager's are) answers them too.
    #[test]
    fn expression_handlers_of_any_class_whose_elements_are_scripts() {
        let mut reg = reg();
        reg.register(paraclick_runtime::ClassSpec::driver(
            "ScriptOfMyOwn",
            "-/-",
            "ah/ah",
            |cx| super::make_with(cx, super::ScriptType::Passive),
        ));
        let r = kit::build(
            &reg,
            "m :: ScriptOfMyOwn(return 1);
             other :: Script(TYPE PASSIVE, return $(m.mul 6 7) $(m.add 1 2 3));",
        );
        assert_eq!(read(&r, "other.run"), "42 6");
    }

    #[test]
    fn step_advances_pauses_and_cuts_waits_short() {
        let r = build(
            "s :: Script(TYPE PASSIVE, export x 0, set x 1, pause, set x 2, pause 2,
                         set x 3, wait 10, set x 4);",
        );
        r.write_handler("s.run", "").unwrap();
        assert_eq!(read(&r, "s.x"), "1");
        r.write_handler("s.step", "").unwrap();
        assert_eq!(read(&r, "s.x"), "2");
        r.write_handler("s.step", "1").unwrap();
        assert_eq!(read(&r, "s.x"), "2", "pause 2 needs two steps");
        r.write_handler("s.step", "").unwrap();
        assert_eq!(read(&r, "s.x"), "3");
        r.write_handler("s.step", "").unwrap();
        assert_eq!(read(&r, "s.x"), "4", "a step ends a wait");
        r.write_handler("s.step", "5").unwrap();
        assert_err(
            r.write_handler("s.step", "x"),
            "s.step: expected step count, not 'x'",
        );
        // Several steps at once.
        r.write_handler("s.run", "").unwrap();
        r.write_handler("s.step", "4").unwrap();
        assert_eq!(read(&r, "s.x"), "4");
    }

    #[test]
    fn goto_handler_jumps_to_a_label() {
        let r = build("s :: Script(TYPE PASSIVE, export x 0, set x a, end, label l, set x b);");
        r.write_handler("s.goto", "l").unwrap();
        assert_eq!(read(&r, "s.x"), "b");
        r.write_handler("s.run", "").unwrap();
        assert_eq!(read(&r, "s.x"), "a");
        assert_err(
            r.write_handler("s.goto", "nowhere"),
            "s.goto: no label 'nowhere'",
        );
    }

    #[test]
    fn proxy_scripts_answer_any_handler() {
        let r = build(
            "s :: Script(TYPE PROXY,
                 goto nota $(ne $0 a),
                 returnq \"you called 'a'\",
                 label nota,
                 goto notb $(ne $0 b),
                 return $write:$args,
                 label notb,
                 error bad handler);",
        );
        assert_eq!(read(&r, "s.a"), "you called 'a'");
        assert_eq!(read(&r, "s.b"), "false:");
        assert_err(r.read_handler("s.c"), "c: bad handler");
        r.write_handler("s.b", "x").unwrap();
        let e = r.write_handler("s.zz", "x").unwrap_err();
        assert!(e.contains("bad handler"), "{e}");
        assert_eq!(read(&r, "s.class"), "Script");
        assert_eq!(
            read(&r, "s.add"),
            "0",
            "predefined handlers are not proxied"
        );
    }

    #[test]
    fn write_status_and_runaway_loops() {
        let r = build(
            "Idle -> c :: Counter -> Discard;
             s :: Script(TYPE PASSIVE, write nothere.x 1, set a $?, write c.reset, return $a $?);
             l :: Script(TYPE PASSIVE, label a, goto a);",
        );
        assert_eq!(read(&r, "s.run"), "-22 0");
        let e = r.write_handler("l.run", "").unwrap_err();
        assert!(e.ends_with("too many jumps, giving up"), "{e}");
    }

    /// `run` and the expression handlers are read with parameters, also
    /// from another Script and from outside.
    #[test]
    fn run_reads_with_a_parameter() {
        let r = build(
            "s :: Script(TYPE PASSIVE, returnq $1);
             t :: Script(TYPE PASSIVE, return $(s.run \"a b\" c)/$(s.add 2 3)/$(s.run \"\\<41 42>\"));",
        );
        assert_eq!(read(&r, "s.run \"x y\" z"), "x y");
        assert_eq!(read(&r, "s.add 1 2"), "3");
        assert_eq!(read(&r, "t.run"), "a b/5/AB");
        // A handler that takes no parameter still says so.
        assert_err(r.read_handler("s.step 1"), "no read handler");
    }

    /// The `set` write handler, and `get` and `shift` reads.
    #[test]
    fn set_get_and_shift_handlers() {
        let r = build(
            "s :: Script(TYPE PASSIVE, write set v foo bar baz,
                 return $(shift v)/$(shift v)/$(get v));",
        );
        assert_eq!(read(&r, "s.run"), "foo/bar/baz");
        r.write_handler("s.set", "w 1 2").unwrap();
        assert_eq!(read(&r, "s.shift w"), "1");
        assert_eq!(read(&r, "s.get w"), "2");
        r.write_handler("s.shift", "w").unwrap();
        assert_eq!(read(&r, "s.get w"), "");
    }

    /// A failed `write` is reported as Click reports it: the call, then the
    /// handler's own message indented.
    #[test]
    fn write_errors_in_clicks_form() {
        assert_eq!(
            super::write_error_text("r.add", "1/8 0", "r.add: conflict with existing route"),
            "While calling 'r.add 1/8 0':\n  conflict with existing route"
        );
        assert_eq!(
            super::write_error_text("nothere.x", "", "no write handler 'nothere.x'"),
            "While calling 'nothere.x':\n  no write handler 'nothere.x'"
        );
    }

    /// `wait 0s` yields to the router but does not reset the jump limit:
    /// such a loop stops after 1000 jumps with an error, and meanwhile a
    /// source runs to its end and another script's `wait 1s` fires (in
    /// simulated time the zero wait kept the clock from ever moving).
    #[test]
    fn zero_waits_yield_and_count_as_jumps() {
        let r = paraclick_runtime::testing::build_simtime(
            &crate::registry(),
            "InfiniteSource(LIMIT 100, STOP false) -> c :: Counter -> Discard;
             s :: Script(init n 0, export n, label a, set n $(add $n 1), wait 0s, goto a);
             Script(wait 1s, stop);",
        );
        paraclick_runtime::testing::run(&r);
        assert_eq!(read(&r, "c.count"), "100");
        assert_eq!(read(&r, "s.n"), "1000", "the jump limit stopped the loop");
    }

    #[test]
    fn prints_to_files() {
        let path =
            std::env::temp_dir().join(format!("paraclick-ctl-print-{}.txt", std::process::id()));
        let p = path.display();
        let r = build(&format!(
            "Idle -> c :: Counter -> Discard;
             s :: Script(TYPE PASSIVE, print >{p} \"hello $(add 1 2)\", printn >>{p} 'a $x',
                         print >>{p} c.count, print >>{p} $(sprintf \"%03d\" 7));"
        ));
        r.write_handler("s.run", "").unwrap();
        let got = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(got, "hello 3\na $x0\n007\n");
    }

    #[test]
    fn a_script_can_step_itself() {
        let r = build("s :: Script(export x 0, write s.step, pause, set x 1, stop);");
        run(&r);
        assert_eq!(read(&r, "s.x"), "1");
    }

    #[test]
    fn packet_scripts_choose_output_ports() {
        let r = build(
            "InfiniteSource(LIMIT 10, STOP true)
               -> s :: Script(TYPE PACKET, init n 0, set n $(add $n 1),
                              goto drop $(eq $n 3), return $(mod $n 2), label drop, exit);
             s[0] -> c0 :: Counter -> Discard; s[1] -> c1 :: Counter -> Discard;",
        );
        run(&r);
        // n = 1..10; 3 is dropped; odd n leave on output 1.
        assert_eq!(read(&r, "c0.count"), "5");
        assert_eq!(read(&r, "c1.count"), "4");
        assert_eq!(r.total_drops(), 1);
    }

    #[test]
    fn signal_scripts_run_per_delivery_until_they_block_or_exit() {
        // A real-time signal: no other test of this binary uses it.
        let sig = 40;
        let r = build(&format!(
            "a :: Script(TYPE SIGNAL {sig}, export n 0, set n $(add $n 1));
             b :: Script(TYPE SIGNAL {sig}, export m 0, set m $(add $m 1), exit);
             c :: Script(TYPE SIGNAL {sig}, export k 0, set k $(add $k 1), wait 1h);
             Script(set y $(kill {sig} $$), set y $(kill {sig} $$), wait 20ms,
                    set y $(kill {sig} $$), wait 20ms, stop);"
        ));
        assert!(paraclick_runtime::signals::caught(sig));
        run(&r);
        // The first two deliveries came before any script ran: one run
        // each. The third: `a` only (`b` exited, `c` is blocked).
        assert_eq!(read(&r, "a.n"), "2");
        assert_eq!(read(&r, "b.m"), "1");
        assert_eq!(read(&r, "c.k"), "1");
        drop(r);
        assert!(!paraclick_runtime::signals::caught(sig));
    }

    #[test]
    fn kill_refuses_bad_signals_and_process_groups() {
        let r = build(
            "s :: Script(export a $(kill FROB $$), export b $(kill USR1 0),
                    export c $(kill USR1 -1), export d $(kill USR1), stop);",
        );
        run(&r);
        // Each failed call printed its error and substituted nothing; the
        // process is still here.
        for v in ["a", "b", "c", "d"] {
            assert_eq!(read(&r, &format!("s.{v}")), "");
        }
    }

    #[test]
    fn a_script_with_ports_is_a_packet_script_by_default() {
        // No TYPE, but connected: each packet runs the script, and
        // falling off its end emits the packet on output 0.
        let r = build(
            "InfiniteSource(LIMIT 4, STOP true) -> s :: Script(export n 0, set n $(add $n 1))
               -> c :: Counter -> Discard;",
        );
        run(&r);
        assert_eq!(read(&r, "c.count"), "4");
        assert_eq!(read(&r, "s.n"), "4");
    }

    #[test]
    fn configuration_errors() {
        assert!(build_err("Script(frobnicate)").contains("unknown instruction 'frobnicate'"));
        assert!(build_err("Script(goto nowhere)").contains("no label 'nowhere'"));
        assert!(build_err("Script(TYPE SIGNAL)").contains("TYPE SIGNAL: missing signal"));
        assert!(build_err("Script(TYPE SIGNAL KILL)").contains("cannot be caught"));
        assert!(build_err("Script(TYPE SIGNAL SEGV)").contains("cannot be caught"));
        assert!(build_err("Script(TYPE SIGNAL FROB)").contains("unknown signal 'FROB'"));
        assert!(build_err("Script(TYPE SIGNAL 99)").contains("bad signal number"));
        assert!(build_err("Script(TYPE WEIRD)").contains("unknown script type"));
        assert!(
            build_err("Idle -> Script(TYPE ACTIVE, print x) -> Discard").contains("TYPE PACKET")
        );
        assert!(build_err("Script(TYPE DRIVER); DriverManager()").contains("only one driver"));
    }
}
