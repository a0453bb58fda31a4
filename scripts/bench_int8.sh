#!/usr/bin/env bash
# bench_int8.sh: int8 translation beside float32 on one model: file sizes,
# BLEU (sacreBLEU-identical `tfm bleu`), the share of lines translated
# alike, wall time and peak resident memory (/usr/bin/time -v) of each
# translation, and the same int8 translation with every int8 kernel this
# CPU can run forced (TFM_INT8_KERNEL), which must give the same bytes.
#
# usage: scripts/bench_int8.sh MODEL SRC REF [out_dir]
#   env: TFM (./tfm), BEAM (5), THREADS (2), BATCH (64)
# Paired speed ratios (A B A B ... runs of the two translate commands this
# prints) are measured separately; see BENCHMARKS.md.
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_int8.sh MODEL SRC REF [out_dir]}
SRC=${2:?usage: scripts/bench_int8.sh MODEL SRC REF [out_dir]}
REF=${3:?usage: scripts/bench_int8.sh MODEL SRC REF [out_dir]}
OUT=${4:-/tmp/bench_int8}
TFM=${TFM:-./tfm}
BEAM=${BEAM:-5}
THREADS=${THREADS:-2}
BATCH=${BATCH:-64}
mkdir -p "$OUT" || exit 1
Q=$OUT/$(basename "$MODEL" .tfm).int8.tfm

echo "# bench_int8 $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
echo "load at start: $(uptime)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$TFM" --version | grep -E '^(translation kernel|int8 products)'
"$TFM" quantize -o "$Q" "$MODEL" || exit 1
echo "model file: float32 $(wc -c < "$MODEL") bytes, int8 $(wc -c < "$Q") bytes" \
     "($(awk -v a="$(wc -c < "$Q")" -v b="$(wc -c < "$MODEL")" 'BEGIN{printf "%.1f%%", 100 * a / b}'))"
echo

# translate NAME ENV... -- ARGS...: time, peak memory and BLEU of one run
translate() {
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" /usr/bin/time -v "$TFM" translate -b "$BEAM" --threads "$THREADS" \
        --batch-size "$BATCH" -q "$@" < "$SRC" > "$OUT/$name.txt" 2> "$OUT/$name.time" ||
        { echo "translate $name failed: $(tail -3 "$OUT/$name.time")" >&2; exit 1; }
    local wall rss bleu
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$OUT/$name.time")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/$name.time")
    bleu=$("$TFM" bleu "$OUT/$name.txt" "$REF" 2>/dev/null | head -1)
    echo "| $name | $wall | $((rss / 1024)) MB | $bleu |"
}

echo "beam $BEAM, $THREADS threads, batch $BATCH, $(wc -l < "$SRC") lines of $SRC"
echo
echo "| run | wall | peak RSS | BLEU |"
echo "|---|---|---|---|"
translate fp32 -- -m "$MODEL" --precision fp32
translate int8-at-load -- -m "$MODEL" --precision int8
translate int8-file -- -m "$Q"
for k in avx512vnni avxvnni avx2 portable; do
    if TFM_INT8_KERNEL=$k "$TFM" --version | grep -q '^int8 products: none'; then
        echo "| int8-file, kernel $k | this CPU cannot run it | | |"
        continue
    fi
    translate "int8-$k" TFM_INT8_KERNEL=$k -- -m "$Q"
done
echo
same=$(paste -d '\t' "$OUT/fp32.txt" "$OUT/int8-file.txt" | awk -F '\t' '$1 == $2 {k++} END {printf "%.1f%%", 100 * k / NR}')
echo "lines translated alike, int8 vs float32: $same"
cmp -s "$OUT/int8-at-load.txt" "$OUT/int8-file.txt" && echo "--precision int8 at load and the int8 file: the same bytes" ||
    echo "--precision int8 at load and the int8 file DIFFER"
for k in avx512vnni avxvnni avx2 portable; do
    [ -f "$OUT/int8-$k.txt" ] || continue
    cmp -s "$OUT/int8-$k.txt" "$OUT/int8-file.txt" && echo "kernel $k: the same bytes" || echo "kernel $k: DIFFERENT output"
done
echo "load at end: $(uptime)"
