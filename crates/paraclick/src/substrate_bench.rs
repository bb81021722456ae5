//! The substrate's benchmarks, measured from inside (each physical
//! interface's input an `InfiniteSource` of VLAN-tagged frames, its
//! output a `Discard`: no device, so they run anywhere):
//!
//! - `paraclick bench --design 2k` (no factors file): the Diversified
//!   Router report's 2^k factorial design over the number of slices (1 or
//!   4), the packet size (64 or 1500 bytes), the queue manager (on or
//!   off) and the threads (1 or 2), with the effect of every factor and
//!   interaction and its share of the variation, for the throughput (Mb/s,
//!   the report's response) and for CPU cycles per packet;
//! - `paraclick bench --suite substrate`: each slice's throughput against
//!   packet size (64 to 1500 bytes, four slices), and the substrate's
//!   overhead: one slice on the substrate against the same configuration
//!   alone, CPU cycles per packet, in one run.
//!
//! Every slice is the same small IPv4 forwarding path (an ordinary
//! configuration with `FromDevice(m)` and `ToDevice(m)`), on a metalink
//! of its own interface, provisioned far above what it can forward, so
//! that the rates measure the processing, not a bucket.

use paraclick_lang::Source;
use paraclick_model::design;
use paraclick_runtime::{clock, BuildOptions, Registry, Router};
use paraclick_substrate::spec::{self, ConfigFiles};
use std::time::Instant;

/// One combination of the factors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub slices: usize,
    /// The slice's frame, bytes (without the metalink's VLAN tag).
    pub size: usize,
    pub queue_manager: bool,
    pub threads: usize,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Run {
    /// Packets each slice forwarded.
    pub per_slice: Vec<u64>,
    pub seconds: f64,
    /// CPU time of the process over the run (every thread).
    pub cpu_seconds: f64,
    /// The cycle counter's rate.
    pub hz: f64,
    pub size: usize,
}

impl Run {
    pub fn packets(&self) -> u64 {
        self.per_slice.iter().sum()
    }
    pub fn pps(&self) -> f64 {
        self.packets() as f64 / self.seconds.max(1e-9)
    }
    /// Throughput of the slices' frames, Mb/s.
    pub fn mbps(&self) -> f64 {
        self.pps() * self.size as f64 * 8.0 / 1e6
    }
    /// CPU cycles per packet (all threads; time waiting for a core that
    /// other programs had left out).
    pub fn cpu_cycles_per_packet(&self) -> f64 {
        self.cpu_seconds * self.hz / self.packets().max(1) as f64
    }
}

