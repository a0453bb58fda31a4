#!/usr/bin/env bash
# bench_busy.sh: `tfm translate` and `tfm train` on a machine that is doing
# something else. With 0, 1 and 2 other CPU-bound processes (busy loops) on
# the machine, times the default settings against --threads 1 and
# --threads N (N: the cores) and prints a markdown table.
# The goal (BENCHMARKS.md): the default within 10% of the best of the two
# under load, and no slower than --threads N on an idle machine.
#
# Made to give a readable answer on a machine that other jobs also load:
# - each repeat runs the three variants back to back, in an order that
#   rotates from repeat to repeat, and the ratio default / best-of-the-two
#   is taken within the repeat (the three runs saw about the same load), so
#   a drift of the load between repeats cancels; the table gives the median
#   of those ratios and their range, and a verdict only when the whole range
#   is on one side of 1.10 ("noisy" otherwise);
# - CPU seconds (user + system) beside the wall seconds: threads that spin
#   while waiting show there even when the wall time is lost in the noise;
# - the load average before each row, the busy loops included.
#
# usage: scripts/bench_busy.sh MODEL [SRC]
#   env: TFM (./tfm), REPEAT (5), LOADS ("0 1 2"), TRAIN (1: also time 20
#        steps of tfm train, configs/tiny.json on Multi30k with a vocabulary
#        learned beforehand; 0: translation only),
#        SERVE (1: also `tfm serve`, SERVE_CLIENTS (8) clients of build/serve_load for
#        SERVE_SECS (8) seconds each, sentences/s; 0: not),
#        EXTRA_ENV (environment for every tfm run, e.g. OMP_WAIT_POLICY=ACTIVE)
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_busy.sh MODEL [SRC]}
SRC=${2:-data/test_2016_flickr.de}
TFM=${TFM:-./tfm}
REPEAT=${REPEAT:-5}
LOADS=${LOADS:-"0 1 2"}
TRAIN=${TRAIN:-1}
SERVE=${SERVE:-1}
SERVE_SECS=${SERVE_SECS:-8}
SERVE_CLIENTS=${SERVE_CLIENTS:-8}
LOADGEN=${LOADGEN:-build/serve_load}
N=$(nproc)
W=$(mktemp -d /tmp/tfm-busy.XXXXXX)
busy=()
spid=
cleanup() {
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
[ -f "$SRC" ] || make -s data || exit 1
if [ "$TRAIN" = 1 ]; then
    [ -f data/train.de.gz ] || make -s data || exit 1
    "$TFM" bpe learn -q -s 4000 -o "$W/vocab.txt" data/train.de.gz data/train.en.gz 2>/dev/null ||
        "$TFM" bpe learn -s 4000 -o "$W/vocab.txt" data/train.de.gz data/train.en.gz >/dev/null 2>&1 ||
        { echo "bench_busy: tfm bpe learn failed" >&2; exit 1; }
fi

if [ "$SERVE" = 1 ] && [ ! -x "$LOADGEN" ]; then
    make -s "$LOADGEN" || exit 1
fi

# one run of "$@" (stdout and stderr dropped): appends "wall cpu" seconds to $1
run_s() {
    local out=$1; shift
    env ${EXTRA_ENV:-} /usr/bin/time -f '%e %U %S' -o "$W/time" "$@" >/dev/null 2>&1 ||
        { echo "bench_busy: failed: $*" >&2; exit 1; }
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$W/time" >>"$out"
}
# the median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { printf "%.2f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# RUN PREFIX ARGS...: REPEAT times, the three variants in a rotating order,
# each `RUN PREFIX.VARIANT ARGS... [--threads 1|N]` (no thread count: the default)
rotate() {
    local run=$1 prefix=$2 i k v
    shift 2
    local -a variants=(default 1 n)
    : >"$prefix.default"; : >"$prefix.1"; : >"$prefix.n"
    for i in $(seq 0 $((REPEAT - 1))); do
        for k in 0 1 2; do
            v=${variants[$(((i + k) % 3))]}
            case $v in
                default) "$run" "$prefix.default" "$@" ;;
                1) "$run" "$prefix.1" "$@" --threads 1 ;;
                n) "$run" "$prefix.n" "$@" --threads "$N" ;;
            esac
        done
    done
}

# one row: the command's three variants, and their medians
bench() {
    local what=$1 load=$2; shift 2
    "$@" >/dev/null 2>&1       # warm-up (page cache, the re-exec)
    local before
    before=$(cut -d' ' -f1 /proc/loadavg)
    rotate run_s "$W/t" "$@"
    # per repeat: default / best of the two (wall), paired line by line
    paste "$W/t.default" "$W/t.1" "$W/t.n" |
        awk '{ m = $3 < $5 ? $3 : $5; print $1 / m }' >"$W/ratio"
    local d one n dc onec nc r lo hi
    d=$(cut -d' ' -f1 "$W/t.default" | median); dc=$(cut -d' ' -f2 "$W/t.default" | median)
    one=$(cut -d' ' -f1 "$W/t.1" | median); onec=$(cut -d' ' -f2 "$W/t.1" | median)
    n=$(cut -d' ' -f1 "$W/t.n" | median); nc=$(cut -d' ' -f2 "$W/t.n" | median)
    r=$(median <"$W/ratio")
    lo=$(sort -g "$W/ratio" | head -n 1); hi=$(sort -g "$W/ratio" | tail -n 1)
    local verdict
    verdict=$(awk -v lo="$lo" -v hi="$hi" 'BEGIN {
        v = hi <= 1.10 ? "within 10%" : lo > 1.10 ? "**over 10%**" : "noisy"; print v }')
    printf '| %s | %s | %s | %s / %s | %s / %s | %s / %s | %.2f (%.2f-%.2f) %s |\n' \
        "$what" "$load" "$before" "$d" "$dc" "$one" "$onec" "$n" "$nc" "$r" "$lo" "$hi" "$verdict"
}

