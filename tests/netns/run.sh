#!/usr/bin/env bash
# Real hosts through paraclick: two hosts in their own network namespaces,
# joined by veth pairs to a router namespace where paraclick runs
# conf/iprouter-veth.click, talking with Linux's own tools.
#
#   h1 (10.0.1.2/24) eth0 ==veth== r0 [paraclick] r1 ==veth== eth0 h2 (10.0.2.2/24)
#                                  10.0.1.1      10.0.2.1 (MTU 1400)
#
# Usage (as root):  tests/netns/run.sh PATH/TO/paraclick
#
# Checks, first at -j 1 (one receive queue per interface), then at -j 2
# with conf/iprouter-veth-2q.click (two queues per interface, a fanout
# group each, queue i on thread i), then at -j 2 with
# conf/iprouter-veth-2q-poll.click (the same queues, one MultiFromDevice
# per thread polling queue i of both interfaces):
#   - ping h1 -> h2 succeeds, and the replies' TTL shows the router's
#     decrement (63);
#   - ping -t 1 gets the router's ICMP time exceeded;
#   - a 4 MB HTTP transfer (python3 http.server in h2, curl in h1) arrives
#     with an intact sha256, and so do several small ones (many flows);
#   - a DF ping bigger than the 1400-byte MTU of the h2 side gets
#     "Frag needed" with mtu 1400, and h1's route then carries mtu 1400;
#     without DF the same ping goes through, fragmented by the router;
#   - at -j 2, both receive queues of r0 got packets; with the pollers,
#     each poller got packets from both interfaces;
#   - then at -j 2 with the configuration `paraclick parallelize -j 2`
#     writes from conf/iprouter-veth.click as its device fanout candidate
#     (each FromDevice one per queue of a fanout group, a replica of its
#     path per thread): the same checks, and every queue got packets;
#   - then at -j 4 with --auto (the plan made at start-up: the device
#     fanout into 4 queues per interface): the same checks;
#   - at -j 1 and in the parallelized configurations, 15 UDP flows of
#     numbered packets from h1 arrive at h2 whole, each flow in order;
#   - `paraclick check` accepts the three configurations.
# Prints one line per check; exits 0 if all pass. Namespaces, processes
# and files are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns test" ip ping curl python3 sha256sum

SUF=$$
H1=pc-h1-$SUF
H2=pc-h2-$SUF
R=pc-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-netns.XXXXXX)
ROUTER_PID=
HTTP_PID=
FLOW_LOSS=
FAILED=0


cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  [[ -n $HTTP_PID ]] && kill "$HTTP_PID" 2>/dev/null
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns test: interrupted" >&2; exit 130' INT TERM

in_h1() { ip netns exec "$H1" "$@"; }
in_h2() { ip netns exec "$H2" "$@"; }
in_r() { ip netns exec "$R" "$@"; }

# ---- topology ----
two_hosts "$H1" "$H2" "$R"

# ---- HTTP server in h2 ----
mkdir -p "$TMP/www"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$TMP/www/big"
for i in $(seq 1 16); do head -c $((20000 + i * 997)) /dev/urandom >"$TMP/www/small$i"; done
write_httpd "$TMP/httpd.py"
ip netns exec "$H2" python3 "$TMP/httpd.py" "$TMP/www" 10.0.2.2 8000 >"$TMP/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 1 50); do
  in_h2 curl -sf -o /dev/null --max-time 1 http://10.0.2.2:8000/small1 && break
  sleep 0.1
done

