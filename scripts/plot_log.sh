#!/usr/bin/env bash
# plot_log.sh: draws train/valid loss and valid BLEU against step from a
# training log (out_dir/log.jsonl) into a PNG, with gnuplot (Debian's gnuplot-nox).
#   scripts/plot_log.sh checkpoints/log.jsonl [out.png]
set -euo pipefail
log=${1:?usage: plot_log.sh LOG.jsonl [OUT.png]}
out=${2:-${log%.jsonl}.png}
command -v gnuplot >/dev/null || { echo "plot_log.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One "step value" file per key; a record without the key is skipped.
field() {
    sed -n "s/.*\"step\": \([0-9.e+-]*\).*\"$1\": \([0-9.e+-]*\).*/\1 \2/p" "$log" >"$tmp/$1"
}
field train_loss
field valid_loss
field valid_bleu
plots="'$tmp/train_loss' using 1:2 with lines lw 2 title 'train loss (label-smoothed)'"
[ -s "$tmp/valid_loss" ] && plots="$plots, '$tmp/valid_loss' using 1:2 with linespoints lw 2 title 'valid loss (NLL)'"
[ -s "$tmp/valid_bleu" ] && plots="$plots, '$tmp/valid_bleu' using 1:2 axes x1y2 with linespoints lw 2 title 'valid BLEU'"
gnuplot <<GP
set terminal pngcairo size 900,540 noenhanced
set output '$out'
set title '$log'
set xlabel 'step'
set ylabel 'loss per token'
$( [ -s "$tmp/valid_bleu" ] && printf "set y2label 'BLEU'\nset y2tics\nset ytics nomirror\n" )
set grid
set key top right
plot $plots
GP
echo "$out"