/// A UDP/IPv4 frame of `size` bytes (at least 42), VLAN-tagged with
/// `vlan` when given (4 bytes more), as a Click `\<hex>` string.
pub fn frame(size: usize, vlan: Option<u16>) -> String {
    let size = size.max(42);
    let mut b = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    if let Some(v) = vlan {
        b.extend_from_slice(&[0x81, 0x00]);
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (size - 14) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1,
    ];
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    b.extend_from_slice(&ip);
    let udp_len = ip_len - 20;
    b.extend_from_slice(&[0x04, 0x00, 0x04, 0x01]);
    b.extend_from_slice(&udp_len.to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.resize(size + if vlan.is_some() { 4 } else { 0 }, 0);
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("\\<{hex}>")
}

/// The slice: an IPv4 forwarding path between `input` and `output` (its
/// devices on a substrate; a source and a sink alone).
fn slice_text(input: &str, output: &str) -> String {
    format!(
        "{input} -> Strip(14) -> CheckIPHeader -> DecIPTTL \
         -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) \
         -> c :: Counter -> Queue(1000) -> {output};"
    )
}

/// The substrate file of `p`: slice `s{i}` on metalink `m` (VLAN 10 + i)
/// of interface `p{i}`, whose input sends `per_slice` frames. With two
/// threads the first slice gets the second thread whole.
pub fn substrate_text(p: &Point, per_slice: u64) -> String {
    let mut t = format!(
        "cores = {}\nqueue_manager = {}\n",
        p.threads, p.queue_manager
    );
    for i in 0..p.slices {
        let vlan = 10 + i as u16;
        t.push_str(&format!(
            "[interface.p{i}]\nrate = \"1000GBps\"\n\
             input = 'InfiniteSource(DATA \"{}\", LIMIT {per_slice}, BURST 32, TIMESTAMP false)'\n\
             output = \"Discard\"\n\
             [slice.s{i}]\ntext = \"{}\"\ncores = {}\n\
             [slice.s{i}.metalink.m]\ninterface = \"p{i}\"\nvlan = {vlan}\nrate = \"500GBps\"\n",
            frame(p.size, Some(vlan)),
            slice_text("FromDevice(m)", "ToDevice(m)"),
            usize::from(i == 0 && p.threads > 1),
        ));
    }
    t
}

/// The same slice alone: its own router, the source and sink in place of
/// its devices.
pub fn alone_text(size: usize, packets: u64) -> String {
    slice_text(
        &format!(
            "src :: InfiniteSource(DATA \"{}\", LIMIT {packets}, BURST 32, TIMESTAMP false)",
            frame(size, None)
        ),
        "Unqueue(BURST 32) -> Discard",
    )
}

/// Runs `router` until its slices have forwarded all they will (every
/// source in `sources` has sent its `limit`, and the counters, polled
/// every millisecond, have not moved for 50 ms since, or for 2 s while
/// they are all still at zero), and measures up to
/// the counters' last change: the sources do not stop the run, so that a slice on a thread of its own, slower than
/// its source, is measured at its own rate (what its source sends
/// faster is dropped at its ingress queue, counted).
fn measure(
    router: Router,
    counters: &[String],
    sources: &[String],
    limit: u64,
    size: usize,
) -> Result<Run, String> {
    let read = |h: &String| -> Result<u64, String> {
        let v = router.read_handler(h).map_err(|e| format!("{h}: {e}"))?;
        v.trim().parse().map_err(|_| format!("{h}: {v}"))
    };
    // The quiet time is not measured (the run's time ends at the
    // counters' last change): long enough that a slice's thread the
    // machine keeps off its CPU for a while is not taken for finished.
    let quiet = std::time::Duration::from_millis(50);
    let quiet_at_zero = std::time::Duration::from_secs(2);
    let cpu0 = paraclick_model::machine::process_cpu_ns();
    let t0 = Instant::now();
    let c0 = clock::cycles();
    let mut last = (0u64, t0, c0, cpu0);
    let polled: Result<(), String> = std::thread::scope(|s| {
        let h = s.spawn(|| router.run());
        let r = loop {
            std::thread::sleep(std::time::Duration::from_millis(1));
            let mut n = 0;
            let mut return_err = None;
            for c in counters {
                match read(c) {
                    Ok(v) => n += v,
                    Err(e) => return_err = Some(e),
                }
            }
            if let Some(e) = return_err {
                break Err(e);
            }
            if n != last.0 {
                last = (
                    n,
                    Instant::now(),
                    clock::cycles(),
                    paraclick_model::machine::process_cpu_ns(),
                );
            } else if h.is_finished() {
                break Ok(());
            } else if last.1.elapsed() >= if n == 0 { quiet_at_zero } else { quiet } {
                let mut done = true;
                for src in sources {
                    match read(src) {
                        Ok(v) => done &= v >= limit,
                        Err(e) => return_err = Some(e),
                    }
                }
                if let Some(e) = return_err {
                    break Err(e);
                }
                if done {
                    break Ok(());
                }
            }
        };
        router.stop();
        let _ = h.join();
        r
    });
    polled?;
    let seconds = last.1.duration_since(t0).as_secs_f64();
    let cpu_seconds = last.3.saturating_sub(cpu0) as f64 / 1e9;
    let mut per_slice = Vec::new();
    for h in counters {
        per_slice.push(read(h)?);
    }
    Ok(Run {
        per_slice,
        seconds,
        cpu_seconds,
        hz: last.2.wrapping_sub(c0) as f64 / seconds.max(1e-9),
        size,
    })
}

/// Runs the substrate of `p`, `packets` frames in all.
pub fn run_substrate(p: &Point, packets: u64, reg: &Registry) -> Result<Run, String> {
    let per_slice = (packets / p.slices as u64).max(1);
    let text = substrate_text(p, per_slice);
    let s = spec::parse("bench", &text, &ConfigFiles::InlineOnly).map_err(|e| e.join("; "))?;
    let (router, _) = paraclick_substrate::build_router(&s, &text, reg, &BuildOptions::default())?;
    let counters: Vec<String> = (0..p.slices).map(|i| format!("s{i}/c.count")).collect();
    let sources: Vec<String> = (0..p.slices).map(|i| format!("p{i}/@in.count")).collect();
    measure(router, &counters, &sources, per_slice, p.size)
}

/// Runs the slice alone on one thread.
pub fn run_alone(size: usize, packets: u64, reg: &Registry) -> Result<Run, String> {
    let src = Source {
        name: "alone".into(),
        text: alone_text(size, packets),
    };
    let router = Router::build(&src, reg, &BuildOptions::default()).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    measure(
        router,
        &["c.count".to_string()],
        &["src.count".to_string()],
        packets,
        size,
    )
}

/// The design's factors, in the order of [`design::signs`].
pub const FACTORS: [&str; 4] = ["slices", "size", "qm", "threads"];

/// The combination of run `row` (signs from [`design::signs`]).
pub fn point(row: &[i8]) -> Point {
    Point {
        slices: if row[0] > 0 { 4 } else { 1 },
        size: if row[1] > 0 { 1500 } else { 64 },
        queue_manager: row[2] > 0,
        threads: if row[3] > 0 { 2 } else { 1 },
    }
}

/// Analyses responses `y[run][replication]` of the 2^4 design.
pub fn analyse(y: &[Vec<f64>]) -> Result<design::Analysis, String> {
    let names: Vec<String> = FACTORS.iter().map(|s| s.to_string()).collect();
    design::analyse(&names, y, 0.90)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `paraclick bench --design 2k`: the 16 combinations, `repeat`
/// replications each (in rounds, so that a drift of the machine's speed
/// is spread over all), `packets` frames a run.
pub fn run_design(packets: u64, repeat: usize, reg: &Registry) -> Result<(), String> {
    let signs = design::signs(FACTORS.len());
    let r = repeat.max(1);
    println!(
        "paraclick bench --design 2k: the substrate, 2^4 = 16 combinations x {r} replications, {packets} frames a run"
    );
    println!("factors: slices 1|4, size 64|1500 bytes, qm (queue manager) off|on, threads 1|2");
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); signs.len()];
    for _ in 0..r {
        for (i, row) in signs.iter().enumerate() {
            runs[i].push(run_substrate(&point(row), packets, reg)?);
        }
    }
    println!(
        "{:<4} {:>6} {:>5} {:>4} {:>7}   {:>9} {:>10} {:>10}",
        "run", "slices", "size", "qm", "threads", "Mpps", "Mb/s", "CPU c/p"
    );
    for (i, row) in signs.iter().enumerate() {
        let p = point(row);
        let v = &runs[i];
        println!(
            "{:<4} {:>6} {:>5} {:>4} {:>7}   {:>9.3} {:>10.1} {:>10.0}",
            i + 1,
            p.slices,
            p.size,
            if p.queue_manager { "on" } else { "off" },
            p.threads,
            median(v.iter().map(|x| x.pps() / 1e6).collect()),
            median(v.iter().map(Run::mbps).collect()),
            median(v.iter().map(Run::cpu_cycles_per_packet).collect()),
        );
    }
    let mbps: Vec<Vec<f64>> = runs
        .iter()
        .map(|v| v.iter().map(Run::mbps).collect())
        .collect();
    let cpp: Vec<Vec<f64>> = runs
        .iter()
        .map(|v| v.iter().map(Run::cpu_cycles_per_packet).collect())
        .collect();
    println!("\nthroughput (the report's response):");
    print!("{}", analyse(&mbps)?.render("Mb/s"));
    println!("\nCPU cycles per packet:");
    print!("{}", analyse(&cpp)?.render("cycles"));
    Ok(())
}

