# Shared by the veth benchmarks (bench-veth.sh, bench-veth6.sh,
# livelock-veth.sh): sourced, not run. It builds the three-namespace
# topology, removes it on exit, and runs rate trials and the loss-free
# rate search.
#
#   h1 [paraclick generator] eth0 ==veth== r0 [router] r1 ==veth== eth0 h2
#
# The sourcing script calls `veth_setup NAME PREFIX FAMILY BIN SECS` first
# (NAME for messages, PREFIX for namespace names, FAMILY 4 or 6). It sets
# BIN, SECS, ROOT, H1, H2, R, TMP, NCPU, GEN_CPU, and, by family, the
# hosts' and router's addresses: H1_ADDR, H2_ADDR, R0_ADDR, R1_ADDR, PING
# (ping with the family's flag).
#
# The generator (GEN, set before veth_setup):
#   paraclick (default)  FastUDPSource -> ToDevice(eth0) on AF_PACKET, on
#                        GEN_CPU: a socket buffer and a copy per packet.
#   xdp                  scripts/lib/xdpgen.c: frames made in the kernel by
#                        BPF_PROG_RUN (live frames), one sending thread per
#                        CPU of GEN_CPUS (default GEN_CPU), compiled into
#                        TMP at setup (clang with the BPF target, libbpf-dev;
#                        ethtool). Its frames enter r0 through r0's NAPI
#                        poll, which needs an XDP program on r0 (the caller
#                        attaches one: scripts/lib/xdppass.bpf.c, or the
#                        router's own); h2's eth0 gets a sink (xdpsink in
#                        the same file: counted, then the UDP dropped). The poll runs
#                        in softirq on the sending CPU, at the end of each
#                        batch of 64 frames, as the paraclick generator's
#                        send ran r0's receive backlog there.
# Each trial leaves "ROUTER_NS GEN_CPU_S WALL_S WINDOW_NS WINDOW_S" in
# $TMP/trial.info: the router's CPU time over the trial (router_cpu_ns,
# below), the generator's CPU seconds (xdp only, else 0), the trial's wall
# seconds (generator start-up and the 0.3 s drain included), the router's
# CPU time from the trial's start until the generator exits, and the
# generator's sending time (xdp: its own clock from the first packet;
# paraclick: count / rate): the window in which packets were offered; and
# "SOFTIRQ_NS T0,T1,..." in $TMP/trial.more: the softirq time of all CPUs
# (/proc/stat) and each router worker thread's CPU ns, until the generator
# exits. CPU shares are of the window: a saturated router reads ~100%.

veth_setup() { # NAME PREFIX FAMILY BIN SECS
  NAME=$1
  local prefix=$2
  FAMILY=$3
  BIN=$(readlink -f "$4")
  SECS=$5
  ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  [[ $(id -u) -eq 0 ]] || { echo "$NAME: must run as root" >&2; exit 2; }
  [[ -x $BIN ]] || { echo "$NAME: no paraclick binary at $BIN (cargo build --release)" >&2; exit 2; }
  H1=$prefix-h1-$$
  H2=$prefix-h2-$$
  R=$prefix-r-$$
  TMP=$(mktemp -d /tmp/paraclick-bench.XXXXXX)
  ROUTER_PID=
  NCPU=$(nproc)
  GEN_CPU=$((NCPU - 1))
  GEN=${GEN:-paraclick}
  trap veth_cleanup EXIT
  [[ $GEN == xdp ]] && build_xdpgen
  trap 'exit 130' INT TERM

  ip netns add "$H1"
  ip netns add "$H2"
  ip netns add "$R"
  for ns in "$H1" "$H2" "$R"; do ip -n "$ns" link set lo up; done
  if [[ $FAMILY == 6 ]]; then
    H1_ADDR=2001:db8:1::2 H2_ADDR=2001:db8:2::2 R0_ADDR=2001:db8:1::1 R1_ADDR=2001:db8:2::1
    PING="ping -6"
    for ns in "$H1" "$H2" "$R"; do
      ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    done
  else
    H1_ADDR=10.0.1.2 H2_ADDR=10.0.2.2 R0_ADDR=10.0.1.1 R1_ADDR=10.0.2.1
    PING=ping
  fi
  veth_links 1
}

