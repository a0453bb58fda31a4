/* corpus: loading, filtering and batching parallel text. */
#include "train/corpus.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/text.h"

typedef struct { int *ids; int n, cap; } IdBuf;

/* sub: NULL, or the pieces the ids must be spelled in (targets of a model
 * with model.output_vocab "target") */
static TfmStatus encode_line(const Bpe *bpe, const BpeSubset *sub, const LineReader *r,
                             const char *line, size_t len, IdBuf *out, TfmErr *err)
{
    TfmStatus st = bpe_encode(bpe, line, len, &out->ids, &out->n, &out->cap, err);
    if (st == TFM_OK && sub) st = bpe_subset_apply(sub, &out->ids, &out->n, &out->cap, err);
    if (st != TFM_OK) err_prefix(err, "%s: line %ld: ", r->name, r->line_no);
    return st;
}

/* Appends the text of the next pair (kept for corpus_resegment). */
static TfmStatus append_text(Corpus *c, const char *ls, size_t ns, const char *lt, size_t nt,
                             TfmErr *err)
{
    size_t used = c->n_pairs ? c->text_off[2 * c->n_pairs] : 0;
    if (xgrow((void **)&c->text, &c->text_cap, used + ns + nt, 1, err) ||
        xgrow((void **)&c->text_off, &c->text_off_cap, 2 * (size_t)c->n_pairs + 3,
              sizeof(size_t), err))
        return TFM_ERR_NOMEM;
    memcpy(c->text + used, ls, ns);
    memcpy(c->text + used + ns, lt, nt);
    c->text_off[2 * c->n_pairs] = used;
    c->text_off[2 * c->n_pairs + 1] = used + ns;
    c->text_off[2 * c->n_pairs + 2] = used + ns + nt;
    return TFM_OK;
}

static TfmStatus append_pair(Corpus *c, size_t *pair_cap, const IdBuf *s, const IdBuf *t,
                             TfmErr *err)
{
    long n_tok = c->n_pairs ? c->tgt_off[c->n_pairs - 1] + c->tgt_len[c->n_pairs - 1] : 0;
    size_t old_cap = *pair_cap;
    if (xgrow((void **)&c->tokens, &c->tok_cap, (size_t)(n_tok + s->n + t->n), sizeof(int), err) ||
        xgrow((void **)&c->src_off, pair_cap, (size_t)c->n_pairs + 1, sizeof(long), err))
        return TFM_ERR_NOMEM;
    if (*pair_cap != old_cap) {
        size_t cap = *pair_cap;
        long *to = xrealloc(c->tgt_off, cap * sizeof(long), err);
        if (!to) return TFM_ERR_NOMEM;
        c->tgt_off = to;
        int *sl = xrealloc(c->src_len, cap * sizeof(int), err);
        if (!sl) return TFM_ERR_NOMEM;
        c->src_len = sl;
        int *tl = xrealloc(c->tgt_len, cap * sizeof(int), err);
        if (!tl) return TFM_ERR_NOMEM;
        c->tgt_len = tl;
    }
    long i = c->n_pairs++;
    c->src_off[i] = n_tok;
    c->src_len[i] = s->n;
    memcpy(c->tokens + n_tok, s->ids, (size_t)s->n * sizeof(int));
    c->tgt_off[i] = n_tok + s->n;
    c->tgt_len[i] = t->n;
    memcpy(c->tokens + n_tok + s->n, t->ids, (size_t)t->n * sizeof(int));
    return TFM_OK;
}

