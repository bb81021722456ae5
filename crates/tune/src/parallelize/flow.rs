//! Flow split: a HashSwitch after a source, feeding replicas of the
//! elements that may be replicated.

use super::*;

impl Search<'_> {
    /// Each source's flow split alone, then every source's at once.
    pub(crate) fn flow_splits(&self, cands: &mut Vec<Candidate>, notes: &mut Vec<String>) {
        let (gr, app, m, n, w) = (self.gr, self.app, self.m, self.n, self.w);
        let names = self.names.as_slice();
        // Flow splits of sources' paths.
        let mut flows: Vec<FlowSplit> = Vec::new();
        for (t, te) in gr.task_elem.iter().enumerate() {
            let Some(s) = *te else { continue };
            match flow_split_of(gr, t, s) {
                Ok(None) => {}
                Err(why) => notes.push(why),
                Ok(Some((split, note))) => {
                    notes.push(note);
                    flows.push(split);
                }
            }
        }
        // Each source's flow split alone, then every source's at once.
        let mut groups: Vec<Vec<FlowSplit>> = flows.iter().map(|f| vec![f.clone()]).collect();
        if flows.len() > 1 {
            groups.push(flows);
        }
        for group in groups {
            let k = cands.len();
            cands.push(flow_candidate(gr, app, m, n, w, group, names, k));
        }
    }
}

/// The flow split of source task `t` (element `s`) with the note that
/// says what it replicates; Err with the note that says why there is
/// none; None for a task that is not a source's.
pub(crate) fn flow_split_of(
    gr: &Graph,
    t: usize,
    s: usize,
) -> Result<Option<(FlowSplit, String)>, String> {
    let el = &gr.g.elements[s];
    if !gr.inc[s].is_empty() || gr.out[s].is_empty() {
        return Ok(None);
    }
    if gr.out[s].len() != 1 {
        return Err(format!(
            "{}: no flow split (more than one output connection)",
            el.name
        ));
    }
    let set: HashSet<usize> = gr.task_set[t].iter().copied().collect();
    // The largest single-entry set of replicable elements after s.
    let rep = replicable_after(gr, t, s);
    let first = gr.g.connections[gr.out[s][0]].to;
    if !rep.contains(&first) {
        let why = replicable_el(&gr.g.elements[first])
            .err()
            .unwrap_or_else(|| "it is also reached from elsewhere".into());
        return Err(format!(
            "{}: no flow split: the first element, {} ({}), is kept whole: {}",
            el.name, gr.g.elements[first].name, gr.g.elements[first].class, why
        ));
    }
    // Elements where the replicas merge, kept whole, and why.
    let merge = merge_points(gr, &rep, |to| {
        !rep.contains(&to) && set.contains(&to) || is_queue(&gr.g.elements[to].class)
    });
    if let Some(why) = sequenced(gr, t, &rep) {
        return Err(format!("{}: no flow split: {why}", el.name));
    }
    let mut rep: Vec<usize> = rep.into_iter().collect();
    rep.sort();
    // The addresses (and ports) of the packets as the source makes
    // them: an Ethernet frame unless FORCE_IP.
    let offset = ip_offset(gr, first).unwrap_or(14) + 12;
    let len = flow_hash_len(rep.iter().map(|&x| gr.g.elements[x].class.as_str()));
    let note = format!(
        "{}: flow split replicates {} element(s); kept whole where the replicas merge: {}",
        el.name,
        rep.len(),
        if merge.is_empty() {
            "none".to_string()
        } else {
            merge.join("; ")
        }
    );
    let split = FlowSplit {
        task: t,
        set: rep,
        offset,
        len,
        tag: String::new(),
    };
    Ok(Some((split, note)))
}

/// Where the IP header starts in the packets entering element `x`:
/// its source's frame (Ethernet unless `FORCE_IP true`) less the Strips
/// on the way (Unstrip and EtherEncap add back); None where the paths to
/// it disagree or pass an element that could move it otherwise.
pub(crate) fn ip_offset(gr: &Graph, x: usize) -> Option<usize> {
    // Memoised; an element on a cycle reads None while it is worked out.
    fn at(gr: &Graph, x: usize, memo: &mut HashMap<usize, Option<i64>>) -> Option<i64> {
        if let Some(v) = memo.get(&x) {
            return *v;
        }
        memo.insert(x, None);
        let mut got: Option<i64> = None;
        for &c in &gr.inc[x] {
            let f = gr.g.connections[c].from;
            let e = &gr.g.elements[f];
            let out = if gr.inc[f].is_empty() {
                Some(if e.config.contains("FORCE_IP true") {
                    0
                } else {
                    14
                })
            } else {
                ip_offset_after(e, at(gr, f, memo)?)
            }?;
            if got.is_some_and(|g| g != out) {
                return None;
            }
            got = Some(out);
        }
        memo.insert(x, got);
        got
    }
    at(gr, x, &mut HashMap::new()).and_then(|v| usize::try_from(v).ok())
}

