#!/usr/bin/env bash
# A NAPT gateway between real hosts: a private host and a public host in
# their own network namespaces, joined by veth pairs to a gateway
# namespace where paraclick runs conf/nat-gateway-veth.click, talking
# with Linux's own tools and real ARP.
#
#   h1 (10.0.1.2/24) eth0 ==veth== r0 [paraclick NAPT] r1 ==veth== eth0 h2 (10.0.2.2/24)
#   private                        10.0.1.1    public 10.0.2.1         public
#
# Usage (as root):  tests/netns/nat.sh PATH/TO/paraclick
#
# Checks, at -j 1 and at -j 2 (the public side's device tasks on thread
# 1, so replies are translated on another thread than requests):
#   - ping h1 -> h2 succeeds;
#   - a 2 MB HTTP transfer h2 -> h1 arrives with an intact sha256, and
#     the server logs the gateway's public address 10.0.2.1 as the client;
#   - a UDP exchange: h2's echo server sees 10.0.2.1, h1 gets the answer;
#   - UDP to a closed port of h2 gives h1 "connection refused" (h2's port
#     unreachable, translated by ICMPRewriter);
#   - h2 cannot reach h1 unsolicited (ping, TCP connect), nor open a
#     connection to the gateway's public address;
#   - the gateway's mapping table names 10.0.2.1.
# Prints one line per check; exits 0 if all pass. Namespaces, processes
# and files are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns nat test" ip ping curl python3 sha256sum

SUF=$$
H1=pc-nh1-$SUF
H2=pc-nh2-$SUF
R=pc-nr-$SUF
TMP=$(mktemp -d /tmp/paraclick-netns-nat.XXXXXX)
ROUTER_PID=
FAILED=0


cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns nat test: interrupted" >&2; exit 130' INT TERM

in_h1() { ip netns exec "$H1" "$@"; }
in_h2() { ip netns exec "$H2" "$@"; }

two_hosts "$H1" "$H2" "$R"

# ---- servers in h2 (public) and h1 (private) ----
mkdir -p "$TMP/www"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$TMP/www/big"
write_httpd "$TMP/httpd.py"
in_h2 python3 "$TMP/httpd.py" "$TMP/www" 10.0.2.2 8000 >"$TMP/http.log" 2>&1 &
in_h1 python3 "$TMP/httpd.py" "$TMP/www" 10.0.1.2 8000 >"$TMP/http-private.log" 2>&1 &
cat >"$TMP/udpecho.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(b"echo " + data + b" from " + peer[0].encode() + b":" + str(peer[1]).encode(), peer)
PY
in_h2 python3 "$TMP/udpecho.py" 10.0.2.2 9000 >/dev/null 2>&1 &
cat >"$TMP/udpclient.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect((sys.argv[1], int(sys.argv[2])))
try:
    s.send(b"hello")
    print(s.recv(2048).decode())
except ConnectionRefusedError:
    print("connection refused")
except socket.timeout:
    print("timeout")
PY
for _ in $(seq 1 50); do
  in_h2 curl -sf -o /dev/null --max-time 1 http://10.0.2.2:8000/big && break
  sleep 0.1
done

start_router() { # THREADS ARGS...
  local threads=$1; shift
  ip netns exec "$R" "$BIN" -j "$threads" -h rw.table -h rw.mapping_failures -h unsolicited.count \
    -h err_in.rewritten "$ROOT/conf/nat-gateway-veth.click" "$@" \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
      echo "gateway exited early:" >&2; cat "$TMP/router.err" >&2; return 1
    fi
    if in_h1 ping -c 1 -W 0.2 10.0.1.1 >/dev/null 2>&1; then return 0; fi
  done
  echo "gateway did not answer pings within 10 s" >&2
  cat "$TMP/router.err" >&2
  return 1
}

stop_router() {
  kill -INT "$ROUTER_PID"
  local rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  if [[ $rc -ne 0 ]]; then fail "gateway exited with status $rc"; cat "$TMP/router.err"; fi
}