TfmStatus corpus_load_chunk(Corpus *c, PairStream *ps, long max_pairs, const Bpe *bpe,
                            const BpeSubset *tgt_subset, int max_len, bool keep_text, TfmErr *err)
{
    memset(c, 0, sizeof *c);
    IdBuf s = {0}, t = {0};
    size_t pair_cap = 0;
    TfmStatus st = TFM_OK;
    while (c->n_lines < max_pairs) {
        PairLine p;
        int got = pair_stream_next(ps, &p, err);
        if (got < 0) { st = err->status; goto fail; }
        if (!got) break;
        c->n_lines++;
        if ((st = encode_line(bpe, NULL, p.rs, p.src, p.src_len, &s, err)) != TFM_OK) goto fail;
        if ((st = encode_line(bpe, tgt_subset, p.rt, p.tgt, p.tgt_len, &t, err)) != TFM_OK) goto fail;
        if (s.n == 0 || t.n == 0) { c->skipped_empty++; continue; }
        if (s.n > max_len || t.n > max_len) { c->skipped_long++; continue; }
        if (keep_text && (st = append_text(c, p.src, p.src_len, p.tgt, p.tgt_len, err)) != TFM_OK)
            goto fail;
        if ((st = append_pair(c, &pair_cap, &s, &t, err)) != TFM_OK) goto fail;
    }
    /* a chunk that took the epoch's last pair is its last (no empty chunk after) */
    if (c->n_lines == max_pairs && pair_stream_at_end(ps, err) < 0) {
        st = err->status;
        goto fail;
    }
    free(s.ids);
    free(t.ids);
    return TFM_OK;
fail:
    free(s.ids);
    free(t.ids);
    corpus_free(c);
    return st;
}

TfmStatus corpus_load(Corpus *c, const char *src_path, const char *tgt_path,
                      const Bpe *bpe, const BpeSubset *tgt_subset, int max_len, bool keep_text,
                      TfmErr *err)
{
    PairStream ps;
    TfmStatus st = pair_stream_open(&ps, &src_path, &tgt_path, 1, NULL, 0, 0, err);
    if (st != TFM_OK) {
        memset(c, 0, sizeof *c);
        return st;
    }
    st = corpus_load_chunk(c, &ps, LONG_MAX, bpe, tgt_subset, max_len, keep_text, err);
    pair_stream_close(&ps);
    return st;
}

void corpus_free(Corpus *c)
{
    free(c->tokens);
    free(c->src_off);
    free(c->tgt_off);
    free(c->src_len);
    free(c->tgt_len);
    free(c->text);
    free(c->text_off);
    free(c->spare);
    memset(c, 0, sizeof *c);
}

/* One side of pair i with dropout, or plainly when that comes out too long. */
static TfmStatus resegment_side(const Corpus *c, const Bpe *bpe, const BpeSubset *sub, long i,
                                int side, float p, Rng *rng, int max_len, IdBuf *out, TfmErr *err)
{
    const char *s = c->text + c->text_off[2 * i + side];
    size_t n = c->text_off[2 * i + side + 1] - c->text_off[2 * i + side];
    TfmStatus st = bpe_encode_dropout(bpe, s, n, p, rng, &out->ids, &out->n, &out->cap, err);
    if (st == TFM_OK && sub) st = bpe_subset_apply(sub, &out->ids, &out->n, &out->cap, err);
    if (st == TFM_OK && out->n > max_len) {
        st = bpe_encode(bpe, s, n, &out->ids, &out->n, &out->cap, err);
        if (st == TFM_OK && sub) st = bpe_subset_apply(sub, &out->ids, &out->n, &out->cap, err);
    }
    return st;
}

