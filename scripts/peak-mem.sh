#!/usr/bin/env bash
# Peak resident memory of Click's fake IP router, measured repeatably
# (issue 43; docs/PERFORMANCE.md, "Memory").
#
#   bash scripts/peak-mem.sh PARACLICK [CLICK] [N...]
#   ROUNDS=3 CONF=conf/fake-iprouter.click
#
# Each binary runs `BIN CONF N=n -h out0.count` (one thread, BURST 1) for
# each packet count n (default 100000 1000000 3000000), ROUNDS times,
# alternating binaries. Before every run the binary's own pages are dropped
# from the page cache (posix_fadvise DONTNEED): how a file's pages sit in
# the cache (large folios from a copy with big writes, or pages read by
# readahead) decides how many of them the kernel maps at each fault, so
# without this the same binary peaks anywhere from 8 to 11 MB. A small
# exit hook (LD_PRELOAD, built here with cc) prints the kernel's VmHWM
# (the peak), RssAnon (heap, pools, stacks: the router's own, independent
# of the page cache) and RssFile (mapped pages of the binary and its
# libraries) as the process exits. Prints one line per binary and n, the
# range over the rounds, in kB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
BINS=("$1")
shift
if [ $# -ge 1 ] && [ -x "$1" ]; then BINS+=("$1"); shift; fi
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(100000 1000000 3000000)
ROUNDS=${ROUNDS:-3}
CONF=${CONF:-conf/fake-iprouter.click}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/hook.c" <<'C'
#include <stdio.h>
#include <string.h>
__attribute__((destructor)) static void report(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6) || !strncmp(line, "RssAnon:", 8) ||
            !strncmp(line, "RssFile:", 8))
            fprintf(stderr, "peakmem %s", line);
    fclose(f);
}
C
cc -shared -fPIC -O2 -o "$TMP/hook.so" "$TMP/hook.c"
evict() {
    python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fdatasync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
for n in "${COUNTS[@]}"; do
    for r in $(seq "$ROUNDS"); do
        for b in "${BINS[@]}"; do
            evict "$b"
            LD_PRELOAD="$TMP/hook.so" "$b" "$CONF" "N=$n" -h out0.count \
                2>"$TMP/err" >"$TMP/out" || { cat "$TMP/err" >&2; exit 1; }
            [ "$(head -1 "$TMP/out")" = "$n" ] || { echo "$b: bad count" >&2; exit 1; }
            awk -v b="$b" -v n="$n" '/^peakmem/ { v[$2] = $3 }
                END { print b, n, v["VmHWM:"], v["RssAnon:"], v["RssFile:"] }' \
                "$TMP/err" >> "$TMP/rows"
        done
    done
done
printf '%-40s %9s %15s %15s %15s\n' binary packets "peak kB" "anon kB" "file kB"
awk '{ k = $1 " " $2
       if (!(k in seen)) { seen[k] = 1; order[++m] = k }
       for (i = 3; i <= 5; i++) {
           if (!((k, i, "lo") in v) || $i < v[k, i, "lo"]) v[k, i, "lo"] = $i
           if (!((k, i, "hi") in v) || $i > v[k, i, "hi"]) v[k, i, "hi"] = $i } }
     END { for (j = 1; j <= m; j++) { split(order[j], p, " ")
           printf "%-40s %9s", p[1], p[2]
           for (i = 3; i <= 5; i++) printf " %15s", v[order[j], i, "lo"] "-" v[order[j], i, "hi"]
           printf "\n" } }' "$TMP/rows"