# one server run: `tfm serve "$@"` with 8 clients for SERVE_SECS seconds after
# 2 s of warm-up; appends "sentences/s cpu-seconds" to $1
serve_run() {
    local out=$1; shift
    env ${EXTRA_ENV:-} "$TFM" serve -m "$MODEL" --port 0 -q "$@" 2>"$W/serve.err" &
    spid=$!
    local port= i
    for i in $(seq 600); do
        port=$(sed -n 's|^tfm: serving .* on http://127.0.0.1:\([0-9]*\)$|\1|p' "$W/serve.err")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "bench_busy: the server did not start: $(cat "$W/serve.err")" >&2; exit 1; }
    "$LOADGEN" -p "$port" -i "$SRC" -c "$SERVE_CLIENTS" -d 2 >/dev/null 2>&1
    local c0 c1
    c0=$(awk '{ print $14 + $15 }' "/proc/$spid/stat")
    "$LOADGEN" -p "$port" -i "$SRC" -c "$SERVE_CLIENTS" -d "$SERVE_SECS" >"$W/load.out" 2>&1
    c1=$(awk '{ print $14 + $15 }' "/proc/$spid/stat")
    kill -TERM "$spid"; wait "$spid" 2>/dev/null; spid=
    local rate
    rate=$(sed -n 's|.* sent/s \([0-9.]*\).*|\1|p' "$W/load.out")
    [ -n "$rate" ] || { echo "bench_busy: serve_load said: $(cat "$W/load.out")" >&2; exit 1; }
    awk -v r="$rate" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v s="$SERVE_SECS" \
        'BEGIN { printf "%.1f %.2f\n", r, c / hz / s }' >>"$out"
}

# the server row: sentences/s (higher is better), best / default
bench_serve() {
    local load=$1
    local before
    before=$(cut -d' ' -f1 /proc/loadavg)
    rotate serve_run "$W/s"
    paste "$W/s.default" "$W/s.1" "$W/s.n" |
        awk '{ m = $3 > $5 ? $3 : $5; print m / $1 }' >"$W/ratio"
    local r lo hi
    r=$(median <"$W/ratio")
    lo=$(sort -g "$W/ratio" | head -n 1); hi=$(sort -g "$W/ratio" | tail -n 1)
    local verdict
    verdict=$(awk -v lo="$lo" -v hi="$hi" 'BEGIN {
        v = hi <= 1.10 ? "within 10%" : lo > 1.10 ? "**over 10%**" : "noisy"; print v }')
    printf '| serve, %s clients: sentences/s (CPU cores) | %s | %s | %s (%s) | %s (%s) | %s (%s) | %.2f (%.2f-%.2f) %s |\n' \
        "$SERVE_CLIENTS" "$load" "$before" \
        "$(cut -d' ' -f1 "$W/s.default" | median)" "$(cut -d' ' -f2 "$W/s.default" | median)" \
        "$(cut -d' ' -f1 "$W/s.1" | median)" "$(cut -d' ' -f2 "$W/s.1" | median)" \
        "$(cut -d' ' -f1 "$W/s.n" | median)" "$(cut -d' ' -f2 "$W/s.n" | median)" \
        "$r" "$lo" "$hi" "$verdict"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $N cores;" \
     "$("$TFM" --version | grep 'OpenBLAS kernel'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median wall / CPU seconds of $REPEAT runs each, in rotating order; default / best: the"
echo "median (range) of each repeat's own ratio of wall times (serve: best / default of sentences/s); ${EXTRA_ENV:+env $EXTRA_ENV; }$(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| command | busy loops added | load before | default | --threads 1 | --threads $N | default / best |"
echo "|---|---|---|---|---|---|---|"
for load in $LOADS; do
    for _ in $(seq "$load"); do
        sh -c 'while :; do :; done' &
        busy+=($!)
    done
    sleep 1
    bench "translate $(wc -l <"$SRC") lines" "$load" "$TFM" translate -m "$MODEL" -q -i "$SRC"
    if [ "$TRAIN" = 1 ]; then
        bench "train 20 steps (tiny)" "$load" "$TFM" train configs/tiny.json -q --restart \
            --set data.vocab="$W/vocab.txt" --set train.out_dir="$W/ck" \
            --set train.model="$W/model.tfm" --set train.max_steps=20 \
            --set train.max_time_s=0 --set train.valid_every=1000
    fi
    [ "$SERVE" = 1 ] && bench_serve "$load"
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    wait "${busy[@]}" 2>/dev/null
    busy=()
done
