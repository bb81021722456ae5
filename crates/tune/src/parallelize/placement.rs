//! Placement: the model's best assignment of tasks to threads.

use super::*;

/// The placements of the configuration's own tasks: round-robin's (where
/// the adaptive scheduler starts) and the model's best.
pub(crate) fn placements(
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    names: &[Option<String>],
) -> Vec<Candidate> {
    let mut cands = Vec::new();
    let rr: Vec<usize> = (0..app.tasks.len()).map(|i| i % n).collect();
    cands.push(Candidate {
        name: "round-robin placement".into(),
        rewrite: Rewrite::Place,
        predicted: predict(app, m, &rr, n, w),
        floor: predict(app, m, &rr, n, w),
        base_queues: app.queues.len(),
        assign: rr,
        task_names: names.to_vec(),
        model: app.clone(),
        fixed: Vec::new(),
        rejected: false,
    });
    let (a, r) = best_placement(app, m, n, w);
    cands.push(Candidate {
        name: "placement".into(),
        rewrite: Rewrite::Place,
        assign: a,
        task_names: names.to_vec(),
        predicted: r,
        floor: r,
        base_queues: app.queues.len(),
        model: app.clone(),
        fixed: Vec::new(),
        rejected: false,
    });
    cands
}

/// What `paraclick model` predicts for the plan: sources that offer no
/// rate each run at their own thread's rate, as the harness measures them.
pub(crate) fn predict(app: &App, m: &Machine, assign: &[usize], n: usize, w: &WhatIf) -> f64 {
    app.predict(m, assign, n, w)
}

/// The best placement of `app`'s tasks the search finds, and its rate.
pub fn best_placement(app: &App, m: &Machine, n: usize, w: &WhatIf) -> (Vec<usize>, f64) {
    place_with(app, m, n, w, &[])
}

/// The best placement with some tasks fixed to threads: exhaustive when
/// small, else longest-first onto the least loaded thread and then single
/// moves while they raise the predicted rate.
pub fn place_with(
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    fixed: &[(usize, usize)],
) -> (Vec<usize>, f64) {
    let t = app.tasks.len();
    if t == 0 {
        return (Vec::new(), 0.0);
    }
    let is_fixed = |i: usize| fixed.iter().find(|f| f.0 == i).map(|f| f.1 % n);
    let free: Vec<usize> = (0..t).filter(|&i| is_fixed(i).is_none()).collect();
    // Without fixed tasks the threads are alike: the first task stays on
    // thread 0.
    let sym = usize::from(fixed.is_empty());
    let combos = (n as f64).powi(free.len().saturating_sub(sym) as i32);
    let mut a = vec![0usize; t];
    for &(i, th) in fixed {
        if i < t {
            a[i] = th % n;
        }
    }
    if combos <= 4096.0 {
        let mut best = (a.clone(), -1.0);
        let vary = &free[sym.min(free.len())..];
        loop {
            let r = predict(app, m, &a, n, w);
            if r > best.1 + 1e-6 {
                best = (a.clone(), r);
            }
            let mut k = 0;
            while k < vary.len() {
                a[vary[k]] += 1;
                if a[vary[k]] < n {
                    break;
                }
                a[vary[k]] = 0;
                k += 1;
            }
            if k >= vary.len() {
                break;
            }
        }
        return best;
    }
    let mut order = free.clone();
    order.sort_by(|&x, &y| {
        app.tasks[y]
            .cycles_per_packet
            .total_cmp(&app.tasks[x].cycles_per_packet)
    });
    let mut load = vec![0.0f64; n];
    for &(i, th) in fixed {
        if i < t {
            load[th % n] += app.tasks[i].cycles_per_packet;
        }
    }
    for i in order {
        let th = (0..n)
            .min_by(|&x, &y| load[x].total_cmp(&load[y]))
            .unwrap_or(0);
        a[i] = th;
        load[th] += app.tasks[i].cycles_per_packet;
    }
    let mut r = predict(app, m, &a, n, w);
    for _pass in 0..4 {
        let mut improved = false;
        for &i in &free {
            let keep = a[i];
            for th in 0..n {
                if th == keep {
                    continue;
                }
                a[i] = th;
                let r2 = predict(app, m, &a, n, w);
                if r2 > r * 1.0001 {
                    r = r2;
                    improved = true;
                    break;
                }
                a[i] = keep;
            }
        }
        if !improved {
            break;
        }
    }
    (a, r)
}
