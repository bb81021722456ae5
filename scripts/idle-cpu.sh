#!/usr/bin/env bash
# CPU used by a router whose pull path is idle (conf/idle-pull.click: empty
# queues drained by an Unqueue and a pull Discard) over SECONDS seconds: the
# pullers sleep on the queues' empty notifiers and the workers park, so it
# should be well under 1% of a CPU. CPU time is the child's getrusage
# (microsecond resolution), wall time measured around it.
#
#   scripts/idle-cpu.sh [SECONDS [THREADS [CONF]]]   (defaults 3 s, -j 2,
#                                                     conf/idle-pull.click)
#
# conf/idle-script.click adds a Script polling a handler every 2 ms: its
# worker should nap between the timer's firings too.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
threads=${2:-2}
conf=${3:-conf/idle-pull.click}
bin=${PARACLICK:-target/release/paraclick}
python3 - "$bin" "$threads" "$secs" "$conf" <<'PY'
import resource, subprocess, sys, time
bin, threads, secs, conf = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def run(t):
    """CPU seconds and wall seconds of one run of TIME=t."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([bin, "-j", threads, conf, f"TIME={t}"], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall
# Start-up (configuration, clock calibration) costs the same in both runs:
# the difference is what the idle seconds cost.
c0, w0 = run(0)
c1, w1 = run(secs)
idle_cpu, idle_wall = c1 - c0, w1 - w0
print(f"-j {threads}: start-up run {w0:.2f} s wall, {c0*1000:.1f} ms CPU; "
      f"{secs:g} s run {w1:.2f} s wall, {c1*1000:.1f} ms CPU")
print(f"{conf}, idle, -j {threads}: {idle_cpu*1000:.1f} ms CPU over {idle_wall:.2f} s idle "
      f"= {100*idle_cpu/idle_wall:.3f}% of one CPU")
PY
