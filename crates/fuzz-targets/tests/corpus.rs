//! Replays every fuzz target over its committed seed corpus
//! (`fuzz/corpus/TARGET/`) and over every crash input the campaigns found
//! (`fuzz/regressions/TARGET/`), on stable, so CI runs them on each change.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

fn replay(kind: &str) -> usize {
    let mut n = 0;
    for (name, f) in paraclick_fuzz_targets::TARGETS {
        for path in files(&fuzz_dir().join(kind).join(name)) {
            let data = std::fs::read(&path).expect("read input");
            // Name the input if it fails.
            let r = std::panic::catch_unwind(|| f(&data));
            assert!(r.is_ok(), "{name} fails on {}", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn every_target_passes_its_seed_corpus() {
    let n = replay("corpus");
    // Every target has seeds.
    for (name, _) in paraclick_fuzz_targets::TARGETS {
        assert!(
            !files(&fuzz_dir().join("corpus").join(name)).is_empty(),
            "no seeds for {name}"
        );
    }
    assert!(n >= 118, "{n} seeds (118 are committed)");
}

/// The crash inputs committed under `fuzz/regressions/`: a checkout that
/// lost some (or a replay that found none) must fail, not pass empty.
/// Raise this when a campaign adds one.
const REGRESSIONS: usize = 9;

#[test]
fn every_crash_found_stays_fixed() {
    assert_eq!(replay("regressions"), REGRESSIONS, "crash inputs replayed");
}
