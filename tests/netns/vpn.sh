#!/usr/bin/env bash
# Real hosts of two sites through an ESP tunnel: paraclick's VPN gateway
# (conf/vpn-gateway-veth.click) on one side, a peer gateway on the other.
#
#   hA 10.0.1.2 eth0 ==veth== r0 [A: paraclick] r1 172.16.0.1 ==veth== wan0 172.16.0.2 [G] lan0 10.0.2.1 ==veth== eth0 hB 10.0.2.2
#
# The peer G is Linux's own IPsec (`ip xfrm state` / `ip xfrm policy`,
# static keys, forwarding on) when the kernel has ESP; a kernel built
# without it (CONFIG_INET_ESP, CONFIG_CRYPTO_GCM, _AUTHENC, _DES unset, as
# on some VMs) cannot be a peer, and then G is a second paraclick running
# the same configuration with the keys and SPIs swapped (the independent
# check of the wire format is then tests/ipsec/esp.py against scapy). The
# script says which peer it used. Set VPN_PEER=paraclick to force that.
#
# Usage (as root):  tests/netns/vpn.sh PATH/TO/paraclick
#
# For aes128gcm16, aes128-sha1 and 3des-sha1, with A at -j 1 and -j 2:
#   - ping hA -> hB and back through the tunnel (every packet is ESP on the
#     WAN: A's counters show encrypted and decrypted packets);
#   - a 1 MB HTTP transfer each way (hB -> hA and hA -> hB) with intact sha256;
#   - a UDP exchange: 40 datagrams of 1 to 1400 bytes echoed back intact;
#   - A counted no authentication failures and no replay drops.
# Prints one line per check; exits 0 if all pass.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "vpn test" ip ping curl python3 sha256sum

SUF=$$
HA=pc-va-$SUF
HB=pc-vb-$SUF
R=pc-vr-$SUF
G=pc-vg-$SUF
TMP=$(mktemp -d /tmp/paraclick-vpn.XXXXXX)
ROUTER_PID=
PEER_PID=
PIDS=()
FAILED=0


cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null
  [[ -n $PEER_PID ]] && kill -INT "$PEER_PID" 2>/dev/null
  sleep 0.2
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  delete_namespaces "$HA" "$HB" "$R" "$G"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "vpn test: interrupted" >&2; exit 130' INT TERM

in_a() { ip netns exec "$HA" "$@"; }
in_b() { ip netns exec "$HB" "$@"; }

# ---- topology ----
for ns in "$HA" "$HB" "$R" "$G"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n "$R" link add r0 type veth peer name eth0 netns "$HA"
ip -n "$R" link add r1 type veth peer name wan0 netns "$G"
ip -n "$G" link add lan0 type veth peer name eth0 netns "$HB"
ip -n "$R" link set r0 address 02:00:00:00:01:01
ip -n "$R" link set r1 address 02:00:00:00:02:01
ip -n "$G" link set wan0 address 02:00:00:00:02:02
ip -n "$G" link set lan0 address 02:00:00:00:03:01
# Room on the WAN for the ESP overhead: no outer fragments.
ip -n "$R" link set r1 mtu 1600
ip -n "$G" link set wan0 mtu 1600
for l in r0 r1; do ip -n "$R" link set $l up; done
for l in wan0 lan0; do ip -n "$G" link set $l up; done
in_a ip link set eth0 up
in_b ip link set eth0 up
in_a ip addr add 10.0.1.2/24 dev eth0
in_b ip addr add 10.0.2.2/24 dev eth0
in_a ip route add default via 10.0.1.1
in_b ip route add default via 10.0.2.1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=0

hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# linux_states ALG KEY_OUT KEY_IN: G's SAs (G -> A uses SPI 0x2002 and
# A's KEY_IN; A -> G uses SPI 0x1001 and A's KEY_OUT).
xfrm_alg() { # ALG KEY: the `ip xfrm state` algorithm words
  local k=${2#0x}
  case $1 in
    aes128gcm16) echo "aead rfc4106(gcm(aes)) 0x$k 128" ;;
    aes128-sha1) echo "enc cbc(aes) 0x${k:0:32} auth-trunc hmac(sha1) 0x${k:32} 96" ;;
    3des-sha1)   echo "enc cbc(des3_ede) 0x${k:0:48} auth-trunc hmac(sha1) 0x${k:48} 96" ;;
  esac
}
linux_peer() { # ALG KEY_OUT KEY_IN
  local g=(ip -n "$G")
  "${g[@]}" xfrm state flush; "${g[@]}" xfrm policy flush
  # shellcheck disable=SC2046
  "${g[@]}" xfrm state add src 172.16.0.1 dst 172.16.0.2 proto esp spi 0x1001 mode tunnel \
    replay-window 64 $(xfrm_alg "$1" "$2") || return 1
  # shellcheck disable=SC2046
  "${g[@]}" xfrm state add src 172.16.0.2 dst 172.16.0.1 proto esp spi 0x2002 mode tunnel \
    $(xfrm_alg "$1" "$3") || return 1
  "${g[@]}" xfrm policy add src 10.0.2.0/24 dst 10.0.1.0/24 dir out \
    tmpl src 172.16.0.2 dst 172.16.0.1 proto esp mode tunnel
  for d in in fwd; do
    "${g[@]}" xfrm policy add src 10.0.1.0/24 dst 10.0.2.0/24 dir $d \
      tmpl src 172.16.0.1 dst 172.16.0.2 proto esp mode tunnel
  done
}

PEER_KIND=${VPN_PEER:-}
if [[ -z $PEER_KIND ]]; then
  if linux_peer aes128gcm16 0x$(hex 20) 0x$(hex 20) 2>"$TMP/xfrm.err"; then
    PEER_KIND=linux
  else
    PEER_KIND=paraclick
    echo "note  the kernel cannot be an ESP peer ($(head -1 "$TMP/xfrm.err")): the peer is a second paraclick"
  fi
  ip -n "$G" xfrm state flush; ip -n "$G" xfrm policy flush
fi
if [[ $PEER_KIND == linux ]]; then
  ip -n "$G" addr add 172.16.0.2/24 dev wan0
  ip -n "$G" addr add 10.0.2.1/24 dev lan0
  ip -n "$G" route add 10.0.1.0/24 via 172.16.0.1
  ip netns exec "$G" sysctl -qw net.ipv4.ip_forward=1
fi
echo "note  peer gateway: $PEER_KIND"

# ---- services: HTTP in both hosts, a UDP echo in hB ----
mkdir -p "$TMP/wwwa" "$TMP/wwwb"
head -c $((1024 * 1024)) /dev/urandom >"$TMP/wwwa/file"
head -c $((1024 * 1024)) /dev/urandom >"$TMP/wwwb/file"
write_httpd "$TMP/httpd.py"
in_a python3 "$TMP/httpd.py" "$TMP/wwwa" 10.0.1.2 8000 >/dev/null 2>&1 &
PIDS+=($!)
in_b python3 "$TMP/httpd.py" "$TMP/wwwb" 10.0.2.2 8000 >/dev/null 2>&1 &
PIDS+=($!)
cat >"$TMP/udp.py" <<'PY'
import socket, sys
if sys.argv[1] == "echo":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[2], 9000))
    while True:
        d, a = s.recvfrom(65536)
        s.sendto(d, a)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    ok = 0
    for i in range(40):
        n = 1 + (i * 347) % 1400
        d = bytes((i + j) & 0xff for j in range(n))
        for _ in range(3):
            s.sendto(d, (sys.argv[2], 9000))
            try:
                r, _ = s.recvfrom(65536)
            except socket.timeout:
                continue
            if r == d:
                ok += 1
            break
    print(ok)
PY
in_b python3 "$TMP/udp.py" echo 10.0.2.2 >/dev/null 2>&1 &
PIDS+=($!)

start_gw() { # NS THREADS OUTFILE ARGS...: starts paraclick; echoes nothing, sets LAST_PID
  local ns=$1 threads=$2 out=$3; shift 3
  ip netns exec "$ns" "$BIN" --no-pin -j "$threads" "$ROOT/conf/vpn-gateway-veth.click" "$@" \
    >"$out" 2>"$out.err" &
  LAST_PID=$!
}

handler() { # FILE NAME
  awk -v h="$2:" '$0 == h { getline; print; exit }' "$1"
}

