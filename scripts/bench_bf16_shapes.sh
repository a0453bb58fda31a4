#!/usr/bin/env bash
# bench_bf16_shapes.sh: oneDNN's bf16 products with fixed shapes (brgemm)
# against run-time shapes (gemm:jit) at the shapes training runs (a batch of
# 4096 rows at d_model 256 and 512, the feed-forward layer, the output layer
# of 8000 pieces, the weight gradients), alternating (scripts/bf16_shapes.c).
# It tells whether src/nn/gemm_bf16.c's fixed-shape cache pays on this CPU.
#   scripts/bench_bf16_shapes.sh         (THREADS, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
W=$(mktemp -d /tmp/tfm-bf16shapes.XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O2 -fopenmp -o "$W/bf16_shapes" scripts/bf16_shapes.c -ldnnl
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, OMP_NUM_THREADS=${THREADS:-2}, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%F), commit $(git rev-parse --short HEAD)"
echo "| product | fixed, GFLOP/s | run-time, GFLOP/s | fixed / run-time | creation |"
echo "|---|---|---|---|---|"
for s in "4096 256 256 0 1" "4096 1024 256 0 1" "4096 256 1024 0 0" "256 256 4096 1 0" \
         "4096 512 512 0 1" "4096 2048 512 0 1" "512 512 4096 1 0" "4096 8000 256 0 1" \
         "4096 256 8000 0 0"; do
    OMP_NUM_THREADS=${THREADS:-2} "$W/bf16_shapes" $s
done
