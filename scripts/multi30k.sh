#!/usr/bin/env bash
# multi30k.sh: the whole Multi30k run on a fresh clone, for one direction.
# Trains configs/multi30k-PAIR.json (the model is the moving average of the
# weights, train.ema, or with train.average_last the average of the last
# checkpoints), translates test_2016_flickr
# with the recipe's beam, scores it with tfm bleu cased (with its bootstrap
# 95% interval) and -lc, and draws the learning curves.
#   scripts/multi30k.sh en-de|de-en [--set KEY=VALUE ...] [--threads N] [--restart]
# (--set changes a key of the recipe for this run, decode.* included; the
# options go to tfm train.)
# Also translates the validation set the same way and prints its BLEU: the
# score recipe changes are chosen by.
# Outputs go to runs/multi30k-PAIR/ (checkpoints, log.jsonl,
# test_2016_flickr.hyp, val.hyp, the plot) and runs/multi30k-PAIR.tfm (the
# model). Running it again resumes an interrupted training, or only
# re-scores a finished one; --restart trains from scratch.
set -euo pipefail
usage="usage: scripts/multi30k.sh en-de|de-en [--set KEY=VALUE ...] [--threads N] [--restart]"
pair=${1:-}
case "$pair" in
    en-de|de-en) shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
src=${pair%-*} tgt=${pair#*-}
config=configs/multi30k-$pair.json
out=runs/multi30k-$pair
model=$out.tfm
test_set=test_2016_flickr

make -s tfm data >&2
mkdir -p "$out"

# The recipes say train.precision "auto": bf16 where its products measure
# faster than float32 on this CPU, else fp32 (tfm train says which).
echo "== training $config ($*)" >&2
start=$(date +%s.%N)
./tfm train "$config" "$@" >/dev/null
end=$(date +%s.%N)
train_s=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", e - s }')

# the recipe's decode settings as the config and the --set options have
# them now (a model keeps those it was trained with)
sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --set) sets+=(--set "${2:-}"); shift 2 || shift ;;
        --set=*) sets+=("$1"); shift ;;
        *) shift ;;
    esac
done
read -r beam alpha < <(./tfm train "$config" "${sets[@]}" --dry-run |
    python3 -c 'import json, sys; d = json.load(sys.stdin)["decode"]; print(d["beam"], d["alpha"])')
echo "== translating $test_set.$src (beam $beam, alpha $alpha)" >&2
start=$(date +%s.%N)
./tfm translate -m "$model" -q -b "$beam" --alpha "$alpha" <"data/$test_set.$src" >"$out/$test_set.hyp"
end=$(date +%s.%N)
translate_s=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')

# the validation set too, decoded as the test set is: the recipes are chosen
# on it (the test set is scored once per recipe change, never to choose)
echo "== translating val.$src (beam $beam, alpha $alpha)" >&2
./tfm translate -m "$model" -q -b "$beam" --alpha "$alpha" <"data/val.$src" >"$out/val.hyp"
val=$(./tfm bleu "$out/val.hyp" "data/val.$tgt" 2>/dev/null)

# -ci: the bootstrap 95% interval says how far a test set of this size
# can move a score by chance (sacreBLEU's --confidence)
cased=$(./tfm bleu -ci "$out/$test_set.hyp" "data/$test_set.$tgt" 2>/dev/null)
lower=$(./tfm bleu -lc "$out/$test_set.hyp" "data/$test_set.$tgt" 2>/dev/null)
plot=""
if command -v gnuplot >/dev/null; then
    plot=$(scripts/plot_log.sh "$out/log.jsonl" "$out/curves.png" "Multi30k $pair ($config)")
else
    plot="(none: scripts/deps.sh plot installs gnuplot)"
fi
# the figures of the run, from its log: the last training record and the
# validation of the averaged model
summary=$(python3 - "$out/log.jsonl" <<'PY' 2>/dev/null || true
import sys
sys.path.insert(0, "scripts")
from runlog import records
last = avg = ema = None
for r in records(sys.argv[1], "multi30k.sh"):
    if r.get("averaged"):
        avg = r
    elif r.get("ema"):
        ema = r
    elif "train_loss" in r:
        last = r
if last:
    print(f"steps {last['step']}, epochs {last['epoch']}, training time in the log "
          f"{last['elapsed_s'] / 60:.1f} min")
if avg:
    print(f"valid (averaged model): loss {avg['valid_loss']:.4f}, "
          f"greedy BLEU {avg.get('valid_bleu', float('nan')):.2f}")
if ema:
    print(f"valid (moving average of the weights, train.ema): loss {ema['valid_loss']:.4f}, "
          f"greedy BLEU {ema.get('valid_bleu', float('nan')):.2f}")
PY
)

echo "Multi30k $pair, $config"
echo "tfm train took ${train_s} s ($(awk -v s="$train_s" 'BEGIN { printf "%.1f", s / 60 }') min, BPE learning included; a rerun of a finished run only copies the model)"
[ -n "$summary" ] && echo "$summary"
echo "translating $test_set (beam $beam, alpha $alpha): ${translate_s} s"
echo "val (beam $beam), cased: $val"
echo "$test_set cased: $cased"
echo "$test_set -lc:   $lower"
echo "curves: $plot"
