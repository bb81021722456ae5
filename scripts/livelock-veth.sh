#!/usr/bin/env bash
# Receive livelock test on the veth topology of scripts/bench-veth.sh:
# paraclick's conf/iprouter-veth.click at -j 1 is offered 0.5x to 3x its
# maximum loss-free forwarding rate (MLFFR), and prints the curve (offered
# against forwarded) and, at each load, how responsive the control path
# is: the time a handler read over the control socket takes and pings from
# h1 to the router's own address (answered by its ICMPPingResponder).
#
#   h1 [paraclick generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# Usage (as root):  [ROUTER_CPU=P] [RING=BYTES] [PRIORITY=true|false] [CURVE=0] [PING_SECS=S]
#                   scripts/livelock-veth.sh [PATH/TO/paraclick] [SECONDS] [MLFFR]
#   SECONDS per trial (default 2); MLFFR in packets/s (default: measured
#   first, as bench-veth.sh does, to 5%). PRIORITY: the router's priority
#   path for control traffic (FromDevice PRIORITY; the configuration's
#   default is true) during the curve. CURVE=0 skips the curve.
#
# Last, pings to the router under 2x overload, without and with the
# priority path: for each, the router is restarted with PRIORITY false,
# then true, offered twice the MLFFR for PING_SECS (default 4) while h1
# pings the router's address 20 times (every 0.1 s, 1 s timeout); prints
# loss and RTT (min/avg/max) and the router's forwarding rate for each.
#
# The generator (FastUDPSource, 60-byte UDP, one flow per packet) runs on
# the last CPU, the router's thread on CPU 0; what arrives is h2's receive
# counter, and forwarded rate = received / the generator's own duration.
# Also per load: where the packets not forwarded were dropped (kernel
# ring, output Queue, ToDevice), the router's CPU share, and packets it
# read per CPU-second of its own: a router in receive livelock burns its
# CPU and gets less done per CPU-second; one that the machine's other
# load preempts gets fewer CPU-seconds at the same efficiency.
# Livelock-free (issue 11): forwarding at 2x the MLFFR stays within 10% of
# the MLFFR. The verdict line says which, from the trials whose generator
# really reached 1.9x or more (gen/MLFFR), or that none did. Other load on the machine moves
# the figures: short runs, shared machine; run it more than once.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"
veth_setup livelock-veth pcll 4 "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}" "${2:-2}"
GIVEN_MLFFR=${3:-}

ip -n "$H1" neigh replace "$R0_ADDR" lladdr 02:00:00:00:01:01 dev eth0
# RING=BYTES: the router's receive rings (FromDevice RING_SIZE; default
# 16 MiB). Under overload the ring stays full and a ping to the router
# waits behind it: a smaller ring bounds that delay.
# start_router PRIORITY: the router (PRIORITY true|false, or the
# configuration's default if empty), in the CPU quota if ROUTER_CPU is set.
start_router() {
  rm -f "$TMP/ctl.sock"
  PING_TARGET=$H2_ADDR paraclick_router conf/iprouter-veth.click 1 -u "$TMP/ctl.sock" \
    ${RING:+RING=$RING} ${1:+PRIORITY=$1}
  limit_router
}
limit_router() { :; }
# ROUTER_CPU=P: the router gets P% of one CPU (a cgroup v1 CFS quota, 10 ms
# period), i.e. it runs as on a slower core. On a 2-core machine the
# generator, on the other core, cannot offer twice the MLFFR of a router
# with a whole core; against a router with, say, 40% of one it can. The
# MLFFR is measured under the same quota.
if [[ -n ${ROUTER_CPU:-} ]]; then
  CG=/sys/fs/cgroup/cpu/paraclick-livelock-$$
  [[ -d /sys/fs/cgroup/cpu ]] || { echo "ROUTER_CPU needs the cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 2; }
  mkdir -p "$CG"
  echo 10000 >"$CG/cpu.cfs_period_us"
  echo $((ROUTER_CPU * 100)) >"$CG/cpu.cfs_quota_us"
  limit_router() {
    local tid
    for tid in /proc/"$ROUTER_PID"/task/*; do echo "${tid##*/}" >"$CG/tasks"; done
  }
  cg_cleanup() {
    local t
    for t in $(cat "$CG/tasks" 2>/dev/null); do echo "$t" >/sys/fs/cgroup/cpu/tasks 2>/dev/null || true; done
    rmdir "$CG" 2>/dev/null || true
  }
  trap 'cg_cleanup; veth_cleanup' EXIT
  echo "router limited to ${ROUTER_CPU}% of one CPU (cgroup $CG)"
