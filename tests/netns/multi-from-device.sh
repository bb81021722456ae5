#!/usr/bin/env bash
# MultiFromDevice on real devices: every frame sent arrives, once, on the
# output of the (device, queue) it came in on.
#
#   ns S: s0 ==veth== m0  ns M: paraclick reads m0 and m1
#         s1 ==veth== m1
#
# Usage (as root):  tests/netns/multi-from-device.sh PATH/TO/paraclick
#
# Two paraclick generators in S send known numbers of 60-byte UDP frames
# at the same time, N0 on s0 (source 10.0.1.2) and N1 on s1 (source
# 10.0.2.2). In M, every output of the element under test goes to a
# Classifier on the source address, with a Counter for "from s0", "from
# s1" and "other" (the kernel's own chatter, if any). Checks:
#   1. -j 1, MultiFromDevice(m0, m1): output 0 counts exactly N0 frames
#      from s0 and none from s1; output 1 exactly N1 from s1, none from s0;
#      the element's count and counts handlers agree; no drops.
#   2. -j 2, queues split between MultiFromDevice and FromDevice
#      (N_QUEUES 2, FANOUT LB, so the kernel deals frames in turn):
#      MultiFromDevice(m0 0, m1 0) on thread 0, FromDevice(m0, QUEUE 1)
#      and FromDevice(m1, QUEUE 1) on thread 1. Each device's frames add
#      up to exactly N0 (N1) over its two queues, each queue got some,
#      and none is on the other device's path.
#   3. A configuration in which MultiFromDevice and FromDevice both read
#      queue 0 of m0 is refused at startup, naming both.
#   4. Two FromDevice queues of m0 while the router sends N0 frames out of
#      m0 itself: with OUTBOUND false the kernel puts none of them in
#      the fanout group's rings (kernel_count 0); with OUTBOUND true the
#      rings get and emit them all. s0 receives them both times.
#   5. FANOUT CPU, the QUEUE 1 element opened first: frames received on
#      CPU i reach QUEUE i's element, all of them, IPv4 and IPv6 alike
#      (needs two CPUs).
# Prints one line per check; exits 0 if all pass.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "multi-from-device test: must run as root (namespaces, veth pairs, packet sockets)" >&2; exit 2; }

SUF=$$
# NETNS_PREFIX (default pc-mq) names the namespaces.
S=${NETNS_PREFIX:-pc-mq}-s-$SUF
M=${NETNS_PREFIX:-pc-mq}-m-$SUF
TMP=$(mktemp -d /tmp/paraclick-mq.XXXXXX)
RX_PID=
FAILED=0
N0=4000
N1=3000
RATE=20000

source "$ROOT/tests/netns/lib.sh"

