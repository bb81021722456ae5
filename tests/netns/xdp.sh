#!/usr/bin/env bash
# FromDevice/ToDevice METHOD XDP (AF_XDP sockets) on veth pairs: the
# example routers forward IPv4 and IPv6 UDP through them at -j 1 and -j 2,
# and the errors and the clean-up after a crash are as documented.
#
#   h1 (10.0.1.2, 2001:db8:1::2) eth0 ==veth== r0 [R] r1 ==veth== eth0 h2
#                                         (10.0.2.2, 2001:db8:2::2)
#
# The veth pairs have two queues each way. R holds no addresses and does
# not forward: only paraclick handles r0 and r1.
#
# Usage (as root):  tests/netns/xdp.sh PATH/TO/paraclick
#
# Checks:
#   1. For each of conf/iprouter-veth.click (-j 1),
#      conf/iprouter-veth-2q.click (-j 2), conf/iprouter6-veth.click (-j 1)
#      and conf/iprouter6-veth-2q.click (-j 2), run with METHOD=XDP: h1
#      pings h2 through the router, then a paraclick generator on h1 sends
#      N UDP datagrams (one new flow each) to port 9 of h2, and h2's kernel
#      counts exactly N more datagrams to a closed port (Udp NoPorts,
#      Udp6NoPorts). The readers' mode handler says `XDP native` (veth
#      has native XDP); at -j 2 both receive queues of r0 read some. The
#      same at -j 2 for conf/iprouter-veth-2q-poll.click (MultiFromDevice
#      pollers, each reading its queue of both interfaces). The router's
#      sockets share one UMEM (XDP_SHARED_UMEM): the ToDevice to h2 says
#      so (umem handler) and sent every datagram without a copy
#      (sent_direct), frames received on r0 going out of r1 as they are.
#      At -j 2 the ToDevice to h2, pushed to from both threads, sends on
#      both queues of r1 (tx_queues: each thread on its own).
#   2. A router killed with SIGKILL leaves its XDP program on r0; the next
#      one removes it, saying so, and starts.
#      After each run every socket's 8192 receive frames are back
#      (umem_free): no frame leaked.
#   3. Errors: another XDP program on r0; N_QUEUES 1 on a two-queue
#      device; a device that does not exist; no permission (an
#      unprivileged user); ZEROCOPY true (veth has no zero-copy mode) on
#      a socket that would join a UMEM bound in copy mode. Each is
#      refused at startup with its message.
#   4. Frames lent to packets: the packets of r0 queued to a second
#      thread and sent to h2 from there, and a clone of each (Tee): h2
#      receives every datagram twice, and every frame comes back. With
#      the UMEM shared, the originals go out of r1 without a copy and
#      come back to r0's socket from r1's completion ring; with
#      SHARE_UMEM false every one is copied, as before.
#   5. Frame shortage: packets held in a Queue nobody pulls, a 64-buffer
#      pool: 6144 frames lent, 2048 kept for the kernel, the rest copied
#      while buffers last, then dropped as `UMEM frame shortage`; the
#      kernel drops none (the fill ring never ran dry).
#   6. PASS: with r0 holding the kernel address 10.0.1.100, h1 cannot
#      ping it through a router without PASS (the router takes every
#      frame), and can with PASS "arp and dst host 10.0.1.100 or dst
#      host 10.0.1.100" (the kernel answers ARP and ping), while the
#      router still forwards all N datagrams to h2; no program is left
#      after the router, one left by a killed router is removed, and a
#      bad PASS is refused.
#   7. Transmit wake-ups in batches: ToDevice pulling 8 packets at a time
#      wakes the kernel (sendto) once per 32 descriptors on the transmit
#      ring or when its queue runs empty (tx_kicks), and every packet
#      arrives.
#   8. Ring depth: N datagrams sent while the router is stopped (SIGSTOP)
#      wait in the socket's 8192 receive frames and are all read when it
#      goes on; the kernel drops none (xdp_stats).
#   9. Transmit budget: ToDevice TX_BUDGET 256 (XDP_MAX_TX_SKB_BUDGET)
#      says 256 in tx_budget, or, on a kernel without the option, 32 and
#      why; with 256, pulling 8 at a time, it wakes the kernel once per
#      256 descriptors or when its queue runs empty (at most one wake-up
#      per 64 packets), and every packet arrives. TX_BUDGET 16 is refused.
#  10. Busy polling: with --busy-poll the readers say `on` (busy_poll:
#      SO_PREFER_BUSY_POLL), r0's napi_defer_hard_irqs and
#      gro_flush_timeout set, and every datagram is forwarded.
#  11. Transmit sockets on first use: a -j 2 router whose ToDevice is
#      pushed to from one thread opens one AF_XDP socket (tx_queues),
#      not one per thread, and every packet arrives.
# Prints one line per check; exits 0 if all pass.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FAILED=0
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "xdp test" ip ping setpriv

