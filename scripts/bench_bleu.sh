#!/usr/bin/env bash
# bench_bleu.sh: times `tfm bleu` on LINES lines (default 100,000) of
# Multi30k English, replicated from data/train.en.gz, against a lightly
# perturbed copy (every 5th line drops a word, every 7th swaps two).
# Usage: scripts/bench_bleu.sh [LINES]   (run `make` first). Prints one line a
# configuration: the best wall and CPU (user+sys) time of 3 runs, and the BLEU line.
set -eu
cd "$(dirname "$0")/.."
LINES=${1:-100000}
TFM=${TFM:-./tfm}
SRC=data/train.en.gz
[ -f "$SRC" ] || SRC=../shared/data/multi30k/train.en.gz
W=$(mktemp -d "${TMPDIR:-/tmp}/tfm-bench-bleu.XXXXXX")
trap 'rm -rf "$W"' EXIT
gzip -dc "$SRC" >"$W/one.txt"
N1=$(wc -l <"$W/one.txt")
for _ in $(seq $(( (LINES + N1 - 1) / N1 ))); do cat "$W/one.txt"; done | head -n "$LINES" >"$W/ref.txt"
awk '{ if (NR % 5 == 0 && NF > 3) { $2 = "" }
       if (NR % 7 == 0 && NF > 4) { t = $3; $3 = $4; $4 = t }
       print }' "$W/ref.txt" >"$W/hyp.txt"
echo "data: $(wc -l <"$W/hyp.txt") lines, $(wc -w <"$W/hyp.txt") words, $(du -h "$W/hyp.txt" | cut -f1) (hyp)"
bench() {
    local name=$1; shift
    local best= best_cpu=
    for _ in 1 2 3; do
        /usr/bin/time -f '%e %U %S' -o "$W/time" "$TFM" bleu "$W/hyp.txt" "$W/ref.txt" "$@" \
            >"$W/out" 2>/dev/null
        read -r wall user sys <"$W/time"
        local cpu
        cpu=$(echo "$user + $sys" | bc)
        if [ -z "$best" ] || [ "$(echo "$wall < $best" | bc)" = 1 ]; then best=$wall; fi
        if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc)" = 1 ]; then best_cpu=$cpu; fi
    done
    printf '%-18s wall %5.2f s  cpu %5.2f s   %s\n' "$name" "$best" "$best_cpu" "$(head -n 1 "$W/out")"
}
bench "default (13a)"
bench "-lc" -lc
bench "--tokenize intl" --tokenize intl
bench "--tokenize char" --tokenize char
bench "--tokenize none" --tokenize none
bench "--sentence" --sentence
bench "4 references" "$W/ref.txt" "$W/hyp.txt" "$W/ref.txt"
