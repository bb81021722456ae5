#!/usr/bin/env bash
# Maximum loss-free forwarding rate of small UDP packets through veth
# pairs, IPv4 (60-byte frames) then IPv6 (62-byte frames), at -j 1 and
# -j 2, in one run: Linux's own forwarding, an XDP redirect from r0 to r1
# (no routing: the upper bound on this topology), paraclick over AF_PACKET
# and paraclick over AF_XDP; with each router's CPU time per forwarded
# packet and what limited each figure.
#
#   h1 [generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# Usage (as root):  scripts/bench-veth.sh [PATH/TO/paraclick] [SECONDS]
#   (default: ${CARGO_TARGET_DIR:-target}/release/paraclick, 1 s per trial)
#   BENCH_PREFIX names the namespaces (default pcb); FAMILIES="4 6" (the
#   default) or one of them; GEN=xdp (default) or GEN=paraclick, the
#   earlier AF_PACKET generator (FastUDPSource -> ToDevice); POLL=1 adds
#   the -j 2 MultiFromDevice row (conf/iprouter-veth-2q-poll.click);
#   JOBS="1 2" (the default), or one of them, the thread counts measured.
#   CLICK=PATH/TO/click adds a -j 1 row for real Click userlevel (built
#   by you from kohler/click) on the same configuration, with FromDevice
#   and ToDevice on METHOD LINUX packet sockets (scripts/lib/veth.sh,
#   click_router); the row is skipped, with Click's message, if Click
#   does not start on it.
#   PARACLICK_ONLY=1 measures paraclick's rows only (the model's check,
#   scripts/validate-model-veth.sh); ROWS="pkt xsk" (say) only the rows
#   of those keys (kernel, xdp, click, pkt, poll, xsk).
#   RT=1 runs the router's worker threads (paraclick-N) and the
#   generator under SCHED_FIFO (priorities 51 and 50: the router preempts
#   the generator), so that other processes' load does not take their
#   CPU; the kernel's RT throttling leaves other processes 5% of each CPU
#   meanwhile. Without it, on a busy machine the generator waits for a
#   CPU, falls short and the wall rates mean little: compare the CPU
#   figures.
#   A run of both families took 8 min 16 s (RT=1, loaded 2-CPU machine).
#
# The generator (GEN=xdp, scripts/lib/xdpgen.c) makes its frames in the
# kernel (BPF_PROG_RUN, live frames) and hands them to r0's receive ring
# without a socket buffer, where the paraclick generator's AF_PACKET send
# cost more than the router's work and was the limit at -j 2 (it reached
# ~210 kpps). r0 and h2's eth0 run in veth's NAPI mode: h2's with an XDP
# sink (xdpsink in scripts/lib/xdppass.bpf.c: h2 counts the frame, then
# drops the UDP, at the same small cost in every row; before, h2's IP
# stack took each packet and looked up its UDP port), r0's with an XDP program (scripts/lib/xdppass.bpf.c, XDP_PASS, for Linux
# and AF_PACKET, as FromDevice on AF_PACKET turns GRO off; AF_XDP routers
# attach their own; the XDP row its forwarder). r0's NAPI poll runs in softirq on the
# sending CPU, at the end of each batch of 64 frames, as the paraclick
# generator's send ran r0's receive backlog there: the socket buffer and
# packet-socket copy (AF_PACKET, Linux), or the XDP program and the copy
# into the socket's frame (AF_XDP), are done on the generator's CPU.
#   -j 1   router on CPU 0, the generator on CPU 1 (the last), one queue
#          per veth. Linux: RPS steers the forwarding to CPU 0.
#   -j 2   two queues per veth, the generator's two threads on CPUs 0 and 1
#          (veth hands a frame to the receive queue of the sending CPU:
#          this is how both queues get traffic, as RSS would), each
#          sending half the rate; the router on both CPUs; transmit queue
#          i of r0 and r1 on CPU i (XPS). Linux: no RPS, each CPU forwards
#          what its queue received. The generator spins, so at -j 2 it
#          shares both CPUs with the router and leaves it about one CPU
#          (the "test-bed@R/L" limit below; docs/MODEL.md has the
#          arithmetic).
#   Linux forwarding: addresses on r0/r1, forwarding on.
#   XDP redirect: scripts/lib/xdpfwd.bpf.c on r0 (native), rewriting the
#   Ethernet addresses and redirecting to r1; it runs in r0's NAPI poll,
#   on the generator's CPU(s).
#   paraclick: conf/iprouter-veth.click (-j 1), conf/iprouter-veth-2q.click
#   (-j 2, two fanout queues per interface, one FromDevice task per
#   queue), AF_PACKET; the same with METHOD=XDP PRIORITY=false (AF_XDP,
#   one socket per queue); IPv6: conf/iprouter6-veth*.click.
# What arrives is h2's receive counter. A rate is loss-free when the
# generator reached it (within 3%) and at most 0.1% of its packets did
# not arrive, in one of two trials. Rates double from 100 kpps until a
# loss, then a binary search narrows the maximum (to 5%).
#
# Per row: the rate; "ns/pkt", the router's CPU time per packet
# forwarded at that rate (paraclick: its threads, schedstat, which include
# the send to h2 its system calls set off; Linux: softirq time of CPU 0 at
# -j 1, of both CPUs at -j 2, which then includes r0's receive; XDP
# redirect: softirq time of the generator's CPUs: the redirect, r0's
# receive of the frame and the send to h2), and "cycles", the same at the cycle
# counter's rate (lscpu's MHz); "CPU", the router's share of its CPUs
# there, over the window in which packets were offered (the generator's
# sending time, not its start-up or the drain after it: a saturated
# router reads ~100%); "pps/CPU-s", packets forwarded per second of router CPU (what a
# router with dedicated cores would forward, if nothing else limits); and
# "limit": what stopped the first lossy rate above it: "generator@X%"
# (it fell short; X its CPU share), "router-cpu" (router at >= 90% of its
# CPUs), "test-bed@R/L" (the router used R CPUs of the L the spinning
# generator left it, >= 90% of them, L below its thread count: the test
# bed's limit) or "loss@X%" (loss with the router at X%: a ring
# overflowed, or other processes took the CPU); then, at that first
# lossy rate, router/generator/left CPU (CPU-s a second over all CPUs),
# the rate the left CPU carries at the row's ns/pkt, and each router
# thread's CPU share. FIXED_RATE=R measures each row at R pps (and
# below it only if R loses)
# (per-packet and per-thread CPU at one offered rate, steadier than the
# search on a loaded machine). Other load on the machine lowers the
# wall rates but not the per-packet CPU figures much: on a busy machine
# compare ns/pkt and pps/CPU-s.
set -euo pipefail
export GEN=${GEN:-xdp}
[[ ${RT:-0} == 1 ]] && export GEN_CHRT="chrt -f 50"
BINARG=${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}
SECS_ARG=${2:-1}
. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"

