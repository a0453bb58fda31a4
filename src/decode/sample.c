/* sample: drawing translations instead of searching for them
 * (`tfm translate --sample`): temperature, top-k, top-p, seeded by the
 * sentence's id so that draws do not depend on the batch or threads. */
#include "decode/search.h"

#include <math.h>
#include <stdlib.h>

#include "base/rng.h"

static int cmp_prob_desc(const void *a, const void *b)
{
    const SampItem *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;                       /* ties: the lower id first */
}

/* Draws a token from log-probabilities lp (s->cols) under opt's
 * temperature, top-k and top-p, with the uniform u in [0, 1). The pieces
 * without a column would weigh 0: leaving them out changes no sum. */
static int sample_token(Search *s, const float *lp, const DecodeOptions *opt, double u)
{
    const int V = s->V, W = s->cols.width;
    const int *tok = s->cols.tok;
    SampItem *it = s->samp;
    float mx = -INFINITY;
    for (int j = 0; j < W; j++) mx = lp[j] > mx ? lp[j] : mx;
    if (mx == -INFINITY) return TOK_EOS;        /* everything banned */
    const float inv_t = 1.0f / opt->temperature;
    double total = 0;
    for (int j = 0; j < W; j++) {
        it[j] = (SampItem){lp[j] == -INFINITY ? 0.0f : expf((lp[j] - mx) * inv_t), tok ? tok[j] : j};
        total += it[j].p;
    }
    int n = W;
    if ((opt->top_k > 0 && opt->top_k < V) || opt->top_p < 1.0f) {
        qsort(it, (size_t)W, sizeof *it, cmp_prob_desc);   /* most likely first */
        if (opt->top_k > 0 && opt->top_k < n) n = opt->top_k;
        if (opt->top_p < 1.0f) {
            double cum = 0;
            for (int i = 0; i < n; i++) {
                cum += it[i].p / total;
                if (cum >= opt->top_p) { n = i + 1; break; }
            }
        }
        total = 0;
        for (int i = 0; i < n; i++) total += it[i].p;
    }
    double target = u * total, cum = 0;
    for (int i = 0; i < n; i++) {
        cum += it[i].p;
        if (target < cum && it[i].p > 0) return it[i].id;
    }
    for (int i = n - 1; i >= 0; i--)             /* rounding: the last non-zero one */
        if (it[i].p > 0) return it[i].id;
    return TOK_EOS;
}

/* Sampling (beam 1: sentence b is row b): draw, then end the sentence at
 * </s> or the length limit, or carry the token on. */
void search_sample_advance(Search *s, float *lp, int b, int t, const DecodeOptions *opt)
{
    const int r = b;
    const int o = s->orig[b];
    const uint64_t id = opt->sentence_ids ? (uint64_t)opt->sentence_ids[o] : (uint64_t)o;
    Rng g;
    rng_seed(&g, opt->seed ^ (0x9E3779B97F4A7C15ull * (id + 1)) ^ ((uint64_t)t << 40));
    const double u = (double)(rng_u64(&g) >> 11) * 0x1.0p-53;
    const int tok = sample_token(s, lp, opt, u);
    const int col = search_column(&s->cols, tok);
    const float score = s->score[r] + (col >= 0 ? lp[col] : -INFINITY);
    s->parent[r] = r;
    if (tok == TOK_EOS) {
        search_finish(s, b, s->hist + (size_t)r * s->T, t, score, t + 1);
    } else if (t + 1 >= s->limit[b]) {
        search_finish_at_limit(s, b, r, tok, score, t, s->hist_next + (size_t)r * s->T);
    } else {
        s->prev[r] = tok;
        s->score[r] = score;
        return;
    }
    s->done[b] = 1;
    search_idle_row(s, r);
}