cleanup() {
  set +e
  [[ -n $RX_PID ]] && kill -INT "$RX_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$RX_PID" 2>/dev/null
  delete_namespaces "$S" "$M"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "multi-from-device test: interrupted" >&2; exit 130' INT TERM

# No IPv6 anywhere: no router solicitations or neighbour discovery on the
# links (the "other" counters should stay at zero; they are not relied on).
add_namespaces_without_ipv6 "$S" "$M"
ip -n "$S" link add s0 type veth peer name m0 netns "$M"
ip -n "$S" link add s1 type veth peer name m1 netns "$M"
ip -n "$S" link set s0 address 02:00:00:00:01:02
ip -n "$S" link set s1 address 02:00:00:00:02:02
ip -n "$M" link set m0 address 02:00:00:00:01:01
ip -n "$M" link set m1 address 02:00:00:00:02:01
for l in s0 s1; do ip -n "$S" link set "$l" up; done
for l in m0 m1; do ip -n "$M" link set "$l" up; done

ctl() { timeout 5 "$BIN" ctl -u "$TMP/rx.sock" "$@"; }
num() { ctl read "$1" 2>/dev/null | tr -dc '0-9'; }

# The receiver answers on its control socket: it is built, so every
# receive socket is open, bound and in its fanout group (FromDevice and
# MultiFromDevice open them when initialized, before the control server
# starts), and frames sent from now on wait in their rings.
rx_answers() {
  kill -0 "$RX_PID" 2>/dev/null || return 0
  [[ -S $TMP/rx.sock ]] && ctl list >/dev/null 2>&1
}

start_rx() { # THREADS CONFIG HANDLERS... (waits until it answers)
  local threads=$1 conf=$2
  shift 2
  local -a hs=()
  for h in "$@"; do hs+=(-h "$h"); done
  rm -f "$TMP/rx.sock"
  ip netns exec "$M" "$BIN" -j "$threads" -u "$TMP/rx.sock" "${hs[@]}" -e "$conf" >"$TMP/rx.out" 2>"$TMP/rx.err" &
  RX_PID=$!
  wait_for 20 "the receiver to answer on its control socket" rx_answers || return 1
  if ! kill -0 "$RX_PID" 2>/dev/null; then
    echo "receiver exited early:" >&2; cat "$TMP/rx.err" >&2; return 1
  fi
  # As many packet sockets as the configuration opens.
  local n
  n=$(ip netns exec "$M" awk 'NR > 1' /proc/net/packet | wc -l)
  [[ $n -ge $SOCKETS ]] || { echo "receiver opened $n packet sockets, not $SOCKETS" >&2; return 1; }
}

# received HANDLER...: the sum of the receiver's counters, read now.
received() {
  local h sum=0
  for h in "$@"; do sum=$((sum + $(num "$h"))); done
  echo "$sum"
}

# wait_received HANDLER...: until the counters of frames from s0 and s1
# add up to N0 + N1 (a lost frame fails here after 20 s, loudly, and
# then in the exact checks below).
COUNTERS=()
all_received() { [[ $(received "${COUNTERS[@]}") -ge $((N0 + N1)) ]]; }
wait_received() {
  COUNTERS=("$@")
  wait_for 20 "the receiver to count all $((N0 + N1)) frames (counters: $*)" all_received
}

stop_rx() {
  kill -INT "$RX_PID"
  local rc=0
  wait "$RX_PID" || rc=$?
  RX_PID=
  if [[ $rc -ne 0 ]]; then fail "receiver exited with status $rc"; cat "$TMP/rx.err"; fi
}

# Sends N0 frames on s0 and N1 on s1 at the same time; checks the
# generators sent them all.
send_both() {
  local i n src mac dmac
  for i in 0 1; do
    if [[ $i -eq 0 ]]; then n=$N0; src=10.0.1.2; mac=02:00:00:00:01:02; dmac=02:00:00:00:01:01
    else n=$N1; src=10.0.2.2; mac=02:00:00:00:02:02; dmac=02:00:00:00:02:01; fi
    ip netns exec "$S" "$BIN" --no-pin -h to.count -h to.drops -e "
      FastUDPSource($RATE, $n, 60, $mac, $src, 1024, $dmac, 10.9.9.9, 9, INTERVAL 1, STOP true)
        -> to :: ToDevice(s$i);" >"$TMP/tx$i.out" 2>"$TMP/tx$i.err" &
    eval "TX$i=\$!"
  done
  wait "$TX0" "$TX1"
  for i in 0 1; do
    local want=$N0 got
    [[ $i -eq 1 ]] && want=$N1
    got=$(awk '$0 == "to.count:" { getline; print; exit }' "$TMP/tx$i.out")
    if [[ ${got:-0} -ne $want ]]; then
      echo "generator on s$i sent ${got:-0} of $want frames:" >&2; cat "$TMP/tx$i.out" "$TMP/tx$i.err" >&2
      return 1
    fi
  done
}

h() { awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/rx.out"; }

counters() { # PREFIX: a Classifier by source address with three Counters
  echo "$1 :: Classifier(26/0a000102, 26/0a000202, -);
        $1[0] -> $1_s0 :: Counter -> Discard;
        $1[1] -> $1_s1 :: Counter -> Discard;
        $1[2] -> $1_other :: Counter -> Discard;"
}

# ---- 1. -j 1, one MultiFromDevice reading both devices ----
SOCKETS=2
CONF="m :: MultiFromDevice(m0, m1, BURST 8, SNIFFER false);
$(counters o0) $(counters o1)
m[0] -> o0; m[1] -> o1;"
start_rx 1 "$CONF" m.count m.counts m.drops \
  o0_s0.count o0_s1.count o0_other.count o1_s0.count o1_s1.count o1_other.count ||
  { fail "1: receiver start"; exit 1; }
send_both || fail "1: sending"
wait_received o0_s0.count o0_s1.count o1_s0.count o1_s1.count || true
stop_rx
a=$(h o0_s0.count); b=$(h o0_s1.count); c=$(h o1_s0.count); d=$(h o1_s1.count)
echo "      1: output 0: $a from s0, $b from s1, $(h o0_other.count) other; output 1: $c from s0, $d from s1, $(h o1_other.count) other; drops $(h m.drops)"
if [[ $a -eq $N0 && $b -eq 0 ]]; then pass "1: output 0 (m0) got all $N0 frames from s0 and none from s1"
else fail "1: output 0 got $a from s0 (want $N0) and $b from s1 (want 0)"; fi
if [[ $d -eq $N1 && $c -eq 0 ]]; then pass "1: output 1 (m1) got all $N1 frames from s1 and none from s0"
else fail "1: output 1 got $d from s1 (want $N1) and $c from s0 (want 0)"; fi
total=$(( a + b + c + d + $(h o0_other.count) + $(h o1_other.count) ))
counts=$(awk '$0 == "m.counts:" { for (i = 0; i < 2; i++) { getline; printf "%s;", $0 } exit }' "$TMP/rx.out")
if [[ $(h m.count) -eq $total && $counts == "m0 0 $((a + b + $(h o0_other.count)));m1 0 $((c + d + $(h o1_other.count)));" && $(h m.drops) -eq 0 ]]; then
  pass "1: count ($total), counts ($counts) and drops (0) agree with the outputs"
else
  fail "1: handlers: count $(h m.count), counts '$counts', drops $(h m.drops), outputs $total"
fi

# ---- 2. -j 2, queues split between MultiFromDevice and FromDevice ----
SOCKETS=4
CONF="m :: MultiFromDevice(m0 0, m1 0, N_QUEUES 2, FANOUT LB, SNIFFER false);
f0 :: FromDevice(m0, QUEUE 1, N_QUEUES 2, FANOUT LB, SNIFFER false);
f1 :: FromDevice(m1, QUEUE 1, N_QUEUES 2, FANOUT LB, SNIFFER false);
$(counters o0) $(counters o1) $(counters p0) $(counters p1)
m[0] -> o0; m[1] -> o1; f0 -> p0; f1 -> p1;
StaticThreadSched(m 0, f0 1, f1 1);"
start_rx 2 "$CONF" m.counts \
  o0_s0.count o0_s1.count o1_s0.count o1_s1.count p0_s0.count p0_s1.count p1_s0.count p1_s1.count ||
  { fail "2: receiver start"; exit 1; }
send_both || fail "2: sending"
wait_received o0_s0.count o0_s1.count o1_s0.count o1_s1.count \
  p0_s0.count p0_s1.count p1_s0.count p1_s1.count || true
stop_rx
q00=$(h o0_s0.count); q01=$(h p0_s0.count); q10=$(h o1_s1.count); q11=$(h p1_s1.count)
wrong=$(( $(h o0_s1.count) + $(h p0_s1.count) + $(h o1_s0.count) + $(h p1_s0.count) ))
echo "      2: m0 queue 0 (MultiFromDevice) $q00, queue 1 (FromDevice) $q01; m1 queue 0 $q10, queue 1 $q11; on the wrong device's path $wrong"
if [[ $((q00 + q01)) -eq $N0 && $q00 -gt 0 && $q01 -gt 0 ]]; then
  pass "2: m0's $N0 frames split over MultiFromDevice queue 0 ($q00) and FromDevice queue 1 ($q01)"
else fail "2: m0's queues got $q00 + $q01, want $N0, both non-zero"; fi
if [[ $((q10 + q11)) -eq $N1 && $q10 -gt 0 && $q11 -gt 0 ]]; then
  pass "2: m1's $N1 frames split over MultiFromDevice queue 0 ($q10) and FromDevice queue 1 ($q11)"
else fail "2: m1's queues got $q10 + $q11, want $N1, both non-zero"; fi
if [[ $wrong -eq 0 ]]; then pass "2: no frame on the other device's path"; else fail "2: $wrong frames on the wrong path"; fi

# ---- 3. two readers of one queue: refused ----
if out=$(ip netns exec "$M" "$BIN" -q -e "
    m :: MultiFromDevice(m0 0, N_QUEUES 2) -> Discard;
    f :: FromDevice(m0, QUEUE 0, N_QUEUES 2) -> Discard;" 2>&1); then
  fail "3: two readers of queue 0 of m0 accepted"
elif grep -q "m and f both read QUEUE 0 of m0\|f and m both read QUEUE 0 of m0" <<<"$out"; then
  pass "3: two readers of queue 0 of m0 refused: $(grep -o '[a-z]* and [a-z]* both read QUEUE 0 of m0' <<<"$out" | head -1)"
else
  fail "3: refused, but not for the shared queue"; echo "$out"
fi

# ---- 4. the router's own frames stay out of a fanout group's rings ----
# Two FromDevice queues of m0 (one fanout group) while the router itself
# sends N0 frames out of m0 and nothing arrives: the kernel gives the
# group none of them (kernel_count, PACKET_STATISTICS, stays 0), unless
# OUTBOUND asks for them. Before the group's own ignore-outgoing flag,
# every frame sent was cloned and copied into a ring, then skipped.
SOCKETS=2
for outbound in false true; do
  CONF="q0 :: FromDevice(m0, QUEUE 0, N_QUEUES 2, SNIFFER false, OUTBOUND $outbound) -> Discard;
q1 :: FromDevice(m0, QUEUE 1, N_QUEUES 2, SNIFFER false, OUTBOUND $outbound) -> Discard;
FastUDPSource($RATE, $N0, 60, 02:00:00:00:01:01, 10.0.1.1, 1024, 02:00:00:00:01:02, 10.0.1.2, 9, INTERVAL 1)
  -> to :: ToDevice(m0);
StaticThreadSched(q0 0, q1 1);"
  s0_before=$(ip netns exec "$S" awk '$1 == "s0:" { print $3 }' /proc/net/dev)
  start_rx 2 "$CONF" q0.kernel_count q1.kernel_count q0.count q1.count to.count ||
    { fail "4: receiver start (OUTBOUND $outbound)"; exit 1; }
  sent_all() { [[ $(num to.count) -ge $N0 ]]; }
  wait_for 20 "the router to send $N0 frames" sent_all || true
  sleep 0.2
  stop_rx
  s0_got=$(( $(ip netns exec "$S" awk '$1 == "s0:" { print $3 }' /proc/net/dev) - s0_before ))
  kc=$(( $(h q0.kernel_count) + $(h q1.kernel_count) ))
  em=$(( $(h q0.count) + $(h q1.count) ))
  echo "      4: OUTBOUND $outbound: sent $(h to.count), s0 received $s0_got; the queues' rings got $kc frames, emitted $em"
  if [[ $s0_got -lt $N0 ]]; then
    fail "4: OUTBOUND $outbound: s0 received $s0_got of the $N0 frames sent"
  elif [[ $outbound == false && $kc -eq 0 && $em -eq 0 ]]; then
    pass "4: OUTBOUND false: none of the $N0 frames the router sent reached its fanout rings"
  elif [[ $outbound == true && $kc -ge $N0 && $em -ge $N0 ]]; then
    pass "4: OUTBOUND true: the fanout rings got ($kc) and emitted ($em) the $N0 frames sent"
  else
    fail "4: OUTBOUND $outbound: the fanout rings got $kc frames and emitted $em ($N0 sent)"
  fi
done

# ---- 5. FANOUT CPU: CPU i's frames to QUEUE i, IPv4 and IPv6 ----
# Two generators on s0, one pinned to CPU 0 (source 10.0.1.2 or
# 2001:db8:1::2) and one to CPU 1 (10.0.2.2, 2001:db8:2::2). Without GRO
# on m0, veth hands each frame to the receive backlog of the sending CPU,
# so the frame reaches the fanout group on that CPU. The receiver lists
# QUEUE 1 first: its sockets still join the group in queue order, so
# queue 0 gets exactly CPU 0's frames and queue 1 exactly CPU 1's (joined
# in the order opened, queue 1 would get CPU 0's). Both queues carry the
# IPv6 flows as they do the IPv4 ones.
if [[ $(nproc) -ge 2 ]]; then
  SOCKETS=2
  for fam in 4 6; do
    if [[ $fam == 4 ]]; then
      cls="Classifier(26/0a000102, 26/0a000202, -)"
      srcs=(10.0.1.2 10.0.2.2) dst=10.9.9.9 gen=FastUDPSource len=60
    else
      cls="Classifier(12/86dd 26/0001, 12/86dd 26/0002, -)"
      srcs=(2001:db8:1::2 2001:db8:2::2) dst=2001:db8:9::9 gen=FastUDPSourceIP6 len=62
    fi
    CONF="q1 :: FromDevice(m0, QUEUE 1, N_QUEUES 2, FANOUT CPU, SNIFFER false) -> c1 :: $cls;
q0 :: FromDevice(m0, QUEUE 0, N_QUEUES 2, FANOUT CPU, SNIFFER false) -> c0 :: $cls;
c0[0] -> q0_c0 :: Counter -> Discard; c0[1] -> q0_c1 :: Counter -> Discard; c0[2] -> Discard;
c1[0] -> q1_c0 :: Counter -> Discard; c1[1] -> q1_c1 :: Counter -> Discard; c1[2] -> Discard;
StaticThreadSched(q0 0, q1 1);"
    start_rx 2 "$CONF" q0_c0.count q0_c1.count q1_c0.count q1_c1.count ||
      { fail "5: receiver start (IPv$fam)"; exit 1; }
    for cpu in 0 1; do
      n=$N0
      [[ $cpu -eq 1 ]] && n=$N1
      ip netns exec "$S" taskset -c "$cpu" "$BIN" --no-pin -h to.count -e "
        $gen($RATE, $n, $len, 02:00:00:00:01:02, ${srcs[$cpu]}, 1024, 02:00:00:00:01:01, $dst, 9, INTERVAL 1, STOP true)
          -> to :: ToDevice(s0);" >"$TMP/tx$cpu.out" 2>"$TMP/tx$cpu.err" &
      eval "TX$cpu=\$!"
    done
    wait "$TX0" "$TX1"
    wait_received q0_c0.count q0_c1.count q1_c0.count q1_c1.count || true
    stop_rx
    a=$(h q0_c0.count); b=$(h q0_c1.count); c=$(h q1_c0.count); d=$(h q1_c1.count)
    echo "      5: IPv$fam FANOUT CPU, QUEUE 1 opened first: queue 0 got $a from CPU 0, $b from CPU 1; queue 1 got $c from CPU 0, $d from CPU 1"
    if [[ $a -eq $N0 && $b -eq 0 && $c -eq 0 && $d -eq $N1 ]]; then
      pass "5: IPv$fam: CPU 0's $N0 frames all on queue 0, CPU 1's $N1 all on queue 1"
    else
      fail "5: IPv$fam: queue 0 got $a + $b, queue 1 got $c + $d (want $N0 + 0, 0 + $N1)"
    fi
  done
else
  echo "      5: skipped (one CPU)"
fi

if [[ $FAILED -eq 0 ]]; then echo "multi-from-device test: all checks passed"; else echo "multi-from-device test: FAILED"; fi
exit $FAILED
