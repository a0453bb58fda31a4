#!/usr/bin/env bash
# bench_mpi.sh: data-parallel training on one machine: 2 ranks x 1 thread
# (mpirun, an MPI build of tfm) against 1 process x 2 threads, alternated,
# on the Multi30k en-de recipe's model and batches (configs/multi30k-en-de.json,
# fp32, no validation inside the timed steps). Prints a Markdown row per run:
# tokens/s (median of log.jsonl's rows after the first), and for the 2-rank
# runs the share of the time spent in MPI sums and broadcasts (rank 0's
# view: waiting for the slower rank included). The 2-rank set-up runs twice:
# with each layer's gradients summed while the backward pass goes on (the
# default) and with one sum after it (TFM_MPI_OVERLAP=0).
#   scripts/bench_mpi.sh [STEPS] [ROUNDS]      (default 400 steps, 2 rounds)
# BTL=tcp sends the sums through TCP over loopback instead of Open MPI's
# shared memory (a stand-in for a network link).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-400}
ROUNDS=${2:-2}
make -s tfm data >/dev/null
make -s MPI=1 BUILD=build-mpi BIN=build-mpi/tfm >/dev/null
W=$(mktemp -d /tmp/tfm-bench-mpi.XXXXXX)
trap 'rm -rf "$W"' EXIT
. scripts/bench_lib.sh
# the 1-process set-up splits each product among its threads (the recipe's
# "auto" would give each thread half the batch, as the ranks do)
read -ra common <<<"$(recipe_args "$STEPS" 50) --set train.parallel=products"
echo "$(cpu_line); $(build-mpi/tfm --version | grep '^MPI')"
echo
echo "| round | set-up | tok/s (median) | time in MPI |"
echo "|---|---|---|---|"
mpi_opts=(-q --allow-run-as-root --oversubscribe -np 2)
transport="shared memory"
if [ "${BTL:-}" = tcp ]; then
    mpi_opts+=(--mca btl tcp,self --mca btl_tcp_if_include lo)
    transport="TCP over loopback"
fi
two_ranks() {   # label, overlap (1 or 0), run folder
    mpirun "${mpi_opts[@]}" -x TFM_MPI_OVERLAP="$2" build-mpi/tfm train "${common[@]}" \
        --set train.threads=1 --set train.out_dir="$3" --set train.model="$3.tfm" >/dev/null 2>"$3.err"
    comm=$(sed -n 's/^data-parallel: \([0-9.]*\) s of this run.s \([0-9.]*\) s .*(\([0-9.]*\)%.*/\1 s of \2 s (\3%)/p' "$3.err")
    echo "| $r | 2 ranks x 1 thread, $1 ($transport) | $(median_tok_s "$3/log.jsonl") | $comm |"
}
for r in $(seq "$ROUNDS"); do
    d=$W/one$r
    ./tfm train "${common[@]}" --set train.threads=2 --set train.out_dir="$d" \
        --set train.model="$d.tfm" -q >/dev/null
    echo "| $r | 1 process x 2 threads | $(median_tok_s "$d/log.jsonl") | - |"
    two_ranks "sums per layer during the backward" 1 "$W/two$r"
    two_ranks "one sum after the backward" 0 "$W/after$r"
done
