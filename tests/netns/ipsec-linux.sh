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
# Without qemu-system-x86_64 ($QEMU) or when the guest cannot be built
# (no package source) the test is skipped loudly, unless
# PARACLICK_NO_SKIP=1 (scripts/test.sh, CI)
# is set: then it fails. Every step is bounded (the boot at 90 s, each
# guest command, transfer and injection by its own timeout), so a stuck
# guest fails the test rather than hangs it. Prints one line per check,
# each case's time and the run time; exits 0 if all pass. Namespaces, the tap, qemu and files are removed on
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
  if [[ ${PARACLICK_NO_SKIP:-} == 1 ]]; then
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
# QEMU names another emulator binary (or a missing one, to see the skip).
QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null || skip_or_fail "$QEMU is missing"
[[ -c /dev/net/tun ]] || skip_or_fail "/dev/net/tun is missing"
GUEST=$(bash "$ROOT/tests/netns/ipsec-guest/build.sh") || skip_or_fail "the guest could not be built"

# Namespace names: NETNS_PREFIX (default pc), their role, this shell's pid.
SUF=$$
P=${NETNS_PREFIX:-pc}
HA=$P-ia-$SUF
R=$P-ir-$SUF
W=$P-iw-$SUF
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
in_w "$QEMU" -accel tcg -cpu max -m 512 -smp 1 -nographic -nodefaults -no-reboot \
  -kernel "$GUEST/vmlinuz" -initrd "$GUEST/initramfs.gz" \
  -append "console=ttyS0 loglevel=4 panic=-1" \
  -serial "file:$TMP/console.log" -serial "pipe:$TMP/ctl" \
  -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
  -device virtio-net-pci,netdev=n0,romfile=,mac=02:00:00:00:02:02 \
  >"$TMP/qemu.log" 2>&1 &
QEMU_PID=$!
# Read-write opens: a FIFO opened so never blocks, even if qemu is gone.
exec 3<>"$TMP/ctl.in" 4<>"$TMP/ctl.out"

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
  local cmd=$* rc try
  cmd=${cmd//$'\n'/ }
  # "LENGTH COMMAND": the guest refuses (200) a line the serial port
  # garbled, and it is sent again.
  for try in 1 2 3; do
    printf '%s %s\n' "${#cmd}" "$cmd" >&3
    guest_read "$limit" && return 0
    rc=$?
    ((rc == 200)) || return "$rc"
    echo "guest: the line arrived garbled; sending it again" >&2
  done
  return "$rc"
}

boot_start=$SECONDS
ready=
while ((SECONDS - boot_start < 90)); do
  if IFS= read -r -t 1 ready <&4; then
    [[ $ready == @@ready* ]] && { GUEST_OK=1; break; }
  elif ! kill -0 "$QEMU_PID" 2>/dev/null; then
    break
  fi
done
if ((GUEST_OK)); then
  pass "guest booted (${ready#@@ready }) in $((SECONDS - boot_start)) s"
else
  if kill -0 "$QEMU_PID" 2>/dev/null; then
    fail "the guest did not come up within 90 s"
  else
    fail "qemu exited before the guest came up"
  fi
  tail -20 "$TMP/qemu.log" 2>/dev/null
  exit 1
fi

guest "/sbin/ip link set eth0 mtu 1600 up && /sbin/ip addr add 172.16.0.2/24 dev eth0 &&
/sbin/ip addr add 10.0.2.1/32 dev lo && /sbin/ip route add 10.0.1.0/24 via 172.16.0.1 src 10.0.2.1" ||
  { fail "guest network setup"; exit 1; }

