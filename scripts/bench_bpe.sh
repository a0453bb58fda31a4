#!/usr/bin/env bash
# bench_bpe.sh: tfm bpe vs sentencepiece (Debian's spm_train/spm_encode) on
# Multi30k train de+en: learn an 8000-piece BPE vocabulary, encode the same
# text, compare wall times (best of REPS runs) and average tokens per sentence.
# Writes the report to BENCHMARKS-bpe.md (or $1).
# Usage: scripts/bench_bpe.sh [OUT.md]      (env: TFM=./tfm VOCAB=8000 REPS=3)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-BENCHMARKS-bpe.md}
TFM=${TFM:-./tfm}
VOCAB=${VOCAB:-8000}
REPS=${REPS:-3}
command -v spm_train >/dev/null || { echo "bench_bpe: spm_train not found (apt-get install sentencepiece)" >&2; exit 1; }
[ -x "$TFM" ] || { echo "bench_bpe: $TFM not built (run make)" >&2; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/tfm-bench-bpe.XXXXXX")
trap 'rm -rf "$W"' EXIT
# A private copy, so a rebuild of ./tfm during the run cannot disturb it.
cp "$TFM" "$W/tfm"
TFM=$W/tfm
gzip -dc data/train.de.gz >"$W/train.de"
gzip -dc data/train.en.gz >"$W/train.en"
cat "$W/train.de" "$W/train.en" >"$W/all.txt"
LINES=$(wc -l <"$W/all.txt")

# best_of CMD...: runs CMD REPS times, prints the fastest wall time in seconds.
best_of() {
    local best=""
    for _ in $(seq "$REPS"); do
        local t0 t1 dt
        t0=$(date +%s.%N)
        "$@" || { echo "bench_bpe: failed: $*" >&2; exit 1; }
        t1=$(date +%s.%N)
        dt=$(echo "$t1 - $t0" | bc -l)
        if [ -z "$best" ] || [ "$(echo "$dt < $best" | bc -l)" = 1 ]; then best=$dt; fi
    done
    printf '%.3f' "$best"
}
avg_tokens() { awk '{n += NF} END {printf "%.3f", n / NR}' "$1"; }

tfm_learn() { "$TFM" bpe learn --vocab-size "$VOCAB" -o "$W/tfm.vocab" "$W/train.de" "$W/train.en"; }
spm_learn() {
    spm_train --input="$W/train.de,$W/train.en" --model_prefix="$W/spm" \
        --vocab_size="$VOCAB" --model_type=bpe >"$W/spm_train.log" 2>&1
}
tfm_enc() { "$TFM" bpe encode -v "$W/tfm.vocab" <"$W/all.txt" >"$W/tfm.pieces"; }
spm_enc() { spm_encode --model="$W/spm.model" <"$W/all.txt" >"$W/spm.pieces"; }
tfm_dec() { "$TFM" bpe decode -v "$W/tfm.vocab" <"$W/tfm.pieces" >"$W/tfm.back"; }
spm_dec() { spm_decode --model="$W/spm.model" <"$W/spm.pieces" >"$W/spm.back"; }

T_TL=$(best_of tfm_learn) && T_SL=$(best_of spm_learn)
T_TE=$(best_of tfm_enc) && T_SE=$(best_of spm_enc)
T_TD=$(best_of tfm_dec) && T_SD=$(best_of spm_dec)
A_T=$(avg_tokens "$W/tfm.pieces"); A_S=$(avg_tokens "$W/spm.pieces")
A_T_DE=$(head -n "$(wc -l <"$W/train.de")" "$W/tfm.pieces" | awk '{n+=NF} END {printf "%.3f", n/NR}')
A_S_DE=$(head -n "$(wc -l <"$W/train.de")" "$W/spm.pieces" | awk '{n+=NF} END {printf "%.3f", n/NR}')
A_T_EN=$(tail -n "$(wc -l <"$W/train.en")" "$W/tfm.pieces" | awk '{n+=NF} END {printf "%.3f", n/NR}')
A_S_EN=$(tail -n "$(wc -l <"$W/train.en")" "$W/spm.pieces" | awk '{n+=NF} END {printf "%.3f", n/NR}')
if cmp -s "$W/tfm.back" "$W/all.txt"; then RT_T=yes; else RT_T=no; fi
if cmp -s "$W/spm.back" "$W/all.txt"; then RT_S=yes
else RT_S="no: $(paste -d '\n' "$W/spm.back" "$W/all.txt" | awk 'NR % 2 {a = $0; next} a != $0 {d++} END {print d + 0}') lines differ"; fi
# How many more pieces tfm needs to match sentencepiece's tokens per sentence.
BIGGER=""
for extra in 100 175 250; do
    n=$((VOCAB + extra))
    "$TFM" bpe learn --vocab-size "$n" -o "$W/big.vocab" "$W/train.de" "$W/train.en"
    a=$("$TFM" bpe encode -v "$W/big.vocab" <"$W/all.txt" | awk '{t += NF} END {printf "%.3f", t / NR}')
    BIGGER="$BIGGER $n: $a;"
done
MERGES=$(sed -n 2p "$W/tfm.vocab")
CPU=$(lscpu | grep 'Model name' | sed 's/Model name: *//')
SPM_VER=$(dpkg-query -W -f='${Version}' sentencepiece 2>/dev/null || echo unknown)

cat >"$OUT" <<EOF
# BPE benchmark: tfm bpe vs sentencepiece

- Command: \`scripts/bench_bpe.sh\` (VOCAB=$VOCAB, best of REPS=$REPS runs, wall time)
- Machine: $CPU, $(nproc) cores
- Date: $(date -u '+%Y-%m-%d %H:%M UTC')
- Data: Multi30k train, data/train.de + data/train.en ($LINES lines); encode/decode on both files concatenated
- tfm: \`tfm bpe learn --vocab-size $VOCAB\` ($MERGES; single thread)
- sentencepiece $SPM_VER: \`spm_train --model_type=bpe --vocab_size=$VOCAB\`, all other options default
  (it uses up to 16 threads, character_coverage 0.9995, no byte fallback, whitespace normalization)

| | tfm | sentencepiece |
|---|---:|---:|
| learn $VOCAB (s) | $T_TL | $T_SL |
| encode $LINES lines (s) | $T_TE | $T_SE |
| decode (s) | $T_TD | $T_SD |
| tokens / sentence, de+en | $A_T | $A_S |
| tokens / sentence, de | $A_T_DE | $A_S_DE |
| tokens / sentence, en | $A_T_EN | $A_S_EN |
| decode(encode(x)) == x on all lines | $RT_T | $RT_S |

tfm's $VOCAB pieces include 256 byte-fallback pieces (printable ASCII among them serve as the
characters), the 4 specials and the word marker; sentencepiece's $VOCAB include 3 specials and
its characters but no byte pieces, so it has more slots for merges. tfm tokens / sentence
(de+en) with a few more pieces:${BIGGER%;}. See docs/vocab-format.md.
EOF
cat "$OUT"
