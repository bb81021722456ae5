#!/usr/bin/env bash
# KernelTun and KernelTap: paraclick exchanges packets with the Linux
# stack of a network namespace of its own through a tun and a tap device.
#
# Usage (as root):  tests/netns/tun.sh PATH/TO/paraclick
#
# Checks, in a fresh namespace (tun-$$):
#   - KernelTun(10.99.0.1/24, DEV_NAME tunpc0, MTU 1400) -> ICMPPingResponder
#     -> the same KernelTun (push input): the device exists with its
#     address and MTU, Linux's pings to 10.99.0.2 (routed into the tun)
#     are all answered, and the counts (count, sent) show them;
#   - the same with a Queue before the KernelTun (pull input, its task);
#   - ICMPPingSource's pings to Linux (10.99.0.1) written into the tun are
#     all answered by Linux (replies read back and counted);
#   - at -j 2, 1000 flood pings through KernelTun -> Queue -> KernelTun
#     are all answered;
#   - KernelTap(10.98.0.1/24, ETHER ...): ARPResponder answers Linux's ARP
#     queries for 10.98.0.2 and pings to 10.98.0.2 are answered through
#     Ethernet frames;
#   - the devices are gone once the router ends;
#   - without CAP_NET_ADMIN (user nobody) initialization fails with an
#     error naming /dev/net/tun or the device, not a panic.
# Prints one line per check; exits 0 if all pass. The namespace and the
# processes are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns tun test" ip ping setpriv
[[ -c /dev/net/tun ]] || { echo "netns tun test: no /dev/net/tun (tun module)" >&2; exit 2; }

NS=tun-$$
TMP=$(mktemp -d /tmp/paraclick-netns-tun.XXXXXX)
chmod 755 "$TMP"
ROUTER_PID=
FAILED=0

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$NS"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns tun test: interrupted" >&2; exit 130' INT TERM

in_ns() { ip netns exec "$NS" "$@"; }
ip netns add "$NS"
in_ns ip link set lo up

handler() { # NAME: a value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"
}

start() { # DEVICE CONFIG HANDLER...: runs paraclick until DEVICE is up
  local dev=$1 conf=$2; shift 2
  local -a hs=()
  local h
  for h in "$@"; do hs+=(-h "$h"); done
  ip netns exec "$NS" "$BIN" -j "${THREADS:-1}" "${hs[@]}" -e "$conf" >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
      echo "router exited early:" >&2; cat "$TMP/router.err" >&2; return 1
    fi
    in_ns ip link show "$dev" 2>/dev/null | grep -q "UP" && return 0
    sleep 0.1
  done
  return 1
}

stop() {
  kill -INT "$ROUTER_PID" 2>/dev/null || true
  wait "$ROUTER_PID" 2>/dev/null || true
  ROUTER_PID=
}

wait_exit() { # SECONDS: waits for the router to stop by itself, then stops it if not
  local deadline=$((SECONDS + $1))
  while kill -0 "$ROUTER_PID" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 0.05
  done
  stop
}

tun_phase() { # LABEL CONFIG MAXDROPS
  local label=$1 conf=$2 maxdrops=$3 out
  if ! start tunpc0 "$conf" tun.count tun.sent tun.drops tun.dev_name; then
    fail "$label: router start"; cat "$TMP/router.err"; return
  fi
  out=$(in_ns ip -o addr show dev tunpc0 2>&1; in_ns ip -o link show dev tunpc0 2>&1)
  if grep -q "inet 10.99.0.1/24" <<<"$out" && grep -q "mtu 1400" <<<"$out"; then
    pass "$label: tunpc0 is up with 10.99.0.1/24, mtu 1400"
  else
    fail "$label: tunpc0 not configured as expected"; echo "$out"
  fi
  if out=$(in_ns ping -c 3 -i 0.2 -W 2 10.99.0.2 2>&1) && grep -q " 0% packet loss" <<<"$out" &&
     ! grep -q DUP <<<"$out"; then
    pass "$label: 3 pings to 10.99.0.2 through the tun answered by ICMPPingResponder"
  else
    fail "$label: pings through the tun"; echo "$out"
  fi
  # A large ping (1372 bytes of IP) fits the MTU and comes back whole.
  if out=$(in_ns ping -c 1 -s 1344 -W 2 10.99.0.2 2>&1) && grep -q "1352 bytes from 10.99.0.2" <<<"$out"; then
    pass "$label: a 1372-byte ping is answered whole"
  else
    fail "$label: large ping"; echo "$out"
  fi
  stop
  local c s d n
  c=$(handler tun.count); s=$(handler tun.sent); d=$(handler tun.drops); n=$(handler tun.dev_name)
  if [[ $n == tunpc0 && ${c:-0} -ge 4 && ${s:-0} -ge 4 && ${d:-99} -le $maxdrops ]]; then
    pass "$label: handlers dev_name=$n count=$c sent=$s drops=$d"
  else
    fail "$label: handlers dev_name=$n count=$c sent=$s drops=$d"; cat "$TMP/router.out" "$TMP/router.err"
  fi
  if in_ns ip link show tunpc0 >/dev/null 2>&1; then
    fail "$label: tunpc0 outlived the router"
  else
    pass "$label: tunpc0 is gone with the router"
  fi
}

# Output 1 takes what Linux sends that is not IPv4 (such as IPv6
# packets of its own): nothing is dropped then. Without output 1 such packets
# are dropped and counted (at most a few in this short run).
tun_phase "KernelTun (push input)" \
  'tun :: KernelTun(10.99.0.1/24, DEV_NAME tunpc0, MTU 1400); tun -> ICMPPingResponder -> tun; tun[1] -> Discard;' 0
