#!/usr/bin/env bash
# The VPN benchmark of the SMP Click paper (Figures 6 and 7) on this
# machine: IPv4 packets of 64 and 1400 bytes (inner packet, before ESP)
# through the encrypting half of the gateway (IPsecESPTunnelEncap), for
# each algorithm, at -j 1 and -j 2, with `paraclick bench` (packets per
# second and TSC cycles per packet, all threads counted; median of
# ROUNDS runs), and the 2-thread/1-thread scaling ratio, twice:
#  - sa "shared": one SA used by both threads (each thread reserves its
#    sequence numbers 16 at a time from the SA's counter);
#  - sa "per-thread": an SA (element) per source, nothing shared.
#
#   two InfiniteSources (BURST 32) -> enc :: IPsecESPTunnelEncap -> c :: Counter -> Discard
#
# At -j 2 StaticThreadSched puts one source on each thread; at -j 1 both
# run on thread 0. Then `openssl speed -evp aes-128-gcm` at the same
# sizes: the cipher's own cost on this machine (one thread), the physical
# limit of the AES-GCM rows.
#
# A last section runs the paper's whole VPN workload (Figures 5 and 6 in
# Click's split elements, conf/vpn-click-style-pcap.click's gateway):
# 64-byte plain packets are routed, encrypted and encapsulated, and
# 64-byte ESP packets from the peer are authenticated, decrypted and
# routed, half and half, by one router whose SAs (atomic sequence number
# out, shared replay window in) every thread uses. At -j 2 each thread has
# its own plain and ESP source (the flows split by input, as SMP Click's
# static scheduling of the VPN split them by interface). It prints the
# scaling beside SMP Click's (Figure 7: 23,000 to 47,000 packets/s from 1
# to 2 CPUs, 3DES and SHA-1).
#
# GATEWAY_ONLY=1 runs only that section (and the null reference): the
# short run for a shared machine.
#
# RT=1 (as root) runs the whole benchmark under `chrt -f 50` (SCHED_FIFO):
# its threads take the cores from the machine's other work (the kernel
# still leaves that 5% of each second), so the wall-clock rows show the
# router's own scaling on a machine that other jobs keep busy. Without
# it, on a loaded machine, -j 2's wall clock counts the time a thread
# waits for a core (the cpu-cyc/pkt columns of the gateway leave it out).
#
# Usage: scripts/bench-vpn.sh [PATH/TO/paraclick] [PACKETS] [ROUNDS]
#   (defaults: target/release/paraclick, 2000000 packets per run (fewer
#   for 3DES at 1400 bytes), 3 rounds)
#
# The scaling ratios need a second core that is free: the "null" reference
# row (the harness without crypto) shows what -j 2 gives at that moment.
#
# Prints figures only. Compare with VPP's published ~2.1 Mpps per core for
# 64-byte AES-GCM-128 (its cycles per packet: the CPU's clock / 2.1e6).
set -euo pipefail

if [[ -n ${RT:-} && -z ${BENCH_VPN_RT:-} ]]; then
  exec env BENCH_VPN_RT=1 chrt -f 50 bash "$0" "$@"
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(readlink -f "${1:-$ROOT/target/release/paraclick}")
N=${2:-2000000}
ROUNDS=${3:-3}
[[ -x $BIN ]] || { echo "bench-vpn: no paraclick binary at $BIN (cargo build --release -p paraclick)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/paraclick-bench-vpn.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

key() { # LEN
  python3 -c "print('5a' * $1)"
}

packet_hex() { # LEN: an IPv4/UDP packet of LEN bytes, checksum set
  python3 - "$1" <<'PY'
import struct, sys
n = int(sys.argv[1])
h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, n, 0, 0, 64, 17, 0,
                          bytes([10, 0, 1, 2]), bytes([10, 0, 2, 2])))
