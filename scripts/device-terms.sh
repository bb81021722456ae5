#!/usr/bin/env bash
# The model's device terms (docs/MODEL.md), measured on the topology and
# with the generator that scripts/bench-veth.sh measures the device
# routers on (scripts/lib/veth.sh, GEN=xdp):
#
#   h1 [xdpgen] eth0 ==veth== r0 [chain] r1 ==veth== eth0 h2 [xdpsink]
#
# For AF_PACKET (METHOD LINUX) and AF_XDP (METHOD XDP):
#   tx  what sending a packet through ToDevice(r1) costs the thread that
#       sends it, h2's XDP sink included (veth runs it in the sender's
#       context), beyond the device-less twin: one pinned thread running
#         RatedSource(UDP to h2, TX_RATE) -> Queue -> Counter -> ToDevice(r1)
#       (TX_RATE default 400,000 pps, below what the chain takes, so h2
#       drops nothing) less the same with Discard for the ToDevice, each
#       its thread's busy CPU per packet (the cycles of its task runs
#       that moved packets, as rx below), the median of TX_WINDOWS
#       windows (default 5) of every round (printed: TX);
#   rx  what receiving one through FromDevice(r0) costs: one pinned
#       thread running FromDevice(r0) -> Counter -> Discard with the
#       generator on the other CPU offering RX_RATE (default 500,000 pps,
#       below what the chain takes; r0's receive, the socket buffer or
#       the XDP program, runs in the generator's softirq there, as in the
#       benchmark): the thread's busy CPU per packet, the cycles of its
#       task runs that moved packets (the runtime's `threads` handler,
#       BUSY_CYCLES, TSC cycles at TSC_MHZ), so none of its spin between
#       packets, its waits or its wake-ups, which the floor and wake-up
#       terms charge; the median of RX_WINDOWS windows (default 5) of
#       every round, less the same of InfiniteSource -> Counter ->
#       Discard (printed: RX). Each round prints the cache-line hand-over
#       between the two CPUs just before (scripts/lib/handover.c), which
#       the receive's cost follows (docs/MODEL.md);
#   wake (-j 1) the floor run's CPU beyond its packets (at the rx
#       chain's cost) over its wake-ups, and its packets per wake-up:
#       WAKE_NS and K, charged by the model only in the time the
#       packets leave of the core (paraclick model --wake-ns
#       --wake-packets without --cpus);
#   tx at -j 2: both threads push into the one ToDevice(r1), as
#       conf/iprouter-veth-2q.click's do: two pinned threads at
#       TX_RATE / 2 each, the busy CPU of both over the packets both
#       sent, median of windows, less the same into Discard;
#   ring (per thread count) the wake-up term: the highest loss-free rate of
#       the receive path alone, a FromDevice(r0) task per receive queue
#       into Discard, on the router's threads, with the generator on the
#       CPUs bench-veth.sh gives it at that thread count (its loss-free
#       rate search, scripts/lib/veth.sh), counted at the Counter. A
#       sleeping thread starts reading its ring a wake-up latency after
#       the first packet comes; the ring overflows once rate x latency
#       exceeds its depth, however cheap each packet is. If that path
#       reaches the rate only at 90% of its CPUs or more, the rings did
#       not overflow first and the term is left out. Printed, and passed
#       to the model only with RING_TERM=1: measured so, it does not bound
#       the router (docs/MODEL.md);
#   rx, share and gen at -j 2: bench-veth.sh gives the generator both
#       CPUs at -j 2, the router's. The receive path (a FromDevice per
#       queue, on the router's threads) with the generator offering more
#       than it takes there, ROUNDS times, the cheapest kept: the threads'
#       CPU per packet less the twin's is the -j 2 receive term and the
#       wake-ups (wake (-j 2) below; it holds what sharing the CPUs
#       with the generator costs: its cache, the wake-ups); each
#       thread's CPU over wall time is the share of its core a router
#       thread gets while the generator wants it too; the
#       generator's CPU (user + system, which holds r0's receive work it
#       sets off in softirq) per packet sent is what it needs per packet;
#       the packets counted per wake-up of the threads (their voluntary
#       context switches) are WAKE_PACKETS: the generator's batch, as
#       the woken thread runs before the generator sends more;
#   wake (-j 2) what a router thread spends per wake-up beyond its
#       packets (the spin before it waits in poll(2), the wait and the
#       wake-up): the floor run's CPU beyond its packets over its
#       wake-ups, WAKE_NS. On the CPUs it shares with the generator a
#       thread's spin is time the generator does not run, so a router
#       pays WAKE_NS / WAKE_PACKETS per packet there, but no more than
#       the chain's CPU per packet beyond the twin's (WAKE_NS is cut to
#       fit: at the generator's full rate the spins shorten); the -j 2
#       receive term is the rest, so the two add up to what the chain
#       spent.
#       The model solves for the rate where the router's and the
#       generator's demand fill the CPUs (paraclick model --cpus
#       --generator-ns --wake-ns --wake-packets);
#   floor (per thread count) the receive path's CPU beyond its per-packet
#       cost at a low rate (LOW, default 50,000 pps): its wake-ups, or
#       its polling, in CPU-seconds per second. A router below saturation
#       pays it besides its per-packet cost: its CPU per packet at rate r
#       is the saturated figure plus FLOOR x 1e9 / r ns.
# ROUNDS alternating rounds of tx and rx (default 3); the terms are the
# medians of all their windows.
#
# Usage (as root):  scripts/device-terms.sh [PATH/TO/paraclick] [SECONDS] [ROUNDS]
#   JOBS="1 2" (default) the thread counts; RT=1 as in bench-veth.sh;
#   BENCH_PREFIX names the namespaces (default pcd).
#   RX_RATE, RX_WINDOWS, TSC_MHZ as above (rx); TX_RATE, TX_WINDOWS (tx);
#   METHODS="LINUX XDP" (default) the methods measured.
# Prints one line per method and thread count:
#   RX METHOD -j 1 NS    (the receive term, its windows and hand-overs)
#   TX METHOD -j J NS    (the transmit term and its rounds)
#   WAKE METHOD -j 1 --wake-ns NS --wake-packets K
#   FLOOR METHOD -j J CPU_S_PER_S
#   SHARED METHOD -j 2 --cpus N --generator-ns NS [--wake-ns NS --wake-packets K]
#   TERM METHOD -j J --device METHOD:RX_NS:TX_NS[:RING_PPS]
# then the model's prediction from the twin (conf/fake-iprouter.click at
# -j 1, conf/fake-iprouter-x2.click at -j 2, BURST=32 as the veth routers):
#   PREDICT METHOD -j J SATURATED_PPS LOSS_FREE_PPS NS_PER_PKT
# (SATURATED_PPS: a core per router thread; LOSS_FREE_PPS: at -j 2 the
# rate on the CPUs shared with the generator.)
# (NS_PER_PKT: the router's CPU ns per packet, all its threads: at -j 1
# the saturated router's, 1e9 x threads / saturated; at -j 2 on the
# shared CPUs, that plus its threads' wake-ups, WAKE_NS / WAKE_PACKETS).
# scripts/validate-model-veth.sh compares these with bench-veth.sh's
# measurement.
set -euo pipefail
export GEN=xdp
[[ ${RT:-0} == 1 ]] && export GEN_CHRT="chrt -f 50"
BINARG=${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}
SECS_ARG=${2:-2}
ROUNDS=${3:-3}
. "$(dirname "${BASH_SOURCE[0]}")/lib/veth.sh"
veth_setup device-terms "${BENCH_PREFIX:-pcd}" 4 "$BINARG" "$SECS_ARG"
SOCK=$TMP/ctl

