#!/usr/bin/env bash
# The model's check on the device routers (issue 42, docs/MODEL.md):
# measures the device terms (scripts/device-terms.sh), predicts each
# router from its twin with them (`paraclick model --device ...
# --dedicated`), then measures the routers with scripts/bench-veth.sh
# (IPv4, paraclick's rows only: conf/iprouter-veth.click at -j 1,
# conf/iprouter-veth-2q.click at -j 2, AF_PACKET and AF_XDP), a separate
# measurement, and prints predicted against measured with their ratio:
#   rate     the maximum loss-free rate, pps (on a loaded machine the
#            measured one is lowered by other processes' use of the CPUs;
#            the prediction is for a core per router thread at -j 1, and
#            at -j 2 for the two CPUs shared with the generator, as
#            bench-veth.sh runs it: device-terms.sh's SHARED line);
#   ns/pkt   the router's CPU time per forwarded packet, all its threads
#            (predicted: at saturation, 1e9 x threads / saturated rate,
#            at -j 2 on the shared CPUs with the threads' wake-ups, and at
#            the measured rate at -j 1, that plus its wake-ups at that
#            rate (device-terms.sh WAKE: W ns each, at most one per K
#            packets, in the time the packets leave of the core; without
#            a WAKE line the receive path's floor, FLOOR, over the rate);
#            measured: at its highest loss-free rate);
#   pps/CPU-s  packets per second of router CPU, 1e9 / ns/pkt (compare
#            these on a loaded machine).
# The load average before and after is printed. Each path (AF_PACKET,
# then AF_XDP) at each thread count has its terms measured just before
# its router, and the cache-line hand-over between CPU 0 and the last
# CPU (scripts/lib/handover.c) is probed before the terms, between them
# and the router, and after: on a VM the receive and transmit costs
# follow it, and it can move in minutes between about 40-65 ns and
# 195-270 (docs/MODEL.md), so a unit whose probes differ by more than
# HOLD times is measured again (TRIES in all), and each row gives its
# probes and regime. device-terms.sh's RX lines give it per round.
# Each row also gives the receive path's own loss-free rate on the test
# bed (rx path), and marks a rate ratio ">" where the generator, not the
# router, stopped the benchmark's search.
#
# Usage (as root):  scripts/validate-model-veth.sh [PATH/TO/paraclick] [SECONDS]
#   (SECONDS per trial of device-terms.sh, default 1; BENCH_SECS per trial
#   of bench-veth.sh, default 2); RT=1 as in bench-veth.sh.
#   BENCH_PREFIX names the namespaces (default pcv); METHODS="LINUX XDP";
#   JOBS="1 2"; HOLD (default 1.5), TRIES (default 3), NEAR_NS (default
#   120) as above.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(readlink -f "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}")
SECS=${2:-1}
[[ $(id -u) -eq 0 ]] || { echo "validate-model-veth: must run as root" >&2; exit 2; }
PREFIX=${BENCH_PREFIX:-pcv}
OUT=$(mktemp -d /tmp/paraclick-validate.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# The cache-line hand-over between the router's CPU and the generator's
# (scripts/lib/handover.c): the receive and transmit terms follow it, and
# on a VM it can move between the terms' measurement and the benchmark's
# (docs/MODEL.md), so it is taken before, between and after them.
cc -O2 -Wall -o "$OUT/handover" "$ROOT/scripts/lib/handover.c" -lpthread
handover() { chrt -f 50 "$OUT/handover" 0 $(($(nproc) - 1)) 200000 5 2>/dev/null | cut -d' ' -f1 || echo -; }
# Each method's terms at each thread count are measured just before its
# router at that count (device-terms.sh JOBS=J METHODS=M, then
# bench-veth.sh JOBS=J ROWS=pkt|xsk), with the hand-over probed before
# the terms, between them and the router, and after: a unit whose probes
# differ by more than HOLD (default 1.5) times is measured again, up to
# TRIES times in all (default 3); if none held, the try whose probes
# differed least is kept. Each row says which regime it ran in ("near":
# every probe below NEAR_NS, default 120 ns; "far": every probe above
# it; "moved") and gives its probes and try.
# The routers' trials are BENCH_SECS long (default 2): at -j 2 with
# RT=1 the generator ended each trial 33-39 ms behind its schedule in
# 1-second trials and 20-50 ms in 2-second ones, whatever the rate (the
# real-time throttling's 50 ms a second is the likely cause, not
# checked): more than the search's 3% in a 1-second trial, so 1-second
# trials at -j 2 stopped at the test bed (750 kpps), not at the router.
BSECS=${BENCH_SECS:-2}
HOLD=${HOLD:-1.5}
TRIES=${TRIES:-3}
NEAR_NS=${NEAR_NS:-120}
: >"$OUT/terms"
: >"$OUT/bench"
declare -A REGIME
for method in ${METHODS:-LINUX XDP}; do
  if [[ $method == XDP ]]; then name=AF_XDP key=xsk; else name=AF_PACKET key=pkt; fi
  for j in ${JOBS:-1 2}; do
    unit="$name -j $j"
    best= best_spread=
    for try in $(seq 1 "$TRIES"); do
      h0=$(handover)
      echo "validate-model-veth: $unit try $try: device terms (scripts/device-terms.sh $SECS 2), hand-over $h0 ns ..." >&2
      JOBS=$j METHODS=$method BENCH_PREFIX=$PREFIX-t bash "$ROOT/scripts/device-terms.sh" "$BIN" "$SECS" 2 \
        >"$OUT/terms.$key.$j.$try" 2> >(sed 's/^/  /' >&2)
      h1=$(handover)
      echo "validate-model-veth: $unit try $try: router (scripts/bench-veth.sh, IPv4, $BSECS-second trials), hand-over $h1 ns ..." >&2
      JOBS=$j ROWS=$key BENCH_PREFIX=$PREFIX-b FAMILIES=4 PARACLICK_ONLY=1 bash "$ROOT/scripts/bench-veth.sh" "$BIN" "$BSECS" \
        >"$OUT/bench.$key.$j.$try" 2> >(sed 's/^/  /' >&2)
      h2=$(handover)
      read -r spread regime < <(awk -v a="$h0" -v b="$h1" -v c="$h2" -v n="$NEAR_NS" 'BEGIN {
        lo = a; hi = a; if (b < lo) lo = b; if (c < lo) lo = c; if (b > hi) hi = b; if (c > hi) hi = c
        if (!(lo > 0)) { print 1e9, "unknown"; exit }
        if (hi < n) r = "near"; else if (lo >= n) r = "far"; else r = "moved"
        printf "%.2f %s\n", hi / lo, r }')
      echo "validate-model-veth: $unit try $try: hand-over $h0 / $h1 / $h2 ns (before the terms / between / after), ${spread}x: $regime" >&2
      if [[ -z $best ]] || awk -v a="$spread" -v b="$best_spread" 'BEGIN { exit !(a < b) }'; then
        best=$try best_spread=$spread
        REGIME[$name,$j]="$regime $h0/$h1/$h2 try $try"
      fi
      awk -v a="$spread" -v h="$HOLD" 'BEGIN { exit !(a <= h) }' && break
    done
    echo "# $unit: try $best of $try, hand-over ${REGIME[$name,$j]}" >>"$OUT/terms"
    cat "$OUT/terms.$key.$j.$best" >>"$OUT/terms"
    cat "$OUT/bench.$key.$j.$best" >>"$OUT/bench"
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

cat "$OUT/terms"
echo
printf '%-10s %3s | %10s %10s %6s %8s | %8s %8s %8s %6s | %10s %10s | %5s %-20s | %s\n' \
  path -j "rate pred" "measured" ratio "rx path" "ns sat" "+floor" measured ratio "pps/CPU-s" "measured" CPU limit "hand-over ns"
for name in AF_PACKET AF_XDP; do
  label="paraclick $name"
  for j in ${JOBS:-1 2}; do
    floor=$(awk -v n="$name" -v j="$j" '$1 == "FLOOR" && $2 == n && $4 == j { print $5 }' "$OUT/terms")
    # The receive path's own loss-free rate on the test bed (its
    # FromDevice tasks into Discard: TERM's "receive path loss-free at").
    rxp=$(awk -v n="$name" -v j="$j" '$1 == "TERM" && $2 == n && $4 == j { for (i = 1; i < NF; i++) if ($i == "loss-free" && $(i + 1) == "at") print $(i + 2) }' "$OUT/terms")
    read -r sat lf pns < <(awk -v n="$name" -v j="$j" '$1 == "PREDICT" && $2 == n && $4 == j { print $5, $6, $7 }' "$OUT/terms")
    # bench-veth.sh's row: label (44 columns), then -j, pps, vs Linux,
    # ns/pkt, cycles, CPU, pps/CPU-s, vs Linux, limit.
    read -r mrate mns mcpu mlimit < <(awk -v l="$label" -v j="$j" '
      substr($0, 1, 44) ~ ("^" l " *$") { split(substr($0, 45), f, " "); if (f[1] == j) { print f[2], f[4], f[6], f[9]; exit } }' "$OUT/bench")
    # The CPU per packet the model gives at the measured rate: at -j 1
    # the saturated figure plus its wake-ups there (device-terms.sh's
    # WAKE line: W ns each, at most one per K packets, in the time the
    # packets leave: paraclick model's IdleWakes), or without a WAKE
    # line the receive path's floor spread over it; at -j 2 (the CPUs
    # shared with the generator) the floor is the threads' wake-ups,
    # which PREDICT's figure holds already.
    [[ $j -eq 1 ]] || floor=0
    ww= wk=
    read -r ww wk < <(awk -v n="$name" -v j="$j" '$1 == "WAKE" && $2 == n && $4 == j { print $6, $8 }' "$OUT/terms") || true
    if [[ $j -eq 1 && -n ${ww:-} ]]; then
      fns=$(awk -v p="${pns:-0}" -v w="$ww" -v k="$wk" -v r="${mrate:-0}" 'BEGIN {
        if (r <= 0) { print p; exit }
        idle = 1e9 - r * p; if (idle < 0) idle = 0
        v = r / k; if (idle / w < v) v = idle / w
        printf "%.0f", p + v * w / r }')
    else
      fns=$(awk -v p="${pns:-0}" -v f="${floor:-0}" -v r="${mrate:-0}" 'BEGIN { if (r > 0) printf "%.0f", p + f * 1e9 / r; else print p }')
    fi
    # A row whose generator fell short first (limit generator@X%) did
    # not find the router's rate, only a rate it reaches: its rate ratio
    # is marked ">" (the router's rate is at least the measured one) and
    # its CPU a packet is the comparison.
    gb=
    [[ ${mlimit:-} == generator* ]] && gb=">"
    printf '%-10s %3s | %10s %10s %6s %8s | %8s %8s %8s %6s | %10s %10s | %5s %-20s | %s\n' "$name" "$j" \
      "${lf:--}" "${mrate:--}" "$gb$(awk -v a="${lf:-0}" -v b="${mrate:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" "${rxp:--}" \
      "${pns:--}" "$fns" "${mns:--}" "$(awk -v a="${fns:-0}" -v b="${mns:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" \
      "$(awk -v n="${fns:-0}" 'BEGIN { if (n > 0) printf "%.0f", 1e9 / n; else print "-" }')" \
      "$(awk -v n="${mns:-0}" 'BEGIN { if (n > 0) printf "%.0f", 1e9 / n; else print "-" }')" \
      "${mcpu:--}" "${mlimit:--}" "${REGIME[$name,$j]:--}"
  done
done
echo
echo "rate pred: the model's loss-free rate (its saturated rate, capped by the receive rings' term where measured), a core per thread at -j 1,"
echo "at -j 2 where the router's CPU per packet (its threads' wake-ups included) and the generator's fill the CPUs they share (SHARED);"
echo "ns sat: the model's CPU per packet at saturation (-j 2: on the shared CPUs, wake-ups included); +floor: at -j 1 that plus its wake-ups"
echo "at the measured rate (WAKE; without it the receive path's floor over the rate), the model's CPU per packet there; measured: scripts/bench-veth.sh's at its highest"
echo "loss-free rate; pps/CPU-s: 1e9 / ns. Ratios: predicted / measured. At -j 1, wherever the wake-ups fill the time the packets leave"
echo "(every rate above 1e9 / (ns sat + WAKE_NS / K)), +floor is 1e9 / the measured rate: its ratio then says only that the router's core was full."
echo "rx path: the highest loss-free rate of the receive path alone (FromDevice per queue into Discard) on the test bed, measured with the terms."
echo "load average $load0 before, $load1 after; $(($(date +%s) - start)) s; $(nproc) CPUs; RT=${RT:-0}."
echo "limit: what stopped bench-veth.sh's search (router-cpu, test-bed@R/L, generator@X%, loss@X%); a rate ratio marked \">\" is the generator's"
echo "limit, not the router's: the router forwards at least the measured rate, so compare its CPU a packet."
echo "hand-over ns: the cache-line hand-over CPU 0 -> $(($(nproc) - 1)) (scripts/lib/handover.c) before the method's terms / between them and its"
echo "router / after, and the regime: near (all below $NEAR_NS ns), far (all above) or moved; a unit (path, -j) whose probes differ by"
echo "more than ${HOLD}x is measured again, $TRIES tries at most, the try whose probes differed least kept (given). RX lines give it per round."
