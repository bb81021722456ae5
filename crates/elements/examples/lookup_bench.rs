//! Route lookup benchmark: builds a table of 1M random prefixes shaped like
//! a BGP table (lengths weighted as in `lpm::gen::LENGTH_WEIGHTS`), then
//! measures lookups per second and cycles per lookup: independent lookups
//! (throughput), dependent lookups (latency), lookups in batches of 32
//! under the elements' sharded read lock, and all threads at once.
//!
//!     cargo run --release -p paraclick-elements --example lookup_bench [-- PREFIXES]
//!
//! Prints figures; asserts nothing.

use crossbeam_utils::sync::ShardedLock;
use paraclick_elements::iproute::lpm::gen::{addr_in, random_route, Rng};
use paraclick_elements::iproute::lpm::Lpm;
use paraclick_runtime::clock::{cycles, cycles_per_second};
use std::hint::black_box;
use std::time::Instant;

const LOOKUPS: usize = 1 << 22;
const ROUNDS: usize = 5;

struct Figure {
    lookups_per_sec: f64,
    cycles_per_lookup: f64,
}

/// Runs `f` (which does `n` lookups) `ROUNDS` times; the best round.
fn measure(n: usize, mut f: impl FnMut() -> u64) -> Figure {
    let mut best = Figure {
        lookups_per_sec: 0.0,
        cycles_per_lookup: f64::MAX,
    };
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let c0 = cycles();
        black_box(f());
        let c = cycles().wrapping_sub(c0) as f64;
        let s = t.elapsed().as_secs_f64();
        if n as f64 / s > best.lookups_per_sec {
            best = Figure {
                lookups_per_sec: n as f64 / s,
                cycles_per_lookup: c / n as f64,
            };
        }
    }
    best
}

fn report(what: &str, f: &Figure) {
    println!(
        "{what:<44} {:>8.2} M lookups/s  {:>7.1} cycles/lookup",
        f.lookups_per_sec / 1e6,
        f.cycles_per_lookup
    );
}

fn main() {
    let nprefixes: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let hz = cycles_per_second();
    println!("cycle counter: {:.2} GHz", hz / 1e9);

    // Build the table.
    let mut rng = Rng::with_seed(2001);
    let mut routes = Vec::with_capacity(nprefixes);
    let mut table = Lpm::new();
    let t = Instant::now();
    while table.len() < nprefixes {
        let r = random_route(&mut rng, 16, 64);
        if table.get(r.addr, r.len).is_none() {
            table.insert(r);
            routes.push(r);
        }
    }
    let build = t.elapsed().as_secs_f64();
    println!(
        "table: {} prefixes built in {:.2} s ({:.0} k inserts/s); lookup structure {:.1} MB, {} chunks",
        table.len(),
        build,
        table.len() as f64 / build / 1e3,
        table.lookup_bytes() as f64 / (1 << 20) as f64,
        table.chunks_in_use()
    );

    // Address sets: uniform over the address space, and inside the
    // table's prefixes (the lookups real traffic makes: mostly deep).
    let uniform: Vec<u32> = (0..LOOKUPS).map(|_| rng.u32(..)).collect();
    let inside: Vec<u32> = (0..LOOKUPS)
        .map(|_| {
            let r = routes[rng.usize(..routes.len())];
            addr_in(&mut rng, &r)
        })
        .collect();
    let hits = inside
        .iter()
        .filter(|&&a| table.lookup_index(a) != 0)
        .count();
    println!(
        "addresses: {} uniform, {} inside table prefixes ({:.1}% of uniform ones match a route)",
        LOOKUPS,
        LOOKUPS,
        100.0
            * uniform
                .iter()
                .filter(|&&a| table.lookup_index(a) != 0)
                .count() as f64
            / LOOKUPS as f64
    );
    debug_assert_eq!(hits, LOOKUPS);

    for (name, addrs) in [("uniform", &uniform), ("inside prefixes", &inside)] {
        // Independent lookups: the CPU overlaps their cache misses.
        let f = measure(addrs.len(), || {
            let mut s = 0u64;
            for &a in addrs.iter() {
                s = s.wrapping_add(u64::from(table.lookup_index(a)));
            }
            s
        });
        report(&format!("{name}, independent (throughput)"), &f);

        // Dependent lookups: each address depends on the previous result,
        // so every miss is paid in full (latency).
        let f = measure(addrs.len(), || {
            let mut prev = 0u32;
            for &a in addrs.iter() {
                prev = table.lookup_index(a ^ (prev & 1));
            }
            u64::from(prev)
        });
        report(&format!("{name}, dependent (latency)"), &f);

        // Through the batch interface the elements use.
        let mut out = vec![0u32; 256];
        let f = measure(addrs.len(), || {
            let mut s = 0u64;
            for batch in addrs.chunks(256) {
                table.lookup_batch(batch, &mut out);
                s = s.wrapping_add(u64::from(out[0]));
            }
            s
        });
        report(&format!("{name}, lookup_batch of 256"), &f);
    }

    // As the lookup elements do it: a read lock per batch of 32.
    let shared = ShardedLock::new(table);
    let mut out = [0u32; 32];
    let f = measure(inside.len(), || {
        let mut s = 0u64;
        for batch in inside.chunks(32) {
            let t = shared.read().unwrap();
            t.lookup_batch(batch, &mut out);
            for &i in &out[..batch.len()] {
                if i != 0 {
                    s = s.wrapping_add(u64::from(t.hop(i).port));
                }
            }
        }
        s
    });
    report("inside prefixes, batches of 32 under read lock", &f);

    // Every thread at once, each on its own slice of addresses.
    let nthreads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = inside.len() / nthreads;
    let t = Instant::now();
    let c0 = cycles();
    std::thread::scope(|sc| {
        for k in 0..nthreads {
            let addrs = &inside[k * per..(k + 1) * per];
            let shared = &shared;
            sc.spawn(move || {
                let mut s = 0u64;
                let mut out = [0u32; 32];
                for _ in 0..ROUNDS {
                    for batch in addrs.chunks(32) {
                        let t = shared.read().unwrap();
                        t.lookup_batch(batch, &mut out);
                        s = s.wrapping_add(u64::from(out[0]));
                    }
                }
                black_box(s);
            });
        }
    });
    let n = per * nthreads * ROUNDS;
    let s = t.elapsed().as_secs_f64();
    let c = cycles().wrapping_sub(c0) as f64;
    report(
        &format!("inside prefixes, {nthreads} threads, batches of 32"),
        &Figure {
            lookups_per_sec: n as f64 / s,
            cycles_per_lookup: c * nthreads as f64 / n as f64,
        },
    );
}
