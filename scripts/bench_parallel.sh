#!/usr/bin/env bash
# bench_parallel.sh: train.parallel "sentences" (each thread a replica on its
# share of the batch, one meeting a step) against "products" (the threads
# split every product and meet after each), alternated in one run, on the
# Multi30k en-de recipe's model and batches (configs/multi30k-en-de.json,
# fp32, no validation inside the timed steps). Prints a Markdown row per
# run: tokens/s, the median of log.jsonl's rows after the first (warm-up),
# and the peak resident set.
#   scripts/bench_parallel.sh [STEPS] [ROUNDS] [THREADS]   (default 300, 2, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-300}
ROUNDS=${2:-2}
THREADS=${3:-2}
make -s tfm data >/dev/null
W=$(mktemp -d /tmp/tfm-bench-parallel.XXXXXX)
trap 'rm -rf "$W"' EXIT
. scripts/bench_lib.sh
read -ra common <<<"$(recipe_args "$STEPS" 25) --set train.threads=$THREADS"
echo "$(cpu_line); configs/multi30k-en-de.json, $STEPS steps, $THREADS threads"
echo
echo "| round | train.parallel | tok/s (median) | peak RSS (MB) |"
echo "|---|---|---|---|"
vocab=()       # the first run learns the vocabulary, the others reuse it
for r in $(seq "$ROUNDS"); do
    for mode in products sentences; do
        d=$W/$mode$r
        /usr/bin/time -f %M -o "$d.rss" ./tfm train "${common[@]}" ${vocab[@]+"${vocab[@]}"} \
            --set train.parallel=$mode --set train.out_dir="$d" --set train.model="$d.tfm" -q >/dev/null
        vocab=(--set data.vocab="$W/products1/vocab.txt")
        echo "| $r | $mode | $(median_tok_s "$d/log.jsonl") | $(( $(tail -1 "$d.rss") / 1024 )) |"
    done
done