MHZ=$(awk -F: '/^cpu MHz/ { printf "%.0f", $2; exit }' /proc/cpuinfo)
declare -A RESULT INFO MORE

# PARACLICK_ONLY=1 (scripts/validate-model-veth.sh): only paraclick's rows.
skip_row() { [[ ${PARACLICK_ONLY:-0} == 1 && $1 != paraclick ]]; }

# measure KEY THREADS LABEL KIND [CONF [DEFINES]]: one row. KIND: kernel,
# xdp (the XDP redirect) or paraclick.
measure() {
  local key=$1 threads=$2 label=$3 kind=$4 conf=${5:-} defines=${6:-}
  skip_row "$kind" && return 0
  local row=${key#*,}
  [[ -z ${ROWS:-} || " $ROWS " == *" ${row%,*} "* ]] || return 0
  veth_links "$threads"
  local gen=$GEN_CPU softirq=
  if [[ $threads -eq 2 ]]; then gen=0,1 softirq=0,1; fi
  # Frames the generator sends reach r0's stack through an XDP program
  # (veth's NAPI mode): a pass-through one for Linux and AF_PACKET.
  [[ $GEN == xdp && $kind != xdp && $defines != *METHOD=XDP* ]] &&
    ip -n "$R" link set dev r0 xdpdrv obj "$TMP/xdppass.o" program xdppass
  case $kind in
    kernel)
      kernel_router "$threads"
      # -j 1: RPS moves the forwarding to CPU 0; -j 2: each CPU forwards
      # what its queue received.
      if [[ $threads -eq 1 ]]; then softirq=0; else rps 0; fi ;;
    xdp)
      "$CLANG" "${BPF_CFLAGS[@]}" -DOUT_IFINDEX="$(ip netns exec "$R" cat /sys/class/net/r1/ifindex)" \
        -c "$ROOT/scripts/lib/xdpfwd.bpf.c" -o "$TMP/xdpfwd.o"
      ip -n "$R" link set dev r0 xdpdrv obj "$TMP/xdpfwd.o" sec xdp
      # The redirect runs in r0's NAPI poll, on the sending CPU(s).
      softirq=$gen ;;
    paraclick)
      # Its CPU is its threads' (schedstat, which holds the softirqs run
      # inside their system calls): the CPUs' softirq time at -j 2 is
      # mostly r0's receive, run for the generator, and counted the
      # router's own a second time.
      softirq=
      # shellcheck disable=SC2086
      ROUTER_DEFINES="$defines" paraclick_router "$conf" "$threads" ;;
    click)
      softirq=
      ROUTER_DEFINES="$defines" click_router "$conf" || return 0 ;;
  esac
  if [[ ${RT:-0} == 1 && -n $ROUTER_PID ]]; then
    local t
    for t in /proc/"$ROUTER_PID"/task/*; do
      [[ $(cat "$t/comm") == paraclick-[0-9]* ]] && chrt -f -p 51 "${t##*/}"
    done
  fi
  [[ $kind == xdp ]] || prime
  RESULT[$key]=$(GEN_CPUS=$gen ROUTER_THREADS=$threads ROUTER_SOFTIRQ_CPUS=$softirq search "$label" "${FIXED_RATE:-100000}" "${FIXED_RATE:-8000000}")
  INFO[$key]=$(cat "$TMP/search.info")
  MORE[$key]=$(cat "$TMP/search.more")
  case $kind in
    kernel) kernel_router_off ;;
    xdp) ip -n "$R" link set dev r0 xdpdrv off ;;
    paraclick | click) paraclick_router_off ;;
  esac
}

