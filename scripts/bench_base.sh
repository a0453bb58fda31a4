#!/usr/bin/env bash
# bench_base.sh: tfm's own translation speed at one model size, the encoder
# and the decoder timed apart, float32 / bf16 / int8 side by side in one run.
#
# Made for the paper's base size (configs/base.json): a model from a short
# run of it is enough for speed, since an untrained model's outputs run to
# the length limit (MAX_LEN_B pieces a line, MAX_LEN_A 0), so every line
# costs the same number of decoder steps. A trained model's beam outputs end
# when they end: say which kind was timed.
#
# For each precision, search (greedy, beam 5) and batch (1: LINES_B1 lines,
# 64: LINES_B64 lines), two `tfm translate` runs alternate REPEAT times:
#   - "encoder": the length limit 1 (the encoder over every line and one
#     decoder step);
#   - "full": the length limit MAX_LEN_B.
# Each time is whole-process wall time, median of REPEAT; start-up (model
# load on an empty input, per precision) is subtracted. decoder = full -
# encoder, shown per step (ms a step of the whole batch, divided by the steps
# of the limit). The ratio columns are against float32 of the same row.
#
# usage: scripts/bench_base.sh MODEL [out_dir]
#   env: TFM (./tfm), SRC (data/test_2016_flickr.de), THREADS (2),
#        LINES_B1 (20), LINES_B64 (128), MAX_LEN_B (60), REPEAT (3),
#        PRECISIONS ("fp32 bf16 int8"; bf16 is skipped on a CPU without a
#        bf16 unit, where tfm would translate it in fp32).
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_base.sh MODEL [out_dir]}
OUT=${2:-/tmp/bench_base}
TFM=${TFM:-./tfm}
SRC=${SRC:-data/test_2016_flickr.de}
THREADS=${THREADS:-2}
LINES_B1=${LINES_B1:-20}
LINES_B64=${LINES_B64:-128}
MAX_LEN_B=${MAX_LEN_B:-60}
REPEAT=${REPEAT:-3}
PRECISIONS=${PRECISIONS:-"fp32 bf16 int8"}
mkdir -p "$OUT" || exit 1
[ -f "$SRC" ] || make -s data || exit 1
. scripts/bench_lib.sh

if "$TFM" --version | grep -q '^bf16 products: none'; then
  PRECISIONS=$(echo "$PRECISIONS" | sed 's/bf16//')
  echo "bf16: this CPU has no bf16 unit; not measured"
fi

# wall ARGS...: the wall seconds of one translate of $IN with ARGS (run in
# $(...), so a failure is left in $OUT/failed for the caller to stop on).
rm -f "$OUT/failed"
wall() {
  local s e
  s=$(date +%s.%N)
  "$TFM" translate -m "$MODEL" --threads "$THREADS" -q "$@" < "$IN" > "$OUT/out.txt" ||
    { echo "tfm translate $* failed" >&2; touch "$OUT/failed"; }
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", e - s }'
}
# median_of "T1 T2 ...": the median of a list of times.
median_of() { echo "$1" | tr ' ' '\n' | grep . | median; }

echo "# bench_base $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
cpu_line
echo "load at start: $(uptime | sed 's/.*load/load/')"
"$TFM" info "$MODEL" | grep -E '^(parameters|shape|vocabulary):'
"$TFM" --version | grep -E 'bf16|int8'
echo "threads $THREADS, limit $MAX_LEN_B pieces a line, median of $REPEAT"
echo

declare -A START ENC DEC WORDS
IN=$OUT/empty.txt; : > "$IN"
for prec in $PRECISIONS; do
  t=""; for ((r = 0; r < REPEAT; r++)); do t="$t $(wall --precision "$prec")"; done
  START[$prec]=$(median_of "$t")
  echo "start-up ($prec): ${START[$prec]} s"
done
echo

for beam in 1 5; do
  for bs in 1 64; do
    lines=$([ "$bs" = 1 ] && echo "$LINES_B1" || echo "$LINES_B64")
    IN=$OUT/src.$bs.txt; head -n "$lines" "$SRC" > "$IN"
    for prec in $PRECISIONS; do
      te=""; tf=""
      for ((r = 0; r < REPEAT; r++)); do
        te="$te $(wall --precision "$prec" -b "$beam" --batch-size "$bs" --max-len-a 0 --max-len-b 1)"
        tf="$tf $(wall --precision "$prec" -b "$beam" --batch-size "$bs" --max-len-a 0 --max-len-b "$MAX_LEN_B")"
      done
      e=$(median_of "$te"); f=$(median_of "$tf")
      ENC[$prec.$beam.$bs]=$(awk -v e="$e" -v s="${START[$prec]}" 'BEGIN { printf "%.4f", e - s }')
      WORDS[$prec.$beam.$bs]=$(awk -v n="$lines" '{ w += NF } END { printf "%.1f", w / n }' "$OUT/out.txt")
      DEC[$prec.$beam.$bs]=$(awk -v e="$e" -v f="$f" 'BEGIN { printf "%.4f", f - e }')
    done
  done
done

[ -e "$OUT/failed" ] && exit 1
echo "| search | batch | lines | precision | encoder s | x fp32 | decoder ms a step | x fp32 | words a line |"
echo "|---|---|---|---|---|---|---|---|---|"
for beam in 1 5; do
  for bs in 1 64; do
    lines=$([ "$bs" = 1 ] && echo "$LINES_B1" || echo "$LINES_B64")
    steps=$(( (lines + bs - 1) / bs * (MAX_LEN_B - 1) ))
    for prec in $PRECISIONS; do
      awk -v b="$beam" -v bs="$bs" -v n="$lines" -v p="$prec" -v steps="$steps" \
          -v e="${ENC[$prec.$beam.$bs]}" -v e0="${ENC[fp32.$beam.$bs]:-0}" \
          -v d="${DEC[$prec.$beam.$bs]}" -v d0="${DEC[fp32.$beam.$bs]:-0}" -v w="${WORDS[$prec.$beam.$bs]}" 'BEGIN {
        search = b == 1 ? "greedy" : "beam " b
        re = (e > 0 && e0 > 0) ? sprintf("%.2fx", e0 / e) : "-"
        rd = (d > 0 && d0 > 0) ? sprintf("%.2fx", d0 / d) : "-"
        es = e > 0 ? sprintf("%.3f", e) : "under the start-up noise"
        printf "| %s | %d | %d | %s | %s | %s | %.2f | %s | %s |\n", search, bs, n, p, es, re, 1000 * d / steps, rd, w }'
    done
  done
done
echo
echo "load at end: $(uptime | sed 's/.*load/load/')"