# The guest's services, on its inner address: a 2 MB file over HTTP
# (busybox httpd) and a UDP echo (perl's built-in socket calls).
GUEST_SHA=$(guest -t 60 "mkdir -p /tmp/www && head -c 2097152 /dev/urandom >/tmp/www/file &&
httpd -p 10.0.2.1:8000 -h /tmp/www && sha256sum </tmp/www/file") && GUEST_SHA=${GUEST_SHA%% *} ||
  { fail "guest services: $GUEST_SHA"; exit 1; }
guest "perl -e 'socket(S, 2, 2, 17) or die; bind(S, pack(\"S n C4 x8\", 2, 9000, 10, 0, 2, 1)) or die;
while (1) { my \$a = recv(S, my \$d, 65535, 0); send(S, \$d, 0, \$a) if defined \$a }' >/dev/null 2>&1 &" ||
  { fail "guest UDP echo"; exit 1; }
# hA's: a 2 MB file over HTTP for the guest's wget.
mkdir -p "$TMP/www"
head -c 2097152 /dev/urandom >"$TMP/www/file"
HOST_SHA=$(sha256sum <"$TMP/www/file"); HOST_SHA=${HOST_SHA%% *}
write_httpd "$TMP/httpd.py"
in_a python3 "$TMP/httpd.py" "$TMP/www" 10.0.1.2 8000 >/dev/null 2>&1 &
PIDS+=($!)
cat >"$TMP/udp.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
ok = 0
for i in range(40):
    n = 1 + (i * 347) % 1400
    d = bytes((i + j) & 0xff for j in range(n))
    for _ in range(3):
        s.sendto(d, (sys.argv[1], 9000))
        try:
            r, _ = s.recvfrom(65536)
        except socket.timeout:
            continue
        if r == d:
            ok += 1
        break
print(ok)
PY
# esp.py CAPTURE_IF SPI SEND_IF: waits (10 s at most) for an ESP packet
# of SPI on CAPTURE_IF, then sends it again on SEND_IF (a replay), then a
# copy with a fresh sequence number (+1000) and one ciphertext byte
# flipped (tampered: the receiver's window accepts the number, its
# integrity check must refuse the packet). Prints the captured sequence.
cat >"$TMP/esp.py" <<'PY'
import select, socket, struct, sys, time
cap, spi, out = sys.argv[1], int(sys.argv[2], 16), sys.argv[3]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((cap, 0))
print("ready", flush=True)
deadline = time.time() + 10
while True:
    left = deadline - time.time()
    if left <= 0:
        print("no ESP packet of SPI %#x seen" % spi)
        sys.exit(1)
    if not select.select([s], [], [], left)[0]:
        continue
    f = s.recv(65535)
    if len(f) < 60 or f[12:14] != b"\x08\x00" or f[23] != 50:
        continue
    esp = 14 + (f[14] & 15) * 4
    if struct.unpack("!I", f[esp:esp + 4])[0] == spi:
        break
seq = struct.unpack("!I", f[esp + 4:esp + 8])[0]
time.sleep(0.3)  # the original arrives first
t = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
t.bind((out, 0))
t.send(f)
g = bytearray(f)
g[esp + 4:esp + 8] = struct.pack("!I", seq + 1000)
g[esp + 8 + 16 + 4] ^= 0x01
time.sleep(0.1)
t.send(bytes(g))
print("seq %d" % seq)
PY

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
  rm -f "$TMP/gw.sock"
  ip netns exec "$R" "$BIN" --no-pin -j "$1" -u "$TMP/gw.sock" \
    -h enc.packets -h dec.packets -h dec.auth_failures -h dec.replay_drops -h dec.drops \
    "$ROOT/conf/vpn-gateway-veth.click" ALG="$2" KEY_OUT="$3" KEY_IN="$4" \
    DEV1=r1 PEER=172.16.0.2 REMOTE=10.0.2.0/24 \
    >"$TMP/gw.out" 2>"$TMP/gw.err" &
  ROUTER_PID=$!
}
stop_gw() { # LABEL: SIGINT, and at most 10 s for paraclick to exit
  kill -INT "$ROUTER_PID"
  local rc=0 deadline=$((SECONDS + 10))
  while kill -0 "$ROUTER_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  if kill -0 "$ROUTER_PID" 2>/dev/null; then
    kill -KILL "$ROUTER_PID"
    fail "$1: paraclick did not stop within 10 s of SIGINT"
  fi
  wait "$ROUTER_PID" || rc=$?
  ROUTER_PID=
  ((rc == 0)) || { fail "$1: paraclick exited with status $rc"; cat "$TMP/gw.err"; }
}
handler() { # NAME: the value printed by -h at exit
  awk -v h="$1:" '$0 == h { getline; print; exit }' "$TMP/gw.out"
}
ctl_read() { # HANDLER: read from the running gateway
  timeout 5 "$BIN" ctl -u "$TMP/gw.sock" read "$1" 2>/dev/null
}
# sa_stat FILE SPI FIELD: from `ip -s xfrm state` output, the SA's packet
# count (FIELD packets) or a stats counter (replay-window, replay, failed).
sa_stat() {
  awk -v spi="$(printf '0x%08x' "$2")" -v f="$3" '
    /^src / { cur = 0 }
    $1 == "proto" && $2 == "esp" && index($4, spi) == 1 { cur = 1 }
    cur && f == "packets" && /^[ \t]*[0-9]+\(bytes\), [0-9]+\(packets\)/ {
      sub(/\(packets\).*/, ""); sub(/.*, /, ""); print; exit
    }
    cur && $1 == "replay-window" && $3 == "replay" {
      for (i = 1; i < NF; i += 2) if ($i == f) { print $(i + 1); exit }
    }' "$1"
}
# xfrm_errors: the guest's nonzero /proc/net/xfrm_stat counters.
xfrm_errors() {
  guest "awk '\$2 != 0 { printf \"%s %s \", \$1, \$2 }' /proc/net/xfrm_stat; echo"
}

