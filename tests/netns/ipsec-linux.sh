#!/usr/bin/env bash
# An ESP tunnel between paraclick and Linux's own IPsec stack, running in
# an emulated Linux guest (qemu, software emulation): the proof that the
# gateway interoperates with the kernel's ESP on live interfaces.
#
#   hA 10.0.1.2 eth0 ==veth== r0 [R: paraclick] r1 172.16.0.1 ==veth== w1 [W: bridge] tap0 == guest eth0 172.16.0.2
#                                                                                        guest's inner host 10.0.2.1
#
# paraclick runs conf/vpn-gateway-veth.click in R in front of the host hA;
# the guest (Debian's cloud kernel with esp4, booted once under
# qemu-system-x86_64 -accel tcg with 512 MB and one vCPU, its initramfs
# built by tests/netns/ipsec-guest/build.sh and cached under target/) is
# the other tunnel endpoint and its own inner host (10.0.2.1 on its
# loopback), with `ip xfrm state` / `ip xfrm policy` in tunnel mode. The
# test drives the guest through its second serial port (one command a
# line; /sbin/ip by its full path, busybox's own `ip` has no xfrm) and
# re-keys it for each case; paraclick is restarted for each.
# W holds the bridge between paraclick's wire and the guest's tap, where
# the test captures ESP packets and injects its own.
#
# Usage (as root):  tests/netns/ipsec-linux.sh PATH/TO/paraclick
#
# For AES-GCM-128, AES-GCM-256, AES-CBC+HMAC-SHA1-96,
# AES-CBC+HMAC-SHA256-128 and 3DES+HMAC-SHA1-96, with paraclick at -j 1
# and -j 2:
#   - ping hA -> guest and guest -> hA through the tunnel;
#   - an HTTP transfer each way (guest's busybox httpd -> hA's curl, hA's
#     server -> guest's wget) whose sha256 matches;
#   - a UDP exchange: 40 datagrams of 1 to 1400 bytes echoed intact by
#     the guest;
#   - the guest's `ip -s xfrm state` shows no replay, integrity or other
#     error, and its SAs' packet counts agree with paraclick's enc.packets
#     and dec.packets;
#   - an ESP packet paraclick sent, replayed to the guest, and a copy with
#     a fresh sequence number and one ciphertext byte flipped, are refused
#     by Linux and counted (`replay 1`, `failed 1` on its inbound SA); the
#     same done to an ESP packet of the guest, sent to paraclick, is
#     refused and counted as dec.replay_drops 1 and dec.auth_failures 1.
# Without qemu-system-x86_64 (or when the guest cannot be built) the test
# is skipped loudly, unless PARACLICK_NO_SKIP=1 or PARACLICK_NETNS_REQUIRED
# is set (CI): then it fails. Prints one line per check and the run time;
# exits 0 if all pass. Namespaces, the tap, qemu and files are removed on
# exit, failure or interrupt.
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/paraclick}
BIN=$(readlink -f "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/tests/netns/lib.sh"
require_root_and_tools "ipsec-linux test" ip ping curl python3 sha256sum timeout
T0=$SECONDS

# skip_or_fail WHY: a loud skip, or a failure where skipping is forbidden.
skip_or_fail() {
  if [[ ${PARACLICK_NO_SKIP:-} == 1 || -n ${PARACLICK_NETNS_REQUIRED:-} ]]; then
    echo "ipsec-linux test: FAILED: $1 (scripts/bootstrap.sh --tests installs what it needs)" >&2
    exit 1
  fi
  local bar=================================================================
  echo "$bar" >&2
  echo "SKIPPED ipsec-linux test: $1; nothing was checked" >&2
  echo "(scripts/bootstrap.sh --tests installs what it needs)" >&2
  echo "$bar" >&2
  echo "ipsec-linux test: SKIPPED ($1)"
  exit 0
}
command -v qemu-system-x86_64 >/dev/null || skip_or_fail "qemu-system-x86_64 is missing"
[[ -c /dev/net/tun ]] || skip_or_fail "/dev/net/tun is missing"
GUEST=$(bash "$ROOT/tests/netns/ipsec-guest/build.sh") || skip_or_fail "the guest could not be built"

SUF=$$
HA=pc-ia-$SUF
R=pc-ir-$SUF
W=pc-iw-$SUF
TMP=$(mktemp -d /tmp/paraclick-ipsec.XXXXXX)
ROUTER_PID=
QEMU_PID=
GUEST_OK=0
PIDS=()
FAILED=0

cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && sleep 0.2 && kill -KILL "$ROUTER_PID" 2>/dev/null
  if [[ -n $QEMU_PID ]]; then
    kill "$QEMU_PID" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$QEMU_PID" 2>/dev/null
  fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  exec 3>&- 4<&- 2>/dev/null
  if ((FAILED)) && [[ -s $TMP/console.log ]]; then
    echo "---- the guest's console (last lines)"
    tail -15 "$TMP/console.log"
  fi
  delete_namespaces "$HA" "$R" "$W"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "ipsec-linux test: interrupted" >&2; exit 130' INT TERM

in_a() { ip netns exec "$HA" "$@"; }
in_w() { ip netns exec "$W" "$@"; }

# ---- topology ----
for ns in "$HA" "$R" "$W"; do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$R" link add r0 type veth peer name eth0 netns "$HA"
ip -n "$R" link add r1 type veth peer name w1 netns "$W"
ip -n "$R" link set r0 address 02:00:00:00:01:01
ip -n "$R" link set r1 address 02:00:00:00:02:01
ip -n "$W" link add br0 type bridge
ip -n "$W" tuntap add tap0 mode tap
# Room on the WAN for the ESP overhead: no outer fragments.
for l in w1 tap0 br0; do ip -n "$W" link set $l mtu 1600; done
ip -n "$R" link set r1 mtu 1600
ip -n "$W" link set w1 master br0
ip -n "$W" link set tap0 master br0
for l in w1 tap0 br0; do ip -n "$W" link set $l up; done
ip -n "$R" link set r0 up
ip -n "$R" link set r1 up
in_a ip link set eth0 up
in_a ip addr add 10.0.1.2/24 dev eth0
in_a ip route add default via 10.0.1.1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=0

# ---- the guest ----
mkfifo "$TMP/ctl.in" "$TMP/ctl.out"
in_w qemu-system-x86_64 -accel tcg -cpu max -m 512 -smp 1 -nographic -nodefaults -no-reboot \
  -kernel "$GUEST/vmlinuz" -initrd "$GUEST/initramfs.gz" \
  -append "console=ttyS0 loglevel=4 panic=-1" \
  -serial "file:$TMP/console.log" -serial "pipe:$TMP/ctl" \
  -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
  -device virtio-net-pci,netdev=n0,romfile=,mac=02:00:00:00:02:02 \
  >"$TMP/qemu.log" 2>&1 &
QEMU_PID=$!
exec 3>"$TMP/ctl.in" 4<"$TMP/ctl.out"

# guest_read LIMIT: the guest's output up to its `@@rc=` line (echoed),
# within LIMIT seconds; returns the command's status, 124 on a timeout.
guest_read() {
  local limit=$1 line deadline=$((SECONDS + $1)) left
  while :; do
    left=$((deadline - SECONDS))
    ((left > 0)) || left=1
    if ! IFS= read -r -t "$left" line <&4; then
      GUEST_OK=0
      echo "guest: no answer within $limit s" >&2
      return 124
    fi
    case $line in
      @@rc=*) return "${line#@@rc=}" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done
}
# guest [-t SECONDS] CMD...: runs CMD (one shell line: newlines become
# spaces) in the guest within SECONDS (30); prints
# its output; its status. A guest that stopped answering fails at once.
guest() {
  local limit=30
  if [[ $1 == -t ]]; then limit=$2; shift 2; fi
  ((GUEST_OK)) || { echo "guest: not answering" >&2; return 125; }
  local cmd=$*
  printf '%s\n' "${cmd//$'\n'/ }" >&3
  guest_read "$limit"
}

