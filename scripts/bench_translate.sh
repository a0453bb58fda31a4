#!/usr/bin/env bash
# bench_translate.sh: translation speed, tfm vs PyTorch 1.13, in one run.
#
# First the check that both decode the same model alike: greedy float32 at
# batch 64, the share of lines where tfm and PyTorch give the same output
# (it must be at least 99% before any ratio below means anything; it is
# printed before them).
#
# For greedy and beam 4, batch 1 and 64, 1 and 2 threads: `tfm translate`
# and scripts/torch_decode.py (the same weights, PyTorch's own incremental
# decoder) alternate, REPEAT times each, best time kept; prints a markdown
# table of sentences/s and the ratio tfm/PyTorch, the output token counts
# (re-encoded from the text of both, so they count alike), greedy and beam
# agreement between the two, and BLEU of tfm's outputs.
#
# usage: scripts/bench_translate.sh MODEL [out_dir]
#   env: TFM (./tfm), SRC / REF (Multi30k test_2016_flickr de/en),
#        LINES_B1 (lines for batch 1, default 0 = all), LINES_B64 (0 = all),
#        REPEAT (2), THREADS ("1 2"), MODES ("1 4": beam sizes),
#        MAX_LEN_A / MAX_LEN_B (override the model's decode limits for both,
#        e.g. MAX_LEN_A=0 MAX_LEN_B=30 for an untrained model),
#        TORCH_ENV (extra environment for PyTorch; see below),
#        PRECISIONS ("fp32 int8": int8 is tfm --precision int8 against
#        PyTorch's quantize_dynamic, torch_decode.py --int8).
#
# tfm times are wall-clock of the whole process (start, model load, BPE,
# output); PyTorch times are inside the process, decoding only (no import,
# no model load, no BPE), which favours PyTorch slightly.
#
# PyTorch at its best here: Debian's torch loads libblas.so.3, which the
# alternatives point at the pthread OpenBLAS; we put the OpenMP build first
# (LD_LIBRARY_PATH) so torch's OpenMP loops and sgemm share one thread pool,
# with the same OPENBLAS_CORETYPE and GOMP_SPINCOUNT tfm sets for itself.
set -u
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench_translate.sh MODEL [out_dir]}
OUT=${2:-/tmp/bench_translate/run}
TFM=${TFM:-./tfm}
SRC=${SRC:-data/test_2016_flickr.de}
REF=${REF:-data/test_2016_flickr.en}
LINES_B1=${LINES_B1:-0}
LINES_B64=${LINES_B64:-0}
REPEAT=${REPEAT:-2}
THREADS=${THREADS:-"1 2"}
MODES=${MODES:-"1 4"}
PRECISIONS=${PRECISIONS:-"fp32 int8"}
PY=/usr/bin/python3
OMP_BLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp
mkdir -p "$OUT" || exit 1
[ -f "$SRC" ] || make -s data || exit 1

# The kernel tfm picks; PyTorch gets the same one.
CORE=$("$TFM" --version | sed -n 's/^OpenBLAS kernel: \([A-Za-z0-9]*\).*/\1/p')
TORCH_ENV=${TORCH_ENV:-"LD_LIBRARY_PATH=$OMP_BLAS OPENBLAS_CORETYPE=$CORE GOMP_SPINCOUNT=10000"}

LIMITS=()
[ -n "${MAX_LEN_A:-}" ] && LIMITS+=(--max-len-a "$MAX_LEN_A")
[ -n "${MAX_LEN_B:-}" ] && LIMITS+=(--max-len-b "$MAX_LEN_B")

echo "# bench_translate $(date -u +%FT%TZ)"
echo "load at start: $(uptime)"
echo "model: $MODEL"
"$TFM" info "$MODEL" | grep -E '^(parameters|vocabulary|shape):'
"$TFM" --version
echo "torch env: $TORCH_ENV"
env $TORCH_ENV $PY -c '
import torch
print("torch", torch.__version__, "| parallel backend:", torch.__config__.parallel_info().split("ATen parallel backend: ")[1].split()[0])
print("torch build:", [l.strip() for l in torch.__config__.show().split("\n") if "BLAS_INFO" in l][0].split(",")[0])
torch.ones(4, 4) @ torch.ones(4, 4)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower() and "/" in l})
print("torch loads:", " ".join(libs))
import ctypes
for l in libs:
    if "libopenblas" in l:
        f = ctypes.CDLL(l).openblas_get_corename; f.restype = ctypes.c_char_p
        cfg = ctypes.CDLL(l).openblas_get_config; cfg.restype = ctypes.c_char_p
        print("torch OpenBLAS kernel:", f().decode(), "|", cfg().decode())
'

# The model's vocabulary, to count output tokens of both alike.
VOCAB=$OUT/vocab.txt
$PY -c 'import sys; sys.path.insert(0, "scripts"); import torch_decode as t
open(sys.argv[2], "wb").write(t.read_tfm(sys.argv[1])[1])' "$MODEL" "$VOCAB" || exit 1
tokens() { "$TFM" bpe encode -v "$VOCAB" < "$1" | wc -w; }

# tfm startup + model load on an empty input: included in tfm's times below.
s=$(date +%s.%N); "$TFM" translate -m "$MODEL" --threads 1 < /dev/null > /dev/null; e=$(date +%s.%N)
echo "tfm start-up + model load: $(awk -v s="$s" -v e="$e" 'BEGIN{printf "%.3f", e-s}') s"
echo

