/* loss: fused log-softmax + label-smoothed cross-entropy + gradient. */
#include "loss.h"

#include <math.h>

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
        float mx = z[0];
        int arg = 0;
        for (int c = 1; c < v; c++)
            if (z[c] > mx) mx = z[c], arg = c;
        double se = 0, sz = 0;
        for (int c = 0; c < v; c++) {
            se += expf(z[c] - mx);
            sz += z[c];
        }
        const double lse = mx + log(se);
        const double zy = z[tgt[r]];
        row_scratch[3 * r] = lse - on * zy - off * sz;
        row_scratch[3 * r + 1] = lse - zy;
        row_scratch[3 * r + 2] = arg == tgt[r];
        if (grad_scale != 0) {
            const float flse = (float)lse, foff = (float)off;
            for (int c = 0; c < v; c++) z[c] = grad_scale * (expf(z[c] - flse) - foff);
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
