#!/usr/bin/env bash
# Instructions and cycles a packet of Click's fake-iprouter at BURST 1, 4
# and 32, and where they go (issue 43; docs/PERFORMANCE.md, "Where a
# packet goes"), for the dynamic router and for a program built from the
# same file (`paraclick build`).
#
#   scripts/where-packets.sh [BIN]        # BIN: a release paraclick
#   NOBUILD=1 scripts/where-packets.sh    # the dynamic router only
#   CYCLES_ONLY=1 BUILT=PROG scripts/where-packets.sh   # cycles only, quiet machine
#   scripts/where-packets.sh --check [BIN]   # a quick run of the method
#
# For each BURST and each program:
#   instructions a packet  callgrind (`--dump-instr=yes`) of two runs,
#       N=N1 and N=N2 packets a source: the difference of the totals over
#       the difference of the packets the sources sent (their `count`
#       handlers), so start-up and exit drop out;
#   where they go  the same difference per instruction address, each
#       charged to a part by the functions inlined at it
#       (scripts/lib/where_packets.py): an element's own code by its
#       class, the packet pool's allocation and free, the runtime's hop
#       dispatch (Cx and the peer tables), its node wrappers, the
#       scheduler's pass and task runs, and `other` for the rest; code in
#       libc (memcpy) goes to the part that called it. The script stops
#       unless the parts sum to the difference of callgrind's totals;
#   cycles a packet  user + system CPU seconds (GNU time) of a run of
#       NLONG packets a source, times the TSC's rate, over the packets:
#       the median of RUNS rounds, each running every program once in
#       turn (start-up included: below GNU time's 10 ms resolution).
#       CYCLES_ONLY=1 takes only these (the instruction counts do not
#       need a quiet machine; the cycles do);
#   the router's own profile  (dynamic router) `--report costs`: each
#       element's cycles a packet from the runtime's cycle counter,
#       summed by class, the median of RUNS runs (a thread preempted in a
#       timed run charges the wait to one element), with the cost of
#       reading the counter inside each (a profiled run takes several
#       times the plain one's cycles), and the same scaled so the
#       profiled tasks' cycles equal the measured cycles a packet.
#
# Environment: CONF (default conf/fake-iprouter.click: two InfiniteSources
# of N packets each), BURSTS ("1 4 32"), N1 (100000), N2 (200000), NLONG
# (5000000), RUNS (3), NOBUILD=1 (no built program), BUILT=PROGRAM (a
# program already built from CONF, instead of building one), TSC_MHZ (else as
# scripts/device-terms.sh reads it), OUT (a directory to keep the
# callgrind files and the programs in; default a temporary one).
# A program is built once (BURST is a define: it changes no element's
# type, and the program checks at start that its compiled elements are
# the configuration's) and run at each BURST. Building needs
# CARGO_TARGET_DIR (or the source's target/) to hold the release build of
# the workspace BIN was built from (README, "A program for one
# configuration"). valgrind, GNU time, python3 and addr2line are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

CHECK=0
if [[ ${1:-} == --check ]]; then
  CHECK=1
  shift
fi
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/paraclick}
CONF=${CONF:-conf/fake-iprouter.click}
BURSTS=${BURSTS:-1 4 32}
N1=${N1:-100000}
N2=${N2:-200000}
NLONG=${NLONG:-5000000}
RUNS=${RUNS:-3}
NOBUILD=${NOBUILD:-0}
if ((CHECK)); then
  # A quick run of everything but the build: small runs, one round.
  BURSTS=${CHECK_BURSTS:-1 32}
  N1=2000 N2=4000 NLONG=20000 RUNS=1 NOBUILD=1
fi
PY=scripts/lib/where_packets.py

for tool in valgrind /usr/bin/time python3 addr2line; do
  command -v "$tool" > /dev/null || { echo "where-packets: needs $tool" >&2; exit 1; }
done
[[ -x $BIN ]] || { echo "where-packets: no paraclick binary at $BIN" >&2; exit 1; }

if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  TMP=$OUT
else
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
fi

. scripts/lib/tsc.sh
MHZ=$(tsc_mhz)

# The packets the sources sent: the sum of every InfiniteSource's count
# (`-h InfiniteSource.count` prints each as a line of its own).
sent() { # FILE of -h output
  awk '/^[0-9]+$/ { s += $1 } END { print s + 0 }' "$1"
}

# callgrind of one run; prints the packets sent.
cg_run() { # PROG BURST N OUTFILE
  local prog=$1 burst=$2 n=$3 out=$4
  nice -n 10 valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$out" \
    "$prog" "${CONF_ARGS[@]}" N="$n" BURST="$burst" -h InfiniteSource.count \
    > "$out.handlers" 2> "$out.err" || { cat "$out.err" >&2; exit 1; }
  # The program's own warnings (valgrind's lines start with ==PID==), such
  # as a built program that found its configuration changed and ran
  # dynamically.
  if grep -v '^==' "$out.err" | grep -q -i "warn"; then
    echo "where-packets: $prog warned:" >&2
    grep -v '^==' "$out.err" | grep -i "warn" >&2
    exit 1
  fi
  sent "$out.handlers"
}

