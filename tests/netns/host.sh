#!/usr/bin/env bash
# The router's own addresses served by Linux, through FromHost/ToHost taps:
# two hosts in their own network namespaces, joined by veth pairs to a
# router namespace where paraclick runs conf/iprouter-veth-host.click, and
# TCP services on the router's addresses run by Linux in that namespace.
#
#   h1 (10.0.1.2/24) eth0 ==veth== r0 [paraclick] r1 ==veth== eth0 h2 (10.0.2.2/24)
#                                  10.0.1.1      10.0.2.1 (MTU 1400)
#                                  ph0 (tap)     ph1 (tap): Linux's side,
#                                  10.0.1.1/24   10.0.2.1/24
#
# Usage (as root):  tests/netns/host.sh PATH/TO/paraclick
#
# Checks, at -j 1 and again at -j 2:
#   - the taps exist while the router runs, with the router's addresses,
#     Ethernet addresses and MTUs (ph1: 1400);
#   - HTTP servers (python3 http.server) bound to 10.0.1.1 and 10.0.2.1 in
#     the router's namespace: h1 fetches 2 MB from 10.0.1.1 and h2 fetches
#     2 MB from 10.0.2.1 (through the 1400-byte side), sha256 intact, and
#     h2 reaches 10.0.1.1 across the router too;
#   - ping h1 -> 10.0.1.1 is answered once per request (no duplicate from
#     Linux taking the packet straight off r0) by the router;
#   - Linux in the router's namespace pings h1 and h2 (its packets leave
#     through the taps, are routed out r0/r1; the replies come back in);
#   - forwarding h1 -> h2 still works (ttl=63);
#   - the router's counts: ToHost handed packets to Linux, FromHost got
#     Linux's answers, no ToHost drops;
#   - after the router ends the taps are gone and r0's rp_filter is back;
# and finally that `paraclick check` accepts the configuration.
# Prints one line per check; exits 0 if all pass. Namespaces, processes
# and files are removed on exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "netns host test" ip ping curl python3 sha256sum
[[ -c /dev/net/tun ]] || { echo "netns host test: no /dev/net/tun (tun module)" >&2; exit 2; }

SUF=$$
H1=pc-th1-$SUF
H2=pc-th2-$SUF
R=pc-tr-$SUF
TMP=$(mktemp -d /tmp/paraclick-netns-host.XXXXXX)
ROUTER_PID=
FAILED=0


cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  # The HTTP servers run in the router's namespace: deleting it ends them.
  delete_namespaces "$H1" "$H2" "$R"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "netns host test: interrupted" >&2; exit 130' INT TERM

in_h1() { ip netns exec "$H1" "$@"; }
in_h2() { ip netns exec "$H2" "$@"; }
in_r() { ip netns exec "$R" "$@"; }

# ---- topology ----
# The router's namespace does not forward: only paraclick routes. Its
# Linux stack gets the router's addresses on the taps once paraclick runs.
two_hosts "$H1" "$H2" "$R"
rp_before=$(in_r cat /proc/sys/net/ipv4/conf/r0/rp_filter)

# ---- files and the HTTP server ----
mkdir -p "$TMP/www"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$TMP/www/big"
head -c 30000 /dev/urandom >"$TMP/www/small"
write_httpd "$TMP/httpd.py"

handler() { # NAME: a value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/router.out"
}

fetch() { # LABEL NS-FUNCTION URL FILE
  local label=$1 ns=$2 url=$3 file=$4
  rm -f "$TMP/got"
  if $ns curl -sf --max-time 30 -o "$TMP/got" "$url" &&
     [[ $(sha256sum <"$TMP/got") == $(sha256sum <"$TMP/www/$file") ]]; then
    pass "$label, sha256 intact"
  else
    fail "$label"
  fi
}

