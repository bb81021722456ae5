#!/usr/bin/env bash
# CPU that follows the load on the device paths: an idle router's workers
# wait in poll(2) on their devices' sockets instead of polling, a packet
# arriving wakes them, and a trickle of traffic costs a trickle of CPU.
#
#   h1 (10.0.1.2) eth0 ==veth== r0 [R] r1 ==veth== eth0 h2 (10.0.2.2)
#
# Usage (as root):  tests/netns/idle.sh PATH/TO/paraclick
# Namespaces are named PREFIX-idle-*-PID, PREFIX from
# PARACLICK_NETNS_PREFIX (default pc).
#
# For conf/iprouter-veth.click over AF_PACKET and with METHOD=XDP
# (AF_XDP), -j 1, then for conf/iprouter-veth-2q.click at -j 2 (two
# queues per interface, queue i of both read by worker i) over both:
#   1. Idle for 3 s (nothing sent), the router uses under 5% of a core
#      (user + system time from /proc/PID/stat).
#   2. While idle, its worker threads are all blocked in ppoll(2) (the
#      syscall /proc/PID/task/TID/syscall shows, sampled 20 times):
#      waiting on the sockets, not napping on a timer or spinning. At -j 2
#      each worker waits on its own queues' sockets.
#   3. h1 pings h2 through it: 5 of 5 answered.
#   4. A trickle (1000 UDP packets a second for 3 s, h1 to h2, about 1%
#      of the loss-free rate on a quiet machine) arrives whole, and the
#      router uses under 10% of a core meanwhile (3-4% measured on a
#      loaded machine; 12-13% with --busy-poll, which polls, yields and
#      naps on a timer as the workers did before).
# And with --busy-poll (AF_PACKET): the worker is never seen in ppoll(2).
# Then rated sources and held-back pull paths, without devices (checks 5
# to 8 below).
# Checks 2 and 4 fail with --busy-poll (the old behaviour) throughout.
# Prints one line per check; exits 0 if all pass.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FAILED=0
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "idle test" ip ping

P=${PARACLICK_NETNS_PREFIX:-pc}-idle
SUF=$$
H1=$P-h1-$SUF
H2=$P-h2-$SUF
R=$P-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-idle.XXXXXX)
ROUTER_PID=
HZ=$(getconf CLK_TCK)
case $(uname -m) in
  x86_64) PPOLL=271 ;;
  aarch64) PPOLL=73 ;;
  *) echo "idle test: no ppoll syscall number known for $(uname -m)" >&2; exit 2 ;;
esac

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.3 && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "idle test: interrupted" >&2; exit 130' INT TERM

add_namespaces_without_ipv6 "$H1" "$H2" "$R"
for ns in "$H1" "$H2" "$R"; do ip -n "$ns" link set lo up; done
# links QUEUES: (re)makes both veth pairs with QUEUES queues each way
# (with METHOD XDP every receive queue of a device must be read).
links() {
  local q=$1
  ip -n "$R" link del r0 2>/dev/null || true
  ip -n "$R" link del r1 2>/dev/null || true
  ip -n "$R" link add r0 numtxqueues "$q" numrxqueues "$q" type veth peer name eth0 netns "$H1" numtxqueues "$q" numrxqueues "$q"
  ip -n "$R" link add r1 numtxqueues "$q" numrxqueues "$q" type veth peer name eth0 netns "$H2" numtxqueues "$q" numrxqueues "$q"
  ip -n "$R" link set r0 address 02:00:00:00:01:01
  ip -n "$R" link set r1 address 02:00:00:00:02:01
  ip -n "$H1" link set eth0 address 02:00:00:00:01:02
  for l in r0 r1; do ip -n "$R" link set "$l" up; done
  ip -n "$H1" link set eth0 up
  ip -n "$H2" link set eth0 up
  ip -n "$H1" addr add 10.0.1.2/24 dev eth0
  ip -n "$H2" addr add 10.0.2.2/24 dev eth0
  ip -n "$H1" route add default via 10.0.1.1
  ip -n "$H2" route add default via 10.0.2.1
}
links 1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=0

# CPU ticks (user + system) the router has used so far.
ticks() { awk '{ print $14 + $15 }' "/proc/$ROUTER_PID/stat"; }
# Packets h2's eth0 has received.
rx_h2() { ip netns exec "$H2" awk '$1 == "eth0:" { print $3 }' /proc/net/dev; }

