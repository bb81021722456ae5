#!/usr/bin/env bash
# More threads never slower by default: runs every conf/ configuration that
# runs without devices, privileges or input files at -j 1 and -j 2 with the
# default scheduler, alternating (1 2 1 2 ...) ROUNDS times, and prints per
# configuration the median wall seconds (to the millisecond, taken around
# each run) and CPU (user + system) seconds of each; for wall time the
# median of the rounds' ratios -j 1 / -j 2 (above 1: -j 2 is faster; a
# round's two runs are seconds apart, so drift on a shared machine cancels),
# for CPU time the ratio of the medians; and the delivered counts of every
# run (which must agree for the configurations a
# LIMIT and STOP end; a Script that stops on a count stops within a few
# packets of it).
#
#   bash scripts/bench-threads.sh [BIN] [ROUNDS] [EXTRA ARGS FOR BOTH...]
#   bash scripts/bench-threads.sh target/ci/paraclick 3
#   ONLY=qos-bench bash scripts/bench-threads.sh target/ci/paraclick 5
#
# Wall time includes start-up. State the machine's load with the figures
# (printed first): on a shared machine only figures this close together
# compare.
set -euo pipefail
BIN=${1:-target/release/paraclick}
ROUNDS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
EXTRA=("$@")
cd "$(dirname "$0")/.."

# name | define overrides | handlers counted as delivered
CONFS=(
  "coordinated-output||ca0.count ca1.count cb0.count cb1.count"
  "fake-iprouter|N=1000000|out0.count out1.count"
  "fake-iprouter-split|N=1000000|out0.count out1.count"
  "fake-iprouter-x2|N=500000|a/out0.count a/out1.count b/out0.count b/out1.count"
  "fake-iprouter6|N=1000000|out0.count out1.count"
  "firewall-bench|N=1000000|low.count mid.count high.count denied.count"
  "firewall-pipeline|N=1000000|low.count mid.count high.count denied.count"
  "flow-split||c0.count c1.count"
  "idle-pull|TIME=1|"
  "idle-script|TIME=1|"
  "infinite-discard|N=3000000|"
  "marking-pipeline|N=1000000|out.count"
  "nat-bench|N=1000000|c.count"
  "qos-bench|N=1000000|out.count"
  "queue-unqueue|N=3000000|c.count"
  "replicated-qos|N=1000000|r0/out.count r1/out.count"
  "vpn-bench|N=300000|c0.count c1.count"
)
SKIPPED="
iprouter-combo iprouter-dualstack-veth iprouter-veth iprouter-veth-2q
iprouter-veth-2q-poll iprouter-veth-host iprouter6-veth iprouter6-veth-2q
nat-gateway-veth qos-veth vpn-gateway-veth: need network devices (root,
  veth pairs; scripts/bench-veth.sh runs them)
iprouter iprouter-pcap nat-pcap qos-pcap vpn-pcap vpn-click-style-pcap:
  need input pcap files (their tests under tests/ generate them)
rated-queue: a paced RatedSource with no STOP; runs until stopped, and its
  wall time is its RATE's (bench --mlffr drives it)"

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# $(date -u '+%F %T UTC'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg), $BIN, $ROUNDS rounds"
printf '%-20s %8s %8s %6s %8s %8s %6s  %s\n' config "wall-j1" "wall-j2" "ratio" "cpu-j1" "cpu-j2" "ratio" "delivered (j1 | j2)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
slower=()
for entry in "${CONFS[@]}"; do
  IFS='|' read -r name defs handlers <<<"$entry"
  [[ -n ${ONLY:-} && " $ONLY " != *" $name "* ]] && continue
  hargs=()
  for h in $handlers; do hargs+=(-h "$h"); done
  declare -A wall=() cpu=() got=()
  ratios=""
  for j in 1 2; do wall[$j]="" cpu[$j]="" got[$j]=""; done
  for _ in $(seq "$ROUNDS"); do
    for j in 1 2; do
      # shellcheck disable=SC2086
      t0=$EPOCHREALTIME
      /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$BIN" -j "$j" "${EXTRA[@]}" \
        "conf/$name.click" $defs "${hargs[@]}" >"$tmp/out" 2>"$tmp/err" || {
        echo "$name -j $j failed:"; cat "$tmp/err"; continue; }
      t1=$EPOCHREALTIME
      read -r _ u s <"$tmp/time"
      w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
      wall[$j]+=" $w"
      [[ $j == 2 ]] && ratios+=" $(awk -v a="$last1" -v b="$w" 'BEGIN { printf "%.4f", (b > 0 ? a / b : 0) }')"
      last1=$w
      cpu[$j]+=" $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
      got[$j]+=" $(awk '/^[0-9]+$/ { s += $1 } END { print s + 0 }' "$tmp/out")"
    done
  done
  # shellcheck disable=SC2086
  w1=$(median ${wall[1]}) w2=$(median ${wall[2]}) c1=$(median ${cpu[1]}) c2=$(median ${cpu[2]})
  # shellcheck disable=SC2086
  rw=$(printf '%.3f' "$(median $ratios)")
  rc=$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  printf '%-20s %8s %8s %6s %8s %8s %6s  %s |%s\n' "$name" "$w1" "$w2" "$rw" "$c1" "$c2" "$rc" "${got[1]# }" "${got[2]}"
  awk -v r="$rw" 'BEGIN { exit !(r < 1.0) }' && slower+=("$name ($rw)")
done
echo "# wall ratio below 1 (-j 2 slower): ${slower[*]:-none}"
echo "# skipped:$SKIPPED"
