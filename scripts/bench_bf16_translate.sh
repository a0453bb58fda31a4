#!/usr/bin/env bash
# bench_bf16_translate.sh: tfm translate in bf16 against fp32, in one run, at
# the base shape (d=512, 6+6 layers, d_ff 2048, 8000-token vocabulary),
# beam 4, batch 1 and 64, on Multi30k test_2016_flickr.de. Without MODEL it
# trains one: a few steps only, so the output lengths are fixed by the
# limits (--max-len-a 0 --max-len-b 30): the same work for both precisions.
# Each cell is the best of REPEAT whole-process wall times. Prints a
# Markdown table.
#   scripts/bench_bf16_translate.sh [MODEL]
#   env: THREADS (2), REPEAT (3), LINES_B1 (200), LINES_B64 (0: all)
set -euo pipefail
cd "$(dirname "$0")/.."
make -s tfm data >/dev/null
TFM=$PWD/tfm
THREADS=${THREADS:-2}
REPEAT=${REPEAT:-3}
LINES_B1=${LINES_B1:-200}
LINES_B64=${LINES_B64:-0}
W=$(mktemp -d /tmp/tfm-bf16tr.XXXXXX)
trap 'rm -rf "$W"' EXIT
if "$TFM" --version | grep -q '^bf16 products: none'; then
    echo "bench_bf16_translate.sh: this CPU has no bf16 unit (tfm --version)" >&2
    exit 1
fi
MODEL=${1:-}
if [ -z "$MODEL" ]; then
    cat >"$W/base.json" <<JSON
{
  "data": {"train_src": "$PWD/data/train.de.gz", "train_tgt": "$PWD/data/train.en.gz",
           "valid_src": "$PWD/data/val.de.gz", "valid_tgt": "$PWD/data/val.en.gz",
           "vocab_size": 8000, "max_len": 128},
  "model": {"d_model": 512, "heads": 8, "enc_layers": 6, "dec_layers": 6, "d_ff": 2048},
  "train": {"batch_tokens": 4096, "max_steps": 3, "valid_every": 100000, "save_every": 100000,
            "out_dir": "$W/ck", "model": "$W/base.tfm", "threads": $THREADS}
}
JSON
    "$TFM" train "$W/base.json" -q >/dev/null
    MODEL=$W/base.tfm
fi
lines() { if [ "$1" = 0 ]; then cat; else head -n "$1"; fi; }
lines "$LINES_B1" <data/test_2016_flickr.de >"$W/b1.de"
lines "$LINES_B64" <data/test_2016_flickr.de >"$W/b64.de"
best_time() {   # input batch precision -> seconds (best of REPEAT)
    local best=""
    for _ in $(seq "$REPEAT"); do
        local t0 t1
        t0=$(date +%s.%N)
        "$TFM" translate -m "$MODEL" -q -b 4 --batch-size "$2" --threads "$THREADS" \
            --precision "$3" --max-len-a 0 --max-len-b 30 -i "$1" -o "$W/out.$3.$2"
        t1=$(date +%s.%N)
        best=$(awk -v a="$best" -v t="$(awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }')" \
               'BEGIN { print (a == "" || t < a) ? t : a }')
    done
    echo "$best"
}
echo "# tfm translate, bf16 vs fp32: $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
"$TFM" --version | sed 's/^/# /'
"$TFM" info "$MODEL" | grep -E '^(parameters|shape):' | sed 's/^/# /'
echo
echo "| batch | lines | beam | fp32 sentences/s | bf16 sentences/s | bf16 / fp32 | outputs identical |"
echo "|---|---|---|---|---|---|---|"
for batch in 1 64; do
    in=$W/b1.de; [ "$batch" = 64 ] && in=$W/b64.de
    n=$(wc -l <"$in")
    t32=$(best_time "$in" "$batch" fp32)
    t16=$(best_time "$in" "$batch" bf16)
    same=$(cmp -s "$W/out.fp32.$batch" "$W/out.bf16.$batch" && echo yes ||
           echo "$(paste -d'\n' "$W/out.fp32.$batch" "$W/out.bf16.$batch" | paste - - | awk -F'\t' '$1 == $2' | wc -l) of $n lines")
    awk -v b="$batch" -v n="$n" -v a="$t32" -v c="$t16" -v s="$same" \
        'BEGIN { printf "| %s | %d | 4 | %.1f | %.1f | %.2fx | %s |\n", b, n, n / a, n / c, a / c, s }'
done
