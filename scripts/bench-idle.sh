#!/usr/bin/env bash
# CPU that follows the load: the CPU a router uses at 0, 1%, 10% and 100%
# of its maximum loss-free rate, for the device paths (AF_PACKET and
# AF_XDP, conf/iprouter-veth.click at -j 1) and a rated source
# (RatedSource -> Queue -> Unqueue -> Discard, -j 1), by default and with
# --busy-poll; and the ping RTT through the router (min/avg/max, median
# and 99th percentile), idle and at 1% of its loss-free rate, by default
# (workers wait in poll(2) on the sockets) and with --busy-poll (r0 and
# r1 then defer their NAPI schedule to the sockets' busy polls:
# napi_defer_hard_irqs 2, gro_flush_timeout 200 µs): the latency cost of
# sleeping.
#
#   h1 [paraclick generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# Usage (as root):  scripts/bench-idle.sh [PATH/TO/paraclick] [SECONDS]
#   (default: ${CARGO_TARGET_DIR:-target}/release/paraclick, 3 s windows)
# Environment: LFR_AF_PACKET, LFR_AF_XDP, LFR_RATED give the loss-free
# rates (packets/s) instead of searching for them (the search is
# scripts/lib/veth.sh's, as bench-veth.sh's, 2 s trials; the rated
# source's is `paraclick bench --mlffr`); BENCH_PREFIX names the
# namespaces (default pci); BENCH_PATHS chooses the paths (default
# "AF_PACKET AF_XDP RatedSource").
#
# CPU is the router process's time on a CPU over the window, as a share
# of one core (the sum over its threads of /proc/PID/task/TID/schedstat's
# first field, in ns: exact, where /proc/PID/stat counts ticks); "wait" is
# the time its threads were runnable but waiting for a CPU (the second
# field): where it is large, other processes held the CPUs and the
# figures say more about them than about the router. For the device paths the load is
# the generator (on the last CPU) sending 64-byte UDP at the rate for the
# window; loss is what h2 did not receive of what the generator sent. For
# the rated source it is RATE; loss is what the queue dropped. On a
# machine other work loads the figures move (the loss-free rate most): run
# it on a quiet one, and more than once.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"
WIN=${2:-3}
veth_setup bench-idle "${BENCH_PREFIX:-pci}" 4 "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}" 2
ROWS=()
PINGS=()

