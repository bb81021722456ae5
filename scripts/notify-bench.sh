#!/usr/bin/env bash
# The fake IP router split across two threads (conf/fake-iprouter-split.click:
# sources on thread 0, drains on thread 1) against the same router on one
# thread, alternating run by run: packets delivered, queue drops, and wall and
# CPU time of each run (issue 11's target: >= 99.9% delivered at -j 2, at
# least as fast as -j 1).
#
#   scripts/notify-bench.sh [ROUNDS [N]]     (defaults 3 rounds, N=1000000 per source)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
n=${2:-1000000}
bin=${PARACLICK:-target/release/paraclick}
conf=conf/fake-iprouter-split.click
printf "%-4s %10s %10s %8s %10s %8s %8s %8s\n" j generated delivered drops delivered% wall_s user_s sys_s
for r in $(seq "$rounds"); do
  for j in 1 2; do
    out=$( { /usr/bin/time -f "TIME %e %U %S" "$bin" -j "$j" "$conf" "N=$n" \
        -h src0.count -h src1.count -h out0.count -h out1.count \
        -h q0.drops -h q1.drops; } 2>&1 )
    v() { echo "$out" | awk -v h="$1:" '$1==h {getline; print; exit}'; }
    gen=$(( $(v src0.count) + $(v src1.count) ))
    del=$(( $(v out0.count) + $(v out1.count) ))
    drops=$(( $(v q0.drops) + $(v q1.drops) ))
    read -r _ wall user sys < <(echo "$out" | grep '^TIME')
    printf "%-4s %10d %10d %8d %10.3f %8s %8s %8s\n" "$j" "$gen" "$del" "$drops" \
      "$(echo "100*$del/$gen" | bc -l)" "$wall" "$user" "$sys"
  done
done
