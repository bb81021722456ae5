//! A substrate as one router graph: every slice's own elements under its
//! name (`s1/c`), its devices replaced by its metalinks' ends, and the
//! substrate's elements (per interface: input, demultiplexer, scheduler,
//! link, output) around them.
//!
//! Per interface `p` (elements `p/@...`, on the substrate's thread):
//!
//! ```text
//! p/@in :: INPUT -> p/@demux :: Classifier(one pattern per metalink, -)
//!   [i] -> s/@m/decap (VLANDecap | Strip(42)) -> s/@m/rx :: Counter -> s/@m/in :: Queue
//!   [last] -> p/@unknown :: Counter -> Discard
//! [j]p/@sched :: DRRSched(WEIGHTS ...) -> p/@link :: BandwidthRatedUnqueue(link rate) -> p/@out :: OUTPUT
//! ```
//!
//! Per metalink `m` of slice `s` (elements `s/...`, on the slice's
//! threads): the slice's `FromDevice(m)` (or `PollDevice(m)`), named
//! `s/NAME`, becomes an `Unqueue` pulling from `s/@m/in`; its
//! `ToDevice(m)` becomes `BandwidthRatedUnqueue(rate)` (strict: the
//! metalink's token bucket) or `Unqueue` (work-conserving), pulling from
//! the slice's own queue as the ToDevice did, then
//! `s/@m/tx :: Counter -> s/@m/encap (VLANEncap | UDPIPEncap, EtherEncap)
//! -> s/@m/out :: Queue(64) -> [j]p/@sched`. A slice's excess waits, and
//! is dropped and counted, in its own queues.
//!
//! Without the queue manager (`queue_manager = false`, a measurement
//! baseline) a ToDevice becomes an `Unqueue` whatever the sharing, and
//! every metalink's encapsulation pushes into one `p/@fifo ::
//! NotifierQueue(1000)` that `p/@link` pulls in place of `p/@sched`.