# A 60-byte UDP frame from r1 to h2, which h2's sink drops in XDP as it
# drops the routed ones.
UDP='\<02000000 02020200 00000201 08004500 002e0000 00004011 00000a00 01020a00
02020400 0009001a 00000000 00000000 00000000 00000000 0000>'

# The receive count the loss-free search reads (veth.sh calls rx_h2): the
# chain's Counter through the control socket while COUNT_AT_CHAIN is set.
ctl_read() { # HANDLER
  python3 - "$SOCK" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rwb")
f.readline()
f.write(b"READ " + sys.argv[2].encode() + b"\r\n"); f.flush()
code = f.readline()
n = int(f.readline().split()[1])
print(f.read(n).decode().strip())
EOF
}
eval "orig_$(declare -f rx_h2)"
rx_h2() { if [[ -n ${COUNT_AT_CHAIN:-} ]]; then ctl_read c.count; else orig_rx_h2; fi; }

start() { # THREADS CONF [HANDLER to wait for]
  rm -f "$SOCK"
  ip netns exec "$R" "$BIN" -j "$1" --pin -u "$SOCK" -e "$2" >"$TMP/chain.out" 2>"$TMP/chain.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 50); do
    [[ -S $SOCK ]] && ctl_read "${3:-c.count}" >/dev/null 2>&1 && break
    kill -0 "$ROUTER_PID" 2>/dev/null || { cat "$TMP/chain.err" >&2; exit 1; }
    sleep 0.1
  done
  if [[ ${RT:-0} == 1 ]]; then
    local t
    for t in /proc/"$ROUTER_PID"/task/*; do
      [[ $(cat "$t/comm") == paraclick-[0-9]* ]] && chrt -f -p 51 "${t##*/}"
    done
  fi
  return 0
}
stop() { kill -INT "$ROUTER_PID"; wait "$ROUTER_PID" || true; ROUTER_PID=; }

