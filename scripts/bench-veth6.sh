#!/usr/bin/env bash
# Maximum loss-free forwarding rate of small UDP/IPv6 packets through veth
# pairs: Linux's own IPv6 forwarding against paraclick's
# conf/iprouter6-veth.click at -j 1, and both at -j 2 (paraclick with
# conf/iprouter6-veth-2q.click, two fanout receive queues per interface),
# in the same run (the IPv6 counterpart of scripts/bench-veth.sh, whose
# method it shares).
#
#   h1 [paraclick generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# Usage (as root):  scripts/bench-veth6.sh [PATH/TO/paraclick] [SECONDS]
#
# kernel -j 1: addresses on r0/r1, net.ipv6.conf.all.forwarding=1, RPS on
# r0 steering forwarding to CPU 0 (-j 2: CPUs 0-1); paraclick -j 1: conf/iprouter6-veth.click
# (neighbour discovery by its own elements). h1 runs FastUDPSourceIP6 (62-byte
# frames, a new flow per packet) -> ToDevice on the last CPU; what arrives
# is h2's receive counter. Loss-free: the generator reached the rate
# (within 3%) and at most 0.1% did not arrive, in one of two trials.
# Prints figures only.
set -euo pipefail

BIN=$(readlink -f "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}")
SECS=${2:-2}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "bench-veth: must run as root" >&2; exit 2; }
[[ -x $BIN ]] || { echo "bench-veth: no paraclick binary at $BIN (cargo build --release)" >&2; exit 2; }

SUF=$$
H1=pcb6-h1-$SUF
H2=pcb6-h2-$SUF
R=pcb6-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-bench.XXXXXX)
ROUTER_PID=
NCPU=$(nproc)
GEN_CPU=$((NCPU - 1))

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && wait "$ROUTER_PID" 2>/dev/null
  for ns in "$H1" "$H2" "$R"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$H1"
ip netns add "$H2"
ip netns add "$R"
ip -n "$R" link add r0 type veth peer name eth0 netns "$H1"
ip -n "$R" link add r1 type veth peer name eth0 netns "$H2"
ip -n "$R" link set r0 address 02:00:00:00:01:01
ip -n "$R" link set r1 address 02:00:00:00:02:01
ip -n "$H1" link set eth0 address 02:00:00:00:01:02
for ns in "$H1" "$H2" "$R"; do ip -n "$ns" link set lo up; done
ip -n "$R" link set r0 up
ip -n "$R" link set r1 up
ip -n "$H1" link set eth0 up
ip -n "$H2" link set eth0 up
for ns in "$H1" "$H2"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.eth0.accept_dad=0
done
ip netns exec "$R" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.r0.accept_dad=0 net.ipv6.conf.r1.accept_dad=0
ip -n "$H1" -6 addr add 2001:db8:1::2/64 dev eth0 nodad
ip -n "$H2" -6 addr add 2001:db8:2::2/64 dev eth0 nodad
ip -n "$H1" -6 route add default via 2001:db8:1::1
ip -n "$H2" -6 route add default via 2001:db8:2::1

rx_h2() { ip netns exec "$H2" awk '$1 == "eth0:" { print $3 }' /proc/net/dev; }

rps() { # CPU mask for r0's receive steering
  ip netns exec "$R" sh -c "echo $1 > /sys/class/net/r0/queues/rx-0/rps_cpus"
}

kernel_router() { # THREADS
  ip -n "$R" -6 addr add 2001:db8:1::1/64 dev r0 nodad
  ip -n "$R" -6 addr add 2001:db8:2::1/64 dev r1 nodad
  ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=1
  if [[ $1 -eq 1 ]]; then rps 1; else rps 3; fi
}

kernel_router_off() {
  ip -n "$R" -6 addr del 2001:db8:1::1/64 dev r0
  ip -n "$R" -6 addr del 2001:db8:2::1/64 dev r1
  ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=0
  rps 0
}

paraclick_router() { # CONF THREADS
  ip netns exec "$R" "$BIN" -j "$2" "$ROOT/$1" >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 50); do
    ip netns exec "$H1" ping -6 -c 1 -W 0.3 2001:db8:2::2 >/dev/null 2>&1 && return 0
    kill -0 "$ROUTER_PID" 2>/dev/null || break
  done
  echo "bench-veth: paraclick router did not start:" >&2
  cat "$TMP/router.err" >&2
  exit 1
}

