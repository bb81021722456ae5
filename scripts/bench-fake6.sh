#!/usr/bin/env bash
# IPv6 against IPv4 forwarding on the fake-router pattern (sources and
# Discards, no devices): conf/fake-iprouter6.click against
# conf/fake-iprouter.click, in the same run, at -j 1.
#
# Usage:  scripts/bench-fake6.sh [PATH/TO/paraclick]
#
# Prints two tables:
#   1. `paraclick bench -n $PACKETS` (default 2,000,000; 3 runs each, median):
#      Mpps and cycles per packet
#      from the cycle counter -- noisy on a shared machine;
#   2. with valgrind installed, instructions per packet from callgrind:
#      (Ir at 2N - Ir at N) / (packets at 2N - packets at N), so start-up
#      and tear-down cancel out -- exact and repeatable, the figure to
#      compare when the machine is busy.
set -euo pipefail

BIN=$(readlink -f "${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -x $BIN ]] || { echo "bench-fake6: no paraclick binary at $BIN (cargo build --release)" >&2; exit 2; }
V4=$ROOT/conf/fake-iprouter.click
V6=$ROOT/conf/fake-iprouter6.click

echo "== paraclick bench (cycle counter) =="
"$BIN" bench -n "${PACKETS:-2000000}" --count out0.count --count out1.count "$V4" "$V6"

command -v valgrind >/dev/null || { echo "(valgrind missing: no instruction counts)"; exit 0; }
TMP=$(mktemp -d /tmp/paraclick-fake6.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
N=${N:-20000}

ir() { # CONF N: prints "instructions packets"
  local out
  out=$(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$BIN" --no-pin \
    -h out0.count -h out1.count "$1" N="$2" 2>"$TMP/err") || { cat "$TMP/err" >&2; exit 1; }
  local pk ins
  pk=$(awk '/^out[01].count:/ { getline; s += $1 } END { print s }' <<<"$out")
  ins=$(awk '/^summary:/ { print $2 }' "$TMP/cg")
  echo "$ins $pk"
}

echo
echo "== callgrind, instructions per forwarded packet (N=$N and $((2 * N)) per source) =="
printf '%-34s %14s %14s\n' "configuration" "instr/packet" "vs IPv4"
declare -A PER
for c in "$V4" "$V6"; do
  read -r i1 p1 < <(ir "$c" "$N")
  read -r i2 p2 < <(ir "$c" $((2 * N)))
  PER[$c]=$(awk -v a="$i1" -v b="$i2" -v p="$p1" -v q="$p2" 'BEGIN { printf "%.1f", (b - a) / (q - p) }')
done
for c in "$V4" "$V6"; do
  printf '%-34s %14s %14s\n' "conf/$(basename "$c")" "${PER[$c]}" \
    "$(awk -v a="${PER[$c]}" -v b="${PER[$V4]}" 'BEGIN { printf "%.2f", a / b }')"
done
