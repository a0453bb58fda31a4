# bench_lib.sh: what the benchmarks share (sourced by bench_mpi.sh,
# bench_parallel.sh, bench_shortlist.sh and bench_base.sh).

# recipe_args STEPS LOG_EVERY: the recipe's model and batches in fp32 for
# STEPS steps, with no validation, saving or averaging inside the timed steps.
recipe_args() {
    echo configs/multi30k-en-de.json --set train.precision=fp32 --set train.max_steps="$1" \
        --set train.max_time_s=0 --set train.valid_every=100000 --set train.save_every=100000 \
        --set train.average_last=0 --set train.ema=0 --set train.log_every="$2"
}

# median_tok_s LOG: the median tok/s of a log.jsonl's train rows, without
# the first (warm-up).
median_tok_s() {
    grep '"tok_per_s"' "$1" | sed 's/.*"tok_per_s": \([0-9.]*\).*/\1/' | tail -n +2 | median |
        awk '{ printf "%.0f", $1 }'
}

# median: the median of the numbers on stdin, one a line (of an even count,
# the mean of the middle two).
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# cpu_line: the CPU, its cores and the OpenBLAS kernel tfm runs.
cpu_line() {
    echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
         "$(./tfm --version | grep 'OpenBLAS kernel')"
}
