#!/usr/bin/env bash
# NAT benchmark on generated traces: paraclick's IPRewriter against real
# Click's on the same pcap, in the same run.
#
#   scripts/bench-nat.sh PARACLICK [CLICK] [ROUNDS]
#
# For each flow count (1,000, 50,000; and 1,000,000 with BIG=1) it writes
# a trace of Ethernet/IPv4/UDP frames with paraclick's FastUDPFlows
# (PACKETS packets, default 2,000,000, round robin over the flows, so
# each flow's first packet creates its mapping and the rest are lookups),
# then runs, alternately and ROUNDS times (default 3), in each program:
#   read:  FromDump(trace) -> Discard                       (the trace alone)
#   nat:   FromDump(trace) -> Strip(14) -> MarkIPHeader
#            -> IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1) -> Counter -> Discard
# under /usr/bin/time, and prints the medians of CPU seconds (user+sys:
# the shared machine's wall time is mostly waiting), packets per CPU
# second, CPU cycles per packet (CPU seconds x clock rate / packets) for
# the whole run and for the rewriter alone (nat minus read), and
# paraclick/Click ratios (of rewriter cycles per packet: below 1 means
# paraclick is cheaper). One thread each (Click userlevel is
# single-threaded); paraclick's scaling is `paraclick bench --suite nat`.
# Without CLICK only paraclick runs. Traces go to a temporary directory,
# removed at exit.
set -euo pipefail
PC=$(readlink -f "${1:?usage: $0 PARACLICK [CLICK] [ROUNDS]}")
CLICK=${2:-}
[[ -n $CLICK ]] && CLICK=$(readlink -f "$CLICK")
ROUNDS=${3:-3}
PACKETS=${PACKETS:-2000000}
FLOWS="1000 50000"
[[ ${BIG:-0} == 1 ]] && FLOWS="$FLOWS 1000000"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/bench-nat.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
MHZ=$(awk -F: '/^cpu MHz/ {print $2; exit}' /proc/cpuinfo | tr -d ' ')
echo "bench-nat: $PACKETS packets per trace, $ROUNDS rounds, median shown; CPU ${MHZ} MHz; load $(cut -d' ' -f1-3 /proc/loadavg)"

cpu() { # PROG CONF -> prints CPU seconds; checks the count
  local out
  out=$( { /usr/bin/time -f "TIME %U %S" "$@" >/dev/null; } 2>&1 ) || { echo "failed: $*: $out" >&2; exit 1; }
  awk '/^TIME/ {printf "%.3f\n", $2 + $3}' <<<"$out"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-9s %-10s %10s %10s %10s %12s %10s\n" flows program "read cpu s" "nat cpu s" "Mpps/cpu" "cyc/pkt nat" "rewriter"
for F in $FLOWS; do
  N=$PACKETS
  [[ $F -ge 1000000 ]] && N=$((F * 4))
  T=$TMP/t-$F.pcap
  "$PC" -e "FastUDPFlows(0, $N, 60, 02:00:00:00:00:01, 10.0.0.1, 02:00:00:00:00:02, 198.51.100.7, $F, 1000000000, STOP true) -> ToDump($T)" >/dev/null
  printf 'FromDump(%s, STOP true) -> Discard;\n' "$T" >"$TMP/read.click"
  printf 'FromDump(%s, STOP true) -> Strip(14) -> MarkIPHeader -> rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, CAPACITY 4000000) -> c :: Counter -> Discard; rw[1] -> Discard;\n' "$T" >"$TMP/nat.click"
  # Click's IPRewriter has no CAPACITY keyword by that name in every version: give it none.
  printf 'FromDump(%s, STOP true) -> Strip(14) -> MarkIPHeader -> rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1) -> c :: Counter -> Discard; rw[1] -> Discard;\n' "$T" >"$TMP/nat-click.click"
  declare -A R=()
  for _ in $(seq 1 "$ROUNDS"); do
    R[pr]+="$(cpu "$PC" "$TMP/read.click") "
    R[pn]+="$(cpu "$PC" "$TMP/nat.click") "
    if [[ -n $CLICK ]]; then
      R[cr]+="$(cpu "$CLICK" "$TMP/read.click") "
      R[cn]+="$(cpu "$CLICK" "$TMP/nat-click.click") "
    fi
  done
  for prog in p c; do
    [[ $prog == c && -z $CLICK ]] && continue
    name=paraclick; [[ $prog == c ]] && name=click
    rd=$(tr ' ' '\n' <<<"${R[${prog}r]}" | grep . | median)
    nt=$(tr ' ' '\n' <<<"${R[${prog}n]}" | grep . | median)
    read -r mpps cyc rw < <(awk -v n="$N" -v r="$rd" -v t="$nt" -v mhz="$MHZ" 'BEGIN {
      printf "%.2f %.0f %.0f\n", n / t / 1e6, t * mhz * 1e6 / n, (t - r) * mhz * 1e6 / n }')
    printf "%-9s %-10s %10s %10s %10s %12s %10s\n" "$F" "$name" "$rd" "$nt" "$mpps" "$cyc" "$rw"
    eval "RW_$prog=$rw"
  done
  if [[ -n $CLICK ]]; then
    awk -v p="$RW_p" -v c="$RW_c" -v f="$F" 'BEGIN { if (c > 0) printf "%-9s paraclick/click rewriter cycles per packet: %.2f (click/paraclick speed: %.2fx)\n", f, p / c, c / p }'
  fi
  rm -f "$T"
  unset R
done
