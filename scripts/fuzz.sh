#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), one after the
# other, with its committed seed corpus, niced, one fuzzer process at a
# time. Prints per target the executions, the coverage (libFuzzer's cov
# and ft) and any crash; exits non-zero if a target crashed, hung, leaked
# or ran out of memory.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs nightly and cargo-fuzz (cargo install cargo-fuzz). New corpus
# entries go to fuzz/target/corpus/TARGET (not committed); crash inputs
# to fuzz/artifacts/TARGET/. A crash input, once fixed, belongs in
# fuzz/regressions/TARGET/, where `cargo test -p paraclick-fuzz-targets`
# replays it.
set -u
secs=${1:-60}
shift || true
cd "$(dirname "$0")/../fuzz"
mkdir -p target
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
for t in "${targets[@]}"; do
    nice -n 10 cargo +nightly fuzz build -O "$t" >/dev/null 2>target/build.log || {
        cat target/build.log
        exit 2
    }
done
failed=0
printf '%-20s %6s %10s %8s %8s %8s  %s\n' target secs execs cov ft corpus result
for t in "${targets[@]}"; do
    work=target/corpus/$t
    mkdir -p "$work" "artifacts/$t"
    log=target/fuzz-$t.log
    start=$(date +%s)
    # The committed seeds are read, new inputs written to the work corpus.
    nice -n 10 cargo +nightly fuzz run -O "$t" "$work" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 </dev/null >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -ao '[0-9]*$' | tail -1)
    last=$(grep -aE '^#[0-9]+' "$log" | tail -1)
    cov=$(grep -ao 'cov: [0-9]*' <<<"$last" | grep -ao '[0-9]*')
    ft=$(grep -ao 'ft: [0-9]*' <<<"$last" | grep -ao '[0-9]*')
    corp=$(grep -ao 'corp: [0-9]*' <<<"$last" | grep -ao '[0-9]*')
    result=ok
    if [ $rc -ne 0 ]; then
        failed=1
        art=$(grep -ao 'artifact_prefix=[^;]*; Test unit written to [^ ]*' "$log" | sed 's/.*written to //' | tail -1)
        kind=$(grep -aoE 'ERROR: libFuzzer: [a-z-]+|panicked at [^,]*' "$log" | head -1)
        result="CRASH ($kind) ${art:-see $log}"
    fi
    printf '%-20s %6s %10s %8s %8s %8s  %s\n' "$t" "$took" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $failed
