//! Small statistics shared by the profile, the calibrations, the
//! validation and the planner: medians, and how to read the core-to-core
//! line timings taken around a measurement.

/// The median of `v` (sorted in place; 0 if empty).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Round trips of the quick core-to-core line timing taken next to a
/// measurement ([`paraclick_model::machine::line_ns_now`]).
pub const LINE_ROUNDS: u64 = 20_000;

/// The mean of the line times measured (None if none was).
pub fn mean_line(v: &[Option<f64>]) -> Option<f64> {
    let got: Vec<f64> = v.iter().flatten().copied().collect();
    (!got.is_empty()).then(|| got.iter().sum::<f64>() / got.len() as f64)
}

/// Whether two line timings taken around one run disagree by more than
/// half: the machine changed state during the run.
pub fn changed_state(before: f64, after: f64) -> bool {
    (before - after).abs() > 0.5 * before.min(after)
}