SUF=$$
# PARACLICK_NETNS_PREFIX names the namespaces (default pc), so runs side
# by side are told apart.
PFX=${PARACLICK_NETNS_PREFIX:-pc}
H1=$PFX-xdp-h1-$SUF
H2=$PFX-xdp-h2-$SUF
R=$PFX-xdp-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-xdp.XXXXXX)
ROUTER_PID=
N=5000
RATE=20000
# Receive frames of each socket (xdp.rs's RING), and those always left
# with the kernel (a quarter).
FRAMES=8192
KEPT=$((FRAMES / 4))

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.3 && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "xdp test: interrupted" >&2; exit 130' INT TERM

ip netns add "$H1"
ip netns add "$H2"
ip netns add "$R"
for ns in "$H1" "$H2" "$R"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
  ip -n "$ns" link set lo up
done
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0

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
  ip -n "$H2" link set eth0 address 02:00:00:00:02:02
  ip -n "$R" link set r0 up
  ip -n "$R" link set r1 up
  ip -n "$H1" link set eth0 up
  ip -n "$H2" link set eth0 up
  ip -n "$H1" addr add 10.0.1.2/24 dev eth0
  ip -n "$H2" addr add 10.0.2.2/24 dev eth0
  ip -n "$H1" -6 addr add 2001:db8:1::2/64 dev eth0 nodad
  ip -n "$H2" -6 addr add 2001:db8:2::2/64 dev eth0 nodad
  ip -n "$H1" route add default via 10.0.1.1
  ip -n "$H2" route add default via 10.0.2.1
  ip -n "$H1" -6 route add default via 2001:db8:1::1
  ip -n "$H2" -6 route add default via 2001:db8:2::1
}

# h2's count of UDP datagrams to closed ports, by family.
noports() { # FAMILY
  if [[ $1 == 6 ]]; then
    ip netns exec "$H2" awk '$1 == "Udp6NoPorts" { print $2 }' /proc/net/snmp6
  else
    ip netns exec "$H2" awk '$1 == "Udp:" && $2 ~ /^[0-9]/ { print $3 }' /proc/net/snmp
  fi
}

router_exited() { ! kill -0 "$ROUTER_PID" 2>/dev/null; }

start_router() { # CONF THREADS FAMILY HANDLERS...
  local conf=$1 threads=$2 family=$3 target=10.0.1.1 ping=ping
  shift 3
  local -a hs=() extra=()
  for h in "$@"; do hs+=(-h "$h"); done
  # conf/iprouter6-veth.click does not answer pings itself: ping through it.
  [[ $family == 6 ]] && { target=2001:db8:2::2; ping="ping -6"; }
  [[ $family == 4 ]] && extra=(PRIORITY=false)
  ip netns exec "$R" "$BIN" -j "$threads" "${hs[@]}" "$ROOT/$conf" METHOD=XDP "${extra[@]}" \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 60); do
    ip netns exec "$H1" $ping -c 1 -W 0.3 "$target" >/dev/null 2>&1 && return 0
    router_exited && break
  done
  echo "router ($conf) did not start:" >&2
  cat "$TMP/router.err" >&2
  kill -KILL "$ROUTER_PID" 2>/dev/null && wait "$ROUTER_PID" 2>/dev/null
  ROUTER_PID=
  return 1
}

stop_router() {
  kill -INT "$ROUTER_PID"
  local rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  [[ $rc -eq 0 ]] || { fail "router exited with status $rc"; cat "$TMP/router.err"; }
}

h() { awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"; }

generator() { # FAMILY
  if [[ $1 == 6 ]]; then
    echo "src :: FastUDPSourceIP6($RATE, $N, 62, 02:00:00:00:01:02, 2001:db8:1::2, 1024,
            02:00:00:00:01:01, 2001:db8:2::2, 9, INTERVAL 1, STOP true) -> ToDevice(eth0);"
  else
    echo "src :: FastUDPSource($RATE, $N, 60, 02:00:00:00:01:02, 10.0.1.2, 1024,
            02:00:00:00:01:01, 10.0.2.2, 9, INTERVAL 1, STOP true) -> ToDevice(eth0);"
  fi
}

