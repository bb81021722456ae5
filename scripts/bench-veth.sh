#!/usr/bin/env bash
# Maximum loss-free forwarding rate of 64-byte UDP packets through veth
# pairs: Linux's own forwarding against paraclick, at -j 1 and -j 2, and
# at -j 2 one FromDevice task per receive queue against one
# MultiFromDevice poller per thread (PRESTO 2010 §5.3, Figure 5).
#
#   h1 [paraclick generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# Usage (as root):  scripts/bench-veth.sh [PATH/TO/paraclick] [SECONDS]
#   (BENCH_PREFIX names the namespaces, default pcb)
#   (default: ${CARGO_TARGET_DIR:-target}/release/paraclick, 2 s per trial)
#
# In one run it measures, in this order:
#   kernel -j 1     addresses on r0/r1, net.ipv4.ip_forward=1, RPS on r0
#                   steering forwarding to CPU 0;
#   paraclick -j 1  conf/iprouter-veth.click (one FromDevice per interface);
#   kernel -j 2     the same, RPS on r0 steering to CPUs 0-1;
#   paraclick -j 2 queues   conf/iprouter-veth-2q.click: two fanout queues
#                   per interface, one FromDevice task per queue (4 tasks),
#                   queue i of both interfaces on thread i;
#   paraclick -j 2 poll     conf/iprouter-veth-2q-poll.click: the same
#                   queues, one MultiFromDevice task per thread polling
#                   queue i of both interfaces (2 tasks);
#   paraclick XDP -j 1      conf/iprouter-veth.click with METHOD=XDP: AF_XDP
#                   sockets (docs/AF_XDP.md) instead of AF_PACKET;
#   paraclick XDP -j 2      conf/iprouter-veth-2q.click with METHOD=XDP, on
#                   veth pairs remade with two queues (one socket each).
# paraclick's routers run on interfaces without addresses. h1 runs a
# paraclick generator (FastUDPSource at a set rate, one new flow per
# packet, -> ToDevice) on the last CPU; what arrives is h2's receive
# counter. A rate is loss-free when the generator reached it (within 3%)
# and at most 0.1% of its packets did not arrive, in one of two trials.
# Rates double until a loss, then a binary search narrows the maximum (to
# 5%). Other load on the machine lowers the figures: run it on a quiet
# one, and more than once.
#
# Prints figures only: one line per trial (on stderr), then a summary
# table with each rate's ratio to Linux's at the same thread count.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"
veth_setup bench-veth "${BENCH_PREFIX:-pcb}" 4 "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}" "${2:-2}"

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
measure_paraclick p1 conf/iprouter-veth.click 1 "paraclick -j 1"
measure_kernel 2
measure_paraclick p2q conf/iprouter-veth-2q.click 2 "paraclick -j 2 queues"
measure_paraclick p2poll conf/iprouter-veth-2q-poll.click 2 "paraclick -j 2 poll"
# AF_XDP: the same routers with METHOD=XDP; every receive queue of a
# device is read, so the veth pairs get two queues for -j 2.
ROUTER_DEFINES="METHOD=XDP PRIORITY=false" measure_paraclick x1 conf/iprouter-veth.click 1 "paraclick XDP -j 1"
veth_links 2
ROUTER_DEFINES="METHOD=XDP PRIORITY=false" measure_paraclick x2q conf/iprouter-veth-2q.click 2 "paraclick XDP -j 2"

echo
echo "64-byte UDP over veth, max loss-free rate (<= 0.1% loss), $NCPU CPUs, generator on CPU $GEN_CPU:"
printf '%-54s %3s %12s %10s\n' "router" "-j" "pps" "vs Linux"
k1=${RESULT[kernel,1]}
k2=${RESULT[kernel,2]}
row "Linux forwarding (RPS to CPU 0)" 1 "$k1" "$k1"
row "paraclick iprouter-veth (FromDevice per interface)" 1 "${RESULT[p1]}" "$k1"
row "Linux forwarding (RPS to CPUs 0-1)" 2 "$k2" "$k2"
row "paraclick iprouter-veth-2q (FromDevice per queue)" 2 "${RESULT[p2q]}" "$k2"
row "paraclick iprouter-veth-2q-poll (MultiFromDevice)" 2 "${RESULT[p2poll]}" "$k2"
row "paraclick iprouter-veth METHOD=XDP (AF_XDP)" 1 "${RESULT[x1]}" "$k1"
row "paraclick iprouter-veth-2q METHOD=XDP (AF_XDP, 2 queues)" 2 "${RESULT[x2q]}" "$k2"
echo "poll / per-queue tasks at -j 2: $(ratio "${RESULT[p2poll]}" "${RESULT[p2q]}")"
