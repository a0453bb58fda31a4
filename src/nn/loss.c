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
        const float mx = row_max(z, v);
        const double zy = z[tgt[r]];
        /* correct when the target holds the max and no earlier word does
         * (argmax takes the first index of the max) */
        int correct = zy == mx;
        for (int c = 0; correct && c < tgt[r]; c++) correct = z[c] != mx;
        /* One exp pass: z_c is replaced by exp(z_c - max) once it has been
         * added to Σ z (and the target's value read). Float partial sums in
         * 8 lanes: 10000 terms lose ~1e-6 relative, far below the noise of
         * a training loss. */
        float sz;
        const float se = grad_scale != 0 ? row_exp_inplace(z, v, mx, &sz)
                                         : row_exp_sum(z, v, mx, &sz);
        const double lse = mx + log(se);
        row_scratch[3 * r] = lse - on * zy - off * sz;
        row_scratch[3 * r + 1] = lse - zy;
        row_scratch[3 * r + 2] = correct;
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
