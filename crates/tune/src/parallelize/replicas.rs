//! What flow splits, device fanouts and scheduler replication share:
//! copying a task into the model, and finding what may be replicated and
//! where the replicas merge.

use super::*;

/// Task `t` of `app` run as `n` copies in `a2`: itself and `NAME_rR`
/// (named in `tn` too), each with 1/n of its cycles and packets. Returns
/// the task index of copy r.
pub(crate) fn copy_task(
    a2: &mut App,
    app: &App,
    t: usize,
    n: usize,
    name: &str,
    tn: &mut Vec<Option<String>>,
) -> impl Fn(usize) -> usize + Copy {
    a2.tasks[t].cycles_per_packet = app.tasks[t].cycles_per_packet / n as f64;
    a2.tasks[t].packets = app.tasks[t].packets / n as f64;
    let base = a2.tasks.len();
    for r in 1..n {
        let mut rt = a2.tasks[t].clone();
        rt.name = format!("{name}_r{r}");
        a2.tasks.push(rt);
        tn.push(Some(format!("{name}_r{r}")));
    }
    move |r: usize| if r == 0 { t } else { base + r - 1 }
}

/// Task `t`'s part as producer of `queues` shared equally among its `n`
/// replicas, `rep(r)` each.
pub(crate) fn share_producer(
    queues: &mut [AppQueue],
    t: usize,
    n: usize,
    rep: impl Fn(usize) -> usize,
) {
    for q in queues {
        let mut np = Vec::new();
        for &(p, x) in &q.producers {
            if p == t {
                np.extend((0..n).map(|r| (rep(r), x / n as f64)));
            } else {
                np.push((p, x));
            }
        }
        q.producers = np;
    }
}

/// The largest single-entry set of replicable elements of task `t`'s
/// path after element `from` (a flow split's source, a scheduler
/// replication's puller): each is reached only from `from` or the set.
pub(crate) fn replicable_after(gr: &Graph, t: usize, from: usize) -> HashSet<usize> {
    let mut rep: HashSet<usize> = gr.task_set[t]
        .iter()
        .copied()
        .filter(|&x| x != from && replicable_el(&gr.g.elements[x]).is_ok())
        .collect();
    loop {
        let bad: Vec<usize> = rep
            .iter()
            .copied()
            .filter(|&x| {
                gr.inc[x].iter().any(|&c| {
                    let f = gr.g.connections[c].from;
                    f != from && !rep.contains(&f)
                }) || !gr.inc[x].iter().any(|&c| {
                    let f = gr.g.connections[c].from;
                    f == from || rep.contains(&f)
                })
            })
            .collect();
        if bad.is_empty() {
            return rep;
        }
        for b in bad {
            rep.remove(&b);
        }
    }
}

/// Where the replicas of `set` merge (the elements `merges` takes among
/// those the set pushes into), kept whole: "name (class): why".
pub(crate) fn merge_points(
    gr: &Graph,
    set: &HashSet<usize>,
    merges: impl Fn(usize) -> bool,
) -> Vec<String> {
    let mut merge: Vec<String> = Vec::new();
    let mut xs: Vec<usize> = set.iter().copied().collect();
    xs.sort();
    for x in xs {
        for &c in &gr.out[x] {
            let to = gr.g.connections[c].to;
            if merges(to) {
                let e = &gr.g.elements[to];
                let why = replicable_el(e)
                    .err()
                    .unwrap_or_else(|| "also reached from elsewhere".into());
                let line = format!("{} ({}): {}", e.name, e.class, why);
                if !merge.contains(&line) {
                    merge.push(line);
                }
            }
        }
    }
    merge
}
