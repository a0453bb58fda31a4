#!/usr/bin/env bash
# bench_train.sh: training throughput of tfm against PyTorch 1.13 on the same
# shapes and batch budget, plus the sgemm peak of this machine, in one run.
# Shapes: tiny (d=128, 3+3), small (d=256, 3+3), base (d=512, 6+6), V=8000,
# Multi30k de-en lengths. Threads 1 and 2. Prints a Markdown table, with the
# sgemm peak and the CPU's float32 FMA ceiling (scripts/fma_peak.c) measured in the same run.
#   scripts/bench_train.sh [SHAPES...]      (default: tiny small base)
# Env: STEPS_TINY/STEPS_SMALL/STEPS_BASE (timed steps after 50 warm-up steps
# for tfm; none for base, whose first of 8 steps is then timed too), THREADS (default "1 2"), KERNELS (default "env SkylakeX": the
# OPENBLAS_CORETYPE both programs run with; "env" keeps the caller's),
# PyTorch runs twice per cell, in the two set-ups that are its best here,
# and the faster counts: Debian's pthread OpenBLAS with OMP_WAIT_POLICY=PASSIVE
# (without it torch's OpenMP pool and OpenBLAS's pthreads spin against each
# other on 2 cores), and the OpenMP build of OpenBLAS (LD_LIBRARY_PATH), one
# thread pool as in tfm. Both take tfm's batches (bench_torch_train.py).
# Where the CPU has a bf16 unit (tfm --version), a second table: tfm with
# train.precision bf16 against PyTorch under torch.autocast("cpu", bfloat16)
# (set-up (a)) and PyTorch's best float32, with oneDNN's bf16 matmul peak
# (scripts/bf16_peak.c) measured in the same run. BF16=0 skips it.
# PARALLEL (default "products"): tfm's train.parallel for the fp32 runs
# ("sentences": each thread a replica on its share of the batch).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s tfm data >/dev/null
TFM=$PWD/tfm
W=$(mktemp -d /tmp/tfm-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
THREADS=${THREADS:-"1 2"}
PARALLEL=${PARALLEL:-products}
KERNELS=${KERNELS:-"env SkylakeX"}
SHAPES=${*:-"tiny small base"}
OMP_BLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp

# sgemm peak with the same OpenBLAS build tfm links.
cc -O2 -o "$W/sgemm_peak" scripts/sgemm_peak.c $(pkg-config --cflags openblas) \
    -L$OMP_BLAS -Wl,-rpath=$OMP_BLAS -l:libopenblas.so.0
# oneDNN's bf16 matmul peak (fixed shape, its best kernel).
cc -O2 -o "$W/bf16_peak" scripts/bf16_peak.c -ldnnl
BF16=${BF16:-1}
"$TFM" --version | grep -q '^bf16 products: none' && BF16=0
# The CPU's float32 FMA ceiling (registers only): what no program can pass.
cc -O2 -march=native -fopenmp -o "$W/fma_peak" scripts/fma_peak.c

# One vocabulary and the corpus's BPE lengths per pair (PyTorch's batches are
# cut from them by tfm's rule), and the mean lengths with </s> or <s>.
$TFM bpe learn --vocab-size 8000 -o "$W/vocab.txt" data/train.de data/train.en
$TFM bpe encode -v "$W/vocab.txt" <data/train.de | awk '{print NF}' >"$W/src.len"
$TFM bpe encode -v "$W/vocab.txt" <data/train.en | awk '{print NF}' >"$W/tgt.len"
paste -d' ' "$W/src.len" "$W/tgt.len" >"$W/lengths"
read -r LS LT < <(awk '{s += $1 + 1; t += $2 + 1} END {printf "%.3f %.3f\n", s / NR, t / NR}' "$W/lengths")

shape() {   # name -> "d heads layers d_ff timed_steps warmup_steps"
    case $1 in
    tiny)  echo "128 4 3 512 ${STEPS_TINY:-150} 50" ;;
    small) echo "256 4 3 1024 ${STEPS_SMALL:-50} 50" ;;
    base)  echo "512 8 6 2048 ${STEPS_BASE:-8} 0" ;;
    *) echo "bench_train.sh: unknown shape $1" >&2; exit 2 ;;
    esac
}

