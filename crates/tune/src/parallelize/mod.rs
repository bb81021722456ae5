//! `paraclick parallelize CONF -j N` and `paraclick -j N --auto CONF`
//! (issue 18): candidate rewrites of a configuration for N threads, each
//! predicted by the performance model, the best one emitted.
//!
//! Candidates:
//! - **placement** of the existing tasks (a `StaticThreadSched`): the
//!   best assignment the model finds (exhaustive for few tasks, greedy
//!   longest-first then single moves otherwise), and round-robin;
//! - **pipeline split** at a push connection inside a task's push path: a
//!   `Queue` inserted and an `Unqueue` placed on another thread; per task,
//!   the connection that best balances the two halves;
//! - **flow split** of a source's path: a `HashSwitch` on the flow's
//!   addresses and ports right after the source, feeding N replicas (each
//!   behind its own `Queue` and `Unqueue`, one per thread) of the elements
//!   that may be replicated; the replicas merge back into the first
//!   element that may not (kept whole, and the output says why);
//! - **device fanout**: a FromDevice becomes N FromDevices of one
//!   PACKET_FANOUT HASH group, each feeding its replica of the path;
//! - **scheduler replication** (SMP Click's replicated QoS): a HashSwitch
//!   before each queue of a rate-less scheduler, N replicas of the queues,
//!   the scheduler and its puller;
//! - **combinations**: every source's (device's, scheduler's) split at
//!   once, and one greedy combination of parts ([`Part`]) of different
//!   kinds on disjoint tasks ([`Part::compatible`]).
//!
//! Legality: a flow split sends every packet of a flow to the same replica
//! (the hash covers the addresses and, unless a reassembler is
//! replicated, the ports), and a pipeline split keeps FIFO order, so each
//! flow keeps its order. Only classes known to keep no state across flows
//! are replicated ([`replicable`]); an element with cross-flow state (a
//! NAT's port allocator, an ESP SA's sequence number and replay window, a
//! queue) is kept whole; a Counter is replicated and its original sums
//! its replicas' counts (`REPLICAS`).

use crate::profile;
use paraclick_elements::standard::queue::DEFAULT_CAPACITY;
use paraclick_lang::{FlatConnection, FlatElement, FlatGraph, Source};
use paraclick_model::app::{App, AppQueue, AppTask, WhatIf};
use paraclick_model::machine::{LineTerm, Machine, DATA_LINES_PER_PACKET};
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::Registry;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

mod candidate;
mod check;
mod choose;
mod combination;
mod facts;
mod fanout;
mod flow;
mod graph;
mod measure;
mod pipeline;
mod placement;
mod profiling;
mod replicas;
mod rewrite;
mod sched;
mod search;
#[cfg(test)]
mod tests;
mod text;

pub use candidate::*;
pub use check::*;
pub use choose::*;
pub use combination::*;
pub use facts::*;
pub use fanout::*;
pub use flow::*;
pub use graph::*;
pub use measure::*;
pub use pipeline::*;
pub use placement::*;
pub use profiling::*;
use replicas::*;
pub use rewrite::*;
pub use sched::*;
pub use search::*;
pub use text::*;

/// Capacity of inserted queues: Click's default. (65536 was tried: a
/// fast source then keeps tens of thousands of buffers in flight, every
/// packet a cache miss, and the measured rates of split plans fell 3-7x.)
pub const QUEUE_CAP: usize = 1000;
/// Burst of inserted Unqueues (also the batch the model charges the
/// crossing at).
pub const BURST: usize = 32;
/// Cycles the model charges a HashSwitch per packet (not profiled: the
/// element does not exist before the rewrite).
pub const HASH_CYCLES: f64 = 30.0;

/// The comment table heading the output.
pub fn table(plan: &Plan, n: usize, profile_note: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// paraclick parallelize -j {n}: candidates and the model's predicted MLFFR"
    );
    if !profile_note.is_empty() {
        let _ = writeln!(s, "// {}", profile_note.trim());
    }
    // The candidate column as wide as its longest name, and two spaces
    // before the placement at least (scripts split the row there).
    let wide = plan
        .candidates
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0)
        .max(60);
    let _ = writeln!(
        s,
        "// {:>2}  {:>12} {:>12}  {:<wide$}  placement",
        "#", "pps", "floor", "candidate"
    );
    for (i, c) in plan.candidates.iter().enumerate() {
        let place: Vec<String> = c
            .task_names
            .iter()
            .zip(&c.assign)
            .filter_map(|(nm, th)| nm.as_ref().map(|nm| format!("{nm}:{th}")))
            .collect();
        let _ = writeln!(
            s,
            "// {}{:>1}  {:>12.0} {:>12.0}  {:<wide$}  {}",
            if i == plan.chosen { "*" } else { " " },
            i,
            c.predicted,
            c.floor,
            c.name,
            place.join(" ")
        );
    }
    for note in &plan.notes {
        let _ = writeln!(s, "// note: {note}");
    }
    let best = &plan.candidates[plan.chosen];
    let base = &plan.candidates[0];
    let _ = writeln!(
        s,
        "// chosen: #{} {}: the highest predicted rate ({:.0} pps, {:+.0}% over round-robin placement) where a placement must beat round-robin by 2%, and a split the best placement by 2% even if each queue it adds cost its doubt more lines per crossing packet at one end (\"floor\": a line, or twice its measurements' median deviation once measured on the rewrite more than once, at least 0.3); of splits predicted within 2% of each other, the highest floor",
        plan.chosen,
        best.name,
        best.predicted,
        (best.predicted / base.predicted.max(1.0) - 1.0) * 100.0
    );
    s
}

