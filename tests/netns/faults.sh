#!/usr/bin/env bash
# Faults under a running router: each must give a clear error or counted
# drops, the router keeps running (handlers answer on its control socket)
# or stops cleanly, and never hangs or panics.
#
#   1. a veth pair deleted while FromDevice (with its priority ring) and
#      ToDevice use it;
#   2. a tap (FromHost/ToHost) deleted while the router reads and writes it;
#   3. a pcap file cut off in the middle of a record, read by FromDump;
#   4. a full disk under ToDump (a 64 KB tmpfs mounted in a private mount
#      namespace, so nothing outside this test sees it).
#
# Usage (as root):  tests/netns/faults.sh PATH/TO/paraclick
# Prints one line per check; exits 0 if all pass. Namespaces, mounts,
# processes and files are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns faults test" ip unshare mount timeout

R=pcfault-$$
TMP=$(mktemp -d /tmp/paraclick-faults.XXXXXX)
ROUTER_PID=
FAILED=0

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "faults test: interrupted" >&2; exit 130' INT TERM

ip netns add "$R"
ip -n "$R" link set lo up
in_r() { ip netns exec "$R" "$@"; }
ctl() { timeout 5 "$BIN" ctl -u "$TMP/ctl.sock" "$@"; }

start() { # CONF: the router in $R with a control socket, ready once it answers
  rm -f "$TMP/ctl.sock"
  in_r "$BIN" -u "$TMP/ctl.sock" -e "$1" >"$TMP/out" 2>"$TMP/err" &
  ROUTER_PID=$!
  for _ in $(seq 1 100); do
    [[ -S $TMP/ctl.sock ]] && ctl list >/dev/null 2>&1 && return 0
    kill -0 "$ROUTER_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "router did not start:" >&2; cat "$TMP/err" >&2
  return 1
}

# stop LABEL: stops the router through its control socket (SIGINT if that
# fails) and waits at most 5 s: a hang or a panic is a failure.
stop() {
  local label=$1 rc=0
  ctl write stop >/dev/null 2>&1 || kill -INT "$ROUTER_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$ROUTER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$ROUTER_PID" 2>/dev/null; then
    fail "$label: the router did not stop within 5 s (hang)"
    kill -KILL "$ROUTER_PID"
  fi
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  if grep -q "panicked" "$TMP/err"; then
    fail "$label: panic"; cat "$TMP/err"
  else
    pass "$label: stopped cleanly through its control socket (status $rc, no panic)"
  fi
}

num() { ctl read "$1" 2>/dev/null | tr -dc '0-9'; }

# ---- 1. a veth pair deleted under FromDevice and ToDevice ----
ip -n "$R" link add va type veth peer name vb
ip -n "$R" link set va up
ip -n "$R" link set vb up
start "
  RatedSource(LENGTH 60, RATE 2000) -> q :: Queue(100) -> td :: ToDevice(va);
  fd :: FromDevice(vb, SNIFFER false, PRIORITY true) -> c :: Counter -> Discard;" ||
  { fail "veth: router start"; exit 1; }
# Frames cross the pair before it goes.
wait_for 10 "frames through the veth pair before deleting it" \
  eval '[[ $(num c.count) -gt 0 ]]' || true
before=$(num c.count)
ip -n "$R" link del va
# The router notices: it stops, or ToDevice reports the error and counts
# drops (then they keep growing as RatedSource goes on).
veth_noticed() {
  ! kill -0 "$ROUTER_PID" 2>/dev/null && return 0
  grep -q "td :: ToDevice: va: " "$TMP/err" && [[ $(num td.drops) -gt 0 ]]
}
wait_for 10 "the router to stop or ToDevice to count drops after the veth went" veth_noticed || true
if kill -0 "$ROUTER_PID" 2>/dev/null; then
  c1=$(num c.count); s1=$(num td.count); d1=$(num td.drops)
  wait_for 10 "ToDevice's drops to grow past $d1" eval '[[ $(num td.drops) -gt $d1 ]]' || true
  d2=$(num td.drops)
  if [[ -n $c1 && -n $s1 && -n $d1 && ${before:-0} -gt 0 ]]; then
    pass "veth deleted: the router runs on, handlers answer (received $c1, sent $s1, ToDevice drops $d1 -> $d2)"
  else
    fail "veth deleted: handlers did not answer ($before $c1 $s1 $d1)"
  fi
  if [[ ${d1:-0} -gt 0 && ${d2:-0} -gt ${d1:-0} ]] && grep -q "td :: ToDevice: va: " "$TMP/err"; then
    pass "veth deleted: counted ToDevice drops, reported once: '$(grep "td :: ToDevice" "$TMP/err" | head -1)'"
  else
    fail "veth deleted: ToDevice counts no drops ($d1 -> $d2)"
  fi
  stop "veth deleted"
else
  wait "$ROUTER_PID" && rc=0 || rc=$?
  ROUTER_PID=
  if grep -q "panicked" "$TMP/err"; then fail "veth deleted: panic"; cat "$TMP/err"
  else pass "veth deleted: the router stopped by itself (status $rc): $(head -1 "$TMP/err")"; fi
fi