# The router's worker threads' voluntary context switches so far: each is
# a wait in poll(2) on an empty ring (or a nap), so a wake-up.
router_wakeups() {
  local t sum=0 v
  for t in ${ROUTER_PID:+/proc/$ROUTER_PID/task/*}; do
    [[ $(cat "$t/comm" 2>/dev/null) == paraclick-[0-9]* ]] || continue
    v=$(awk '$1 == "voluntary_ctxt_switches:" { print $2 }' "$t/status" 2>/dev/null || echo 0)
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}

# The -j 2 receive path's offered rate: more than the threads take; and
# the low rate the floor is measured at.
SATURATE=${SATURATE:-4000000}
LOW=${LOW:-50000}
# The -j 1 receive term's offered rate (below the bare chain's
# saturation, about the routers' loss-free rates) and its windows.
RX_RATE=${RX_RATE:-500000}
RX_WINDOWS=${RX_WINDOWS:-5}
# The transmit term's rate (RatedSource, bursts of a millisecond's
# packets; below what the chain takes) and its windows; at -j 2 each
# thread sends half.
TX_RATE=${TX_RATE:-400000}
TX_WINDOWS=${TX_WINDOWS:-5}

# The runtime's busy cycles (the `threads` handler's BUSY_CYCLES) are TSC cycles.
. "$(dirname "${BASH_SOURCE[0]}")/lib/tsc.sh"
MHZ=$(tsc_mhz)

# The worker threads' polls, idle polls (passes in which no task did
# work) and busy cycles (the cycles of task runs that did work, one run
# in 61 timed and scaled) so far, summed: the `threads` handler.
thread_polls() {
  ctl_read threads | awk '$1 == "thread" { p += $3; i += $4; b += $5 } END { printf "%.0f %.0f %.0f\n", p, i, b }'
}

# The packets counted so far: the sum of the COUNTERS handlers (default
# c.count; the two-thread transmit chain counts at c0 and c1).
counted() {
  local h sum=0
  for h in ${COUNTERS:-c.count}; do sum=$((sum + $(ctl_read "$h"))); done
  echo "$sum"
}

# WINDOWS windows of the running chain, each a trial at RATE through the
# generator (RATE 0: SECS of its own source); a line per window to
# $TMP/win: its busy CPU per packet counted at c (BUSY_CYCLES over the
# packets, in ns), its whole CPU per packet (schedstat), its packets, its
# packets per poll that did work and its packets per wake-up (voluntary
# context switch of its threads; the packets if none). The busy CPU
# holds no spin between packets, no wait and no wake-up (those polls
# found nothing), nor the generator's start-up and drain: only the runs
# that moved packets. COUNTERS as counted().
busy_windows() { # RATE WINDOWS
  local k c0 n0 p0 i0 b0 c1 n1 p1 i1 b1 v0 v1
  : >"$TMP/win"
  sleep 0.3
  for k in $(seq 1 "$2"); do
    c0=$(router_cpu_ns) n0=$(counted) v0=$(router_wakeups)
    read -r p0 i0 b0 < <(thread_polls)
    if [[ $1 -gt 0 ]]; then
      COUNT_AT_CHAIN=1 trial "$1" >/dev/null
    else
      sleep "$SECS"
    fi
    c1=$(router_cpu_ns) n1=$(counted) v1=$(router_wakeups)
    read -r p1 i1 b1 < <(thread_polls)
    awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v b="$((b1 - b0))" -v w="$(((p1 - p0) - (i1 - i0)))" -v f="$MHZ" -v v="$((v1 - v0))" \
      'BEGIN { if (n > 0) printf "%.1f %.1f %d %.2f %.1f\n", b / (f / 1e3) / n, c / n, n, (w > 0) ? n / w : 0, (v > 0) ? n / v : n }' >>"$TMP/win"
  done
}
# The median of the numbers on stdin, one a line.
median() {
  sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# Column COL of $TMP/win: "min/median/max".
spread() {
  local m
  m=$(awk -v k="$1" '{ print $k }' "$TMP/win" | median)
  awk -v k="$1" -v m="$m" 'NR == 1 || $k < lo { lo = $k } NR == 1 || $k > hi { hi = $k } END { printf "%s/%s/%s", lo, m, hi }' "$TMP/win"
}
win_median() { awk -v k="$1" '{ print $k }' "$TMP/win" | median; }

echo "device-terms: $(uptime | sed 's/^ *//'); TSC $MHZ MHz; RT=${RT:-0}; cache-line hand-over CPU 0 -> $GEN_CPU $(handover_ns | cut -d' ' -f1) ns" >&2
for method in ${METHODS:-LINUX XDP}; do
  name=AF_PACKET
  [[ $method == XDP ]] && name=AF_XDP
  veth_links 1
  [[ $method == LINUX ]] && ip -n "$R" link set dev r0 xdpdrv obj "$TMP/xdppass.o" program xdppass
  : >"$TMP/tx_wins"
  : >"$TMP/tx_twin_wins"
  tx_rounds=
  : >"$TMP/rx_rounds"
  : >"$TMP/rx_wins"
  : >"$TMP/rx_twin_wins"
  for r in $(seq 1 "$ROUNDS"); do
    # The transmit term: the chain sending TX_RATE packets a second
    # through ToDevice(r1), its busy CPU per packet (as the receive term
    # below), the median of TX_WINDOWS windows of every round, less the
    # same into Discard. Until 2026-11-29 it was the cheapest round of
    # an unpaced InfiniteSource chain's whole CPU per packet, which
    # moved 347-1,692 ns (AF_PACKET) between rounds: an unpaced sender
    # can outrun h2's receive, whose drops cost less than deliveries.
    htx=$(handover_ns | cut -d' ' -f1)
    start 1 "RatedSource(DATA $UDP, RATE $TX_RATE, LIMIT -1) -> Queue(1000) -> c :: Counter -> ToDevice(r1, BURST 32, METHOD $method);"
    busy_windows 0 "$TX_WINDOWS"
    dtx=$(win_median 1) tx_spread=$(spread 1)
    awk '{ print $1 }' "$TMP/win" >>"$TMP/tx_wins"
    stop
    start 1 "RatedSource(DATA $UDP, RATE $TX_RATE, LIMIT -1) -> Queue(1000) -> c :: Counter -> Discard(BURST 32);"
    busy_windows 0 3
    ttx=$(win_median 1)
    awk '{ print $1 }' "$TMP/win" >>"$TMP/tx_twin_wins"
    stop
    # The receive term: the bare receive chain with the generator offering
    # RX_RATE, its busy CPU per packet (the cycles of its runs that moved
    # packets, so none of its spin between packets, its waits or its
    # wake-ups, which the floor and wake-up terms charge), the median of
    # RX_WINDOWS windows, less the same of its device-less twin. Until
    # 2026-11-29 it was the chain's whole CPU (schedstat) per packet,
    # first of the bare chain, whose spin between packets it held (1,075
    # ns a packet with a TPACKET_V2 ring), then behind a WorkPackage(128)
    # at 4 Mpps offered against the same fed by InfiniteSource: 226-774
    # ns loaded and 1,124-1,178 quiet for AF_PACKET, with the ring always
    # full (the kernel, dropping, reading the slot the reader frees next,
    # presumably), a regime no loss-free router is in, and the
    # WorkPackage's own 2 us a packet moving with the load.
    # The cache-line hand-over between the two CPUs, just before (the
    # receive's cost follows it: docs/MODEL.md).
    hand=$(handover_ns | cut -d' ' -f1)
    start 1 "FromDevice(r0, BURST 32, METHOD $method, SNIFFER false) -> c :: Counter -> Discard;"
    busy_windows "$RX_RATE" "$RX_WINDOWS"
    drx=$(win_median 1) drx_cpu=$(win_median 2) rx_batch=$(win_median 4) rx_spread=$(spread 1) rx_kw=$(win_median 5)
    cp "$TMP/win" "$TMP/win.rx"
    stop
    start 1 "InfiniteSource(DATA $UDP, LIMIT -1, BURST 32) -> c :: Counter -> Discard;"
    busy_windows 0 3
    trx=$(win_median 1) trx_cpu=$(win_median 2)
    stop
    tx=$(awk -v a="$dtx" -v b="$ttx" 'BEGIN { printf "%.0f", a - b }')
    rx=$(awk -v a="$drx" -v b="$trx" 'BEGIN { x = a - b; printf "%.0f", (x > 0) ? x : 0 }')
    echo "$rx $drx_cpu $trx_cpu $rx_batch $rx_spread $trx $hand $rx_kw" >>"$TMP/rx_rounds"
    awk '{ print $1 }' "$TMP/win" >>"$TMP/rx_twin_wins"
    awk '{ print $1 }' "$TMP/win.rx" >>"$TMP/rx_wins"
    echo "  $name round $r ($(date -u +%T)): tx chain at $TX_RATE pps busy $dtx ns/pkt (windows min/median/max $tx_spread; hand-over $htx ns before it), twin busy $ttx: tx $tx; rx chain at $RX_RATE pps busy $drx ns/pkt (windows min/median/max $rx_spread; $rx_batch packets a poll that moved any; all its CPU $drx_cpu), twin busy $trx: rx $rx; hand-over $hand ns before it" >&2
    tx_rounds="$tx_rounds${tx_rounds:+, }$tx"
  done
  best_tx=$(awk -v a="$(median <"$TMP/tx_wins")" -v b="$(median <"$TMP/tx_twin_wins")" 'BEGIN { x = a - b; printf "%.0f", (x > 0) ? x : 0 }')
  echo "TX $name -j 1 $best_tx    (median of $ROUNDS rounds' windows; the rounds' $tx_rounds ns; busy CPU a packet of RatedSource -> Queue -> Counter -> ToDevice(r1) at $TX_RATE pps, $TX_WINDOWS windows a round, less the same into Discard)"
  # The receive term: the median of all the rounds' windows less that of
  # the twin's (a round whose windows all ran slow, on a loaded machine,
  # moves it less than the median of two rounds would); the CPU per packet
  # of the receive path (the term and its twin's CPU), which the floor and
  # the wake-up terms below take from the CPU of their runs.
  best_rx=$(awk -v a="$(median <"$TMP/rx_wins")" -v b="$(median <"$TMP/rx_twin_wins")" 'BEGIN { x = a - b; printf "%.0f", (x > 0) ? x : 0 }')
  best_drx=$(awk '{ print $2 }' "$TMP/rx_rounds" | median)
  best_trx=$(awk '{ print $3 }' "$TMP/rx_rounds" | median)
  pkt_drx=$(awk -v a="$best_trx" -v b="$best_rx" 'BEGIN { printf "%.1f", a + b }')
  echo "RX $name -j 1 $best_rx    (median of $ROUNDS rounds' windows; the rounds' $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }' "$TMP/rx_rounds") ns; busy CPU a packet of FromDevice -> Counter -> Discard at $RX_RATE pps offered, $RX_WINDOWS windows a round, min/median/max $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $5 }' "$TMP/rx_rounds"), less its twin's $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $6 }' "$TMP/rx_rounds"); packets a poll $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $4 }' "$TMP/rx_rounds"), a wake-up $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $8 }' "$TMP/rx_rounds"); all its CPU $best_drx ns a packet; TSC $MHZ MHz; cache-line hand-over $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $7 }' "$TMP/rx_rounds") ns; load $(cut -d' ' -f1 /proc/loadavg))"
  wake1=
  for j in ${JOBS:-1 2}; do
    veth_links "$j"
    [[ $method == LINUX ]] && ip -n "$R" link set dev r0 xdpdrv obj "$TMP/xdppass.o" program xdppass
    if [[ $j -eq 1 ]]; then
      conf="FromDevice(r0, BURST 32, METHOD $method, SNIFFER false) -> c :: Counter -> Discard;"
      gen=$GEN_CPU
    else
      conf="c :: Counter -> Discard;
        rx0 :: FromDevice(r0, QUEUE 0, N_QUEUES 2, BURST 32, METHOD $method, SNIFFER false) -> c;
        rx1 :: FromDevice(r0, QUEUE 1, N_QUEUES 2, BURST 32, METHOD $method, SNIFFER false) -> c;
        StaticThreadSched(rx0 0, rx1 1);"
      gen=0,1
    fi
    start "$j" "$conf"
    # The floor: the receive path's CPU at a low rate beyond its
    # per-packet cost (its threads' wake-ups, or polling), CPU-seconds
    # per second over all its threads.
    sleep 0.3
    c0=$(router_cpu_ns) n0=$(ctl_read c.count) w0=$(date +%s%N) v0=$(router_wakeups)
    COUNT_AT_CHAIN=1 GEN_CPUS=$gen trial "$LOW" >/dev/null
    c1=$(router_cpu_ns) n1=$(ctl_read c.count) w1=$(date +%s%N) v1=$(router_wakeups)
    if [[ $j -eq 1 ]]; then
      # The wake-up term on a core of its own: the CPU of this low-rate
      # run beyond its packets (at the receive term's cost) over its
      # wake-ups (voluntary context switches), and its packets per
      # wake-up, the most wake-ups the traffic makes. The model charges
      # them only in the time the packets leave of the core (paraclick
      # model --wake-ns --wake-packets without --cpus), so not at
      # saturation.
      wake1=$(awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v p="$pkt_drx" -v v="$((v1 - v0))" \
        'BEGIN { x = (v > 0) ? (c - n * p) / v : 0
                 if (x > 0 && n >= v) printf "--wake-ns %.0f --wake-packets %.1f", x, n / v }')
      if [[ -n $wake1 ]]; then
        echo "WAKE $name -j 1 $wake1    (at $LOW pps: $((n1 - n0)) packets, $((v1 - v0)) wake-ups; $pkt_drx ns a packet of the receive; the bare chain's whole CPU $best_drx at $RX_RATE offered)"
      fi
    fi
    floor=$(awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v p="$pkt_drx" -v w="$((w1 - w0))" \
      'BEGIN { x = (c - n * p) / w; printf "%.3f", (x > 0) ? x : 0 }')
    # The CPU of a wake-up: the floor over the wake-ups (voluntary
    # context switches of the threads) that made it: the spin before
    # each wait in poll(2) (FD_WAIT_AFTER), the wait and the wake-up.
    wake=$(awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v p="$pkt_drx" -v v="$((v1 - v0))" \
      'BEGIN { x = (v > 0) ? (c - n * p) / v : 0; printf "%.0f", (x > 0) ? x : 0 }')
    echo "FLOOR $name -j $j $floor    (receive path at $LOW pps: $(awk -v c="$((c1 - c0))" -v w="$((w1 - w0))" 'BEGIN { printf "%.3f", c / w }') CPU-s/s, $pkt_drx ns per packet of it; $((v1 - v0)) wake-ups, $wake ns each beyond the packets)"
    COUNT_AT_CHAIN=1 GEN_CPUS=$gen ROUTER_THREADS=$j search "$name rx -j $j" 100000 >"$TMP/ring" 2>"$TMP/ring.log" || true
    rxj=$best_rx shared=
    [[ $j -eq 1 ]] && shared=$wake1
    if [[ $j -eq 2 ]]; then
      # At -j 2 the generator runs on the router's CPUs (bench-veth.sh
      # gives it both): the receive path with the generator offering
      # more than it takes there, ROUNDS times, the cheapest kept:
      #   rx    its threads' CPU per packet (schedstat) less the twin's,
      #         what receiving costs next to the generator (its cache,
      #         the threads' wake-ups), for the -j 2 prediction;
      #   share each thread's CPU over wall time: the share of its core
      #         a router thread gets while the generator wants it too;
      #   gen   the generator's CPU (its threads' user + system time,
      #         which holds r0's receive it sets off in softirq) per
      #         packet it sent: what it needs per packet on these CPUs.
      best_rx2= best_share= best_gns= best_weff= best_drx2=
      for r in $(seq 1 "$ROUNDS"); do
        sleep 0.3
        # The router's CPU and the packets counted over the whole trial
        # (the generator cannot reach SATURATE, so it runs several
        # seconds: the idle start and tail are a small part), over the
        # generator's active seconds (packets sent over its rate); its
        # CPU per packet sent over its whole run.
        n0=$(ctl_read c.count) v0=$(router_wakeups)
        read -r _ _ bz0 < <(thread_polls)
        read -r sent _ ach < <(SECS=$(awk -v s="$SECS" 'BEGIN { print 3 * s + 1 }') COUNT_AT_CHAIN=1 GEN_CPUS=$gen trial "$SATURATE")
        n1=$(ctl_read c.count) v1=$(router_wakeups)
        read -r _ _ bz1 < <(thread_polls)
        read -r cw gcpu _ <"$TMP/trial.info"
        nw=$((n1 - n0))
        ww=$(awk -v s="$sent" -v a="$ach" 'BEGIN { printf "%.0f", (a > 0) ? s / a * 1e9 : 0 }')
        if [[ $nw -lt 1000 || $ww -le 0 ]]; then
          echo "  $name -j 2 rx round $r: no packets counted; left out" >&2
          continue
        fi
        read -r drx2 share2 gns < <(awk -v c="$cw" -v n="$nw" -v g="$gcpu" -v s="$sent" -v w="$ww" -v j="$j" \
          'BEGIN { sh = (w > 0) ? c / w / j : 1; if (sh > 1) sh = 1; if (sh < 0.01) sh = 0.01
                   printf "%.1f %.3f %.0f\n", (n > 0) ? c / n : 0, sh, (s > 0) ? g * 1e9 / s : 0 }')
        # Packets a thread takes per wake-up with the CPUs full (the
        # generator's batch: it hands r0 64 frames a NAPI poll and the
        # woken thread runs before it sends more); their wake-ups' CPU
        # (the floor run's per wake-up) is the wake-up term, not part of
        # the receive term.
        kw=$(awk -v n="$nw" -v v="$((v1 - v0))" 'BEGIN { printf "%.1f", (v > 0) ? n / v : 0 }')
        # The chain's CPU per packet beyond its twin's is the receive and
        # its wake-ups on the shared CPUs: the wake-up term is the floor
        # run's WAKE_NS / K, but never more than that whole (at the
        # generator's full rate the threads' spins shorten,
        # adapt_fd_spin, and the floor run's WAKE_NS over-counts them:
        # AF_XDP's chain spent 163 ns a packet in all against 368 of
        # wake-ups at 23.5 us / 64), and the receive term the rest; so
        # the two the model charges add up to what the chain spent.
        read -r rx2 weff < <(awk -v a="$drx2" -v b="$best_trx" -v w="$wake" -v k="$kw" \
          'BEGIN { t = a - b; if (t < 0) t = 0; wk = (k > 0) ? w / k : 0; if (wk > t) wk = t
                   printf "%.0f %.0f\n", t - wk, wk * k }')
        # Printed, not used: the threads' busy CPU per packet (their runs
        # that moved packets, as the -j 1 receive term takes it).
        bz=$(awk -v b="$((bz1 - bz0))" -v n="$nw" -v f="$MHZ" 'BEGIN { printf "%.0f", (n > 0) ? b / (f / 1e3) / n : 0 }')
        echo "  $name -j 2 rx round $r: busy $bz ns/pkt; chain $drx2 ns/pkt ($((n1 - n0)) packets, $kw a wake-up: $(awk -v w="$wake" -v k="$kw" 'BEGIN { printf "%.0f", (k > 0) ? w / k : 0 }') ns of wake-up), twin $best_trx: rx $rx2, wake-ups $(awk -v w="$weff" -v k="$kw" 'BEGIN { printf "%.0f", (k > 0) ? w / k : 0 }') ns a packet; thread share $share2; generator $gns ns per packet sent ($sent)" >&2
        if [[ -z $best_rx2 ]] || awk -v a="$drx2" -v b="$best_drx2" 'BEGIN { exit !(a < b) }'; then
          best_rx2=$rx2 best_share=$share2 best_gns=$gns best_kw=$kw best_weff=$weff best_drx2=$drx2
        fi
      done
      if [[ -n $best_rx2 ]]; then
        # The -j 2 receive term and wake-ups add up to the chain's CPU
        # beyond its twin's on the shared CPUs. Until 2026-11-29 22:00
        # UTC the receive term was held at the -j 1 term or above and the
        # floor run's whole WAKE_NS charged besides: for AF_XDP 239 + 368
        # ns a packet where the chain spent 159 in all, and the -j 2
        # AF_XDP router predicted at 0.87 of its measured rate.
        rxj=$best_rx2
        # The share is printed, not passed: the bare receive path does
        # not saturate its threads (the generator is the limit first),
        # so it shows their demand, not the share of a core they could
        # get; the model keeps --thread-share 1 (the router first).
        shared="--cpus $NCPU --generator-ns $best_gns"
        if awk -v w="$best_weff" -v k="$best_kw" 'BEGIN { exit !(w > 0 && k >= 1) }'; then
          shared="$shared --wake-ns $best_weff --wake-packets $best_kw"
        fi
        echo "SHARED $name -j $j $shared    (the generator on the router's $NCPU CPUs; receive threads' share $best_share, not passed)"
      else
        echo "  $name -j 2: the shared CPUs not measured (no round had packets flowing); a core per thread" >&2
      fi
    fi
    stop
    cat "$TMP/ring.log" >&2
    ring=$(cat "$TMP/ring")
    read -r _ share limit <"$TMP/search.info"
    txj=$best_tx
    if [[ $j -eq 2 ]]; then
      # At -j 2 both threads send through the one ToDevice per interface
      # (conf/iprouter-veth-2q.click pushes into it from each thread):
      # the transmit term is measured so, two pinned threads each pushing
      # TX_RATE / 2 packets a second into ToDevice(r1), their busy CPU
      # over the packets both sent, the median of all rounds' windows,
      # less the same into one Discard (until 2026-11-29 the cheapest
      # round of unpaced InfiniteSources' whole CPU, as at -j 1).
      : >"$TMP/tx2_wins"
      : >"$TMP/tx2_twin_wins"
      tx2_rounds=
      for r in $(seq 1 "$ROUNDS"); do
        two="s0 :: RatedSource(DATA $UDP, RATE $((TX_RATE / 2)), LIMIT -1) -> c0 :: Counter -> out;
          s1 :: RatedSource(DATA $UDP, RATE $((TX_RATE / 2)), LIMIT -1) -> c1 :: Counter -> out;
          StaticThreadSched(s0 0, s1 1);"
        start 2 "out :: ToDevice(r1, BURST 32, METHOD $method); $two" c0.count
        COUNTERS="c0.count c1.count" busy_windows 0 "$TX_WINDOWS"
        dtx=$(win_median 1) tx_spread=$(spread 1)
        awk '{ print $1 }' "$TMP/win" >>"$TMP/tx2_wins"
        stop
        start 2 "out :: Discard; $two" c0.count
        COUNTERS="c0.count c1.count" busy_windows 0 3
        ttx=$(win_median 1)
        awk '{ print $1 }' "$TMP/win" >>"$TMP/tx2_twin_wins"
        stop
        tx=$(awk -v a="$dtx" -v b="$ttx" 'BEGIN { printf "%.0f", a - b }')
        tx2_rounds="$tx2_rounds${tx2_rounds:+, }$tx"
        echo "  $name -j 2 round $r: tx chain at $TX_RATE pps busy $dtx ns/pkt (windows min/median/max $tx_spread), twin busy $ttx: tx $tx" >&2
      done
      best_tx2=$(awk -v a="$(median <"$TMP/tx2_wins")" -v b="$(median <"$TMP/tx2_twin_wins")" 'BEGIN { x = a - b; printf "%.0f", (x > 0) ? x : 0 }')
      echo "TX $name -j 2 $best_tx2    (median of $ROUNDS rounds' windows; the rounds' $tx2_rounds ns; two threads at $((TX_RATE / 2)) pps each into one ToDevice(r1), less the same into Discard)"
      txj=$best_tx2
    fi
    term="$name:$rxj:$txj"
    # The rings bound the rate only where they overflowed (packets lost
    # with the generator at the rate) before the receive path's own CPU
    # ran out: search's "loss@CPU%". Where the generator fell short
    # first the term is not measured.
    # Not passed to the model (docs/MODEL.md): the bare AF_XDP receive
    # path lost packets at a quarter of the rate the whole router
    # forwarded without loss, so it does not bound the router.
    if [[ ${RING_TERM:-0} == 1 && $ring -gt 0 && $limit == loss@* ]]; then
      term="$term:$ring"
    fi
    echo "TERM $name -j $j --device $term    (receive path loss-free at $ring pps, CPU $share of $j, then $limit)"
    if [[ $j -eq 1 ]]; then twin=conf/fake-iprouter.click; else twin=conf/fake-iprouter-x2.click; fi
    # --dedicated: a core per thread, comparable with the benchmark's
    # packets per router CPU-second on a loaded machine and with its wall
    # rate on a quiet one.
    # shellcheck disable=SC2086
    out=$("$BIN" model "$ROOT/$twin" BURST=32 -j "$j" --device "$term" --dedicated $shared 2>/dev/null || true)
    sat=$(awk '/predicted MLFFR/ { for (i = 1; i <= NF; i++) if ($i == "pps);") { gsub(/\(/, "", $(i - 1)); print $(i - 1); exit } }' <<<"$out")
    lf=$(awk '/^MLFFR/ { v = $2 } END { print v }' <<<"$out")
    # The router's CPU per packet: on a core per thread at saturation;
    # on the shared CPUs, the model's figure there (its wake-ups in it).
    pns=$(awk '/^shared CPUs:/ { for (i = 1; i < NF; i++) if ($i == "router" && $(i + 2) == "ns") { print $(i + 1); exit } }' <<<"$out")
    [[ -n $pns ]] || pns=$(awk -v s="${sat:-0}" -v j="$j" 'BEGIN { printf "%.0f", (s > 0) ? 1e9 * j / s : 0 }')
    echo "PREDICT $name -j $j ${sat:-0} ${lf:-0} $pns"
  done
done
