//! The choice among candidates: the floor, the margins, the rules.

use super::*;

pub(crate) fn finish(cands: Vec<Candidate>, notes: Vec<String>) -> Plan {
    Plan {
        chosen: choose(&cands),
        candidates: cands,
        notes,
    }
}

/// How much a placement must be predicted to beat round-robin by, and a
/// split (at its [`floor`]) the best placement.
pub const PLACE_MARGIN: f64 = 0.02;

/// Lines per crossing packet by which a new queue's line term may be
/// wrong at one end, estimated or measured: the misses seen on this VM
/// (docs/PARALLELIZE.md): a source behind replicated-qos's split waited
/// for 0.45-1.30 lines per crossing packet against the 0.17 estimated;
/// firewall-pipeline's split consumer measured 0.62-0.73 against the
/// 1.17 estimated; one rewrite measured three times spread by 0.3.
pub const LINE_DOUBT: f64 = 1.0;

/// The least doubt of a queue whose term was measured on the rewrite:
/// one rewrite's profiles, measured three times, spread by 0.3 lines
/// (docs/notes/2026-11-parallelize-quality.md, 2026-11-25).
pub const MEASURED_DOUBT_MIN: f64 = 0.3;

/// Lines per crossing packet by which queue term `t` may be wrong at
/// one end: [`LINE_DOUBT`] where estimated or measured once; where
/// measured more often, twice its figures' median absolute deviation
/// ([`LineTerm::spread`]), within [`MEASURED_DOUBT_MIN`] and
/// [`LINE_DOUBT`]: a split whose crossing was measured on the rewrite
/// and measured alike each time is doubted by what its measurements
/// differ by. (A whole line is the size of the estimate's misses; at
/// 190 ns it cost replicated-qos's split of one replica's WorkPackage,
/// predicted 8.3-9.1 M against round-robin's 6.7-6.8 M and measured
/// 8.2-8.4 M against 6.7 M, its choice.)
pub fn line_doubt(t: &LineTerm) -> f64 {
    match (t.consumer, t.spread) {
        (Some(_), Some(s)) => (2.0 * s).clamp(MEASURED_DOUBT_MIN, LINE_DOUBT),
        _ => LINE_DOUBT,
    }
}

/// The rate of `model` placed by `assign` if each queue after its first
/// `base` (the ones a rewrite adds) cost its [`line_doubt`] more lines
/// per crossing packet at one end: the lower of the producer's and the
/// consumer's case. A split is chosen on this, not on its predicted rate:
/// a gain that its crossings' doubt would undo is not a gain. A line
/// costs its transfer time, so a line's doubt is ~30 ns per crossing
/// packet in the VM's fast line state and ~155 ns in the slow one.
pub fn floor(model: &App, base: usize, assign: &[usize], m: &Machine, n: usize, w: &WhatIf) -> f64 {
    let at = |producer: bool| {
        let mut a = model.clone();
        for q in a.queues.iter_mut().skip(base) {
            let chain = m.chain_lines(q.batch);
            let d = line_doubt(&q.line_growth);
            let (dp, dc) = if producer { (d, 0.0) } else { (0.0, d) };
            q.line_growth = q.line_growth.plus_lines(dp, dc, chain);
        }
        predict(&a, m, assign, n, w)
    };
    at(true).min(at(false))
}

/// The best placement's rate (round-robin unless another beats it by
/// [`PLACE_MARGIN`]).
pub(crate) fn best_place(cands: &[Candidate]) -> f64 {
    cands[choose_place(cands)].predicted
}

pub(crate) fn choose_place(cands: &[Candidate]) -> usize {
    let mut chosen = 0;
    for (i, c) in cands.iter().enumerate() {
        if matches!(c.rewrite, Rewrite::Place)
            && !c.rejected
            && c.predicted > cands[chosen].predicted * (1.0 + PLACE_MARGIN)
        {
            chosen = i;
        }
    }
    chosen
}

/// The chosen candidate: the best placement, then the split with the
/// highest predicted rate among those whose [`floor`] beats that
/// placement by [`PLACE_MARGIN`]; of splits predicted within
/// [`PLACE_MARGIN`] of that one, the one with the highest floor (the
/// model cannot tell them apart, and the one whose added queues risk
/// less is the safer: iprouter-veth's device fanout at -j 4, which adds
/// no queue, against a HashSwitch flow split predicted 0.5% over it).
pub(crate) fn choose(cands: &[Candidate]) -> usize {
    let place_k = choose_place(cands);
    let place = cands[place_k].predicted;
    let ok: Vec<usize> = (0..cands.len())
        .filter(|&i| {
            !matches!(cands[i].rewrite, Rewrite::Place)
                && !cands[i].rejected
                && cands[i].floor > place * (1.0 + PLACE_MARGIN)
                && cands[i].predicted > place
        })
        .collect();
    let Some(best) = ok
        .iter()
        .map(|&i| cands[i].predicted)
        .max_by(f64::total_cmp)
    else {
        return place_k;
    };
    ok.into_iter()
        .filter(|&i| cands[i].predicted >= best / (1.0 + PLACE_MARGIN))
        .max_by(|&a, &b| {
            cands[a]
                .floor
                .total_cmp(&cands[b].floor)
                .then(cands[a].predicted.total_cmp(&cands[b].predicted))
                .then(b.cmp(&a))
        })
        .unwrap_or(place_k)
}
