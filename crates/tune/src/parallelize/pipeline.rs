//! Pipeline split: a queue and an Unqueue inserted inside a task's push
//! path, the part after it on another thread.

use super::*;

impl Search<'_> {
    /// Per task, the pipeline split that best balances it (appended to
    /// `cands`: the new Unqueue is named after its candidate's index).
    pub(crate) fn pipeline_splits(&self, cands: &mut Vec<Candidate>, notes: &mut Vec<String>) {
        let (gr, app, m, n, w) = (self.gr, self.app, self.m, self.n, self.w);
        let names = self.names.as_slice();
        // Pipeline splits: per task, the connection that best balances,
        // among those only this task runs: a queue inserted where the paths
        // of several tasks have merged (after an IP router's routing table,
        // say) would take the rest of every one of them, which a split of
        // one task does not model (and each task's split would be the same
        // rewrite twice).
        let mut runs = vec![0usize; gr.g.elements.len()];
        for set in &gr.task_set {
            for &x in set {
                runs[x] += 1;
            }
        }
        for (t, set) in gr.task_set.iter().enumerate() {
            // A pull path (a sink's task) is not split here.
            let Some(head) = gr.task_elem[t].filter(|&h| !gr.out[h].is_empty()) else {
                continue;
            };
            // A task that pulls (an Unqueue) does not wait for room as a
            // source does (`InitCx::wait_for_room`): when a queue after it is
            // full it keeps pulling, and the queue drops. The configuration's
            // own queue before it, fed by sources that wait, drops nothing
            // when its puller stalls. So a split here would add loss the
            // configuration does not have: firewall-pipeline's `fw[0] -> cl`
            // split dropped 6-47 K packets a run at 3 Mpps, and measured 1.1-
            // 18.5 M loss-free where round-robin measured 11.6 M.
            if !gr.inc[head].is_empty() {
                notes.push(format!(
                    "{}: no pipeline split: its task pulls ({}), and a puller does not wait \
                     for room as a source does, so a queue after it would drop packets the \
                     configuration does not",
                    gr.g.elements[head].name, gr.g.elements[head].class
                ));
                continue;
            }
            let Some((conn, d)) = best_cut(gr, app, t, set, &runs) else {
                continue;
            };
            let mut dr = Draft::new(app, names);
            let uname = format!("par_u{}", cands.len());
            let nt = pipeline_apply(gr, app, &mut dr, t, conn, &d, &uname);
            let part = Part::Pipeline {
                task: t,
                conn,
                down: d,
                name: uname,
            };
            // The Unqueue on another thread than the task it splits.
            dr.fixed = vec![(t, 0), (nt, 1)];
            let base_queues = app.queues.len();
            cands.push(Candidate::split(
                pipeline_name(gr, conn),
                Rewrite::Split { parts: vec![part] },
                dr,
                base_queues,
                m,
                n,
                w,
            ));
        }
    }
}

/// Task `t`'s connection (among those inside its path `set` from an
/// element only it runs, `runs` per element) whose downstream part best
/// halves the task's cost: the connection and that part.
pub(crate) fn best_cut(
    gr: &Graph,
    app: &App,
    t: usize,
    set: &[usize],
    runs: &[usize],
) -> Option<(usize, Vec<usize>)> {
    let total = app.tasks[t].cycles_per_packet;
    let mut best: Option<(usize, f64, Vec<usize>)> = None;
    for &x in set.iter().filter(|&&x| runs[x] == 1) {
        for &c in &gr.out[x] {
            let to = gr.g.connections[c].to;
            if !set.contains(&to) || Some(to) == gr.task_elem[t] {
                continue;
            }
            let d = downstream(gr, t, to);
            let down: f64 = d.iter().map(|&e| gr.cost[e]).sum();
            let imbalance = (total - 2.0 * down).abs();
            if best.as_ref().is_none_or(|b| imbalance < b.1) {
                best = Some((c, imbalance, d));
            }
        }
    }
    best.map(|(c, _, d)| (c, d))
}

pub(crate) fn downstream(gr: &Graph, task: usize, from: usize) -> Vec<usize> {
    let set: HashSet<usize> = gr.task_set[task].iter().copied().collect();
    let mut seen = HashSet::new();
    let mut stack = vec![from];
    let mut v = Vec::new();
    while let Some(x) = stack.pop() {
        if !set.contains(&x) || !seen.insert(x) {
            continue;
        }
        v.push(x);
        for &c in &gr.out[x] {
            stack.push(gr.g.connections[c].to);
        }
    }
    v
}