/// How `parallelize` profiles, predicts and what it writes.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seconds of each profiling run.
    pub secs: f64,
    /// Emit this candidate instead of the chosen one.
    pub pick: Option<usize>,
    /// Also write every candidate to DIR/candidate-K.click.
    pub emit_all: Option<std::path::PathBuf>,
    /// Predict at this core-to-core line time (ns) instead of the one
    /// measured now. The new queues' line terms are still measured at the
    /// line of the moment (they are in whole lines, the same in either
    /// state).
    pub line_ns: Option<f64>,
    /// Run the chosen plan's rewrite once (unless it is round-robin's),
    /// offered the rate it must reach, and reject it if it loses packets
    /// ([`check_choice`]).
    pub check: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            secs: 0.3,
            pick: None,
            emit_all: None,
            line_ns: None,
            check: true,
        }
    }
}

/// What `parallelize` writes.
#[derive(Clone, Debug)]
pub struct Output {
    /// The table of candidates as comments, then the configuration.
    pub text: String,
    /// The configuration is the user's own text (a placement, or a split
    /// written as the smallest change to it, [`rewrite_text`]): read it
    /// with the same defines. Otherwise it is flattened, the defines
    /// already substituted.
    pub own_text: bool,
    /// Where the configuration starts in `text` (after the comments on
    /// what was changed and the table).
    pub config_at: usize,
}

/// Profile (or not), search, rewrite: the whole command, its text.
pub fn parallelize(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    n: usize,
    machine: &Machine,
    opts: &Options,
) -> Result<String, String> {
    parallelize_output(src, reg, defines, n, machine, opts).map(|o| o.text)
}

