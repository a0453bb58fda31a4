/* shortlist_guard: a line's best row against the pieces outside its
 * candidates (see shortlist_guard.h). */
#include "decode/shortlist_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "nn/layers.h"

TfmStatus shortlist_guard_init(ShortlistGuard *g, const PackedLinear *full,
                               const int *out_pos, int n_out, int d, int max_sents, TfmErr *err)
{
    memset(g, 0, sizeof *g);
    g->full = full;
    g->out_pos = out_pos;
    g->n_out = n_out;
    g->d = d;
    g->max_sents = max_sents;
    const size_t n = (size_t)max_sents;
    g->on = xcalloc(n, sizeof *g->on, err);
    g->which = xmalloc(n * sizeof *g->which, err);
    g->x = xmalloc(n * (size_t)d * sizeof *g->x, err);
    g->z = xmalloc(n * (size_t)n_out * sizeof *g->z, err);
    g->mark = xcalloc(n, sizeof *g->mark, err);
    if (!g->on || !g->which || !g->x || !g->z || !g->mark) {
        shortlist_guard_free(g);
        return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

/* Whether the best piece outside the candidates scores at least as high
 * as each candidate that can be output, from the row's whole logits z
 * (the candidates' are overwritten). Ties count as outside: the list
 * would put its own piece first. */
static bool outside_wins(const ShortlistGuard *g, float *z, const int *pieces, int len)
{
    float best = -INFINITY;
    for (int c = 0; c < len; c++) {
        const int col = g->out_pos ? g->out_pos[pieces[c]] : pieces[c];
        if (pieces[c] != TOK_PAD && pieces[c] != TOK_BOS && z[col] > best) best = z[col];
        z[col] = -INFINITY;
    }
    const float outside = row_max(z, g->n_out);
    return outside > -INFINITY && outside >= best;
}

int shortlist_guard_check(ShortlistGuard *g, const float *x, int n, int k,
                          const int *const *pieces, const int *len)
{
    int m = 0;
    for (int b = 0; b < n; b++) {
        g->mark[b] = false;
        if (!g->on[b] || len[b] == g->n_out) continue;
        memcpy(g->x + (size_t)m * g->d, x + (size_t)b * k * g->d, (size_t)g->d * sizeof *x);
        g->which[m++] = b;
    }
    if (!m) return 0;
    packed_linear_forward(g->full, g->z, g->x, m, 0);
    int marked = 0;
#pragma omp parallel for schedule(static) if (m > 1) reduction(+ : marked)
    for (int i = 0; i < m; i++) {
        const int b = g->which[i];      /* each b once: no two threads write one mark */
        g->mark[b] = outside_wins(g, g->z + (size_t)i * g->n_out, pieces[b], len[b]);
        marked += g->mark[b];
    }
    return marked;
}

void shortlist_guard_free(ShortlistGuard *g)
{
    FREE_ALL(g->on, g->which, g->x, g->z, g->mark);
    memset(g, 0, sizeof *g);
}