/// `pipeline split FROM[P] -> [Q]TO` for connection `conn`.
pub(crate) fn pipeline_name(gr: &Graph, conn: usize) -> String {
    let c = &gr.g.connections[conn];
    format!(
        "pipeline split {}[{}] -> [{}]{}",
        gr.g.elements[c.from].name, c.from_port, c.to_port, gr.g.elements[c.to].name
    )
}

/// Task `t`'s pipeline split at connection `conn` in the model `a2` (the
/// profile's `app` with other parts applied): the elements `d` after it
/// move to a new task `uname`, fed by a new queue; the task index of the
/// new task.
pub(crate) fn pipeline_apply(
    gr: &Graph,
    app: &App,
    dr: &mut Draft,
    t: usize,
    conn: usize,
    d: &[usize],
    uname: &str,
) -> usize {
    let down: f64 = d.iter().map(|&e| gr.cost[e]).sum();
    let to = gr.g.connections[conn].to;
    let f = if gr.frac[to] > 0.0 { gr.frac[to] } else { 1.0 };
    dr.a2.tasks[t].cycles_per_packet = (dr.a2.tasks[t].cycles_per_packet - down).max(0.0);
    let nt = dr.a2.tasks.len();
    dr.a2.tasks.push(AppTask {
        name: uname.to_string(),
        cycles_per_packet: down,
        entry: false,
        packets: app.tasks[t].packets * f,
        crossing_factor: 0.0,
        pass_cycles_per_packet: 0.0,
        pass_mates: 0.0,
    });
    for q in queues_fed(gr, app, d) {
        for p in &mut dr.a2.queues[q].producers {
            if p.0 == t {
                p.0 = nt;
            }
        }
    }
    dr.a2.queues.push(AppQueue {
        name: uname.replacen("par_u", "par_q", 1),
        producers: vec![(t, f)],
        consumers: vec![(nt, f)],
        batch: BURST as f64,
        line_growth: new_queue_term(gr, app, t, d),
    });
    dr.tn.push(Some(uname.to_string()));
    nt
}

/// Queues fed from inside `elems`.
pub(crate) fn queues_fed(gr: &Graph, app: &App, elems: &[usize]) -> Vec<usize> {
    let mut qs = Vec::new();
    for &x in elems {
        for &c in &gr.out[x] {
            let to = &gr.g.elements[gr.g.connections[c].to];
            if is_queue(&to.class) {
                if let Some(q) = app.queues.iter().position(|q| q.name == to.name) {
                    if !qs.contains(&q) {
                        qs.push(q);
                    }
                }
            }
        }
    }
    qs
}

/// The estimated line term of a queue a split adds after task `t`'s
/// producer part, its consumer side running `after` (until measured:
/// [`measure_splits`]). The consumer, as for a configuration's own
/// unmeasured queues (`profile::profile_app`): the calibration
/// chain's growth plus [`DATA_LINES_PER_PACKET`] when an element after
/// the crossing reads the packet's data. The producer: where `t` is a
/// source whose crossings through the configuration's own queues were
/// measured (to consumers that read packet data as this one's do, or
/// that do not as it does not), the median of those figures: what it
/// pays per crossing packet for buffers that come back from the other
/// core depends on the lines the other core read of them, not on the
/// queue they crossed. Else the chain's.
pub fn new_queue_term(gr: &Graph, app: &App, t: usize, after: &[usize]) -> LineTerm {
    let reads = after.iter().any(|&e| gr.reads[e]);
    let mut fed: Vec<f64> = app
        .queues
        .iter()
        .filter(|q| q.producers.iter().any(|p| p.0 == t))
        .filter(|q| (q.line_growth.consumer_data > 0.0) == reads)
        .filter_map(|q| q.line_growth.producer)
        .collect();
    let producer = (!fed.is_empty()).then(|| crate::stats::median(&mut fed));
    LineTerm {
        producer,
        consumer: None,
        consumer_data: if reads { DATA_LINES_PER_PACKET } else { 0.0 },
        spread: None,
    }
}