table() { # FAMILY
  local fam=$1
  echo
  if [[ $fam == 4 ]]; then
    echo "IPv4, 60-byte UDP frames over veth, max loss-free rate (<= 0.1% loss), generator GEN=$GEN:"
  else
    echo "IPv6, 62-byte UDP frames over veth, max loss-free rate (<= 0.1% loss), generator GEN=$GEN:"
  fi
  printf '%-44s %3s %10s %8s %8s %7s %5s %10s %8s  %-20s %s\n' "router" "-j" "pps" "vs Linux" "ns/pkt" "cycles" "CPU" "pps/CPU-s" "vs Linux" "limit" "at the first loss: router/gen/left CPU, cap, threads"
  local key j label base ns share limit mr mg ml mcap mthr
  for key in kernel,1 xdp,1 click,1 pkt,1 xsk,1 kernel,2 xdp,2 pkt,2 poll,2 xsk,2; do
    [[ -n ${RESULT[$fam,$key]:-} ]] || continue
    j=${key#*,}
    case ${key%,*} in
      kernel) label="Linux forwarding" ;;
      xdp) label="XDP redirect r0 -> r1 (no routing)" ;;
      click) label="Click userlevel (FromDevice METHOD LINUX)" ;;
      pkt) label="paraclick AF_PACKET" ;;
      poll) label="paraclick AF_PACKET (MultiFromDevice)" ;;
      xsk) label="paraclick AF_XDP" ;;
    esac
    base=${RESULT[$fam,kernel,$j]:-0}
    read -r ns share limit <<<"${INFO[$fam,$key]}"
    local kns
    read -r kns _ <<<"${INFO[$fam,kernel,$j]:-0}"
    read -r mr mg ml mcap mthr _ <<<"${MORE[$fam,$key]:-- - - - -}"
    printf '%-44s %3s %10d %8s %8s %7s %4.0f%% %10s %8s  %-20s %s\n' "$label" "$j" "${RESULT[$fam,$key]}" \
      "$(ratio "${RESULT[$fam,$key]}" "$base")" "$ns" \
      "$(awk -v n="$ns" -v m="$MHZ" 'BEGIN { printf "%.0f", n * m / 1000 }')" \
      "$(awk -v s="$share" 'BEGIN { print 100 * s }')" \
      "$(awk -v n="$ns" 'BEGIN { if (n > 0) printf "%.0f", 1e9 / n; else print "-" }')" \
      "$(ratio "$kns" "$ns")" "$limit" "$mr/$mg/$ml, $mcap pps, $mthr"
  done
}

