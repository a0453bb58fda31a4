/* shortlist_rest: see shortlist_rest.h. */
#include "decode/shortlist_rest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layers.h"

TfmStatus shortlist_rest_init(ShortlistRest *r, const PackedLinear *out, int n_out, int d,
                              TfmErr *err)
{
    memset(r, 0, sizeof *r);
    r->d = d;
    r->n_out = n_out;
    const size_t D = (size_t)d, N = (size_t)n_out;
    float *eye = xcalloc(D * D, sizeof(float), err);
    float *wt = xmalloc(D * N * sizeof(float), err);    /* (d, n_out): wᵀ */
    r->mean = xmalloc(D * sizeof(float), err);
    r->gram = xmalloc(D * D * sizeof(float), err);
    TfmStatus st = TFM_ERR_NOMEM;
    if (!eye || !wt || !r->mean || !r->gram) goto done;
    /* the identity's rows through the product give the weights as they
     * score (dequantized in int8, rounded in bf16) */
    for (size_t i = 0; i < D; i++) eye[i * D + i] = 1.0f;
    packed_linear_forward(out, wt, eye, d, 0);
    for (size_t i = 0; i < D; i++) {
        float *row = wt + i * N;
        double s = 0;
        for (size_t v = 0; v < N; v++) s += row[v];
        r->mean[i] = (float)(s / (double)N);
        for (size_t v = 0; v < N; v++) row[v] -= r->mean[i];
    }
    /* Ĝ = ŵᵀ·ŵ through tfm's own product, whose every element is one fixed
     * chain: sgemm's bits change with its threads, and two lanes must get
     * the same Ĝ as one decoder */
    PackedLinear wp;
    if ((st = packed_linear_init(&wp, wt, NULL, NULL, n_out, d, err)) != TFM_OK) goto done;
    packed_linear_forward(&wp, r->gram, wt, d, 0);
    packed_linear_free(&wp);
    /* Ĝ is symmetric (x·Ĝᵀ = x·Ĝ); in float for an int8 model too: in
     * int8 it measured no faster at batch 1 and moved de→en test_2017 by
     * -0.11 BLEU against -0.04 */
    st = packed_linear_init(&r->gram_p, r->gram, NULL, NULL, d, d, err);
done:
    free(eye);
    free(wt);
    if (st != TFM_OK) shortlist_rest_free(r);
    return st;
}

/* log(1 + e^a) without overflow */
static double softplus(double a)
{
    return a > 0 ? a + log1p(exp(-a)) : log1p(exp(a));
}

void shortlist_rest_project(const ShortlistRest *r, float *gx, const float *x, int rows)
{
    packed_linear_forward(&r->gram_p, gx, x, rows, 0);
}

void shortlist_rest_normalize(const ShortlistRest *r, float *y, int W, const float *x, int k,
                              const float *gx)
{
    const int d = r->d;
    const double rest = (double)(r->n_out - W);
    for (int i = 0; i < k; i++) {
        float *z = y + (size_t)i * W;
        const float *xi = x + (size_t)i * d, *gi = gx + (size_t)i * d;
        double mu_all = 0, q = 0;       /* the whole output's mean; Σ (z - mu_all)² */
#pragma omp simd reduction(+ : mu_all, q)
        for (int c = 0; c < d; c++) {
            mu_all += (double)xi[c] * r->mean[c];
            q += (double)xi[c] * gi[c];
        }
        /* the candidates' part of both, with their max and exp sum */
        const float mx = row_max(z, W), mu = (float)mu_all;
        float sum_z, sq = 0;
        const float sum_exp = row_exp_sum(z, W, mx, &sum_z);
#pragma omp simd reduction(+ : sq)
        for (int j = 0; j < W; j++) sq += (z[j] - mu) * (z[j] - mu);
        const double c1 = sum_z - W * mu_all;
        /* the rest: Σ (z - mu_all) over all of them is 0 */
        const double m1 = -c1 / rest;
        double var = (q - sq) / rest - m1 * m1;
        if (var < 0) var = 0;
        const double log_rest = log(rest) + mu_all + m1 + var / 2;
        const double log_cands = mx + log(sum_exp);
        const float lse = (float)(log_cands + softplus(log_rest - log_cands));
#pragma omp simd
        for (int j = 0; j < W; j++) z[j] -= lse;
    }
}

void shortlist_rest_free(ShortlistRest *r)
{
    packed_linear_free(&r->gram_p);
    free(r->mean);
    free(r->gram);
    memset(r, 0, sizeof *r);
}
