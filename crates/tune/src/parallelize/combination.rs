//! Combination: parts of different kinds on disjoint tasks at once.

use super::*;

impl Search<'_> {
    /// The greedy combination of the single-part splits in `cands`.
    pub(crate) fn combine(&self, cands: &mut Vec<Candidate>) {
        let (gr, app, m, n, w) = (self.gr, self.app, self.m, self.n, self.w);
        let names = self.names.as_slice();
        // Single-part splits: what combinations are made of.
        let singles: Vec<(usize, Part)> = cands
            .iter()
            .enumerate()
            .filter_map(|(k, c)| match c.rewrite.parts() {
                [p] => Some((k, p.clone())),
                _ => None,
            })
            .collect();
        if let Some(c) = combination(gr, app, m, n, w, cands, singles, names) {
            cands.push(c);
        }
    }
}

/// Most single-part splits a [`combination`] is tried with (the best
/// predicted first): each try is a placement search.
pub const COMBINE_MAX: usize = 8;

/// A combination of splits of different kinds (or of several tasks'
/// pipeline splits), made greedily: of the [`COMBINE_MAX`] single-part
/// splits predicted best, from the best, each next that is compatible
/// with those taken ([`Part::compatible`]: disjoint tasks and elements)
/// is added when the model predicts the combination [`PLACE_MARGIN`]
/// over it without. None when nothing was added, or when the parts are
/// all of one kind that is already combined (every source's flow split,
/// every device's fanout, every scheduler's replication at once).
#[allow(clippy::too_many_arguments)]
pub fn combination(
    gr: &Graph,
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    cands: &[Candidate],
    mut singles: Vec<(usize, Part)>,
    names: &[Option<String>],
) -> Option<Candidate> {
    singles.sort_by(|a, b| cands[b.0].predicted.total_cmp(&cands[a.0].predicted));
    singles.truncate(COMBINE_MAX);
    let mut rest = singles.iter();
    let (k0, first) = rest.next()?;
    let mut taken = vec![(*k0, first.clone())];
    let mut rate = cands[*k0].predicted;
    let mut best: Option<Candidate> = None;
    for (k, part) in rest {
        if !taken
            .iter()
            .all(|(_, p)| Part::compatible(gr, app, p, part))
        {
            continue;
        }
        let mut trial = taken.clone();
        trial.push((*k, part.clone()));
        let c = combo_candidate(gr, app, m, n, w, &trial, cands, names);
        if c.predicted > rate * (1.0 + PLACE_MARGIN) {
            rate = c.predicted;
            taken = trial;
            best = Some(c);
        }
    }
    // Parts all of one kind (but pipeline splits) are combined above.
    best.filter(|c| c.rewrite.kind() == "combination")
}

/// The candidate of `parts` together (each a single-part candidate's,
/// numbered in `cands`), as candidate number `cands.len()`: each part
/// applied to the model in turn, part P's new elements tagged `KpP`. A
/// pipeline split's Unqueue is not pinned here: the placement search
/// places it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn combo_candidate(
    gr: &Graph,
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    parts: &[(usize, Part)],
    cands: &[Candidate],
    names: &[Option<String>],
) -> Candidate {
    let k = cands.len();
    let mut d = Draft::new(app, names);
    let mut done = Vec::new();
    for (i, (_, part)) in parts.iter().enumerate() {
        let mut part = part.clone();
        let tag = format!("{k}p{i}");
        match &mut part {
            Part::Pipeline {
                task,
                conn,
                down,
                name,
            } => {
                *name = format!("par_u{tag}");
                pipeline_apply(gr, app, &mut d, *task, *conn, down, name);
            }
            Part::Flow(f) => {
                f.tag = tag;
                flow_apply(gr, app, &mut d, f, n);
            }
            Part::Fanout(t, _) => {
                fanout_apply(gr, app, &mut d, *t, n);
            }
            Part::Sched(t, sp) => {
                sched_apply(gr, app, &mut d, *t, sp, n);
            }
        }
        done.push(part);
    }
    let name = format!(
        "combination: {}",
        parts
            .iter()
            .map(|(k, _)| cands[*k].name.as_str())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    Candidate::split(
        name,
        Rewrite::Split { parts: done },
        d,
        app.queues.len(),
        m,
        n,
        w,
    )
}