s = sum(struct.unpack("!10H", h))
s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
h[10:12] = struct.pack("!H", ~s & 0xffff)
u = struct.pack("!HHHH", 1234, 5678, n - 20, 0)
print((bytes(h) + u + bytes((i & 0xff) for i in range(n - 28))).hex())
PY
}

conf() { # ALG KEYLEN LEN THREADS FILE MODE(shared|per-thread)
  local alg=$1 kl=$2 len=$3 threads=$4 file=$5 mode=$6 data
  data=$(packet_hex "$len")
  {
    echo "define(\$N 1000000);"
    echo "DriverManager(pause, pause);"
    echo "c :: Counter -> Discard;"
    for s in 0 1; do
      [[ $mode == per-thread ]] && spi=0x100$((s + 1)) || spi=0x1001
      if [[ $mode == per-thread || $s -eq 0 ]]; then
        echo "enc$s :: IPsecESPTunnelEncap($spi, $alg, 0x$(key "$kl"), 192.0.2.1, 198.51.100.1) -> c;"
      fi
      tgt=enc$s; [[ $mode == shared ]] && tgt=enc0
      echo "s$s :: InfiniteSource(DATA \\<$data>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false) -> $tgt;"
    done
    if [[ $threads -eq 2 ]]; then echo "StaticThreadSched(s0 0, s1 1);"; fi
  } >"$file"
}

