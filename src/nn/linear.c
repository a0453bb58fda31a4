/* linear: affine layers and the position-wise FFN over sgemm (blas_gemm). */
#include "nn/layers.h"

#include <omp.h>
#include <string.h>

#include "nn/blas.h"

void linear_forward(float *y, const float *x, const float *w, const float *b,
                    int n, int in, int out)
{
    /* Fill y with the bias rows, then y += x·wᵀ in one gemm (beta = 1). */
    float beta = 0.0f;
    if (b) {
#pragma omp parallel for schedule(static) if ((long)n * out > 16384)
        for (int r = 0; r < n; r++) memcpy(y + (long)r * out, b, (size_t)out * sizeof *y);
        beta = 1.0f;
    }
    blas_gemm_parallel(&(GemmArgs){0, 1, n, out, in, 1.0f, x, in, w, in, beta, y, out}, 1);
}

/* forward: y = x·wᵀ + b, so dx += dy·w, dw += dyᵀ·x, db += Σ_rows dy. */
void linear_backward(float *dx, float *dw, float *db, const float *dy,
                     const float *x, const float *w, int n, int in, int out)
{
    GemmArgs g[2];
    int count = 0;
    if (dx) g[count++] = (GemmArgs){0, 0, n, in, out, 1.0f, dy, out, w, in, 1.0f, dx, in};
    if (dw) g[count++] = (GemmArgs){1, 0, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, in};
    blas_gemm_parallel(g, count);
    if (!db) return;
    /* Column sums; threads own column ranges (fixed order, no races). */
#pragma omp parallel if ((long)n * out > 16384)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)out * id / nt), c1 = (int)((long)out * (id + 1) / nt);
        for (int r = 0; r < n; r++) {
            const float *dyr = dy + (long)r * out;
#pragma omp simd
            for (int j = c0; j < c1; j++) db[j] += dyr[j];
        }
    }
}

void ffn_forward(float *y, float *h, const float *x, const float *w1, const float *b1,
                 const float *w2, const float *b2, int n, int d, int f,
                 float p, uint64_t seed)
{
    linear_forward(h, x, w1, b1, n, d, f);
    const long nf = (long)n * f;
#pragma omp parallel for simd schedule(static) if (nf > 16384)
    for (long i = 0; i < nf; i++) h[i] = h[i] > 0 ? h[i] : 0.0f;
    if (p > 0) dropout_apply(h, h, nf, p, seed);
    linear_forward(y, h, w2, b2, n, f, d);
}

/* forward: h = drop(relu(a)), y = h·w2ᵀ + b2, a = x·w1ᵀ + b1.
 * dh = dy·w2; the ReLU and the dropout pass a gradient exactly where h > 0
 * (scaled by the dropout scale there), so da = [h > 0]·scale·dh. */
void ffn_backward(float *dx, float *dw1, float *db1, float *dw2, float *db2,
                  float *dh, const float *dy, const float *x, const float *h,
                  const float *w1, const float *w2, int n, int d, int f, float p)
{
    const long nf = (long)n * f;
    const GemmArgs gh = {0, 0, n, f, d, 1.0f, dy, d, w2, f, 0.0f, dh, f};
    const GemmArgs gw2 = {1, 0, d, f, n, 1.0f, dy, d, h, f, 1.0f, dw2, f};
    blas_gemm_parallel((GemmArgs[]){gh, gw2}, 2);
    linear_backward(NULL, NULL, db2, dy, h, w2, n, f, d);     /* db2 only */
    const float scale = p > 0 ? dropout_scale(p) : 1.0f;
    /* Branch-free (a mask factor), so it vectorizes: h > 0 is a coin flip
     * and a branch would mispredict half the time. */
#pragma omp parallel for simd schedule(static) if (nf > 16384)
    for (long i = 0; i < nf; i++) dh[i] *= h[i] > 0 ? scale : 0.0f;
    linear_backward(dx, dw1, db1, dh, x, w1, n, d, f);
}
