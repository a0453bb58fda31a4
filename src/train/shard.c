/* shard: a chunk's pairs shared by the ranks of a job (shard.h). */
#include "train/shard.h"

#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "train/trainer.h"

/* Where each rank's part starts in an exchange of n[r] ints per rank. */
static void part_starts(const size_t *n, int R, size_t *at)
{
    at[0] = 0;
    for (int r = 1; r <= R; r++) at[r] = at[r - 1] + n[r - 1];
}

/* The lengths of the pairs of every rank's part, gathered: lens gets
 * 2 * per_rank[r] ints from rank r (its own lengths, filled by the caller
 * at starts[me]); every rank's allocation agreed before the exchange. */
static TfmStatus gather(const long *per_rank, size_t *counts, size_t *starts, int **lens,
                        const int *own, TfmStatus st, TfmErr *err)
{
    const int R = dist_size(), me = dist_rank();
    for (int r = 0; r < R; r++) counts[r] = 2 * (size_t)per_rank[r];
    part_starts(counts, R, starts);
    *lens = xmalloc((starts[R] ? starts[R] : 1) * sizeof(int), err);
    if (st == TFM_OK && !*lens) st = TFM_ERR_NOMEM;
    if ((st = dp_agree(st, err)) != TFM_OK) return st;
    if (counts[me]) memcpy(*lens + starts[me], own, counts[me] * sizeof(int));
    dist_allgather_ints(*lens, counts);
    return TFM_OK;
}

TfmStatus shard_gather(Shard *s, Corpus *own, Corpus *view, int max_len, TfmErr *err)
{
    const int R = dist_size(), me = dist_rank();
    shard_free(s);
    s->own = *own;
    s->encoded = own->n_encoded;
    memset(own, 0, sizeof *own);
    memset(view, 0, sizeof *view);
    const long L = s->own.n_lines;
    size_t *counts = xcalloc(2 * (size_t)R + 1, sizeof(size_t), err);
    long *per_rank = xcalloc((size_t)R, sizeof(long), err);
    /* sized for every line: the pairs kept are known after the exchange */
    view->src_len = xmalloc((size_t)(L + 1) * sizeof(int), err);
    view->tgt_len = xmalloc((size_t)(L + 1) * sizeof(int), err);
    s->at = xmalloc((size_t)(L + 1) * sizeof(long), err);
    s->own_index = xmalloc((size_t)(s->own.n_pairs + 1) * sizeof(long), err);
    s->part_pairs = xcalloc((size_t)R, sizeof(long), err);
    TfmStatus st = counts && per_rank && view->src_len && view->tgt_len && s->at &&
                   s->own_index && s->part_pairs ? TFM_OK : TFM_ERR_NOMEM;
    if (per_rank)
        for (int r = 0; r < R; r++) per_rank[r] = corpus_part_lines(L, r, R);
    int *lens = NULL;
    if (st != TFM_OK) {
        dp_agree(st, err);
    } else if ((st = gather(per_rank, counts, counts + R, &lens, s->own.own_lens, st, err)) == TFM_OK) {
        const size_t *starts = counts + R;
        long *kept = s->part_pairs;
        for (long j = 0; j < L; j++) {
            const int o = (int)(j % R);
            const int *l = lens + starts[o] + 2 * (size_t)(j / R);
            PairFate fate = pair_fate(l[0], l[1], max_len);
            if (fate == PAIR_EMPTY) { view->skipped_empty++; continue; }
            if (fate == PAIR_LONG) { view->skipped_long++; continue; }
            const long p = view->n_pairs++;
            view->src_len[p] = l[0];
            view->tgt_len[p] = l[1];
            s->at[p] = o + (long)R * kept[o];
            if (o == me) s->own_index[kept[o]] = p;
            kept[o]++;
        }
        view->n_lines = L;
        /* the lengths of the pairs left out are needed no more */
        free(s->own.own_lens);
        s->own.own_lens = NULL;
        s->own.own_lens_cap = 0;
    }
    free(lens);
    free(counts);
    free(per_rank);
    return st;
}

TfmStatus shard_regather(Shard *s, Corpus *view, TfmErr *err)
{
    const int R = dist_size();
    const Corpus *own = &s->own;
    size_t *counts = xcalloc(2 * (size_t)R + 1, sizeof(size_t), err);
    int *mine = xmalloc((size_t)(2 * own->n_pairs + 1) * sizeof(int), err);
    int *lens = NULL;
    TfmStatus st = counts && mine ? TFM_OK : TFM_ERR_NOMEM;
    if (st != TFM_OK) {
        dp_agree(st, err);
    } else {
        for (long k = 0; k < own->n_pairs; k++) {
            mine[2 * k] = own->src_len[k];
            mine[2 * k + 1] = own->tgt_len[k];
        }
        if ((st = gather(s->part_pairs, counts, counts + R, &lens, mine, st, err)) == TFM_OK) {
            const size_t *starts = counts + R;
            for (long p = 0; p < view->n_pairs; p++) {
                const int *l = lens + starts[s->at[p] % R] + 2 * (size_t)(s->at[p] / R);
                view->src_len[p] = l[0];
                view->tgt_len[p] = l[1];
            }
        }
    }
    free(lens);
    free(mine);
    free(counts);
    return st;
}

