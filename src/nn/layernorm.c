/* layernorm: LayerNorm over the last dimension, forward and backward. */
#include "nn/layers.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Row r of layernorm_forward. */
static inline void layernorm_row(float *y, float *mean, float *rstd, const float *x,
                                 const float *g, const float *b, int d, int r)
{
    const float *xr = x + (long)r * d;
    float *yr = y + (long)r * d;
    /* Two passes (mean, then centred variance): no cancellation when
     * |mean| >> std, which a residual stream can reach. Both in rowexp.c's
     * fixed lanes: an `omp simd` reduction left its lanes on the stack and
     * read them back one by one, a store-forwarding stall that was most of
     * a decoder step's LayerNorm time (perf, int8 batch 1). */
    const float mu = row_sum(xr, d) / d;
    const float v = row_centered_sq_sum(xr, d, mu);
    float rs = 1.0f / sqrtf(v / d + LN_EPS);
#pragma omp simd
    for (int j = 0; j < d; j++) yr[j] = (xr[j] - mu) * rs * g[j] + b[j];
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
}

void layernorm_forward(float *y, float *mean, float *rstd, const float *x,
                       const float *g, const float *b, int n, int d)
{
    /* a decoder step's few rows stay out of libgomp (whose if(0) region
     * still allocates a team and ends with a futex wake) */
    if ((long)n * d <= 16384) {
        for (int r = 0; r < n; r++) layernorm_row(y, mean, rstd, x, g, b, d, r);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) layernorm_row(y, mean, rstd, x, g, b, d, r);
}

/* forward: y = x̂·g + b, x̂ = (x - μ)·rstd, with μ and rstd functions of the row.
 * With dx̂ = dy·g:  dx = rstd · (dx̂ - mean(dx̂) - x̂ · mean(dx̂ · x̂)),
 * dg = Σ_rows dy·x̂, db = Σ_rows dy. */
void layernorm_backward(float *dx, float *dg, float *db, const float *dy,
                        const float *x, const float *mean, const float *rstd,
                        const float *g, int n, int d)
{
    if (dx) {
#pragma omp parallel for schedule(static) if ((long)n * d > 16384)
        for (int r = 0; r < n; r++) {
            const float *xr = x + (long)r * d, *dyr = dy + (long)r * d;
            float *dxr = dx + (long)r * d;
            const float mu = mean[r], rs = rstd[r];
            float sum_dxh = 0, sum_dxh_xh = 0;
#pragma omp simd reduction(+ : sum_dxh, sum_dxh_xh)
            for (int j = 0; j < d; j++) {
                float dxh = dyr[j] * g[j];
                sum_dxh += dxh;
                sum_dxh_xh += dxh * (xr[j] - mu) * rs;
            }
            const float m1 = sum_dxh / d, m2 = sum_dxh_xh / d;
#pragma omp simd
            for (int j = 0; j < d; j++) {
                float xh = (xr[j] - mu) * rs;
                dxr[j] += rs * (dyr[j] * g[j] - m1 - xh * m2);
            }
        }
    }
    if (!dg && !db) return;
    /* Column sums: each thread owns a range of columns, so the row order of
     * every sum is fixed and there are no races. */
#pragma omp parallel if ((long)n * d > 16384)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)d * id / nt), c1 = (int)((long)d * (id + 1) / nt);
        for (int r = 0; r < n; r++) {
            const float *xr = x + (long)r * d, *dyr = dy + (long)r * d;
            const float mu = mean[r], rs = rstd[r];
            if (dg) {
#pragma omp simd
                for (int j = c0; j < c1; j++) dg[j] += dyr[j] * (xr[j] - mu) * rs;
            }
            if (db) {
#pragma omp simd
                for (int j = c0; j < c1; j++) db[j] += dyr[j];
            }
        }
    }
}