# veth_links QUEUES: (re)makes both veth pairs with QUEUES queues each way
# and the hosts' addresses and routes (METHOD XDP reads every receive
# queue of a device: one per thread).
veth_links() {
  local q=$1
  ip -n "$R" link del r0 2>/dev/null || true
  ip -n "$R" link del r1 2>/dev/null || true
  ip -n "$R" link add r0 numtxqueues "$q" numrxqueues "$q" type veth peer name eth0 netns "$H1" numtxqueues "$q" numrxqueues "$q"
  ip -n "$R" link add r1 numtxqueues "$q" numrxqueues "$q" type veth peer name eth0 netns "$H2" numtxqueues "$q" numrxqueues "$q"
  ip -n "$R" link set r0 address 02:00:00:00:01:01
  ip -n "$R" link set r1 address 02:00:00:00:02:01
  ip -n "$H1" link set eth0 address 02:00:00:00:01:02
  ip -n "$H2" link set eth0 address 02:00:00:00:02:02
  ip -n "$R" link set r0 up
  ip -n "$R" link set r1 up
  # Several queues: transmit queue i of r0 and r1 goes with CPU i (XPS),
  # so a router thread on CPU i sends on queue i, into h2's receive queue
  # i, as the frames it read came in on receive queue i (FromDevice's
  # FANOUT CPU, AF_XDP's queue i): no queue is shared by two CPUs.
  # Without it the kernel hashes each flow to a transmit queue.
  if [[ $q -gt 1 ]]; then xps "$q"; fi
  ip -n "$H1" link set eth0 up
  ip -n "$H2" link set eth0 up
  if [[ $GEN == xdp ]]; then
    # veth takes XDP-sent frames only in NAPI mode, which an XDP program
    # or GRO turns on. h2's eth0: the sink (xdppass.bpf.c's xdpsink),
    # which also takes the XDP redirect's frames; r0: the caller attaches
    # a program (FromDevice on AF_PACKET turns GRO off).
    ip -n "$H2" link set dev eth0 xdpdrv obj "$TMP/xdppass.o" program xdpsink
  fi
  if [[ $FAMILY == 6 ]]; then
    ip -n "$H1" -6 addr add "$H1_ADDR/64" dev eth0 nodad
    ip -n "$H2" -6 addr add "$H2_ADDR/64" dev eth0 nodad
    ip -n "$H1" -6 route add default via "$R0_ADDR"
    ip -n "$H2" -6 route add default via "$R1_ADDR"
  else
    ip -n "$H1" addr add "$H1_ADDR/24" dev eth0
    ip -n "$H2" addr add "$H2_ADDR/24" dev eth0
    ip -n "$H1" route add default via "$R0_ADDR"
    ip -n "$H2" route add default via "$R1_ADDR"
  fi
}

# xps QUEUES: transmit queue i of r0 and r1 on CPU i (of NCPU).
xps() {
  local i dev
  for dev in r0 r1; do
    for ((i = 0; i < $1; i++)); do
      ip netns exec "$R" sh -c "printf '%x' $((1 << (i % NCPU))) > /sys/class/net/$dev/queues/tx-$i/xps_cpus"
    done
  done
}

veth_cleanup() {
  set +e
  [[ -n $ROUTER_PID ]] && kill -INT "$ROUTER_PID" 2>/dev/null && wait "$ROUTER_PID" 2>/dev/null
  for ns in "$H1" "$H2" "$R"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$TMP"
}

# Compiles the XDP generator and the pass and drop programs into TMP.
build_xdpgen() {
  local clang=${CLANG:-} c arch
  if [[ -z $clang ]]; then
    for c in clang clang-{21..11}; do command -v "$c" >/dev/null && { clang=$c; break; }; done
  fi
  [[ -n $clang ]] || { echo "$NAME: GEN=xdp needs clang with the BPF target (apt-get install clang)" >&2; exit 2; }
  command -v ethtool >/dev/null || { echo "$NAME: GEN=xdp needs ethtool (apt-get install ethtool)" >&2; exit 2; }
  CLANG=$clang
  arch=$(uname -m)
  BPF_CFLAGS=(-O2 -g -target bpf -Wall "-I/usr/include/$arch-linux-gnu")
  "$CLANG" "${BPF_CFLAGS[@]}" -c "$ROOT/scripts/lib/xdpgen.bpf.c" -o "$TMP/xdpgen.bpf.o"
  "$CLANG" "${BPF_CFLAGS[@]}" -c "$ROOT/scripts/lib/xdppass.bpf.c" -o "$TMP/xdppass.o"
  cc -O2 -Wall -o "$TMP/xdpgen" "$ROOT/scripts/lib/xdpgen.c" -lbpf -lpthread
  cc -O2 -Wall -o "$TMP/handover" "$ROOT/scripts/lib/handover.c" -lpthread
}