run_case() { # ALG THREADS
  local alg=$1 threads=$2 label="$1 -j $2" kl ko ki out
  case $alg in aes128gcm16) kl=20 ;; aes128-sha1) kl=36 ;; 3des-sha1) kl=44 ;; esac
  ko=0x$(hex $kl); ki=0x$(hex $kl)
  local hs=(-h enc.packets -h dec.packets -h dec.auth_failures -h dec.replay_drops -h dec.drops)
  start_gw "$R" "$threads" "$TMP/a.out" "${hs[@]}" ALG=$alg KEY_OUT=$ko KEY_IN=$ki
  ROUTER_PID=$LAST_PID
  if [[ $PEER_KIND == linux ]]; then
    linux_peer "$alg" "$ko" "$ki" || { fail "$label: ip xfrm state for $alg"; }
  else
    start_gw "$G" 1 "$TMP/g.out" DEV0=lan0 ADDR0=10.0.2.1 NET0=10.0.2.0/24 BCAST0=10.0.2.255 \
      MAC0=02:00:00:00:03:01 DEV1=wan0 ADDR1=172.16.0.2 MAC1=02:00:00:00:02:02 \
      PEER=172.16.0.1 REMOTE=10.0.1.0/24 ALG=$alg \
      SPI_OUT=0x2002 KEY_OUT=$ki SPI_IN=0x1001 KEY_IN=$ko
    PEER_PID=$LAST_PID
  fi
  # Ready once a ping crosses the tunnel.
  local up=0
  for _ in $(seq 1 50); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then cat "$TMP/a.out.err"; break; fi
    if in_a ping -c 1 -W 0.2 10.0.2.2 >/dev/null 2>&1; then up=1; break; fi
  done
  if [[ $up -eq 1 ]]; then
    if out=$(in_a ping -c 3 -i 0.2 -W 2 10.0.2.2 2>&1); then
      pass "$label: ping hA -> hB through the tunnel"
    else
      fail "$label: ping hA -> hB"; echo "$out"
    fi
    if out=$(in_b ping -c 3 -i 0.2 -W 2 10.0.1.2 2>&1); then
      pass "$label: ping hB -> hA through the tunnel"
    else
      fail "$label: ping hB -> hA"; echo "$out"
    fi
    if in_a curl -sf --max-time 30 -o "$TMP/got" http://10.0.2.2:8000/file &&
       [[ $(sha256sum <"$TMP/got") == $(sha256sum <"$TMP/wwwb/file") ]]; then
      pass "$label: 1 MB HTTP transfer hB -> hA, sha256 intact"
    else
      fail "$label: HTTP transfer hB -> hA"
    fi
    if in_b curl -sf --max-time 30 -o "$TMP/got" http://10.0.1.2:8000/file &&
       [[ $(sha256sum <"$TMP/got") == $(sha256sum <"$TMP/wwwa/file") ]]; then
      pass "$label: 1 MB HTTP transfer hA -> hB, sha256 intact"
    else
      fail "$label: HTTP transfer hA -> hB"
    fi
    rm -f "$TMP/got"
    out=$(in_a python3 "$TMP/udp.py" send 10.0.2.2 2>&1 || true)
    if [[ $out == 40 ]]; then
      pass "$label: UDP exchange, 40 datagrams of 1-1400 bytes echoed intact"
    else
      fail "$label: UDP exchange ($out of 40 intact)"
    fi
  else
    fail "$label: no ping across the tunnel within 10 s"
    cat "$TMP/a.out.err"; [[ -f $TMP/g.out.err ]] && cat "$TMP/g.out.err"
  fi
  kill -INT "$ROUTER_PID"; wait "$ROUTER_PID" || fail "$label: gateway A exited with an error"
  ROUTER_PID=
  if [[ -n $PEER_PID ]]; then kill -INT "$PEER_PID"; wait "$PEER_PID" || true; PEER_PID=; fi
  local e d af rd
  e=$(handler "$TMP/a.out" enc.packets); d=$(handler "$TMP/a.out" dec.packets)
  af=$(handler "$TMP/a.out" dec.auth_failures); rd=$(handler "$TMP/a.out" dec.replay_drops)
  if [[ ${e:-0} -gt 100 && ${d:-0} -gt 100 && $af == 0 && $rd == 0 ]]; then
    pass "$label: gateway A encrypted $e, decrypted $d packets, 0 auth failures, 0 replays"
  else
    fail "$label: gateway A counters: encrypted ${e:-?} decrypted ${d:-?} auth failures ${af:-?} replays ${rd:-?}"
    cat "$TMP/a.out"
  fi
}

for alg in aes128gcm16 aes128-sha1 3des-sha1; do
  for j in 1 2; do
    run_case "$alg" "$j"
  done
done

if [[ $FAILED -eq 0 ]]; then
  echo "vpn test: all checks passed (peer: $PEER_KIND)"
else
  echo "vpn test: FAILED"
  exit 1
fi
