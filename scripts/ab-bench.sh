#!/usr/bin/env bash
# Same-run A/B of two paraclick binaries: alternates `paraclick bench -r 1
# ARGS...` between them ROUNDS times and prints each run and the median
# Mpps of each, and the median of the per-round ratios B/A. On a shared
# machine whose speed drifts, only figures measured this close together
# compare.
#
#   scripts/ab-bench.sh OLD/paraclick NEW/paraclick 7 -j 2 --sched static \
#       --count out0.count --count out1.count -n 4000000 split.click
#
# (Build the old binary from a worktree: git worktree add /tmp/old REV;
# CARGO_TARGET_DIR=/tmp/old-target cargo build --release there.)
set -euo pipefail
A=${1:?usage: $0 BIN_A BIN_B ROUNDS BENCH-ARGS...}
B=${2:?usage: $0 BIN_A BIN_B ROUNDS BENCH-ARGS...}
ROUNDS=${3:?usage: $0 BIN_A BIN_B ROUNDS BENCH-ARGS...}
shift 3
ra=() rb=() ratios=()
for _ in $(seq "$ROUNDS"); do
  a=$("$A" bench -r 1 "$@" | tail -1 | awk '{print $(NF-2)}')
  b=$("$B" bench -r 1 "$@" | tail -1 | awk '{print $(NF-2)}')
  echo "A $a  B $b"
  ra+=("$a") rb+=("$b")
  ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median Mpps: A $(median "${ra[@]}")  B $(median "${rb[@]}")  median ratio B/A $(median "${ratios[@]}")"
