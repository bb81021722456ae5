//! The configuration as the planner sees it: adjacency, tasks, and each
//! element's profiled cost.

use super::*;

/// The graph with its adjacency, tasks and per-element costs.
pub struct Graph {
    pub g: FlatGraph,
    pub out: Vec<Vec<usize>>, // connection indices
    pub inc: Vec<Vec<usize>>,
    /// Per App task: its element (None for a second task of an element).
    pub task_elem: Vec<Option<usize>>,
    /// Per App task: the elements its push (or pull) path runs.
    pub task_set: Vec<Vec<usize>>,
    /// Per element: cycles per packet entering the router.
    pub cost: Vec<f64>,
    /// Per element: packets through it per packet entering the router.
    pub frac: Vec<f64>,
    /// Per element: its class reads packet data ([`profile::reads_data`]).
    pub reads: Vec<bool>,
}

impl Graph {
    pub fn new(
        g: FlatGraph,
        app: &App,
        prof: &HashMap<String, (f64, f64)>,
        reg: &Registry,
    ) -> Graph {
        facts::learn_classes(reg);
        let n = g.elements.len();
        let reads = g
            .elements
            .iter()
            .map(|e| profile::reads_data(reg, &e.class))
            .collect();
        let mut out = vec![Vec::new(); n];
        let mut inc = vec![Vec::new(); n];
        for (i, c) in g.connections.iter().enumerate() {
            out[c.from].push(i);
            inc[c.to].push(i);
        }
        let task_elem: Vec<Option<usize>> = app
            .tasks
            .iter()
            .map(|t| {
                if t.name.ends_with(']') {
                    None
                } else {
                    g.find(&t.name)
                }
            })
            .collect();
        let mut task_set = Vec::new();
        for te in &task_elem {
            let mut set = Vec::new();
            if let Some(e) = *te {
                let sink = out[e].is_empty() && !inc[e].is_empty();
                let mut seen = HashSet::new();
                let mut stack = vec![e];
                while let Some(x) = stack.pop() {
                    if !seen.insert(x) {
                        continue;
                    }
                    set.push(x);
                    let next: Vec<usize> = if sink {
                        inc[x].iter().map(|&c| g.connections[c].from).collect()
                    } else {
                        out[x].iter().map(|&c| g.connections[c].to).collect()
                    };
                    for y in next {
                        if !is_queue(&g.elements[y].class) {
                            stack.push(y);
                        }
                    }
                }
            }
            task_set.push(set);
        }
        // Element costs: the profile's sampled cycles, scaled per task so
        // that they add up to the task's cost in the application model;
        // unprofiled elements share what is left equally.
        let mut cost = vec![0.0; n];
        let mut frac = vec![0.0; n];
        for (i, e) in g.elements.iter().enumerate() {
            if let Some(&(c, f)) = prof.get(&e.name) {
                cost[i] = c;
                frac[i] = f;
            }
        }
        let mut scaled = vec![false; n];
        for (t, set) in task_set.iter().enumerate() {
            let total: f64 = set.iter().filter(|&&x| !scaled[x]).map(|&x| cost[x]).sum();
            let own: Vec<usize> = set.iter().copied().filter(|&x| !scaled[x]).collect();
            let want = app.tasks[t].cycles_per_packet;
            for &x in &own {
                cost[x] = if total > 0.0 {
                    cost[x] * want / total
                } else {
                    want / own.len().max(1) as f64
                };
                scaled[x] = true;
            }
        }
        Graph {
            g,
            out,
            inc,
            task_elem,
            task_set,
            cost,
            frac,
            reads,
        }
    }
}
