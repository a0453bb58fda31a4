/* beam: beam search's choice after each step (greedy is beam 1).
 *
 * Each step takes the 2k best continuations of sentence b's live rows; an
 * </s> among the first k finishes a hypothesis, the best k others stay
 * live. The sentence is done when k hypotheses finished, or no live one can
 * beat the n-th best finished (n = nbest), or the length limit is reached. */
#include "decode/search.h"

#include <math.h>
#include <stdbool.h>

/* Keeps the best `want` candidates in c[0..*have), sorted by score desc. */
static void offer(Cand *c, int *have, int want, float score, int row, int tok)
{
    if (*have == want && score <= c[want - 1].score) return;
    int i = *have < want ? (*have)++ : want - 1;
    while (i > 0 && c[i - 1].score < score) {
        c[i] = c[i - 1];
        i--;
    }
    c[i] = (Cand){score, row, tok};
}

enum { CHUNK = 32 };

/* max of p[0..CHUNK): eight lanes, so the compiler makes vector max of it */
static inline float chunk_max(const float *p)
{
    float m[8];
    for (int i = 0; i < 8; i++) m[i] = p[i];
    for (int j = 8; j < CHUNK; j += 8)
        for (int i = 0; i < 8; i++) m[i] = p[j + i] > m[i] ? p[j + i] : m[i];
    float mx = m[0];
    for (int i = 1; i < 8; i++) mx = m[i] > mx ? m[i] : mx;
    return mx;
}

/* The 2k best continuations of sentence b's live rows, into c; returns
 * how many (fewer when fewer rows live). */
static int best_continuations(Search *s, const float *lp, int b, Cand *c)
{
    const int W = s->cols.width, k = s->k, base = b * k;
    const int *tok = s->cols.tok;
    int have = 0;
    for (int r = base; r < base + k; r++) {
        const float sc = s->score[r];
        if (sc == -INFINITY) continue;
        const float *row = lp + (size_t)(r - base) * W;
        /* columns in their order: ties keep the earlier column (the lower
         * token without a shortlist, tok being ascending) */
        for (int j = 0; j < W; j++) {
            const int v = tok ? tok[j] : j;
            if (v == TOK_PAD || v == TOK_BOS) continue;
            /* Once 2k candidates are kept, a chunk whose best cannot beat
             * the worst kept one is skipped whole (s + x is monotonic in
             * x, so this drops only what offer would reject). */
            if (j % CHUNK == 0 && have == 2 * k && j + CHUNK <= W) {
                if (sc + chunk_max(row + j) <= c[have - 1].score) {
                    j += CHUNK - 1;
                    continue;
                }
            }
            offer(c, &have, 2 * k, sc + row[j], r, v);
        }
    }
    return have;
}

/* Advances sentence b after the step at position t: rows of the next step
 * are written to parent/prev/score at the same row indices. */
void search_beam_advance(Search *s, float *lp, int b, int t, const DecodeOptions *opt)
{
    const int T = s->T, k = s->k, base = b * k;
    Cand *c = s->cand + (size_t)b * 2 * k;
    const int have = best_continuations(s, lp, b, c);
    const bool last = t + 1 >= s->limit[b];
    int live = 0;
    for (int i = 0; i < have; i++) {
        if (c[i].tok == TOK_EOS) {
            if (i < k) search_finish(s, b, s->hist + (size_t)c[i].row * T, t, c[i].score, t + 1);
            continue;
        }
        if (live == k) continue;
        if (last) {
            /* out of length: this continuation ends here without </s> */
            search_finish_at_limit(s, b, c[i].row, c[i].tok, c[i].score, t,
                                   s->hist_next + (size_t)(base + live) * T);
            live++;
            continue;
        }
        const int r = base + live++;
        s->parent[r] = c[i].row;
        s->prev[r] = c[i].tok;
        s->score[r] = c[i].score;
    }
    if (last) live = 0;
    for (int r = base + live; r < base + k; r++) search_idle_row(s, r);
    /* done: k finished, or no live hypothesis can beat the nbest-th best
     * finished one (a log-probability only falls; the penalty divides it by
     * at most lp(limit) for alpha >= 0), so the n-best list is final */
    const int o = s->orig[b];
    const float nth_fin =
        s->fin_count[o] >= opt->nbest ? search_nth_finished(s, b, opt->nbest) : -INFINITY;
    const float alpha = s->alpha;
    float best_live = -INFINITY;
    for (int r = base; r < base + live; r++) {
        float bound = alpha >= 0 ? s->score[r] / search_length_penalty(s->limit[b], alpha)
                                 : s->score[r] / search_length_penalty(t + 2, alpha);
        best_live = fmaxf(best_live, bound);
    }
    if (last || live == 0 || s->fin_count[o] >= k || nth_fin >= best_live) s->done[b] = 1;
}
