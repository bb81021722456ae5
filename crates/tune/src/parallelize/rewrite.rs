//! The rewrite: the configuration a candidate stands for.

use super::*;

/// The rewritten configuration of candidate `c`.
pub fn rewrite(gr: &Graph, c: &Candidate, n: usize) -> FlatGraph {
    let mut g = gr.g.clone();
    for part in c.rewrite.parts() {
        rewrite_part(&mut g, gr, part, n);
    }
    let conn = |from: usize, fp: usize, tp: usize, to: usize| link(gr, from, fp, tp, to);
    // Placement: drop the configuration's own StaticThreadScheds, pin
    // every task by name.
    let pins = pins(c, n);
    let keep: Vec<bool> = g.elements.iter().map(|e| !places_tasks(&e.class)).collect();
    let mut newidx = vec![usize::MAX; g.elements.len()];
    let mut elements = Vec::new();
    for (i, e) in g.elements.iter().enumerate() {
        if keep[i] {
            newidx[i] = elements.len();
            elements.push(e.clone());
        }
    }
    let connections = g
        .connections
        .iter()
        .filter(|c| keep[c.from] && keep[c.to])
        .map(|c| conn(newidx[c.from], c.from_port, c.to_port, newidx[c.to]))
        .collect();
    g.elements = elements;
    g.connections = connections;
    if !pins.is_empty() {
        add_element(
            &mut g,
            "par_sched".into(),
            "StaticThreadSched",
            pins.join(", "),
        );
    }
    g
}

/// Whether `class` places other elements' tasks on threads, as
/// StaticThreadSched does (a plan's placement replaces it): the class
/// says so ([`paraclick_runtime::Kind::ThreadSched`]).
pub(crate) fn places_tasks(class: &str) -> bool {
    class_kind(class) == Some(paraclick_runtime::Kind::ThreadSched)
}

/// The StaticThreadSched arguments that pin candidate `c`'s tasks
/// (`NAME THREAD`, each task by its element's name).
pub(crate) fn pins(c: &Candidate, n: usize) -> Vec<String> {
    c.task_names
        .iter()
        .zip(&c.assign)
        .filter_map(|(nm, &th)| nm.as_ref().map(|nm| format!("{nm} {}", th % n.max(1))))
        .collect()
}

/// Placement candidate `c` written as the user's own text: `text` as it
/// is (defines, compounds and comments kept) and, unless `handoff`, one
/// StaticThreadSched line pinning the tasks by the names they have when
/// `text` is read again. None where the text cannot carry the placement:
/// `c` changes the graph, the configuration has StaticThreadScheds of its
/// own (which the placement replaces) or an element named `par_sched`,
/// or it requires files (a library found relative to where it is read).
pub fn placement_text(
    text: &str,
    gr: &Graph,
    c: &Candidate,
    n: usize,
    handoff: bool,
) -> Option<String> {
    if !matches!(c.rewrite, Rewrite::Place)
        || gr
            .g
            .elements
            .iter()
            .any(|e| places_tasks(&e.class) || e.name == "par_sched")
        || !gr.g.requirements.is_empty()
        || text.contains("require(")
    {
        return None;
    }
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let pins = pins(c, n);
    if !handoff && !pins.is_empty() {
        let _ = write!(
            out,
            "\n// paraclick parallelize -j {n}: {}\npar_sched :: StaticThreadSched({});\n",
            c.name,
            pins.join(", ")
        );
    }
    Some(out)
}

/// A connection `from[fp] -> [tp]to` (placed where `gr`'s first element
/// is, for error messages).
pub(crate) fn link(gr: &Graph, from: usize, fp: usize, tp: usize, to: usize) -> FlatConnection {
    FlatConnection {
        from,
        from_port: fp,
        to,
        to_port: tp,
        span: gr.g.elements[0].span.clone(),
    }
}