/// `paraclick bench --suite substrate`: the per-slice sweep over packet
/// sizes (four slices, queue manager on, one thread), then the overhead
/// (one slice on the substrate, with and without the queue manager,
/// against the slice alone; medians of `repeat` alternating rounds).
pub fn run_suite(packets: u64, repeat: usize, reg: &Registry) -> Result<(), String> {
    let sizes = [64usize, 128, 256, 512, 1024, 1500];
    println!("per-slice throughput against packet size: 4 slices, queue manager on, 1 thread, {packets} frames a run");
    println!(
        "{:>6}  {}  {:>10}",
        "bytes",
        (0..4)
            .map(|i| format!("{:>20}", format!("s{i} Mpps (Mb/s)")))
            .collect::<Vec<_>>()
            .join(" "),
        "all Mb/s"
    );
    for &size in &sizes {
        let p = Point {
            slices: 4,
            size,
            queue_manager: true,
            threads: 1,
        };
        let run = run_substrate(&p, packets, reg)?;
        let cells: Vec<String> = run
            .per_slice
            .iter()
            .map(|&n| {
                let pps = n as f64 / run.seconds;
                format!(
                    "{:>20}",
                    format!("{:.3} ({:.0})", pps / 1e6, pps * size as f64 * 8.0 / 1e6)
                )
            })
            .collect();
        println!("{size:>6}  {}  {:>10.0}", cells.join(" "), run.mbps());
    }
    let r = repeat.max(1);
    let (mut alone, mut on, mut off) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..r {
        alone.push(run_alone(64, packets, reg)?.cpu_cycles_per_packet());
        for (qm, v) in [(true, &mut on), (false, &mut off)] {
            let p = Point {
                slices: 1,
                size: 64,
                queue_manager: qm,
                threads: 1,
            };
            v.push(run_substrate(&p, packets, reg)?.cpu_cycles_per_packet());
        }
    }
    let (a, n, f) = (median(alone), median(on), median(off));
    println!(
        "\nthe substrate's overhead: one slice, 64-byte frames, 1 thread, CPU cycles per packet (medians of {r} alternating rounds)"
    );
    println!("  alone                          {a:>8.0}");
    println!(
        "  on the substrate               {n:>8.0}   {:.2}x alone (+{:.0} cycles)",
        n / a,
        n - a
    );
    println!(
        "  on the substrate, qm off       {f:>8.0}   {:.2}x alone (+{:.0} cycles)",
        f / a,
        f - a
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The effects of the 2^4 design on known responses: y = 10 + 3
    /// slices + 2 size - 1 qm + 0.5 slices*size (in sign units) gives
    /// those effects back, nothing else, and the shares of variation
    /// their squares imply.
    #[test]
    fn effects_of_the_design_on_known_numbers() {
        let signs = design::signs(4);
        let y: Vec<Vec<f64>> = signs
            .iter()
            .map(|s| {
                let (a, b, c) = (f64::from(s[0]), f64::from(s[1]), f64::from(s[2]));
                let v = 10.0 + 3.0 * a + 2.0 * b - 1.0 * c + 0.5 * a * b;
                vec![v, v]
            })
            .collect();
        let an = analyse(&y).unwrap();
        let effect = |name: &str| an.terms.iter().find(|t| t.name == name).unwrap().effect;
        assert!((effect("mean") - 10.0).abs() < 1e-12);
        assert!((effect("slices") - 3.0).abs() < 1e-12);
        assert!((effect("size") - 2.0).abs() < 1e-12);
        assert!((effect("qm") + 1.0).abs() < 1e-12);
        assert!((effect("slices*size") - 0.5).abs() < 1e-12);
        for t in &an.terms {
            if !["mean", "slices", "size", "qm", "slices*size"].contains(&t.name.as_str()) {
                assert!(t.effect.abs() < 1e-12, "{}: {}", t.name, t.effect);
            }
        }
        // Shares: 9 : 4 : 1 : 0.25 of 14.25.
        let share = |name: &str| an.terms.iter().find(|t| t.name == name).unwrap().fraction;
        assert!((share("slices") - 9.0 / 14.25).abs() < 1e-9);
        assert!((share("slices*size") - 0.25 / 14.25).abs() < 1e-9);
        assert!(an.render("Mb/s").contains("slices*size*qm*threads"));
    }

    #[test]
    fn the_design_rows_are_the_factors_levels() {
        let signs = design::signs(4);
        assert_eq!(
            point(&signs[0]),
            Point {
                slices: 1,
                size: 64,
                queue_manager: false,
                threads: 1
            }
        );
        assert_eq!(
            point(&signs[15]),
            Point {
                slices: 4,
                size: 1500,
                queue_manager: true,
                threads: 2
            }
        );
    }

    #[test]
    fn frames_are_tagged_and_sized() {
        // 64 bytes untagged, 68 tagged: 2 hex digits a byte in \<...>.
        assert_eq!(frame(64, None).len(), 3 + 128);
        assert_eq!(frame(64, Some(10)).len(), 3 + 136);
        assert!(frame(64, Some(10)).contains("8100000a0800"));
    }

    /// Every design point and the slice alone build and forward (a few
    /// thousand frames, so the test stays short): at one thread every
    /// frame; at two, what the slice's thread took before its ingress
    /// queue overflowed, at least that queue's worth.
    #[test]
    fn every_point_runs_and_its_slices_forward() {
        let reg = paraclick_io::full_registry();
        for row in design::signs(4) {
            let p = point(&row);
            let r = run_substrate(&p, 4000, &reg).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert_eq!(r.per_slice.len(), p.slices);
            if p.threads == 1 {
                assert_eq!(r.packets(), 4000, "{p:?}: {:?}", r.per_slice);
            } else {
                assert!(
                    (1000..=4000).contains(&r.packets()),
                    "{p:?}: {:?}",
                    r.per_slice
                );
            }
            assert!(
                r.seconds > 0.0 && r.cpu_cycles_per_packet() > 0.0,
                "{p:?}: {r:?}"
            );
        }
        let a = run_alone(1500, 3000, &reg).unwrap();
        assert_eq!(a.packets(), 3000);
    }
}
