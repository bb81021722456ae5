#!/usr/bin/env bash
# -j 2 under contention: with a busy loop holding the first allowed CPU
# (taskset), runs each configuration at -j 1 and -j 2 in pairs, alternating
# which goes first, ROUNDS times, and prints per configuration the wall
# seconds of every run and the median of the per-pair ratios -j 1 / -j 2
# (above 1: -j 2 is faster; the target is at least 0.91, -j 2 never more
# than 10% slower).
#
#   bash scripts/bench-contention.sh [BIN] [ROUNDS]
#   ONLY=qos-bench bash scripts/bench-contention.sh target/ci/paraclick 9
#   NOBUSY=1 bash scripts/bench-contention.sh ...   # the same, unloaded
#
# Wall time includes start-up. State the machine's load (printed first).
set -euo pipefail
BIN=${1:-target/release/paraclick}
ROUNDS=${2:-5}
cd "$(dirname "$0")/.."

# name | configuration | define overrides
CONFS=(
  "qos-bench|conf/qos-bench.click|N=2000000"
  "fake-iprouter|conf/fake-iprouter.click|N=2000000"
  "fake-iprouter-10M|conf/fake-iprouter.click|N=10000000"
  "fake-iprouter-x2|conf/fake-iprouter-x2.click|N=2000000"
)

BUSY=
cleanup() { [ -n "$BUSY" ] && kill "$BUSY" 2>/dev/null || true; }
trap cleanup EXIT
trap "exit 130" INT TERM
if [ -z "${NOBUSY:-}" ]; then
  cpu=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
  taskset -c "$cpu" sh -c 'while :; do :; done' &
  BUSY=$!
  echo "busy loop on CPU $cpu (pid $BUSY)"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  $(date -u +%H:%M:%S) UTC  $BIN  rounds $ROUNDS"

wall() { # prints wall seconds of one run
  local s e
  s=$(date +%s%N)
  "$BIN" "$@" >/dev/null
  e=$(date +%s%N)
  awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf "%-20s %-8s %s\n" configuration ratio "runs (-j1/-j2 s)"
for entry in "${CONFS[@]}"; do
  IFS='|' read -r name conf defs <<<"$entry"
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ]; then continue; fi
  ratios=()
  runs=()
  for r in $(seq 1 "$ROUNDS"); do
    if (( r % 2 )); then
      a=$(wall -j 1 "$conf" $defs); b=$(wall -j 2 "$conf" $defs)
    else
      b=$(wall -j 2 "$conf" $defs); a=$(wall -j 1 "$conf" $defs)
    fi
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')")
    runs+=("$a/$b")
  done
  med=$(printf "%s\n" "${ratios[@]}" | median)
  printf "%-20s %-8s %s\n" "$name" "$med" "${runs[*]}"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  $(date -u +%H:%M:%S) UTC"
