/* search: what the search strategies share (see search.h):
 * the logits processors, finished hypotheses and their ranking. */
#include "decode/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void search_carve(Search *s, Arena *a, int max_sents, int max_beam, int T, int V)
{
    const size_t n = (size_t)max_sents, R = n * (size_t)max_beam, k2 = 2 * (size_t)max_beam;
    s->max_beam = max_beam;
    s->T = T;
    s->V = V;
    s->cols = (StepColumns){V, NULL, NULL, V};
    s->score = arena_take(a, R, sizeof(float));
    s->prev = arena_take(a, R, sizeof(int));
    s->parent = arena_take(a, R, sizeof(int));
    s->hist = arena_take(a, R * (size_t)T, sizeof(int));
    s->hist_next = arena_take(a, R * (size_t)T, sizeof(int));
    s->limit = arena_take(a, n, sizeof(int));
    s->done = arena_take(a, n, 1);
    s->orig = arena_take(a, n, sizeof(int));
    s->fin_tok = arena_take(a, n * k2 * (size_t)T, sizeof(int));
    s->fin_len = arena_take(a, n * k2, sizeof(int));
    s->fin_count = arena_take(a, n, sizeof(int));
    s->fin_score = arena_take(a, n * k2, sizeof(float));
    s->fin_lp = arena_take(a, n * k2, sizeof(float));
    s->cand = arena_take(a, n * k2, sizeof(Cand));
    s->samp = arena_take(a, (size_t)V, sizeof(SampItem));
    s->top = arena_take(a, k2, sizeof(float));
    s->ranked = arena_take(a, k2, sizeof(Hypothesis));
}

int search_start(Search *s, const int *src, int n, int S, const DecodeOptions *opt)
{
    const int k = s->k = opt->beam;
    s->alpha = opt->alpha;
    int max_limit = 0;
    for (int b = 0; b < n; b++) {
        int len = 0;
        while (len < S && src[(size_t)b * S + len] != TOK_PAD && src[(size_t)b * S + len] != TOK_EOS)
            len++;
        const double lim = (double)opt->max_len_a * len + opt->max_len_b;
        s->limit[b] = lim < 1 ? 1 : lim > s->T ? s->T : (int)lim;
        if (s->limit[b] > max_limit) max_limit = s->limit[b];
        s->done[b] = 0;
        s->orig[b] = b;
        s->fin_count[b] = 0;
        for (int j = 0; j < k; j++) {
            const int r = b * k + j;
            s->score[r] = j == 0 ? 0.0f : -INFINITY;   /* one live start per sentence */
            s->prev[r] = TOK_BOS;
            s->parent[r] = r;
        }
    }
    return max_limit;
}

int search_drop_sentences(Search *s, int n)
{
    const int k = s->k;
    int j = 0;
    for (int b = 0; b < n; b++) {
        if (s->done[b]) continue;
        if (j != b) {
            s->limit[j] = s->limit[b];
            s->orig[j] = s->orig[b];
            s->done[j] = 0;
            for (int i = 0; i < k; i++) {
                s->parent[j * k + i] = s->parent[b * k + i];
                s->prev[j * k + i] = s->prev[b * k + i];
                s->score[j * k + i] = s->score[b * k + i];
            }
        }
        j++;
    }
    return j;
}

void search_reorder_history(Search *s, int R, int t)
{
    const int T = s->T;
    for (int r = 0; r < R; r++) {
        memcpy(s->hist_next + (size_t)r * T, s->hist + (size_t)s->parent[r] * T,
               (size_t)t * sizeof(int));
        s->hist_next[(size_t)r * T + t] = s->prev[r];
    }
    int *h = s->hist;
    s->hist = s->hist_next;
    s->hist_next = h;
}

/* v's index in the ascending a[0..n), or -1 */
static int find_sorted(const int *a, int n, int v)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == v ? lo : -1;
}