/// Adds an element (configured as `config`) to `g`; its index.
pub(crate) fn add_element(g: &mut FlatGraph, name: String, class: &str, config: String) -> usize {
    let span = g.elements[0].span.clone();
    g.elements.push(FlatElement {
        name,
        class: class.into(),
        config,
        span,
        anonymous: false,
    });
    g.elements.len() - 1
}

/// Part `part` of a rewrite applied to `g` (`gr`'s graph with other
/// parts applied: each part adds elements after the original ones and
/// changes only its own connections).
pub(crate) fn rewrite_part(g: &mut FlatGraph, gr: &Graph, part: &Part, n: usize) {
    let add = add_element;
    let conn = |from: usize, fp: usize, tp: usize, to: usize| link(gr, from, fp, tp, to);
    match part {
        Part::Pipeline {
            conn: ci,
            name: uname,
            ..
        } => {
            let qname = uname.replacen("par_u", "par_q", 1);
            let old = g.connections[*ci].clone();
            let q = add(g, qname, "Queue", QUEUE_CAP.to_string());
            let u = add(g, uname.clone(), "Unqueue", format!("BURST {BURST}"));
            g.connections[*ci] = conn(old.from, old.from_port, 0, q);
            g.connections.push(conn(q, 0, 0, u));
            g.connections.push(conn(u, 0, old.to_port, old.to));
        }
        Part::Flow(p) => {
            let s = gr.task_elem[p.task].unwrap_or(0);
            let tag = &p.tag;
            let hs = add(
                g,
                format!("par_hs{tag}"),
                "HashSwitch",
                format!("{}, {}", p.offset, p.len),
            );
            let first_conn = gr.out[s][0];
            let old = g.connections[first_conn].clone();
            g.connections[first_conn] = conn(s, old.from_port, 0, hs);
            let rep_of = replicate(g, gr, &p.set, n);
            for (r, map) in rep_of.iter().enumerate() {
                let q = add(g, format!("par_q{tag}_{r}"), "Queue", QUEUE_CAP.to_string());
                let ue = add(
                    g,
                    format!("par_u{tag}_{r}"),
                    "Unqueue",
                    format!("BURST {BURST}"),
                );
                g.connections.push(conn(hs, r, 0, q));
                g.connections.push(conn(q, 0, 0, ue));
                g.connections.push(conn(ue, 0, old.to_port, map[&old.to]));
            }
        }
        Part::Sched(
            _,
            SchedSplit {
                set,
                queues,
                offset,
                len,
                ..
            },
        ) => {
            let inset: HashSet<usize> = set.iter().copied().collect();
            for &q in queues {
                g.elements[q].config = share_capacity(&gr.g.elements[q].config, n);
            }
            let rep_of = replicate(g, gr, set, n);
            // A HashSwitch in front of each queue: what entered it from
            // outside now enters the HashSwitch, output r to replica r.
            for &q in queues {
                let hs = add(
                    g,
                    format!("par_hs_{}", gr.g.elements[q].name.replace('/', "_")),
                    "HashSwitch",
                    format!("{offset}, {len}"),
                );
                for &ci in &gr.inc[q] {
                    if !inset.contains(&gr.g.connections[ci].from) {
                        let old = g.connections[ci].clone();
                        g.connections[ci] = conn(old.from, old.from_port, 0, hs);
                    }
                }
                for (r, map) in rep_of.iter().enumerate().take(n) {
                    g.connections.push(conn(hs, r, 0, map[&q]));
                }
            }
        }
        Part::Fanout(_, set) => {
            let s = set[0];
            let rep_of = replicate(g, gr, set, n);
            // The original reports for every queue under its name.
            let copies: Vec<String> = rep_of[1..]
                .iter()
                .map(|m| g.elements[m[&s]].name.clone())
                .collect();
            for (r, map) in rep_of.iter().enumerate() {
                if let Ok(mut cfg) = fanout_config(&gr.g.elements[s].config, r, n) {
                    if r == 0 && !copies.is_empty() {
                        cfg.push_str(&format!(", REPLICAS {}", copies.join(" ")));
                    }
                    g.elements[map[&s]].config = cfg;
                }
            }
        }
    }
}