/// [`parallelize`], saying whether the text is the user's own.
pub fn parallelize_output(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    n: usize,
    machine: &Machine,
    opts: &Options,
) -> Result<Output, String> {
    let secs = opts.secs;
    let g = paraclick_lang::parse_config(src, defines).map_err(crate::mlffr::join)?;
    let (app, prof, note) = match profile::profile_app(src, reg, defines, secs)
        .and_then(|(a, _)| Ok((a, profile_elements(src, reg, defines, secs)?)))
    {
        Ok((a, p)) => (a, Some(p), String::new()),
        Err(e) => (
            static_app(src, reg, defines)?,
            None,
            format!("no profile ({e}): every element counted as 100 cycles per packet"),
        ),
    };
    let mut app = app;
    if app.packet_bytes == 0.0 {
        app.packet_bytes = 64.0;
    }
    let mut gr = Graph::new(g, &app, &prof.clone().unwrap_or_default(), reg);
    if prof.is_none() {
        uniform_costs(&mut gr, &mut app);
    }
    // The share of a core each busy thread gets now, relative to the
    // timing run's (as `paraclick model` does), averaged over the threads
    // so that the search does not chase one thread's noise.
    let share = if prof.is_some() {
        let now = paraclick_model::machine::core_shares(n, 100);
        now.iter().sum::<f64>() / now.len().max(1) as f64 / app.core_share.clamp(1e-3, 1.0)
    } else {
        1.0
    };
    // The core-to-core line time now (as `paraclick model` measures it for
    // a plan that crosses cores): on a VM it changes state for minutes at
    // a time, and every candidate with a queue between threads pays it.
    let now = if n > 1 {
        paraclick_model::machine::line_ns_now(crate::stats::LINE_ROUNDS)
    } else {
        None
    };
    let line_ns = opts.line_ns.or(now);
    let w = WhatIf {
        core_share: vec![share; n],
        line_ns,
        ..WhatIf::default()
    };
    let mut plan = search(&gr, &app, machine, n, &w);
    if prof.is_some() && n > 1 {
        // The line terms of the splits' new queues: measured on the
        // rewritten configuration (with earlier measurements of it), where
        // two cores could be timed now.
        let run = now.is_some();
        let mut terms = |c: &Candidate, _k: usize| {
            let text = paraclick_lang::print_flat(&rewrite(&gr, c, n));
            // Cached under the rewrite without its placement (which the
            // search may change from one profile to the next).
            let unplaced = Candidate {
                assign: vec![0; c.assign.len()],
                ..c.clone()
            };
            let key = paraclick_lang::print_flat(&rewrite(&gr, &unplaced, n));
            profile::queue_line_terms(
                &Source {
                    name: format!("{}+split", src.name),
                    text,
                },
                &key,
                reg,
                secs,
                run,
            )
        };
        let notes = measure_splits(&mut plan, machine, n, &w, &mut terms);
        plan.notes.extend(notes);
    }
    if opts.check && prof.is_some() && n > 1 && opts.pick.is_none() {
        // The check runs the rewrite for seconds: a configuration that
        // ends sooner by its N (as the examples do) is rewritten from
        // one parsed with enough packets.
        let long = crate::mlffr::with_long_run(defines.to_vec());
        let long_gr = if long.len() == defines.len() {
            None
        } else {
            let g = paraclick_lang::parse_config(src, &long).map_err(crate::mlffr::join)?;
            Some(Graph::new(g, &app, &prof.clone().unwrap_or_default(), reg))
        };
        let on = long_gr.as_ref().unwrap_or(&gr);
        let notes = check_choice(&mut plan, &mut |c, _k, rate| {
            check_run(on, c, n, reg, rate, &src.name)
        });
        plan.notes.extend(notes);
    }
    if let Some(k) = opts.pick {
        if k >= plan.candidates.len() {
            return Err(format!(
                "--candidate {k}: there are {} candidates",
                plan.candidates.len()
            ));
        }
        plan.chosen = k;
    }
    let line = match (opts.line_ns, now) {
        (Some(l), _) => format!(
            "; core-to-core line {l:.0} ns used: given (calibrated at {:.0})",
            machine.line_transfer_ns
        ),
        (None, Some(l)) => format!(
            "; core-to-core line {l:.0} ns now (calibrated at {:.0})",
            machine.line_transfer_ns
        ),
        (None, None) => String::new(),
    };
    let note = format!(
        "{note}{}each thread's core share now relative to the profile's: {share:.2}{line}",
        if note.is_empty() { "" } else { "; " }
    );
    let mut head = table(&plan, n, &note);
    let handoff = opts.pick.is_none() && adaptive_handoff(&plan, n);
    if handoff {
        head.push_str(HANDOFF_NOTE);
        head.push('\n');
    }
    if let Some(dir) = &opts.emit_all {
        // Every candidate from this one profile, for measuring them all.
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (k, c) in plan.candidates.iter().enumerate() {
            let f = dir.join(format!("candidate-{k}.click"));
            let out = output_text(src, defines, &gr, c, n, false);
            let (top, body) = (out.top, out.body);
            std::fs::write(
                &f,
                format!("// candidate {k}: {}\n{top}{head}{body}", c.name),
            )
            .map_err(|e| format!("{}: {e}", f.display()))?;
        }
    }
    let c = &plan.candidates[plan.chosen];
    let out = output_text(src, defines, &gr, c, n, handoff);
    // What the rewrite changed first, then the table.
    let mut text = out.top;
    text.push_str(&head);
    if out.own_text && !defines.is_empty() {
        let given: Vec<String> = defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            text,
            "// output: the configuration as written{}; read it with the defines given here: {}",
            if matches!(c.rewrite, Rewrite::Place) {
                ", with the placement's line at its end"
            } else {
                ", changed as said above"
            },
            given.join(" ")
        );
    }
    let config_at = text.len();
    text.push_str(&out.body);
    let own_text = out.own_text;
    if let Some(dir) = &opts.emit_all {
        let f = dir.join("output.click");
        std::fs::write(&f, &text).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    Ok(Output {
        text,
        own_text,
        config_at,
    })
}

/// The line the output carries when [`adaptive_handoff`] holds.
pub const HANDOFF_NOTE: &str = "// output: the chosen plan is round-robin's placement, so it is written without StaticThreadSched: the adaptive scheduler (paraclick's default) starts with the tasks that meet at a queue on one thread, moves tasks by their measured loads, and keeps a split across a queue only if it measures faster (--candidate K writes a plan pinned; --sched spread starts from round-robin)";

/// Whether the chosen plan is round-robin's placement: the model found
/// nothing better than round-robin (where `--sched spread` starts; the
/// default adaptive scheduler starts with queue partners together and
/// tries the split, kept only if it measures faster), and that
/// scheduler then moves tasks by the loads it measures, which no pinned
/// plan can (in the 2026-11-27 quality runs it beat pinned round-robin
/// by 5% on vpn-bench twice, and by 2-15% on three configurations of
/// four). So the output is left unpinned.
pub fn adaptive_handoff(plan: &Plan, n: usize) -> bool {
    let c = &plan.candidates[plan.chosen];
    n > 1 && matches!(c.rewrite, Rewrite::Place) && c.assign == plan.candidates[0].assign
}
