//! Classifier's patterns compiled into a decision tree.
//!
//! The patterns are tried in order, so a packet's outcome is that of the
//! first pattern all of whose words match (and none of whose negated
//! groups does). Rather than testing every word of every pattern in turn,
//! the tree tests one word per node and remembers the answer: the state
//! of a node is the list of patterns still possible, each with the words
//! not yet known to hold. Testing a word `w` of the first such pattern:
//!
//! - if `w` matched, a word `u` at the same offset whose masked bits
//!   disagree with `w`'s cannot match (its pattern is dropped), and one
//!   that compares only bits `w` compared, with the same values, and
//!   needs no more bytes than `w`, is known to match (it is removed);
//! - if `w` did not match, a word `u` that implies `w` (compares at least
//!   `w`'s bits, with `w`'s values, needing at least as many bytes; `w`
//!   itself among them) cannot match.
//!
//! Either way `w` leaves the first pattern, so the construction ends. A
//! pattern whose positive words are all known to hold and that has
//! negated groups becomes a node that checks those groups directly: none
//! matches → the pattern's output, else the tree of the later patterns.
//! Identical states share one node, so the tree is a DAG.
//!
//! Nodes live in one array and name each other (or an outcome) by index;
//! classifying follows one path and allocates nothing. The construction
//! gives up (the Classifier then keeps the linear scan) if the tree would
//! exceed `MAX_NODES` nodes, or the paths `MAX_DEPTH` tests, or building
//! it would take too much work.

use super::{Program, Word};
use std::collections::HashMap;

/// Targets with this bit set are outcomes (`OUTCOME | output`); others
/// are node indices.
const OUTCOME: u32 = 1 << 31;
/// The outcome "no pattern matches".
const DROP: u32 = u32::MAX;

/// Default largest tree.
pub(super) const MAX_NODES: usize = 4096;
/// Longest path (bounds the recursion while building).
const MAX_DEPTH: usize = 1024;
/// Budget for the construction: total length of the states looked at.
const MAX_WORK: usize = 1 << 22;

/// A test: go to `yes` if it holds, else to `no`. If `w.mask` is not
/// zero, the test is whether the word `w` matches; otherwise (no word has
/// an empty mask) whether none of the negated groups `w.off..w.need` (a
/// range of `Program::groups`) matches. 32 bytes, so that finding a node
/// is a shift.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Node {
    w: Word,
    yes: u32,
    no: u32,
}

impl Node {
    #[inline(always)]
    fn holds(&self, prog: &Program, d: &[u8]) -> bool {
        if self.w.mask != 0 {
            self.w.matches(d)
        } else {
            !prog.any_group((self.w.off, self.w.need), d)
        }
    }
}

/// The decision tree of a [`Program`].
#[derive(Clone, Debug)]
pub(super) struct Tree {
    nodes: Box<[Node]>,
    start: u32,
}

/// A pattern still possible: its index and the indices (into
/// `Program::words`) of its positive words not yet known to hold.
#[derive(Clone, Debug)]
struct Live {
    rule: u32,
    words: Vec<u32>,
}

struct Builder<'a> {
    prog: &'a Program,
    nodes: Vec<Node>,
    memo: HashMap<Vec<u32>, u32>,
    max_nodes: usize,
    work: usize,
}

/// What the outcome `held` of testing `w` says about `u`: `Some(true)` if
/// `u` must match, `Some(false)` if it cannot, `None` if unknown. Words
/// match as in [`Word::matches`]: the packet is at least `need` bytes long
/// and its bytes at `off` masked with `mask` equal `value` (`value` has no
/// bits outside `mask`).
fn implied(w: &Word, held: bool, u: &Word) -> Option<bool> {
    if u.off != w.off {
        return None;
    }
    if held {
        // The packet's masked bits are w.value's.
        if (w.value ^ u.value) & w.mask & u.mask != 0 {
            return Some(false);
        }
        // u compares only bits w fixed, and they agree; its bytes are
        // there if w's are.
        if u.mask & !w.mask == 0 && u.need <= w.need {
            return Some(true);
        }
        None
    } else if w.mask & !u.mask == 0 && u.value & w.mask == w.value && u.need >= w.need {
        // u matching would mean: at least w.need bytes, and the bits w
        // compares equal w.value, i.e. w matching.
        Some(false)
    } else {
        None
    }
}

