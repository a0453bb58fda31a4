#!/usr/bin/env bash
# run_all.sh [SUITE ...]: runs the C unit tests and every tests/cli_*.sh (or
# the suites named: unit, cli_train, ...), adds up their "N passed, N
# failed" lines and prints the total as the last line.
set -u
cd "$(dirname "$0")/.."
# Sleeping (not spinning) OpenMP workers: the suite runs many tiny kernels and
# spinning threads starve each other on a shared 2-core machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
total_p=0 total_f=0
run() {
    local name=$1; shift
    local out
    out=$("$@" 2> >(sed "s|^|[$name] |" >&2))
    local rc=$?
    local line
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$line" ]; then
        echo "[$name] no summary line (exit $rc)" >&2
        total_f=$((total_f + 1))
        return
    fi
    local p f
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
    [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
    echo "[$name] $line"
    total_p=$((total_p + p)); total_f=$((total_f + f))
}
suites=("$@")
if [ ${#suites[@]} = 0 ]; then
    suites=(unit)
    for t in tests/cli_*.sh; do
        [ "$t" = tests/cli_lib.sh ] || suites+=("$(basename "$t" .sh)")
    done
fi
for s in "${suites[@]}"; do
    if [ "$s" = unit ]; then run unit "${RUN_TESTS:-build/run_tests}"
    elif [ -f "tests/$s.sh" ]; then run "$s" bash "tests/$s.sh"
    else echo "[$s] no such suite" >&2; total_f=$((total_f + 1)); fi
done
echo "$total_p passed, $total_f failed"
[ "$total_f" = 0 ]
