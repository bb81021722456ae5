#!/usr/bin/env bash
# FromDevice's priority path for control traffic (PRIORITY): a router
# whose data path is flooded past what it can process still answers pings
# to itself, and no frame reaches both of its rings.
#
#   ns H: h1 [generator, ping] eth0 ==veth== r0 ns R: paraclick
#
# Usage (as root):  tests/netns/control-priority.sh PATH/TO/paraclick
#
# The router answers ARP and pings for 10.0.1.1 on r0 and sends every
# other frame through WorkPackage (about 20 us of work per packet here,
# some tens of thousands of packets/s at most), with a 1 MiB main ring. A
# generator in H floods r0 with 60-byte UDP frames at FLOOD_RATE, several
# times what the router can process, for FLOOD_SECS while h1 pings the
# router 10 times. Once with PRIORITY false (printed, not checked: pings
# wait behind the full ring or are lost with the flood), then with
# PRIORITY true, then the same with MultiFromDevice reading r0. Checks,
# with PRIORITY true, for each of the two classes:
#   1. the data path was overloaded (the main ring dropped frames);
#   2. at least 9 of the 10 pings were answered;
#   3. no frame was delivered twice and none lost between the rings:
#      FromDevice's count plus its drops equals the frames r0 received
#      (/sys/class/net/r0/statistics/rx_packets) over the same time;
#   4. the rings split the traffic exactly: priority_count equals the ARP
#      and ICMP frames the router's Classifier saw, and count less
#      priority_count equals the flood frames it saw.
# Prints one line per check; exits 0 if all pass.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "control-priority test" ip ping taskset

SUF=$$
H=cp8-h-$SUF
R=cp8-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-cp8.XXXXXX)
ROUTER_PID=
FAILED=0
FLOOD_RATE=150000
FLOOD_SECS=3
WORK=1000

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$H" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "control-priority test: interrupted" >&2; exit 130' INT TERM

# No IPv6: no router solicitations or neighbour discovery on the link, so
# nothing but what the test sends reaches r0.
add_namespaces_without_ipv6 "$H" "$R"
ip -n "$R" link add r0 type veth peer name eth0 netns "$H"
ip -n "$R" link set r0 address 02:00:00:00:01:01
ip -n "$H" link set eth0 address 02:00:00:00:01:02
ip -n "$R" link set r0 up
ip -n "$H" link set eth0 up
ip -n "$H" addr add 10.0.1.2/24 dev eth0

# router_conf CLASS: the router, reading r0 with CLASS (FromDevice or
# MultiFromDevice).
router_conf() {
cat >"$TMP/router.click" <<EOF
define(\$PRIORITY true, \$WORK $WORK);
in :: $1(r0, SNIFFER false, RING_SIZE 1048576, PRIORITY \$PRIORITY);
out :: Queue(1000) -> ToDevice(r0);
c :: Classifier(12/0806 20/0001, 12/0806, 12/0800 23/01, -);
in -> c;
c[0] -> arp :: Counter -> ARPResponder(10.0.1.1 02:00:00:00:01:01) -> out;
c[1] -> arp_other :: Counter -> Discard;
c[2] -> icmp :: Counter -> Strip(14) -> CheckIPHeader -> ICMPPingResponder
     -> EtherEncap(0x0800, 02:00:00:00:01:01, 02:00:00:00:01:02) -> out;
c[3] -> flood :: Counter -> WorkPackage(\$WORK) -> Discard;
EOF
}

