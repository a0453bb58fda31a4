#!/usr/bin/env bash
# fuzz.sh (`make fuzz SECONDS=N`): builds the libFuzzer targets of
# tests/fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (and FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: model files' checksums are
# not checked, so mutations reach the parser), then runs each for N seconds
# (default 60) from its seed corpus tests/fuzz/corpus/TARGET (copied to
# build-fuzz/corpus/, which grows run after run). Prints a line per target:
# runs, executions per second, coverage (libFuzzer's cov: edges and ft:
# features). Seed 1: a run from the committed corpus is repeatable (up to
# how far it gets in the time). A crash, a leak, a timeout (10 s an input) or a failed check
# fails it; the input that did it is in build-fuzz/crashes/: fix the bug,
# and keep the input as tests/fuzz/regressions/TARGET-what (replayed by
# every run) beside a unit test. Needs clang (and libomp-dev).
#   scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: config model vocab spm bpe metrics reader serve)
# JOBS=N runs N targets at a time (default 1; one core each).
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
TARGETS=${*:-"config model vocab spm bpe metrics reader serve"}
command -v clang >/dev/null || { echo "fuzz.sh: clang is not installed (apt-get install clang libomp-dev)" >&2; exit 1; }
B=build-fuzz
make -s BUILD="$B" CC=clang \
    CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" \
    lib-objs >/dev/null || { echo "fuzz.sh: build failed" >&2; exit 1; }
# shellcheck disable=SC2207
objs=($(make -s BUILD="$B" print-lib-objs))
libs=$(make -s print-ldlibs)
mkdir -p "$B/crashes"
JOBS=${JOBS:-1}
for t in $TARGETS; do
    [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
done
for t in $TARGETS; do
    # shellcheck disable=SC2086
    clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
        -fopenmp -Isrc $(pkg-config --cflags openblas libcjson zlib 2>/dev/null) \
        -o "$B/fuzz_$t" "tests/fuzz/fuzz_$t.c" "${objs[@]}" $libs || { echo "fuzz.sh: cannot link $t" >&2; exit 1; }
done
# fuzz_one TARGET: runs it, writes its summary to $B/fuzz_TARGET.summary;
# the exit status says whether it passed
fuzz_one() {
    local t=$1 log=$B/fuzz_$1.log sum=$B/fuzz_$1.summary
    mkdir -p "$B/corpus/$t"
    cp -n tests/fuzz/corpus/$t/* "$B/corpus/$t/" 2>/dev/null
    # inputs that once failed (tests/fuzz/regressions/TARGET-*) run first, every time
    cp tests/fuzz/regressions/"$t"-* "$B/corpus/$t/" 2>/dev/null
    OMP_NUM_THREADS=1 TFM_REEXEC=1 "$B/fuzz_$t" -seed=1 -max_total_time="$SECONDS_EACH" -timeout=10 \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$B/crashes/$t-" "$B/corpus/$t" >"$log" 2>&1
    local rc=$?
    local runs speed cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
    if [ "$rc" = 0 ]; then
        echo "fuzz: $t: ok, ${runs:-?} runs in ${SECONDS_EACH} s (${speed:-?}/s), ${cov:-no coverage line}" >"$sum"
    else
        { echo "fuzz: $t: FAILED (exit $rc); see $log and $B/crashes/"
          grep -m 5 -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log"; } >"$sum"
    fi
    return "$rc"
}
fail=0
running=0
for t in $TARGETS; do
    if [ "$JOBS" -le 1 ]; then
        fuzz_one "$t" || fail=1
        cat "$B/fuzz_$t.summary"
        continue
    fi
    fuzz_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || fail=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || fail=1
    running=$((running - 1))
done
[ "$JOBS" -le 1 ] || for t in $TARGETS; do cat "$B/fuzz_$t.summary"; done
exit $fail