phase() { # THREADS
  local j=$1 label="-j $1" out out0 out1 rc ready a
  local -a handlers=() http=()
  for h in fh0.count fh0.drops th0.count th0.drops fh1.count th1.count th1.drops to0.count to1.count; do
    handlers+=(-h "$h")
  done
  # Started directly (not through a shell function) so $! is paraclick.
  ip netns exec "$R" "$BIN" -j "$j" "${handlers[@]}" "$ROOT/conf/iprouter-veth-host.click" MTU1=1400 \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  ready=0
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then
      echo "router exited early:" >&2; cat "$TMP/router.err" >&2; break
    fi
    if in_h1 ping -c 1 -W 0.2 10.0.1.1 >/dev/null 2>&1; then ready=1; break; fi
  done
  if [[ $ready -ne 1 ]]; then
    fail "$label: router start"; cat "$TMP/router.err"; exit 1
  fi

  # 1. The taps, as FromHost configured them.
  out0=$(in_r ip -o addr show dev ph0 2>&1 || true)
  out1=$(in_r ip -o link show dev ph1 2>&1; in_r ip -o addr show dev ph1 2>&1 || true)
  if grep -q "inet 10.0.1.1/24" <<<"$out0" && grep -q "inet 10.0.2.1/24" <<<"$out1" &&
     grep -q "mtu 1400" <<<"$out1" && grep -q "link/ether 02:00:00:00:02:fe" <<<"$out1"; then
    pass "$label: taps ph0 (10.0.1.1/24) and ph1 (10.0.2.1/24, mtu 1400, 02:00:00:00:02:fe) are up"
  else
    fail "$label: taps not configured as expected"; echo "$out0"; echo "$out1"
  fi

  # 2. HTTP servers on the router's addresses (which exist now), run by
  # Linux in the router's namespace.
  for a in 10.0.1.1 10.0.2.1; do
    ip netns exec "$R" python3 "$TMP/httpd.py" "$TMP/www" "$a" 8080 >>"$TMP/http.log" 2>&1 &
    http+=($!)
  done
  for a in 10.0.1.1 10.0.2.1; do
    for _ in $(seq 1 50); do
      in_r curl -sf -o /dev/null --max-time 1 "http://$a:8080/small" && break
      sleep 0.1
    done
  done
  fetch "$label: h1 fetches 2 MB from the router's Linux on 10.0.1.1:8080" in_h1 http://10.0.1.1:8080/big big
  fetch "$label: h2 fetches 2 MB from the router's Linux on 10.0.2.1:8080 (MTU 1400 side)" in_h2 http://10.0.2.1:8080/big big
  fetch "$label: h2 fetches from 10.0.1.1:8080 (the other interface's address)" in_h2 http://10.0.1.1:8080/small small

  # 3. Pings to the router: answered by the router once, not by Linux too.
  if out=$(in_h1 ping -c 3 -i 0.2 -W 2 10.0.1.1 2>&1) && grep -q " 0% packet loss" <<<"$out" &&
     ! grep -q "DUP" <<<"$out"; then
    pass "$label: ping h1 -> 10.0.1.1: every request answered, no duplicates"
  else
    fail "$label: ping h1 -> 10.0.1.1"; echo "$out"
  fi

  # 4. Linux in the router's namespace reaches the hosts through the taps.
  for a in 10.0.1.2 10.0.2.2; do
    if out=$(in_r ping -c 2 -i 0.2 -W 2 "$a" 2>&1); then
      pass "$label: the router's Linux pings $a through its tap and the router"
    else
      fail "$label: the router's Linux cannot ping $a"; echo "$out"
    fi
  done

  # 5. Forwarding is unchanged.
  if out=$(in_h1 ping -c 2 -i 0.2 -W 2 10.0.2.2 2>&1) && grep -q "ttl=63" <<<"$out"; then
    pass "$label: ping h1 -> h2 forwarded (ttl=63)"
  else
    fail "$label: ping h1 -> h2"; echo "$out"
  fi

  # ---- stop; counts; the taps go with the router ----
  kill "${http[@]}" 2>/dev/null || true
  wait "${http[@]}" 2>/dev/null || true
  kill -INT "$ROUTER_PID"
  rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  if [[ $rc -ne 0 ]]; then fail "$label: router exited with status $rc"; cat "$TMP/router.err"; fi
  echo "      $label counts: ToHost ph0 $(handler th0.count) (drops $(handler th0.drops)), ph1 $(handler th1.count) (drops $(handler th1.drops)); FromHost ph0 $(handler fh0.count), ph1 $(handler fh1.count); r0 out $(handler to0.count), r1 out $(handler to1.count)"
  # Each tap carried a 2 MB file out of Linux (at least 2 MB / 1500-byte
  # frames) and the requests and acknowledgements in.
  if [[ $(handler fh0.count) -ge 1398 && $(handler fh1.count) -ge 1398 &&
        $(handler th0.count) -ge 100 && $(handler th1.count) -ge 100 &&
        $(handler th0.drops) -eq 0 && $(handler th1.drops) -eq 0 ]]; then
    pass "$label: packets went to Linux and back through both taps, no ToHost drops"
  else
    fail "$label: unexpected tap counts"
  fi
  if in_r ip link show ph0 >/dev/null 2>&1 || in_r ip link show ph1 >/dev/null 2>&1; then
    fail "$label: a tap outlived the router"
  else
    pass "$label: the taps are gone with the router"
  fi
  out=$(in_r cat /proc/sys/net/ipv4/conf/r0/rp_filter)
  if [[ $out == "$rp_before" ]]; then
    pass "$label: r0's rp_filter is back to $rp_before"
  else
    fail "$label: r0's rp_filter is $out, was $rp_before"
  fi
}

phase 1
phase 2

# paraclick check opens the devices (taps included), so it is run here,
# in the router's namespace, once the router has let go of them.
if out=$(in_r "$BIN" check "$ROOT/conf/iprouter-veth-host.click" MTU1=1400 2>&1) && grep -q ": ok (" <<<"$out"; then
  pass "paraclick check conf/iprouter-veth-host.click: $(grep -o 'ok (.*)' <<<"$out")"
else
  fail "paraclick check conf/iprouter-veth-host.click"; echo "$out"
fi

if [[ $FAILED -eq 0 ]]; then echo "netns host test: all checks passed"; else echo "netns host test: FAILED"; fi
exit $FAILED
