#!/usr/bin/env bash
# bench_corpus.sh: tfm train against the size of its corpus. Builds synthetic
# corpora from Multi30k's training pairs (repeated; every repetition after
# the first numbered: "... (3)"), and at each size trains the tiny shape
# (configs/tiny.json, 2 threads) and measures:
#   - start to first step: the wall time of a 1-step run that learns its
#     vocabulary (default data.bpe_sample) and reads its first chunk
#     (default data.shuffle_buffer), its CPU time (user + system: what a
#     loaded machine changes least) and its peak memory;
#   - training: STEPS steps with that vocabulary given: the peak resident
#     memory (/usr/bin/time's max RSS), a chunk's own bytes (encoded and
#     batched, as the run says; two are held while the next is read), the
#     load average (1 minute) before and after, and the median training tok/s of
#     log.jsonl's rows, against the smallest size's (whose corpus fits in
#     the buffer: read once and kept, "in memory");
#   - streaming against in memory: at the middle size, STREAM_STEPS steps
#     read in chunks of STREAM_BUFFER pairs (a chunk used up every ~20
#     steps, the next prefetched) against the same corpus read once and
#     kept (shuffle_buffer = its size); median tok/s of each, two runs
#     each, alternating;
#   - at the largest size, the vocabulary learned from the default sample
#     against one learned from every line (data.bpe_sample 0): tokens per
#     sentence on test_2016_flickr (both sides), and the learning times.
#   scripts/bench_corpus.sh [SIZES...]     (default: 100000 1000000 10000000)
# Env: WORK (default /tmp/tfm-bench-corpus; the corpora are kept there for
# reruns: 10M pairs take 1.5 GB), STEPS (default 60), THREADS (default 2),
# FULL_VOCAB=0 skips the every-line vocabulary (minutes at 10M),
# STREAM_STEPS (default 80; 0 skips), STREAM_BUFFER (default 4000).
# Prints a Markdown table. The machine's load changes the times: say it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make -s tfm data >/dev/null
TFM=${TFM:-$ROOT/tfm}
WORK=${WORK:-/tmp/tfm-bench-corpus}
STEPS=${STEPS:-60}
THREADS=${THREADS:-2}
FULL_VOCAB=${FULL_VOCAB:-1}
STREAM_STEPS=${STREAM_STEPS:-80}
STREAM_BUFFER=${STREAM_BUFFER:-4000}
SIZES=${*:-"100000 1000000 10000000"}
mkdir -p "$WORK"

# cN.de / cN.en: N pairs
make_corpus() {
    local n=$1
    [ -s "$WORK/c$n.en" ] && return
    for side in de en; do
        awk -v n="$n" 'NR == FNR { line[k++] = $0; next } END {
            for (i = 0; i < n; i++) {
                r = int(i / k); s = line[i % k]
                if (r == 0) print s; else print s " (" r ")"
            } }' "data/train.$side" /dev/null >"$WORK/c$n.$side.tmp"
        mv "$WORK/c$n.$side.tmp" "$WORK/c$n.$side"
    done
}
head -n 200 data/val.de >"$WORK/v.de"
head -n 200 data/val.en >"$WORK/v.en"

# run NAME ARGS...: tfm train on the tiny shape; "WALL_S MAX_RSS_KB CPU_S" in
# $WORK/NAME.time (CPU: user + system), its notes in $WORK/NAME.err
run() {
    local name=$1; shift
    rm -rf "$WORK/$name"
    /usr/bin/time -f '%e %M %U %S' -o "$WORK/$name.time" "$TFM" train configs/tiny.json \
        --set "data.valid_src=$WORK/v.de" --set "data.valid_tgt=$WORK/v.en" \
        --set train.max_time_s=0 --set train.valid_every=1000000 --set train.save_every=1000000 \
        --set train.threads="$THREADS" --set train.log_every=5 \
        --set "train.out_dir=$WORK/$name" --set "train.model=$WORK/$name.tfm" "$@" \
        >/dev/null 2>"$WORK/$name.err"
    awk '{printf "%s %s %.1f\n", $1, $2, $3 + $4}' "$WORK/$name.time" >"$WORK/$name.time.tmp"
    mv "$WORK/$name.time.tmp" "$WORK/$name.time"
}

load() { cut -d' ' -f1 /proc/loadavg; }