fi
start_router "${PRIORITY:-}"

# The control path while a trial runs: handler reads over the control
# socket (ms each, worst of 5) and 5 pings to the router's address.
probe() {
  local worst=0 t0 t1 ms i
  sleep 0.3
  for i in 1 2 3 4 5; do
    t0=$(date +%s%N)
    timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" read in0.count >/dev/null 2>&1 || { echo "no-answer-5s 0/5 -"; return; }
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    ((ms > worst)) && worst=$ms
    sleep 0.05
  done
  local p
  p=$(ip netns exec "$H1" ping -c 5 -i 0.1 -W 1 10.0.1.1 2>&1 || true)
  local got avg
  # (No rtt line when every ping is lost: || true, or set -e ends the probe.)
  got=$(grep -o '[0-9]* received' <<<"$p" | cut -d' ' -f1 || true)
  avg=$(grep -o 'rtt[^=]*= [0-9.]*/[0-9.]*' <<<"$p" | awk -F/ '{ print $NF }' || true)
  echo "$worst ${got:-0}/5 ${avg:--}"
}

# Where packets go missing: "in0.count in0.kernel_drops out1.drops to1.drops".
counters() {
  local h v out=
  for h in in0.count in0.kernel_drops out1.drops to1.drops; do
    v=$(timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" read "$h" 2>/dev/null | tr -dc '0-9')
    out="$out ${v:-0}"
  done
  # The router's CPU time so far (ticks), and the wall clock (ns): a router
  # that livelocks burns all its CPU and forwards less; one the machine's
  # other load preempts gets less CPU.
  local ticks
  ticks=$(awk '{ print $14 + $15 }' "/proc/$ROUTER_PID/stat" 2>/dev/null || echo 0)
  echo "$out $ticks $(date +%s%N)"
}

if [[ -n $GIVEN_MLFFR ]]; then
  MLFFR=$GIVEN_MLFFR
else
  echo "measuring the MLFFR of conf/iprouter-veth.click at -j 1 ..." >&2
  MLFFR=$(search mlffr 25000 4000000)
fi
[[ $MLFFR -gt 0 ]] || { echo "livelock-veth: MLFFR 0 (the router forwards nothing loss-free)" >&2; exit 1; }

if [[ ${CURVE:-1} != 0 ]]; then
echo
echo "conf/iprouter-veth.click -j 1, 60-byte UDP over veth, MLFFR $MLFFR pps, ${SECS} s per load, PRIORITY ${PRIORITY:-true}:"
printf '%6s %10s %10s %8s %10s %9s   %-20s %s\n' "load" "offered" "generated" "gen/MLFFR" "forwarded" "fwd/MLFFR" "ctl read (worst ms)" "pings to router (avg ms)"
# The verdict uses the trials whose generator really offered >= 1.9x.
AT2=
EFF1=
EFF2=
LOST=()
for mult in 0.5 1 1.5 2 2.5 3; do
  rate=$(awk -v m="$mult" -v r="$MLFFR" 'BEGIN { printf "%d", m * r }')
  read -r i0 k0 q0 t0 c0 w0 < <(counters)
  probe >"$TMP/probe" &
  PP=$!
  read -r sent recv ach < <(trial "$rate")
  wait "$PP" || true
  read -r i1 k1 q1 t1 c1 w1 < <(counters)
  cpu=$(awk -v c=$((c1 - c0)) -v w=$((w1 - w0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.0f", 100 * c / hz / (w / 1e9) }')
  # Packets read per CPU-second of the router: flat across loads means
  # the per-packet cost does not grow with overload (no livelock inside
  # the router), whatever share of the CPU the machine leaves it.
  eff=$(awk -v p=$((i1 - i0)) -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (c > 0) printf "%.0f", p / (c / hz); else print 0 }')
  [[ $mult == 1 ]] && EFF1=$eff
  if awk -v g="$ach" -v m="$MLFFR" 'BEGIN { exit !(g >= 1.9 * m) }'; then EFF2=$eff; fi
  LOST+=("$(printf '%5sx  read by in0 %8d  kernel ring drops %8d  out1 Queue drops %6d  to1 drops %6d  router CPU %3d%%  %8d pkts/CPU-s' \
    "$mult" $((i1 - i0)) $((k1 - k0)) $((q1 - q0)) $((t1 - t0)) "$cpu" "$eff")")
  read -r worst pings avg <"$TMP/probe" || true
  fwd=$(awk -v s="$sent" -v r="$recv" -v a="$ach" 'BEGIN { if (s > 0) printf "%d", r * a / s; else print 0 }')
  frac=$(awk -v f="$fwd" -v m="$MLFFR" 'BEGIN { printf "%.2f", f / m }')
  gfrac=$(awk -v g="$ach" -v m="$MLFFR" 'BEGIN { printf "%.2f", g / m }')
  if awk -v g="$gfrac" 'BEGIN { exit !(g >= 1.9) }'; then
    AT2=$(awk -v a="${AT2:-9}" -v f="$frac" 'BEGIN { print (f < a) ? f : a }')
  fi
  printf '%5sx %10d %10.0f %8s %10d %9s   %-20s %s\n' "$mult" "$rate" "$ach" "$gfrac" "$fwd" "$frac" "${worst:-?}" "${pings:-?} (${avg:--})"
done
echo
echo "where the packets not forwarded were lost, per load (router's handlers):"
printf '%s\n' "${LOST[@]}"
echo
if [[ -n ${EFF1:-} && -n ${EFF2:-} ]]; then
  echo "router efficiency at >= 1.9x against 1x: $EFF2 / $EFF1 packets per CPU-second ($(awk -v a="$EFF2" -v b="$EFF1" 'BEGIN { printf "%.2f", a / b }'))"
fi
if [[ -z $AT2 ]]; then
  echo "NO VERDICT: the generator never offered 1.9x the MLFFR (a busy machine?); rerun on a quieter one"
elif awk -v f="$AT2" 'BEGIN { exit !(f >= 0.9) }'; then
  echo "no receive livelock: offered >= 1.9x the MLFFR, the router forwards at least ${AT2} of the MLFFR (>= 0.90)"
else
  echo "RECEIVE LIVELOCK: offered >= 1.9x the MLFFR, the router forwards only ${AT2} of the MLFFR (< 0.90)"
fi
fi
paraclick_router_off

# Pings to the router under 2x overload, without and with the priority
# path (FromDevice PRIORITY): 20 pings while the generator offers twice
# the MLFFR for PING_SECS.
PSECS=${PING_SECS:-4}
echo
echo "pings to the router (10.0.1.1) under 2x overload ($((2 * MLFFR)) pps offered for ${PSECS} s), 20 pings 0.1 s apart:"
printf '%-9s %10s %10s %9s %6s   %-26s %s\n' "PRIORITY" "generated" "forwarded" "fwd/MLFFR" "lost" "RTT min/avg/max ms" "priority_count priority_drops"
CURVE_SECS=$SECS
SECS=$PSECS
for prio in false true; do
  start_router "$prio"
  sleep 0.5
  ( sleep 0.5
    ip netns exec "$H1" ping -c 20 -i 0.1 -W 1 10.0.1.1 >"$TMP/ping.$prio" 2>&1 || true ) &
  PP=$!
  read -r sent recv ach < <(trial $((2 * MLFFR)))
  wait "$PP" || true
  pc=$(timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" read in0.priority_count 2>/dev/null | tr -dc '0-9')
  pd=$(timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" read in0.priority_drops 2>/dev/null | tr -dc '0-9')
  paraclick_router_off
  got=$(grep -o '[0-9]* received' "$TMP/ping.$prio" | cut -d' ' -f1 || true)
  rtt=$(grep -o 'rtt[^=]*= [0-9.]*/[0-9.]*/[0-9.]*' "$TMP/ping.$prio" | awk '{ print $NF }' || true)
  fwd=$(awk -v s="$sent" -v r="$recv" -v a="$ach" 'BEGIN { if (s > 0) printf "%d", r * a / s; else print 0 }')
  printf '%-9s %10.0f %10d %9s %3d/20   %-26s %s %s\n' "$prio" "$ach" "$fwd" \
    "$(awk -v f="$fwd" -v m="$MLFFR" 'BEGIN { printf "%.2f", f / m }')" $((20 - ${got:-0})) "${rtt:--}" "${pc:-?}" "${pd:-?}"
done
SECS=$CURVE_SECS
