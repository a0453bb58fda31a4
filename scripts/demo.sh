#!/usr/bin/env bash
# demo.sh: the README's main example. Trains configs/tiny.json on Multi30k
# de-en (about 2 minutes), translates the 2016 Flickr test set with beam search
# and scores it with tfm bleu.
set -euo pipefail
cd "$(dirname "$0")/.."
TFM=./tfm
out=checkpoints/demo
mkdir -p "$out"

echo "== training configs/tiny.json (stops after train.max_time_s)" >&2
# The demo keeps its run and model under $out, so it never overwrites the
# ./model.tfm of a user's own `tfm train`.
model=$($TFM train configs/tiny.json --restart --set train.out_dir="$out/run" \
    --set train.model="$out/model.tfm" | tail -n 1)
echo "== model: $model" >&2
$TFM info "$model" | head -5 >&2

echo "== a few translations" >&2
head -n 5 data/test_2016_flickr.de | tee "$out/sample.de" >&2
$TFM translate -m "$model" <"$out/sample.de" >&2

echo "== translating test_2016_flickr (1000 sentences, beam 4)" >&2
start=$(date +%s.%N)
$TFM translate -m "$model" --batch-size 64 <data/test_2016_flickr.de >"$out/test.hyp"
end=$(date +%s.%N)
echo "   $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }') s" >&2
$TFM bleu "$out/test.hyp" data/test_2016_flickr.en
