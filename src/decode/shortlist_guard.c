/* shortlist_guard: the best piece outside a line's candidates against
 * them (see shortlist_guard.h). */
#include "decode/shortlist_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "nn/layers.h"

TfmStatus shortlist_guard_init(ShortlistGuard *g, const PackedLinear *full,
                               const int *out_pos, int n_out, int d, int max_sents,
                               int max_rows, TfmErr *err)
{
    memset(g, 0, sizeof *g);
    g->full = full;
    g->out_pos = out_pos;
    g->n_out = n_out;
    g->d = d;
    g->max_sents = max_sents;
    g->rank = 1;
    g->max_rows = max_rows;
    const size_t n = (size_t)max_sents * (size_t)max_rows;
    g->on = xcalloc((size_t)max_sents, sizeof *g->on, err);
    g->which = xmalloc(n * sizeof *g->which, err);
    g->x = xmalloc(n * (size_t)d * sizeof *g->x, err);
    g->z = xmalloc(n * (size_t)n_out * sizeof *g->z, err);
    g->cz = xmalloc(n * (size_t)n_out * sizeof *g->cz, err);
    g->mark = xcalloc((size_t)max_sents, sizeof *g->mark, err);
    g->row_mark = xcalloc(n, sizeof *g->row_mark, err);
    if (!g->on || !g->which || !g->x || !g->z || !g->cz || !g->mark || !g->row_mark) {
        shortlist_guard_free(g);
        return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

/* Whether fewer than rank of the candidates that can be output beat the
 * best piece outside them, from the row's whole logits z (the candidates'
 * are moved to cz, len floats). */
static bool outside_wins(const ShortlistGuard *g, float *z, float *cz, const int *pieces, int len)
{
    for (int c = 0; c < len; c++) {
        const int col = g->out_pos ? g->out_pos[pieces[c]] : pieces[c];
        cz[c] = z[col];
        z[col] = -INFINITY;
    }
    const float zo = row_max(z, g->n_out);
    if (zo == -INFINITY) return false;      /* every piece is a candidate */
    int beat = 0;
    for (int c = 0; c < len && beat < g->rank; c++)
        beat += cz[c] > zo && pieces[c] != TOK_PAD && pieces[c] != TOK_BOS;
    return beat < g->rank;
}

int shortlist_guard_check(ShortlistGuard *g, const float *x, int n, int k,
                          const int *const *pieces, const int *len)
{
    int m = 0;
    for (int b = 0; b < n; b++) {
        g->mark[b] = false;
        if (len[b] == g->n_out) continue;
        for (int j = 0; j < g->on[b] && j < g->max_rows; j++) {
            memcpy(g->x + (size_t)m * g->d, x + ((size_t)b * k + j) * g->d,
                   (size_t)g->d * sizeof *x);
            g->which[m++] = b;
        }
    }
    if (!m) return 0;
    packed_linear_forward(g->full, g->z, g->x, m, 0);
#pragma omp parallel for schedule(static) if (m > 1)
    for (int i = 0; i < m; i++) {
        const int b = g->which[i];
        g->row_mark[i] = outside_wins(g, g->z + (size_t)i * g->n_out,
                                      g->cz + (size_t)i * g->n_out, pieces[b], len[b]);
    }
    int marked = 0;
    for (int i = 0; i < m; i++) {
        marked += g->row_mark[i] && !g->mark[g->which[i]];
        g->mark[g->which[i]] |= g->row_mark[i];
    }
    return marked;
}

void shortlist_guard_free(ShortlistGuard *g)
{
    FREE_ALL(g->on, g->which, g->x, g->z, g->cz, g->mark, g->row_mark);
    memset(g, 0, sizeof *g);
}
