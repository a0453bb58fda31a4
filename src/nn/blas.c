/* blas: kernel selection, self-test and sgemm wrappers over OpenBLAS. */
#include "nn/blas.h"

#include "nn/gemm_bf16.h"
#include "base/sysload.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kernel_source = "detected by OpenBLAS";
static const char *wait_source = "set by OMP_WAIT_POLICY or GOMP_SPINCOUNT";

/* Cores OpenBLAS falls back to when it does not recognise the CPU. */
static int is_fallback_core(const char *core)
{
    static const char *const fallback[] = {
        "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
        "Katmai", "Coppermine", "Northwood", "Banias", "generic", "Generic",
    };
    for (size_t i = 0; i < sizeof fallback / sizeof *fallback; i++)
        if (core && strcmp(core, fallback[i]) == 0) return 1;
    return 0;
}

/* The core type to ask for on this CPU, or NULL to keep OpenBLAS's choice. */
static const char *better_core(void)
{
    if (!is_fallback_core(openblas_get_corename())) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
    if (__builtin_cpu_supports("avx2")) return "Haswell";
    return NULL;
}

bool blas_select_kernel(void)
{
    if (getenv("TFM_REEXEC")) {             /* the second run: never loop */
        if (getenv("TFM_CORETYPE_CHOSEN")) kernel_source = "chosen by tfm";
        else if (getenv("OPENBLAS_CORETYPE")) kernel_source = "set by OPENBLAS_CORETYPE";
        if (getenv("TFM_WAIT_CHOSEN")) wait_source = getenv("TFM_WAIT_CHOSEN");
        return false;
    }
    int changed = 0;
    if (getenv("OPENBLAS_CORETYPE")) {
        kernel_source = "set by OPENBLAS_CORETYPE";
    } else {
        const char *want = better_core();
        if (want) {
            setenv("OPENBLAS_CORETYPE", want, 1);
            setenv("TFM_CORETYPE_CHOSEN", "1", 1);
            changed = 1;
        }
    }
    /* libgomp spins ~300k iterations at each barrier before sleeping; when
     * the machine is shared and a peer thread is descheduled, the many short
     * parallel regions of decoding then spend most of their time spinning
     * (measured: 5x slower translation at load 4 on 2 cores). On an idle
     * machine a short spin keeps back-to-back regions fast; when other
     * programs are already running, even that spin costs 3-4x (one busy
     * process on 2 cores, BENCHMARKS.md), and the threads sleep instead. */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
        if (sysload_other_runnable() > 0) {
            setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
            setenv("TFM_WAIT_CHOSEN", "passive, chosen by tfm (other programs were running)", 1);
        } else {
            setenv("GOMP_SPINCOUNT", "10000", 1);
            setenv("TFM_WAIT_CHOSEN", "a short spin, chosen by tfm (the machine was idle)", 1);
        }
        changed = 1;
    }
    if (!changed) return false;
    /* OpenBLAS and libgomp read these variables only when they load. */
    setenv("TFM_REEXEC", "1", 1);
    return true;
}

void blas_reexec_failed(void)
{
    /* carry on with the defaults, and say so in --version */
    if (getenv("TFM_CORETYPE_CHOSEN")) {
        unsetenv("OPENBLAS_CORETYPE");
        kernel_source = "detected by OpenBLAS (re-exec failed)";
    }
    if (getenv("TFM_WAIT_CHOSEN")) wait_source = "libgomp's default (re-exec failed)";
}

const char *blas_kernel_name(void) { return openblas_get_corename(); }
const char *blas_kernel_source(void) { return kernel_source; }
const char *blas_wait_policy(void) { return wait_source; }

int blas_set_threads(int n)
{
    if (n <= 0) n = omp_get_num_procs();
    openblas_set_num_threads(n);
    omp_set_num_threads(n);
    return n;
}

TfmStatus blas_selftest(TfmErr *err)
{
    enum { M = 37, N = 29, K = 53 };
    float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7919) % 23) / 11.0f - 1.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 104729) % 19) / 9.0f - 1.0f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N,
                0.0f, c, N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int k = 0; k < K; k++) ref += (double)a[i * K + k] * b[k * N + j];
            if (!(fabs(c[i * N + j] - ref) <= 1e-4 * (1 + fabs(ref))))
                return err_set(err, TFM_ERR_NUMERIC,
                               "OpenBLAS kernel %s computes wrong sgemm results "
                               "(set OPENBLAS_CORETYPE to another core)",
                               openblas_get_corename());
        }
    return TFM_OK;
}

void blas_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta,
               float *c, int ldc)
{
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
}

static void gemm_run_rows(const GemmArgs *g, int r0, int r1)
{
    if (r1 <= r0) return;
    /* Rows r0..r1 of C are rows of op(A): columns of A when it is transposed. */
    const float *a = g->trans_a ? g->a + r0 : g->a + (long)r0 * g->lda;
    blas_gemm(g->trans_a, g->trans_b, r1 - r0, g->n, g->k, g->alpha, a, g->lda, g->b, g->ldb,
              g->beta, g->c + (long)r0 * g->ldc, g->ldc);
}