# Training FLOPs per second from tokens per second: 6 x multiply-adds
# (forward, and backward twice) per token, projections, attention at the
# corpus's mean lengths, and the output layer on target tokens.
gflops() {  # tok_per_s d layers d_ff
    awk -v tps="$1" -v d="$2" -v L="$3" -v f="$4" -v ls="$LS" -v lt="$LT" -v V=8000 'BEGIN {
        src = L * (4 * d * d + 2 * d * f + 2 * ls * d) + L * 2 * d * d
        tgt = L * (4 * d * d + 2 * d * f + 2 * lt * d) + L * (2 * d * d + 2 * ls * d) + V * d
        per_pair = ls * src + lt * tgt
        printf "%.1f", 6 * per_pair * tps / (ls + lt) / 1e9 }'
}

echo "# tfm vs PyTorch training, $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo "# tfm: $($TFM --version | grep "OpenBLAS kernel"); train.parallel $PARALLEL (fp32); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# mean lengths with </s>/<s>: source $LS, target $LT; batch_tokens 4096 (padded src+tgt) for both;"
echo "# PyTorch: best of (a) pthread OpenBLAS, OMP_WAIT_POLICY=PASSIVE and (b) OpenMP OpenBLAS;"
echo "# tok/s = real source+target tokens per second of training"
echo
echo "# FMA ceiling: float32 multiply-adds on registers only (scripts/fma_peak.c);"
echo "# 2x needs: the GFLOP/s of 2x PyTorch's tok/s, as a share of that ceiling"
echo
echo "| kernel | shape | threads | sgemm peak GFLOP/s | FMA ceiling GFLOP/s | tfm tok/s | tfm GFLOP/s (% of sgemm peak) | PyTorch tok/s (a / b) | tfm / PyTorch | 2x needs |"
echo "|---|---|---|---|---|---|---|---|---|---|"
BF16_ROWS=()
for kernel in $KERNELS; do
if [ "$kernel" = env ]; then kernel_env=""; else kernel_env="OPENBLAS_CORETYPE=$kernel"; fi
for name in $SHAPES; do
    read -r d heads layers dff steps warm < <(shape "$name")
    for th in $THREADS; do
        kname=$(env $kernel_env OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th "$W/sgemm_peak" 2048 5 |
                tee "$W/peak.json" | sed 's/.*"kernel": "\([^"]*\)".*/\1/')
        peak=$(sed 's/.*"gflops": \([0-9.]*\).*/\1/' "$W/peak.json")
        fma=$(OMP_NUM_THREADS=$th "$W/fma_peak" | sed 's/.*"gflops": \([0-9.]*\).*/\1/')
        mkdir -p "$W/run"
        cat >"$W/run/cfg.json" <<JSON
{
  "data": {"train_src": "$PWD/data/train.de", "train_tgt": "$PWD/data/train.en",
           "valid_src": "$PWD/data/val.de", "valid_tgt": "$PWD/data/val.en",
           "vocab": "$W/vocab.txt", "max_len": 128},
  "model": {"d_model": $d, "heads": $heads, "enc_layers": $layers, "dec_layers": $layers,
            "d_ff": $dff, "dropout": 0.1},
  "train": {"batch_tokens": 4096, "max_steps": $((warm + steps)), "valid_every": 100000,
            "save_every": 100000, "out_dir": "$W/run/ck", "model": "$W/run/model.tfm"}
}
JSON
        (cd "$W/run" && env $kernel_env $TFM train cfg.json --restart -q --threads "$th" \
            --set train.parallel="$PARALLEL" >/dev/null)
        tfm_tps=$(grep '"train_loss"' "$W/run/ck/log.jsonl" | tail -n 1 |
                  sed 's/.*"tok_per_s": \([0-9.e+]*\).*/\1/')
        torch_run() {   # ENV... [--bf16]
            local envs=() extra=()
            for a in "$@"; do case $a in --*) extra+=("$a") ;; *) envs+=("$a") ;; esac; done
            env $kernel_env "${envs[@]}" /usr/bin/python3 scripts/bench_torch_train.py "${extra[@]}" \
                --d "$d" --heads "$heads" --layers "$layers" --d-ff "$dff" --vocab 8000 \
                --threads "$th" --batch-tokens 4096 --lengths "$W/lengths" \
                --warmup 3 --steps "$(( steps < 20 ? steps : 20 ))" |
                sed 's/.*"tok_per_s": \([0-9.e+]*\).*/\1/'
        }
        torch_a=$(torch_run OMP_WAIT_POLICY=PASSIVE)
        torch_b=$(torch_run LD_LIBRARY_PATH=$OMP_BLAS)
        torch_tps=$(awk -v a="$torch_a" -v b="$torch_b" 'BEGIN { print (a > b ? a : b) }')
        g=$(gflops "$tfm_tps" "$d" "$layers" "$dff")
        g2=$(gflops "$(awk -v b="$torch_tps" 'BEGIN { print 2 * b }')" "$d" "$layers" "$dff")
        pct() { awk -v g="$1" -v p="$2" 'BEGIN { printf "%.0f%%", 100 * g / p }'; }
        echo "| $kname | $name (d=$d, $layers+$layers) | $th | $peak | $fma | ${tfm_tps%.*} | $g ($(pct "$g" "$peak")) | ${torch_a%.*} / ${torch_b%.*} | $(awk -v a="$tfm_tps" -v b="$torch_tps" 'BEGIN { printf "%.2fx", a / b }') | $g2 ($(pct "$g2" "$fma")) |"
        if [ "$BF16" = 1 ]; then
            bpeak=$(OMP_NUM_THREADS=$th "$W/bf16_peak" 2048 5 | sed 's/.*"gflops": \([0-9.]*\).*/\1/')
            (cd "$W/run" && env $kernel_env $TFM train cfg.json --restart -q --threads "$th" \
                --set train.precision=bf16 >/dev/null)
            bf_tps=$(grep '"train_loss"' "$W/run/ck/log.jsonl" | tail -n 1 |
                     sed 's/.*"tok_per_s": \([0-9.e+]*\).*/\1/')
            torch_bf=$(torch_run OMP_WAIT_POLICY=PASSIVE --bf16)
            best=$(awk -v a="$torch_tps" -v b="$torch_bf" 'BEGIN { print (a > b ? a : b) }')
            gb=$(gflops "$bf_tps" "$d" "$layers" "$dff")
            ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
            BF16_ROWS+=("| $kname | $name (d=$d, $layers+$layers) | $th | $bpeak | ${bf_tps%.*} | $gb ($(pct "$gb" "$bpeak")) | ${tfm_tps%.*} | ${torch_tps%.*} | ${torch_bf%.*} | $(ratio "$bf_tps" "$best") | $(ratio "$bf_tps" "$tfm_tps") |")
        fi
    done
done
done
if [ "${#BF16_ROWS[@]}" -gt 0 ]; then
    echo
    echo "# bf16: tfm train.precision bf16 against PyTorch's torch.autocast(\"cpu\", bfloat16) (set-up (a));"
    echo "# bf16 peak: oneDNN's bf16 matmul at 2048^3 (scripts/bf16_peak.c); best PyTorch = the faster of its fp32 and bf16"
    echo
    echo "| kernel | shape | threads | bf16 peak GFLOP/s | tfm bf16 tok/s | tfm bf16 GFLOP/s (% of bf16 peak) | tfm fp32 tok/s | PyTorch fp32 tok/s (best) | PyTorch bf16 autocast tok/s | tfm bf16 / best PyTorch | tfm bf16 / tfm fp32 |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${BF16_ROWS[@]}"
fi
