//! Device fanout: a FromDevice becomes N of one PACKET_FANOUT group, each
//! feeding its replica of the path.

use super::*;

impl Search<'_> {
    /// Each device's fanout alone, then every device's at once.
    pub(crate) fn device_fanouts(&self, cands: &mut Vec<Candidate>, notes: &mut Vec<String>) {
        let (gr, app, m, n, w) = (self.gr, self.app, self.m, self.n, self.w);
        let names = self.names.as_slice();
        // Flow splits by the devices' own receive queues: each device alone,
        // then every device at once.
        let mut parts: Vec<(usize, Vec<usize>)> = Vec::new();
        for (t, te) in gr.task_elem.iter().enumerate() {
            let Some(s) = *te else { continue };
            let el = &gr.g.elements[s];
            match fanout_part(gr, t, s) {
                Ok(None) => {}
                Err(why) => notes.push(format!("{}: no device fanout: {why}", el.name)),
                Ok(Some((set, merge))) => {
                    notes.push(format!(
                        "{}: device fanout replicates {} element(s) after it; kept whole where the replicas merge: {}; its handlers (count, drops, kernel_drops) sum its queues' (REPLICAS {}_r1..)",
                        el.name,
                        set.len() - 1,
                        if merge.is_empty() {
                            "none".to_string()
                        } else {
                            merge.join("; ")
                        },
                        el.name
                    ));
                    parts.push((t, set));
                }
            }
        }
        let mut groups: Vec<Vec<(usize, Vec<usize>)>> =
            parts.iter().map(|p| vec![p.clone()]).collect();
        if parts.len() > 1 {
            groups.push(parts);
        }
        for group in groups {
            cands.push(fanout_candidate(gr, app, m, n, w, group, names));
        }
    }
}

/// Whether source task `t` (element `s`) can be split by its device's
/// receive queues: an element whose class can read one queue of a
/// fanout group ([`fans_out`]: FromDevice), reading the whole device,
/// whose path has no element numbering or checking packets in sequence
/// (ESP), which
/// `n` threads would then feed. Its set (`s` first, then the replicable
/// elements after it) and where the replicas merge.
#[allow(clippy::type_complexity)]
pub(crate) fn fanout_part(
    gr: &Graph,
    t: usize,
    s: usize,
) -> Result<Option<(Vec<usize>, Vec<String>)>, String> {
    let el = &gr.g.elements[s];
    if !fans_out(&el.class) || !gr.inc[s].is_empty() || gr.out[s].is_empty() {
        return Ok(None);
    }
    fanout_config(&el.config, 0, 2)?;
    let rep = replicable_after(gr, t, s);
    let mut all = rep.clone();
    all.insert(s);
    let merge = merge_points(gr, &all, |to| !all.contains(&to));
    if let Some(why) = sequenced(gr, t, &rep) {
        return Err(why);
    }
    let mut set: Vec<usize> = rep.into_iter().collect();
    set.sort();
    set.insert(0, s);
    Ok(Some((set, merge)))
}

/// A FromDevice's configuration reading queue `r` of `n` of its device's
/// PACKET_FANOUT HASH group (the kernel deals each flow to one queue):
/// its QUEUE, N_QUEUES and FANOUT replaced. Refused where it already
/// reads one of several queues.
pub fn fanout_config(config: &str, r: usize, n: usize) -> Result<String, String> {
    let mut out = Vec::new();
    for a in paraclick_lang::args::split_args(config) {
        let t = a.trim();
        let (kw, val) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        match kw {
            "N_QUEUES" if val.trim() != "1" => {
                return Err(format!(
                    "it already reads one of N_QUEUES {} queues",
                    val.trim()
                ))
            }
            "N_QUEUES" | "QUEUE" | "FANOUT" | "REPLICAS" => {}
            _ if !t.is_empty() => out.push(t.to_string()),
            _ => {}
        }
    }
    out.push(format!("QUEUE {r}"));
    out.push(format!("N_QUEUES {n}"));
    out.push("FANOUT HASH".into());
    Ok(out.join(", "))
}

/// Where an element that `n` threads would feed after a split of task
/// `t`'s path (everything it reaches outside `rep`, the replicated
/// elements, kept whole: the merge points and what they push into)
/// numbers the packets of all flows in the order they leave (ESP's
/// sequence numbers, checked by the peer's replay window) or checks
/// them (a replay window): the threads' interleaving could move a number
/// further than the window and the peer would drop it (the VPN
/// semantics test found this at a merge point; vpn-gateway-veth's flow
/// splits fed `enc` through the shared routing table).
pub(crate) fn sequenced(gr: &Graph, t: usize, rep: &HashSet<usize>) -> Option<String> {
    gr.task_set[t]
        .iter()
        .filter(|x| !rep.contains(x) && Some(**x) != gr.task_elem[t])
        .find_map(|&x| {
            let e = &gr.g.elements[x];
            replicable_el(e)
                .err()
                .filter(|why| why.contains("sequence numbers") || why.contains("replay window"))
                .map(|why| format!("{} ({}): {why}", e.name, e.class))
        })
        .map(|bad| format!("the replicas' threads would all feed {bad}; packets could be numbered or checked out of sequence beyond a replay window"))
}

/// The candidate splitting each part's source by its device's queues:
/// the source task's cost and packets shared equally among it and its
/// `n - 1` copies (`NAME_rR`), replica r on thread r, and each queue it
/// fed fed by the replicas in equal shares. No queue is added and the
/// kernel hashes: the model charges nothing more.
pub(crate) fn fanout_candidate(
    gr: &Graph,
    app: &App,
    m: &Machine,
    n: usize,
    w: &WhatIf,
    parts: Vec<(usize, Vec<usize>)>,
    names: &[Option<String>],
) -> Candidate {
    let mut d = Draft::new(app, names);
    let mut srcs = Vec::new();
    for (t, _) in &parts {
        srcs.push(fanout_apply(gr, app, &mut d, *t, n));
    }
    let name = format!(
        "device fanout of {} into {n} (FromDevice QUEUE r of N_QUEUES {n})",
        srcs.join(", ")
    );
    let base_queues = app.queues.len();
    let rewrite = Rewrite::Split {
        parts: parts
            .into_iter()
            .map(|(t, set)| Part::Fanout(t, set))
            .collect(),
    };
    Candidate::split(name, rewrite, d, base_queues, m, n, w)
}

/// Source task `t`'s device fanout in the model `a2`: `n` copies of the
/// task, copy r pinned to thread r (in `fixed`). The source's name.
pub(crate) fn fanout_apply(gr: &Graph, app: &App, d: &mut Draft, t: usize, n: usize) -> String {
    let sname = gr.g.elements[gr.task_elem[t].unwrap_or(0)].name.clone();
    let rep = copy_task(&mut d.a2, app, t, n, &sname, &mut d.tn);
    share_producer(&mut d.a2.queues[..app.queues.len()], t, n, rep);
    d.fixed.extend((0..n).map(|r| (rep(r), r)));
    sname
}