# User + system seconds of one run of NLONG packets a source, appended to
# $TMP/secs.LABEL.BURST; the packets it sent to $TMP/packets.LABEL.BURST.
time_run() { # LABEL PROG BURST
  local label=$1 prog=$2 burst=$3
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$prog" "${CONF_ARGS[@]}" N="$NLONG" BURST="$burst" \
    -h InfiniteSource.count > "$TMP/time.handlers" 2> /dev/null
  awk '{ print $1 + $2 }' "$TMP/time" >> "$TMP/secs.$label.$burst"
  sent "$TMP/time.handlers" > "$TMP/packets.$label.$burst"
}

# The median of a run's seconds as cycles a packet, and the range.
cycles() { # LABEL BURST -> "cycles a packet" "min-max seconds"
  sort -g "$TMP/secs.$1.$2" | awk -v mhz="$MHZ" -v p="$(cat "$TMP/packets.$1.$2")" '
    { s[NR] = $1 } END {
      m = (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
      printf "%.1f %.2f-%.2f\n", m * mhz * 1e6 / p, s[1], s[NR] }'
}

CONF_ARGS=("$CONF")
declare -a PROGS=("dynamic:$BIN")
if [[ -n ${BUILT:-} ]]; then
  PROGS+=("built:$BUILT")
elif [[ $NOBUILD != 1 ]]; then
  echo "where-packets: building a program of $CONF ($(date -u +%H:%M) UTC)" >&2
  "$BIN" build "$CONF" -o "$TMP/built" >&2
  PROGS+=("built:$TMP/built")
fi

echo "# where-packets: $CONF, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), TSC $MHZ MHz"
echo "# instructions: callgrind, N=$N2 minus N=$N1 a source; cycles: CPU seconds of N=$NLONG a source, median of $RUNS rounds alternating the programs"
echo
# The timed runs first, in rounds alternating the programs, so both meet
# the same load; then the callgrind runs, whose counts do not depend on it.
for burst in $BURSTS; do
  rm -f "$TMP"/secs.*."$burst"
  for ((i = 0; i < RUNS; i++)); do
    for p in "${PROGS[@]}"; do
      time_run "${p%%:*}" "${p#*:}" "$burst"
    done
  done
done
declare -a SUMMARY=()
if [[ ${CYCLES_ONLY:-0} == 1 ]]; then
  echo "| BURST | program | cycles a packet | CPU s (N=$NLONG a source, $RUNS rounds) |"
  echo "|---|---|---|---|"
  for burst in $BURSTS; do
    for p in "${PROGS[@]}"; do
      read -r cyc range < <(cycles "${p%%:*}" "$burst")
      echo "| $burst | ${p%%:*} | $cyc | $range |"
    done
  done
  exit 0
fi
for burst in $BURSTS; do
  for p in "${PROGS[@]}"; do
    label=${p%%:*} prog=${p#*:}
    a=$(cg_run "$prog" "$burst" "$N1" "$TMP/cg.$label.$burst.1")
    b=$(cg_run "$prog" "$burst" "$N2" "$TMP/cg.$label.$burst.2")
    packets=$((b - a))
    ((packets > 0)) || { echo "where-packets: the runs sent $a and $b packets" >&2; exit 1; }
    read -r cyc range < <(cycles "$label" "$burst")
    extra=()
    if [[ $label == dynamic ]]; then
      reports=()
      for ((i = 0; i < RUNS; i++)); do
        "$prog" "${CONF_ARGS[@]}" N="$NLONG" BURST="$burst" --report costs \
          -h InfiniteSource.count > "$TMP/profile.$burst.$i" 2>&1
        reports+=("$TMP/profile.$burst.$i")
      done
      extra=(--profile "$(IFS=,; echo "${reports[*]}")")
    fi
    python3 "$PY" table "$prog" "$TMP/cg.$label.$burst.1" "$TMP/cg.$label.$burst.2" "$packets" \
      --cycles "$cyc" --title "BURST $burst, $label ($cyc cycles a packet, CPU $range s)" \
      "${extra[@]}" | tee "$TMP/table.$label.$burst"
    ins=$(sed -n 's/^| \*\*total\*\* | \*\*\([0-9,.]*\)\*\*.*/\1/p' "$TMP/table.$label.$burst")
    SUMMARY+=("| $burst | $label | $ins | $cyc | $range |")
  done
done
echo "### Instructions a packet by part"
echo
cols=()
for burst in $BURSTS; do
  for p in "${PROGS[@]}"; do
    cols+=("B$burst ${p%%:*}=$TMP/table.${p%%:*}.$burst")
  done
done
python3 "$PY" merge "${cols[@]}"
echo
echo "### Summary"
echo
echo "| BURST | program | instructions a packet | cycles a packet | CPU s (N=$NLONG a source, $RUNS rounds) |"
echo "|---|---|---|---|---|"
printf '%s\n' "${SUMMARY[@]}"
