/* loss: fused log-softmax + label-smoothed cross-entropy + gradient. */
#include "nn/loss.h"

#include <math.h>
#include <omp.h>

#include "nn/layers.h"

/* Whether y is the argmax of row z, whose max is mx: it holds the max and
 * no earlier entry does (argmax takes the first index of the max). */
static int is_argmax(const float *z, int y, float mx)
{
    if (z[y] != mx) return 0;
    for (int c = 0; c < y; c++)
        if (z[c] == mx) return 0;
    return 1;
}

/* The rows' (loss, nll, correct) triples, added in row order: the same
 * sums whatever the thread count. */
static void sum_rows(const double *row_scratch, int m, double *loss, double *nll,
                     long *n_correct)
{
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
        const int correct = is_argmax(z, tgt[r], mx);
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
    sum_rows(row_scratch, m, loss, nll, n_correct);
}

/* With d = log p_a - log p_b and S = Σ_c (p_a,c - p_b,c)·d_c (the symmetric
 * KL):
 *   ∂S/∂z_a,c = p_a,c·(d_c - E_a) + p_a,c - p_b,c,   E_a = Σ p_a·d,
 *   ∂S/∂z_b,c = p_b,c·(E_b - d_c) + p_b,c - p_a,c,   E_b = Σ p_b·d,
 * and S = E_a - E_b. d_c = (z_a,c - z_b,c) - (lse_a - lse_b): the difference
 * of the raw rows is kept aside before exp overwrites them, so no log is
 * needed. */
void loss_xent_rdrop(float *logits, const int *tgt, int m, int v, float eps, float alpha,
                     float grad_scale, float *diff_scratch, int slices, double *row_scratch,
                     double *loss, double *nll, long *n_correct)
{
    const double on = 1.0 - eps, off = (double)eps / v;
    const float k = alpha / 4;
    int threads = omp_get_max_threads() < slices ? omp_get_max_threads() : slices;
    if ((long)m * v <= 16384) threads = 1;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int r = 0; r < m; r++) {
        float *za = logits + (long)r * v, *zb = logits + (long)(r + m) * v;
        float *dz = diff_scratch + (long)omp_get_thread_num() * v;
        const int ya = tgt[r], yb = tgt[r + m];
        const float mxa = row_max(za, v), mxb = row_max(zb, v);
        const double zya = za[ya], zyb = zb[yb];
        const int correct = is_argmax(za, ya, mxa);
#pragma omp simd
        for (int c = 0; c < v; c++) dz[c] = za[c] - zb[c];
        float sza, szb;
        const float sea = row_exp_inplace(za, v, mxa, &sza);
        const float seb = row_exp_inplace(zb, v, mxb, &szb);
        const double lsea = mxa + log(sea), lseb = mxb + log(seb);
        const double cd = lsea - lseb;
        const double Ea = row_dot(za, dz, v) / sea - cd, Eb = row_dot(zb, dz, v) / seb - cd;
        const double xa = lsea - on * zya - off * sza, xb = lseb - on * zyb - off * szb;
        row_scratch[3 * r] = 0.5 * (xa + xb) + k * (Ea - Eb);
        row_scratch[3 * r + 1] = 0.5 * ((lsea - zya) + (lseb - zyb));
        row_scratch[3 * r + 2] = correct;
        if (grad_scale != 0) {
            const float ia = 1.0f / sea, ib = 1.0f / seb, g = grad_scale;
            const float h = 0.5f, fo = (float)off, fc = (float)cd;
            const float fEa = (float)Ea, fEb = (float)Eb;
#pragma omp simd
            for (int c = 0; c < v; c++) {
                const float pa = za[c] * ia, pb = zb[c] * ib, d = dz[c] - fc;
                za[c] = g * (h * (pa - fo) + k * (pa * (d - fEa) + pa - pb));
                zb[c] = g * (h * (pb - fo) + k * (pb * (fEb - d) + pb - pa));
            }
            za[ya] -= g * h * (float)on;
            zb[yb] -= g * h * (float)on;
        }
    }
    sum_rows(row_scratch, m, loss, nll, n_correct);
}