for fam in ${FAMILIES:-4 6}; do
  if [[ $fam == 6 ]]; then
    veth_cleanup
    trap - EXIT
    veth_setup bench-veth6 "${BENCH_PREFIX:-pcb}6" 6 "$BINARG" "$SECS_ARG"
    PING_TARGET=$H2_ADDR
    c1=conf/iprouter6-veth.click c2=conf/iprouter6-veth-2q.click
  else
    veth_setup bench-veth "${BENCH_PREFIX:-pcb}" 4 "$BINARG" "$SECS_ARG"
    c1=conf/iprouter-veth.click c2=conf/iprouter-veth-2q.click
  fi
  if [[ " ${JOBS:-1 2} " == *" 1 "* ]]; then
    measure "$fam,kernel,1" 1 "v$fam kernel -j 1" kernel
    measure "$fam,xdp,1" 1 "v$fam XDP -j 1" xdp
    [[ -n ${CLICK:-} ]] && measure "$fam,click,1" 1 "v$fam Click -j 1" click "$c1"
    measure "$fam,pkt,1" 1 "v$fam AF_PACKET -j 1" paraclick "$c1"
    measure "$fam,xsk,1" 1 "v$fam AF_XDP -j 1" paraclick "$c1" "METHOD=XDP PRIORITY=false"
  fi
  if [[ " ${JOBS:-1 2} " == *" 2 "* ]]; then
    measure "$fam,kernel,2" 2 "v$fam kernel -j 2" kernel
    measure "$fam,xdp,2" 2 "v$fam XDP -j 2" xdp
    measure "$fam,pkt,2" 2 "v$fam AF_PACKET -j 2" paraclick "$c2"
    [[ ${POLL:-0} == 1 && $fam == 4 ]] &&
      measure "$fam,poll,2" 2 "v$fam AF_PACKET poll -j 2" paraclick conf/iprouter-veth-2q-poll.click
    measure "$fam,xsk,2" 2 "v$fam AF_XDP -j 2" paraclick "$c2" "METHOD=XDP PRIORITY=false"
  fi
done

for fam in ${FAMILIES:-4 6}; do table "$fam"; done
echo
echo "ns/pkt and cycles: router CPU time per forwarded packet ($MHZ MHz); pps/CPU-s: packets per second of router CPU; vs Linux: Linux's ns/pkt over the row's."
if [[ " ${FAMILIES:-4 6} " == *" 4 "* && " ${FAMILIES:-4 6} " == *" 6 "* ]]; then
  for j in ${JOBS:-1 2}; do
    for key in pkt xsk; do
      echo "IPv6 / IPv4, $key -j $j: rate $(ratio "${RESULT[6,$key,$j]}" "${RESULT[4,$key,$j]}")"
    done
  done
fi