tun_phase "KernelTun (pull input, BURST 4)" \
  'tun :: KernelTun(10.99.0.1/24, DEV_NAME tunpc0, MTU 1400, BURST 4); tun -> ICMPPingResponder -> Queue(64) -> tun;' 5

# ---- a flood of pings at -j 2 (reader task and pushes on any worker) ----
if THREADS=2 start tunpc0 'tun :: KernelTun(10.99.0.1/24, DEV_NAME tunpc0, BURST 32);
  tun -> ICMPPingResponder -> Queue -> tun;' tun.count tun.sent; then
  out=$(in_ns ping -f -c 1000 -W 1 10.99.0.2 2>&1 || true)
  stop
  c=$(handler tun.count); s=$(handler tun.sent)
  if grep -q "1000 received" <<<"$out" && [[ $c -ge 1000 && $s -ge 1000 ]]; then
    pass "KernelTun -j 2: 1000 flood pings all answered (count=$c sent=$s)"
  else
    fail "KernelTun -j 2: flood ping: count=$c sent=$s"; echo "$out" | tail -3
  fi
else
  fail "KernelTun -j 2: router start"; cat "$TMP/router.err"
fi

# ---- Linux answers pings that the router writes into the tun ----
# (as in Click's test-tun.click): ICMPPingSource's echo requests to
# 10.99.0.1 go in through the pull input; Linux's replies come out.
if start tunpc0 'tun :: KernelTun(10.99.0.1/24, DEV_NAME tunpc0);
  ICMPPingSource(10.99.0.2, 10.99.0.1, INTERVAL 0.05, LIMIT 10) -> Queue -> tun;
  tun -> CheckIPHeader -> IPClassifier(icmp type echo-reply) -> ok :: Counter(COUNT_CALL 10 stop) -> Discard;' ok.count tun.sent; then
  # 10 pings 50 ms apart: the tenth reply stops the router (about 0.5 s;
  # the deadline only catches lost replies).
  wait_exit 10
  c=$(handler ok.count); s=$(handler tun.sent)
  if [[ $c == 10 && $s == 10 ]]; then
    pass "KernelTun: 10 echo requests written into the tun, Linux's 10 replies read back"
  else
    fail "KernelTun: pings to Linux: sent=$s replies=$c"; cat "$TMP/router.err"
  fi
else
  fail "KernelTun (pinging Linux): router start"; cat "$TMP/router.err"
fi

# ---- KernelTap ----
TAPCONF='tap :: KernelTap(10.98.0.1/24, ETHER 02:00:00:00:98:01, DEV_NAME tappc0);
tap -> c :: Classifier(12/0806 20/0001, 12/0800, -);
c[0] -> arp :: ARPResponder(10.98.0.2 02:00:00:00:98:02) -> tap;
c[1] -> Strip(14) -> CheckIPHeader -> ICMPPingResponder
     -> EtherEncap(0x0800, 02:00:00:00:98:02, 02:00:00:00:98:01) -> tap;
c[2] -> Discard;'
if start tappc0 "$TAPCONF" tap.count tap.sent tap.drops; then
  out=$(in_ns ip -o link show dev tappc0 2>&1; in_ns ip -o addr show dev tappc0 2>&1)
  if grep -q "link/ether 02:00:00:00:98:01" <<<"$out" && grep -q "inet 10.98.0.1/24" <<<"$out"; then
    pass "KernelTap: tappc0 is up with 02:00:00:00:98:01 and 10.98.0.1/24"
  else
    fail "KernelTap: tappc0 not configured as expected"; echo "$out"
  fi
  if out=$(in_ns ping -c 3 -i 0.2 -W 2 10.98.0.2 2>&1) && grep -q " 0% packet loss" <<<"$out"; then
    pass "KernelTap: ARP answered and 3 pings to 10.98.0.2 answered through the tap"
  else
    fail "KernelTap: pings through the tap"; echo "$out"
  fi
  out=$(in_ns ip neigh show 10.98.0.2 dev tappc0)
  if grep -q "02:00:00:00:98:02" <<<"$out"; then
    pass "KernelTap: Linux learned 10.98.0.2 at 02:00:00:00:98:02 from ARPResponder"
  else
    fail "KernelTap: neighbour entry: $out"
  fi
  stop
  c=$(handler tap.count); s=$(handler tap.sent)
  if [[ ${c:-0} -ge 4 && ${s:-0} -ge 4 ]]; then
    pass "KernelTap: handlers count=$c sent=$s"
  else
    fail "KernelTap: handlers count=$c sent=$s"
  fi
  if in_ns ip link show tappc0 >/dev/null 2>&1; then fail "KernelTap: tappc0 outlived the router"
  else pass "KernelTap: tappc0 is gone with the router"; fi
else
  fail "KernelTap: router start"; cat "$TMP/router.err"
fi

# ---- no permission: a clear error ----
rc=0
out=$(in_ns setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
        "$BIN" -e 'KernelTun(10.97.0.1/24) -> Discard;' 2>&1) || rc=$?
if [[ $rc -ne 0 ]] && grep -Eq "/dev/net/tun|tun device" <<<"$out" && ! grep -qi panic <<<"$out"; then
  pass "without CAP_NET_ADMIN: fails (exit $rc) saying: $(grep -E '/dev/net/tun|tun device' <<<"$out" | head -1)"
else
  fail "without CAP_NET_ADMIN: exit $rc: $out"
fi

if [[ $FAILED -eq 0 ]]; then echo "netns tun test: all checks passed"; else echo "netns tun test: FAILED"; fi
exit $FAILED