TfmStatus corpus_resegment(Corpus *c, const Bpe *bpe, const BpeSubset *tgt_subset, float p,
                           uint64_t seed, int max_len, TfmErr *err)
{
    IdBuf s = {0}, t = {0};
    TfmStatus st = TFM_OK;
    long n_tok = 0;
    for (long i = 0; i < c->n_pairs && st == TFM_OK; i++) {
        Rng rng;
        rng_seed(&rng, seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ULL));
        if ((st = resegment_side(c, bpe, NULL, i, 0, p, &rng, max_len, &s, err)) != TFM_OK ||
            (st = resegment_side(c, bpe, tgt_subset, i, 1, p, &rng, max_len, &t, err)) != TFM_OK ||
            (st = xgrow((void **)&c->spare, &c->spare_cap, (size_t)(n_tok + s.n + t.n),
                        sizeof(int), err)) != TFM_OK)
            break;
        c->src_off[i] = n_tok;
        c->src_len[i] = s.n;
        memcpy(c->spare + n_tok, s.ids, (size_t)s.n * sizeof(int));
        c->tgt_off[i] = n_tok + s.n;
        c->tgt_len[i] = t.n;
        memcpy(c->spare + n_tok + s.n, t.ids, (size_t)t.n * sizeof(int));
        n_tok += s.n + t.n;
    }
    free(s.ids);
    free(t.ids);
    if (st != TFM_OK) return st;    /* offsets half rewritten: the caller stops */
    int *old = c->tokens;
    size_t old_cap = c->tok_cap;
    c->tokens = c->spare;
    c->tok_cap = c->spare_cap;
    c->spare = old;
    c->spare_cap = old_cap;
    return TFM_OK;
}

/* ---- batching ---- */

typedef struct BatchKey { int src, tgt; long tiebreak; long idx; } SortKey;

/* A pair's padded width per side: its tokens plus </s> (source) or <s> (target). */
static int src_width(const Corpus *c, long i) { return c->src_len[i] + 1; }
static int tgt_width(const Corpus *c, long i) { return c->tgt_len[i] + 1; }

TfmStatus batcher_init(Batcher *b, const Corpus *c, int budget, uint64_t seed,
                       bool shuffle, TfmErr *err)
{
    memset(b, 0, sizeof *b);
    b->c = c;
    b->budget = budget;
    b->seed = seed;
    b->shuffle = shuffle;
    b->epoch = -1;
    long n = c->n_pairs;
    b->order = xcalloc((size_t)n + 1, sizeof(long), err);
    b->batch_start = xcalloc((size_t)n + 2, sizeof(long), err);
    b->batch_perm = xcalloc((size_t)n + 1, sizeof(long), err);
    b->keys = xcalloc((size_t)n + 1, sizeof(SortKey), err);
    b->src = xcalloc((size_t)budget, sizeof(int), err);
    b->tgt_in = xcalloc((size_t)budget, sizeof(int), err);
    b->tgt_out = xcalloc((size_t)budget, sizeof(int), err);
    if (!b->order || !b->batch_start || !b->batch_perm || !b->keys || !b->src || !b->tgt_in || !b->tgt_out) {
        batcher_free(b);
        return TFM_ERR_NOMEM;
    }
    for (long i = 0; i < n; i++)
        if (src_width(c, i) + tgt_width(c, i) > budget) b->skipped_budget++;
    return TFM_OK;
}


static int cmp_key(const void *pa, const void *pb)
{
    const SortKey *a = pa, *b = pb;
    if (a->tgt != b->tgt) return a->tgt < b->tgt ? -1 : 1;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    return a->tiebreak < b->tiebreak ? -1 : a->tiebreak > b->tiebreak;
}