start_router() { # ARGS...
  ip netns exec "$R" "$BIN" "$@" >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 60); do
    ip netns exec "$H1" ping -c 1 -W 0.3 10.0.1.1 >/dev/null 2>&1 && return 0
    kill -0 "$ROUTER_PID" 2>/dev/null || break
  done
  echo "router did not start:" >&2
  cat "$TMP/router.err" >&2
  kill -KILL "$ROUTER_PID" 2>/dev/null
  ROUTER_PID=
  return 1
}

stop_router() {
  kill -INT "$ROUTER_PID"
  wait "$ROUTER_PID" || true
  ROUTER_PID=
}

# How many of 20 samples (10 ms apart) found every worker thread
# (paraclick-N) blocked in ppoll(2).
in_ppoll() {
  local n=0 k t all
  for k in $(seq 1 20); do
    all=1
    for t in /proc/"$ROUTER_PID"/task/*; do
      [[ $(cat "$t/comm" 2>/dev/null) =~ ^paraclick-[0-9]+$ ]] || continue
      [[ $(cut -d' ' -f1 "$t/syscall" 2>/dev/null) == "$PPOLL" ]] || all=0
    done
    n=$((n + all))
    sleep 0.01
  done
  echo "$n"
}

# The descriptors each worker's ppoll(2) waits on (its third argument
# in /proc/PID/task/TID/syscall), one number per worker; "-" for one not
# in ppoll.
ppoll_fds() {
  local t out=()
  for t in /proc/"$ROUTER_PID"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) =~ ^paraclick-[0-9]+$ ]] || continue
    read -r nr _ nfds _ <"$t/syscall" || true
    if [[ $nr == "$PPOLL" ]]; then out+=($((nfds))); else out+=(-); fi
  done
  echo "${out[*]}"
}

check_path() { # LABEL THREADS CONF DEFINES...
  local label=$1 threads=$2 conf=$3
  shift 3
  start_router -j "$threads" "$ROOT/conf/$conf" "$@" || { fail "$label: router start"; return; }
  # Neighbours resolved both ways before measuring.
  ip netns exec "$H1" ping -c 2 -i 0.2 -W 1 10.0.2.2 >/dev/null 2>&1 || true
  sleep 0.5
  local t0 t1 pct
  t0=$(ticks)
  sleep 3
  t1=$(ticks)
  pct=$(awk -v t=$((t1 - t0)) -v hz="$HZ" 'BEGIN { printf "%.1f", 100 * t / hz / 3 }')
  if awk -v p="$pct" 'BEGIN { exit !(p < 5) }'; then
    pass "$label: idle for 3 s, the router used $pct% of a core (< 5%)"
  else
    fail "$label: idle for 3 s, the router used $pct% of a core"
  fi
  local seen
  seen=$(in_ppoll)
  if [[ $seen -ge 15 ]]; then
    pass "$label: idle, every worker waits in ppoll(2) on its sockets ($seen of 20 samples)"
  else
    fail "$label: idle, every worker was in ppoll(2) in only $seen of 20 samples"
  fi
  if [[ $threads -gt 1 ]]; then
    # Each worker waits on the sockets of both interfaces' queue it reads
    # and on its own eventfd: at least 3 descriptors, in every worker.
    local fds ok=0 k
    for k in $(seq 1 20); do
      fds=$(ppoll_fds)
      if [[ $(wc -w <<<"$fds") -eq $threads && -z $(tr ' ' '\n' <<<"$fds" | awk '$1 == "-" || $1 < 3') ]]; then
        ok=1
        break
      fi
      sleep 0.05
    done
    if [[ $ok -eq 1 ]]; then
      pass "$label: each of the $threads workers waits on its own queues' sockets (descriptors per ppoll: $fds)"
    else
      fail "$label: the workers' ppoll(2) descriptors: $fds"
    fi
  fi
  local got
  got=$(ip netns exec "$H1" ping -c 5 -i 0.2 -W 2 10.0.2.2 2>/dev/null | awk '/received/ { print $4 }')
  if [[ ${got:-0} -eq 5 ]]; then
    pass "$label: h1 pings h2 through the idle router (5 of 5)"
  else
    fail "$label: h1 pinged h2 through the router: ${got:-0} of 5 answered"
  fi
  local n=3000 before after sent
  before=$(rx_h2)
  t0=$(ticks)
  sent=$(ip netns exec "$H1" "$BIN" --no-pin -h src.count -e "src :: FastUDPSource(1000, $n, 60,
      02:00:00:00:01:02, 10.0.1.2, 1024, 02:00:00:00:01:01, 10.0.2.2, 9, STOP true)
      -> ToDevice(eth0);" 2>/dev/null | tr -dc '0-9')
  sleep 0.3
  t1=$(ticks)
  after=$(rx_h2)
  pct=$(awk -v t=$((t1 - t0)) -v hz="$HZ" 'BEGIN { printf "%.1f", 100 * t / hz / 3.3 }')
  if [[ ${sent:-0} -eq $n && $((after - before)) -ge $n ]]; then
    pass "$label: a trickle of 1000 packets/s arrived whole ($n sent, $((after - before)) received)"
  else
    fail "$label: a trickle of 1000 packets/s: ${sent:-0} of $n sent, $((after - before)) received"
  fi
  if awk -v p="$pct" 'BEGIN { exit !(p < 10) }'; then
    pass "$label: the trickle cost the router $pct% of a core (< 10%)"
  else
    fail "$label: the trickle cost the router $pct% of a core"
  fi
  stop_router
}

check_path "AF_PACKET" 1 iprouter-veth.click
check_path "AF_XDP" 1 iprouter-veth.click METHOD=XDP PRIORITY=false
links 2
check_path "AF_PACKET -j 2" 2 iprouter-veth-2q.click
check_path "AF_XDP -j 2" 2 iprouter-veth-2q.click METHOD=XDP PRIORITY=false
links 1

start_router --busy-poll "$ROOT/conf/iprouter-veth.click" || fail "--busy-poll: router start"
if [[ -n $ROUTER_PID ]]; then
  sleep 0.5
  seen=$(in_ppoll)
  if [[ $seen -eq 0 ]]; then
    pass "--busy-poll: the worker never waits in ppoll(2) (0 of 20 samples)"
  else
    fail "--busy-poll: the worker was in ppoll(2) in $seen of 20 samples"
  fi
  stop_router
fi

# Rated sources (no devices): RatedSource -> Queue -> Unqueue -> Discard,
# -j 1, for 3 s each.
#   5. Inactive (ACTIVE false), the worker sleeps until a handler write:
#      under 100 voluntary context switches in 3 s (about one per 100 ms
#      wait; napping 1 ms at a time, as before, it made thousands) and
#      under 1% of a core.
#   6. At RATE 200000 (a packet every 5 us), the worker naps between
#      bursts: over 1000 voluntary context switches in 3 s (about one per
#      100 us; polling, it made none) and under 60% of a core (polling
#      took a whole core on a quiet machine), and the packets go out at
#      the rate (in its 4 s run at least 80% of 800,000, and no more than
#      the rate gives in 4 s plus 10 ms, the time a Script's stop takes to
#      end the run: 802,000).
# CPU and context switches are the worker threads' (paraclick-N), from
# /proc/PID/task/TID/schedstat (ns on a CPU) and status.
worker_stats() { # PID: "NS_ON_CPU VOLUNTARY_SWITCHES" of its worker threads
  local t ns=0 sw=0 a b
  for t in /proc/"$1"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) =~ ^paraclick-[0-9]+$ ]] || continue
    read -r a _ <"$t/schedstat" 2>/dev/null || continue
    b=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status" 2>/dev/null) || continue
    ns=$((ns + a)) sw=$((sw + b))
  done
  echo "$ns $sw"
}

check_conf() { # CONF: "PERCENT SWITCHES COUNT" over 3 s of a 4 s run
  local pid s0 s1 count pct sw
  "$BIN" -e "$1; Script(wait 4s, stop)" -h c.count >"$TMP/conf.out" 2>"$TMP/conf.err" &
  pid=$!
  sleep 0.5
  s0=$(worker_stats "$pid")
  sleep 3
  s1=$(worker_stats "$pid")
  wait "$pid" || true
  count=$(tail -n 1 "$TMP/conf.out")
  read -r pct sw < <(awk -v a="$s0" -v b="$s1" 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "%.1f %d\n", (y[1] - x[1]) / 3e7, y[2] - x[2] }')
  echo "$pct $sw ${count:-0}"
}

check_rated() { # LABEL RATE ACTIVE: as check_conf
  check_conf "src :: RatedSource(LENGTH 64, RATE $2, ACTIVE $3) -> q :: Queue(1000) -> Unqueue
      -> c :: Counter -> Discard"
}

read -r pct sw count < <(check_rated inactive 1000 false)
if [[ $sw -lt 100 ]] && awk -v p="$pct" 'BEGIN { exit !(p < 1) }'; then
  pass "RatedSource ACTIVE false: the worker sleeps ($sw context switches in 3 s, $pct% of a core)"
else
  fail "RatedSource ACTIVE false: the worker made $sw context switches in 3 s and used $pct% of a core"
fi
read -r pct sw count < <(check_rated fast 200000 true)
if [[ $sw -ge 1000 && ${count:-0} -ge 640000 && ${count:-0} -le 802000 ]] &&
  awk -v p="$pct" 'BEGIN { exit !(p < 60) }'; then
  pass "RatedSource RATE 200000: naps between bursts ($sw in 3 s), $pct% of a core, $count packets in 4 s"
else
  fail "RatedSource RATE 200000: $pct% of a core, $count packets in 4 s ($sw context switches)"
fi

# Pull paths held back (no devices), -j 1, 3 s measured as above:
#   7. A full queue behind an inactive Unqueue, and a trace reader with
#      ACTIVE false: the worker sleeps until a handler write (under 100
#      voluntary context switches in 3 s and under 1% of a core; both
#      polled, a whole core).
#   8. A full queue pulled through Shaper(1000): the Unqueue's worker
#      sleeps until each release, over 1000 voluntary context switches in
#      3 s (about one a release; polling, it made none) and under 10% of a
#      core (it polled a whole core on a quiet machine), and the packets
#      go out at the rate (in the 4 s run at least 2,000: a wake-up late
#      on a loaded machine loses what overflows the 2 ms bucket; at most the
#      rate's 4,000 plus the 2-packet bucket and the stop's 10 ms).
# The old binary fails both (7: 2,935 context switches in 3 s; 8: none).

read -r pct sw count < <(check_conf "InfiniteSource(LIMIT 500, BURST 32) -> q :: Queue(1000)
    -> u :: Unqueue(ACTIVE false) -> c :: Counter -> Discard;
    FromIPSummaryDump(ACTIVE false, DATA \"!data ip_dst
1.0.0.1\") -> Discard")
if [[ $sw -lt 100 ]] && awk -v p="$pct" 'BEGIN { exit !(p < 1) }'; then
  pass "Unqueue and FromIPSummaryDump ACTIVE false: the worker sleeps ($sw context switches in 3 s, $pct% of a core)"
else
  fail "Unqueue and FromIPSummaryDump ACTIVE false: $sw context switches in 3 s, $pct% of a core"
fi
read -r pct sw count < <(check_conf "InfiniteSource(LIMIT 6000, BURST 32) -> q :: Queue(10000)
    -> Shaper(1000) -> Unqueue -> c :: Counter -> Discard")
if [[ $sw -ge 1000 && ${count:-0} -ge 2000 && ${count:-0} -le 4012 ]] &&
  awk -v p="$pct" 'BEGIN { exit !(p < 10) }'; then
  pass "Unqueue behind Shaper(1000): sleeps between releases ($sw in 3 s), $pct% of a core, $count packets in 4 s"
else
  fail "Unqueue behind Shaper(1000): $pct% of a core, $count packets in 4 s ($sw context switches)"
fi

# Held-back paths that polled while their input was empty, -j 1, 3 s measured as above:
#   9. DelayUnqueue and LinkUnqueue with nothing to delay (their input
#      empty after a few packets): the worker sleeps (under 100 voluntary
#      context switches in 3 s and under 1% of a core; each polled).
#  10. A rated source at 1,000,000 packets a second (about 1% of its
#      loss-free rate in a release build) sends in bursts of a
#      millisecond: under 15% of a core (19% before, on a quiet machine,
#      a whole core at 10x the rate), and the 4 s run sends its 4,000,000
#      packets to within a few bursts (a little more than the rate's
#      packets can be lost only to a stalled thread).
read -r pct sw count < <(check_conf "InfiniteSource(LIMIT 5, STOP false) -> Queue
    -> DelayUnqueue(0.01) -> c :: Counter -> Discard;
    InfiniteSource(LIMIT 5, STOP false) -> Queue -> LinkUnqueue(10ms, 1Mbps) -> Discard")
if [[ $sw -lt 100 && ${count:-0} -eq 5 ]] && awk -v p="$pct" 'BEGIN { exit !(p < 1) }'; then
  pass "idle DelayUnqueue and LinkUnqueue: the worker sleeps ($sw context switches in 3 s, $pct% of a core)"
else
  fail "idle DelayUnqueue and LinkUnqueue: $sw context switches in 3 s, $pct% of a core, $count delayed packets"
fi
read -r pct sw count < <(check_rated onepercent 1000000 true)
if [[ ${count:-0} -ge 3900000 && ${count:-0} -le 4002000 ]] &&
  awk -v p="$pct" 'BEGIN { exit !(p < 15) }'; then
  pass "RatedSource RATE 1000000: bursts, $pct% of a core, $count packets in 4 s"
else
  fail "RatedSource RATE 1000000: $pct% of a core, $count packets in 4 s ($sw context switches)"
fi

if [[ $FAILED -eq 0 ]]; then
  echo "idle test: all checks passed"
else
  echo "idle test: FAILED"
  exit 1
fi