boot_start=$SECONDS
ready=
if IFS= read -r -t 90 ready <&4 && [[ $ready == @@ready* ]]; then
  GUEST_OK=1
  pass "guest booted (${ready#@@ready }) in $((SECONDS - boot_start)) s"
else
  fail "the guest did not come up within 90 s"
  tail -20 "$TMP/console.log" "$TMP/qemu.log" 2>/dev/null
  exit 1
fi

guest "/sbin/ip link set eth0 mtu 1600 up && /sbin/ip addr add 172.16.0.2/24 dev eth0 &&
/sbin/ip addr add 10.0.2.1/32 dev lo && /sbin/ip route add 10.0.1.0/24 via 172.16.0.1 src 10.0.2.1" ||
  { fail "guest network setup"; exit 1; }

hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# The algorithms: paraclick's name, key length (bytes), what Linux calls it.
ALGS=(aes128gcm16 aes256gcm16 aes128-sha1 aes128-sha256 3des-sha1)
key_len() {
  case $1 in
    aes128gcm16) echo 20 ;; aes256gcm16) echo 36 ;; aes128-sha1) echo 36 ;;
    aes128-sha256) echo 48 ;; 3des-sha1) echo 44 ;;
  esac
}
xfrm_alg() { # ALG KEY: the `ip xfrm state` algorithm words
  local k=${2#0x}
  case $1 in
    aes128gcm16 | aes256gcm16) echo "aead 'rfc4106(gcm(aes))' 0x$k 128" ;;
    aes128-sha1) echo "enc 'cbc(aes)' 0x${k:0:32} auth-trunc 'hmac(sha1)' 0x${k:32} 96" ;;
    aes128-sha256) echo "enc 'cbc(aes)' 0x${k:0:32} auth-trunc 'hmac(sha256)' 0x${k:32} 128" ;;
    3des-sha1) echo "enc 'cbc(des3_ede)' 0x${k:0:48} auth-trunc 'hmac(sha1)' 0x${k:48} 96" ;;
  esac
}
# guest_keys ALG KEY_OUT KEY_IN: the guest's SAs and policies, afresh
# (paraclick -> guest: SPI 0x1001 with paraclick's KEY_OUT; guest ->
# paraclick: SPI 0x2002 with paraclick's KEY_IN).
guest_keys() {
  guest "/sbin/ip xfrm state flush && /sbin/ip xfrm policy flush &&
/sbin/ip xfrm state add src 172.16.0.1 dst 172.16.0.2 proto esp spi 0x1001 mode tunnel replay-window 64 $(xfrm_alg "$1" "$2") &&
/sbin/ip xfrm state add src 172.16.0.2 dst 172.16.0.1 proto esp spi 0x2002 mode tunnel $(xfrm_alg "$1" "$3") &&
/sbin/ip xfrm policy add src 10.0.2.0/24 dst 10.0.1.0/24 dir out tmpl src 172.16.0.2 dst 172.16.0.1 proto esp mode tunnel &&
/sbin/ip xfrm policy add src 10.0.1.0/24 dst 10.0.2.0/24 dir in tmpl src 172.16.0.1 dst 172.16.0.2 proto esp mode tunnel"
}

