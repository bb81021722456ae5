//! # InfiniteSource
//!
//! InfiniteSource([DATA, LIMIT, BURST, ACTIVE, keywords LENGTH, DATASIZE, STOP, TIMESTAMP, END_CALL])
//!
//! Generates packets as fast as it is scheduled.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits BURST packets per run; in pull context each pull
//! returns up to the requested number of packets.
//!
//! Arguments:
//! - `DATA` (string, default 64 bytes of text): packet contents.
//! - `LIMIT` (integer, default -1): total packets to send; -1 means no limit.
//! - `BURST` (integer, default 1): packets per task run.
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `LENGTH` / `DATASIZE` (integer): cut or zero-pad DATA to this length.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//! - `TIMESTAMP` (boolean, default true): set each packet's timestamp.
//! - `END_CALL` (write handler and value): called after LIMIT packets.
//!
//! Handlers:
//! - `count` (read): packets sent.
//! - `reset` (write): resets the count, so LIMIT more packets go out.
//! - `active` (read/write), `limit` (read/write), `burst` (read/write).
//!
//! Example:
//!
//!     InfiniteSource(LENGTH 64, LIMIT 1000000, STOP true) -> c :: Counter -> Discard;

use super::source_data;
use crate::util::parse_bool;
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::args::Bytes;
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Counter, Cx, Element, HandlerCx, HandlerInfo, InitCx,
};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

pub struct InfiniteSource {
    data: RwLock<Vec<u8>>,
    limit: AtomicI64,
    burst: AtomicUsize,
    active: AtomicBool,
    stop: bool,
    timestamp: bool,
    end_call: Option<(String, String)>,
    push: bool,
    count: Counter,
    /// Packets claimed against LIMIT (only used when LIMIT is set).
    claimed: AtomicU64,
    done: AtomicBool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::new("InfiniteSource", "0/1", "a", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
    let mut a = cx.args();
    let data = a.read_p::<Bytes>("DATA")?.map(|b| b.0);
    let limit = a.read_p::<i64>("LIMIT")?.unwrap_or(-1);
    let burst = a.read_p::<usize>("BURST")?.unwrap_or(1);
    let active = a.read_p::<bool>("ACTIVE")?.unwrap_or(true);
    let length = match a.read::<i64>("LENGTH")? {
        Some(l) => Some(l),
        None => a.read::<i64>("DATASIZE")?,
    };
    let stop = a.read::<bool>("STOP")?.unwrap_or(false);
    let timestamp = a.read::<bool>("TIMESTAMP")?.unwrap_or(true);
    let end_call = a.read::<String>("END_CALL")?;
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    let end_call = end_call.map(|s| match s.split_once(char::is_whitespace) {
        Some((h, v)) => (h.to_string(), v.trim().to_string()),
        None => (s, String::new()),
    });
    Ok(Box::new(InfiniteSource {
        data: RwLock::new(source_data(data, length)),
        limit: AtomicI64::new(limit),
        burst: AtomicUsize::new(burst),
        active: AtomicBool::new(active),
        stop,
        timestamp,
        end_call,
        push: cx.output_is_push(0),
        count: Counter::new(cx.nthreads),
        claimed: AtomicU64::new(0),
        done: AtomicBool::new(false),
    }))
}

impl InfiniteSource {
    /// How many of `want` packets may still go out under LIMIT.
    #[inline]
    fn claim(&self, want: usize) -> usize {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit < 0 {
            return want;
        }
        let before = self.claimed.fetch_add(want as u64, Ordering::Relaxed);
        let left = (limit as u64).saturating_sub(before);
        if (left as usize) < want {
            // Give back what we cannot use.
            self.claimed
                .fetch_sub(want as u64 - left, Ordering::Relaxed);
        }
        (left as usize).min(want)
    }

    fn finished(&self, cx: &mut Cx<'_>) {
        if self.done.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some((h, v)) = &self.end_call {
            let _ = cx.handler_cx().write(h, v);
        }
        if self.stop {
            cx.request_stop();
        }
    }

    fn make_batch(&self, cx: &mut Cx<'_>, n: usize) -> Batch {
        let mut b = Batch::new();
        let data = self.data.read().unwrap_or_else(|e| e.into_inner());
        let ts = if self.timestamp {
            Timestamp::now()
        } else {
            Timestamp::ZERO
        };
        for _ in 0..n {
            let Some(mut p) = Packet::from_slice(&data) else {
                break; // pool exhausted: send fewer now
            };
            p.set_timestamp(ts);
            b.push(p);
        }
        let sent = b.len();
        if sent < n && self.limit.load(Ordering::Relaxed) >= 0 {
            self.claimed.fetch_sub((n - sent) as u64, Ordering::Relaxed);
        }
        self.count.add(cx.thread(), sent as u64);
        b
    }

    fn produce(&self, cx: &mut Cx<'_>, want: usize) -> Option<Batch> {
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        let n = self.claim(want);
        if n == 0 {
            self.finished(cx);
            return None;
        }
        let b = self.make_batch(cx, n);
        (!b.is_empty()).then_some(b)
    }
}

const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("count"),
    HandlerInfo::write("reset"),
    HandlerInfo::rw("active"),
    HandlerInfo::rw("limit"),
    HandlerInfo::rw("burst"),
];

impl Element for InfiniteSource {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push {
            ix.add_task();
        }
        Ok(())
    }

    #[inline]
    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let want = self.burst.load(Ordering::Relaxed);
        match self.produce(cx, want) {
            Some(b) => {
                cx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        self.produce(cx, max.max(1))
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        Some(match name {
            "count" => self.count.get().to_string(),
            "active" => self.active.load(Ordering::Relaxed).to_string(),
            "limit" => self.limit.load(Ordering::Relaxed).to_string(),
            "burst" => self.burst.load(Ordering::Relaxed).to_string(),
            _ => return None,
        })
    }

    fn write_handler(
        &self,
        name: &str,
        v: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count.reset();
                self.claimed.store(0, Ordering::Relaxed);
                self.done.store(false, Ordering::Release);
                Ok(())
            }
            "active" => parse_bool(v).map(|b| self.active.store(b, Ordering::Relaxed)),
            "limit" => v
                .trim()
                .parse::<i64>()
                .map(|l| {
                    self.limit.store(l, Ordering::Relaxed);
                    self.done.store(false, Ordering::Release);
                })
                .map_err(|_| format!("expected integer, not '{}'", v.trim())),
            "burst" => match v.trim().parse::<usize>() {
                Ok(b) if b > 0 => {
                    self.burst.store(b, Ordering::Relaxed);
                    Ok(())
                }
                _ => Err(format!("expected positive integer, not '{}'", v.trim())),
            },
            _ => return None,
        })
    }
}
