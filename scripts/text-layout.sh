#!/usr/bin/env bash
# Regenerate crates/paraclick/text-order.ld: the linker script that puts the
# functions a router run executes at the front of the binary's .text.
#
#   bash scripts/text-layout.sh [BINARY]     (default target/ci/paraclick)
#
# Runs the binary under callgrind on a training set of the shipped
# configurations (a few thousand packets each: start-up, the configuration
# language, router build, the scheduler and the elements those routers use),
# then writes the script from the functions they executed. A function
# executed by more training runs is placed earlier. Rebuild afterwards
# (cargo build --profile ci -p paraclick); docs/PERFORMANCE.md says why.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/ci/paraclick}
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
i=0
train() {
    i=$((i + 1))
    valgrind --tool=callgrind --demangle=no \
        --callgrind-out-file="$OUT/$(printf %02d $i).cg" "$BIN" "$@" >/dev/null 2>&1 \
        || { echo "training run failed: $*" >&2; exit 1; }
}
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
python3 scripts/lib/text-order.py "$BIN" "$OUT"/*.cg > crates/paraclick/text-order.ld
echo "wrote crates/paraclick/text-order.ld ($(grep -c '^    \*' crates/paraclick/text-order.ld) rules)"