/// Replicas 1..n of the elements of `set` in `g` (named `NAME_rR`, as
/// configured in `g`), with the connections out of each element of the
/// set copied for each replica (to the replica where they stay in the
/// set, else to the same element: where the replicas merge). Per replica
/// r, the element standing for each of `set`'s: itself for r = 0.
pub(crate) fn replicate(
    g: &mut FlatGraph,
    gr: &Graph,
    set: &[usize],
    n: usize,
) -> Vec<HashMap<usize, usize>> {
    let span = gr.g.elements[0].span.clone();
    let inset: HashSet<usize> = set.iter().copied().collect();
    let mut rep_of: Vec<HashMap<usize, usize>> = vec![HashMap::new(); n];
    for (r, map) in rep_of.iter_mut().enumerate() {
        for &x in set {
            if r == 0 {
                map.insert(x, x);
            } else {
                let e = g.elements[x].clone();
                g.elements.push(FlatElement {
                    name: format!("{}_r{r}", e.name),
                    class: e.class,
                    config: e.config,
                    span: span.clone(),
                    anonymous: false,
                });
                map.insert(x, g.elements.len() - 1);
            }
        }
    }
    // A replicated Counter's original reports the sums over its replicas
    // under its own name.
    if n > 1 {
        for &x in set {
            if !sums_replicas(&gr.g.elements[x].class) {
                continue;
            }
            let names: Vec<String> = rep_of[1..]
                .iter()
                .map(|m| g.elements[m[&x]].name.clone())
                .collect();
            let cfg = g.elements[x].config.trim().to_string();
            let add = format!("REPLICAS {}", names.join(" "));
            g.elements[x].config = if cfg.is_empty() {
                add
            } else {
                format!("{cfg}, {add}")
            };
        }
    }
    for cc in gr.g.connections.iter().filter(|c| inset.contains(&c.from)) {
        for map in rep_of.iter().skip(1) {
            let to = if inset.contains(&cc.to) {
                map[&cc.to]
            } else {
                cc.to
            };
            g.connections.push(FlatConnection {
                from: map[&cc.from],
                from_port: cc.from_port,
                to,
                to_port: cc.to_port,
                span: span.clone(),
            });
        }
    }
    rep_of
}

/// A queue's configuration with its capacity shared among `n` replicas
/// (rounded up): the replicas together hold what it held. Click's Queue
/// takes the capacity first or as CAPACITY; [`DEFAULT_CAPACITY`] when not
/// given.
pub fn share_capacity(config: &str, n: usize) -> String {
    let n = n.max(1);
    let share = |c: usize| c.div_ceil(n).max(1);
    let args: Vec<String> = paraclick_lang::args::split_args(config);
    let mut out = Vec::new();
    let mut done = false;
    for (i, a) in args.iter().enumerate() {
        let t = a.trim();
        let kw = t.strip_prefix("CAPACITY").map(str::trim);
        if let Some(Ok(c)) = kw.map(str::parse::<usize>) {
            out.push(format!("CAPACITY {}", share(c)));
            done = true;
        } else if let (0, Ok(c)) = (i, t.parse::<usize>()) {
            out.push(share(c).to_string());
            done = true;
        } else {
            out.push(t.to_string());
        }
    }
    if !done {
        out.insert(0, share(DEFAULT_CAPACITY).to_string());
    }
    out.retain(|a| !a.is_empty());
    out.join(", ")
}

/// The configuration written for the chosen candidate: pinned by its
/// placement, or with no StaticThreadSched at all on a `handoff` to the
/// adaptive scheduler (the configuration's own are dropped either way).
pub fn output_graph(gr: &Graph, plan: &Plan, n: usize, handoff: bool) -> FlatGraph {
    let c = &plan.candidates[plan.chosen];
    if handoff {
        let unpinned = Candidate {
            task_names: vec![None; c.task_names.len()],
            ..c.clone()
        };
        return rewrite(gr, &unpinned, n);
    }
    rewrite(gr, c, n)
}
