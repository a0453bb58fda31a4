/* optim: Adam, schedules, clipping. */
#include "nn/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TfmStatus adam_init(Adam *a, size_t n, const AdamConfig *ac, TfmErr *err)
{
    memset(a, 0, sizeof *a);
    a->m = xcalloc(n, sizeof(float), err);
    a->v = xcalloc(n, sizeof(float), err);
    if (!a->m || !a->v) {
        adam_free(a);
        return TFM_ERR_NOMEM;
    }
    a->n = n;
    a->beta1 = ac->beta1;
    a->beta2 = ac->beta2;
    a->eps = ac->eps;
    a->weight_decay = ac->weight_decay;
    return TFM_OK;
}

void adam_free(Adam *a)
{
    free(a->m);
    free(a->v);
    free(a->spared);
    a->m = a->v = NULL;
    a->spared = NULL;
}

TfmStatus adam_spare_from_decay(Adam *a, size_t offset, size_t count, TfmErr *err)
{
    if (offset > a->n || count > a->n - offset)
        return err_set(err, TFM_ERR_CONFIG, "adam: range %zu+%zu beyond %zu parameters",
                       offset, count, a->n);
    if (!a->spared && !(a->spared = xcalloc(a->n, 1, err))) return TFM_ERR_NOMEM;
    memset(a->spared + offset, 1, count);
    return TFM_OK;
}

void adam_update(Adam *a, float *p, const float *g, float lr)
{
    a->step++;
    const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    /* Bias corrections folded into the step size and eps (same math, fewer ops). */
    const double c1 = 1.0 - pow(b1, (double)a->step);
    const double c2 = 1.0 - pow(b2, (double)a->step);
    const float inv_c1 = (float)(1.0 / c1), inv_sqrt_c2 = (float)(1.0 / sqrt(c2));
    const float decay = lr * a->weight_decay;
    float *m = a->m, *v = a->v;
    const unsigned char *spared = a->spared;
    const long n = (long)a->n;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) {
        float gi = g[i];
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float mhat = m[i] * inv_c1;
        float vhat_sqrt = sqrtf(v[i]) * inv_sqrt_c2;
        float decay_i = spared && spared[i] ? 0.0f : decay;
        p[i] -= lr * mhat / (vhat_sqrt + eps) + decay_i * p[i];
    }
}

double lr_at(const LrConfig *lc, int d_model, long step, long total, double time_done)
{
    if (step < 1) step = 1;
    double s = (double)step, w = (double)(lc->warmup > 0 ? lc->warmup : 1);
    switch (lc->schedule) {
    case LR_NOAM:
        return lc->factor / sqrt((double)d_model) * fmin(1.0 / sqrt(s), s * pow(w, -1.5));
    case LR_INVERSE_SQRT:
        /* Linear warm-up to peak, then peak * sqrt(warmup / step). */
        return s < w ? lc->peak * s / w : lc->peak * sqrt(w / s);
    case LR_LINEAR:
    case LR_COSINE: {
        /* Linear warm-up to peak, then down to `final` at step `total`:
         * annealing to (near) zero by the end of a fixed budget beats
         * leaving the rate at peak * sqrt(warmup / total). */
        if (s < w) return lc->peak * s / w;
        /* the share of the decay done: by steps, or by time when it is
         * further (total <= 0: no step limit, time alone decides) */
        double t = total <= 0 ? 0.0 : total > (long)w ? (s - w) / ((double)total - w) : 1.0;
        if (time_done > t) t = time_done;
        if (t > 1.0) t = 1.0;
        double f = lc->schedule == LR_LINEAR ? 1.0 - t : 0.5 * (1.0 + cos(M_PI * t));
        return lc->final + (lc->peak - lc->final) * f;
    }
    case LR_CONSTANT:
    default:
        return lc->peak;
    }
}

float ema_decay_at(float decay, long step)
{
    const float ramp = (1.0f + (float)step) / (10.0f + (float)step);
    return ramp < decay ? ramp : decay;
}

void ema_update(float *restrict ema, const float *restrict w, size_t n, float d)
{
    const float keep = d, take = 1.0f - d;
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) ema[i] = keep * ema[i] + take * w[i];
}

double grad_norm(const float *g, size_t n)
{
    /* Fixed-size chunks summed in order: the same bits for any thread count
     * (an OpenMP reduction combines partial sums in arbitrary order). */
    enum { CHUNK = 1 << 16 };
    const long n_chunks = (long)((n + CHUNK - 1) / CHUNK);
    double partial[256], sum = 0;
    for (long base = 0; base < n_chunks; base += 256) {
        long cnt = n_chunks - base < 256 ? n_chunks - base : 256;
#pragma omp parallel for schedule(static)
        for (long c = 0; c < cnt; c++) {
            size_t lo = (size_t)(base + c) * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
            double s = 0;
            for (size_t i = lo; i < hi; i++) s += (double)g[i] * g[i];
            partial[c] = s;
        }
        for (long c = 0; c < cnt; c++) sum += partial[c];
    }
    return sqrt(sum);
}

double clip_grad_norm(float *g, size_t n, float max_norm)
{
    double norm = grad_norm(g, n);
    if (max_norm > 0 && norm > max_norm) {
        float scale = (float)(max_norm / (norm + 1e-6));
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
    return norm;
}
