//! # NotifierDebug
//!
//! NotifierDebug()
//!
//! Passes packets through unchanged and reports the notification signal
//! at its position.
//!
//! A test element, as in Click's suite. In a push context it pushes each
//! packet out of its output and its `signal` handler reports the full
//! notifiers downstream (the queues whose room a source there waits for);
//! in a pull context each pull returns what its input returns and
//! `signal` reports the empty notifiers upstream (the queues whose
//! packets a puller there waits for).
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Handlers:
//! - `signal` (read): the signal in Click's unparsed form: `busy*` when a
//!   path reaches an element that makes packets itself (or, pushing, no
//!   queue downstream), `idle` when nothing can ever come, else the
//!   notifiers in words of 32, `empty.WORD/MASK:ACTIVE` (`full.` when
//!   pushing), where the notifiers of each kind are numbered in the order
//!   their elements are declared, MASK has the bits of those heard and
//!   ACTIVE those active (both hexadecimal), a `*` follows a word with an
//!   active notifier, and words are joined by `+`.
//!
//! Example:
//!
//!     q :: Queue -> n :: NotifierDebug -> Discard;   // read n.signal

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};

pub struct NotifierDebug {
    pull: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("NotifierDebug", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<NotifierDebug, String> {
    cx.args().complete()?;
    Ok(NotifierDebug {
        pull: cx.input_is_pull(0),
    })
}

impl Element for NotifierDebug {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("signal", |e, hx| {
        if e.pull {
            hx.upstream_signal(0).unparse("empty")
        } else {
            hx.downstream_signal(0).unparse("full")
        }
    })];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        cx.push(0, batch);
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        cx.pull(0, max)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn pull_signal_lists_the_queues_upstream_by_number() {
        // 34 queues: numbers 0..33, two words; q33 is bit 1 of word 1.
        let mut conf = String::new();
        for i in 0..34 {
            conf.push_str(&format!("q{i} :: NotifierQueue(5);\n"));
        }
        conf.push_str("s :: RoundRobinSched -> n :: NotifierDebug -> Discard;\n");
        for i in 0..34 {
            conf.push_str(&format!("Idle -> q{i} -> [{i}]s;\n"));
        }
        let r = build(&reg(), &conf);
        assert_eq!(
            r.read_handler("n.signal").unwrap(),
            "empty.0/ffffffff:ffffffff*+empty.1/3:3*",
            "a new queue's signal is active"
        );
        // An empty queue, once pulled, is inactive; a push wakes it.
        for _ in 0..40 {
            let _ = r.pull_from("s", 0, 8).unwrap();
        }
        assert_eq!(
            r.read_handler("n.signal").unwrap(),
            "empty.0/ffffffff:0+empty.1/3:0"
        );
        fill(&r, "q33", vec![tagged(1, 60)]);
        assert_eq!(
            r.read_handler("n.signal").unwrap(),
            "empty.0/ffffffff:0+empty.1/3:2*"
        );
    }

    #[test]
    fn busy_idle_and_push_signals() {
        let r = build(
            &reg(),
            "InfiniteSource -> a :: NotifierDebug -> q :: Queue(2) -> b :: NotifierDebug -> Discard;
             RatedSource -> c :: NotifierDebug -> Discard;
             Idle -> d :: NotifierDebug -> Discard;
             Idle -> q2 :: Queue -> u :: Unqueue -> e :: NotifierDebug -> Idle",
        );
        assert_eq!(r.read_handler("a.signal").unwrap(), "full.0/1:1*");
        assert_eq!(r.read_handler("b.signal").unwrap(), "empty.0/1:1*");
        assert_eq!(r.read_handler("c.signal").unwrap(), "busy*");
        assert_eq!(r.read_handler("e.signal").unwrap(), "busy*");
        let _ = r.read_handler("d.signal").unwrap();
    }
}
