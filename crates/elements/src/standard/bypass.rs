//! # Bypass
//!
//! Bypass(\[ACTIVE])
//!
//! Sends packets through an optional side path.
//!
//! Ports: 1 or 2 inputs, 1 or 2 outputs. Processing: agnostic.
//!
//! Normally passes packets from input 0 to output 0, like Null. When
//! ACTIVE is true, a push Bypass sends packets from input 0 to output 1,
//! and a pull Bypass answers pulls on output 0 from input 1 instead. The
//! second input (in push) or output (in pull) joins the side path back to
//! the normal one: packets pushed to input 1 go out output 0, and pulls
//! on output 1 pull from input 0. Click's Bypass rewires its neighbours so
//! that it costs nothing; paraclick's is one branch per batch.
//!
//! Arguments:
//! - `ACTIVE` (boolean, default false): whether to take the side path.
//!
//! Handlers:
//! - `active` (read/write): ACTIVE.
//!
//! Example:
//!
//!     src -> pb :: Bypass -> sink;
//!     pb[1] -> Print(debug) -> sink;
//!     // write pb.active true to turn the Print on

use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Bypass {
    active: AtomicBool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Bypass", "1-2/1-2", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Bypass, String> {
    let mut a = cx.args();
    let active = a.read_p("ACTIVE").unwrap_or(false);
    a.complete()?;
    Ok(Bypass {
        active: AtomicBool::new(active),
    })
}

impl Bypass {
    fn side(&self) -> usize {
        usize::from(self.active.load(Ordering::Relaxed))
    }
}

impl Element for Bypass {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "active",
        |e, _| e.active.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.active.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let out = if port == 1 { 0 } else { self.side() };
        cx.push(out, batch)
    }

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let inp = if port == 1 { 0 } else { self.side() };
        cx.pull(inp, max)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::Harness;

    #[test]
    fn push_paths_follow_active() {
        let h = Harness::new(&reg(), "Bypass; Idle -> [0]e; Idle -> [1]e", 2).unwrap();
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(tags(&h.output(0)), [1]);
        h.write("active", "true").unwrap();
        assert_eq!(h.read("active").unwrap(), "true");
        h.push(0, vec![pkt(&[2])]);
        h.push(1, vec![pkt(&[3])]);
        assert_eq!(tags(&h.output(1)), [2]);
        assert_eq!(tags(&h.output(0)), [3], "input 1 rejoins output 0");
        assert_err(
            h.write("active", "maybe"),
            "e.active: expected boolean (true or false)",
        );
    }

    #[test]
    fn pull_paths_follow_active() {
        let conf = "b :: Bypass(true); Idle -> q0 :: Queue -> [0]b; Idle -> q1 :: Queue -> [1]b;\n\
                    b[0] -> Idle; b[1] -> Idle;";
        let r = paraclick_runtime::Router::from_str(conf, &reg(), 1).unwrap();
        r.push_into("q0", 0, vec![pkt(&[10])].into()).unwrap();
        r.push_into("q1", 0, vec![pkt(&[11])].into()).unwrap();
        let b = r.pull_from("b", 0, 8).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), [11], "active: output 0 pulls input 1");
        r.write_handler("b.active", "false").unwrap();
        r.push_into("q1", 0, vec![pkt(&[12])].into()).unwrap();
        let b = r.pull_from("b", 1, 8).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), [10], "output 1 pulls input 0");
        let b = r.pull_from("b", 0, 8);
        assert!(
            b.unwrap().is_none(),
            "inactive: output 0 pulls the empty q0"
        );
        assert_err(
            try_harness("Bypass(maybe)", 1),
            "e :: Bypass: ACTIVE: expected boolean (true or false)",
        );
    }
}