paraclick_router_off() {
  kill -INT "$ROUTER_PID"
  wait "$ROUTER_PID" || true
  ROUTER_PID=
}

# One trial at RATE packets/s: prints "sent received achieved_rate".
trial() {
  local rate=$1 n before after out count
  n=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { printf "%d", r * s }')
  before=$(rx_h2)
  out=$(ip netns exec "$H1" taskset -c "$GEN_CPU" "$BIN" --no-pin -h src.count -h src.rate -e "
    src :: FastUDPSourceIP6($rate, $n, 62, 02:00:00:00:01:02, 2001:db8:1::2, 1024,
                         02:00:00:00:01:01, 2001:db8:2::2, 9, INTERVAL 1, STOP true)
      -> ToDevice(eth0);" 2>/dev/null)
  sleep 0.3
  after=$(rx_h2)
  count=$(awk '/^src.count:/ { getline; print; exit }' <<<"$out")
  achieved=$(awk '/^src.rate:/ { getline; print; exit }' <<<"$out")
  echo "${count:-0} $((after - before)) ${achieved:-0}"
}

# Highest loss-free rate for the running router: prints it (packets/s).
search() { # LABEL
  local label=$1 rate=50000 good=0 bad=0 sent recv ach ok
  while :; do
    # A loss can be another process's doing: a rate gets a second trial.
    for attempt in 1 2; do
      read -r sent recv ach < <(trial "$rate")
      ok=$(awk -v s="$sent" -v r="$recv" -v a="$ach" -v t="$rate" \
        'BEGIN { print (s > 0 && a >= 0.97 * t && r >= 0.999 * s) ? 1 : 0 }')
      printf '  %-16s offered %9d pps  generated %9.0f pps  sent %9d  received %9d  %s\n' \
        "$label" "$rate" "$ach" "$sent" "$recv" "$([[ $ok -eq 1 ]] && echo loss-free || echo LOSS)" >&2
      [[ $ok -eq 1 ]] && break
    done
    if [[ $ok -eq 1 ]]; then good=$rate; else bad=$rate; fi
    if [[ $bad -eq 0 ]]; then
      rate=$((rate * 2))
      [[ $rate -gt 8000000 ]] && break
    else
      [[ $((bad - good)) -le $((good / 20 + 1000)) ]] && break
      rate=$(((good + bad) / 2))
    fi
  done
  echo "$good"
}

# Warm ARP caches through each router before measuring.
prime() { ip netns exec "$H1" ping -6 -c 2 -i 0.2 -W 1 2001:db8:2::2 >/dev/null 2>&1 || true; }

declare -A RESULT

measure_kernel() { # THREADS
  kernel_router "$1"
  prime
  RESULT[kernel,$1]=$(search "kernel -j $1")
  kernel_router_off
}

measure_paraclick() { # KEY CONF THREADS LABEL
  paraclick_router "$2" "$3"
  prime
  RESULT[$1]=$(search "$4")
  paraclick_router_off
}

measure_kernel 1
measure_paraclick p1 conf/iprouter6-veth.click 1 "paraclick6 -j 1"
measure_kernel 2
measure_paraclick p2 conf/iprouter6-veth-2q.click 2 "paraclick6 -j 2"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
echo
echo "62-byte UDP/IPv6 over veth, max loss-free rate (<= 0.1% loss), $NCPU CPUs, generator on CPU $GEN_CPU:"
printf '%-54s %3s %12s %10s\n' "router" "-j" "pps" "vs Linux"
k1=${RESULT[kernel,1]}
printf '%-54s %3s %12d %10s\n' "Linux IPv6 forwarding (RPS to CPU 0)" 1 "$k1" "1.00"
printf '%-54s %3s %12d %10s\n' "paraclick iprouter6-veth (ND by its own elements)" 1 "${RESULT[p1]}" "$(ratio "${RESULT[p1]}" "$k1")"
k2=${RESULT[kernel,2]}
printf '%-54s %3s %12d %10s\n' "Linux IPv6 forwarding (RPS to CPUs 0-1)" 2 "$k2" "1.00"
printf '%-54s %3s %12d %10s\n' "paraclick iprouter6-veth-2q (FromDevice per queue)" 2 "${RESULT[p2]}" "$(ratio "${RESULT[p2]}" "$k2")"
