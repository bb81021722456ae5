#!/usr/bin/env bash
# DiffServ shaping and sharing through paraclick: h1 sends four competing
# UDP flows, one per DiffServ class (marked with IP_TOS), to h2 through a
# router namespace running conf/qos-veth.click, which classifies them by
# DSCP, serves EF first, shares the rest 3:1 between AF31 and the two
# lower classes (StrideSched), and those two equally (DRRSched), and
# shapes the total to RATE (BandwidthRatedUnqueue).
#
#   h1 (10.0.1.2/24) eth0 ==veth== r0 [paraclick] r1 ==veth== eth0 h2 (10.0.2.2/24)
#
# Usage (as root):  tests/netns/qos.sh PATH/TO/paraclick
#
# Offered (IP bytes, 1000-byte packets): EF 6, AF31 24, CS1 10, BE 10
# Mbit/s (50 in all) against a 30 Mbit/s shaper. h2 counts what arrives
# per class over an 8 s window (after 3 s of warm-up) and checks:
#   - the total is 30 Mbit/s within 2%;
#   - EF gets what it sent in the window, within 5%;
#   - AF31 gets 3/4 of the rest, CS1 and BE 1/8 each, each within 5% of
#     its share;
#   - `paraclick check` accepts the configuration.
# Prints the measured rates and one line per check; exits 0 if all pass.
# Namespaces, processes and files are removed on exit, failure or
# interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns qos test" ip ping python3

RATE_MBPS=${RATE_MBPS:-30}
SUF=$$
H1=qos-h1-$SUF
H2=qos-h2-$SUF
R=qos-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-qos.XXXXXX)
ROUTER_PID=
RECV_PID=
FAILED=0

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  [[ -n $RECV_PID ]] && kill "$RECV_PID" 2>/dev/null
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns qos test: interrupted" >&2; exit 130' INT TERM

in_h1() { ip netns exec "$H1" "$@"; }

two_hosts "$H1" "$H2" "$R"

# ---- the flows: class name, DSCP, UDP port, offered Mbit/s of IP bytes ----
cat >"$TMP/flows.py" <<'PY'
FLOWS = [("EF", 46, 5001, 6.0), ("AF31", 26, 5002, 24.0),
         ("CS1", 8, 5003, 10.0), ("BE", 0, 5004, 10.0)]
IP_BYTES = 1000            # per packet: 20 IP + 8 UDP + 972 payload
PAYLOAD = IP_BYTES - 28
WARMUP, WINDOW = 3.0, 8.0  # measure over [t0 + WARMUP, t0 + WARMUP + WINDOW)
PY

# Sender: paces each flow on an absolute schedule from t0 for DURATION
# seconds; prints the IP bytes it sent per flow inside the window.
cat >"$TMP/send.py" <<'PY'
import json, socket, sys, time
sys.path.insert(0, sys.argv[4])
from flows import FLOWS, IP_BYTES, PAYLOAD, WARMUP, WINDOW
dst, t0, duration = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
socks, gaps, nxt, sent = [], [], [], []
for name, dscp, port, mbps in FLOWS:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    socks.append(s)
    gaps.append(IP_BYTES * 8 / (mbps * 1e6))
    nxt.append(t0)
    sent.append(0)
data = b"q" * PAYLOAD
while time.time() < t0:
    time.sleep(0.001)
end = t0 + duration
while True:
    now = time.time()
    if now >= end:
        break
    for i, (name, dscp, port, mbps) in enumerate(FLOWS):
        while nxt[i] <= now:
            try:
                socks[i].sendto(data, (dst, port))
                if t0 + WARMUP <= nxt[i] < t0 + WARMUP + WINDOW:
                    sent[i] += IP_BYTES
            except OSError:
                pass
            nxt[i] += gaps[i]
    time.sleep(0.0005)
print(json.dumps({f[0]: b for f, b in zip(FLOWS, sent)}))
PY

# Receiver: counts the IP bytes arriving per flow inside the window.
cat >"$TMP/recv.py" <<'PY'
import json, selectors, socket, sys, time
sys.path.insert(0, sys.argv[3])
from flows import FLOWS, IP_BYTES, WARMUP, WINDOW
addr, t0 = sys.argv[1], float(sys.argv[2])
sel = selectors.DefaultSelector()
got = {}
for name, dscp, port, mbps in FLOWS:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((addr, port))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, name)
    got[name] = 0
print("ready", flush=True)
lo, hi = t0 + WARMUP, t0 + WARMUP + WINDOW
while time.time() < hi + 0.5:
    for key, _ in sel.select(timeout=0.1):
        while True:
            try:
                n = len(key.fileobj.recv(4096))
            except BlockingIOError:
                break
            now = time.time()
            if lo <= now < hi:
                got[key.data] += n + 28
