#!/usr/bin/env bash
# Runs the whole paraclick test suite: formatting, lints, docs, unit and
# end-to-end tests. Installs what it needs first (scripts/bootstrap.sh
# --tests: the example run does without the tests' browser and tools).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --tests
export PATH="$HOME/.cargo/bin:$PATH"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --profile ci -- -D warnings
echo "== cargo doc"
# Documentation builds without a warning (broken or private intra-doc
# links). Profile `ci`: it reuses the dependencies clippy just checked.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --profile ci
echo "== scripts' own checks"
# The instruction table's arithmetic (scripts/where-packets.sh): the
# callgrind parser and the parts a frame is charged to.
python3 scripts/lib/where_packets.py --self-test
echo "== cargo test"
# Tests skip when the machine lacks what they need (root for the netns
# tests, tcpdump, bzip2, a browser); here (CI), after the bootstrap
# installed everything, that is a failure.
export PARACLICK_NO_SKIP=1
# Profile `ci` (Cargo.toml): optimised, without link-time optimisation.
# --no-fail-fast: every failing test binary is reported, not just the first.
cargo test --workspace --profile ci --no-fail-fast 2>&1 | tee target/test-output.txt
# Fail loudly if nothing ran (a suite that silently runs no test is broken).
passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' target/test-output.txt | awk '{s+=$4} END {print s+0}')
if (( passed == 0 )); then
  echo "test.sh: no test ran" >&2
  exit 1
fi
echo "test.sh: $passed tests passed"

# Model check of the queue ring (crates/runtime/src/ring.rs) under loom:
# every interleaving of small producer/consumer scenarios, at the preemption
# bound set here (SPSC and MPSC explore all interleavings regardless). Its
# own target dir: `--cfg loom` would otherwise rebuild the normal cache.
echo "== loom model check of the ring"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
  cargo test --profile ci -p paraclick-runtime --lib ring::loom_tests -- --nocapture \
  2>&1 | tee target/loom-output.txt
models=$(grep -Eo 'test result: ok\. [0-9]+ passed' target/loom-output.txt | awk '{s+=$4} END {print s+0}')
if (( models == 0 )); then
  echo "test.sh: the loom model check ran no model" >&2
  exit 1
fi
echo "test.sh: $models ring models passed under loom"

# The NAT flow table's map (crates/elements/src/nat/map.rs): an overflowed
# key stays findable, and a grown bucket array is seen whole.
echo "== loom model check of the NAT map"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
  cargo test --profile ci -p paraclick-elements --lib nat::map::loom_tests -- --nocapture \
  2>&1 | tee target/loom-nat-output.txt
nat_models=$(grep -Eo 'test result: ok\. [0-9]+ passed' target/loom-nat-output.txt | awk '{s+=$4} END {print s+0}')
if (( nat_models == 0 )); then
  echo "test.sh: the NAT map's loom model check ran no model" >&2
  exit 1
fi
echo "test.sh: $nat_models NAT map models passed under loom"

# IPsec, one SA shared by the threads (docs/IPSEC.md): the replay window
# accepts a number at most once (crates/elements/src/ipsec/replay.rs), and
# the outbound sequence blocks never hand out a number twice
# (crates/elements/src/ipsec/sa/seq.rs).
echo "== loom model check of the IPsec replay window and sequence blocks"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
  cargo test --profile ci -p paraclick-elements --lib -- --nocapture \
  ipsec::replay::loom_tests ipsec::sa::seq::loom_tests \
  2>&1 | tee target/loom-ipsec-output.txt
ipsec_models=$(grep -Eo 'test result: ok\. [0-9]+ passed' target/loom-ipsec-output.txt | awk '{s+=$4} END {print s+0}')
if (( ipsec_models == 0 )); then
  echo "test.sh: the IPsec loom model check ran no model" >&2
  exit 1
fi
echo "test.sh: $ipsec_models IPsec models passed under loom"