start_router() { # CONF THREADS [OPTION...]
  local conf=$1 threads=$2
  shift 2
  local -a handlers=()
  for h in $HANDLERS; do handlers+=(-h "$h"); done
  # Started directly (not through a shell function) so $! is paraclick.
  [[ $conf == /* ]] || conf=$ROOT/$conf
  # The scheduler's moves and the workers' shares of their cores go to
  # router.err (PARACLICK_SCHED_LOG), with their times since the start:
  # a flow loss prints them.
  ip netns exec "$R" env PARACLICK_SCHED_LOG=1 "$BIN" -j "$threads" --report drops "$@" "${handlers[@]}" "$conf" MTU1=1400 \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  ROUTER_T0=$(date +%s%N)
  # With --auto the configuration first runs for its profile (answering
  # pings too): ready only once the plan is printed.
  if [[ " $* " == *" --auto "* ]]; then
    for _ in $(seq 1 200); do
      grep -q "^// chosen:" "$TMP/router.err" 2>/dev/null && { ROUTER_T0=$(date +%s%N); break; }
      kill -0 "$ROUTER_PID" 2>/dev/null || break
      sleep 0.1
    done
  fi
  # Ready once the router answers a ping to its own address.
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
      echo "router exited early:" >&2; cat "$TMP/router.err" >&2; return 1
    fi
    if in_h1 ping -c 1 -W 0.2 10.0.1.1 >/dev/null 2>&1; then return 0; fi
  done
  echo "router did not answer pings within 10 s" >&2
  cat "$TMP/router.err" >&2
  return 1
}

stop_router() {
  kill -INT "$ROUTER_PID"
  local rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  if [[ $rc -ne 0 ]]; then fail "router exited with status $rc"; cat "$TMP/router.err"; fi
  # After a flow check lost packets: the router's own drops, by element
  # and reason (--report drops, the last lines of its standard error).
  if [[ -n $FLOW_LOSS ]]; then
    echo "      the router's drops report:"
    grep -v -e '^//' -e '^sched ' "$TMP/router.err" | tail -n 20 | sed 's/^/        /'
    FLOW_LOSS=
  fi
}

handler() { # NAME: a value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"
}

checks() { # LABEL
  local label=$1 out
  in_h1 ip route flush cache >/dev/null 2>&1 || true

  # 1. ping, with the TTL decrement visible in the replies.
  if out=$(in_h1 ping -c 3 -i 0.2 -W 2 10.0.2.2 2>&1); then
    if grep -q "ttl=63" <<<"$out" && ! grep -q "ttl=64" <<<"$out"; then
      pass "$label: ping h1 -> h2, replies with ttl=63 (one router hop)"
    else
      fail "$label: ping replies without the TTL decrement"; echo "$out"
    fi
  else
    fail "$label: ping h1 -> h2"; echo "$out"
  fi

  # 2. TTL 1: the router's time exceeded.
  out=$(in_h1 ping -c 1 -t 1 -W 2 10.0.2.2 2>&1 || true)
  if grep -q "From 10.0.1.1 .*Time to live exceeded" <<<"$out"; then
    pass "$label: ping -t 1 gets time exceeded from 10.0.1.1"
  else
    fail "$label: no time exceeded for ping -t 1"; echo "$out"
  fi

  # 3. TCP: one 4 MB transfer and 16 small ones (16 flows), intact.
  if in_h1 curl -sf --max-time 30 -o "$TMP/got-big" http://10.0.2.2:8000/big &&
     [[ $(sha256sum <"$TMP/got-big") == $(sha256sum <"$TMP/www/big") ]]; then
    pass "$label: 4 MB HTTP transfer h2 -> h1, sha256 intact"
  else
    fail "$label: 4 MB HTTP transfer"
  fi
  rm -f "$TMP/got-big"
  local urls=() ok=1
  for i in $(seq 1 16); do urls+=(http://10.0.2.2:8000/small$i -o "$TMP/got-small$i"); done
  if in_h1 curl -sf --max-time 30 "${urls[@]}"; then
    for i in $(seq 1 16); do
      cmp -s "$TMP/got-small$i" "$TMP/www/small$i" || ok=0
    done
  else
    ok=0
  fi
  if [[ $ok -eq 1 ]]; then pass "$label: 16 small transfers (16 flows) intact"; else fail "$label: small transfers"; fi
  rm -f "$TMP"/got-small*

  # 4. Path MTU: DF and too big for the h2 side's 1400 bytes.
  out=$(in_h1 ping -c 1 -M do -s 1450 -W 2 10.0.2.2 2>&1 || true)
  if grep -qi "Frag needed.*mtu = 1400" <<<"$out"; then
    pass "$label: DF ping of 1478 bytes gets 'Frag needed' with mtu 1400"
  else
    fail "$label: no 'Frag needed' for a DF ping over the MTU"; echo "$out"
  fi
  out=$(in_h1 ip route get 10.0.2.2 2>&1)
  if grep -q "mtu 1400" <<<"$out"; then
    pass "$label: h1 learned the path MTU ($(grep -o 'mtu 1400' <<<"$out"))"
  else
    fail "$label: h1's route has no path MTU"; echo "$out"
  fi
  out=$(in_h1 ping -c 1 -M do -s 1450 -W 2 10.0.2.2 2>&1 || true)
  if grep -qi "message too long, mtu=1400" <<<"$out"; then
    pass "$label: the next DF ping stops at h1: 'message too long, mtu=1400'"
  else
    fail "$label: h1 does not use the learned path MTU"; echo "$out"
  fi
  in_h1 ip route flush cache >/dev/null 2>&1 || true
  if out=$(in_h1 ping -c 2 -i 0.2 -M dont -s 1450 -W 2 10.0.2.2 2>&1); then
    pass "$label: the same ping without DF goes through (fragmented by the router)"
  else
    fail "$label: large ping without DF"; echo "$out"
  fi
}

# UDP flows with numbered packets, h1 -> h2 through the router: FLOWS
# flows (source ports 41000..), PER packets each, sent interleaved in
# bursts of 50 rounds (an odd number of flows: a fanout that dealt
# packets in turn would put a flow's successive packets on different
# queues, whose threads reorder them). h2's
# receiver writes "SPORT SEQ" per packet as it got them; flow_order then
# checks that every flow's packets all arrived, each once and in order.
FLOWS=15
PER=300
cat >"$TMP/udp-rx.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# SO_RCVBUFFORCE (root): SO_RCVBUF is capped at net.core.rmem_max (about
# 200 KB, some 500 of these datagrams), which a receiver starved of CPU
# by four busy workers on two cores overflowed.
s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
s.bind(("10.0.2.2", 9000))
s.settimeout(0.2)
# It stops once the sender is done (argv[2] exists) and nothing came for
# a second, or after a minute: not on a pause of its own measure, which
# a sender starved of CPU on a loaded machine could make longer.
done, start = sys.argv[2], time.monotonic()
last = first = None
gap = 0.0
with open(sys.argv[1], "w") as f:
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        if now - start > 60 or (os.path.exists(done) and now - (last or start) > 1.0):
            break
        try:
            d, a = s.recvfrom(2048)
        except socket.timeout:
            continue
        now = time.monotonic()
        if last is not None:
            gap = max(gap, now - last)
        first = first or now
        last = now
        f.write("%d %s\n" % (a[1], d.split(b" ")[0].decode()))
if first is not None:
    print("received for %.3f s, longest pause %.1f ms" % (last - first, gap * 1e3))
PY
cat >"$TMP/udp-tx.py" <<'PY'
import socket, sys, time
flows, per = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(flows):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("10.0.1.2", 41000 + i))
    socks.append(s)
start = time.monotonic()
gap, last, sent = 0.0, start, 0
for seq in range(per):
    for s in socks:
        s.sendto(b"%d " % seq + b"x" * 64, ("10.0.2.2", 9000))
        sent += 1
    if seq % 50 == 49:
        time.sleep(0.01)
    now = time.monotonic()
    gap, last = max(gap, now - last), now
print("sent %d in %.3f s, longest round %.1f ms" % (sent, last - start, gap * 1e3))
PY
# Where a lost datagram may have gone, outside the router: h2's UDP
# receive-buffer errors, the kernel's per-CPU backlog drops (veth hands
# packets to the peer through it), and the four veths' drop counts.
kernel_losses() {
  local snmp backlog=0 a b rest
  snmp=$(in_h2 awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 } else print $c }' /proc/net/snmp)
  while read -r a b rest; do backlog=$((backlog + 0x$b)); done </proc/net/softnet_stat
  # Datagrams a host's kernel dropped while it resolved a neighbour
  # (all namespaces' sum), and h1's own send-side discards.
  local unres=0 h1out col=-1 i
  local -a f
  {
    read -r -a f
    for i in "${!f[@]}"; do [[ ${f[$i]} == unresolved_discards ]] && col=$i; done
    while read -r -a f; do ((col >= 0)) && unres=$((unres + 0x${f[$col]})); done
  } </proc/net/stat/arp_cache
  h1out=$(in_h1 nstat -az IpOutDiscards UdpSndbufErrors 2>/dev/null | awk '/^(Ip|Udp)/ { printf "%s %s ", $1, $2 }')
  echo "ARP unresolved discards $unres, h1 ${h1out:-(no nstat)}," \
    "h2 UDP receive-buffer errors $snmp, backlog drops $backlog," \
    "veth drops (rx/tx) h1 $(link_drops "$H1" eth0), r0 $(link_drops "$R" r0), r1 $(link_drops "$R" r1), h2 $(link_drops "$H2" eth0)"
}
link_drops() { # NETNS DEV
  ip -n "$1" -s link show "$2" | awk '/RX:/ { getline; r = $4 } /TX:/ { getline; t = $4 } END { printf "%s/%s", r, t }'
}
# The numbers never seen, as ranges of consecutive numbers missing from
# the same count of flows ("250-299 (15)": one burst lost in every flow).
missing_numbers() { # FILE
  awk -v flows="$FLOWS" -v per="$PER" '
    { seen[$1, $2] = 1; f[$1] = 1 }
    END { for (p = 41000; p < 41000 + flows; p++) f[p] = 1
          out = ""; cur = 0
          for (q = 0; q <= per; q++) {
            m = 0
            if (q < per) for (p in f) if (!((p, q) in seen)) m++
            if (m != cur || q == per) {
              if (cur > 0) out = out sprintf("%s%d-%d (%d)", out == "" ? "" : ", ", from, q - 1, cur)
              cur = m; from = q } }
          print (out == "" ? "none" : out) }' "$1"
}
# Each router worker's time on its CPU and waiting for it so far, in ns
# (/proc/PID/task/TID/schedstat): "paraclick-N RUN WAIT" per line.
worker_times() {
  local t
  for t in /proc/"$ROUTER_PID"/task/*; do
    # An if, not `&&`: a last thread that is no worker must not make
    # the loop (and, under errexit, the script) fail.
    if [[ $(cat "$t/comm" 2>/dev/null) =~ ^paraclick-[0-9]+$ ]]; then
      echo "$(cat "$t/comm") $(cut -d' ' -f1,2 "$t/schedstat" 2>/dev/null)"
    fi
  done | sort
}
flow_order() { # LABEL
  local label=$1 rx losses0 times0
  losses0=$(kernel_losses)
  times0=$(worker_times)
  rm -f "$TMP/udp.done"
  ip netns exec "$H2" python3 "$TMP/udp-rx.py" "$TMP/udp.got" "$TMP/udp.done" >"$TMP/udp-rx.out" 2>&1 &
  rx=$!
  for _ in $(seq 1 50); do grep -q ready "$TMP/udp-rx.out" 2>/dev/null && break; sleep 0.1; done
  local t0 t1
  t0=$(date +%s%N)
  in_h1 python3 "$TMP/udp-tx.py" "$FLOWS" "$PER" >"$TMP/udp-tx.out"
  t1=$(date +%s%N)
  touch "$TMP/udp.done"
  wait "$rx" || true
  local verdict
  # A packet whose number is below the flow's highest so far came late or
  # twice; the numbers never seen were lost (at the router, or at h2's
  # socket: its receive-buffer errors are printed on a failure).
  verdict=$(awk -v flows="$FLOWS" -v per="$PER" '
    { if (($1, $2) in seen) dup++
      else if ($1 in top && $2 < top[$1]) late++
      seen[$1, $2] = 1
      if (!($1 in top) || $2 > top[$1]) top[$1] = $2
      got[$1]++ }
    END { n = 0; short = 0; lost = 0
          for (f in got) { n++; if (got[f] != per) short++
                           for (q = 0; q < per; q++) if (!((f, q) in seen)) lost++ }
          printf "%d flows, %d short (%d packets lost), %d out of order, %d repeated", n, short, lost, late + 0, dup + 0
          exit !(n == flows && short == 0 && late + 0 == 0 && dup + 0 == 0) }' "$TMP/udp.got") &&
    pass "$label: $FLOWS UDP flows x $PER packets arrived whole and each in order ($verdict)" ||
    { fail "$label: UDP flows: $verdict"
      FLOW_LOSS=1
      echo "      before the flows: $losses0"
      echo "      after the flows:  $(kernel_losses)"
      echo "      h1's neighbours: $(in_h1 ip neigh show | tr '\n' ';')"
      echo "      $(cat "$TMP/udp-tx.out"); $(grep -v ready "$TMP/udp-rx.out")"
      echo "      numbers lost (flows missing each): $(missing_numbers "$TMP/udp.got")"
      # A worker that waited for its CPU most of the time the flows took
      # was starved by the machine's other work, not the router's.
      echo "      while the flows went, each worker ran / waited for its CPU (ms):" \
        "$(join <(echo "$times0") <(worker_times) | awk '{ printf "%s %.1f / %.1f; ", $1, ($4 - $2) / 1e6, ($5 - $3) / 1e6 }')"
      echo "      sent from $(((t0 - ROUTER_T0) / 1000000)) to $(((t1 - ROUTER_T0) / 1000000)) ms after the router started; its scheduler's log:"
      grep '^sched ' "$TMP/router.err" | tail -40 | sed 's/^/        /'; }
  rm -f "$TMP/udp.got"
}

# ---- -j 1, one queue per interface ----
HANDLERS="in0.count in0.drops in1.count in1.drops to0.count to0.drops to1.count to1.drops fr1.fragments fr1.drops"
start_router conf/iprouter-veth.click 1 || { fail "-j 1: router start"; exit 1; }
checks "-j 1"
flow_order "-j 1"
stop_router
echo "      -j 1 counts: r0 in $(handler in0.count) (drops $(handler in0.drops)), r1 in $(handler in1.count) (drops $(handler in1.drops)), r0 out $(handler to0.count), r1 out $(handler to1.count), fragments $(handler fr1.fragments)"
if [[ $(handler fr1.fragments) -gt 0 ]]; then
  pass "-j 1: the router fragmented for the 1400-byte MTU"
else
  fail "-j 1: no fragments counted"
fi

# ---- -j 2, two queues per interface ----
HANDLERS="in0q0.count in0q1.count in0q0.drops in0q1.drops in1q0.count in1q1.count to0.count to1.count"
start_router conf/iprouter-veth-2q.click 2 || { fail "-j 2: router start"; exit 1; }
checks "-j 2"
# FANOUT CPU gives a packet to the queue of the CPU that received it
# (the CPU's number modulo the queues), and a veth receives on its
# sender's CPU: UDP datagrams to the router (which discards them) from h1
# on each online CPU in turn (those a cpuset refuses left out) reach each
# queue. (Where the test's other senders ran is up to the kernel's
# scheduler: on a loaded machine all of them can run on one CPU. Pings
# would not do: ICMP goes to the priority ring, read with queue 0.)
in_h1 python3 -c 'import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for cpu in range(os.cpu_count()):
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        continue
    for _ in range(20): s.sendto(b"x", ("10.0.1.1", 9))' ||
  fail "-j 2: UDP to the router from h1 on each CPU"
stop_router
q0=$(handler in0q0.count); q1=$(handler in0q1.count)
echo "      -j 2 counts: r0 queue 0 $q0, r0 queue 1 $q1, r1 queues $(handler in1q0.count) $(handler in1q1.count), r0 out $(handler to0.count), r1 out $(handler to1.count)"
if [[ ${q0:-0} -gt 0 && ${q1:-0} -gt 0 ]]; then
  pass "-j 2: both receive queues of r0 got packets (fanout by CPU)"
else
  fail "-j 2: a receive queue of r0 got nothing ($q0, $q1), though h1 sent from each CPU"
fi

# ---- -j 2, one MultiFromDevice poller per thread (queue i of both) ----
HANDLERS="poll0.counts poll1.counts poll0.drops poll1.drops to0.count to1.count"
start_router conf/iprouter-veth-2q-poll.click 2 || { fail "-j 2 poll: router start"; exit 1; }
checks "-j 2 poll"
stop_router
# counts: one line per output, "DEVNAME QUEUE COUNT" (r0 first, then r1).
pc() { awk -v h="$1.counts:" -v n="$2" '$0 == h { for (i = 0; i < n; i++) getline; print $3; exit }' "$TMP/router.out"; }
p00=$(pc poll0 1); p01=$(pc poll1 1); p10=$(pc poll0 2); p11=$(pc poll1 2)
echo "      -j 2 poll counts: r0 queue 0 $p00, queue 1 $p01; r1 queue 0 $p10, queue 1 $p11; drops $(handler poll0.drops) $(handler poll1.drops); r0 out $(handler to0.count), r1 out $(handler to1.count)"
if [[ ${p00:-0} -gt 0 && ${p01:-0} -gt 0 && ${p10:-0} -gt 0 && ${p11:-0} -gt 0 ]]; then
  pass "-j 2 poll: both pollers got packets from both interfaces"
else
  fail "-j 2 poll: a poller's queue got nothing ($p00 $p01 $p10 $p11)"
fi

# ---- -j 2, as `paraclick parallelize` splits iprouter-veth.click by the
# devices' own receive queues: each FromDevice becomes one per queue of a
# fanout group, with a replica of its path, one per thread ----
PLAN=$TMP/parallelized.click
K=$(in_r "$BIN" parallelize -j 2 "$ROOT/conf/iprouter-veth.click" MTU1=1400 2>/dev/null |
    awk '/device fanout of in0, in1 into 2/ { sub(/^\/\/ *\*?/, ""); print $1; exit }')
if [[ -n $K ]] && in_r "$BIN" parallelize -j 2 "$ROOT/conf/iprouter-veth.click" MTU1=1400 --candidate "$K" >"$PLAN" 2>"$TMP/plan.err" &&
   grep -Eq 'in0_r1 :: FromDevice\((r0|\$DEV0), .*QUEUE 1, N_QUEUES 2, FANOUT HASH\)' "$PLAN"; then
  pass "parallelize -j 2: candidate $K, the device fanout of in0 and in1, written"
  HANDLERS="in0.count in0_r1.count in1.count in1_r1.count in0.kernel_drops to0.count to1.count to1.drops to1.blocked out1.drops out1.length"
  start_router "$PLAN" 2 || { fail "-j 2 parallelized: router start"; exit 1; }
  checks "-j 2 parallelized"
  flow_order "-j 2 parallelized"
  stop_router
  # in0.count sums both queues (REPLICAS in0_r1); queue 0's own is the rest.
  all0=$(handler in0.count); q1=$(handler in0_r1.count); all1=$(handler in1.count); r1=$(handler in1_r1.count)
  q0=$(( ${all0:-0} - ${q1:-0} )); r0=$(( ${all1:-0} - ${r1:-0} ))
  echo "      -j 2 parallelized counts: r0 in $all0 (queue 0 $q0, queue 1 $q1); r1 in $all1 (queue 0 $r0, queue 1 $r1); r0 out $(handler to0.count), r1 out $(handler to1.count); drops: in0 kernel $(handler in0.kernel_drops), out1 $(handler out1.drops), to1 $(handler to1.drops); to1's sends refused for now $(handler to1.blocked); out1 holds $(handler out1.length)"
  if [[ ${q0:-0} -gt 0 && ${q1:-0} -gt 0 && ${r0:-0} -gt 0 && ${r1:-0} -gt 0 ]]; then
    pass "-j 2 parallelized: every receive queue of both devices got flows"
  else
    fail "-j 2 parallelized: a receive queue got nothing ($q0 $q1 $r0 $r1)"
  fi
else
  fail "parallelize -j 2 conf/iprouter-veth.click: no device fanout of in0 and in1 (candidate '$K')"
  cat "$TMP/plan.err" 2>/dev/null
fi

# ---- -j 4 --auto: the same configuration planned at start-up; at four
# threads on two devices the device fanout is the plan ----
HANDLERS="in0.count in0_r1.count in0_r2.count in0_r3.count in0.kernel_drops in0.drops to0.count to1.count to1.drops to1.blocked out1.drops out1.length"
start_router conf/iprouter-veth.click 4 --auto || { fail "-j 4 --auto: router start"; exit 1; }
chosen=$(grep -m1 '^// \*' "$TMP/router.err" || true)
if grep -q "device fanout of in0, in1 into 4" <<<"$chosen"; then
  pass "-j 4 --auto: the plan printed at start-up is the device fanout of in0 and in1 into 4"
else
  fail "-j 4 --auto: chosen plan: '$chosen'"; cat "$TMP/router.err"
fi
checks "-j 4 --auto"
flow_order "-j 4 --auto"
stop_router
busy=0
others=0
for h in in0_r1.count in0_r2.count in0_r3.count; do
  [[ $(handler "$h") -gt 0 ]] && busy=$((busy + 1))
  others=$((others + $(handler "$h")))
done
# in0.count sums the four queues (REPLICAS); queue 0's own is the rest.
own=$(( $(handler in0.count) - others ))
[[ $own -gt 0 ]] && busy=$((busy + 1))
echo "      -j 4 --auto counts: r0 in $(handler in0.count): queues $own $(handler in0_r1.count) $(handler in0_r2.count) $(handler in0_r3.count); r0 out $(handler to0.count), r1 out $(handler to1.count); drops: in0 kernel $(handler in0.kernel_drops), in0 $(handler in0.drops), out1 $(handler out1.drops), to1 $(handler to1.drops); to1's sends refused for now $(handler to1.blocked); out1 holds $(handler out1.length)"
if [[ $busy -ge 2 ]]; then
  pass "-j 4 --auto: $busy of r0's 4 receive queues got flows"
else
  fail "-j 4 --auto: only $busy of r0's receive queues got flows"
fi

# ---- paraclick check of the real-device configurations (they open the
# devices, so they are checked here, in the router's namespace) ----
for conf in conf/iprouter-veth.click conf/iprouter-veth-2q.click conf/iprouter-veth-2q-poll.click; do
  if out=$(in_r "$BIN" check "$ROOT/$conf" 2>&1) && grep -q ": ok (" <<<"$out"; then
    pass "paraclick check $conf: $(grep -o 'ok (.*)' <<<"$out")"
  else
    fail "paraclick check $conf"; echo "$out"
  fi
done

if [[ $FAILED -eq 0 ]]; then echo "netns test: all checks passed"; else echo "netns test: FAILED"; fi
exit $FAILED