print(json.dumps(got), flush=True)
PY

# ---- the router ----
# (FromDevice checks its device, so this runs in the router's namespace.)
if out=$(ip netns exec "$R" "$BIN" check "$ROOT/conf/qos-veth.click" 2>&1) && grep -q ": ok (" <<<"$out"; then
  pass "paraclick check conf/qos-veth.click: $(grep -o 'ok (.*)' <<<"$out")"
else
  fail "paraclick check conf/qos-veth.click"; echo "$out"
fi

ip netns exec "$R" "$BIN" -j 1 -h shaper.count -h out_rate.bit_rate \
  -h ef.drops -h af.drops -h cs1.drops -h be.drops \
  "$ROOT/conf/qos-veth.click" "RATE=${RATE_MBPS}Mbps" \
  >"$TMP/router.out" 2>"$TMP/router.err" &
ROUTER_PID=$!
ready=0
for _ in $(seq 1 50); do
  if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
    echo "router exited early:" >&2; cat "$TMP/router.err" >&2; exit 1
  fi
  if in_h1 ping -c 1 -W 0.2 10.0.1.1 >/dev/null 2>&1; then ready=1; break; fi
done
[[ $ready -eq 1 ]] || { cat "$TMP/router.err" >&2; echo "router did not answer pings" >&2; exit 1; }
# One ping across, so both ARP caches are warm before the flows start.
in_h1 ping -c 2 -i 0.2 -W 2 10.0.2.2 >/dev/null 2>&1 \
  && pass "ping h1 -> h2 through the QoS router" \
  || fail "ping h1 -> h2 through the QoS router"

# ---- the flows ----
T0=$(python3 -c 'import time; print(f"{time.time() + 1.0:.3f}")')
DURATION=12
ip netns exec "$H2" python3 "$TMP/recv.py" 10.0.2.2 "$T0" "$TMP" >"$TMP/recv.out" 2>&1 &
RECV_PID=$!
for _ in $(seq 1 50); do grep -q ready "$TMP/recv.out" 2>/dev/null && break; sleep 0.02; done
in_h1 python3 "$TMP/send.py" 10.0.2.2 "$T0" "$DURATION" "$TMP" >"$TMP/send.out" 2>&1 \
  || { fail "sender"; cat "$TMP/send.out"; }
wait "$RECV_PID" || fail "receiver"
RECV_PID=

kill -INT "$ROUTER_PID"
wait "$ROUTER_PID" || fail "router exited with status $?"
ROUTER_PID=

# ---- the checks ----
python3 - "$TMP" "$RATE_MBPS" >"$TMP/verdict" <<'PY' || true
import json, sys
sys.path.insert(0, sys.argv[1])
from flows import FLOWS, WINDOW
tmp, rate = sys.argv[1], float(sys.argv[2])
got = json.loads(open(f"{tmp}/recv.out").read().split("\n")[1])
sent = json.loads(open(f"{tmp}/send.out").read().strip().splitlines()[-1])
mbps = lambda b: b * 8 / WINDOW / 1e6
total = sum(mbps(v) for v in got.values())
ef_sent = min(mbps(sent["EF"]), rate)
rest = rate - ef_sent
want = {"EF": ef_sent, "AF31": rest * 3 / 4, "CS1": rest / 8, "BE": rest / 8}
print(f"info  offered in window (Mbit/s): " +
      ", ".join(f"{k} {mbps(v):.2f}" for k, v in sent.items()))
print(f"info  received (Mbit/s): " +
      ", ".join(f"{k} {mbps(v):.2f} ({mbps(v) / total * 100:.1f}%)" for k, v in got.items())
      + f"; total {total:.3f}")
ok = abs(total - rate) <= 0.02 * rate
print(f"{'ok  ' if ok else 'FAIL'}  shaped total {total:.3f} Mbit/s vs {rate:g} "
      f"({(total / rate - 1) * 100:+.2f}%, limit 2%)")
for name, w in want.items():
    g = mbps(got[name])
    ok = abs(g - w) <= 0.05 * w
    print(f"{'ok  ' if ok else 'FAIL'}  {name} gets {g:.3f} Mbit/s, share {w:.3f} "
          f"({(g / w - 1) * 100:+.2f}%, limit 5%)")
PY
cat "$TMP/verdict"
grep -q "^FAIL" "$TMP/verdict" && FAILED=1
grep -q "^ok  " "$TMP/verdict" || { fail "no measurements"; cat "$TMP/recv.out" "$TMP/send.out"; }
echo "      router: $(tr '\n' ' ' <"$TMP/router.out")"

if [[ $FAILED -eq 0 ]]; then
  echo "netns qos test: all checks passed"
else
  echo "netns qos test: FAILED"
  exit 1
fi
