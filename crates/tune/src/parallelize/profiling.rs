//! The planner's profile: per-element costs of one run, and the
//! application model of a configuration.

use super::*;

/// Per-element costs from one profiled single-thread run: (cycles per
/// entering packet, packets per entering packet).
pub fn profile_elements(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    secs: f64,
) -> Result<HashMap<String, (f64, f64)>, String> {
    let r = profile::build(src, reg, defines, 1, SchedPolicy::Static, true, false)?;
    profile::run_for(&r, secs);
    let cd = r.cost_data();
    let entries = profile::entry_tasks(&cd);
    let entry: f64 = entries.iter().map(|&t| cd.tasks[t].packets as f64).sum();
    if entry <= 0.0 {
        return Err("no packets entered during the profile run".into());
    }
    Ok(cd
        .elements
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                (e.cycles as f64 / entry, e.packets as f64 / entry),
            )
        })
        .collect())
}

/// An application model without running anything: every task costs the
/// number of elements its path runs (for tests and when the profile
/// cannot run).
pub fn static_app(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
) -> Result<App, String> {
    let r = profile::build(src, reg, defines, 1, SchedPolicy::Static, true, true)?;
    let cd = r.cost_data();
    let tasks = cd
        .tasks
        .iter()
        .map(|t| AppTask {
            name: if t.index > 0 {
                format!("{}[{}]", t.element, t.index)
            } else {
                t.element.clone()
            },
            cycles_per_packet: 0.0,
            entry: false,
            packets: 0.0,
            crossing_factor: 0.0,
            pass_cycles_per_packet: 0.0,
            pass_mates: 0.0,
        })
        .collect();
    let queues = cd
        .elements
        .iter()
        .filter(|e| e.is_queue)
        .map(|e| AppQueue {
            name: e.name.clone(),
            producers: e.push_tasks.iter().map(|&t| (t, 1.0)).collect(),
            consumers: e.pull_tasks.iter().map(|&t| (t, 1.0)).collect(),
            batch: 1.0,
            line_growth: Default::default(),
        })
        .collect();
    Ok(App {
        name: src.name.clone(),
        tasks,
        queues,
        packet_bytes: 64.0,
        tsc_ghz: cd.hz / 1e9,
        core_share: 1.0,
        free_sources: false,
    })
}

/// Sets each task's cost to 100 cycles per element of its path (a
/// stand-in when no profile is available).
pub fn uniform_costs(gr: &mut Graph, app: &mut App) {
    for (t, set) in gr.task_set.iter().enumerate() {
        app.tasks[t].cycles_per_packet = 100.0 * set.len().max(1) as f64;
        for &x in set {
            gr.cost[x] = 100.0;
            gr.frac[x] = 1.0;
        }
    }
}