/* The walk both ends of the fetch make: every served batch in order, every
 * rank's rows of it in order, so that what rank o sends rank d, in order,
 * is what d expects from o. Pass 1 counts, pass 2 (fill) copies the ids
 * sent and places the rows received. With keep_own the rows a rank
 * encoded itself are its own ids, not copied. */
typedef struct {
    Shard *s;
    const Batcher *b;
    int R, me;
    bool keep_own;
    size_t *send_n, *recv_n;     /* pass 1: the counts */
    int *send;                   /* pass 2: the ids sent, at send_at */
    size_t *send_at, *recv_at;
    long rows;
} Fetch;

static void walk(Fetch *f, bool fill)
{
    const Batcher *b = f->b;
    const Corpus *c = b->c, *own = &f->s->own;
    Shard *s = f->s;
    f->rows = 0;
    for (long i = 0; i < b->n_batches; i++) {
        const long k = b->batch_perm[i], lo = b->batch_start[k];
        const int n = (int)(b->batch_start[k + 1] - lo);
        if (fill) s->batch_row[i] = f->rows;
        for (int d = 0; d < f->R; d++) {
            int r0, r1;
            batch_share_rows(n, d, f->R, &r0, &r1);
            for (int r = r0; r < r1; r++) {
                const long p = b->order[lo + r];
                const int o = (int)(s->at[p] % f->R);
                const long q = s->at[p] / f->R;    /* its index in o's own */
                const size_t len = (size_t)c->src_len[p] + (size_t)c->tgt_len[p];
                if (o == f->me && d == f->me && f->keep_own) {
                    if (fill) s->row_ids[f->rows] = own->tokens + own->src_off[q];
                    f->rows++;
                    continue;
                }
                if (o == f->me && !fill) f->send_n[d] += len;
                if (o == f->me && fill) {   /* (a pair's target ids follow its source's) */
                    memcpy(f->send + f->send_at[d], own->tokens + own->src_off[q], len * sizeof(int));
                    f->send_at[d] += len;
                }
                if (d != f->me) continue;
                if (fill) {
                    s->row_ids[f->rows] = s->held + f->recv_at[o];
                    f->recv_at[o] += len;
                } else {
                    f->recv_n[o] += len;
                }
                f->rows++;
            }
        }
    }
    if (fill) s->batch_row[b->n_batches] = f->rows;
}

TfmStatus shard_fetch(Shard *s, const Batcher *b, bool keep_own, TfmErr *err)
{
    const int R = dist_size();
    Fetch f = {s, b, R, dist_rank(), keep_own, NULL, NULL, NULL, NULL, NULL, 0};
    size_t *n = xcalloc(4 * (size_t)R + 2, sizeof(size_t), err);
    TfmStatus st = n ? TFM_OK : TFM_ERR_NOMEM;
    free(s->held);
    free(s->row_ids);
    free(s->batch_row);
    s->held = NULL;
    s->row_ids = NULL;
    s->batch_row = NULL;
    s->n_rows = 0;
    s->held_n = 0;
    if (n) {
        f.send_n = n;
        f.recv_n = n + R;
        f.send_at = n + 2 * R;
        f.recv_at = n + 3 * R + 1;
        walk(&f, false);
        part_starts(f.send_n, R, f.send_at);
        part_starts(f.recv_n, R, f.recv_at);
        f.send = xmalloc((f.send_at[R] + 1) * sizeof(int), err);
        s->held = xmalloc((f.recv_at[R] + 1) * sizeof(int), err);
        s->row_ids = xmalloc((size_t)(f.rows + 1) * sizeof *s->row_ids, err);
        s->batch_row = xmalloc((size_t)(b->n_batches + 1) * sizeof(long), err);
        if (!f.send || !s->held || !s->row_ids || !s->batch_row) st = TFM_ERR_NOMEM;
    }
    if ((st = dp_agree(st, err)) == TFM_OK) {
        s->n_rows = f.rows;
        s->held_n = f.recv_at[R];
        walk(&f, true);     /* (the starts advance as the parts fill) */
        dist_alltoall_ints(f.send, f.send_n, s->held, f.recv_n);
    }
    free(f.send);
    free(n);
    return st;
}

void shard_drop_own(Shard *s)
{
    corpus_free(&s->own);
    free(s->own_index);
    s->own_index = NULL;
}

static void held_ids(const void *ctx, long p, int row, const int **src, const int **tgt)
{
    const Shard *s = ctx;
    const Corpus *c = s->view;
    *src = s->row_ids[s->row0 + row];
    *tgt = *src + c->src_len[p];
}

long shard_batch(Shard *s, Batcher *b, long i, Batch *out)
{
    s->view = b->c;
    s->row0 = s->batch_row[i];
    batcher_get_share(b, i, dist_rank(), dist_size(), held_ids, s, out);
    return batcher_real_tokens(b, i);
}

size_t shard_bytes(const Shard *s)
{
    return corpus_bytes(&s->own) + (size_t)s->own.n_pairs * sizeof(long) + s->held_n * sizeof(int) +
           (size_t)s->n_rows * sizeof *s->row_ids;
}

void shard_free(Shard *s)
{
    corpus_free(&s->own);
    FREE_ALL(s->own_index, s->at, s->part_pairs, s->held, s->row_ids, s->batch_row);
    memset(s, 0, sizeof *s);
}
