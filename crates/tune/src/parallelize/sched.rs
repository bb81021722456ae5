//! Scheduler replication: a rate-less scheduler, its queues and its
//! puller replicated per flow group (SMP Click's replicated QoS).

use super::*;

impl Search<'_> {
    /// Each rate-less scheduler's replication alone, then every one's at
    /// once.
    pub(crate) fn scheduler_replications(
        &self,
        cands: &mut Vec<Candidate>,
        notes: &mut Vec<String>,
    ) {
        let (gr, app, m, n, w) = (self.gr, self.app, self.m, self.n, self.w);
        let names = self.names.as_slice();
        // Schedulers replicated per flow group.
        let mut scheds: Vec<(usize, SchedSplit)> = Vec::new();
        for t in 0..gr.task_elem.len() {
            match sched_split(gr, app, t) {
                Ok(None) => {}
                Err(why) => notes.push(why),
                Ok(Some(sp)) => {
                    notes.push(format!(
                        "{}: scheduler replication copies {} element(s); kept whole where the replicas merge: {}",
                        sp.sched,
                        sp.set.len(),
                        if sp.merge.is_empty() {
                            "none".to_string()
                        } else {
                            sp.merge.join("; ")
                        }
                    ));
                    scheds.push((t, sp));
                }
            }
        }
        // Each scheduler's replication alone, then every one's at once.
        let mut groups: Vec<Vec<(usize, SchedSplit)>> =
            scheds.iter().map(|p| vec![p.clone()]).collect();
        if scheds.len() > 1 {
            groups.push(scheds);
        }
        for group in groups {
            cands.push(sched_candidate(gr, app, m, n, w, group, names));
        }
    }
}

/// What a scheduler replication of puller task `t` replicates.
#[derive(Clone, Debug)]
pub struct SchedSplit {
    /// The elements replicated: the queues, the pull path between them
    /// and the puller, the puller, the replicable elements after it.
    pub set: Vec<usize>,
    /// The queues (each gets a HashSwitch in front).
    pub queues: Vec<usize>,
    /// The HashSwitch's offset and length: the IP addresses and ports
    /// of the packets as they enter the queues.
    pub offset: usize,
    pub len: usize,
    /// The scheduler's name, and where the replicas merge.
    pub sched: String,
    pub merge: Vec<String>,
}

/// Whether puller task `t` heads a scheduler that may be replicated per
/// flow group: an Unqueue whose pull path is schedulers fed only by
/// queues that only it drains. Ok(None) where `t` is no such puller at
/// all (nothing to say), Err with the reason where it is one that may
/// not be replicated.
pub fn sched_split(gr: &Graph, app: &App, t: usize) -> Result<Option<SchedSplit>, String> {
    let Some(u) = gr.task_elem[t] else {
        return Ok(None);
    };
    let ue = &gr.g.elements[u];
    // The pull path: from the puller back to its queues.
    let mut pull = Vec::new();
    let mut queues = Vec::new();
    let mut stack: Vec<usize> = gr.inc[u]
        .iter()
        .map(|&c| gr.g.connections[c].from)
        .collect();
    let mut seen = HashSet::new();
    let mut other = None;
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        let cls = &gr.g.elements[x].class;
        if is_queue(cls) {
            queues.push(x);
        } else {
            if replicable_with_queues(cls) {
                pull.push(x);
            } else if other.is_none() {
                other = Some(x);
            }
            stack.extend(gr.inc[x].iter().map(|&c| gr.g.connections[c].from));
        }
    }
    if pull.is_empty() {
        return Ok(None);
    }
    let sched = gr.g.elements[pull[0]].name.clone();
    let no = |why: String| Err(format!("{sched}: no scheduler replication: {why}"));
    if let Some(x) = other {
        let e = &gr.g.elements[x];
        return no(format!(
            "its pull path has {} ({}): {}",
            e.name,
            e.class,
            replicable_el(e)
                .err()
                .unwrap_or_else(|| "not a scheduler".into())
        ));
    }
    if !replicable_with_queues(&ue.class) {
        return no(format!(
            "its puller {} ({}) may not be copied with its queues (a rate would have to be shared out)",
            ue.name, ue.class
        ));
    }
    let inpull: HashSet<usize> = pull.iter().chain(&queues).copied().chain([u]).collect();
    // Each queue and scheduler feeds only this pull path.
    for &x in pull.iter().chain(&queues) {
        for &c in &gr.out[x] {
            let to = gr.g.connections[c].to;
            if !inpull.contains(&to) {
                return no(format!(
                    "{} also feeds {}",
                    gr.g.elements[x].name, gr.g.elements[to].name
                ));
            }
        }
    }
    // The queues' producers are hashed: the packets must be IP at a
    // known offset.
    let mut off = None;
    for &q in &queues {
        match ip_offset(gr, q) {
            Some(o) if off.is_none_or(|x| x == o) => off = Some(o),
            _ => {
                return no(format!(
                    "where the IP header starts in {}'s packets is not known",
                    gr.g.elements[q].name
                ))
            }
        }
    }
    let Some(ip) = off else { return Ok(None) };
    if !queues
        .iter()
        .all(|&q| app.queues.iter().any(|aq| aq.name == gr.g.elements[q].name))
    {
        return Ok(None);
    }
    // After the puller: the largest single-entry set of replicable
    // elements of its push path, as a flow split's.
    let down = replicable_after(gr, t, u);
    let mut set: Vec<usize> = inpull.into_iter().chain(down.iter().copied()).collect();
    set.sort();
    let inset: HashSet<usize> = set.iter().copied().collect();
    let merge = merge_points(gr, &inset, |to| !inset.contains(&to));
    if let Some(why) = sequenced(gr, t, &down) {
        return no(why);
    }
    queues.sort();
    Ok(Some(SchedSplit {
        set,
        queues,
        offset: ip + 12,
        len: 12,
        sched,
        merge,
    }))
}