# ns a cache line takes to go from one CPU to the other, CPU 0 (the
# router's first) and GEN_CPU (the generator's) handing it back and forth
# (scripts/lib/handover.c, under SCHED_FIFO; built with GEN=xdp only):
# "MEDIAN MIN MAX" of 5 rounds. Run it while neither the router nor the
# generator runs.
handover_ns() {
  chrt -f 50 "$TMP/handover" 0 "$GEN_CPU" 200000 5 2>/dev/null || echo "- - -"
}

# The router's CPU time so far, in ns: the threads of ROUTER_PID (a
# paraclick router: schedstat, time on a CPU including the softirqs that
# ran inside its system calls) plus the softirq time of the CPUs in
# ROUTER_SOFTIRQ_CPUS (comma-separated; /proc/stat, in ticks: the kernel's
# own forwarding, which runs in softirq).
router_cpu_ns() {
  local t sum=0 v
  for t in ${ROUTER_PID:+/proc/$ROUTER_PID/task/*}; do
    v=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null || echo 0)
    sum=$((sum + ${v:-0}))
  done
  if [[ -n ${ROUTER_SOFTIRQ_CPUS:-} ]]; then
    v=$(awk -v cpus="$ROUTER_SOFTIRQ_CPUS" -v hz="$(getconf CLK_TCK)" 'BEGIN { n = split(cpus, c, ","); for (i = 1; i <= n; i++) want["cpu" c[i]] = 1 }
      $1 in want { t += $8 } END { printf "%.0f\n", t * 1e9 / hz }' /proc/stat)
    sum=$((sum + v))
  fi
  echo "$sum"
}

# The router's worker threads' CPU time so far, in ns, one per worker
# (paraclick-0, paraclick-1, ...), space-separated.
router_thread_ns() {
  local t
  for t in ${ROUTER_PID:+/proc/$ROUTER_PID/task/*}; do
    [[ $(cat "$t/comm" 2>/dev/null) == paraclick-[0-9]* ]] || continue
    echo "$(cat "$t/comm") $(cut -d' ' -f1 "$t/schedstat")"
  done | sort | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 } END { print "" }'
}

# Softirq time of every CPU so far, in ns (/proc/stat, in ticks).
softirq_ns() {
  awk -v hz="$(getconf CLK_TCK)" '$1 ~ /^cpu[0-9]+$/ { t += $8 } END { printf "%.0f\n", t * 1e9 / hz }' /proc/stat
}

# Packets received by h2's eth0 so far.
rx_h2() { ip netns exec "$H2" awk '$1 == "eth0:" { print $3 }' /proc/net/dev; }

# CPU mask for r0's receive steering (Linux's forwarding).
rps() { ip netns exec "$R" sh -c "echo $1 > /sys/class/net/r0/queues/rx-0/rps_cpus"; }

# Linux forwards, on 1 or 2 CPUs (RPS).
kernel_router() { # THREADS
  if [[ $FAMILY == 6 ]]; then
    ip -n "$R" -6 addr add "$R0_ADDR/64" dev r0 nodad
    ip -n "$R" -6 addr add "$R1_ADDR/64" dev r1 nodad
    ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=1
  else
    ip -n "$R" addr add "$R0_ADDR/24" dev r0
    ip -n "$R" addr add "$R1_ADDR/24" dev r1
    ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
  fi
  if [[ $1 -eq 1 ]]; then rps 1; else rps 3; fi
}

kernel_router_off() {
  if [[ $FAMILY == 6 ]]; then
    ip -n "$R" -6 addr del "$R0_ADDR/64" dev r0
    ip -n "$R" -6 addr del "$R1_ADDR/64" dev r1
    ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=0
  else
    ip -n "$R" addr flush dev r0
    ip -n "$R" addr flush dev r1
    ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=0
  fi
  rps 0
}

# Starts paraclick as the router (on interfaces without addresses) and
# waits until PING_TARGET (default: the router's own r0 address) answers.
paraclick_router() { # CONF THREADS [EXTRA ARGS...]
  local conf=$1 threads=$2
  shift 2
  # ROUTER_DEFINES: NAME=VALUE definitions for the configuration.
  # shellcheck disable=SC2086
  ip netns exec "$R" "$BIN" -j "$threads" "$@" "$ROOT/$conf" ${ROUTER_DEFINES:-} >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  router_answers && return 0
  echo "$NAME: paraclick router did not start:" >&2
  cat "$TMP/router.err" >&2
  exit 1
}

# Whether the router just started (ROUTER_PID) answers PING_TARGET (or its
# own r0 address) within about 15 s.
router_answers() {
  for _ in $(seq 1 50); do
    ip netns exec "$H1" $PING -c 1 -W 0.3 "${PING_TARGET:-$R0_ADDR}" >/dev/null 2>&1 && return 0
    kill -0 "$ROUTER_PID" 2>/dev/null || return 1
  done
  return 1
}

# Starts real Click userlevel ($CLICK) as the router on paraclick's
# configuration CONF, made Click's: FromDevice and ToDevice with METHOD
# LINUX (a packet socket, one recvfrom or send a packet), without
# paraclick's RING_SIZE and PRIORITY, and SNIFFER true (Click's SNIFFER
# false installs iptables rules; the router's interfaces have no
# addresses and its namespace does not forward, so the kernel keeps out
# either way). Returns 1, with Click's messages, if it does not answer.
click_router() { # CONF
  sed -e 's/, RING_SIZE \$RING, PRIORITY \$PRIORITY//' -e 's/METHOD \$METHOD/METHOD LINUX/g' \
    "$ROOT/$1" >"$TMP/click-router.click"
  # shellcheck disable=SC2086
  ip netns exec "$R" "$CLICK" "$TMP/click-router.click" SNIFFER=true ${ROUTER_DEFINES:-} \
    >"$TMP/router.out" 2>"$TMP/router.err" &
  ROUTER_PID=$!
  router_answers && return 0
  echo "$NAME: Click did not start on $1 (row skipped):" >&2
  head -5 "$TMP/router.err" >&2
  paraclick_router_off
  return 1
}

paraclick_router_off() {
  kill -INT "$ROUTER_PID"
  wait "$ROUTER_PID" || true
  ROUTER_PID=
}

# The generator's configuration at RATE for N packets (one new flow per
# packet, small UDP frames), by family.
generator() { # RATE N
  if [[ $FAMILY == 6 ]]; then
    echo "src :: FastUDPSourceIP6($1, $2, 62, 02:00:00:00:01:02, $H1_ADDR, 1024,
                         02:00:00:00:01:01, $H2_ADDR, 9, INTERVAL 1, STOP true) -> ToDevice(eth0);"
  else
    echo "src :: FastUDPSource($1, $2, 60, 02:00:00:00:01:02, $H1_ADDR, 1024,
                         02:00:00:00:01:01, $H2_ADDR, 9, INTERVAL 1, STOP true) -> ToDevice(eth0);"
  fi
}

# One trial at RATE packets/s for SECS: prints "sent received achieved_rate"
# (and leaves the CPU figures in $TMP/trial.info).
trial() { # RATE
  local rate=$1 n before after out count achieved gcpu=0 c0 c1 w0 w1 win=0
  n=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { printf "%d", r * s }')
  before=$(rx_h2)
  c0=$(router_cpu_ns)
  local t0 s0
  t0=$(router_thread_ns)
  s0=$(softirq_ns)
  w0=$(date +%s%N)
  if [[ $GEN == xdp ]]; then
    # shellcheck disable=SC2086
    out=$(ip netns exec "$H1" ${GEN_CHRT:-} "$TMP/xdpgen" "$TMP/xdpgen.bpf.o" eth0 02:00:00:00:01:02 02:00:00:00:01:01 \
      "$H1_ADDR" "$H2_ADDR" "$rate" "$n" "${GEN_CPUS:-$GEN_CPU}" 2>/dev/null || true)
    read -r _ count _ win _ achieved _ gcpu <<<"$out"
  else
    out=$(ip netns exec "$H1" taskset -c "$GEN_CPU" "$BIN" --no-pin -h src.count -h src.rate \
      -e "$(generator "$rate" "$n")" 2>/dev/null)
    count=$(awk '/^src.count:/ { getline; print; exit }' <<<"$out")
    achieved=$(awk '/^src.rate:/ { getline; print; exit }' <<<"$out")
    win=$(awk -v c="${count:-0}" -v a="${achieved:-0}" 'BEGIN { if (a > 0) printf "%.6f", c / a; else print 0 }')
  fi
  # The offered window ends here: the router's CPU from the trial's start
  # to now (before the drain below) is its CPU while packets were offered,
  # plus what it spent idle while the generator started up.
  local cw tw sw
  cw=$(router_cpu_ns)
  tw=$(router_thread_ns)
  sw=$(softirq_ns)
  sleep 0.3
  after=$(rx_h2)
  w1=$(date +%s%N)
  c1=$(router_cpu_ns)
  # Per worker thread: its CPU ns over the trial, comma-separated.
  local per
  per=$(awk -v a="$t0" -v b="$tw" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
    for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? "," : ""), y[i] - x[i]; if (n == 0) printf "-" }')
  echo "$((c1 - c0)) ${gcpu:-0} $(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $((cw - c0)) ${win:-0}" >"$TMP/trial.info"
  echo "$((sw - s0)) $per" >"$TMP/trial.more"
  echo "${count:-0} $((after - before)) ${achieved:-0}"
}

# Highest loss-free rate for the running router, to 5%: prints it
# (packets/s). A rate is loss-free when the generator reached it (within
# 3%) and at most 0.1% of its packets did not arrive, in one of two trials
# (a loss can be another process's doing). Rates double from START until
# a loss (or MAX), then a binary search narrows the maximum.
# Also leaves in $TMP/search.info "NS SHARE LIMIT": the router's CPU ns per
# packet received at the highest loss-free rate, its CPU share there (of
# ROUTER_THREADS CPUs, default 1), and what limited the first lossy rate
# above it: "router-cpu" (the router used 90% of its CPUs or more), else
# "generator" (it fell more than 3% short of the rate; its own CPU share
# follows for GEN=xdp), else "loss@CPU%" (packets lost while the router
# had CPU to spare: its rings, or CPU that other processes took).
# When the generator shares the router's CPUs (-j 2 here: it spins on
# both, so CFS gives each of its threads about half a CPU), the router
# cannot have all of them: "test-bed@R/L" (the router used R of the L
# CPUs the generator left it, at least 90% of them, with L below its
# thread count: the test bed's limit, not the router's). And
# $TMP/search.more: "R G L CAP T0,T1,.. SIRQ" at that first lossy rate
# (router, generator and left CPUs in CPU-seconds a second, over all
# NCPU CPUs; CAP the rate L CPUs carry at the loss-free rate's ns/pkt;
# each worker thread's CPU share; all CPUs' softirq, CPU-s a second).
search() { # LABEL [START] [MAX]
  local label=$1 rate=${2:-50000} max=${3:-8000000} good=0 bad=0 sent recv ach ok
  local rns gcpu wall share pns gshare good_ns=0 good_share=0 limit=- threads=${ROUTER_THREADS:-1}
  local ngen sirq per
  ngen=$(awk -F, '{ print NF }' <<<"${GEN_CPUS:-$GEN_CPU}")
  echo "- - - - - -" >"$TMP/search.more"
  while :; do
    for _ in 1 2; do
      read -r sent recv ach < <(trial "$rate")
      read -r rns gcpu wall wns win <"$TMP/trial.info"
      # Shares are of the offered window (the generator's sending time):
      # the whole trial also holds its start-up and the drain.
      if awk -v w="$win" 'BEGIN { exit !(w > 0) }'; then wall=$win; else wns=$rns; fi
      read -r sirq per <"$TMP/trial.more"
      ok=$(awk -v s="$sent" -v r="$recv" -v a="$ach" -v t="$rate" \
        'BEGIN { print (s > 0 && a >= 0.97 * t && r >= 0.999 * s) ? 1 : 0 }')
      share=$(awk -v n="$wns" -v w="$wall" -v t="$threads" 'BEGIN { printf "%.2f", (w > 0) ? n / 1e9 / w / t : 0 }')
      pns=$(awk -v n="$rns" -v r="$recv" 'BEGIN { printf "%.0f", (r > 0) ? n / r : 0 }')
      gshare=$(awk -v c="$gcpu" -v w="$wall" -v g="$ngen" 'BEGIN { printf "%.2f", (w > 0) ? c / w / g : 0 }')
      printf '  %-16s offered %9d pps  generated %9.0f pps  sent %9d  received %9d  %-9s router CPU %4.0f%% %6d ns/pkt  gen CPU %4.0f%%  threads %s  softirq %s\n' \
        "$label" "$rate" "$ach" "$sent" "$recv" "$([[ $ok -eq 1 ]] && echo loss-free || echo LOSS)" \
        "$(awk -v s="$share" 'BEGIN { print 100 * s }')" "$pns" "$(awk -v s="$gshare" 'BEGIN { print 100 * s }')" \
        "$(awk -v p="$per" -v w="$wall" 'BEGIN { n = split(p, x, ","); for (i = 1; i <= n; i++) printf "%s%.0f%%", (i > 1 ? "," : ""), (w > 0) ? 100 * x[i] / 1e9 / w : 0 }')" \
        "$(awk -v s="$sirq" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0) ? s / 1e9 / w : 0 }')" >&2
      [[ $ok -eq 1 ]] && break
    done
    if [[ $ok -eq 1 ]]; then
      good=$rate good_ns=$pns good_share=$share
    else
      bad=$rate
      local used gen left
      used=$(awk -v n="$wns" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0) ? n / 1e9 / w : 0 }')
      gen=$(awk -v c="$gcpu" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0) ? c / w : 0 }')
      left=$(awk -v c="$NCPU" -v g="$gen" 'BEGIN { l = c - g; printf "%.2f", (l > 0) ? l : 0 }')
      echo "$used $gen $left $(awk -v l="$left" -v n="$good_ns" 'BEGIN { printf "%.0f", (n > 0) ? l * 1e9 / n : 0 }') $(awk -v p="$per" -v w="$wall" 'BEGIN {
          n = split(p, x, ","); for (i = 1; i <= n; i++) printf "%s%.2f", (i > 1 ? "," : ""), (w > 0) ? x[i] / 1e9 / w : 0 }') $(awk -v s="$sirq" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0) ? s / 1e9 / w : 0 }')" >"$TMP/search.more"
      if awk -v s="$share" 'BEGIN { exit !(s >= 0.9) }'; then
        limit=router-cpu
      elif [[ $GEN == xdp ]] && awk -v u="$used" -v l="$left" -v t="$threads" 'BEGIN { exit !(l < t && u >= 0.9 * l) }'; then
        limit="test-bed@$used/$left"
      elif awk -v a="$ach" -v t="$rate" 'BEGIN { exit !(a < 0.97 * t) }'; then
        limit=generator
        [[ $GEN == xdp ]] && limit="generator@$(awk -v s="$gshare" 'BEGIN { printf "%.0f%%", 100 * s }')"
      else
        limit="loss@$(awk -v s="$share" 'BEGIN { printf "%.0f%%", 100 * s }')"
      fi
    fi
    if [[ $bad -eq 0 ]]; then
      rate=$((rate * 2))
      [[ $rate -gt $max ]] && break
    else
      [[ $((bad - good)) -le $((good / 20 + 1000)) ]] && break
      rate=$(((good + bad) / 2))
    fi
  done
  echo "$good_ns $good_share $limit" >"$TMP/search.info"
  echo "$good"
}

# Warms the neighbour caches through the router before measuring.
prime() { ip netns exec "$H1" $PING -c 2 -i 0.2 -W 1 "$H2_ADDR" >/dev/null 2>&1 || true; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# A summary row: label, threads, rate and its ratio to BASE.
row() { # LABEL THREADS RATE BASE
  printf '%-54s %3s %12d %10s\n' "$1" "$2" "$3" "$(ratio "$3" "$4")"
}