use crate::spec::{split_element, Spec, Tag};
use paraclick_lang::{
    Diagnostic, FlatConnection, FlatElement, FlatGraph, ParseOptions, Source, SourceSet, Span,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Classes a slice may not have: they act on the whole router.
const WHOLE_ROUTER: &[&str] = &["DriverManager", "ControlSocket"];
/// Classes that receive from a device (the metalink's ingress).
const FROM: &[&str] = &["FromDevice", "PollDevice"];
/// The egress queue between a metalink and its interface's scheduler.
const EGRESS_QUEUE: usize = 64;
/// Without the queue manager: the one queue of an interface's output.
const SHARED_FIFO: usize = 1000;

/// The composed router: its graph, the sources its spans point into, and
/// the threads each slice got.
pub struct Composed {
    pub graph: FlatGraph,
    pub sources: SourceSet,
    /// What the router's `config` handler shows.
    pub summary: Source,
}

fn span_at(file: &str, line: u32) -> Span {
    Span {
        file: Arc::from(file),
        line,
        col: 1,
        start: 0,
        end: 0,
    }
}

struct Builder {
    g: FlatGraph,
    index: HashMap<String, usize>,
}

impl Builder {
    fn add(&mut self, name: String, class: &str, config: String, span: Span) -> usize {
        let i = self.g.elements.len();
        self.index.insert(name.clone(), i);
        self.g.elements.push(FlatElement {
            name,
            class: class.to_string(),
            config,
            span,
            anonymous: false,
        });
        i
    }

    fn connect(&mut self, from: usize, from_port: usize, to: usize, to_port: usize, span: &Span) {
        self.g.connections.push(FlatConnection {
            from,
            from_port,
            to,
            to_port,
            span: span.clone(),
        });
    }
}

/// The first positional argument of an element's configuration.
fn first_arg(config: &str) -> String {
    paraclick_lang::args::split_args(config)
        .into_iter()
        .next()
        .map(|a| paraclick_lang::args::unquote(a.trim()))
        .unwrap_or_default()
}

/// Composes `spec` into one graph. `threads` gives each slice with cores
/// its worker threads; every other element runs on thread 0. Errors are
/// located in the files they are about (a slice's configuration, the
/// substrate file).
pub fn compose(
    spec: &Spec,
    substrate_text: &str,
    threads: &BTreeMap<String, Vec<usize>>,
    popts: &ParseOptions,
) -> Result<Composed, (Vec<Diagnostic>, SourceSet)> {
    let mut sources = SourceSet::default();
    sources.add(Source {
        name: spec.file.clone(),
        text: substrate_text.to_string(),
    });
    let mut errs: Vec<Diagnostic> = Vec::new();
    let mut b = Builder {
        g: FlatGraph::default(),
        index: HashMap::new(),
    };
    // Pins: (element, thread).
    let mut pins: Vec<(usize, usize)> = Vec::new();
    // Per interface: its demux patterns and targets, its scheduler inputs.
    struct Iface {
        demux: Vec<(String, usize)>,
        /// The scheduler's inputs: egress queue and weight.
        sched: Vec<(usize, f64)>,
    }
    let mut ifaces: BTreeMap<String, Iface> = spec
        .interfaces
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                Iface {
                    demux: Vec::new(),
                    sched: Vec::new(),
                },
            )
        })
        .collect();
    for s in &spec.slices {
        sources.add(s.source.clone());
        let g = match paraclick_lang::parse_config_with(&s.source, &s.defines, popts) {
            Ok(g) => g,
            Err(mut d) => {
                errs.append(&mut d);
                continue;
            }
        };
        let sthreads = threads.get(&s.name).cloned().unwrap_or_default();
        let pin_of = |k: usize| -> usize {
            if sthreads.is_empty() {
                0
            } else {
                sthreads[k % sthreads.len()]
            }
        };
        let here = span_at(&spec.file, s.line);
        // The slice's elements, renamed; devices found.
        let mut map = vec![usize::MAX; g.elements.len()];
        let mut from_dev: HashMap<String, usize> = HashMap::new();
        let mut to_dev: HashMap<String, usize> = HashMap::new();
        for (k, e) in g.elements.iter().enumerate() {
            if WHOLE_ROUTER.contains(&e.class.as_str()) {
                errs.push(Diagnostic::error(
                    Some(e.span.clone()),
                    format!(
                        "slice {}: {} acts on the whole substrate; a slice may not have one",
                        s.name, e.class
                    ),
                ));
                continue;
            }
            if e.class == "StaticThreadSched" {
                // The substrate places the slice's tasks on its cores.
                continue;
            }
            if e.name.split('/').any(|c| c.starts_with('@')) {
                errs.push(Diagnostic::error(
                    Some(e.span.clone()),
                    format!(
                        "slice {}: element name '{}': names beginning with @ are the substrate's",
                        s.name, e.name
                    ),
                ));
                continue;
            }
            let name = format!("{}/{}", s.name, e.name);
            let is_from = FROM.contains(&e.class.as_str());
            let is_to = e.class == "ToDevice";
            if is_from || is_to {
                let dev = first_arg(&e.config);
                let Some(m) = s.metalinks.iter().find(|m| m.name == dev) else {
                    errs.push(Diagnostic::error(
                        Some(e.span.clone()),
                        format!(
                            "slice {}: device '{dev}' is not one of its metalinks ({}): declare [slice.{}.metalink.{dev}]",
                            s.name,
                            s.metalinks.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", "),
                            s.name
                        ),
                    ));
                    continue;
                };
                let seen = if is_from { &mut from_dev } else { &mut to_dev };
                if seen.contains_key(&m.name) {
                    errs.push(Diagnostic::error(
                        Some(e.span.clone()),
                        format!(
                            "slice {}: metalink {} has a second {}; one each way",
                            s.name, m.name, e.class
                        ),
                    ));
                    continue;
                }
                let i = if is_from {
                    b.add(name, "Unqueue", "BURST 32".into(), e.span.clone())
                } else if s.strict && spec.queue_manager {
                    b.add(
                        name,
                        "BandwidthRatedUnqueue",
                        format!("{}Bps", m.rate),
                        e.span.clone(),
                    )
                } else {
                    b.add(name, "Unqueue", "BURST 32".into(), e.span.clone())
                };
                seen.insert(m.name.clone(), i);
                pins.push((i, pin_of(k)));
                map[k] = i;
                continue;
            }
            let i = b.add(name, &e.class, e.config.clone(), e.span.clone());
            pins.push((i, pin_of(k)));
            map[k] = i;
        }
        for r in &g.requirements {
            if !b.g.requirements.contains(r) {
                b.g.requirements.push(r.clone());
            }
        }
        for c in &g.connections {
            let (f, t) = (map[c.from], map[c.to]);
            if f == usize::MAX || t == usize::MAX {
                continue; // an element refused or dropped above
            }
            if to_dev.values().any(|&x| x == f) {
                errs.push(Diagnostic::error(
                    Some(c.span.clone()),
                    format!(
                        "slice {}: a ToDevice's outputs cannot be connected on a substrate",
                        s.name
                    ),
                ));
                continue;
            }
            b.connect(f, c.from_port, t, c.to_port, &c.span);
        }
        // The metalinks' ends.
        for (mi, m) in s.metalinks.iter().enumerate() {
            let p = format!("{}/@{}", s.name, m.name);
            let decap = match &m.tag {
                Tag::Vlan(_) => b.add(
                    format!("{p}/decap"),
                    "VLANDecap",
                    String::new(),
                    here.clone(),
                ),
                Tag::Udp { .. } => b.add(format!("{p}/decap"), "Strip", "42".into(), here.clone()),
            };
            let rx = b.add(format!("{p}/rx"), "Counter", String::new(), here.clone());
            let inq = b.add(
                format!("{p}/in"),
                "NotifierQueue",
                m.queue.to_string(),
                here.clone(),
            );
            b.connect(decap, 0, rx, 0, &here);
            b.connect(rx, 0, inq, 0, &here);
            pins.extend([(decap, 0), (rx, 0), (inq, 0)]);
            let pattern = match &m.tag {
                Tag::Vlan(v) => format!("12/8100 14/{v:04x}%0fff"),
                Tag::Udp { port, .. } => format!("12/0800 23/11 36/{port:04x}"),
            };
            if let Some(ifc) = ifaces.get_mut(&m.interface) {
                ifc.demux.push((pattern, decap));
            }
            match from_dev.get(&m.name) {
                Some(&u) => b.connect(inq, 0, u, 0, &here),
                None => {
                    // Nobody reads it: its traffic is taken and counted.
                    let sink = b.add(
                        format!("{p}/unread"),
                        "Discard",
                        String::new(),
                        here.clone(),
                    );
                    b.connect(inq, 0, sink, 0, &here);
                    pins.push((sink, pin_of(mi)));
                }
            }
            if let Some(&out) = to_dev.get(&m.name) {
                let tx = b.add(format!("{p}/tx"), "Counter", String::new(), here.clone());
                b.connect(out, 0, tx, 0, &here);
                let last = match &m.tag {
                    Tag::Vlan(v) => {
                        let e = b.add(
                            format!("{p}/encap"),
                            "VLANEncap",
                            format!("VLAN_ID {v}"),
                            here.clone(),
                        );
                        b.connect(tx, 0, e, 0, &here);
                        pins.push((e, pin_of(mi)));
                        e
                    }
                    Tag::Udp {
                        port,
                        local,
                        remote,
                        local_mac,
                        remote_mac,
                    } => {
                        let u = b.add(
                            format!("{p}/encap"),
                            "UDPIPEncap",
                            format!("{local}, {port}, {remote}, {port}"),
                            here.clone(),
                        );
                        let e = b.add(
                            format!("{p}/ether"),
                            "EtherEncap",
                            format!("0x0800, {local_mac}, {remote_mac}"),
                            here.clone(),
                        );
                        b.connect(tx, 0, u, 0, &here);
                        b.connect(u, 0, e, 0, &here);
                        pins.extend([(u, pin_of(mi)), (e, pin_of(mi))]);
                        e
                    }
                };
                pins.push((tx, pin_of(mi)));
                if spec.queue_manager {
                    let outq = b.add(
                        format!("{p}/out"),
                        "NotifierQueue",
                        EGRESS_QUEUE.to_string(),
                        here.clone(),
                    );
                    b.connect(last, 0, outq, 0, &here);
                    pins.push((outq, 0));
                    if let Some(ifc) = ifaces.get_mut(&m.interface) {
                        ifc.sched
                            .push((outq, if s.strict { 1.0 } else { s.weight }));
                    }
                } else if let Some(ifc) = ifaces.get_mut(&m.interface) {
                    // No queue manager: straight into the interface's FIFO.
                    ifc.sched.push((last, 1.0));
                }
            }
        }
    }
    // The interfaces.
    for i in &spec.interfaces {
        let here = span_at(&spec.file, i.line);
        let ifc = &ifaces[&i.name];
        let p = format!("{}/@", i.name);
        if !ifc.demux.is_empty() {
            let (class, config) = split_element(&i.input).unwrap_or_default();
            let input = b.add(format!("{p}in"), &class, config, here.clone());
            let mut pats: Vec<String> = ifc.demux.iter().map(|(p, _)| p.clone()).collect();
            pats.push("-".into());
            let demux = b.add(
                format!("{p}demux"),
                "Classifier",
                pats.join(", "),
                here.clone(),
            );
            let unknown = b.add(
                format!("{p}unknown"),
                "Counter",
                String::new(),
                here.clone(),
            );
            let drop = b.add(
                format!("{p}unknown_sink"),
                "Discard",
                String::new(),
                here.clone(),
            );
            b.connect(input, 0, demux, 0, &here);
            for (k, &(_, target)) in ifc.demux.iter().enumerate() {
                b.connect(demux, k, target, 0, &here);
            }
            b.connect(demux, ifc.demux.len(), unknown, 0, &here);
            b.connect(unknown, 0, drop, 0, &here);
            pins.extend([(input, 0), (demux, 0), (unknown, 0), (drop, 0)]);
        }
        if !ifc.sched.is_empty() {
            let sched = if spec.queue_manager {
                let weights: Vec<String> = ifc.sched.iter().map(|&(_, w)| w.to_string()).collect();
                let cfg = if ifc.sched.iter().all(|&(_, w)| w == 1.0) {
                    String::new()
                } else {
                    format!("WEIGHTS \"{}\"", weights.join(" "))
                };
                let sched = b.add(format!("{p}sched"), "DRRSched", cfg, here.clone());
                for (k, &(q, _)) in ifc.sched.iter().enumerate() {
                    b.connect(q, 0, sched, k, &here);
                }
                sched
            } else {
                let fifo = b.add(
                    format!("{p}fifo"),
                    "NotifierQueue",
                    SHARED_FIFO.to_string(),
                    here.clone(),
                );
                for &(e, _) in &ifc.sched {
                    b.connect(e, 0, fifo, 0, &here);
                }
                fifo
            };
            let link = b.add(
                format!("{p}link"),
                "BandwidthRatedUnqueue",
                format!("{}Bps", i.rate),
                here.clone(),
            );
            let (class, config) = split_element(&i.output).unwrap_or_default();
            let out = b.add(format!("{p}out"), &class, config, here.clone());
            b.connect(sched, 0, link, 0, &here);
            b.connect(link, 0, out, 0, &here);
            pins.extend([(sched, 0), (link, 0), (out, 0)]);
        }
    }
    if !pins.is_empty() {
        let cfg: Vec<String> = pins
            .iter()
            .map(|&(e, t)| format!("{} {t}", b.g.elements[e].name))
            .collect();
        b.add(
            "@substrate/threads".into(),
            "StaticThreadSched",
            cfg.join(", "),
            span_at(&spec.file, 1),
        );
    }
    if !errs.is_empty() {
        return Err((errs, sources));
    }
    let summary = Source {
        name: spec.file.clone(),
        text: paraclick_lang::print_flat(&b.g),
    };
    Ok(Composed {
        graph: b.g,
        sources,
        summary,
    })
}