/// The candidate of scheduler replication `sp` of puller task `t` into
/// `n` replicas, replica r's puller on thread r. Model: each producer
/// into the queues pays the hash; the puller's task (its pull path and
/// what it pushes through) runs 1/n of its packets in each replica; each
/// queue is n queues, their line terms the original's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sched_candidate(
    gr: &Graph,
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    parts: Vec<(usize, SchedSplit)>,
    names: &[Option<String>],
) -> Candidate {
    let mut d = Draft::new(app, names);
    let mut what = Vec::new();
    for (t, sp) in &parts {
        what.push(sched_apply(gr, app, &mut d, *t, sp, n));
    }
    let name = match what.as_slice() {
        [(sched, offset, len, qs)] => {
            format!(
                "scheduler {sched} replicated into {n} (HashSwitch({offset}, {len}) before {qs})"
            )
        }
        _ => format!(
            "schedulers {} each replicated into {n} (HashSwitch before their queues)",
            what.iter()
                .map(|x| x.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let rewrite = Rewrite::Split {
        parts: parts
            .into_iter()
            .map(|(t, sp)| Part::Sched(t, sp))
            .collect(),
    };
    Candidate::split(name, rewrite, d, app.queues.len(), m, n, w)
}

/// Puller task `t`'s scheduler replication `sp` in the model `a2`: the
/// producers into its queues pay the hash, `n` copies of the puller's
/// task (copy r pinned to thread r, in `fixed`) each drain their share
/// of replicas of the queues. What the name shows: the scheduler, the
/// HashSwitch's offset and length, the queues.
pub(crate) fn sched_apply(
    gr: &Graph,
    app: &App,
    d: &mut Draft,
    t: usize,
    sp: &SchedSplit,
    n: usize,
) -> (String, usize, usize, String) {
    let u = gr.task_elem[t].unwrap_or(0);
    let uname = gr.g.elements[u].name.clone();
    let qidx: Vec<usize> = sp
        .queues
        .iter()
        .filter_map(|&q| {
            app.queues
                .iter()
                .position(|aq| aq.name == gr.g.elements[q].name)
        })
        .collect();
    for &qi in &qidx {
        for &(p, x) in &app.queues[qi].producers {
            if let Some(tp) = d.a2.tasks.get_mut(p) {
                tp.cycles_per_packet += HASH_CYCLES * x;
            }
        }
    }
    let rep = copy_task(&mut d.a2, app, t, n, &uname, &mut d.tn);
    for &qi in &qidx {
        let q = app.queues[qi].clone();
        let share = |v: &[(usize, f64)], r: usize, cons: bool| -> Vec<(usize, f64)> {
            v.iter()
                .map(|&(x, y)| (if cons && x == t { rep(r) } else { x }, y / n as f64))
                .collect()
        };
        d.a2.queues[qi].producers = share(&q.producers, 0, false);
        d.a2.queues[qi].consumers = share(&q.consumers, 0, true);
        for r in 1..n {
            d.a2.queues.push(AppQueue {
                name: format!("{}_r{r}", q.name),
                producers: share(&q.producers, r, false),
                consumers: share(&q.consumers, r, true),
                ..q.clone()
            });
        }
    }
    // Queues the puller's push path feeds: each replica feeds its share.
    share_producer(&mut d.a2.queues[..app.queues.len()], t, n, rep);
    d.fixed.extend((0..n).map(|r| (rep(r), r)));
    let qnames: Vec<&str> = sp
        .queues
        .iter()
        .map(|&q| gr.g.elements[q].name.as_str())
        .collect();
    (sp.sched.clone(), sp.offset, sp.len, qnames.join(", "))
}
