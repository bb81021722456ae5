#!/usr/bin/env bash
# IPv6 through paraclick: two hosts in their own network namespaces,
# joined by veth pairs to a router namespace where paraclick runs
# conf/iprouter6-veth.click, talking with Linux's own tools over IPv6.
#
#   h1 (2001:db8:1::2/64) eth0 ==veth== r0 [paraclick] r1 ==veth== eth0 h2 (2001:db8:2::2/64)
#                                       2001:db8:1::1  2001:db8:2::1 (router MTU 1400 out r1)
#
# The links are 1500 bytes, but the router is told MTU1=1400: what h1
# sends towards h2 above 1400 bytes gets ICMPv6 packet too big, so path
# MTU discovery (RFC 8201) must work for TCP from h1 to h2 to complete.
#
# Usage (as root):  tests/netns/ip6.sh PATH/TO/paraclick
#
# Checks, at -j 1 with conf/iprouter6-veth.click and at -j 2 with
# conf/iprouter6-veth-2q.click (two receive queues per interface):
#   - ping -6 h1 -> h2 succeeds with hop limit 63 in the replies, the
#     hosts resolved the router by its IP6NDAdvertiser (router flag) and
#     the router resolved the hosts with IP6NDSolicitor (its table);
#   - ping -6 -t 1 gets the router's ICMPv6 time exceeded;
#   - a 4 MB HTTP transfer h2 -> h1 over IPv6 arrives intact (sha256);
#   - a ping of 1498 bytes gets "Packet too big: mtu=1400" and h1's route
#     then carries mtu 1400; a 4 MB TCP upload h1 -> h2 (bigger than the
#     router's MTU towards h2) arrives intact;
#   - at -j 2, both receive queues of r0 got packets.
# Then conf/iprouter-dualstack-veth.click carries IPv4 and IPv6 at once:
# both pings, and an IPv4 and an IPv6 transfer running together, intact.
# Last, the dual-stack router `paraclick make-ip-conf --linux` writes for
# r0 and r1 passes `paraclick check` and passes the same IPv6 checks plus
# an IPv4 ping and transfer.
# Prints one line per check; exits 0 if all pass. Namespaces, processes
# and files are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns test" ip ping curl python3 sha256sum

SUF=$$
H1=pc6-h1-$SUF
H2=pc6-h2-$SUF
R=pc6-r-$SUF
TMP=$(mktemp -d /tmp/paraclick-netns6.XXXXXX)
ROUTER_PID=
PIDS=()
FAILED=0


cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns test: interrupted" >&2; exit 130' INT TERM

in_h1() { ip netns exec "$H1" "$@"; }
in_h2() { ip netns exec "$H2" "$@"; }

# ---- topology: lib.sh's two hosts (IPv4), plus IPv6, links 1500 ----
two_hosts "$H1" "$H2" "$R"
ip -n "$R" link set r1 mtu 1500
ip -n "$H2" link set eth0 mtu 1500
for ns in "$H1" "$H2"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.eth0.accept_dad=0 \
    net.ipv6.conf.eth0.accept_ra=0
done
ip -n "$H1" -6 addr add 2001:db8:1::2/64 dev eth0 nodad
ip -n "$H2" -6 addr add 2001:db8:2::2/64 dev eth0 nodad
ip -n "$H1" -6 route add default via 2001:db8:1::1
ip -n "$H2" -6 route add default via 2001:db8:2::1
ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=0

# ---- servers in h2: HTTP over IPv6 and IPv4, and an IPv6 TCP sink ----
mkdir -p "$TMP/www"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$TMP/www/big"
cat >"$TMP/httpd.py" <<'PY'
import http.server, socket, socketserver, sys
class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ':' in sys.argv[2] else socket.AF_INET
    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]
handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=sys.argv[1])
Server((sys.argv[2], int(sys.argv[3])), handler).serve_forever()
PY
# The sink: each connection's bytes, hashed, to OUTDIR/N.sha256.
cat >"$TMP/sink.py" <<'PY'
import hashlib, socket, sys, os
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
n = 0
while True:
    c, _ = s.accept(); h = hashlib.sha256(); total = 0
    while True:
        b = c.recv(65536)
        if not b: break
        h.update(b); total += len(b)
    c.close(); n += 1
    with open(os.path.join(sys.argv[3], "%d.sha256" % n), "w") as f: f.write("%s %d\n" % (h.hexdigest(), total))
