#!/usr/bin/env bash
# bench_attention.sh: softmax against linear attention as the length grows
# (make bench-attention builds the program and runs this). One process per
# measurement, so each peak RSS is its own. Writes the raw lines to
# runs/bench-attention.txt and, with gnuplot, the plot
# docs/img/attention-length.png.
#   scripts/bench_attention.sh BENCH_BINARY [THREADS]
#   scripts/bench_attention.sh --plot    (redraws the plot from the last run's lines)
set -euo pipefail
bin=${1:?usage: scripts/bench_attention.sh BENCH_BINARY [THREADS] | --plot}
threads=${2:-2}
cd "$(dirname "$0")/.."
mkdir -p runs
out=runs/bench-attention.txt
if [ "$bin" = --plot ]; then
    threads=$(awk '$1 == "decode" { print $4; exit }' "$out")
else
    : >"$out"
    echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
         "$(lscpu | sed -n 's/^Model name: *//p')" "$(./tfm --version | sed -n 's/^OpenBLAS kernel: //p')" | tee -a "$out"
    for len in 64 256 1024 4096; do
        for kind in softmax linear; do
            "$bin" train "$kind" "$len" "$threads" | tee -a "$out"
        done
    done
    for kind in softmax linear; do
        "$bin" decode "$kind" 4096 "$threads" | tee -a "$out"
    done
fi
command -v gnuplot >/dev/null || { echo "(no gnuplot: no plot)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for kind in softmax linear; do
    awk -v k="$kind" '$1 == "train" && $2 == k { print $4, $10 / $8 * 1000, $14 }' "$out" >"$tmp/train-$kind"
    awk -v k="$kind" '$1 == "decode" && $2 == k {
        for (i = 5; i < NF; i += 2) { split($i, a, "@"); if (a[1] == "ms_per_token") print a[2], $(i + 1) } }' \
        "$out" >"$tmp/decode-$kind"
done
mkdir -p docs/img
gnuplot <<GP
set terminal pngcairo size 1500,450 font ",10"
set output "docs/img/attention-length.png"
set multiplot layout 1,3 title "softmax vs linear attention (d 128, 4 heads, 2+2 layers, batches of about 4096 tokens, $threads threads)"
set logscale xy; set grid; set key top left
set xlabel "sentence length (tokens)"
set ylabel "training step: s per 1000 tokens a side"
plot "$tmp/train-softmax" u 1:2 w lp t "softmax", "$tmp/train-linear" u 1:2 w lp t "linear"
set ylabel "peak RSS (MB)"
plot "$tmp/train-softmax" u 1:3 w lp t "softmax", "$tmp/train-linear" u 1:3 w lp t "linear"
set xlabel "output position (tokens generated)"
set ylabel "ms per generated token"
plot "$tmp/decode-softmax" u 1:2 w lp t "softmax", "$tmp/decode-linear" u 1:2 w lp t "linear"
unset multiplot
GP
echo "plot: docs/img/attention-length.png"