median_tok_s() {   # of the train rows after the first (its steps include the warm-up)
    grep -o '"tok_per_s": [0-9.]*' "$1" | tail -n +2 | awk '{print $2}' | sort -n |
        awk '{v[NR] = $1} END { if (NR) printf "%.0f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tokens_per_sentence() {     # VOCAB: test_2016_flickr, both sides
    local n
    n=$(cat data/test_2016_flickr.de data/test_2016_flickr.en | "$TFM" bpe encode -v "$1" | wc -w)
    echo "scale=3; $n / $(cat data/test_2016_flickr.de data/test_2016_flickr.en | wc -l)" | bc
}

echo "| pairs | start → step 1 (s) | its CPU (s) | its peak RSS (MB) | training peak RSS (MB) | a chunk (MB) | tok/s (median) | vs smallest | load |"
echo "|---|---|---|---|---|---|---|---|---|"
first_tok=""
last=""
for n in $SIZES; do
    make_corpus "$n"
    C=(--set "data.train_src=$WORK/c$n.de" --set "data.train_tgt=$WORK/c$n.en")
    l0=$(load)
    run "first$n" "${C[@]}" --set train.max_steps=1
    read -r t1 m1 c1 <"$WORK/first$n.time"
    run "train$n" "${C[@]}" --set "data.vocab=$WORK/first$n/vocab.txt" --set train.max_steps="$STEPS"
    read -r _ m2 _ <"$WORK/train$n.time"
    # a chunk's own memory, as the run said (none when the corpus is read once)
    chunk=$(sed -n 's/.*of [0-9]* lines, \([0-9.]*\) MB encoded and batched.*/\1/p' "$WORK/train$n.err")
    tok=$(median_tok_s "$WORK/train$n/log.jsonl")
    [ -z "$first_tok" ] && first_tok=$tok
    echo "| $n | $t1 | $c1 | $((m1 / 1024)) | $((m2 / 1024)) | ${chunk:-(one, kept)} | $tok | $(echo "scale=3; $tok / $first_tok" | bc) | $l0-$(load) |"
    last=$n
done

set -- $SIZES
mid=${2:-$1}
if [ "$STREAM_STEPS" -gt 0 ]; then
    C=(--set "data.train_src=$WORK/c$mid.de" --set "data.train_tgt=$WORK/c$mid.en"
       --set "data.vocab=$WORK/first$mid/vocab.txt" --set train.max_steps="$STREAM_STEPS")
    s_tok=() m_tok=()
    for k in 1 2; do
        run "stream$mid" "${C[@]}" --set data.shuffle_buffer="$STREAM_BUFFER"
        s_tok+=("$(median_tok_s "$WORK/stream$mid/log.jsonl")")
        run "memory$mid" "${C[@]}" --set data.shuffle_buffer="$mid"
        m_tok+=("$(median_tok_s "$WORK/memory$mid/log.jsonl")")
    done
    echo
    echo "Streaming at $mid pairs, $STREAM_STEPS steps: chunks of $STREAM_BUFFER pairs against all in memory (median tok/s, two runs each)"
    echo "- streaming: ${s_tok[*]}; in memory: ${m_tok[*]}"
    echo "- streaming / in memory: $(echo "scale=3; (${s_tok[0]} + ${s_tok[1]}) / (${m_tok[0]} + ${m_tok[1]})" | bc)"
fi

echo
echo "data.bpe_sample at $last pairs: tokens per sentence on test_2016_flickr (de and en)"
sample_tps=$(tokens_per_sentence "$WORK/first$last/vocab.txt")
echo "- default sample: $sample_tps (the run above: start to step 1 $(cut -d' ' -f1 "$WORK/first$last.time") s)"
if [ "$FULL_VOCAB" = 1 ]; then
    run "full$last" --set "data.train_src=$WORK/c$last.de" --set "data.train_tgt=$WORK/c$last.en" \
        --set data.bpe_sample=0 --set train.max_steps=1
    full_tps=$(tokens_per_sentence "$WORK/full$last/vocab.txt")
    read -r tf mf _ <"$WORK/full$last.time"
    echo "- every line: $full_tps (start to step 1 $tf s, peak RSS $((mf / 1024)) MB)"
    echo "- sample / every line: $(echo "scale=4; $sample_tps / $full_tps" | bc)"
fi
