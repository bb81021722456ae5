//! Candidates: a rewrite (placement or split parts), its model and
//! placement, its prediction; and the draft a split is built in.

use super::*;

#[derive(Clone, Debug)]
pub enum Rewrite {
    /// Tasks placed as given.
    Place,
    /// One split ([`Part`]), or several at once: every source's flow
    /// split, every device's fanout, every scheduler's replication, or a
    /// combination of parts on disjoint tasks and elements
    /// ([`Part::compatible`]).
    Split { parts: Vec<Part> },
}

impl Rewrite {
    /// "place", a part's kind when every part is of that kind (but
    /// several pipeline splits), else "combination".
    pub fn kind(&self) -> &'static str {
        match self {
            Rewrite::Place => "place",
            Rewrite::Split { parts } => {
                let k = parts.first().map_or("place", Part::kind);
                if parts.iter().all(|p| p.kind() == k) && (k != "pipeline" || parts.len() == 1) {
                    k
                } else {
                    "combination"
                }
            }
        }
    }

    /// The parts the rewrite is made of (none for a placement).
    pub fn parts(&self) -> &[Part] {
        match self {
            Rewrite::Place => &[],
            Rewrite::Split { parts } => parts,
        }
    }
}

/// One part of a split: what a single-part candidate of one kind
/// changes, and a piece of a combination.
#[derive(Clone, Debug)]
pub enum Part {
    /// Task `task`'s push path split at connection `conn`: a Queue and
    /// an Unqueue named `name` (its queue `par_q..` for `par_u..`), which
    /// runs `down`.
    Pipeline {
        task: usize,
        conn: usize,
        down: Vec<usize>,
        name: String,
    },
    Flow(FlowSplit),
    /// A device fanout: source task `task`'s FromDevice becomes `n`
    /// FromDevices of one PACKET_FANOUT HASH group (`QUEUE r, N_QUEUES
    /// n`), each feeding its replica of the set (the FromDevice first,
    /// then the replicable elements after it).
    Fanout(usize, Vec<usize>),
    /// A scheduler replicated per flow group (SMP Click's replicated
    /// QoS) by its puller's task: a HashSwitch in front of each of its
    /// queues, `n` replicas of its set, each queue's capacity shared
    /// among its replicas.
    Sched(usize, SchedSplit),
}

impl Part {
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Pipeline { .. } => "pipeline",
            Part::Flow(_) => "flow",
            Part::Fanout(..) => "fanout",
            Part::Sched(..) => "sched",
        }
    }

    /// The tasks the part splits or copies (no other part may touch
    /// them), the tasks whose cost it only adds to (a scheduler
    /// replication's producers pay the hash: no other part may split
    /// them) and the elements it changes or copies.
    pub(crate) fn footprint(
        &self,
        gr: &Graph,
        app: &App,
    ) -> (Vec<usize>, Vec<usize>, HashSet<usize>) {
        match self {
            Part::Pipeline {
                task, conn, down, ..
            } => {
                let c = &gr.g.connections[*conn];
                let mut el: HashSet<usize> = down.iter().copied().collect();
                el.insert(c.from);
                el.insert(c.to);
                (vec![*task], Vec::new(), el)
            }
            Part::Flow(f) => {
                let mut el: HashSet<usize> = f.set.iter().copied().collect();
                el.extend(gr.task_elem[f.task]);
                (vec![f.task], Vec::new(), el)
            }
            Part::Fanout(t, set) => (vec![*t], Vec::new(), set.iter().copied().collect()),
            Part::Sched(t, sp) => {
                let mut adds = Vec::new();
                for &q in &sp.queues {
                    if let Some(aq) = app
                        .queues
                        .iter()
                        .find(|aq| aq.name == gr.g.elements[q].name)
                    {
                        adds.extend(aq.producers.iter().map(|p| p.0));
                    }
                }
                let mut el: HashSet<usize> = sp.set.iter().copied().collect();
                el.extend(sp.queues.iter().copied());
                (vec![*t], adds, el)
            }
        }
    }

    /// Whether parts `a` and `b` compose: neither touches a task the
    /// other splits or copies, and they change no element in common (so
    /// their model changes and their rewrites apply one after the other
    /// in any order).
    pub fn compatible(gr: &Graph, app: &App, a: &Part, b: &Part) -> bool {
        let (ao, aa, ae) = a.footprint(gr, app);
        let (bo, ba, be) = b.footprint(gr, app);
        let meets = |x: &[usize], y: &[usize]| x.iter().any(|t| y.contains(t));
        !meets(&ao, &bo) && !meets(&ao, &ba) && !meets(&aa, &bo) && ae.is_disjoint(&be)
    }
}

#[derive(Clone, Debug)]
pub struct Candidate {
    pub name: String,
    pub rewrite: Rewrite,
    /// Thread per task of `app`.
    pub assign: Vec<usize>,
    /// Element names of `app`'s tasks, for the StaticThreadSched.
    pub task_names: Vec<Option<String>>,
    pub predicted: f64,
    /// The predicted rate if each queue the rewrite adds cost
    /// [`LINE_DOUBT`] more lines per crossing packet at one end, the end
    /// where that costs more ([`floor`]); a placement's is its rate.
    pub floor: f64,
    /// The configuration's own queues: `model`'s queues after these are
    /// the ones the rewrite adds.
    pub base_queues: usize,
    /// The application model it was predicted with (the profile's, with
    /// the split's tasks and queues added) and the tasks the placement
    /// search kept fixed: to predict it again once its new queues'
    /// line terms are measured ([`measure_splits`]).
    pub model: App,
    pub fixed: Vec<(usize, usize)>,
    /// A short loss-free run of its rewrite rejected it
    /// ([`check_choice`], whose note says why): never chosen then.
    pub rejected: bool,
}

impl Candidate {
    /// A split's candidate: its model (the profile's, with the queues
    /// after `base_queues` added) placed with the draft's pinned tasks
    /// kept where they are, predicted, and its [`floor`].
    pub(crate) fn split(
        name: String,
        rewrite: Rewrite,
        d: Draft,
        base_queues: usize,
        m: &Machine,
        n: usize,
        w: &WhatIf,
    ) -> Candidate {
        let Draft {
            a2,
            tn: task_names,
            fixed,
        } = d;
        let (assign, predicted) = place_with(&a2, m, n, w, &fixed);
        let floor = floor(&a2, base_queues, &assign, m, n, w);
        Candidate {
            name,
            rewrite,
            assign,
            task_names,
            predicted,
            floor,
            base_queues,
            model: a2,
            fixed,
            rejected: false,
        }
    }
}

pub struct Plan {
    pub candidates: Vec<Candidate>,
    /// Index of the chosen candidate.
    pub chosen: usize,
    /// What was not split, and why.
    pub notes: Vec<String>,
}

/// A split's model while its parts are applied: the profile's App with
/// their tasks and queues added (`a2`), every task's element name for
/// the StaticThreadSched (`tn`), and the tasks pinned, (task, thread)
/// (`fixed`: replica r on thread r).
pub(crate) struct Draft {
    pub(crate) a2: App,
    pub(crate) tn: Vec<Option<String>>,
    pub(crate) fixed: Vec<(usize, usize)>,
}

impl Draft {
    pub(crate) fn new(app: &App, names: &[Option<String>]) -> Draft {
        Draft {
            a2: app.clone(),
            tn: names.to_vec(),
            fixed: Vec::new(),
        }
    }
}
