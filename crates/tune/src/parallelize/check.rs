//! The check run: the chosen plan's rewrite run once at the rate it must
//! reach, rejected if it loses packets.

use super::*;

/// What a check run of a plan's rewrite found ([`check_choice`]).
#[derive(Clone, Debug)]
pub enum Checked {
    /// It forwarded the rate loss-free: the run's figures.
    Passed(String),
    /// It lost more than allowed or fell behind the offered rate: the
    /// run's figures and why.
    Failed(String),
}

/// One check run: candidate `c` (index `k`) offered `rate` pps, or why
/// it could not be run.
pub type CheckRun<'a> = dyn FnMut(&Candidate, usize, f64) -> Result<Checked, String> + 'a;

/// Plans checked at most, one after another as each is rejected; past
/// them round-robin's placement is chosen.
pub const CHECK_MAX: usize = 3;

/// Seconds of a check run's measured window (after
/// [`crate::mlffr::Settings`]' default warm-up): as long as a trial of
/// `scripts/parallelize-quality.py`.
pub const CHECK_SECS: f64 = 1.0;

/// The loss a check run may have: as `scripts/parallelize-quality.py`'s
/// loss-free measure allows.
pub const CHECK_LOSS: f64 = 0.001;

/// Trials a check run may take to pass: one trial near a plan's
/// capacity fails now and then by noise alone (qos-bench's scheduler
/// replication, 10.0 M loss-free in `bench`, failed one 1 s trial in
/// five at 7.4 M: its halves differed by 5.3%), while the plans the
/// check exists for failed every trial (marking-pipeline's placement
/// lost 2.6% and 17.8%).
pub const CHECK_TRIES: usize = 2;

/// Whether candidate `k` is round-robin's placement (the first
/// candidate, or a placement that assigns as it does): the baseline,
/// never checked.
pub(crate) fn is_round_robin(plan: &Plan, k: usize) -> bool {
    let c = &plan.candidates[k];
    k == 0 || matches!(c.rewrite, Rewrite::Place) && c.assign == plan.candidates[0].assign
}

/// The model predicts a plan's capacity, and a queue between two
/// threads whose producer does not wait for room (a source offered a
/// fixed rate, as a link offers it, or an Unqueue, which never waits)
/// drops when its consumer falls behind for milliseconds
/// (docs/notes/2026-11-parallelize-quality.md, 2026-11-27 (late)). No model term predicts
/// that. On the loss-free measure such plans measured 45-97% below
/// their predictions and below round-robin: replicated-qos's split
/// `hs[1] -> r1/cl` (4.6 M against 10.3 M), firewall-pipeline's `fw[0]
/// -> cl`, and marking-pipeline's placement of its first Unqueue with
/// the source, whose second queue then crosses from an Unqueue (0.7-19 M
/// against round-robin's 20-25 M). So the chosen plan, unless it is
/// round-robin's, is run once, offered the rate it must reach to be
/// chosen (for a placement round-robin's predicted rate, for a split
/// the best placement's, and [`PLACE_MARGIN`]), and kept only if it
/// forwards that loss-free; else it is rejected and the choice made
/// again, at most [`CHECK_MAX`] times. A check that cannot run (no
/// source takes an offered rate: devices, traces) keeps the choice and
/// says so. Returns a note per check.
pub fn check_choice(plan: &mut Plan, check: &mut CheckRun<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    for _ in 0..CHECK_MAX {
        let k = plan.chosen;
        if is_round_robin(plan, k) {
            return notes;
        }
        let (rate, over) = if matches!(plan.candidates[k].rewrite, Rewrite::Place) {
            (plan.candidates[0].predicted, "round-robin's")
        } else {
            (best_place(&plan.candidates), "the best placement's")
        };
        let rate = rate * (1.0 + PLACE_MARGIN);
        let must = format!(
            "{rate:.0} pps loss-free ({over} predicted rate and {:.0}%)",
            PLACE_MARGIN * 100.0
        );
        match check(&plan.candidates[k], k, rate) {
            Ok(Checked::Passed(how)) => {
                notes.push(format!(
                    "#{k}: checked: its rewrite forwarded {must}: {how}"
                ));
                return notes;
            }
            Ok(Checked::Failed(why)) => {
                notes.push(format!(
                    "#{k}: rejected: its rewrite did not forward {must}: {why}"
                ));
                plan.candidates[k].rejected = true;
                plan.chosen = choose(&plan.candidates);
            }
            Err(e) => {
                notes.push(format!("#{k}: not checked: {e}"));
                return notes;
            }
        }
    }
    if !is_round_robin(plan, plan.chosen) {
        let k = plan.chosen;
        plan.chosen = 0;
        notes.push(format!(
            "#{k}: not checked ({CHECK_MAX} plans were rejected before it): round-robin's placement chosen"
        ));
    }
    notes
}

/// The check run of [`check_choice`] for candidate `c` of `gr` (built
/// with enough packets not to end within the run): its rewrite offered
/// `rate` pps through every source that takes a rate, as `paraclick
/// bench --mlffr --offered` does, in up to [`CHECK_TRIES`] trials; it
/// passes on the first that passes.
pub fn check_run(
    gr: &Graph,
    c: &Candidate,
    n: usize,
    reg: &Registry,
    rate: f64,
    name: &str,
) -> Result<Checked, String> {
    let src = Source {
        name: format!("{name}+check"),
        text: paraclick_lang::print_flat(&rewrite(gr, c, n)),
    };
    let entry = crate::mlffr::entries(&src, reg, &[])?;
    if entry.is_empty() {
        return Err("no source offers packets".into());
    }
    if let Some((e, class)) = entry
        .iter()
        .find(|(_, cl)| crate::mlffr::offers_rate(reg, cl, true).is_none())
    {
        return Err(format!("{e} ({class}) takes no offered rate"));
    }
    let s = crate::mlffr::Settings {
        threads: n,
        trial: CHECK_SECS,
        loss: CHECK_LOSS,
        offer_all: true,
        ..Default::default()
    };
    let mut failed = Vec::new();
    for _ in 0..CHECK_TRIES {
        let t = crate::mlffr::trial(&src, reg, &[], &s, &entry, Some(rate))?;
        let how = format!(
            "{:.0} pps entered, {:.0} left, {} dropped ({:.3}%)",
            t.input_pps,
            t.output_pps,
            t.drops,
            t.loss() * 100.0
        );
        match t.fails(&s, rate) {
            None => return Ok(Checked::Passed(how)),
            Some(why) => failed.push(format!("{how}: {why}")),
        }
    }
    Ok(Checked::Failed(failed.join("; then ")))
}