# ---- 2. a tap deleted under FromHost/ToHost ----
start "
  fh :: FromHost(pcft0, 10.99.0.1/24, ETHER 02:00:00:00:99:01) -> c :: Counter -> Discard;
  RatedSource(DATA \\<ffffffffffff 020000009902 0806 0001 0800 0604 0001
                      020000009902 0a630002 000000000000 0a630001>, RATE 500)
    -> th :: ToHost(pcft0);" || { fail "tap: router start"; exit 1; }
# The tap works both ways before it goes: ARP requests written, Linux's
# replies read.
wait_for 10 "ARP requests through ToHost and Linux's replies through FromHost" \
  eval '[[ $(num th.count) -gt 0 && $(num c.count) -gt 0 ]]' || true
before=$(num c.count)
in_r ip link del pcft0
# The router notices: it stops, or ToHost counts the writes that fail.
wait_for 10 "the router to stop or ToHost to count drops after the tap went" \
  eval '! kill -0 "$ROUTER_PID" 2>/dev/null || [[ $(num th.drops) -gt 0 ]]' || true
if kill -0 "$ROUTER_PID" 2>/dev/null; then
  c1=$(num c.count); t1=$(num th.count); d1=$(num th.drops)
  if [[ -n $c1 && -n $t1 && ${before:-0} -gt 0 && ${d1:-0} -gt 0 ]]; then
    pass "tap deleted: the router runs on, handlers answer (FromHost $before then $c1, ToHost sent $t1, drops $d1)"
  else
    fail "tap deleted: handlers did not answer, or nothing crossed before or was dropped after (before $before, FromHost $c1, ToHost $t1, drops $d1)"
  fi
  stop "tap deleted"
else
  wait "$ROUTER_PID" && rc=0 || rc=$?
  ROUTER_PID=
  if grep -q "panicked" "$TMP/err"; then fail "tap deleted: panic"; cat "$TMP/err"
  else pass "tap deleted: the router stopped by itself (status $rc): $(head -1 "$TMP/err")"; fi
fi

# ---- 3. a pcap file cut off mid-record ----
"$BIN" -e "InfiniteSource(LENGTH 100, LIMIT 10, STOP true) -> ToDump($TMP/ten.pcap)"
# 24-byte file header, 16-byte record headers: 7 whole records, then half of one.
head -c $((24 + 7 * 116 + 16 + 50)) "$TMP/ten.pcap" >"$TMP/cut.pcap"
start "fd :: FromDump($TMP/cut.pcap, STOP false) -> c :: Counter -> Discard;" ||
  { fail "pcap: router start"; exit 1; }
# The cut record is the event: FromDump counts it after the whole ones.
wait_for 10 "FromDump to count the cut record" eval '[[ $(num fd.errors) -ge 1 ]]' || true
c=$(num c.count); e=$(num fd.errors)
if [[ $c == 7 && ${e:-0} -ge 1 ]] && grep -q "truncated packet record at file offset $((24 + 7 * 116))" "$TMP/err"; then
  pass "pcap cut mid-record: 7 whole records forwarded, then '$(grep -o 'truncated packet record.*' "$TMP/err")', fd.errors $e, router still answering"
else
  fail "pcap cut mid-record: count $c, errors $e"; cat "$TMP/err"
fi
stop "pcap cut mid-record"

# ---- 4. a full disk under ToDump ----
mkdir -p "$TMP/small"
cat >"$TMP/full.sh" <<SH
set -e
mount -t tmpfs -o size=64k paraclick-full "$TMP/small"
"$BIN" -h c.count -h t.count -h t.drops -e "
  InfiniteSource(LENGTH 1000, LIMIT 400, STOP true) -> c :: Counter
    -> t :: ToDump($TMP/small/out.pcap, UNBUFFERED true);"
SH
rc=0
timeout 20 unshare -m --propagation private bash "$TMP/full.sh" >"$TMP/out" 2>"$TMP/err" || rc=$?
h() { awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/out"; }
c=$(h c.count); t=$(h t.count); d=$(h t.drops)
if [[ $rc -eq 124 ]]; then
  fail "full disk: the router hung"
elif grep -q "panicked" "$TMP/err"; then
  fail "full disk: panic"; cat "$TMP/err"
elif [[ $c == 400 && -n $t && -n $d && $((t + d)) -eq 400 && $d -gt 0 ]] &&
     grep -q "No space left on device" "$TMP/err"; then
  pass "full disk (64 KB tmpfs): '$(grep -o 'ToDump: .*' "$TMP/err" | head -1)'; $t written + $d counted drops = 400, router ran to its end (status $rc)"
else
  fail "full disk: count $c, written $t, drops $d, status $rc"; cat "$TMP/err"
fi
if [[ $(grep -c "No space left" "$TMP/err") -eq 1 ]]; then
  pass "full disk: the error is reported once, not per packet"
else
  fail "full disk: the error was reported $(grep -c 'No space left' "$TMP/err") times"
fi
mountpoint -q "$TMP/small" && fail "full disk: the tmpfs leaked out of its mount namespace"

if [[ $FAILED -eq 0 ]]; then echo "faults test: all checks passed"; else echo "faults test: FAILED"; fi
exit $FAILED
