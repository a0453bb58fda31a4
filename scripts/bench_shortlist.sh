#!/usr/bin/env bash
# bench_shortlist.sh: translation with and without a vocabulary shortlist,
# measured side by side, and what it costs in BLEU.
#
# For each precision and batch size: `tfm translate --shortlist SL` (A) and
# the baseline, plain `BASE_TFM translate --precision fp32` (B), run in turn,
# A B A B ..., REPEAT pairs; the speed-up B/A is taken pair by pair (a
# machine whose speed drifts moves both of a pair alike) and its median
# printed, with the wall seconds of both. BASE_TFM is another build to
# measure against (an earlier release, say), by default TFM itself. Then BLEU (sacreBLEU-identical `tfm bleu`) of both outputs on each
# test set, at batch 64.
#
# usage: scripts/bench_shortlist.sh MODEL SHORTLIST [out_dir]
#   env: TFM (./tfm), BASE_TFM ($TFM), SETS ("2016_flickr 2017_flickr 2018_flickr"), SRC_LANG
#        (de), TGT_LANG (en), BEAM (5), THREADS (2), BATCHES ("64 1"; "" for BLEU only),
#        LINES_B1 (lines at batch 1, default 300; 0: all), REPEAT (3),
#        PRECISIONS ("fp32 int8")
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_shortlist.sh MODEL SHORTLIST [out_dir]}
SL=${2:?usage: scripts/bench_shortlist.sh MODEL SHORTLIST [out_dir]}
OUT=${3:-/tmp/bench_shortlist}
TFM=${TFM:-./tfm}
BASE_TFM=${BASE_TFM:-$TFM}
SETS=${SETS:-"2016_flickr 2017_flickr 2018_flickr"}
SRC_LANG=${SRC_LANG:-de}
TGT_LANG=${TGT_LANG:-en}
BEAM=${BEAM:-5}
THREADS=${THREADS:-2}
BATCHES=${BATCHES-"64 1"}
LINES_B1=${LINES_B1:-300}
REPEAT=${REPEAT:-3}
PRECISIONS=${PRECISIONS:-"fp32 int8"}
mkdir -p "$OUT" || exit 1
first=${SETS%% *}
[ -f "data/test_$first.$SRC_LANG" ] || make -s data || exit 1

now() { date +%s.%N; }
# secs CMD...: the wall seconds of one run of CMD (its output to $OUT/run.txt)
secs() {
    local t0 t1
    t0=$(now)
    "$@" >"$OUT/run.txt" 2>/dev/null || { echo "failed: $*" >&2; exit 1; }
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
. scripts/bench_lib.sh

echo "# bench_shortlist $(date -u +%FT%TZ)"
echo "# $("$TFM" --version | tr '\n' ';')"
[ "$BASE_TFM" = "$TFM" ] || echo "# baseline $BASE_TFM: $("$BASE_TFM" --version | head -1)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), model $MODEL, shortlist $SL"
echo
echo "| precision | batch | lines | fp32 without (s) | with (s) | speed-up, median of $REPEAT pairs |"
echo "|---|---|---|---|---|---|"
in=data/test_$first.$SRC_LANG
for prec in $PRECISIONS; do
    for b in $BATCHES; do
        src=$in
        if [ "$b" = 1 ] && [ "$LINES_B1" != 0 ]; then
            head -n "$LINES_B1" "$in" >"$OUT/in_b1.txt"
            src=$OUT/in_b1.txt
        fi
        common=(translate -q -m "$MODEL" -b "$BEAM" --threads "$THREADS" --batch-size "$b" -i "$src")
        : >"$OUT/ratios"; : >"$OUT/with"; : >"$OUT/without"
        for _ in $(seq "$REPEAT"); do
            a=$(secs "$TFM" "${common[@]}" --precision "$prec" --shortlist "$SL")
            n=$(secs "$BASE_TFM" "${common[@]}" --precision fp32)
            echo "$a" >>"$OUT/with"; echo "$n" >>"$OUT/without"
            echo "$n / $a" | bc -l >>"$OUT/ratios"
        done
        printf '| %s | %s | %s | %.2f | %.2f | %.2fx |\n' "$prec" "$b" "$(wc -l <"$src")" \
            "$(median <"$OUT/without")" "$(median <"$OUT/with")" "$(median <"$OUT/ratios")"
    done
done
echo
echo "| precision | test set | BLEU without | BLEU with | lines that differ |"
echo "|---|---|---|---|---|"
for prec in $PRECISIONS; do
    for set in $SETS; do
        src=data/test_$set.$SRC_LANG ref=data/test_$set.$TGT_LANG
        args=(translate -q -m "$MODEL" -b "$BEAM" --threads "$THREADS" --batch-size 64 --precision "$prec" -i "$src")
        "$TFM" "${args[@]}" >"$OUT/$prec.$set.without" || exit 1
        "$TFM" "${args[@]}" --shortlist "$SL" >"$OUT/$prec.$set.with" || exit 1
        bw=$("$TFM" bleu "$OUT/$prec.$set.without" "$ref" 2>/dev/null | sed -n 's/^BLEU = \([0-9.]*\).*/\1/p')
        bs=$("$TFM" bleu "$OUT/$prec.$set.with" "$ref" 2>/dev/null | sed -n 's/^BLEU = \([0-9.]*\).*/\1/p')
        d=$(paste -d '\n' "$OUT/$prec.$set.without" "$OUT/$prec.$set.with" | paste - - | awk -F'\t' '$1 != $2' | wc -l)
        echo "| $prec | $set | $bw | $bs | $d |"
    done
done
