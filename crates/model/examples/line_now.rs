//! Prints the core-to-core cache-line time now, ns per one-way transfer,
//! every `SECS` seconds (default: once): which of its states a VM's cores
//! are in. `cargo run --release -p paraclick-model --example line_now [SECS [COUNT]]`
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let every: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    for i in 0..count.max(1) {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(every));
        }
        let t = std::time::Instant::now();
        match paraclick_model::machine::line_ns_now(20_000) {
            Some(l) => println!(
                "{} line {l:.1} ns ({:.1} ms)",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0),
                t.elapsed().as_secs_f64() * 1e3
            ),
            None => println!("one core: no core-to-core line"),
        }
    }
}
