/* blas: the only module that includes <cblas.h>. Picks a fast OpenBLAS
 * kernel at start-up, checks it, sets thread counts, and wraps sgemm as the
 * linear-layer products used by the model (row-major, weights (out, in)). */
#ifndef TFM_BLAS_H
#define TFM_BLAS_H

#include <stdbool.h>

#include "base/err.h"

/* Debian's OpenBLAS 0.3.21 does not know newer CPUs and falls back to slow
 * SSE3 kernels. OpenBLAS reads OPENBLAS_CORETYPE only when it loads, so when
 * the variable is unset and the detected core is a fallback on a CPU with
 * AVX-512 (or AVX2), this sets it and re-executes the program. It also
 * chooses how OpenMP's threads wait for each other unless the user did
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT): a short spin on an idle machine,
 * sleeping when other programs are running at the start (base/sysload.h).
 * A user's own settings are kept. Returns true when it changed a
 * variable: the caller (main.c, which alone decides about the process) then
 * re-executes the program, and calls blas_reexec_failed if that fails. */
bool blas_select_kernel(void);

/* The re-execution blas_select_kernel asked for failed: drops the chosen core
 * (OpenBLAS has already loaded with its own) and says so in --version. */
void blas_reexec_failed(void);

/* The kernel OpenBLAS runs, e.g. "SkylakeX", and how it was chosen. */
const char *blas_kernel_name(void);
const char *blas_kernel_source(void);
/* How OpenMP's threads wait, and who chose it (for --version). */
const char *blas_wait_policy(void);

/* Sets OpenBLAS and OpenMP threads; n <= 0 means all cores. Returns the count. */
int blas_set_threads(int n);

/* Checks sgemm against a plain loop on a small product: a wrong kernel is
 * TFM_ERR_NUMERIC, not a silently wrong model. */
TfmStatus blas_selftest(TfmErr *err);

/* C (m,n) = alpha * op(A) * op(B) + beta * C, row-major, with explicit leading
 * dimensions: the one sgemm entry point for the rest of tfm. */
void blas_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta,
               float *c, int ldc);

/* One sgemm's arguments, for blas_gemm_parallel. */
typedef struct {
    int trans_a, trans_b, m, n, k;
    float alpha;
    const float *a;
    int lda;
    const float *b;
    int ldb;
    float beta;
    float *c;
    int ldc;
} GemmArgs;

/* Independent products (no output overlaps another's inputs) whose rows of
 * C are shared out among the threads by work, each piece a one-thread
 * sgemm. For the tall products of training (rows = tokens), and for two
 * backward products side by side, this beats OpenBLAS splitting each product
 * itself: no hand-offs between threads inside a product. */
void blas_gemm_parallel(const GemmArgs *g, int count);

/* The precision of blas_gemm_parallel's products: float32 (sgemm, the
 * default) or, with bf16 on, bfloat16 inputs with float32 accumulation and
 * output (gemm_bf16.h; the caller has checked bf16_available). The other
 * entry points stay float32: they serve attention's per-head products,
 * which are small, and the self-tests. */
void blas_set_bf16(bool on);
bool blas_bf16(void);

/* How much faster than float32 one product (m x k)·(k x n) runs with bf16
 * products here, at the current thread count: the ratio of the times (> 1:
 * bf16 is faster), the best of a few runs each, rounding included. 0 when
 * there is no bf16 unit or no memory. Takes milliseconds (~3 ms at
 * 4096 x 512 x 2048 on 2 cores). */
double blas_bf16_speedup(int m, int n, int k);

/* Turns bf16 on after checking that the CPU has a bf16 unit and that
 * oneDNN's product is right (bf16_require, bf16_selftest); `what` names
 * the setting that asked for it in the error. */
TfmStatus blas_use_bf16(const char *what, TfmErr *err);

/* Strided batched gemm over `count` independent products. */
void blas_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, long stride_a,
                       const float *b, int ldb, long stride_b, float beta,
                       float *c, int ldc, long stride_c, int count);

#endif