handler() { # NAME: the value printed by -h at exit (first line)
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"
}

checks() { # LABEL
  local label=$1 out
  if out=$(in_h1 ping -c 3 -i 0.2 -W 2 10.0.2.2 2>&1); then
    pass "$label: ping h1 -> h2 through the NAT"
  else
    fail "$label: ping h1 -> h2"; echo "$out"
  fi

  : >"$TMP/http.log"
  if in_h1 curl -sf --max-time 30 -o "$TMP/got-big" http://10.0.2.2:8000/big &&
     [[ $(sha256sum <"$TMP/got-big") == $(sha256sum <"$TMP/www/big") ]]; then
    pass "$label: 2 MB HTTP transfer h2 -> h1, sha256 intact"
  else
    fail "$label: 2 MB HTTP transfer"
  fi
  rm -f "$TMP/got-big"
  if grep -q '^10\.0\.2\.1 .*GET /big' "$TMP/http.log" && ! grep -q '10\.0\.1\.2' "$TMP/http.log"; then
    pass "$label: the server saw the gateway's public address 10.0.2.1"
  else
    fail "$label: the server saw another client address"; cat "$TMP/http.log"
  fi

  out=$(in_h1 python3 "$TMP/udpclient.py" 10.0.2.2 9000 2>&1 || true)
  if grep -q "^echo hello from 10\.0\.2\.1:" <<<"$out"; then
    pass "$label: UDP exchange, h2 saw ${out#echo hello from }"
  else
    fail "$label: UDP exchange"; echo "$out"
  fi

  out=$(in_h1 python3 "$TMP/udpclient.py" 10.0.2.2 9999 2>&1 || true)
  if [[ $out == "connection refused" ]]; then
    pass "$label: UDP to a closed port: connection refused (ICMP error translated)"
  else
    fail "$label: UDP to a closed port gave '$out'"
  fi

  if in_h2 ping -c 2 -i 0.2 -W 1 10.0.1.2 >/dev/null 2>&1; then
    fail "$label: h2 pinged the private host unsolicited"
  else
    pass "$label: h2 cannot ping the private host"
  fi
  if in_h2 curl -sf --max-time 2 -o /dev/null http://10.0.1.2:8000/big; then
    fail "$label: h2 reached the private host's TCP server"
  else
    pass "$label: h2 cannot connect to the private host"
  fi
  if in_h2 curl -sf --max-time 2 -o /dev/null http://10.0.2.1:8000/big; then
    fail "$label: h2 opened a connection through the public address unsolicited"
  else
    pass "$label: h2 cannot open a connection to the gateway's public address"
  fi
}

for threads in 1 2; do
  label="-j $threads"
  start_router "$threads" T1=$((threads - 1)) || { fail "$label: gateway start"; exit 1; }
  checks "$label"
  stop_router
  table=$(awk '/^rw.table:$/ {f=1; next} /^[a-z_]+\.[a-z_]+:$/ {f=0} f' "$TMP/router.out")
  if grep -q "^TCP (10\.0\.1\.2, [0-9]*, 10\.0\.2\.2, 8000) => (10\.0\.2\.1, " <<<"$table"; then
    pass "$label: rw.table holds the HTTP flow mapped to 10.0.2.1"
  else
    fail "$label: rw.table"; echo "$table"
  fi
  echo "      $label: mapping failures $(handler rw.mapping_failures), unsolicited $(handler unsolicited.count), errors translated $(handler err_in.rewritten)"
  if [[ $(handler unsolicited.count) -gt 0 && $(handler err_in.rewritten) -gt 0 ]]; then
    pass "$label: unsolicited packets counted, ICMP errors translated"
  else
    fail "$label: counters"
  fi
done

if [[ $FAILED -eq 0 ]]; then
  echo "netns nat test: all checks passed"
else
  echo "netns nat test: FAILED"
  exit 1
fi