PY
cat >"$TMP/send.py" <<'PY'
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
with open(sys.argv[3], "rb") as f: c.sendall(f.read())
c.shutdown(socket.SHUT_WR); c.recv(1); c.close()
PY
mkdir -p "$TMP/sink"
in_h2 python3 "$TMP/httpd.py" "$TMP/www" 2001:db8:2::2 8000 >"$TMP/http6.log" 2>&1 &
PIDS+=($!)
in_h2 python3 "$TMP/httpd.py" "$TMP/www" 10.0.2.2 8000 >"$TMP/http4.log" 2>&1 &
PIDS+=($!)
in_h2 python3 "$TMP/sink.py" 2001:db8:2::2 9000 "$TMP/sink" >"$TMP/sink.log" 2>&1 &
PIDS+=($!)
WANT=$(sha256sum <"$TMP/www/big" | cut -d' ' -f1)

start_router() { # CONF THREADS
  local conf=$1 threads=$2
  local -a handlers=()
  for h in $HANDLERS; do handlers+=(-h "$h"); done
  [[ $conf == /* ]] || conf=$ROOT/$conf
  ip netns exec "$R" "$BIN" -j "$threads" "${handlers[@]}" "$conf" MTU1=1400 \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  # Ready once h1 reaches h2 through it (neighbour discovery included).
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
      echo "router exited early:" >&2; cat "$TMP/router.err" >&2; return 1
    fi
    if in_h1 ping -6 -c 1 -W 0.3 2001:db8:2::2 >/dev/null 2>&1; then return 0; fi
  done
  echo "no IPv6 ping through the router within 15 s" >&2
  cat "$TMP/router.err" >&2
  return 1
}

stop_router() {
  kill -INT "$ROUTER_PID"
  local rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  if [[ $rc -ne 0 ]]; then fail "router exited with status $rc"; cat "$TMP/router.err"; fi
}

handler() { # NAME: the first line of a value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"
}
handler_all() { # NAME: every line of a value printed by -h at exit
  awk -v h="$1:" '$0 == h { on = 1; next } on && /^[a-z0-9_.]+:$/ { exit } on { print }' "$TMP/router.out"
}

upload() { # LABEL: h1 -> h2, 4 MB, over the 1400-byte router MTU
  local label=$1 before
  before=$(ls "$TMP/sink" | wc -l)
  if in_h1 timeout 40 python3 "$TMP/send.py" 2001:db8:2::2 9000 "$TMP/www/big" 2>"$TMP/send.err"; then
    sleep 0.3
    local got
    got=$(cat "$TMP/sink/$((before + 1)).sha256" 2>/dev/null || true)
    if [[ $got == "$WANT $((4 * 1024 * 1024))" ]]; then
      pass "$label: 4 MB TCP upload h1 -> h2 across the 1400-byte MTU (PMTUD), sha256 intact"
    else
      fail "$label: upload arrived damaged ($got)"
    fi
  else
    fail "$label: 4 MB TCP upload h1 -> h2"; cat "$TMP/send.err"
  fi
}

checks() { # LABEL
  local label=$1 out
  in_h1 ip -6 route flush cache >/dev/null 2>&1 || true

  # 1. ping -6, hop limit decremented, neighbour discovery both ways.
  if out=$(in_h1 ping -6 -c 3 -i 0.2 -W 2 2001:db8:2::2 2>&1); then
    if grep -q "ttl=63" <<<"$out" && ! grep -q "ttl=64" <<<"$out"; then
      pass "$label: ping -6 h1 -> h2, replies with hop limit 63 (one router hop)"
    else
      fail "$label: ping -6 replies without the hop limit decrement"; echo "$out"
    fi
  else
    fail "$label: ping -6 h1 -> h2"; echo "$out"
  fi
  out=$(in_h1 ip -6 neigh show 2001:db8:1::1 dev eth0)
  if grep -q "lladdr 02:00:00:00:01:01 router" <<<"$out"; then
    pass "$label: h1 resolved the router by neighbour discovery ($out)"
  else
    fail "$label: h1 has no router neighbour entry"; echo "$out"
  fi

  # 2. Hop limit 1: the router's time exceeded.
  out=$(in_h1 ping -6 -c 1 -t 1 -W 2 2001:db8:2::2 2>&1 || true)
  if grep -q "From 2001:db8:[12]::1 .*Time exceeded: Hop limit" <<<"$out"; then
    pass "$label: ping -6 -t 1 gets time exceeded from the router ($(grep -o 'From [^ ]*' <<<"$out"))"
  else
    fail "$label: no time exceeded for ping -6 -t 1"; echo "$out"
  fi

  # 3. TCP over IPv6: 4 MB download h2 -> h1, intact.
  if in_h1 curl -sf -g --max-time 30 -o "$TMP/got-big" "http://[2001:db8:2::2]:8000/big" &&
     [[ $(sha256sum <"$TMP/got-big" | cut -d' ' -f1) == "$WANT" ]]; then
    pass "$label: 4 MB HTTP transfer over IPv6 h2 -> h1, sha256 intact"
  else
    fail "$label: 4 MB HTTP transfer over IPv6"
  fi
  rm -f "$TMP/got-big"

  # 4. Packet too big and path MTU discovery.
  out=$(in_h1 ping -6 -c 1 -M do -s 1450 -W 2 2001:db8:2::2 2>&1 || true)
  if grep -qi "Packet too big: mtu=1400" <<<"$out"; then
    pass "$label: a 1498-byte ping gets 'Packet too big: mtu=1400' from the router"
  else
    fail "$label: no packet too big for a ping over the MTU"; echo "$out"
  fi
  out=$(in_h1 ip -6 route get 2001:db8:2::2 2>&1)
  if grep -q "mtu 1400" <<<"$out"; then
    pass "$label: h1 learned the path MTU (mtu 1400)"
  else
    fail "$label: h1's route has no path MTU"; echo "$out"
  fi
  in_h1 ip -6 route flush cache >/dev/null 2>&1 || true
  upload "$label"
}

# h1's veth hands the router TSO super-frames and partial checksums (the
# uploads below only arrive intact if FromDevice segments and completes
# them for IPv6, as it does for IPv4).
if command -v ethtool >/dev/null; then
  if in_h1 ethtool -k eth0 | grep -q "^tcp-segmentation-offload: on"; then
    pass "h1's eth0 has TSO on: the IPv6 uploads reach the router as GSO super-frames"
  else
    fail "h1's eth0 has TSO off: the offload path would go untested"
  fi
fi

# ---- -j 1 ----
HANDLERS="in0.count to1.count nds1.table nds0.table cip6.drops"
start_router conf/iprouter6-veth.click 1 || { fail "-j 1: router start"; exit 1; }
checks "-j 1"
stop_router
t=$(handler_all nds1.table)
if grep -q "^2001:db8:2::2 1 " <<<"$t"; then
  pass "-j 1: the router's IP6NDSolicitor resolved h2 ($(grep '^2001:db8:2::2' <<<"$t"))"
else
  fail "-j 1: IP6NDSolicitor table lacks h2"; echo "$t"
fi
echo "      -j 1 counts: r0 in $(handler in0.count), r1 out $(handler to1.count), CheckIP6Header drops $(handler cip6.drops)"

# ---- -j 2, two queues per interface ----
HANDLERS="in0q0.count in0q1.count in1q0.count in1q1.count"
start_router conf/iprouter6-veth-2q.click 2 || { fail "-j 2: router start"; exit 1; }
checks "-j 2"
# More flows, so that both queues of r0 see some.
for i in $(seq 1 8); do in_h1 curl -sf -g --max-time 10 -o /dev/null "http://[2001:db8:2::2]:8000/big" || true; done
stop_router
q0=$(handler in0q0.count); q1=$(handler in0q1.count)
echo "      -j 2 counts: r0 queue 0 $q0, queue 1 $q1; r1 queues $(handler in1q0.count) $(handler in1q1.count)"
if [[ ${q0:-0} -gt 0 && ${q1:-0} -gt 0 ]]; then
  pass "-j 2: both receive queues of r0 got flows (fanout hash)"
else
  fail "-j 2: a receive queue of r0 got nothing ($q0, $q1)"
fi

# ---- dual stack ----
HANDLERS="to0.count to1.count"
start_router conf/iprouter-dualstack-veth.click 1 || { fail "dual stack: router start"; exit 1; }
out4=$(in_h1 ping -c 3 -i 0.2 -W 2 10.0.2.2 2>&1 || true)
out6=$(in_h1 ping -6 -c 3 -i 0.2 -W 2 2001:db8:2::2 2>&1 || true)
if grep -q "ttl=63" <<<"$out4" && grep -q "ttl=63" <<<"$out6"; then
  pass "dual stack: ping and ping -6 both cross the router (ttl 63, hop limit 63)"
else
  fail "dual stack: pings"; echo "$out4"; echo "$out6"
fi
in_h1 curl -sf --max-time 30 -o "$TMP/got4" http://10.0.2.2:8000/big &
P4=$!
in_h1 curl -sf -g --max-time 30 -o "$TMP/got6" "http://[2001:db8:2::2]:8000/big" &
P6=$!
ok4=0; ok6=0
wait $P4 && [[ $(sha256sum <"$TMP/got4" | cut -d' ' -f1) == "$WANT" ]] && ok4=1
wait $P6 && [[ $(sha256sum <"$TMP/got6" | cut -d' ' -f1) == "$WANT" ]] && ok6=1
if [[ $ok4 -eq 1 && $ok6 -eq 1 ]]; then
  pass "dual stack: 4 MB over IPv4 and 4 MB over IPv6 at the same time, both intact"
else
  fail "dual stack: simultaneous transfers (IPv4 $ok4, IPv6 $ok6)"
fi
upload "dual stack"
stop_router

# ---- the dual-stack router paraclick make-ip-conf writes ----
GEN=$TMP/make-ip-conf.click
"$BIN" make-ip-conf --linux 'r0:10.0.1.1/24,[2001:db8:1::1]/64:02:00:00:00:01:01' \
  'r1:10.0.2.1/24,[2001:db8:2::1]/64:02:00:00:00:02:01' >"$GEN"
if out=$(ip netns exec "$R" "$BIN" check "$GEN" 2>&1) && grep -q ": ok (" <<<"$out"; then
  pass "make-ip-conf dual stack: paraclick check $(grep -o 'ok (.*)' <<<"$out")"
else
  fail "make-ip-conf dual stack: paraclick check"; echo "$out"
fi
HANDLERS="to0.count to1.count nds1.table cip6.drops"
if start_router "$GEN" 1; then
  checks "make-ip-conf"
  out4=$(in_h1 ping -c 3 -i 0.2 -W 2 10.0.2.2 2>&1 || true)
  if grep -q "ttl=63" <<<"$out4"; then
    pass "make-ip-conf: IPv4 ping h1 -> h2 crosses the same router (ttl 63)"
  else
    fail "make-ip-conf: IPv4 ping"; echo "$out4"
  fi
  if in_h1 curl -sf --max-time 30 -o "$TMP/got4" http://10.0.2.2:8000/big &&
     [[ $(sha256sum <"$TMP/got4" | cut -d' ' -f1) == "$WANT" ]]; then
    pass "make-ip-conf: 4 MB HTTP transfer over IPv4 h2 -> h1, sha256 intact"
  else
    fail "make-ip-conf: 4 MB HTTP transfer over IPv4"
  fi
  stop_router
  echo "      make-ip-conf counts: r0 out $(handler to0.count), r1 out $(handler to1.count), CheckIP6Header drops $(handler cip6.drops)"
else
  fail "make-ip-conf: router start"
fi

for conf in conf/iprouter6-veth.click conf/iprouter6-veth-2q.click conf/iprouter-dualstack-veth.click; do
  if out=$(ip netns exec "$R" "$BIN" check "$ROOT/$conf" 2>&1) && grep -q ": ok (" <<<"$out"; then
    pass "paraclick check $conf: $(grep -o 'ok (.*)' <<<"$out")"
  else
    fail "paraclick check $conf"; echo "$out"
  fi
done

if [[ $FAILED -eq 0 ]]; then echo "netns test: all checks passed"; else echo "netns test: FAILED"; fi
exit $FAILED