GHZ=
ghz() { # reads the cycle counter's clock from a bench output once
  [[ -z $GHZ ]] && GHZ=$(sed -n 's/.*cycle counter \([0-9.]*\) GHz.*/\1/p' <<<"$1")
  return 0
}
if [[ -z ${GATEWAY_ONLY:-} ]]; then
printf '%-14s %-10s %6s %4s %10s %10s %10s\n' algorithm sa bytes -j kpps "cyc/pkt" "scaling"
for spec in ${ALGS:-aes128gcm16:20 aes256gcm16:36 aes128-sha1:36 aes256-sha256:64 3des-sha1:44}; do
  alg=${spec%%:*}; kl=${spec##*:}
  for len in 64 1400; do
    n=$N
    [[ $alg == 3des-sha1 && $len -eq 1400 ]] && n=$((N / 10))
    [[ $len -eq 1400 && $alg != 3des-sha1 ]] && n=$((N / 2))
    for mode in shared per-thread; do
    declare -A cpps=()
    for j in 1 2; do
      f=$TMP/vpn-$alg-$len-$j-$mode.click
      conf "$alg" "$kl" "$len" "$j" "$f" "$mode"
      # Each source sends n/2, so a run is n packets.
      out=$("$BIN" bench -j "$j" -r "$ROUNDS" -n $((n / 2)) --count c.count "$f")
      [[ -z $GHZ ]] && GHZ=$(sed -n 's/.*cycle counter \([0-9.]*\) GHz.*/\1/p' <<<"$out")
      row=$(tail -1 <<<"$out")
      if grep -q error <<<"$row"; then echo "$out" >&2; exit 1; fi
      read -r _ _pk m cpp _ <<<"$row"
      # Rates from cycles per packet (all threads' cycles), so that slow
      # cases keep their precision: rate = clock * threads / cyc/pkt.
      kpps=$(python3 -c "print(f'{$GHZ * 1e6 * $j / $cpp:.1f}')")
      cpps[$j]=$cpp
      if [[ $j -eq 2 ]]; then
        sc=$(python3 -c "print(f'{2 * ${cpps[1]} / $cpp:.2f}x')")
      else
        sc=
      fi
      printf '%-14s %-10s %6s %4s %10s %10s %10s\n' "$alg" "$mode" "$len" "$j" "$kpps" "$cpp" "$sc"
    done
    unset cpps
    done
  done
done
if command -v openssl >/dev/null; then
  echo
  echo "openssl speed -evp aes-128-gcm (one thread, the cipher alone: its physical limit here)"
  printf '%-14s %6s %10s %10s\n' cipher bytes kpps "cyc/pkt"
  for len in 64 1400; do
    kbs=$(openssl speed -evp aes-128-gcm -bytes "$len" -seconds 2 2>/dev/null |
      awk 'tolower($1) == "aes-128-gcm" {sub(/k$/, "", $2); print $2}')
    python3 -c "k=$kbs*1e3/$len; print(f'{\"openssl-gcm128\":<14} {$len:>6} {k/1e3:>10.1f} {${GHZ:-0}*1e9/k:>10.0f}')"
  done
fi
fi # GATEWAY_ONLY
# References for the scaling ratios, 64-byte packets:
#  - the same harness without encryption (Null): what -j 2 gives on this
#    machine at the moment (other load on it shows here first);
#  - aes128gcm16 with one SA per thread (two elements): the cost of
#    sharing one SA (its sequence counter) between threads;
#  - decryption (IPsecESPTunnelUnencap, REPLAY 0 so the same packet may
#    repeat), one SA shared by both threads. The ESP packets are made by
#    paraclick itself.
#  - decryption with the anti-replay window on (below).
# One row: NAME at -j THREADS, the configuration's body given, its two
# sources s0 and s1 sending N/2 packets each (on threads 0 and 1 at -j 2,
# with the other placements in $PLACE). "lost": the share of the N packets
# not counted at c (refused as replays, or left in a queue at the stop);
# cycles per packet are per packet counted.
PLACE=
variant() { # NAME THREADS FILE-BODY...
  local name=$1 j=$2 f=$TMP/$1-$2.click out row m cpp sc pk lost; shift 2
  printf '%s\n' "define(\$N 1000000);" "DriverManager(pause, pause);" "$@" >"$f"
  if [[ $j -eq 2 ]]; then echo "StaticThreadSched(s0 0, s1 1${PLACE:+, $PLACE});" >>"$f"; fi
  out=$("$BIN" bench -j "$j" -r "$ROUNDS" -n $((N / 2)) --count c.count "$f")
  ghz "$out"
  row=$(tail -1 <<<"$out")
  if grep -q error <<<"$row"; then echo "$out" >&2; exit 1; fi
  read -r _ pk m cpp _ <<<"$row"
  kpps=$(python3 -c "print(f'{$GHZ * 1e6 * $j / $cpp:.1f}')")
  if [[ $j -eq 2 ]]; then sc=$(python3 -c "print(f'{2 * $VC1 / $cpp:.2f}x')"); else VC1=$cpp; sc=; fi
  lost=$(python3 -c "print(f'{100 * (1 - $pk / $N):.2f}%')")
  printf '%-30s %4s %10s %10s %10s %8s\n' "$name" "$j" "$kpps" "$cpp" "$sc" "$lost"
}
D64=$(packet_hex 64)
SRC="InfiniteSource(DATA \\<$D64>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false)"
K=0x$(key 20)
ENC="IPsecESPTunnelEncap(0x1001, aes128gcm16, $K, 192.0.2.1, 198.51.100.1)"
echo
printf '%-30s %4s %10s %10s %10s %8s\n' "64-byte reference" -j kpps "cyc/pkt" scaling lost
for j in 1 2; do
  variant null $j "e :: Null -> c :: Counter -> Discard;" "s0 :: $SRC -> e;" "s1 :: $SRC -> e;"
done
[[ -n ${GATEWAY_ONLY:-} ]] || for j in 1 2; do
  variant gcm128-sa-per-thread $j "c :: Counter -> Discard;" "s0 :: $SRC -> $ENC -> c;" \
    "s1 :: $SRC -> IPsecESPTunnelEncap(0x1002, aes128gcm16, $K, 192.0.2.1, 198.51.100.1) -> c;"
done
[[ -n ${GATEWAY_ONLY:-} ]] || for spec in aes128gcm16:20 aes128-sha1:36 3des-sha1:44; do
  alg=${spec%%:*}; kl=${spec##*:}
  # One ESP packet from paraclick's own encryption, as hex.
  printf '%s\n' "InfiniteSource(DATA \\<$D64>, LIMIT 1, STOP true)" \
    "  -> IPsecESPTunnelEncap(0x1001, $alg, 0x$(key "$kl"), 192.0.2.1, 198.51.100.1)" \
    "  -> ToDump($TMP/esp.pcap, ENCAP IP);" >"$TMP/mk.click"
  "$BIN" "$TMP/mk.click" >/dev/null
  ESP=$(python3 -c "import sys; d=open('$TMP/esp.pcap','rb').read(); print(d[40:].hex())")
  ESRC="InfiniteSource(DATA \\<$ESP>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false)"
  for j in 1 2; do
    variant "decrypt-$alg" $j \
      "d :: IPsecESPTunnelUnencap(0x1001, $alg, 0x$(key "$kl"), REPLAY 0) -> c :: Counter -> Discard;" \
      "s0 :: $ESRC -> d;" "s1 :: $ESRC -> d;"
  done
done
# Decryption with the anti-replay window on, as a gateway runs it. The
# packets need fresh sequence numbers, so each thread encrypts its own
# packets (one outbound SA shared by the threads) and decrypts them at
# once with one inbound SA whose window both threads update: REPLAY 32
# (Linux's default) and 64 (the element's default), against REPLAY 0 for
# the window's cost. At -j 2 each thread's numbers come in blocks of 16
# interleaved with the other's, so a thread that falls behind the other by
# more than the window sees its packets refused as too old ("lost").
[[ -n ${GATEWAY_ONLY:-} ]] || for spec in aes128gcm16:20 aes128-sha1:36; do
  alg=${spec%%:*}; kl=${spec##*:}
  for r in 0 32 64; do
    for j in 1 2; do
      variant "enc+dec-$alg-replay$r" $j \
        "e :: IPsecESPTunnelEncap(0x1001, $alg, 0x$(key "$kl"), 192.0.2.1, 198.51.100.1);" \
        "d :: IPsecESPTunnelUnencap(0x1001, $alg, 0x$(key "$kl"), REPLAY $r);" \
        "e -> d -> c :: Counter -> Discard;" "s0 :: $SRC -> e;" "s1 :: $SRC -> e;"
    done
  done
done

# Two SAs: steer each SA to one thread, or let the threads share them.
# Each source's packets alternate between the two SAs (RoundRobinSwitch),
# as packets of several tunnels arrive mixed on each receive queue:
#  - shared: each thread encrypts what it receives, with whichever SA;
#  - steered: each SA's packets are handed through a Queue to the one
#    thread that uses that SA (half of each thread's packets cross);
#  - split-at-input: each source sends one SA's packets (what a NIC whose
#    receive queues are chosen by SA would give: steering at no cost).
if [[ -z ${GATEWAY_ONLY:-} ]]; then
  echo
  echo "Two SAs (aes128gcm16), each source's packets alternating between them"
  printf '%-30s %4s %10s %10s %10s %8s\n' "sa mode, bytes" -j kpps "cyc/pkt" scaling lost
  for len in 64 1400; do
    LSRC="InfiniteSource(DATA \\<$(packet_hex "$len")>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false)"
    A="a :: IPsecESPTunnelEncap(0x1001, aes128gcm16, $K, 192.0.2.1, 198.51.100.1) -> c;"
    B="b :: IPsecESPTunnelEncap(0x1002, aes128gcm16, $K, 192.0.2.1, 198.51.100.1) -> c;"
    for mode in shared steered split-at-input; do
      for j in 1 2; do
        case $mode in
        shared)
          variant "sa-$mode-$len" $j "c :: Counter -> Discard;" "$A" "$B" \
            "s0 :: $LSRC -> r0 :: RoundRobinSwitch; r0[0] -> a; r0[1] -> b;" \
            "s1 :: $LSRC -> r1 :: RoundRobinSwitch; r1[0] -> a; r1[1] -> b;" ;;
        steered)
          PLACE="ua 0, ub 1"
          variant "sa-$mode-$len" $j "c :: Counter -> Discard;" "$A" "$B" \
            "qa :: Queue(256) -> ua :: Unqueue(32) -> a;" \
            "qb :: Queue(256) -> ub :: Unqueue(32) -> b;" \
            "s0 :: $LSRC -> r0 :: RoundRobinSwitch; r0[0] -> qa; r0[1] -> qb;" \
            "s1 :: $LSRC -> r1 :: RoundRobinSwitch; r1[0] -> qa; r1[1] -> qb;"
          PLACE= ;;
        split-at-input)
          variant "sa-$mode-$len" $j "c :: Counter -> Discard;" "$A" "$B" \
            "s0 :: $LSRC -> a;" "s1 :: $LSRC -> b;" ;;
        esac
      done
    done
  done
