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

. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"
veth_setup bench-veth6 pcb6 6 "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}" "${2:-2}"
# The router answers through h2: neighbour discovery by its own elements.
PING_TARGET=$H2_ADDR

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

echo
echo "62-byte UDP/IPv6 over veth, max loss-free rate (<= 0.1% loss), $NCPU CPUs, generator on CPU $GEN_CPU:"
printf '%-54s %3s %12s %10s\n' "router" "-j" "pps" "vs Linux"
k1=${RESULT[kernel,1]}
k2=${RESULT[kernel,2]}
row "Linux IPv6 forwarding (RPS to CPU 0)" 1 "$k1" "$k1"
row "paraclick iprouter6-veth (ND by its own elements)" 1 "${RESULT[p1]}" "$k1"
row "Linux IPv6 forwarding (RPS to CPUs 0-1)" 2 "$k2" "$k2"
row "paraclick iprouter6-veth-2q (FromDevice per queue)" 2 "${RESULT[p2]}" "$k2"