# Do both decode the same model alike? Greedy, float32, batch 64, all lines.
"$TFM" translate -m "$MODEL" -b 1 --batch-size 64 --threads 1 -q "${LIMITS[@]}" \
    < "$SRC" > "$OUT/check.tfm.txt" || { echo "tfm translate failed" >&2; exit 1; }
env $TORCH_ENV OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $PY scripts/torch_decode.py "$MODEL" "$SRC" \
    --tfm "$TFM" -b 1 --batch-size 64 --threads 1 "${LIMITS[@]}" -o "$OUT/check.torch.txt" >/dev/null ||
    { echo "torch_decode failed" >&2; exit 1; }
check=$(paste -d '\t' "$OUT/check.tfm.txt" "$OUT/check.torch.txt" |
        awk -F '\t' '$1 == $2 {k++} END {printf "%.1f", 100 * k / NR}')
echo "greedy float32 agreement, tfm vs PyTorch: $check% of $(wc -l < "$SRC") lines" \
     "$(awk -v a="$check" 'BEGIN{print (a >= 99) ? "(>= 99%: the ratios compare the same work)" : "(BELOW 99%: the two decode differently; the ratios below do not compare the same work)"}')"
echo

ROWS=()
for prec in $PRECISIONS; do
  TFM_PREC=(); TORCH_PREC=()
  [ "$prec" = int8 ] && TFM_PREC=(--precision int8) && TORCH_PREC=(--int8)
for beam in $MODES; do
  for bs in 1 64; do
    lines=$([ "$bs" = 1 ] && echo "$LINES_B1" || echo "$LINES_B64")
    in=$OUT/src.$bs.txt
    if [ "$lines" -gt 0 ]; then head -n "$lines" "$SRC" > "$in"; else cp "$SRC" "$in"; fi
    n=$(wc -l < "$in")
    for th in $THREADS; do
      tag=$prec.b$beam.bs$bs.t$th
      best_tfm=""; best_torch=""
      for ((r = 1; r <= REPEAT; r++)); do
        s=$(date +%s.%N)
        "$TFM" translate -m "$MODEL" -b "$beam" --batch-size "$bs" --threads "$th" -q "${LIMITS[@]}" "${TFM_PREC[@]}" \
            < "$in" > "$OUT/tfm.$tag.txt" || { echo "tfm translate failed" >&2; exit 1; }
        e=$(date +%s.%N)
        t=$(awk -v s="$s" -v e="$e" 'BEGIN{printf "%.4f", e-s}')
        best_tfm=$(awk -v a="$t" -v b="$best_tfm" 'BEGIN{print (b == "" || a < b) ? a : b}')
        j=$(env $TORCH_ENV OMP_NUM_THREADS="$th" OPENBLAS_NUM_THREADS="$th" \
            $PY scripts/torch_decode.py "$MODEL" "$in" --tfm "$TFM" -b "$beam" --batch-size "$bs" \
            --threads "$th" "${LIMITS[@]}" "${TORCH_PREC[@]}" -o "$OUT/torch.$tag.txt") || { echo "torch_decode failed" >&2; exit 1; }
        t=$(echo "$j" | sed 's/.*"seconds": \([0-9.]*\).*/\1/')
        best_torch=$(awk -v a="$t" -v b="$best_torch" 'BEGIN{print (b == "" || a < b) ? a : b}')
      done
      agree=$(paste -d '\t' "$OUT/tfm.$tag.txt" "$OUT/torch.$tag.txt" | awk -F '\t' '$1 == $2 {k++} END {printf "%.1f%%", 100 * k / NR}')
      row=$(awk -v n="$n" -v a="$best_tfm" -v b="$best_torch" -v beam="$beam" -v bs="$bs" -v th="$th" \
            -v tt="$(tokens "$OUT/tfm.$tag.txt")" -v pt="$(tokens "$OUT/torch.$tag.txt")" -v ag="$agree" \
            -v prec="$prec" \
            'BEGIN{printf "| %s | %s | %d | %d | %d | %.1f | %.1f | **%.1fx** | %d / %d | %s |", prec, beam == 1 ? "greedy" : "beam " beam, bs, th, n, n / a, n / b, b / a, tt, pt, ag}')
      echo "$row"
      ROWS+=("$row")
    done
  done
done
done

echo
echo "load at end: $(uptime)"
echo
echo "greedy float32 agreement, tfm vs PyTorch: $check% (the check above)"
echo
echo "| precision | search | batch | threads | lines | tfm sent/s | PyTorch sent/s | tfm/PyTorch | output tokens tfm / PyTorch | same output |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
if [ "$LINES_B64" = 0 ] && [ -f "$REF" ]; then
  for prec in $PRECISIONS; do
  for beam in $MODES; do
    th=${THREADS%% *}
    echo "BLEU of tfm $prec, $( [ "$beam" = 1 ] && echo greedy || echo "beam $beam"), batch 64: $("$TFM" bleu "$OUT/tfm.$prec.b$beam.bs64.t$th.txt" "$REF" 2>/dev/null | head -1)"
    echo "BLEU of PyTorch $prec, same:           $("$TFM" bleu "$OUT/torch.$prec.b$beam.bs64.t$th.txt" "$REF" 2>/dev/null | head -1)"
  done
  done
fi