# Nanoseconds the router's threads have run and waited to run, so far.
ticks() { cat /proc/"$ROUTER_PID"/task/*/schedstat 2>/dev/null | awk '{ r += $1; w += $2 } END { printf "%.0f %.0f\n", r, w }'; }
now() { date +%s.%N; }
# CPU% and wait% between two ticks readings over W seconds.
pct() { # "RUN0 WAIT0" "RUN1 WAIT1" W
  awk -v a="$1" -v b="$2" -v w="$3" 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "%.1f %.1f\n", (y[1] - x[1]) / 1e7 / w, (y[2] - x[2]) / 1e7 / w }'
}

# One window at RATE through the running router: prints "sent received
# CPU% wait%".
device_window() { # RATE
  local rate=$1 t0 t1 w0 w1 n before after out sent
  t0=$(ticks)
  w0=$(now)
  if [[ $rate -eq 0 ]]; then
    sleep "$WIN"
    sent=0 before=0 after=0
  else
    n=$((rate * WIN))
    before=$(rx_h2)
    out=$(ip netns exec "$H1" taskset -c "$GEN_CPU" "$BIN" --no-pin -h src.count \
      -e "$(generator "$rate" "$n")" 2>/dev/null || true)
    sent=$(tr -dc '0-9' <<<"$out")
    sleep 0.3
    after=$(rx_h2)
  fi
  w1=$(now)
  t1=$(ticks)
  echo "${sent:-0} $((after - before)) $(pct "$t0" "$t1" "$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')")"
}

# RTT of 200 pings (10 ms apart) h1 -> h2 through the running router, in
# ms, from the replies' own times: "min avg max median p99 answered".
rtt() {
  ip netns exec "$H1" $PING -c 200 -i 0.01 -W 1 "$H2_ADDR" 2>/dev/null |
    sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | sort -n |
    awk '{ v[NR] = $1; s += $1 } END { if (NR == 0) { print "- - - - - 0"; exit }
      printf "%.3f %.3f %.3f %.3f %.3f %d\n", v[1], s / NR, v[NR],
        v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)], NR }'
}

# One PINGS row: the RTT through the running router with no traffic, or
# with the generator sending RATE packets/s meanwhile (for longer than
# the pings take).
ping_row() { # LABEL MODE LOAD RATE
  local gen= r
  if [[ $4 -gt 0 ]]; then
    ip netns exec "$H1" taskset -c "$GEN_CPU" "$BIN" --no-pin \
      -e "$(generator "$4" $(($4 * 4)))" >/dev/null 2>&1 &
    gen=$!
    sleep 0.3
  fi
  r=$(rtt)
  [[ -n $gen ]] && { wait "$gen" || true; }
  PINGS+=("$(printf '%-10s %-10s %5s %s' "$1" "$2" "$3" "$(awk '{ printf "%8s %8s %8s %8s %8s %5s", $1, $2, $3, $4, $5, $6 }' <<<"$r")")")
}

# Sets r0's and r1's napi_defer_hard_irqs and gro_flush_timeout (ns).
napi_defer() { # "IRQS TIMEOUT"
  local d
  for d in r0 r1; do
    ip netns exec "$R" sh -c "echo ${1% *} > /sys/class/net/$d/napi_defer_hard_irqs; echo ${1#* } > /sys/class/net/$d/gro_flush_timeout"
  done
}

device_path() { # LABEL LFR_VAR DEFINES...
  local label=$1 var=$2 lfr mode
  shift 2
  lfr=${!var:-}
  if [[ -z $lfr ]]; then
    ROUTER_DEFINES="$*" paraclick_router conf/iprouter-veth.click 1
    prime
    lfr=$(search "$label")
    paraclick_router_off
  fi
  for mode in default busy-poll; do
    local -a extra=()
    [[ $mode == busy-poll ]] && extra=(--busy-poll)
    # Preferred busy polling (AF_XDP's sockets, with --busy-poll): the
    # devices defer their NAPI schedule to the sockets' polls
    # (the kernel's Documentation/networking/napi.rst).
    napi_defer "$([[ $mode == busy-poll ]] && echo "2 200000" || echo "0 0")"
    ROUTER_DEFINES="$*" paraclick_router conf/iprouter-veth.click 1 "${extra[@]}"
    prime
    sleep 0.5
    local share rate sent recv cpu wait
    for share in 0 1 10 100; do
      rate=$((lfr * share / 100))
      read -r sent recv cpu wait < <(device_window "$rate")
      ROWS+=("$(printf '%-10s %-10s %5s%% %10d %10d %10d %8s %8s' "$label" "$mode" "$share" "$rate" "$sent" \
        $((sent > recv ? sent - recv : 0)) "$cpu" "$wait")")
      echo "  $label $mode ${share}%: rate $rate sent $sent received $recv CPU $cpu% wait $wait%" >&2
    done
    ping_row "$label" "$mode" idle 0
    ping_row "$label" "$mode" 1% $((lfr / 100))
    paraclick_router_off
  done
}

rated_path() {
  local lfr=${LFR_RATED:-} mode share rate out t0 t1 w0 w1 pid drops count
  if [[ -z $lfr ]]; then
    lfr=$("$BIN" bench --mlffr "$ROOT/conf/rated-queue.click" --trial 1 --warmup 0.3 2>/dev/null |
      awk '/^MLFFR/ { printf "%d", $2 }')
  fi
  for mode in default busy-poll; do
    local -a extra=()
    [[ $mode == busy-poll ]] && extra=(--busy-poll)
    for share in 0 1 10 100; do
      rate=$((lfr * share / 100))
      "$BIN" "${extra[@]}" -e "src :: RatedSource(LENGTH 64, RATE $rate, ACTIVE $([[ $rate -gt 0 ]] && echo true || echo false))
          -> q :: Queue(1000) -> Unqueue -> c :: Counter -> Discard" \
        -h src.count -h q.drops >"$TMP/rated.out" 2>/dev/null &
      ROUTER_PID=$!
      sleep 0.5
      t0=$(ticks)
      w0=$(now)
      sleep "$WIN"
      w1=$(now)
      t1=$(ticks)
      kill -INT "$ROUTER_PID"
      wait "$ROUTER_PID" || true
      ROUTER_PID=
      count=$(awk '/^src.count:/ { getline; print; exit }' "$TMP/rated.out")
      drops=$(awk '/^q.drops:/ { getline; print; exit }' "$TMP/rated.out")
      local cpu wait
      read -r cpu wait < <(pct "$t0" "$t1" "$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')")
      ROWS+=("$(printf '%-10s %-10s %5s%% %10d %10d %10d %8s %8s' RatedSrc "$mode" "$share" "$rate" "${count:-0}" "${drops:-0}" "$cpu" "$wait")")
      echo "  RatedSource $mode ${share}%: rate $rate sent ${count:-0} dropped ${drops:-0} CPU $cpu% wait $wait%" >&2
    done
  done
  echo "$lfr" >"$TMP/rated.lfr"
}

LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
PATHS=${BENCH_PATHS:-AF_PACKET AF_XDP RatedSource}
[[ $PATHS == *AF_PACKET* ]] && device_path AF_PACKET LFR_AF_PACKET
[[ $PATHS == *AF_XDP* ]] && device_path AF_XDP LFR_AF_XDP METHOD=XDP PRIORITY=false
[[ $PATHS == *RatedSource* ]] && rated_path

echo
echo "CPU used by the router at shares of its loss-free rate, $NCPU CPUs, ${WIN} s windows (load average at start: $LOADAVG):"
printf '%-10s %-10s %6s %10s %10s %10s %8s %8s\n' path mode load "rate pps" sent lost "CPU %" "wait %"
printf '%s\n' "${ROWS[@]}"
echo
echo "ping RTT h1 -> h2 through the router, idle and at 1% of its loss-free rate (200 pings, 10 ms apart), ms:"
printf '%-10s %-10s %5s %8s %8s %8s %8s %8s %5s\n' path mode load min avg max median p99 n
printf '%s\n' "${PINGS[@]}"
[[ -f $TMP/rated.lfr ]] && echo "rated source loss-free rate: $(cat "$TMP/rated.lfr") pps"
