#!/usr/bin/env bash
# plot_log.sh: draws a training run's curves from its log (out_dir/log.jsonl)
# into a PNG: training loss and validation loss (left axis) and validation
# BLEU (right axis) against training time, with the averaged model
# (train.average_last) as a point at the end. The log is read as JSON
# (python3), so key order and missing keys do not matter; gnuplot draws.
#   scripts/plot_log.sh checkpoints/log.jsonl [out.png] [title]
# Needs gnuplot and python3: `scripts/deps.sh plot` installs them (Debian).
set -euo pipefail
usage="usage: scripts/plot_log.sh LOG.jsonl [OUT.png] [TITLE]"
log=${1:?$usage}
out=${2:-${log%.jsonl}.png}
title=${3:-$log}
[ -r "$log" ] || { echo "plot_log.sh: $log: cannot read" >&2; exit 1; }
py=$(command -v /usr/bin/python3 || command -v python3 || true)
if [ -z "$py" ] || ! command -v gnuplot >/dev/null; then
    echo "plot_log.sh: needs gnuplot and python3 (scripts/deps.sh plot installs them)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One "minutes value" file per curve; records without the value are skipped.
"$py" - "$log" "$tmp" "$(dirname "$0")" <<'PY'
import math, sys
sys.path.insert(0, sys.argv[3])
from runlog import records
log, tmp = sys.argv[1], sys.argv[2]
curves = {k: [] for k in ("train_loss", "valid_loss", "valid_bleu", "avg_loss", "avg_bleu",
                          "ema_loss", "ema_bleu")}
for r in records(log, "plot_log.sh"):
    t = r.get("elapsed_s")
    if not isinstance(t, (int, float)):
        continue
    # the end's averaged model and moving average (train.ema) are marks; the
    # latter hollow and larger, as both fall at the same minute
    kind = "avg" if r.get("averaged", 0) > 0 else "ema" if r.get("ema") else "valid"
    for key, name in (("train_loss", "train_loss"),
                      ("valid_loss", f"{kind}_loss"),
                      ("valid_bleu", f"{kind}_bleu")):
        v = r.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v):
            curves[name].append((t / 60, v))
for name, points in curves.items():
    with open(f"{tmp}/{name}", "w") as f:
        f.writelines(f"{t:.4f} {v:.6g}\n" for t, v in points)
PY
[ -s "$tmp/train_loss" ] || [ -s "$tmp/valid_loss" ] || {
    echo "plot_log.sh: $log: no loss records" >&2; exit 1; }

plots=()
[ -s "$tmp/train_loss" ] && plots+=("'$tmp/train_loss' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'train loss (label-smoothed)'")
[ -s "$tmp/valid_loss" ] && plots+=("'$tmp/valid_loss' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#ff7f0e' title 'valid loss (NLL)'")
[ -s "$tmp/avg_loss" ] && plots+=("'$tmp/avg_loss' using 1:2 with points pt 9 ps 2 lc rgb '#ff7f0e' title 'valid loss, averaged model'")
[ -s "$tmp/ema_loss" ] && plots+=("'$tmp/ema_loss' using 1:2 with points pt 12 ps 3 lw 2 lc rgb '#d62728' title 'valid loss, moving average'")
[ -s "$tmp/valid_bleu" ] && plots+=("'$tmp/valid_bleu' using 1:2 axes x1y2 with linespoints lw 2 pt 5 ps 0.6 lc rgb '#2ca02c' title 'valid BLEU (greedy)'")
[ -s "$tmp/avg_bleu" ] && plots+=("'$tmp/avg_bleu' using 1:2 axes x1y2 with points pt 11 ps 2 lc rgb '#2ca02c' title 'valid BLEU, averaged model'")
[ -s "$tmp/ema_bleu" ] && plots+=("'$tmp/ema_bleu' using 1:2 axes x1y2 with points pt 14 ps 3 lw 2 lc rgb '#d62728' title 'valid BLEU, moving average'")
joined=$(IFS=,; echo "${plots[*]}")
bleu_axis=""
[ -s "$tmp/valid_bleu" ] && bleu_axis=$'set y2label "BLEU"\nset y2tics\nset ytics nomirror\nset y2range [0:*]'
gnuplot <<GP
set terminal pngcairo size 960,600 noenhanced font ',11'
set output '$out'
set title '$title'
set xlabel 'training time (minutes)'
set ylabel 'loss per target token'
$bleu_axis
set grid
# the legend goes below the plot, where it hides no curve
set key outside bottom center horizontal maxrows 2
plot $joined
GP
echo "$out"