impl Builder<'_> {
    /// The patterns of `live` once `w` is known to have matched (`held`)
    /// or not.
    fn assume(&self, live: &[Live], w: &Word, held: bool) -> Vec<Live> {
        live.iter()
            .filter_map(|l| {
                let mut words = Vec::with_capacity(l.words.len());
                for &i in &l.words {
                    match implied(w, held, &self.prog.words[i as usize]) {
                        Some(true) => {}
                        Some(false) => return None,
                        None => words.push(i),
                    }
                }
                Some(Live {
                    rule: l.rule,
                    words,
                })
            })
            .collect()
    }

    /// The target deciding `live`, or `None` if over a limit.
    fn build(&mut self, live: Vec<Live>, depth: usize) -> Option<u32> {
        let Some(first) = live.first() else {
            return Some(DROP);
        };
        let negs = self.prog.rules[first.rule as usize].negs;
        if first.words.is_empty() && negs.0 == negs.1 {
            return Some(OUTCOME | first.rule);
        }
        let mut key = Vec::new();
        for l in &live {
            key.push(l.rule);
            key.push(l.words.len() as u32);
            key.extend_from_slice(&l.words);
        }
        self.work += key.len();
        if self.work > MAX_WORK {
            return None;
        }
        if let Some(&n) = self.memo.get(&key) {
            return Some(n);
        }
        if self.nodes.len() >= self.max_nodes || depth >= MAX_DEPTH {
            return None;
        }
        // Reserve the node first, so that it precedes its subtrees.
        let me = self.nodes.len();
        let negs_node = |yes, no| Node {
            w: Word {
                off: negs.0,
                need: negs.1,
                mask: 0,
                value: 0,
            },
            yes,
            no,
        };
        self.nodes.push(negs_node(DROP, DROP));
        let node = if first.words.is_empty() {
            let yes = OUTCOME | first.rule;
            let no = self.build(live[1..].to_vec(), depth + 1)?;
            negs_node(yes, no)
        } else {
            let w = self.prog.words[first.words[0] as usize];
            debug_assert!(w.mask != 0);
            let yes = self.assume(&live, &w, true);
            let yes = self.build(yes, depth + 1)?;
            let no = self.assume(&live, &w, false);
            let no = self.build(no, depth + 1)?;
            Node { w, yes, no }
        };
        self.nodes[me] = node;
        self.memo.insert(key, me as u32);
        Some(me as u32)
    }
}

impl Tree {
    /// The tree of `prog`, or `None` if it would have more than
    /// `max_nodes` nodes (or be too costly to build).
    pub(super) fn build(prog: &Program, max_nodes: usize) -> Option<Tree> {
        let live = prog
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.never)
            .map(|(i, r)| Live {
                rule: i as u32,
                words: (r.pos.0..r.pos.1).collect(),
            })
            .collect();
        let mut b = Builder {
            prog,
            nodes: Vec::new(),
            memo: HashMap::new(),
            max_nodes: max_nodes.min(OUTCOME as usize),
            work: 0,
        };
        let start = b.build(live, 0)?;
        Some(Tree {
            nodes: b.nodes.into_boxed_slice(),
            start,
        })
    }

    /// The tree for Click's listing ([`super::click_listing`]).
    pub(super) fn listing_graph(&self) -> (Vec<super::LNode>, super::LRef) {
        let r = |t: u32| -> super::LRef {
            if t == DROP {
                super::LRef::Drop
            } else if t >= OUTCOME {
                super::LRef::Out((t & !OUTCOME) as usize)
            } else {
                super::LRef::Node(t as usize)
            }
        };
        let nodes = self
            .nodes
            .iter()
            .map(|n| super::LNode {
                test: if n.w.mask != 0 {
                    super::LTest::Word(n.w)
                } else {
                    super::LTest::NoGroup((n.w.off, n.w.need))
                },
                yes: r(n.yes),
                no: r(n.no),
            })
            .collect();
        (nodes, r(self.start))
    }

    /// Number of nodes.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The index of the first pattern of `prog` (the program this tree was
    /// built from) that `d` matches.
    #[inline]
    pub(super) fn classify(&self, prog: &Program, d: &[u8]) -> Option<usize> {
        let mut t = self.start;
        while t < OUTCOME {
            let n = self.nodes.get(t as usize)?;
            t = if n.holds(prog, d) { n.yes } else { n.no };
        }
        (t != DROP).then_some((t & !OUTCOME) as usize)
    }

    /// The number of nodes `d` visits (for tests).
    #[cfg(test)]
    pub(super) fn path_len(&self, prog: &Program, d: &[u8]) -> usize {
        let mut t = self.start;
        let mut n = 0;
        while t < OUTCOME {
            n += 1;
            let node = &self.nodes[t as usize];
            t = if node.holds(prog, d) {
                node.yes
            } else {
                node.no
            };
        }
        n
    }
}
