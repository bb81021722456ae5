//! The search: every kind of candidate for N threads, then the choice.

use super::*;

/// Per App task of `gr`, its element's name (None for a second task of
/// an element): what a StaticThreadSched names.
pub(crate) fn task_names(gr: &Graph) -> Vec<Option<String>> {
    gr.task_elem
        .iter()
        .map(|e| e.map(|e| gr.g.elements[e].name.clone()))
        .collect()
}

/// What every kind of candidate is made from: the graph, its profile,
/// the machine, the thread count and the what-if of the prediction, and
/// each task's StaticThreadSched name. Each kind's module adds its
/// candidates to the search's list (and says in a note why a task got
/// none of its kind).
pub(crate) struct Search<'a> {
    pub(crate) gr: &'a Graph,
    pub(crate) app: &'a App,
    pub(crate) m: &'a Machine,
    pub(crate) n: usize,
    pub(crate) w: &'a WhatIf,
    pub(crate) names: Vec<Option<String>>,
}

/// The candidates for `n` threads and the chosen one.
pub fn search(gr: &Graph, app: &App, m: &Machine, n: usize, w: &WhatIf) -> Plan {
    let n = n.max(1);
    let names = task_names(gr);
    let mut notes = Vec::new();
    let mut cands = placements(app, m, n, w, &names);
    if n == 1 {
        return finish(cands, notes);
    }
    let s = Search {
        gr,
        app,
        m,
        n,
        w,
        names,
    };
    s.pipeline_splits(&mut cands, &mut notes);
    s.flow_splits(&mut cands, &mut notes);
    s.device_fanouts(&mut cands, &mut notes);
    s.scheduler_replications(&mut cands, &mut notes);
    s.combine(&mut cands);
    finish(cands, notes)
}