fi


# The whole VPN workload through Click's split elements (see the top).
gateway_conf() { # ALG KEYLEN THREADS FILE ESP-HEX
  local alg=$1 kl=$2 j=$3 f=$4 esp=$5
  {
    echo "define(\$N 1000000);"
    echo "DriverManager(pause, pause, pause, pause);"
    echo "sat :: IPsecSATable(0x1001 $alg 0x$(key "$kl") 192.0.2.1 198.51.100.1,"
    echo "                    0x2002 $alg 0x$(key "$kl") 198.51.100.1 192.0.2.1 REPLAY 0);"
    echo "rt :: RadixIPsecLookup(192.0.2.1/32 0, 10.0.2.0/24 198.51.100.1 1 0x1001,"
    echo "                       10.0.1.0/24 2, 198.51.100.1/32 3);"
    echo "rt[0] -> StripIPHeader -> IPsecAuthHMACSHA1(1) -> IPsecAES(0) -> IPsecDES(0)"
    echo "      -> IPsecESPUnencap -> CheckIPHeader -> rt;"
    echo "rt[1] -> IPsecESPEncap -> IPsecAES(1) -> IPsecDES(1) -> IPsecAuthHMACSHA1(0)"
    echo "      -> IPsecEncap(esp, TTL 64) -> rt;"
    echo "c :: Counter -> Discard;"
    echo "rt[2] -> DecIPTTL -> c; rt[3] -> DecIPTTL -> c;"
    for t in 0 1; do
      echo "p$t :: InfiniteSource(DATA \\<$(packet_hex 64)>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false) -> CheckIPHeader -> rt;"
      echo "e$t :: InfiniteSource(DATA \\<$esp>, LIMIT \$N, BURST 32, STOP true, TIMESTAMP false) -> CheckIPHeader -> rt;"
    done
    if [[ $j -eq 2 ]]; then echo "StaticThreadSched(p0 0, e0 0, p1 1, e1 1);"; fi
  } >"$f"
}
# CPU time per packet of one plain run (user + system time of the whole
# process, all threads): unlike the cycle counter, it does not count the
# time a thread waits for a core the machine's other load holds, so on a
# shared machine 2 x cpu(-j1) / cpu(-j2) is the scaling the router would
# have with two free cores (contention inside it, on the shared SAs'
# atomic counter and window lock, or cache lines, still costs CPU time
# and shows).
cpu_cpp() { # FILE THREADS PACKETS-PER-SOURCE -> "cycles/packet packets"
  local f=$1 j=$2 n=$3 out cpu
  if command -v perf >/dev/null && perf stat -x, -e task-clock true >/dev/null 2>&1; then
    out=$(perf stat -x, -e task-clock -o "$TMP/perf.txt" "$BIN" --no-pin -j "$j" "$f" N="$n" -h c.count 2>&1)
    cpu=$(awk -F, '/task-clock/ {print $1 / 1000}' "$TMP/perf.txt")   # msec -> s
  else
    out=$(/usr/bin/time -f 'TIME %U %S' "$BIN" --no-pin -j "$j" "$f" N="$n" -h c.count 2>&1)
    cpu=$(awk '/^TIME / {print $2 + $3}' <<<"$out")
  fi
  # One -h prints the value alone (the count: the only all-digit line).
  awk -v g="$GHZ" -v cpu="$cpu" '/^[0-9]+$/ {printf "%.0f %d\n", cpu * g * 1e9 / $1, $1; exit}' <<<"$out"
}
echo
echo "Whole VPN gateway (Click's split elements), 64-byte packets, half encrypted, half decrypted"
echo "(kpps and cyc/pkt: paraclick bench, wall clock; cpu-cyc/pkt: process CPU time; SMP Click: Figure 7)"
printf '%-14s %4s %10s %10s %10s %12s %10s %16s\n' algorithm -j kpps "cyc/pkt" scaling "cpu-cyc/pkt" "cpu-scal" "SMP Click"
for spec in ${GW_ALGS:-3des-sha1:44 aes128gcm16:20 aes128-sha1:36}; do
  alg=${spec%%:*}; kl=${spec##*:}
  # One ESP packet from the peer (SPI 0x2002, to 192.0.2.1), 64-byte inner
  # packet to the local site 10.0.1.2, made by paraclick's fused element.
  printf '%s\n' "InfiniteSource(DATA \\<$(packet_hex 64 | python3 -c 'import sys; h=bytearray.fromhex(sys.stdin.read().strip()); h[16:20]=bytes([10,0,1,2]); h[12:16]=bytes([10,0,2,2]); print(h.hex())')>, LIMIT 1, STOP true)" \
    "  -> CheckIPHeader" \
    "  -> IPsecESPTunnelEncap(0x2002, $alg, 0x$(key "$kl"), 198.51.100.1, 192.0.2.1)" \
    "  -> ToDump($TMP/gw-esp.pcap, ENCAP IP);" >"$TMP/gw-mk.click"
  "$BIN" "$TMP/gw-mk.click" >/dev/null
  ESP=$(python3 -c "d=open('$TMP/gw-esp.pcap','rb').read(); print(d[40:].hex())")
  GC1=
  for j in 1 2; do
    f=$TMP/gw-$alg-$j.click
    gateway_conf "$alg" "$kl" "$j" "$f" "$ESP"
    # Four sources of n/4 each: a run is n packets.
    out=$("$BIN" bench -j "$j" -r "$ROUNDS" -n $((N / 4)) --count c.count "$f")
    ghz "$out"
    row=$(tail -1 <<<"$out")
    if grep -q error <<<"$row"; then echo "$out" >&2; exit 1; fi
    read -r _ _ m cpp _ <<<"$row"
    kpps=$(python3 -c "print(f'{$GHZ * 1e6 * $j / $cpp:.1f}')")
    read -r ccpp _ <<<"$(cpu_cpp "$f" "$j" "$N")"
    if [[ $j -eq 2 ]]; then
      sc=$(python3 -c "print(f'{2 * $GC1 / $cpp:.2f}x')"); ref="2.04x (47k/23k)"
      csc=$(python3 -c "print(f'{2 * $CC1 / $ccpp:.2f}x')")
    else
      GC1=$cpp; CC1=$ccpp; sc=; csc=; ref="23 kpps at -j1"
    fi
    printf '%-14s %4s %10s %10s %10s %12s %10s %16s\n' "$alg" "$j" "$kpps" "$cpp" "$sc" "$ccpp" "$csc" "$ref"
  done
done

if [[ -n $GHZ ]]; then
  python3 -c "g=$GHZ; print(f'VPP reference: 2.1 Mpps/core for 64-byte AES-GCM-128 = {g*1e9/2.1e6:.0f} cycles/packet at this machine\'s {g:.2f} GHz (VPP measured on a faster CPU)')"
fi
