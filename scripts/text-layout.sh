#!/usr/bin/env bash
# Regenerate crates/paraclick/text-order.ld: the linker script that puts the
# functions a router run executes at the front of the binary's .text.
#
#   bash scripts/text-layout.sh [BINARY...]
#   bash scripts/text-layout.sh --check [BINARY...]
#
# BINARY defaults to both builds that ship or get tested,
# $CARGO_TARGET_DIR/release/paraclick (what scripts/run-example.sh builds)
# and $CARGO_TARGET_DIR/ci/paraclick (the test suite's), and both must be
# there: build them first (cargo build --release -p paraclick; cargo test
# --profile ci --workspace --no-run, which builds the ci binary the test
# suite runs: `cargo build -p paraclick` unifies features differently and
# names generic functions' instances with other hashes). The two profiles name and split functions
# differently (thin LTO inlines across crates and renames what it makes
# local), so the script is trained on each and holds the rules of both; a
# rule that matches nothing in a build is skipped by the linker.
#
# Runs each binary under callgrind on a training set of the shipped
# configurations (a few thousand packets each: start-up, the configuration
# language, router build, the scheduler and the elements those routers use),
# and a program `paraclick build` writes for the fake IP router (what only
# built programs run), then writes the script from the functions they
# executed. A function executed by more training runs is placed earlier.
# Rebuild afterwards; docs/PERFORMANCE.md says why.
#
# --check writes nothing: for each binary it runs the fake IP router once
# under callgrind and prints how many 64-KiB stretches of .text the code it
# executed lies in, against the fewest that code could fill, and the
# executed functions that lie outside the front (a stale script, or a
# function the training set missed).
set -euo pipefail
cd "$(dirname "$0")/.."
CHECK=false
if [ "${1:-}" = --check ]; then CHECK=true; shift; fi
T=${CARGO_TARGET_DIR:-target}
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=("$T/release/paraclick" "$T/ci/paraclick")
for b in "${BINS[@]}"; do
    [ -x "$b" ] || { echo "no binary at $b" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
i=0
train() {
    i=$((i + 1))
    valgrind --tool=callgrind --demangle=no \
        --callgrind-out-file="$OUT/$k/$(printf %02d $i).cg" "$BIN" "$@" >/dev/null 2>&1 \
        || { echo "training run failed: $BIN $*" >&2; exit 1; }
}
args=()
for k in "${!BINS[@]}"; do
    BIN=${BINS[$k]}
    mkdir "$OUT/$k"
    if $CHECK; then
        train conf/fake-iprouter.click N=2000 -h out0.count
        python3 scripts/lib/text-order.py check "$BIN" "$OUT/$k"/*.cg
        continue
    fi
    train conf/fake-iprouter.click N=2000 -h out0.count
    train conf/fake-iprouter.click N=2000 BURST=32
    train -j 2 conf/fake-iprouter.click N=2000
    train conf/fake-iprouter6.click N=2000
    train conf/firewall-bench.click N=2000
    train conf/nat-bench.click N=2000 CAPACITY=4096
    train conf/qos-bench.click N=2000
    train conf/infinite-discard.click N=2000
    train conf/queue-unqueue.click N=2000
    train conf/marking-pipeline.click N=2000
    train conf/flow-split.click N=2000
    train check conf/fake-iprouter.click
    [ ${#args[@]} -eq 0 ] || args+=(--)
    args+=("$BIN" "$OUT/$k"/*.cg)
    # A program `paraclick build` writes for the fake IP router, linked
    # from this build's libraries: the code only built programs run (its
    # start-up, installing the compiled entries, the compiled pulls). The
    # program's own crate is left out of the rules (paraclick build
    # orders it for each program).
    dir=$(dirname "$BIN")
    profile=$(basename "$dir")
    [ "$profile" = debug ] && profile=dev
    mkdir "$OUT/$k-built"
    CARGO_TARGET_DIR=$(dirname "$dir") "$BIN" build conf/fake-iprouter.click \
        --profile "$profile" --no-code-order -o "$OUT/$k-built/built" \
        --keep "$OUT/$k-built/crate" >/dev/null 2>&1 \
        || { echo "paraclick build failed: $BIN" >&2; exit 1; }
    BIN=$OUT/$k-built/built
    k=$k-built
    train N=2000 -h out0.count
    args+=(-- --program "$BIN" "$OUT/$k"/*.cg)
done
$CHECK && exit 0
python3 scripts/lib/text-order.py write "${args[@]}" > "$OUT/text-order.ld"
mv "$OUT/text-order.ld" crates/paraclick/text-order.ld
echo "wrote crates/paraclick/text-order.ld ($(grep -c '^    \*' crates/paraclick/text-order.ld) rules)"
