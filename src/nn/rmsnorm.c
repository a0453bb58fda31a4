/* rmsnorm: RMSNorm over the last dimension (Zhang and Sennrich 2019),
 * forward and backward, and the norm_* dispatch between it and LayerNorm. */
#include "nn/layers.h"

#include <math.h>
#include <omp.h>

/* Row r of rmsnorm_forward. */
static inline void rmsnorm_row(float *y, float *rstd, const float *x, const float *g, int d,
                               int r)
{
    const float *xr = x + (long)r * d;
    float *yr = y + (long)r * d;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < d; j++) s += xr[j] * xr[j];
    const float rs = 1.0f / sqrtf(s / d + LN_EPS);
#pragma omp simd
    for (int j = 0; j < d; j++) yr[j] = xr[j] * rs * g[j];
    if (rstd) rstd[r] = rs;
}

void rmsnorm_forward(float *y, float *rstd, const float *x, const float *g, int n, int d)
{
    /* as layernorm_forward: small calls stay out of libgomp */
    if ((long)n * d <= 16384) {
        for (int r = 0; r < n; r++) rmsnorm_row(y, rstd, x, g, d, r);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) rmsnorm_row(y, rstd, x, g, d, r);
}

/* forward: y = x̂·g, x̂ = x·rstd, rstd = (mean(x²) + eps)^-1/2. With
 * dx̂ = dy·g: ∂rstd/∂x_j = -rstd³·x_j/d, so
 *   dx = rstd · (dx̂ - x̂ · mean(dx̂ · x̂)),  dg = Σ_rows dy·x̂
 * (LayerNorm's formula without the mean terms). */
void rmsnorm_backward(float *dx, float *dg, const float *dy, const float *x, const float *rstd,
                      const float *g, int n, int d)
{
    if (dx) {
#pragma omp parallel for schedule(static) if ((long)n * d > 16384)
        for (int r = 0; r < n; r++) {
            const float *xr = x + (long)r * d, *dyr = dy + (long)r * d;
            float *dxr = dx + (long)r * d;
            const float rs = rstd[r];
            float sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < d; j++) sum += dyr[j] * g[j] * xr[j] * rs;
            const float m = sum / d;
#pragma omp simd
            for (int j = 0; j < d; j++) dxr[j] += rs * (dyr[j] * g[j] - xr[j] * rs * m);
        }
    }
    if (!dg) return;
    /* column sums, each thread owning a range of columns (fixed row order) */
#pragma omp parallel if ((long)n * d > 16384)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)d * id / nt), c1 = (int)((long)d * (id + 1) / nt);
        for (int r = 0; r < n; r++) {
            const float *xr = x + (long)r * d, *dyr = dy + (long)r * d;
            const float rs = rstd[r];
#pragma omp simd
            for (int j = c0; j < c1; j++) dg[j] += dyr[j] * xr[j] * rs;
        }
    }
}

void norm_forward(NormType t, float *y, float *mean, float *rstd, const float *x, const float *g,
                  const float *b, int n, int d)
{
    if (t == NORM_RMS) rmsnorm_forward(y, rstd, x, g, n, d);
    else layernorm_forward(y, mean, rstd, x, g, b, n, d);
}

void norm_backward(NormType t, float *dx, float *dg, float *db, const float *dy, const float *x,
                   const float *mean, const float *rstd, const float *g, int n, int d)
{
    if (t == NORM_RMS) rmsnorm_backward(dx, dg, dy, x, rstd, g, n, d);
    else layernorm_backward(dx, dg, db, dy, x, mean, rstd, g, n, d);
}