start_gw() { # THREADS ALG KEY_OUT KEY_IN
  ip netns exec "$R" "$BIN" --no-pin -j "$1" \
    -h enc.packets -h dec.packets -h dec.auth_failures -h dec.replay_drops -h dec.drops \
    "$ROOT/conf/vpn-gateway-veth.click" ALG="$2" KEY_OUT="$3" KEY_IN="$4" \
    DEV1=r1 PEER=172.16.0.2 REMOTE=10.0.2.0/24 \
    >"$TMP/gw.out" 2>"$TMP/gw.err" &
  ROUTER_PID=$!
}
handler() { # NAME: the value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/gw.out"
}

run_case() { # ALG THREADS
  local alg=$1 threads=$2 label="$1 -j $2" kl ko ki out
  kl=$(key_len "$alg")
  ko=0x$(hex "$kl"); ki=0x$(hex "$kl")
  if ! out=$(guest_keys "$alg" "$ko" "$ki" 2>&1); then
    fail "$label: the guest's ip xfrm state/policy: $out"
    return
  fi
  start_gw "$threads" "$alg" "$ko" "$ki"
  # Up once a ping crosses the tunnel.
  local up=0
  for _ in $(seq 1 40); do
    if ! kill -0 "$ROUTER_PID" 2>/dev/null; then cat "$TMP/gw.err"; break; fi
    if in_a ping -c 1 -W 0.5 10.0.2.1 >/dev/null 2>&1; then up=1; break; fi
  done
  if ((up)); then
    if out=$(in_a ping -c 3 -i 0.2 -W 3 10.0.2.1 2>&1); then
      pass "$label: ping hA -> guest through the tunnel"
    else
      fail "$label: ping hA -> guest"; echo "$out"
    fi
    if out=$(guest ping -c 3 -i 0.2 -W 3 10.0.1.2 2>&1); then
      pass "$label: ping guest -> hA through the tunnel"
    else
      fail "$label: ping guest -> hA"; echo "$out"
    fi
  else
    fail "$label: no ping across the tunnel within 20 s"
    cat "$TMP/gw.err"
  fi
  kill -INT "$ROUTER_PID"
  local rc=0
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  ((rc == 0)) || { fail "$label: paraclick exited with status $rc"; cat "$TMP/gw.err"; }
}

for alg in "${ALGS[@]}"; do
  for j in 1 2; do
    run_case "$alg" "$j"
  done
done

guest -t 5 "/sbin/ip -s xfrm state" >/dev/null || true
printf 'poweroff -f\n' >&3 2>/dev/null || true
echo "note  run time $((SECONDS - T0)) s"
if [[ $FAILED -eq 0 ]]; then
  echo "ipsec-linux test: all checks passed"
else
  echo "ipsec-linux test: FAILED"
  exit 1
fi
