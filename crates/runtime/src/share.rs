//! CPU shares: fault domains (a substrate's slices) that share a worker
//! thread each get their share of its cycles under contention.
//!
//! A router built with [`BuildOptions::cpu_shares`] gives each worker
//! thread a share scheduler, a stride scheduler over domains: every run of
//! a task (and of a timer) of a domain with a share is timed with the
//! cycle counter and charged to the domain's *virtual time*, `cycles /
//! share`. At the start of each pass over its worklist, the thread notes
//! the least virtual time among the *busy* domains (those whose tasks did
//! work in the previous pass, or were held back in it); in that pass, the
//! tasks of a domain run only if its virtual time is within
//! [`SLACK_CYCLES`] of that least one, all of them (a domain's tasks are
//! scheduled as a group, so its pipeline flows), and the tasks of the
//! others are passed over. So the domain furthest behind its share runs,
//! whatever a run of it costs: a domain whose one run costs a thousand
//! times another's (a heavy `WorkPackage`, a `Script` stepping on a
//! timer) runs once, then waits while the others catch up, and over any
//! stretch of contention each busy domain's cycles divided by its share
//! differ by at most one run's cost plus the slack.
//!
//! It is work-conserving: a domain that has nothing to do (its tasks
//! asleep or finding no work) is not busy, does not hold the others
//! back, and their shares of what it leaves are in proportion to their
//! own shares. It banks no credit while idle: when it is busy again its
//! virtual time is raised to the least busy one, so it gets its share
//! from then on, not a burst to make up for the time it was idle.
//!
//! Agile and wary: it reacts to load within one pass (a domain that
//! becomes busy is run in the next pass, one that stops is no longer
//! waited for in the next), and it never changes an allocation on its
//! own: the shares are the configuration's, and the only state is the
//! virtual times; nothing is sampled, averaged or moved.
//!
//! Tasks outside every domain (a substrate's own interfaces) and of
//! domains without a share always run. Threads of a router without
//! shares run the plain round robin, which this costs nothing (a pass
//! chooses the scheduler once).
//!
//! [`BuildOptions::cpu_shares`]: crate::BuildOptions::cpu_shares

use crate::fault::Domains;
use std::sync::atomic::Ordering;

/// How far (in virtual cycles: cycles divided by the share) a domain may
/// be ahead of the one furthest behind and still run in a pass: small
/// against a pass's cost, so that domains close to each other run in the
/// same pass rather than in alternate ones.
pub const SLACK_CYCLES: f64 = 2000.0;

/// A thread's share scheduler (see the module documentation).
pub(crate) struct Shares {
    /// Per domain: 1 / share (0: no share, never held back).
    inv: Vec<f64>,
    /// Per domain: charged cycles / share on this thread.
    vt: Vec<f64>,
    /// Per domain: busy in the last pass (did work, or was held back).
    busy: Vec<bool>,
    /// Per domain: busy in the pass running now.
    busy_now: Vec<bool>,
    /// Per domain: may run in the pass running now.
    pub(crate) eligible: Vec<bool>,
}

impl Shares {
    /// `None` if no domain has a share.
    pub(crate) fn new(doms: Option<&Domains>) -> Option<Shares> {
        let d = doms.filter(|d| d.has_shares())?;
        let n = d.len();
        Some(Shares {
            inv: d
                .share
                .iter()
                .map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 })
                .collect(),
            vt: vec![0.0; n],
            busy: vec![false; n],
            busy_now: vec![false; n],
            eligible: vec![true; n],
        })
    }

    /// At the start of a pass: which domains may run in it.
    pub(crate) fn begin_pass(&mut self) {
        let mut min = f64::INFINITY;
        for d in 0..self.vt.len() {
            if self.inv[d] > 0.0 && self.busy[d] {
                min = min.min(self.vt[d]);
            }
        }
        for d in 0..self.vt.len() {
            if self.inv[d] == 0.0 {
                self.eligible[d] = true;
                continue;
            }
            if !self.busy[d] && min.is_finite() && self.vt[d] < min {
                // Idle: no credit banked.
                self.vt[d] = min;
            }
            self.eligible[d] = !min.is_finite() || self.vt[d] <= min + SLACK_CYCLES;
            self.busy_now[d] = false;
        }
    }

    /// Whether domain `d` (`None`: outside every domain) may run now; a
    /// domain held back stays busy.
    #[inline]
    pub(crate) fn may_run(&mut self, d: Option<usize>) -> bool {
        match d {
            None => true,
            Some(d) => {
                if !self.eligible[d] {
                    self.busy_now[d] = true;
                }
                self.eligible[d]
            }
        }
    }

    /// Charges domain `d` a run of `cycles` that did work or not.
    #[inline]
    pub(crate) fn charge(&mut self, doms: &Domains, d: Option<usize>, cycles: u64, did: bool) {
        let Some(d) = d else { return };
        if self.inv[d] == 0.0 {
            return;
        }
        self.vt[d] += cycles as f64 * self.inv[d];
        let c = &doms.charged[d];
        c.fetch_add(cycles, Ordering::Relaxed);
        if did {
            self.busy_now[d] = true;
        }
    }

    /// At the end of a pass.
    pub(crate) fn end_pass(&mut self) {
        for d in 0..self.vt.len() {
            if self.inv[d] > 0.0 {
                self.busy[d] = self.busy_now[d];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two domains, shares 0.75 and 0.25, one run costing 1 cycle and the
    /// other 1000: over many passes their cycles follow the shares.
    #[test]
    fn stride_over_domains_follows_the_shares_whatever_a_run_costs() {
        let doms = Domains::new(
            &["a".into(), "b".into()],
            &[("a".into(), 0.75), ("b".into(), 0.25)],
            ["a/x", "b/y"].into_iter(),
        )
        .unwrap();
        let mut s = Shares::new(Some(&doms)).unwrap();
        let cost = [1u64, 1000];
        for _ in 0..200_000 {
            s.begin_pass();
            for (d, &c) in cost.iter().enumerate() {
                if s.may_run(Some(d)) {
                    s.charge(&doms, Some(d), c, true);
                }
            }
            s.end_pass();
        }
        let c: Vec<f64> = doms.charged().iter().map(|(_, c)| *c as f64).collect();
        let a = c[0] / (c[0] + c[1]);
        assert!((a - 0.75).abs() < 0.01, "a got {a}, {c:?}");
    }

    /// A domain that has no work leaves its share to the others.
    #[test]
    fn an_idle_domain_leaves_its_share() {
        let doms = Domains::new(
            &["a".into(), "b".into()],
            &[("a".into(), 0.1), ("b".into(), 0.9)],
            ["a/x", "b/y"].into_iter(),
        )
        .unwrap();
        let mut s = Shares::new(Some(&doms)).unwrap();
        let mut ran_a = 0;
        for _ in 0..1000 {
            s.begin_pass();
            if s.may_run(Some(0)) {
                s.charge(&doms, Some(0), 10, true);
                ran_a += 1;
            }
            if s.may_run(Some(1)) {
                s.charge(&doms, Some(1), 10, false);
            }
            s.end_pass();
        }
        assert!(ran_a > 990, "a ran {ran_a} of 1000 passes");
    }
}