int search_column(const StepColumns *c, int v)
{
    if (c->col) return c->col[v];
    if (!c->tok) return v < c->width ? v : -1;
    const int i = find_sorted(c->tok, c->run, v);
    if (i >= 0) return i;
    const int j = find_sorted(c->tok + c->run, c->width - c->run, v);
    return j >= 0 ? c->run + j : -1;
}

/* lp[token v's column] = -inf (nothing when v has none) */
static void ban(const Search *s, float *lp, int v)
{
    const int c = search_column(&s->cols, v);
    if (c >= 0) lp[c] = -INFINITY;
}

void search_process_logits(const Search *s, float *lp, const int *h, int t,
                           const DecodeOptions *opt)
{
    const int n = opt->no_repeat_ngram;
    if (n > 0 && t >= n - 1) {              /* the history is short: a scan is enough */
        const int *tail = h + t - (n - 1);  /* the last n-1 tokens */
        for (int i = 0; i + n - 1 < t; i++)
            if (memcmp(h + i, tail, sizeof(int) * (size_t)(n - 1)) == 0) ban(s, lp, h[i + n - 1]);
    }
    ban(s, lp, TOK_PAD);
    ban(s, lp, TOK_BOS);
}

float search_length_penalty(int len, float alpha)
{
    return alpha == 0.0f ? 1.0f : powf((5.0f + (float)len) / 6.0f, alpha);
}

void search_finish(Search *s, int b, const int *tokens, int len, float logprob, int out_len)
{
    const int o = s->orig[b];
    /* 2k slots a sentence: the strategies stop it before (k finished; at
     * most k more in its last step), and the limit never writes past them */
    if (s->fin_count[o] >= 2 * s->k) return;
    const int slot = o * 2 * s->k + s->fin_count[o]++;
    memcpy(s->fin_tok + (size_t)slot * s->T, tokens, (size_t)len * sizeof(int));
    s->fin_len[slot] = len;
    s->fin_lp[slot] = logprob;
    s->fin_score[slot] = logprob / search_length_penalty(out_len, s->alpha);
}

void search_finish_at_limit(Search *s, int b, int r, int tok, float score, int t, int *scratch)
{
    memcpy(scratch, s->hist + (size_t)r * s->T, (size_t)t * sizeof(int));
    scratch[t] = tok;
    search_finish(s, b, scratch, t + 1, score, t + 1);
}

void search_idle_row(Search *s, int r)
{
    s->parent[r] = r;
    s->prev[r] = TOK_PAD;
    s->score[r] = -INFINITY;
}

float search_nth_finished(Search *s, int b, int n)
{
    const int o = s->orig[b], cnt = s->fin_count[o];
    float *top = s->top;                    /* 2·max_beam: cnt <= 2k (search_finish) */
    memcpy(top, s->fin_score + (size_t)o * 2 * s->k, sizeof(float) * cnt);
    for (int i = 0; i < n; i++) {           /* partial selection sort */
        int best = i;
        for (int j = i + 1; j < cnt; j++)
            if (top[j] > top[best]) best = j;
        const float tmp = top[i];
        top[i] = top[best];
        top[best] = tmp;
    }
    return top[n - 1];
}

static int cmp_hyp(const void *a, const void *b)
{
    const Hypothesis *x = a, *y = b;
    return x->score > y->score ? -1 : x->score < y->score;
}

void search_best(Search *s, int o, int nbest, Hypothesis *out)
{
    const int cnt = s->fin_count[o];
    Hypothesis *all = s->ranked;            /* 2·max_beam */
    for (int i = 0; i < cnt; i++) {
        const int slot = o * 2 * s->k + i;
        all[i] = (Hypothesis){s->fin_tok + (size_t)slot * s->T, s->fin_len[slot],
                              s->fin_score[slot], s->fin_lp[slot]};
    }
    qsort(all, (size_t)cnt, sizeof *all, cmp_hyp);
    for (int i = 0; i < nbest; i++)
        out[i] = i < cnt ? all[i] : (Hypothesis){NULL, 0, -INFINITY, -INFINITY};
}
