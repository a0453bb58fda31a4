#!/usr/bin/env bash
# bench_parallel.sh: train.parallel "sentences" (each thread a replica on its
# share of the batch, one meeting a step) against "products" (the threads
# split every product and meet after each), alternated in one run, on the
# Multi30k en-de recipe's model and batches (configs/multi30k-en-de.json,
# fp32, no validation inside the timed steps). Prints a Markdown row per
# run: tokens/s, the median of log.jsonl's rows after the first (warm-up).
#   scripts/bench_parallel.sh [STEPS] [ROUNDS] [THREADS]   (default 300, 2, 2)
# CONFIG=path and extra `--set` pairs in SETS="a=1 b=2" change the model.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-300}
ROUNDS=${2:-2}
THREADS=${3:-2}
CONFIG=${CONFIG:-configs/multi30k-en-de.json}
make -s tfm data >/dev/null
W=$(mktemp -d /tmp/tfm-bench-parallel.XXXXXX)
trap 'rm -rf "$W"' EXIT
common=("$CONFIG" --set train.precision=fp32 --set train.max_steps="$STEPS"
        --set train.max_time_s=0 --set train.valid_every=100000 --set train.save_every=100000
        --set train.average_last=0 --set train.ema=0 --set train.log_every=25
        --set train.threads="$THREADS")
for s in ${SETS:-}; do common+=(--set "$s"); done
median_tok_s() {   # the train rows of a log, without the first (warm-up)
    grep '"tok_per_s"' "$1" | sed 's/.*"tok_per_s": \([0-9.]*\).*/\1/' | tail -n +2 | sort -n |
        awk '{ a[NR] = $1 } END { printf "%.0f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
     "$(./tfm --version | grep 'OpenBLAS kernel'); $CONFIG ${SETS:-}, $STEPS steps, $THREADS threads"
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