# ---- 1. forwarding through the example routers with METHOD=XDP ----
forward() { # LABEL CONF THREADS FAMILY TX-TO-H2 IN-HANDLERS...
  local label=$1 conf=$2 threads=$3 family=$4 tx=$5 ping=ping dst=10.0.2.2
  shift 5
  [[ $family == 6 ]] && { ping="ping -6"; dst=2001:db8:2::2; }
  local -a counts=()
  for e in "$@"; do counts+=("$e.count" "$e.mode" "$e.umem_free"); done
  counts+=("$tx.umem" "$tx.sent_direct" "$tx.sent_copied" "$tx.tx_queues")
  start_router "$conf" "$threads" "$family" "${counts[@]}" || { fail "$label: router start"; return; }
  if ip netns exec "$H1" $ping -c 3 -i 0.2 -W 2 "$dst" >/dev/null 2>&1; then
    pass "$label: h1 pings h2 through the router"
  else
    fail "$label: h1 cannot ping h2 through the router"
  fi
  local before after sent
  before=$(noports "$family")
  sent=$(ip netns exec "$H1" "$BIN" --no-pin -h src.count -e "$(generator "$family")" 2>"$TMP/gen.err" |
    tr -dc '0-9') || true
  [[ -n $sent ]] || cat "$TMP/gen.err" >&2
  local deadline=$((SECONDS + 60))
  while :; do
    after=$(noports "$family")
    [[ $((after - before)) -ge $N || $SECONDS -ge $deadline ]] && break
    sleep 0.1
  done
  stop_router
  if has_prog; then fail "$label: an XDP program is left on r0 after the router ended"; fi
  local got=$((after - before)) modes="" per="" frees=""
  for e in "$@"; do
    modes+="$(h "$e.mode");"; per+=" $e $(h "$e.count")"; frees+=" $(h "$e.umem_free")"
  done
  echo "      $label: sent ${sent:-0}, h2 received $got;$per; modes $modes"
  if [[ ${sent:-0} -eq $N && $got -eq $N ]]; then
    pass "$label: all $N UDP datagrams forwarded"
  else
    fail "$label: h1 sent ${sent:-0} of $N, h2 received $got"
  fi
  # Every frame came back: each socket's receive frames are free.
  if [[ -n ${frees// /} && -z $(tr ' ' '\n' <<<"$frees" | grep -v '^$' | grep -vx $FRAMES) ]]; then
    pass "$label: every receive frame came back to its socket (umem_free$frees)"
  else
    fail "$label: receive frames not back: umem_free$frees"
  fi
  # One UMEM for all the router's sockets: the datagrams from r0 went
  # out of r1 in the frames they arrived in.
  local direct
  direct=$(h "$tx.sent_direct")
  echo "      $label: $tx: umem '$(h "$tx.umem")', sent without a copy $direct, copied $(h "$tx.sent_copied")"
  if [[ $(h "$tx.umem") == "shared with "*r0* && ${direct:-0} -ge $N ]]; then
    pass "$label: one UMEM shared: $tx sent $direct packets without a copy (>= $N)"
  else
    fail "$label: $tx umem '$(h "$tx.umem")', sent_direct ${direct:-none} (want >= $N)"
  fi
  if [[ $(tr ';' '\n' <<<"$modes" | grep -v '^$' | grep -vc '^XDP native' || true) -eq 0 ]]; then
    pass "$label: every reader in native XDP mode ($(cut -d';' -f1 <<<"$modes"))"
  else
    fail "$label: modes '$modes'"
  fi
  if [[ $threads -eq 2 ]]; then
    local q0 q1
    q0=$(h "$1.count"); q1=$(h "$2.count")
    if [[ ${q0:-0} -gt 0 && ${q1:-0} -gt 0 ]]; then
      pass "$label: both receive queues of r0 read frames ($q0, $q1)"
    else
      fail "$label: r0's queues read $q0 and $q1 frames"
    fi
    # Pushed to from both threads, the ToDevice sends each thread's
    # packets on its own queue of r1: both queues send some.
    local txq
    txq=$(h "$tx.tx_queues")
    if [[ $txq =~ ^0:([0-9]+)\ 1:([0-9]+)$ && ${BASH_REMATCH[1]} -gt 0 && ${BASH_REMATCH[2]} -gt 0 ]]; then
      pass "$label: $tx sent on both queues of r1, one per thread (tx_queues $txq)"
    else
      fail "$label: $tx tx_queues '$txq' (want both queues of r1 sending)"
    fi
  fi
}

has_prog() { ip -n "$R" link show r0 | grep -q 'prog/xdp'; }
# router_attached LABEL [ERRFILE]: waits until the router just started
# (ROUTER_PID) has attached its XDP program to r0, or has exited. The
# event, not a time: a loaded machine (load 29) once took over 10 s to
# start a router (its UMEM's 32 MiB are faulted in and pinned, the
# program loaded), so the bound is a generous 60 s. Fails LABEL, with
# the router's messages, if it exited first or the bound passed.
prog_or_exit() { has_prog || router_exited; }
# restart_after_kill CONF: starts a router with CONF on r0, where a killed
# router left its program; waits until it says it removed that program
# and has attached its own (or has exited; 60 s at most), then stops it
# with SIGINT. Its output (both streams) goes to $TMP/restart.out.
replaced_prog() {
  { grep -qs "removed the XDP program" "$TMP/restart.out" && has_prog && catches_int; } ||
    router_exited
}
# catches_int: the router has installed its SIGINT handler. A background
# job of this script starts with SIGINT ignored: a SIGINT before the
# handler is in place is lost and the router runs on. (The router
# installs it first thing; one that comes while it builds stops it once
# built.)
catches_int() {
  local m
  m=$(awk '/^SigCgt:/ {print $2}' "/proc/$ROUTER_PID/status" 2>/dev/null) || return 1
  [[ -n $m ]] && (( (16#$m >> 1) & 1 ))
}
restart_after_kill() {
  ip netns exec "$R" "$BIN" -e "$1" >"$TMP/restart.out" 2>&1 &
  ROUTER_PID=$!
  wait_for 60 "the next router to replace the program a killed one left" replaced_prog || true
  kill -INT "$ROUTER_PID" 2>/dev/null
  # Bounded: a router that ignores SIGINT fails here, named, rather than
  # hanging the script.
  if ! wait_for 30 "the restarted router to stop on SIGINT" router_exited; then
    kill -KILL "$ROUTER_PID" 2>/dev/null
  fi
  wait "$ROUTER_PID" 2>/dev/null || true
  ROUTER_PID=
}
router_attached() {
  local label=$1 err=${2:-$TMP/router.err}
  if ! wait_for 60 "$label: the router's XDP program on r0" prog_or_exit; then
    echo "      router's messages so far: $(cat "$err")"
    return 1
  fi
  has_prog && return 0
  fail "$label: the router exited before attaching its XDP program: $(cat "$err")"
  return 1
}
links 1
forward "IPv4 -j 1" conf/iprouter-veth.click 1 4 to1 in0 in1
forward "IPv6 -j 1" conf/iprouter6-veth.click 1 6 to1 in0 in1
links 2
forward "IPv4 -j 2" conf/iprouter-veth-2q.click 2 4 to1 in0q0 in0q1 in1q0 in1q1
forward "IPv6 -j 2" conf/iprouter6-veth-2q.click 2 6 out1 in0q0 in0q1 in1q0 in1q1
forward "IPv4 -j 2 MultiFromDevice" conf/iprouter-veth-2q-poll.click 2 4 to1 poll0 poll1

# ---- 2. a program left by a crashed router is removed ----
ONE="FromDevice(r0, METHOD XDP, N_QUEUES 2, QUEUE 0) -> Discard;
     FromDevice(r0, METHOD XDP, N_QUEUES 2, QUEUE 1) -> Discard;"
ip netns exec "$R" "$BIN" -e "$ONE" >/dev/null 2>"$TMP/crash.err" &
ROUTER_PID=$!
router_attached "2: the router to be killed" "$TMP/crash.err" || true
kill -KILL "$ROUTER_PID"; wait "$ROUTER_PID" 2>/dev/null || true
ROUTER_PID=
if has_prog; then
  restart_after_kill "$ONE"
  out=$(cat "$TMP/restart.out")
  if grep -q "r0: removed the XDP program (id [0-9]*) that an earlier router" <<<"$out"; then
    pass "2: a program left by a killed router is removed at the next start, with a message"
  else
    fail "2: the next router did not say it removed the program: $out"
  fi
  if has_prog; then fail "2: a program is still on r0 after the router ended"
  else pass "2: no program left on r0 after a clean exit"; fi
else
  fail "2: the killed router left no program to clean up"
fi

# ---- 3. errors ----
refused() { # LABEL EXPECTED CONF [PREFIX...]
  local label=$1 want=$2 conf=$3 out
  shift 3
  # A refused configuration exits by itself; 60 s only bounds a hang
  # (a loaded machine has taken over 10 s to start a router).
  if out=$(ip netns exec "$R" timeout -s INT 60 "$@" "$BIN" -e "$conf" 2>&1); then
    fail "3: $label: accepted"
  elif grep -q -- "$want" <<<"$out"; then
    pass "3: $label: $(grep -o -- "$want.*" <<<"$out" | head -1 | cut -c1-90)"
  else
    fail "3: $label: refused, but not with '$want': $out"
  fi
}
ip -n "$R" link set dev r0 xdpgeneric obj /usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o sec xdp 2>/dev/null ||
  ip -n "$R" link set dev r0 xdpgeneric obj "$(ls /usr/lib/*/bpf/xdpfilt_alw_all.o | head -1)" sec xdp
refused "another XDP program" "an XDP program is already attached by another program: 'xdpfilt_alw_all'" "$ONE"
ip -n "$R" link set dev r0 xdpgeneric off
refused "queue count mismatch" "r0 has 2 receive queues, but N_QUEUES is 1" \
  "FromDevice(r0, METHOD XDP) -> Discard;"
refused "missing device" "no device named 'pcnodev9'" "FromDevice(pcnodev9, METHOD XDP) -> Discard;"
refused "no permission" "no permission" "$ONE" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all
# ZEROCOPY true on a socket that would join a UMEM bound in copy mode:
# it gets its own UMEM, where veth refuses zero-copy.
refused "ZEROCOPY true (veth has none), joining a shared UMEM" "the driver does not support this XDP mode" \
  "b :: ToDevice(r1, METHOD XDP);
   FromDevice(r0, METHOD XDP, N_QUEUES 2, QUEUE 0, ZEROCOPY true) -> b;
   FromDevice(r0, METHOD XDP, N_QUEUES 2, QUEUE 1) -> Discard;"
if has_prog; then fail "3: a program is left on r0"; fi

# ---- 4. frames lent to packets: across threads, cloned, held ----
# run_conf LABEL THREADS CONF HANDLERS... [-- ROUTER OPTIONS...]: runs CONF,
# sends the N datagrams from h1 to r0, stops it; handlers in router.out.
run_conf() {
  local label=$1 threads=$2 conf=$3
  shift 3
  local -a hs=() opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do hs+=(-h "$1"); shift; done
  [[ $# -gt 0 ]] && { shift; opts=("$@"); }
  ip netns exec "$R" "$BIN" -j "$threads" "${opts[@]}" "${hs[@]}" -e "$conf" \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  router_attached "$label" || return 1
  sleep 0.3
  SENT=$(ip netns exec "$H1" "$BIN" --no-pin -h src.count -e "$(generator 4)" 2>"$TMP/gen.err" |
    tr -dc '0-9') || true
  sleep 1
  stop_router
}
links 1
REWRITE="EtherRewrite(02:00:00:00:02:01, 02:00:00:00:02:02)"
# The frames' packets are queued to thread 1 and sent from there (freed
# there, their frames come back across threads); Tee's second copy of
# each is a clone, sent too: h2 gets every datagram twice, intact (the
# kernel counts a datagram with a bad checksum elsewhere).
two() { # EXTRA-KEYWORDS
  echo "in :: FromDevice(r0, METHOD XDP$1);
     in -> c :: Classifier(12/0800, -) -> t :: Tee(2);
     c[1] -> Discard;
     out :: ToDevice(r1, METHOD XDP$1);
     t[0] -> Queue(10000) -> u0 :: Unqueue -> $REWRITE -> out;
     t[1] -> Queue(10000) -> u1 :: Unqueue -> $REWRITE -> out;
     StaticThreadSched(in 0, u0 1, u1 1);"
}
for share in true false; do
  label="4 (SHARE_UMEM $share)"
  before=$(noports 4)
  if run_conf "$label" 2 "$(two ", SHARE_UMEM $share")" in.umem_free out.count out.umem out.sent_direct out.sent_copied; then
    sleep 0.5
    got=$(( $(noports 4) - before ))
    echo "      $label: sent ${SENT:-0}, h2 received $got, out.count $(h out.count), in.umem_free $(h in.umem_free), out: umem '$(h out.umem)', without a copy $(h out.sent_direct), copied $(h out.sent_copied)"
    if [[ ${SENT:-0} -eq $N && $got -eq $((2 * N)) ]]; then
      pass "$label: $N datagrams queued to another thread and $N clones all reach h2 intact"
    else
      fail "$label: h1 sent ${SENT:-0}, h2 received $got of $((2 * N))"
    fi
    if [[ $(h in.umem_free) == "$FRAMES" ]]; then
      pass "$label: every receive frame came back from the other thread (umem_free $FRAMES)"
    else
      fail "$label: umem_free $(h in.umem_free) after the run, not $FRAMES"
    fi
    # Shared: the originals leave in their own frames, the clones (pooled
    # copies) are copied; not shared: every packet is copied.
    direct=$(h out.sent_direct)
    if [[ $share == true ]]; then
      if [[ $(h out.umem) == "shared with r0 queue 0" && $direct -eq $N && $(h out.sent_copied) -eq $N ]]; then
        pass "$label: the $N originals left r1 without a copy, the $N clones copied"
      else
        fail "$label: umem '$(h out.umem)', sent_direct $direct, sent_copied $(h out.sent_copied)"
      fi
    elif [[ $(h out.umem) == own && $direct -eq 0 && $(h out.sent_copied) -eq $((2 * N)) ]]; then
      pass "$label: its own UMEM: all $((2 * N)) packets copied into r1's frames"
    else
      fail "$label: umem '$(h out.umem)', sent_direct $direct, sent_copied $(h out.sent_copied)"
    fi
  fi
done

# ---- 5. frame shortage: packets held in a Queue nobody pulls ----
# 6144 frames are lent to the held packets, then 2048 stay with the
# kernel (more than N packets: this run sends 10,000); the next frames are copied into the 64 buffers of a small
# pool, then dropped as a frame shortage. The fill ring never ran dry:
# the kernel dropped nothing.
HOLD="in :: FromDevice(r0, METHOD XDP) -> Queue(10000) -> Idle;"
N_ALL=$N N=10000
if run_conf "5" 1 "$HOLD" in.count in.umem_free in.drop_reasons in.kernel_drops in.xdp_stats -- --pool 64; then
  short=$(grep -o 'UMEM frame shortage [0-9]*' "$TMP/router.out" | grep -o '[0-9]*$' || true)
  echo "      5: sent ${SENT:-0}, in.count $(h in.count), shortage drops ${short:-0}, kernel drops $(h in.kernel_drops), umem_free $(h in.umem_free)"
  if [[ ${short:-0} -gt 0 && $(h in.umem_free) == "$KEPT" && $(h in.kernel_drops) == 0 &&
        $(h in.xdp_stats) == "rx_dropped 0 rx_ring_full 0 fill_ring_empty 0 tx_invalid 0" &&
        $(( $(h in.count) + short )) -ge $N ]]; then
    pass "5: frames short: counted as 'UMEM frame shortage' (${short}), $KEPT frames kept for the kernel, none lost there (xdp_stats: $(h in.xdp_stats))"
  else
    fail "5: shortage ${short:-none}, umem_free $(h in.umem_free), kernel_drops $(h in.kernel_drops), xdp_stats '$(h in.xdp_stats)', count $(h in.count)"
    cat "$TMP/router.out"
  fi
fi
N=$N_ALL

# ---- 6. PASS: the host's own traffic goes to the kernel ----
# r0 holds the kernel address 10.0.1.100. The router forwards every IPv4
# packet from r0 to h2. Without PASS the kernel sees nothing of r0, so h1
# cannot even resolve 10.0.1.100; with PASS for that address, the kernel
# answers h1's ARP and ping itself while the router still takes (and
# forwards) the rest.
ip -n "$R" addr add 10.0.1.100/24 dev r0
pass_run() { # LABEL PASS-KEYWORD
  local label=$1 conf
  conf="in :: FromDevice(r0, METHOD XDP$2);
        in -> c :: Classifier(12/0800, -) -> $REWRITE -> ToDevice(r1, METHOD XDP);
        c[1] -> Discard;"
  ip netns exec "$R" "$BIN" -h in.count -h in.umem_free -e "$conf" >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  router_attached "$label" || return 1
  sleep 0.3
  ip -n "$H1" neigh flush dev eth0
  PINGED=false
  ip netns exec "$H1" ping -c 2 -i 0.2 -W 1 10.0.1.100 >/dev/null 2>&1 && PINGED=true
  local before
  before=$(noports 4)
  SENT=$(ip netns exec "$H1" "$BIN" --no-pin -h src.count -e "$(generator 4)" 2>"$TMP/gen.err" |
    tr -dc '0-9') || true
  sleep 1
  GOT=$(( $(noports 4) - before ))
  stop_router
}
if pass_run "6 without PASS" ""; then
  if $PINGED; then fail "6: without PASS, h1 pinged the kernel's 10.0.1.100 on r0"
  else pass "6: without PASS the router takes everything: h1 cannot ping r0's kernel address"; fi
fi
PASS_F='arp and dst host 10.0.1.100 or dst host 10.0.1.100'
if pass_run "6 with PASS" ", PASS \"$PASS_F\""; then
  if $PINGED; then pass "6: PASS \"$PASS_F\": the kernel answers h1's ARP and ping"
  else fail "6: with PASS, h1 cannot ping 10.0.1.100: $(cat "$TMP/router.err")"; fi
  if [[ ${SENT:-0} -eq $N && $GOT -eq $N && $(h in.count) -ge $N && $(h in.umem_free) == "$FRAMES" ]]; then
    pass "6: with PASS the router still takes and forwards the rest ($GOT of $N, in.count $(h in.count), umem_free $FRAMES)"
  else
    fail "6: with PASS, h1 sent ${SENT:-0}, h2 received $GOT, in.count $(h in.count), umem_free $(h in.umem_free)"
  fi
  if has_prog; then fail "6: the PASS program is left on r0"; else pass "6: the PASS program is gone after the router"; fi
fi
# A PASS program a killed router left is removed at the next start.
ip netns exec "$R" "$BIN" -e "FromDevice(r0, METHOD XDP, PASS \"arp\") -> Discard;" >/dev/null 2>"$TMP/crash.err" &
ROUTER_PID=$!
router_attached "6: the router to be killed" "$TMP/crash.err" || true
kill -KILL "$ROUTER_PID"; wait "$ROUTER_PID" 2>/dev/null || true
ROUTER_PID=
restart_after_kill "FromDevice(r0, METHOD XDP) -> Discard;"
out=$(cat "$TMP/restart.out")
if grep -q "r0: removed the XDP program (id [0-9]*) that an earlier router" <<<"$out" && ! has_prog; then
  pass "6: a PASS program left by a killed router is removed at the next start"
else
  fail "6: the PASS program a killed router left: $out"
fi
refused "6 PASS without METHOD XDP" "PASS needs METHOD XDP" "FromDevice(r0, PASS \"arp\") -> Discard;"
refused "6 a bad PASS" "PASS: unknown word 'src'" "FromDevice(r0, METHOD XDP, PASS \"src host 10.0.0.1\") -> Discard;"

# ---- 7. transmit wake-ups in batches ----
# A source puts bursts of 64 datagrams in a Queue; ToDevice pulls 8 at a
# time. It wakes the kernel (sendto) once per 32 descriptors on the
# transmit ring, or when the queue is empty, not once per pull of 8: at
# most one wake-up per 16 packets, and every datagram arrives (the last
# ones, fewer than 32, are sent when the queue runs empty).
M=1000
before=$(noports 4)
ip netns exec "$R" "$BIN" -h out.count -h out.tx_kicks -e "
  src :: InfiniteSource(LENGTH 18, LIMIT $M, BURST 64, STOP false)
    -> UDPIPEncap(10.0.1.2, 1024, 10.0.2.2, 9)
    -> EtherEncap(0x0800, 02:00:00:00:02:01, 02:00:00:00:02:02)
    -> Queue(10000) -> out :: ToDevice(r1, METHOD XDP, BURST 8);" >"$TMP/router.out" 2>"$TMP/router.err" &
ROUTER_PID=$!
got_all() { (( $(noports 4) - before >= M )); }
wait_for 60 "h2 receiving the router's $M datagrams" got_all || true
stop_router
GOT=$(( $(noports 4) - before ))
kicks=$(h out.tx_kicks)
echo "      7: sent $(h out.count), h2 received $GOT, transmit wake-ups ${kicks:-none}"
if [[ $GOT -eq $M && $(h out.count) -eq $M && -n $kicks && $((kicks * 16)) -le $M ]]; then
  pass "7: $M datagrams sent in pulls of 8 with $kicks wake-ups of the kernel (at most one per 16), all received"
else
  fail "7: h2 received $GOT of $M, out.count $(h out.count), tx_kicks ${kicks:-none}: $(cat "$TMP/router.err")"
fi

# ---- 8. a stalled reader loses nothing while its frames last ----
# The router is stopped (SIGSTOP) while h1 sends N datagrams: the kernel
# keeps them on the receive ring, in the socket's 8192 frames (2048 would
# lose most of them), and the router reads every one when it goes on.
# Only IPv4 is counted: a stray frame of the host's (an IPv6 neighbour
# or router solicitation) once made the count N + 1.
ip netns exec "$R" "$BIN" -h c.count -h in.xdp_stats -e "
  in :: FromDevice(r0, METHOD XDP) -> cl :: Classifier(12/0800, -);
  cl[0] -> c :: Counter -> Discard; cl[1] -> Discard;" >"$TMP/router.out" 2>"$TMP/router.err" &
ROUTER_PID=$!
if router_attached "8"; then
  sleep 0.3
  kill -STOP "$ROUTER_PID"
  SENT=$(ip netns exec "$H1" "$BIN" --no-pin -h src.count -e "$(generator 4)" 2>"$TMP/gen.err" |
    tr -dc '0-9') || true
  kill -CONT "$ROUTER_PID"
  sleep 0.5
  stop_router
  echo "      8: sent ${SENT:-0} to the stopped router, it counted $(h c.count); $(h in.xdp_stats)"
  if [[ ${SENT:-0} -eq $N && $(h c.count) -eq $N &&
        $(h in.xdp_stats) == "rx_dropped 0 rx_ring_full 0 fill_ring_empty 0 tx_invalid 0" ]]; then
    pass "8: $N datagrams sent while the router was stopped, all read when it went on"
  else
    fail "8: sent ${SENT:-0} while stopped, read $(h c.count), xdp_stats '$(h in.xdp_stats)'"
  fi
fi

# ---- 9. the transmit budget per wake-up ----
# As 7, in bursts of 256 with TX_BUDGET 256: one wake-up per 256
# descriptors (or an empty queue), where 32 would take one per 32.
before=$(noports 4)
ip netns exec "$R" "$BIN" -h out.count -h out.tx_kicks -h out.tx_budget -e "
  src :: InfiniteSource(LENGTH 18, LIMIT $M, BURST 256, STOP false)
    -> UDPIPEncap(10.0.1.2, 1024, 10.0.2.2, 9)
    -> EtherEncap(0x0800, 02:00:00:00:02:01, 02:00:00:00:02:02)
    -> Queue(10000) -> out :: ToDevice(r1, METHOD XDP, BURST 8, TX_BUDGET 256);" >"$TMP/router.out" 2>"$TMP/router.err" &
ROUTER_PID=$!
wait_for 10 "h2 receiving the router's $M datagrams" got_all || true
stop_router
GOT=$(( $(noports 4) - before ))
kicks=$(h out.tx_kicks)
budget=$(h out.tx_budget)
echo "      9: sent $(h out.count), h2 received $GOT, tx_budget '$budget', transmit wake-ups ${kicks:-none}"
if [[ $budget == 256 ]]; then
  if [[ $GOT -eq $M && $(h out.count) -eq $M && -n $kicks && $((kicks * 64)) -le $M ]]; then
    pass "9: TX_BUDGET 256 applied: $M datagrams with $kicks wake-ups (at most one per 64), all received"
  else
    fail "9: TX_BUDGET 256: h2 received $GOT of $M, out.count $(h out.count), tx_kicks ${kicks:-none}"
  fi
elif [[ $budget == "32 (the kernel refused TX_BUDGET 256"* ]] && grep -q "r1: the kernel refused TX_BUDGET 256" "$TMP/router.err" &&
     [[ $GOT -eq $M ]]; then
  pass "9: this kernel refuses TX_BUDGET: it says so and sends with 32 ($budget)"
else
  fail "9: tx_budget '$budget', h2 received $GOT of $M: $(cat "$TMP/router.err")"
fi
refused "9 TX_BUDGET below the kernel's" "TX_BUDGET must be between 32 and 8192" \
  "Idle -> ToDevice(r1, METHOD XDP, TX_BUDGET 16);"

# ---- 10. busy polling ----
# Preferred busy polling as the kernel's napi.rst describes it: the
# device defers its interrupts (here veth's NAPI schedule) to the socket
# polling it.
ip netns exec "$R" sh -c 'echo 2 > /sys/class/net/r0/napi_defer_hard_irqs; echo 200000 > /sys/class/net/r0/gro_flush_timeout'
before=$(noports 4)
if run_conf "10" 1 "in :: FromDevice(r0, METHOD XDP);
     in -> c :: Classifier(12/0800, -) -> $REWRITE -> ToDevice(r1, METHOD XDP);
     c[1] -> Discard;" in.busy_poll in.count -- --busy-poll; then
  sleep 0.5
  got=$(( $(noports 4) - before ))
  echo "      10: --busy-poll: busy_poll '$(h in.busy_poll)', sent ${SENT:-0}, h2 received $got"
  if [[ $(h in.busy_poll) == on && ${SENT:-0} -eq $N && $got -eq $N ]]; then
    pass "10: --busy-poll: preferred busy polling on, all $N datagrams forwarded"
  else
    fail "10: --busy-poll: busy_poll '$(h in.busy_poll)', sent ${SENT:-0}, received $got: $(cat "$TMP/router.err")"
  fi
fi
ip netns exec "$R" sh -c 'echo 0 > /sys/class/net/r0/napi_defer_hard_irqs; echo 0 > /sys/class/net/r0/gro_flush_timeout'

# ---- 11. transmit sockets opened on first use ----
# A -j 2 router whose ToDevice (pushed to, so a queue per thread) is
# sent to from thread 0 alone opens one AF_XDP socket, queue 0's, not
# one per thread: tx_queues lists the sockets opened (eager opening
# listed queue 1's too, with 0 packets).
links 2
before=$(noports 4)
ip netns exec "$R" "$BIN" -j 2 -h out.count -h out.tx_queues -e "
  src :: InfiniteSource(LENGTH 18, LIMIT $M, BURST 32, STOP false)
    -> UDPIPEncap(10.0.1.2, 1024, 10.0.2.2, 9)
    -> EtherEncap(0x0800, 02:00:00:00:02:01, 02:00:00:00:02:02)
    -> out :: ToDevice(r1, METHOD XDP);
  StaticThreadSched(src 0);" >"$TMP/router.out" 2>"$TMP/router.err" &
ROUTER_PID=$!
wait_for 60 "h2 receiving the router's $M datagrams" got_all || true
stop_router
GOT=$(( $(noports 4) - before ))
echo "      11: -j 2, one thread sending: tx_queues '$(h out.tx_queues)', h2 received $GOT"
if [[ $(h out.tx_queues) == "0:$M" && $GOT -eq $M ]]; then
  pass "11: one sending thread of two opened one transmit socket (tx_queues 0:$M), all received"
else
  fail "11: tx_queues '$(h out.tx_queues)' (want 0:$M), received $GOT of $M: $(cat "$TMP/router.err")"
fi

if [[ $FAILED -eq 0 ]]; then echo "xdp test: all checks passed"; else echo "xdp test: FAILED"; fi
exit $FAILED
