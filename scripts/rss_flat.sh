#!/usr/bin/env bash
# rss_flat.sh: does tfm's memory stay flat over a long run? Samples the
# resident set (VmRSS) of one `tfm translate` over a stream of LINES lines,
# or of one `tfm train` over STEPS steps, both with the small test model
# (tests/data/mini), and prints the resident set a tenth of the way in (or,
# if later, once the start-up is over), half way and at the end, the peak
# (VmHWM) and the growth from there to the end.
#   scripts/rss_flat.sh translate LINES [TFM]
#   scripts/rss_flat.sh train STEPS [TFM]
# BEAM (default 4) sets the translation beam.
# Samples follow progress, not the clock, so a fast or a loaded machine
# takes the same number: translate is fed SAMPLES (default 40) chunks of
# its input through a pipe and sampled when each chunk's translations are
# out (it is then waiting for input); train is sampled at each of its
# SAMPLES progress lines (train.log_every).
# Exits 1 when the resident set grew by more than MAX_GROWTH_KB (default
# 1024) from there to the end, or when the run was too short to tell.
set -euo pipefail
usage="usage: scripts/rss_flat.sh translate LINES | train STEPS [TFM]"
what=${1:-}
n=${2:-}
case "$what" in translate|train) ;; *) echo "$usage" >&2; exit 2 ;; esac
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "$usage" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TFM=${3:-$ROOT/tfm}
MAX_GROWTH_KB=${MAX_GROWTH_KB:-1024}
W=$(mktemp -d /tmp/tfm-rss.XXXXXX)
trap 'rm -rf "$W"' EXIT
cp "$ROOT"/tests/data/mini/* "$W"/
cd "$W"

SAMPLES=${SAMPLES:-40}
: >rss.log

# appends the VmRSS (kB) of process $1 to rss.log and keeps its VmHWM in
# hwm.log (bash builtins only: a fork per sample would slow a loaded box)
sample() {
    local k v rest
    while read -r k v rest; do
        case "$k" in
            VmRSS:) echo "$v" >>rss.log ;;
            VmHWM:) echo "hwm $v" >hwm.log ;;
        esac
    done <"/proc/$1/status" 2>/dev/null || true
}

start=$(date +%s.%N)
if [ "$what" = translate ]; then
    # 300 steps: a model that ends its sentences (an untrained one runs each
    # to the length limit)
    "$TFM" train mini.json -q --set train.max_steps=300 --set train.valid_every=300 >/dev/null
    # LINES lines: the training sentences over and over, in SAMPLES chunks
    awk -v n="$n" 'BEGIN { while (c < n) { while (c < n && (getline l < "train.de") > 0) { print l; c++ } close("train.de") } }' >in.txt
    split -l $(((n + SAMPLES - 1) / SAMPLES)) in.txt chunk.
    mkfifo in.fifo
    start=$(date +%s.%N)
    # translate flushes its output after each batch and translates what it
    # has when no more input is waiting
    "$TFM" translate -m model.tfm -b "${BEAM:-4}" -q <in.fifo >out.txt &
    pid=$!
    exec 3>in.fifo
    fed=0
    for c in chunk.*; do
        cat "$c" >&3
        fed=$((fed + $(wc -l <"$c")))
        while [ "$(wc -l <out.txt)" -lt "$fed" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
        sample "$pid"
    done
    exec 3>&-
    wait "$pid"
    [ "$(wc -l <out.txt)" -eq "$n" ] || { echo "rss_flat: $(wc -l <out.txt) lines out for $n in" >&2; exit 1; }
    label="tfm translate, beam ${BEAM:-4}, $n lines"
else
    mkfifo log.fifo
    "$TFM" train mini.json --set train.max_steps="$n" --set train.valid_every=$((n / 4 + 1)) \
        --set train.save_every=$((n / 10 + 1)) \
        --set train.log_every=$(((n + SAMPLES - 1) / SAMPLES)) 2>log.fifo >/dev/null &
    pid=$!
    # a progress line is written after its step: sampled as it is read
    while read -r word rest; do
        if [ "$word" = step ] && [[ "$rest" != *valid* ]]; then sample "$pid"; fi
    done <log.fifo
    wait "$pid"
    label="tfm train, $n steps (validation and saves included)"
fi
end=$(date +%s.%N)
awk -v label="$label" -v max="$MAX_GROWTH_KB" -v s="$start" -v e="$end" \
    -v hwm="$(awk '{ v = $2 } END { print v }' hwm.log)" '
# the median of samples lo..hi
function median(lo, hi,    i, j, n, v, h) {
    n = 0
    for (i = lo; i <= hi; i++) {
        v = r[i]
        for (j = n; j > 0 && h[j] > v; j--) h[j + 1] = h[j]
        h[j + 1] = v
        n++
    }
    return h[int((n + 1) / 2)]
}
{ r[NR] = $1 }
END {
    if (NR < 10) { print "rss_flat: only " NR " samples: the run was too short" > "/dev/stderr"; exit 1 }
    # the start-up (loading, first allocations) may outlast a tenth of a
    # short run: start from the first sample within 5% (or within the
    # allowed growth, if that is more) of the median of the second half, if
    # that is later; so a leak counts whole unless it is over 5% (or over
    # the allowed growth) by three quarters of the run, and then it fails
    # anyway
    steady = median(int(NR / 2) + 1, NR)
    up = 0
    near = 0.95 * steady
    if (steady - max < near) near = steady - max
    for (i = 1; i <= NR && !up; i++) if (r[i] >= near) up = i
    from = int(NR / 10)
    if (up > from) from = up
    if (from > NR / 2) {
        print "rss_flat: the start-up took " from " of " NR " samples: the run was too short to judge" > "/dev/stderr"
        exit 1
    }
    # the end is the median of the last tenth: the last moments of a run (the
    # final validation, loading best.tfm to report it) hold a model more
    # for a few tenths of a second, which a slow run samples
    a = r[from]; b = r[int(NR / 2)]; c = median(NR - int(NR / 10) + 1, NR)
    printf "| %s | %.1f | %.1f | %.1f | %.1f | %+d kB | %.0f s |\n", label, a / 1024, b / 1024, c / 1024, hwm / 1024, c - a, e - s
    exit (c - a > max)
}' rss.log