void batcher_plan_epoch(Batcher *b, long epoch)
{
    const Corpus *c = b->c;
    long n = c->n_pairs;
    Rng rng;
    rng_seed(&rng, b->seed ^ (0x5eedULL + (uint64_t)epoch * 0x9e3779b97f4a7c15ULL));
    /* Sort by (target, source) length; ties broken by a random rank per epoch,
     * so pairs of equal length meet different partners each epoch. */
    SortKey *keys = b->keys;
    long m = 0;
    for (long i = 0; i < n; i++) {
        if (src_width(c, i) + tgt_width(c, i) > b->budget) continue;
        keys[m].src = src_width(c, i);
        keys[m].tgt = tgt_width(c, i);
        keys[m].tiebreak = b->shuffle ? (long)(rng_u64(&rng) >> 1) : i;
        keys[m].idx = i;
        m++;
    }
    qsort(keys, (size_t)m, sizeof *keys, cmp_key);
    for (long i = 0; i < m; i++) b->order[i] = keys[i].idx;
    /* Cut greedily: a batch takes pairs while n * (max_src + max_tgt) fits. */
    long nb = 0, count = 0;
    int max_s = 0, max_t = 0;
    b->batch_start[0] = 0;
    for (long i = 0; i < m; i++) {
        long p = b->order[i];
        int s = src_width(c, p) > max_s ? src_width(c, p) : max_s;
        int t = tgt_width(c, p) > max_t ? tgt_width(c, p) : max_t;
        if (count > 0 && (count + 1) * (long)(s + t) > b->budget) {
            b->batch_start[++nb] = i;
            count = 0;
            s = src_width(c, p);
            t = tgt_width(c, p);
        }
        max_s = s;
        max_t = t;
        count++;
    }
    if (count > 0) b->batch_start[++nb] = m;
    b->n_batches = nb;
    for (long i = 0; i < nb; i++) b->batch_perm[i] = i;
    if (b->shuffle) {
        for (long i = nb - 1; i > 0; i--) {   /* Fisher-Yates */
            long j = (long)rng_below(&rng, (uint64_t)i + 1);
            long tmp = b->batch_perm[i];
            b->batch_perm[i] = b->batch_perm[j];
            b->batch_perm[j] = tmp;
        }
    }
    b->epoch = epoch;
}

void batcher_get(Batcher *b, long i, Batch *out)
{
    const Corpus *c = b->c;
    long k = b->batch_perm[i];
    long lo = b->batch_start[k], hi = b->batch_start[k + 1];
    int n = (int)(hi - lo), S = 0, T = 0;
    for (long j = lo; j < hi; j++) {
        long p = b->order[j];
        if (src_width(c, p) > S) S = src_width(c, p);
        if (tgt_width(c, p) > T) T = tgt_width(c, p);
    }
    memset(b->src, 0, (size_t)n * S * sizeof(int));
    memset(b->tgt_in, 0, (size_t)n * T * sizeof(int));
    memset(b->tgt_out, 0, (size_t)n * T * sizeof(int));
    for (int r = 0; r < n; r++) {
        long p = b->order[lo + r];
        const int *src = c->tokens + c->src_off[p], *tgt = c->tokens + c->tgt_off[p];
        int ls = c->src_len[p], lt = c->tgt_len[p];
        int *srow = b->src + (size_t)r * S, *in = b->tgt_in + (size_t)r * T,
            *outr = b->tgt_out + (size_t)r * T;
        memcpy(srow, src, (size_t)ls * sizeof(int));
        srow[ls] = TOK_EOS;
        in[0] = TOK_BOS;
        memcpy(in + 1, tgt, (size_t)lt * sizeof(int));
        memcpy(outr, tgt, (size_t)lt * sizeof(int));
        outr[lt] = TOK_EOS;
    }
    out->n = n;
    out->src_len = S;
    out->tgt_len = T;
    out->src = b->src;
    out->tgt_in = b->tgt_in;
    out->tgt_out = b->tgt_out;
    out->loss_tokens = 0;
}

void batcher_free(Batcher *b)
{
    free(b->order);
    free(b->batch_start);
    free(b->batch_perm);
    free(b->keys);
    free(b->src);
    free(b->tgt_in);
    free(b->tgt_out);
    memset(b, 0, sizeof *b);
}

long batch_targets(const Batch *b)
{
    long n = 0;
    for (long i = 0; i < (long)b->n * b->tgt_len; i++) n += b->tgt_out[i] != TOK_PAD;
    return n;
}

long batch_real_tokens(const Batch *b)
{
    long n = batch_targets(b);
    for (long i = 0; i < (long)b->n * b->src_len; i++) n += b->src[i] != TOK_PAD;
    return n;
}
