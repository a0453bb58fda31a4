/* loss: fused log-softmax + label-smoothed cross-entropy + gradient. */
#include "nn/loss.h"

#include <math.h>

#include "nn/layers.h"

/* With lse = log Σ exp(z): log p_c = z_c - lse, so
 *   loss = -(1-eps)·(z_y - lse) - (eps/V)·Σ_c (z_c - lse)
 *        = lse - (1-eps)·z_y - (eps/V)·Σ_c z_c,
 * and ∂loss/∂z_c = p_c - (1-eps)·[c = y] - eps/V. */
void loss_xent_smoothed(float *logits, const int *tgt, int m, int v, float eps,
                        float grad_scale, double *row_scratch, double *loss,
                        double *nll, long *n_correct)
{
    const double on = 1.0 - eps, off = (double)eps / v;
#pragma omp parallel for schedule(static) if ((long)m * v > 16384)
    for (int r = 0; r < m; r++) {
        float *z = logits + (long)r * v;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int c = 0; c < v; c++) mx = z[c] > mx ? z[c] : mx;
        int arg = v;            /* the first index of the max */
#pragma omp simd reduction(min : arg)
        for (int c = 0; c < v; c++) arg = z[c] == mx && c < arg ? c : arg;
        const double zy = z[tgt[r]];
        /* One exp pass: z_c is replaced by exp(z_c - max) once it has been
         * added to Σ z (and the target's value read). Float partial sums in
         * SIMD lanes: 8000 terms lose ~1e-6 relative, far below the noise of
         * a training loss. */
        float se = 0, sz = 0;
        if (grad_scale != 0) {
#pragma omp simd reduction(+ : se, sz)
            for (int c = 0; c < v; c++) {
                sz += z[c];
                const float e = exp_fast(z[c] - mx);
                se += e;
                z[c] = e;
            }
        } else {
#pragma omp simd reduction(+ : se, sz)
            for (int c = 0; c < v; c++) {
                sz += z[c];
                se += exp_fast(z[c] - mx);
            }
        }
        const double lse = mx + log(se);
        row_scratch[3 * r] = lse - on * zy - off * sz;
        row_scratch[3 * r + 1] = lse - zy;
        row_scratch[3 * r + 2] = arg == tgt[r];
        if (grad_scale != 0) {
            /* p_c = exp(z_c - max) / Σ */
            const float a = grad_scale / (float)se, b = grad_scale * (float)off;
            /* the pragma: GCC's -O2 cost model leaves a loop of unknown
             * length scalar */
#pragma omp simd
            for (int c = 0; c < v; c++) z[c] = z[c] * a - b;
            z[tgt[r]] -= grad_scale * (float)on;
        }
    }
    double l = 0, n = 0;
    long ok = 0;
    for (int r = 0; r < m; r++) {
        l += row_scratch[3 * r];
        n += row_scratch[3 * r + 1];
        ok += row_scratch[3 * r + 2] != 0;
    }
    *loss = l;
    *nll = n;
    if (n_correct) *n_correct = ok;
}