run_case() { # ALG THREADS
  local alg=$1 threads=$2 label="$1 -j $2" kl ko ki out t0=$SECONDS
  kl=$(key_len "$alg")
  ko=0x$(hex "$kl"); ki=0x$(hex "$kl")
  if ! out=$(guest_keys "$alg" "$ko" "$ki" 2>&1); then
    fail "$label: the guest's ip xfrm state/policy: $out"
    return
  fi
  local err0
  err0=$(xfrm_errors)
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
    rm -f "$TMP/got"
    if in_a curl -sf --max-time 40 -o "$TMP/got" http://10.0.2.1:8000/file &&
       out=$(sha256sum <"$TMP/got") && [[ ${out%% *} == "$GUEST_SHA" ]]; then
      pass "$label: 2 MB TCP (HTTP) transfer guest -> hA, sha256 intact"
    else
      fail "$label: TCP transfer guest -> hA"
    fi
    rm -f "$TMP/got"
    out=$(guest -t 60 "timeout 50 wget -q -O /tmp/rx http://10.0.1.2:8000/file && sha256sum </tmp/rx; rm -f /tmp/rx" 2>&1 || true)
    if [[ ${out%% *} == "$HOST_SHA" ]]; then
      pass "$label: 2 MB TCP (HTTP) transfer hA -> guest, sha256 intact"
    else
      fail "$label: TCP transfer hA -> guest: $out"
    fi
    out=$(in_a timeout 60 python3 "$TMP/udp.py" 10.0.2.1 2>&1 || true)
    if [[ $out == 40 ]]; then
      pass "$label: UDP exchange, 40 datagrams of 1-1400 bytes echoed intact by the guest"
    else
      fail "$label: UDP exchange ($out of 40 intact)"
    fi
    # No error so far on either side.
    guest "/sbin/ip -s xfrm state" >"$TMP/sa0" || true
    local e
    e=$(xfrm_errors)
    if [[ $e == "$err0" && $(sa_stat "$TMP/sa0" 0x1001 replay) == 0 &&
          $(sa_stat "$TMP/sa0" 0x1001 failed) == 0 && $(sa_stat "$TMP/sa0" 0x1001 replay-window) == 0 &&
          $(sa_stat "$TMP/sa0" 0x2002 failed) == 0 ]]; then
      pass "$label: the guest's SAs count no replay, integrity or other error"
    else
      fail "$label: errors in the guest: xfrm_stat '$e' (was '$err0')"; cat "$TMP/sa0"
    fi
    # A replayed and a tampered packet each way.
    in_w timeout 15 python3 "$TMP/esp.py" w1 0x1001 tap0 >"$TMP/inj-g" 2>&1 &
    local pg=$!
    in_w timeout 15 python3 "$TMP/esp.py" w1 0x2002 w1 >"$TMP/inj-p" 2>&1 &
    local pp=$!
    wait_for 10 "the packet injectors" eval 'grep -q ready "$TMP/inj-g" && grep -q ready "$TMP/inj-p"'
    in_a ping -c 1 -W 3 10.0.2.1 >/dev/null 2>&1 || true
    wait "$pg" || fail "$label: injecting to the guest: $(cat "$TMP/inj-g")"
    wait "$pp" || fail "$label: injecting to paraclick: $(cat "$TMP/inj-p")"
    local deadline=$((SECONDS + 10))
    while ((SECONDS < deadline)); do
      guest "/sbin/ip -s xfrm state" >"$TMP/sa1" || break
      [[ $(sa_stat "$TMP/sa1" 0x1001 replay) == 1 && $(sa_stat "$TMP/sa1" 0x1001 failed) == 1 ]] && break
      sleep 0.2
    done
    e=$(xfrm_errors)
    if [[ $(sa_stat "$TMP/sa1" 0x1001 replay) == 1 && $(sa_stat "$TMP/sa1" 0x1001 failed) == 1 ]]; then
      pass "$label: Linux refused the replayed and the tampered packet (replay 1, failed 1; $e)"
    else
      fail "$label: Linux did not count the replayed and tampered packets"; cat "$TMP/sa1"
    fi
    wait_for 10 "paraclick to count the replayed and tampered packets" \
      eval '[[ $(ctl_read dec.replay_drops) == 1 && $(ctl_read dec.auth_failures) == 1 ]]' || true
  else
    fail "$label: no ping across the tunnel within 20 s"
    cat "$TMP/gw.err"
  fi
  stop_gw "$label"
  ((up)) || return 0
  local enc dec af rd
  enc=$(handler enc.packets); dec=$(handler dec.packets)
  af=$(handler dec.auth_failures); rd=$(handler dec.replay_drops)
  if [[ $rd == 1 && $af == 1 ]]; then
    pass "$label: paraclick refused the replayed and the tampered packet (replay_drops 1, auth_failures 1)"
  else
    fail "$label: paraclick counted replay drops ${rd:-?}, auth failures ${af:-?} (want 1 and 1)"
    cat "$TMP/gw.out"
  fi
  # Both sides agree on the packets of each SA.
  local gin gout
  gin=$(sa_stat "$TMP/sa1" 0x1001 packets); gout=$(sa_stat "$TMP/sa1" 0x2002 packets)
  if [[ -n $enc && $enc == "$gin" && -n $dec && $dec == "$gout" && $enc -gt 1000 ]]; then
    pass "$label: paraclick encrypted $enc packets and Linux decrypted $gin; Linux encrypted $gout and paraclick decrypted $dec"
  else
    fail "$label: SA counts disagree: paraclick encrypted ${enc:-?}, Linux decrypted ${gin:-?}; Linux encrypted ${gout:-?}, paraclick decrypted ${dec:-?}"
  fi
  echo "note  $label took $((SECONDS - t0)) s"
}

for alg in "${ALGS[@]}"; do
  for j in 1 2; do
    run_case "$alg" "$j"
  done
done

guest -t 5 "/sbin/ip -s xfrm state" >/dev/null || true
printf '%s\n' '11 poweroff -f' >&3 2>/dev/null || true
echo "note  run time $((SECONDS - T0)) s"
if [[ $FAILED -eq 0 ]]; then
  echo "ipsec-linux test: all checks passed"
else
  echo "ipsec-linux test: FAILED"
  exit 1
fi
