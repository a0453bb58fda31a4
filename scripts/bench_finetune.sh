#!/usr/bin/env bash
# bench_finetune.sh: fine-tuning (train.init) demonstrated on Multi30k. The
# validation pairs play a new domain: the first 700 are the training data,
# the next 157 the validation set (best.tfm by BLEU), the last 157 the test.
# MODEL (a de→en model of configs/multi30k-de-en.json's shape, copied first)
# is scored on the test part, fine-tuned for SECONDS of training with a
# constant rate, and scored again (beam 5, as the recipe). First, a run that
# stops after its step-0 validation on the whole validation set prints the
# loss train.init starts from: it must be the loss the model's own run
# logged on that set (its last "valid_loss" line; with train.ema, the
# "ema" one for the moving-average model the run handed over), when run
# with that run's precision and threads (a sum over threads rounds its
# last digit otherwise).
#   scripts/bench_finetune.sh MODEL [SECONDS]      (default 180)
# Env: LR (default 0.0003), THREADS (default 2), PRECISION (default fp32,
# as the recipe trains), CHECK_THREADS (the model's run's, default 1),
# KEEP=DIR keeps the files.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODEL=${1:?usage: scripts/bench_finetune.sh MODEL [SECONDS]}
SECONDS_BUDGET=${2:-180}
LR=${LR:-0.0003}
THREADS=${THREADS:-2}
PRECISION=${PRECISION:-fp32}
CHECK_THREADS=${CHECK_THREADS:-1}
make -s tfm data >/dev/null
TFM=${TFM:-$ROOT/tfm}
W=${KEEP:-$(mktemp -d /tmp/tfm-finetune.XXXXXX)}
mkdir -p "$W"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
cp "$MODEL" "$W/init.tfm"
for s in de en; do
    sed -n '1,700p' "data/val.$s" >"$W/ft.$s"
    sed -n '701,857p' "data/val.$s" >"$W/dev.$s"
    sed -n '858,$p' "data/val.$s" >"$W/test.$s"
done

bleu() {    # MODEL: BLEU on the test part
    "$TFM" translate -m "$1" --threads "$THREADS" -q <"$W/test.de" >"$W/hyp.en"
    "$TFM" bleu "$W/hyp.en" "$W/test.en" | sed -n 's/^BLEU = \([0-9.]*\).*/\1/p'
}

echo "initial model: $("$TFM" info "$W/init.tfm" | sed -n 's/^step: *//p' | head -n 1)"
"$TFM" train configs/multi30k-de-en.json --set train.init="$W/init.tfm" \
    --set data.train_src="$W/ft.de" --set data.train_tgt="$W/ft.en" \
    --set data.valid_src=data/val.de.gz --set data.valid_tgt=data/val.en.gz \
    --set train.valid_bleu=false --set train.max_steps=0 --set train.max_time_s=0.001 \
    --set train.ema=0 --set train.threads="$CHECK_THREADS" --set train.precision="$PRECISION" \
    --set train.out_dir="$W/zero" --set train.model="$W/zero.tfm" -q >/dev/null
echo "step 0 on the whole validation set: $(grep -o '"step": 0, "epoch": 1, "valid_loss": [0-9.]*' "$W/zero/log.jsonl" | sed 's/.* //')"
before=$(bleu "$W/init.tfm")
"$TFM" train configs/multi30k-de-en.json --set train.init="$W/init.tfm" \
    --set data.train_src="$W/ft.de" --set data.train_tgt="$W/ft.en" \
    --set data.valid_src="$W/dev.de" --set data.valid_tgt="$W/dev.en" \
    --set train.lr.schedule=constant --set train.lr.peak="$LR" --set train.lr.warmup=1 \
    --set train.max_steps=0 --set train.max_time_s="$SECONDS_BUDGET" --set train.valid_every=10 \
    --set train.ema=0 --set train.threads="$THREADS" --set train.parallel=products \
    --set train.precision="$PRECISION" \
    --set train.out_dir="$W/ft" --set train.model="$W/ft.tfm" -q >/dev/null
step0=$(grep '"step": 0, "epoch": 1, "valid_loss"' "$W/ft/log.jsonl" | sed 's/.*"valid_bleu": \([0-9.]*\).*/\1/')
best=$(grep -o '"valid_bleu": [0-9.]*' "$W/ft/log.jsonl" | awk '{print $2}' | sort -n | tail -n 1)
steps=$(tail -n 1 "$W/ft/log.jsonl" | sed 's/.*"step": \([0-9]*\).*/\1/')
after=$(bleu "$W/ft.tfm")
echo "| | test part (157 pairs), beam 5 | dev part, greedy |"
echo "|---|---|---|"
echo "| initial model | $before | $step0 |"
echo "| fine-tuned ($steps steps, ${SECONDS_BUDGET} s, lr $LR) | $after | $best |"
