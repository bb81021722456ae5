#!/usr/bin/env bash
# The model's device terms (docs/MODEL.md): what receiving a packet
# through FromDevice and sending one through ToDevice cost the thread
# that does it, beyond what the same chain costs with InfiniteSource and
# Discard in the devices' places, for AF_PACKET and AF_XDP; then the
# model's prediction of the device router from its twin with them.
#
# Measured as the queue hop is (crates/tune/src/hop.rs): chains run on the
# runtime itself, two pinned threads, each chain's end on its own thread,
# its time per packet from that thread's CPU time (schedstat: time on a
# CPU, not wall time, so other processes' load does not count) over the
# packets it handled:
#   device chain   thread 0: InfiniteSource(BURST 32) -> Queue -> ToDevice(da)
#                  thread 1: FromDevice(db) -> Counter -> Discard
#   twin chain     thread 0: InfiniteSource(BURST 32) -> Queue -> Discard
#                  thread 1: InfiniteSource(BURST 32) -> Counter -> Discard
# on a veth pair da <-> db in a namespace of its own; tx = thread 0's ns per
# packet, device less twin; rx = thread 1's likewise. The better of
# ROUNDS alternating rounds (default 3) is kept, as the hop keeps its
# cheapest window. The kernel's work for a packet that runs in softirq
# context on the sender's CPU (the veth's delivery to db) is in thread 0's
# time where the kernel charges softirqs to the task they interrupt
# (without CONFIG_IRQ_TIME_ACCOUNTING).
#
# Usage (as root):  scripts/device-terms.sh [PATH/TO/paraclick] [SECONDS] [ROUNDS]
# Prints, per method, the `paraclick model --device` argument, then
# `paraclick model conf/fake-iprouter.click -j 1` and `-j 2` with it: the
# predicted maximum loss-free rate of conf/iprouter-veth.click and
# conf/iprouter-veth-2q.click with dedicated cores. Compare it with
# scripts/bench-veth.sh's wall rate on a quiet machine, and anywhere with
# its "pps/CPU-s" column (packets per second of the router's own CPU
# time), which other processes' load does not lower (docs/MODEL.md).
# BENCH_PREFIX names the namespace (default pcd).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(readlink -f "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}")
SECS=${2:-2}
ROUNDS=${3:-3}
[[ $(id -u) -eq 0 ]] || { echo "device-terms: must run as root" >&2; exit 2; }
NS=${BENCH_PREFIX:-pcd}-dt-$$
TMP=$(mktemp -d /tmp/paraclick-dt.XXXXXX)
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add da type veth peer name db
ip -n "$NS" link set da up
ip -n "$NS" link set db up

# One run of CONF (-j 2, pinned) for SECS: prints "ns0 ns1" per packet,
# thread 0's CPU time over H0's count and thread 1's over H1's.
run() { # CONF H0 H1
  ip netns exec "$NS" "$BIN" -j 2 --pin -e "$1" -h "$2" -h "$3" >"$TMP/out" 2>"$TMP/err" &
  local pid=$! a b
  sleep 0.5
  a=$(for t in /proc/$pid/task/*; do echo "$(cat "$t/comm") $(cut -d' ' -f1 "$t/schedstat")"; done)
  sleep "$SECS"
  b=$(for t in /proc/$pid/task/*; do echo "$(cat "$t/comm") $(cut -d' ' -f1 "$t/schedstat")"; done)
  kill -INT "$pid"
  wait "$pid" || { cat "$TMP/err" >&2; return 1; }
  local n0 n1
  n0=$(awk -v h="$2:" '$0 == h { getline; print; exit }' "$TMP/out")
  n1=$(awk -v h="$3:" '$0 == h { getline; print; exit }' "$TMP/out")
  # Counts are for the whole run; CPU for the window: scale by the share
  # of the run the window was (the packets are counted over it too).
  awk -v a="$a" -v b="$b" -v n0="$n0" -v n1="$n1" -v s="$SECS" 'BEGIN {
    split(a, x, "\n"); split(b, y, "\n")
    for (i in x) { split(x[i], f, " "); c0[f[1]] = f[2] }
    for (i in y) { split(y[i], f, " "); c1[f[1]] = f[2] }
    t0 = c1["paraclick-0"] - c0["paraclick-0"]; t1 = c1["paraclick-1"] - c0["paraclick-1"]
    # the window is SECS of a run of SECS + 0.5 s: that share of the packets
    k = s / (s + 0.5)
    printf "%.1f %.1f\n", t0 / (n0 * k), t1 / (n1 * k)
  }'
}

PIN="StaticThreadSched(src 0, q 0, out 0, rx 1, c 1, d 1);"
device_conf() { # METHOD
  echo "src :: InfiniteSource(LENGTH 60, BURST 32) -> q :: Queue(1000) -> out :: ToDevice(da, BURST 32, METHOD $1);
        rx :: FromDevice(db, BURST 32, METHOD $1, SNIFFER false) -> c :: Counter -> d :: Discard; $PIN"
}
TWIN="src :: InfiniteSource(LENGTH 60, BURST 32) -> q :: Queue(1000) -> out :: Discard(BURST 32);
      rx :: InfiniteSource(LENGTH 60, BURST 32) -> c :: Counter -> d :: Discard; $PIN"

for method in LINUX XDP; do
  best_tx=
  best_rx=
  for r in $(seq 1 "$ROUNDS"); do
    read -r dtx drx < <(run "$(device_conf "$method")" out.count c.count)
    read -r ttx trx < <(run "$TWIN" out.count c.count)
    tx=$(awk -v a="$dtx" -v b="$ttx" 'BEGIN { printf "%.0f", a - b }')
    rx=$(awk -v a="$drx" -v b="$trx" 'BEGIN { printf "%.0f", a - b }')
    echo "  $method round $r: device chain $dtx / $drx ns, twin $ttx / $trx ns (thread 0 / thread 1): tx $tx, rx $rx" >&2
    [[ -z $best_tx || $tx -lt $best_tx ]] && best_tx=$tx
    [[ -z $best_rx || $rx -lt $best_rx ]] && best_rx=$rx
  done
  name=AF_PACKET
  [[ $method == XDP ]] && name=AF_XDP
  echo "$name: --device $name:$best_rx:$best_tx"
  for j in 1 2; do
    mlffr=$("$BIN" model "$ROOT/conf/fake-iprouter.click" -j "$j" --device "$name:$best_rx:$best_tx" 2>/dev/null |
      awk '/^MLFFR/ { print $2 }')
    echo "$name -j $j: predicted ${mlffr:-?} pps"
  done
done
