#!/usr/bin/env bash
# bench_busy.sh: `tfm translate` and `tfm train` on a machine that is doing
# something else. With 0, 1 and 2 other CPU-bound processes (busy loops) on
# the machine, times the default settings against --threads 1 and
# --threads N (N: the cores), alternating them REPEAT times in one run, and
# prints a markdown table of median seconds and default / best-of-the-two.
# The goal (BENCHMARKS.md): the default within 10% of the best of the two
# under load, and no slower than --threads N on an idle machine.
#
# usage: scripts/bench_busy.sh MODEL [SRC]
#   env: TFM (./tfm), REPEAT (5), LOADS ("0 1 2"), TRAIN (1: also time 40
#        steps of tfm train on tests/data/mini; 0: translation only),
#        EXTRA_ENV (environment for every tfm run, e.g. OMP_WAIT_POLICY=ACTIVE)
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_busy.sh MODEL [SRC]}
SRC=${2:-data/test_2016_flickr.de}
TFM=${TFM:-./tfm}
REPEAT=${REPEAT:-5}
LOADS=${LOADS:-"0 1 2"}
TRAIN=${TRAIN:-1}
N=$(nproc)
W=$(mktemp -d /tmp/tfm-busy.XXXXXX)
busy=()
cleanup() {
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
[ -f "$SRC" ] || make -s data || exit 1
cp tests/data/mini/* "$W"/

# seconds of one run of "$@" (stdout and stderr dropped)
run_s() {
    local s e
    s=$(date +%s.%N)
    env ${EXTRA_ENV:-} "$@" >/dev/null 2>&1 || { echo "bench_busy: failed: $*" >&2; exit 1; }
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# one row: the command's three variants, alternated
bench() {
    local what=$1 load=$2; shift 2
    local i v
    : >"$W/t.default"; : >"$W/t.1"; : >"$W/t.n"
    "$@" >/dev/null 2>&1       # warm-up (page cache, the re-exec)
    for i in $(seq "$REPEAT"); do
        run_s "$@" >>"$W/t.default"
        run_s "$@" --threads 1 >>"$W/t.1"
        run_s "$@" --threads "$N" >>"$W/t.n"
    done
    local d one n
    d=$(median <"$W/t.default"); one=$(median <"$W/t.1"); n=$(median <"$W/t.n")
    v=$(awk -v d="$d" -v a="$one" -v b="$n" 'BEGIN { m = a < b ? a : b; printf "%.2f", d / m }')
    echo "| $what | $load | $d | $one | $n | $v |"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $N cores;" \
     "$("$TFM" --version | grep 'OpenBLAS kernel'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median seconds of $REPEAT runs each, alternated; ${EXTRA_ENV:+env $EXTRA_ENV; }$(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| command | other busy processes | default | --threads 1 | --threads $N | default / best |"
echo "|---|---|---|---|---|---|"
for load in $LOADS; do
    for _ in $(seq "$load"); do
        sh -c 'while :; do :; done' &
        busy+=($!)
    done
    sleep 1
    bench "translate $(wc -l <"$SRC") lines" "$load" "$TFM" translate -m "$MODEL" -q -i "$SRC"
    if [ "$TRAIN" = 1 ]; then
        bench "train 40 steps (mini)" "$load" "$TFM" train "$W/mini.json" -q --restart \
            --set train.out_dir="$W/ck" --set train.model="$W/model.tfm" --set train.max_steps=40
    fi
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    wait "${busy[@]}" 2>/dev/null
    busy=()
done
