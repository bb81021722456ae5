//! Measuring a split's new queues' line terms on its rewrite.

use super::*;

/// Split candidates whose queues [`measure_splits`] measures at most:
/// each costs a one-thread run and three crossing runs of half a profile
/// run (about 0.8 s at `parallelize`'s default 0.3 s).
pub const MEASURE_MAX: usize = 3;

/// Line terms per queue (by name) of one candidate's configuration:
/// `paraclick parallelize` asks [`profile::queue_line_terms`].
pub type TermSource<'a> =
    dyn FnMut(&Candidate, usize) -> Result<(Vec<(String, LineTerm)>, String), String> + 'a;

/// The queues a split adds have no measured line term: the model
/// estimates how much each end's cost grows with the line time from the
/// consumers' element classes, and in the slow state that estimate
/// misses what a moved part of a path really touches across cores
/// (issue 18: replicated-qos's split of one replica was predicted 9.9 M
/// and measured 5.5 M). So the split candidates that could be chosen
/// (predicted above the best placement by [`PLACE_MARGIN`]), the best
/// first, get their queues' terms from `terms` (the crossing runs on
/// the rewritten configuration, or an earlier measurement of it) and
/// are placed and predicted again with them, until the best such
/// candidate is measured or [`MEASURE_MAX`] were. Returns a note per
/// candidate measured.
pub fn measure_splits(
    plan: &mut Plan,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    terms: &mut TermSource<'_>,
) -> Vec<String> {
    let mut done = HashSet::new();
    let mut notes = Vec::new();
    for _ in 0..MEASURE_MAX {
        let place = best_place(&plan.candidates);
        let next = plan
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                !matches!(c.rewrite, Rewrite::Place)
                    && !done.contains(i)
                    && c.predicted > place * (1.0 + PLACE_MARGIN)
            })
            .max_by(|a, b| a.1.predicted.total_cmp(&b.1.predicted))
            .map(|x| x.0);
        let Some(k) = next else { break };
        done.insert(k);
        let c = &mut plan.candidates[k];
        match terms(c, k) {
            Ok((got, note)) => {
                let mut new = Vec::new();
                for (name, t) in got {
                    if let Some((i, q)) = c
                        .model
                        .queues
                        .iter_mut()
                        .enumerate()
                        .find(|(_, q)| q.name == name)
                    {
                        // The rewrite's own queues (a scheduler
                        // replication's copies start with the original's
                        // term, not with none).
                        if i >= c.base_queues {
                            new.push(format!(
                                "{name} {}/{:.2}{}",
                                t.producer.map_or("-".into(), |p| format!("{p:.2}")),
                                t.consumer.unwrap_or(0.0),
                                t.spread
                                    .map_or(String::new(), |s| format!(" (spread {s:.2})"))
                            ));
                        }
                        q.line_growth = LineTerm {
                            consumer_data: q.line_growth.consumer_data,
                            ..t
                        };
                    }
                }
                if new.is_empty() {
                    notes.push(format!(
                        "#{k}: its new queues' line terms estimated ({})",
                        note.trim().trim_start_matches("line term: ")
                    ));
                    continue;
                }
                let before = c.predicted;
                let (a, r) = place_with(&c.model, m, n, w, &c.fixed);
                c.floor = floor(&c.model, c.base_queues, &a, m, n, w);
                c.assign = a;
                c.predicted = r;
                notes.push(format!(
                    "#{k}: its new queues' line terms measured on the rewrite (lines per crossing packet, producer/consumer: {}): predicted {before:.0} -> {r:.0} pps",
                    new.join(", ")
                ));
            }
            Err(e) => notes.push(format!("#{k}: line terms not measured: {e}")),
        }
    }
    plan.chosen = choose(&plan.candidates);
    notes
}
