#!/usr/bin/env bash
# bench_mpi_data.sh: what reading the training data costs the ranks of an
# `mpirun -np 2 tfm train` job (docs/distributed.md, "The data"), on the
# synthetic corpus of scripts/bench_corpus.sh (N pairs, made by it when
# missing), the tiny shape, the vocabulary given (learned once, so that the
# runs compare reading, encoding, planning and exchanging):
#   - start → step 1: the wall time of a 1-step run, and each rank's peak
#     resident memory (/usr/bin/time in every rank), for 1 process × 2
#     threads and 2 ranks × 1 thread, with the corpus in one chunk (kept)
#     and in chunks of CHUNK pairs;
#   - training: STEPS steps of 2 ranks × 1 thread in chunks of SMALL pairs
#     (a chunk read, gathered and exchanged every ~20 steps): the median
#     tok/s of log.jsonl's rows after the first (the steps alone), and the
#     seconds per step from the first row to the last (elapsed_s: the
#     chunks' reading, gathering and exchanges included).
# With BEFORE=path/to/an/older/MPI/tfm every 2-rank row is run with it too
# (alternating). Prints Markdown; the machine's load changes the times: it
# is given with each row (1-minute load average before the row).
#   scripts/bench_mpi_data.sh
# Env: WORK (default /tmp/tfm-bench-corpus), N (1000000), CHUNK (250000),
# SMALL (4000), STEPS (80), BEFORE (unset).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make -s tfm data >/dev/null
make -s MPI=1 BUILD=build-mpi BIN=build-mpi/tfm >/dev/null
TFM=$ROOT/build-mpi/tfm
WORK=${WORK:-/tmp/tfm-bench-corpus}
N=${N:-1000000}
CHUNK=${CHUNK:-250000}
SMALL=${SMALL:-4000}
STEPS=${STEPS:-80}
BEFORE=${BEFORE:-}
# the corpus and the vocabulary its first run learned (bench_corpus.sh's)
VOCAB=$WORK/first$N/vocab.txt
[ -s "$WORK/c$N.en" ] && [ -s "$VOCAB" ] ||
    WORK=$WORK STEPS=1 STREAM_STEPS=0 FULL_VOCAB=0 scripts/bench_corpus.sh "$N" >/dev/null
head -n 200 data/val.de >"$WORK/v.de"
head -n 200 data/val.en >"$WORK/v.en"

load() { cut -d' ' -f1 /proc/loadavg; }

# run NAME RANKS(0: no mpirun) BIN THREADS ARGS...: peak RSS of each rank in
# $WORK/NAME.time.RANK ("WALL_S MAX_RSS_KB"), notes in $WORK/NAME.err
run() {
    local name=$1 ranks=$2 bin=$3 threads=$4; shift 4
    rm -rf "$WORK/$name" "$WORK/$name".time.*
    local cmd=("$bin" train configs/tiny.json
        --set "data.train_src=$WORK/c$N.de" --set "data.train_tgt=$WORK/c$N.en"
        --set "data.vocab=$VOCAB" --set "data.valid_src=$WORK/v.de" --set "data.valid_tgt=$WORK/v.en"
        --set train.max_time_s=0 --set train.valid_every=1000000 --set train.save_every=1000000
        --set train.threads="$threads" --set train.log_every=5
        --set "train.out_dir=$WORK/$name" --set "train.model=$WORK/$name.tfm" "$@")
    if [ "$ranks" = 0 ]; then
        /usr/bin/time -f '%e %M' -o "$WORK/$name.time.0" "${cmd[@]}" >/dev/null 2>"$WORK/$name.err"
    else
        mpirun -q --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
            sh -c 'exec /usr/bin/time -f "%e %M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' \
            "$WORK/$name.time" "${cmd[@]}" >/dev/null 2>"$WORK/$name.err"
    fi
}

rss() {     # NAME: "rank 0 / rank 1 / ..." in MB
    local f out=""
    for f in "$WORK/$1".time.*; do out="$out${out:+ / }$(($(cut -d' ' -f2 "$f") / 1024))"; done
    echo "$out"
}

median_tok_s() {
    grep -o '"tok_per_s": [0-9.]*' "$1" | tail -n +2 | awk '{print $2}' | sort -n |
        awk '{v[NR] = $1} END { if (NR) printf "%.0f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

s_per_step() {  # from the first row of log.jsonl to the last
    grep -o '"step": [0-9]*\|"elapsed_s": [0-9.]*' "$1" | awk '{print $2}' | paste - - |
        awk 'NR == 1 { s0 = $1; e0 = $2 } { s = $1; e = $2 } END { printf "%.3f", (e - e0) / (s - s0) }'
}

echo "Start → step 1 at $N pairs (1-step runs, vocabulary given), $(nproc) cores, commit $(git rev-parse --short HEAD):"
echo
echo "| data | set-up | wall (s) | peak RSS per rank (MB) | load |"
echo "|---|---|---|---|---|"
for buf in "$N" "$CHUNK"; do
    what="one chunk of $N, kept"
    [ "$buf" = "$N" ] || what="chunks of $buf"
    l=$(load)
    run first1 0 "$TFM" 2 --set train.max_steps=1 --set data.shuffle_buffer="$buf"
    echo "| $what | 1 process × 2 threads | $(cut -d' ' -f1 "$WORK/first1.time.0") | $(rss first1) | $l |"
    for variant in ${BEFORE:+before} after; do
        bin=$TFM
        [ "$variant" = before ] && bin=$BEFORE
        l=$(load)
        run "first2$variant" 2 "$bin" 1 --set train.max_steps=1 --set data.shuffle_buffer="$buf"
        echo "| $what | 2 ranks × 1 thread ($variant) | $(cut -d' ' -f1 "$WORK/first2$variant.time.0") | $(rss "first2$variant") | $l |"
    done
done
grep -h "each rank encoded" "$WORK"/first2after.err || true

echo
echo "Training, 2 ranks × 1 thread, $STEPS steps in chunks of $SMALL pairs (a chunk every ~20 steps):"
echo
echo "| round | binary | tok/s (median of rows) | s per step, chunks included | peak RSS per rank (MB) | load |"
echo "|---|---|---|---|---|---|"
for round in 1 2; do
    for variant in ${BEFORE:+before} after; do
        bin=$TFM
        [ "$variant" = before ] && bin=$BEFORE
        l=$(load)
        run "train2$variant" 2 "$bin" 1 --set train.max_steps="$STEPS" --set data.shuffle_buffer="$SMALL"
        echo "| $round | $variant | $(median_tok_s "$WORK/train2$variant/log.jsonl") | $(s_per_step "$WORK/train2$variant/log.jsonl") | $(rss "train2$variant") | $l |"
    done
done