ctl() { timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" read "$1" 2>/dev/null | tr -dc '0-9'; }
rx_r0() { ip netns exec "$R" cat /sys/class/net/r0/statistics/rx_packets; }

# One run with PRIORITY $1 and class $2: prints what it saw, and sets the
# counter deltas (D_*), PINGS and RTT for the checks.
run() {
  local prio=$1 class=$2 n
  router_conf "$class"
  rm -f "$TMP/ctl.sock"
  ip netns exec "$R" "$BIN" -j 1 -u "$TMP/ctl.sock" "$TMP/router.click" "PRIORITY=$prio" \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 100); do
    [[ -S $TMP/ctl.sock ]] && ctl in.count >/dev/null && break
    kill -0 "$ROUTER_PID" 2>/dev/null || { echo "router exited early:" >&2; cat "$TMP/router.err" >&2; return 1; }
    sleep 0.1
  done
  # Baselines: the rings are open and nothing has been sent yet.
  local rx0 c0 d0 p0 a0 ao0 i0 f0
  rx0=$(rx_r0); c0=$(ctl in.count); d0=$(ctl in.drops); p0=$(ctl in.priority_count)
  a0=$(ctl arp.count); ao0=$(ctl arp_other.count); i0=$(ctl icmp.count); f0=$(ctl flood.count)
  # h1 must resolve 10.0.1.1 again, under the flood.
  ip -n "$H" neigh flush dev eth0
  n=$((FLOOD_RATE * FLOOD_SECS))
  ip netns exec "$H" taskset -c "$(($(nproc) - 1))" "$BIN" --no-pin -e "
    FastUDPSource($FLOOD_RATE, $n, 60, 02:00:00:00:01:02, 10.0.1.2, 1024,
                  02:00:00:00:01:01, 10.0.9.9, 9, INTERVAL 1, STOP true) -> ToDevice(eth0);" \
    >"$TMP/gen.out" 2>&1 &
  local gen=$!
  sleep 0.5
  # 10 pings while the flood goes on (ARP for 10.0.1.1 first, also
  # under the flood).
  ip netns exec "$H" ping -c 10 -i 0.1 -W 2 10.0.1.1 >"$TMP/ping.out" 2>&1 || true
  wait "$gen" || true
  # The router works through what is left in its rings.
  local last=-1 now
  for _ in $(seq 1 100); do
    now=$(ctl in.count)
    [[ $now == "$last" ]] && break
    last=$now
    sleep 0.3
  done
  D_RX=$(($(rx_r0) - rx0))
  D_COUNT=$(($(ctl in.count) - c0))
  D_DROPS=$(($(ctl in.drops) - d0))
  D_KDROPS=$(ctl in.kernel_drops)
  D_PRIO=$(($(ctl in.priority_count) - p0))
  D_PDROPS=$(ctl in.priority_drops)
  D_CONTROL=$(($(ctl arp.count) - a0 + $(ctl arp_other.count) - ao0 + $(ctl icmp.count) - i0))
  D_FLOOD=$(($(ctl flood.count) - f0))
  kill -INT "$ROUTER_PID"
  wait "$ROUTER_PID" || true
  ROUTER_PID=
  PINGS=$(grep -o '[0-9]* received' "$TMP/ping.out" | cut -d' ' -f1 || true)
  PINGS=${PINGS:-0}
  RTT=$(grep -o 'rtt[^=]*= [0-9.]*/[0-9.]*/[0-9.]*' "$TMP/ping.out" | awk '{ print $NF }' || true)
  echo "      $class PRIORITY $prio: frames on r0 $D_RX, emitted $D_COUNT (priority ring $D_PRIO), drops $D_DROPS" \
    "(kernel $D_KDROPS, priority ring $D_PDROPS); Classifier: control $D_CONTROL, flood $D_FLOOD;" \
    "pings answered $PINGS/10, RTT min/avg/max ${RTT:--} ms"
}

check() { # CLASS
  local e=$1
  if [[ $D_KDROPS -gt 0 ]]; then
    pass "1: $e: the data path was overloaded: the main ring dropped $D_KDROPS of $D_RX frames"
  else
    fail "1: $e: no kernel drops: the flood did not overload the router (the checks below mean little)"
  fi
  if [[ $PINGS -ge 9 ]]; then
    pass "2: $e: $PINGS of 10 pings to the router answered under the flood (RTT min/avg/max ${RTT:--} ms)"
  else
    fail "2: $e: only $PINGS of 10 pings answered under the flood"; cat "$TMP/ping.out"
  fi
  if [[ $((D_COUNT + D_DROPS)) -eq $D_RX ]]; then
    pass "3: $e: emitted $D_COUNT + dropped $D_DROPS = $D_RX frames received on r0: none delivered twice"
  else
    fail "3: $e: emitted $D_COUNT + dropped $D_DROPS != $D_RX frames received on r0"
  fi
  if [[ $D_PRIO -eq $D_CONTROL && $((D_COUNT - D_PRIO)) -eq $D_FLOOD && $D_PRIO -ge 10 ]]; then
    pass "4: $e: the priority ring gave exactly the $D_CONTROL control frames, the main ring exactly the $D_FLOOD others"
  else
    fail "4: $e: priority ring $D_PRIO (control frames $D_CONTROL), main ring $((D_COUNT - D_PRIO)) (flood frames $D_FLOOD)"
  fi
}

# Without the priority path: printed for comparison, not checked.
run false FromDevice || { fail "router start (FromDevice, PRIORITY false)"; exit 1; }
run true FromDevice || { fail "router start (FromDevice, PRIORITY true)"; exit 1; }
check FromDevice
run true MultiFromDevice || { fail "router start (MultiFromDevice, PRIORITY true)"; exit 1; }
check MultiFromDevice

if [[ $FAILED -eq 0 ]]; then echo "control-priority test: all checks passed"; else echo "control-priority test: FAILED"; fi
exit $FAILED
