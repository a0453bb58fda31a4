#!/usr/bin/env bash
# test_kernels.sh: the numeric suites under every OpenBLAS kernel this CPU can
# run (`make test-kernels`). OpenBLAS picks its kernel by the CPU (Haswell on
# AVX2 hosts, SkylakeX on AVX-512 ones, Cooperlake where avx512_bf16 is
# there), and users set OPENBLAS_CORETYPE too; each kernel sums in its own
# order, so a check that leans on one kernel's rounding passes on the
# developer's host and fails on another. Here each kernel the CPU has the
# instructions for runs the suites that train and translate; the last line
# is the total "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
SUITES=${SUITES:-unit cli_train cli_mpi cli_translate cli_finetune cli_quantize}
# SKIP_KERNEL: one not to run again (CI: the one `make test` just ran under)
SKIP_KERNEL=${SKIP_KERNEL:-}
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { local f; for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
kernels=()
has avx2 fma && kernels+=(Haswell)
has avx512f avx512bw avx512vl avx512dq avx512cd && kernels+=(SkylakeX)
has avx512f avx512bw avx512vl avx512_bf16 && kernels+=(Cooperlake)
[ ${#kernels[@]} -gt 0 ] || { echo "test-kernels: this CPU runs none of OpenBLAS's x86-64 kernels tfm tests (Haswell, SkylakeX, Cooperlake)"; echo "0 passed, 0 failed"; exit 0; }
total_p=0 total_f=0
for k in "${kernels[@]}"; do
    if [ "$k" = "$SKIP_KERNEL" ]; then echo "== $k: skipped (SKIP_KERNEL)"; continue; fi
    # the library's own word that it runs the kernel asked for (an older
    # OpenBLAS without it would quietly run the detected one)
    got=$(OPENBLAS_CORETYPE=$k "$TFM" --version | sed -n 's/^OpenBLAS kernel: \([A-Za-z0-9]*\).*/\1/p')
    if [ "$got" != "$k" ]; then
        echo "[$k] OpenBLAS runs $got when asked for $k" >&2
        total_f=$((total_f + 1)); continue
    fi
    echo "== OPENBLAS_CORETYPE=$k: $SUITES"
    out=$(OPENBLAS_CORETYPE=$k bash tests/run_all.sh $SUITES | sed "s/^/[$k] /")
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=${line#"[$k] "}; p=${p%% passed*}; f=${line#*, }; f=${f%% failed*}
    total_p=$((total_p + p)); total_f=$((total_f + f))
done
echo "$total_p passed, $total_f failed"
[ "$total_f" = 0 ]