enum { PAR_MAX_PRODUCTS = 4, PAR_MIN_ROWS = 32 };

static bool use_bf16;

void blas_set_bf16(bool on) { use_bf16 = on; }

TfmStatus blas_use_bf16(const char *what, TfmErr *err)
{
    TfmStatus st = bf16_require(what, err);
    if (st == TFM_OK) st = bf16_selftest(err);
    if (st == TFM_OK) use_bf16 = true;
    return st;
}
bool blas_bf16(void) { return use_bf16; }

/* The best of reps timings of one product, with or without bf16. */
static double time_product(const GemmArgs *g, bool bf16, int reps)
{
    const bool was = use_bf16;
    use_bf16 = bf16;
    double best = INFINITY;
    for (int r = 0; r <= reps; r++) {          /* the first run warms up */
        double t0 = omp_get_wtime();
        blas_gemm_parallel(g, 1);
        double t = omp_get_wtime() - t0;
        if (r > 0 && t < best) best = t;
    }
    use_bf16 = was;
    return best;
}

double blas_bf16_speedup(int m, int n, int k)
{
    if (!bf16_available() || m <= 0 || n <= 0 || k <= 0) return 0;
    float *a = xmalloc((size_t)m * k * sizeof *a, NULL), *b = xmalloc((size_t)k * n * sizeof *b, NULL),
          *c = xmalloc((size_t)m * n * sizeof *c, NULL);
    double ratio = 0;
    if (a && b && c) {
        for (size_t i = 0; i < (size_t)m * k; i++) a[i] = (float)(i % 17) * 0.125f - 1.0f;
        for (size_t i = 0; i < (size_t)k * n; i++) b[i] = (float)(i % 13) * 0.0625f - 0.4f;
        GemmArgs g = {0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n};
        double fp32 = time_product(&g, false, 3), bf16 = time_product(&g, true, 3);
        ratio = bf16 > 0 ? fp32 / bf16 : 0;
    }
    free(a);
    free(b);
    free(c);
    return ratio;
}

void blas_gemm_parallel(const GemmArgs *g, int count)
{
    if (use_bf16 && !omp_in_parallel()) {
        /* oneDNN threads each product itself; inputs shared by the
         * products are rounded to bf16 once (outputs never overlap inputs) */
        bool ran[PAR_MAX_PRODUCTS];
        for (int i0 = 0; i0 < count; i0 += PAR_MAX_PRODUCTS) {
            const int n = count - i0 < PAR_MAX_PRODUCTS ? count - i0 : PAR_MAX_PRODUCTS;
            bf16_gemm_group(g + i0, n, ran);
            for (int i = 0; i < n; i++)
                if (!ran[i]) gemm_run_rows(&g[i0 + i], 0, g[i0 + i].m);
        }
        return;
    }
    const int nt = omp_get_max_threads();
    double start[PAR_MAX_PRODUCTS] = {0}, total = 0;
    long rows = 0;
    for (int i = 0; i < count && i < PAR_MAX_PRODUCTS; i++) {
        start[i] = total;
        total += (double)g[i].m * g[i].n * g[i].k;
        rows += g[i].m;
    }
    if (nt < 2 || omp_in_parallel() || count > PAR_MAX_PRODUCTS ||
        rows < (long)PAR_MIN_ROWS * nt) {
        for (int i = 0; i < count; i++) gemm_run_rows(&g[i], 0, g[i].m);
        return;
    }
    /* Thread t owns the work range [total·t/T, total·(t+1)/T); a row goes to
     * the thread whose range holds the row's start, so the pieces tile each
     * product exactly. */
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const double w0 = total * t / T, w1 = total * (t + 1) / T;
        for (int i = 0; i < count; i++) {
            const double per_row = (double)g[i].n * g[i].k;
            if (per_row <= 0) {     /* nothing to multiply: C = beta·C, once */
                if (t == 0) gemm_run_rows(&g[i], 0, g[i].m);
                continue;
            }
            long r0 = (long)ceil((w0 - start[i]) / per_row);
            long r1 = t + 1 == T ? g[i].m : (long)ceil((w1 - start[i]) / per_row);
            r0 = r0 < 0 ? 0 : r0 > g[i].m ? g[i].m : r0;
            r1 = r1 < 0 ? 0 : r1 > g[i].m ? g[i].m : r1;
            gemm_run_rows(&g[i], (int)r0, (int)r1);
        }
    }
}

void blas_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, long stride_a,
                       const float *b, int ldb, long stride_b, float beta,
                       float *c, int ldc, long stride_c, int count)
{
    for (int i = 0; i < count; i++)
        blas_gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda,
                  b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
}