/// One source's flow split.
#[derive(Clone, Debug)]
pub struct FlowSplit {
    /// The source's task.
    pub task: usize,
    /// The replicated elements.
    pub set: Vec<usize>,
    /// HashSwitch's offset and length.
    pub offset: usize,
    pub len: usize,
    /// Names the part's elements: `par_hsTAG`, then `par_qTAG_r` and
    /// `par_uTAG_r` per replica r (TAG: the candidate's number, with `pP`
    /// for part P of a combination).
    pub tag: String,
}

/// The candidate of the flow splits `parts` together (one: a source's
/// alone), candidate number `k`. Model, per part: the source keeps its
/// own cost plus the hash; each replica task runs 1/n of the rest (the
/// replicated elements and the whole elements they push into), replica
/// r on thread r, behind a new queue from the source.
#[allow(clippy::too_many_arguments)]
pub(crate) fn flow_candidate(
    gr: &Graph,
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    mut parts: Vec<FlowSplit>,
    names: &[Option<String>],
    k: usize,
) -> Candidate {
    let mut d = Draft::new(app, names);
    let many = parts.len() > 1;
    let mut srcs = Vec::new();
    for (i, p) in parts.iter_mut().enumerate() {
        p.tag = if many {
            format!("{k}p{i}")
        } else {
            k.to_string()
        };
        srcs.push(flow_apply(gr, app, &mut d, p, n));
    }
    let name = match parts.as_slice() {
        [p] => format!(
            "flow split after {} into {n} (HashSwitch({}, {}))",
            srcs[0], p.offset, p.len
        ),
        _ => format!(
            "flow split after each of {} into {n} (HashSwitch)",
            srcs.join(", ")
        ),
    };
    let base_queues = app.queues.len();
    let rewrite = Rewrite::Split {
        parts: parts.into_iter().map(Part::Flow).collect(),
    };
    Candidate::split(name, rewrite, d, base_queues, m, n, w)
}

/// One source's flow split `p` (its tag set) in the model `a2`: the
/// source keeps its own cost plus the hash; each replica task runs 1/n
/// of the rest, replica r pinned to thread r (in `fixed`). The source's
/// name.
pub(crate) fn flow_apply(gr: &Graph, app: &App, d: &mut Draft, p: &FlowSplit, n: usize) -> String {
    let t = p.task;
    let s = gr.task_elem[t].unwrap_or(0);
    let first = gr.g.connections[gr.out[s][0]].to;
    let total = app.tasks[t].cycles_per_packet;
    let own = gr.cost[s].min(total);
    let f = if gr.frac[first] > 0.0 {
        gr.frac[first]
    } else {
        1.0
    };
    d.a2.tasks[t].cycles_per_packet = own + HASH_CYCLES * f;
    let base = d.a2.tasks.len();
    let tag = &p.tag;
    for r in 0..n {
        let uname = format!("par_u{tag}_{r}");
        d.a2.tasks.push(AppTask {
            name: uname.clone(),
            cycles_per_packet: (total - own) / n as f64,
            entry: false,
            packets: app.tasks[t].packets * f / n as f64,
            crossing_factor: 0.0,
            pass_cycles_per_packet: 0.0,
            pass_mates: 0.0,
        });
        d.tn.push(Some(uname));
        d.a2.queues.push(AppQueue {
            name: format!("par_q{tag}_{r}"),
            producers: vec![(t, f / n as f64)],
            consumers: vec![(base + r, f / n as f64)],
            batch: BURST as f64,
            line_growth: new_queue_term(gr, app, t, &p.set),
        });
    }
    share_producer(&mut d.a2.queues[..app.queues.len()], t, n, |r| base + r);
    d.fixed.extend((0..n).map(|r| (base + r, r)));
    gr.g.elements[s].name.clone()
}
