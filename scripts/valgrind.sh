#!/usr/bin/env bash
# valgrind.sh (`make valgrind`): memcheck over a short train, translate (beam
# with n-best; sampling with top-p and repeat blocking; an int8 model from
# quantize, on the portable int8 kernel), bleu/chrF/TER on a
# gzipped reference and their significance tests, bpe encode and info. Fails
# on any memcheck error or definitely lost byte. "Possibly lost" blocks are
# libgomp's thread stacks, not shown. TFM_REEXEC=1: tfm's start-up re-exec (to pick the OpenBLAS
# kernel) would run outside valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
TFM=${TFM:-$PWD/tfm}
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp tests/data/mini/train.* tests/data/mini/valid.* "$T"/
sed 's/"max_steps": 30/"max_steps": 6/; s/"valid_every": 30/"valid_every": 3/; s/"save_every": 5/"save_every": 3/' \
    tests/data/mini/mini.json >"$T/vg.json"
head -n 5 tests/data/mini/valid.de >"$T/in.txt"
head -n 5 tests/data/mini/valid.en | gzip >"$T/ref.gz"
export TFM_REEXEC=1 OMP_NUM_THREADS=2
fail=0
run() {
    local name=$1; shift
    if valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
        --errors-for-leak-kinds=definite "$@" >"$T/out" 2>"$T/err"; then
        echo "valgrind: $name: clean"
    else
        echo "valgrind: $name: FAILED (exit $?)"; cat "$T/err"; fail=1
    fi
}
cd "$T"
run "train (6 steps, validations, saves, average)" "$TFM" train vg.json -q --set train.average_last=2
run "translate, beam 3, n-best 2" "$TFM" translate -m model.tfm -i in.txt -b 3 --nbest 2 -o hyp.nbest
run "translate, sampling" "$TFM" translate -m model.tfm -i in.txt --sample --top-p 0.9 --no-repeat-ngram 2 -o hyp.txt -q
run "quantize" "$TFM" quantize -o q.tfm model.tfm
# valgrind does not know AVX-512: the portable int8 kernel
TFM_INT8_KERNEL=portable run "translate an int8 model, beam 3 (portable int8 kernel)" \
    "$TFM" translate -m q.tfm -i in.txt -b 3 -o hyp8.txt -q
run "bleu, chrF, TER (gzipped reference)" "$TFM" bleu hyp.txt ref.gz -m bleu chrf ter
run "bleu -ci" "$TFM" bleu hyp.txt ref.gz -ci -m bleu chrf ter --confidence-n 20
run "bleu --paired-bs --json" "$TFM" bleu hyp.txt ref.gz --paired-bs in.txt -m bleu chrf ter --paired-bs-n 20 --json
run "bleu --paired-ar" "$TFM" bleu hyp.txt ref.gz --paired-ar in.txt -m bleu chrf ter --paired-ar-n 20
run "bpe encode" "$TFM" bpe encode -v ck/vocab.txt <in.txt
run "info" "$TFM" info model.tfm
exit $fail
