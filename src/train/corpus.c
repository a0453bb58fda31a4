/* corpus: loading, filtering and batching parallel text. */
#include "train/corpus.h"

#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/text.h"
#include "text/bpe_cache.h"

typedef struct { int *ids; int n, cap; } IdBuf;

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

/* A block of pairs read one after another and then encoded by several
 * threads, each a contiguous share; appended in the order read, so the
 * corpus is the same whatever the number of threads. */
enum { BLOCK_PAIRS = 8192, BLOCK_MAX_THREADS = 64 };

typedef struct { int *ids; size_t n, cap; } Pool;

typedef struct {
    long n;
    char *text;
    size_t text_len, text_cap;
    size_t off[2 * BLOCK_PAIRS + 1];   /* pair i: source [off[2i], off[2i+1]), target to off[2i+2] */
    const LineReader *rs[BLOCK_PAIRS], *rt[BLOCK_PAIRS];    /* for messages */
    long src_line[BLOCK_PAIRS], tgt_line[BLOCK_PAIRS];
    /* encoded: pair i's ids at pool[k].ids + at[i] (k: the share holding i),
     * source then target */
    size_t at[BLOCK_PAIRS];
    int src_n[BLOCK_PAIRS], tgt_n[BLOCK_PAIRS];
    long lo[BLOCK_MAX_THREADS + 1];
    int shares;
    Pool pool[BLOCK_MAX_THREADS];
    BpeCache *cache[BLOCK_MAX_THREADS];     /* share k's words, kept from block to block */
} Block;

/* Words a share's cache holds: most of a corpus's running words are among
 * the most frequent 2^18. */
enum { CACHE_WORDS = 1 << 18 };

static void block_free(Block *b)
{
    if (!b) return;
    free(b->text);
    for (int k = 0; k < BLOCK_MAX_THREADS; k++) {
        free(b->pool[k].ids);
        bpe_cache_free(b->cache[k]);
    }
    free(b);
}

/* Reads up to `want` pairs, the first being line `first` of the chunk, and
 * keeps in b those of part `part` of `parts` (all with one part); *read:
 * the lines read. 1 when some were read, 0 at the end, -1 on an error. */
static int block_read(Block *b, PairStream *ps, long first, long want, int part, int parts,
                      long *read, TfmErr *err)
{
    b->n = 0;
    b->text_len = 0;
    b->off[0] = 0;
    *read = 0;
    while (*read < want && b->n < BLOCK_PAIRS) {
        PairLine p;
        int got = pair_stream_next(ps, &p, err);
        if (got < 0) return -1;
        if (!got) break;
        /* another part's line: read, for the files' line counts, not kept */
        if ((first + (*read)++) % parts != part) continue;
        if (xgrow((void **)&b->text, &b->text_cap, b->text_len + p.src_len + p.tgt_len + 2, 1, err))
            return -1;
        /* NUL-terminated like a reader's lines */
        memcpy(b->text + b->text_len, p.src, p.src_len);
        b->text[b->text_len + p.src_len] = '\0';
        b->text_len += p.src_len + 1;
        b->off[2 * b->n + 1] = b->text_len;
        memcpy(b->text + b->text_len, p.tgt, p.tgt_len);
        b->text[b->text_len + p.tgt_len] = '\0';
        b->text_len += p.tgt_len + 1;
        b->off[2 * b->n + 2] = b->text_len;
        b->rs[b->n] = p.rs;
        b->rt[b->n] = p.rt;
        b->src_line[b->n] = p.rs->line_no;
        b->tgt_line[b->n] = p.rt->line_no;
        b->n++;
    }
    return *read > 0;
}

static TfmStatus pool_add(Pool *p, const IdBuf *x, TfmErr *err)
{
    if (xgrow((void **)&p->ids, &p->cap, p->n + (size_t)x->n, sizeof(int), err)) return TFM_ERR_NOMEM;
    memcpy(p->ids + p->n, x->ids, (size_t)x->n * sizeof(int));
    p->n += (size_t)x->n;
    return TFM_OK;
}

/* Encodes pairs [lo, hi) of b into pool k; the index of the first that
 * failed (err set), or hi. */
static long block_encode_share(Block *b, int k, long lo, long hi, const Bpe *bpe,
                               const BpeSubset *sub, TfmErr *err)
{
    IdBuf s = {0}, t = {0};
    Pool *p = &b->pool[k];
    p->n = 0;
    if (!b->cache[k] && !(b->cache[k] = bpe_cache_new(CACHE_WORDS, err))) return lo;
    BpeCache *cache = b->cache[k];
    long i;
    for (i = lo; i < hi; i++) {
        const char *src = b->text + b->off[2 * i], *tgt = b->text + b->off[2 * i + 1];
        size_t ns = b->off[2 * i + 1] - b->off[2 * i] - 1, nt = b->off[2 * i + 2] - b->off[2 * i + 1] - 1;
        TfmStatus st = bpe_encode_cached(bpe, cache, src, ns, &s.ids, &s.n, &s.cap, err);
        if (st != TFM_OK) {
            err_prefix(err, "%s: line %ld: ", b->rs[i]->name, b->src_line[i]);
            break;
        }
        st = bpe_encode_cached(bpe, cache, tgt, nt, &t.ids, &t.n, &t.cap, err);
        if (st == TFM_OK && sub) st = bpe_subset_apply(sub, &t.ids, &t.n, &t.cap, err);
        if (st != TFM_OK) {
            err_prefix(err, "%s: line %ld: ", b->rt[i]->name, b->tgt_line[i]);
            break;
        }
        b->at[i] = p->n;
        b->src_n[i] = s.n;
        b->tgt_n[i] = t.n;
        if (pool_add(p, &s, err) != TFM_OK || pool_add(p, &t, err) != TFM_OK) break;
    }
    free(s.ids);
    free(t.ids);
    return i;
}

/* Encodes the block with up to `threads` threads (same ids for any count). */
static TfmStatus block_encode(Block *b, int threads, const Bpe *bpe, const BpeSubset *sub,
                              TfmErr *err)
{
    if (threads > BLOCK_MAX_THREADS) threads = BLOCK_MAX_THREADS;
    if (threads > b->n / 256) threads = (int)(b->n / 256);   /* small blocks: not worth a team */
    if (threads < 1) threads = 1;
    long failed[BLOCK_MAX_THREADS];
    TfmErr *errs = threads > 1 ? xcalloc((size_t)threads, sizeof *errs, err) : NULL;
    if (threads > 1 && !errs) return TFM_ERR_NOMEM;
    if (threads == 1) {
        b->shares = 1;
        b->lo[0] = 0;
        b->lo[1] = b->n;
        failed[0] = block_encode_share(b, 0, 0, b->n, bpe, sub, err);
        return failed[0] < b->n ? err->status : TFM_OK;
    }
#pragma omp parallel num_threads(threads)
    {
        int k = omp_get_thread_num(), T = omp_get_num_threads();
#pragma omp single
        {
            b->shares = T;
            for (int j = 0; j <= T; j++) b->lo[j] = b->n * j / T;
        }
        failed[k] = block_encode_share(b, k, b->lo[k], b->lo[k + 1], bpe, sub, &errs[k]);
    }
    TfmStatus st = TFM_OK;
    for (int k = 0; k < b->shares && st == TFM_OK; k++)
        if (failed[k] < b->lo[k + 1]) {      /* the first in reading order */
            *err = errs[k];
            st = err->status;
        }
    free(errs);
    return st;
}

/* Appends the lengths of the block's pairs, kept or not, to own_lens. */
static TfmStatus block_lens(Corpus *c, size_t *n_lens, const Block *b, TfmErr *err)
{
    if (xgrow((void **)&c->own_lens, &c->own_lens_cap, *n_lens + 2 * (size_t)b->n, sizeof(int),
              err))
        return TFM_ERR_NOMEM;
    for (long i = 0; i < b->n; i++) {
        c->own_lens[(*n_lens)++] = b->src_n[i];
        c->own_lens[(*n_lens)++] = b->tgt_n[i];
    }
    return TFM_OK;
}

/* Filters the block's pairs and appends those kept, in order. */
static TfmStatus block_append(Corpus *c, size_t *pair_cap, const Block *b, int max_len,
                              bool keep_text, TfmErr *err)
{
    for (int k = 0; k < b->shares; k++)
        for (long i = b->lo[k]; i < b->lo[k + 1]; i++) {
            const int *ids = b->pool[k].ids + b->at[i];
            IdBuf s = {(int *)ids, b->src_n[i], 0}, t = {(int *)ids + b->src_n[i], b->tgt_n[i], 0};
            PairFate fate = pair_fate(s.n, t.n, max_len);
            if (fate == PAIR_EMPTY) { c->skipped_empty++; continue; }
            if (fate == PAIR_LONG) { c->skipped_long++; continue; }
            const char *src = b->text + b->off[2 * i], *tgt = b->text + b->off[2 * i + 1];
            size_t ns = b->off[2 * i + 1] - b->off[2 * i] - 1, nt = b->off[2 * i + 2] - b->off[2 * i + 1] - 1;
            TfmStatus st;
            if (keep_text && (st = append_text(c, src, ns, tgt, nt, err)) != TFM_OK) return st;
            if ((st = append_pair(c, pair_cap, &s, &t, err)) != TFM_OK) return st;
        }
    return TFM_OK;
}

TfmStatus corpus_load_chunk(Corpus *c, PairStream *ps, long max_pairs, const Bpe *bpe,
                            const BpeSubset *tgt_subset, int max_len, bool keep_text, int part,
                            int parts, int threads, const atomic_bool *cancel, TfmErr *err)
{
    memset(c, 0, sizeof *c);
    size_t pair_cap = 0, n_lens = 0;
    TfmStatus st = TFM_OK;
    Block *b = xcalloc(1, sizeof *b, err);
    if (!b) return TFM_ERR_NOMEM;
    for (;;) {
        if (cancel && atomic_load(cancel)) {
            st = err_set(err, TFM_INTERRUPTED, "reading the corpus: cancelled");
            goto fail;
        }
        long read;
        int got = block_read(b, ps, c->n_lines, max_pairs - c->n_lines, part, parts, &read, err);
        if (got < 0) { st = err->status; goto fail; }
        if (!got) break;
        c->n_lines += read;
        c->n_encoded += b->n;
        if ((st = block_encode(b, threads, bpe, tgt_subset, err)) != TFM_OK ||
            (parts > 1 && (st = block_lens(c, &n_lens, b, err)) != TFM_OK) ||
            (st = block_append(c, &pair_cap, b, max_len, keep_text, err)) != TFM_OK)
            goto fail;
    }
    /* a chunk that took the epoch's last pair is its last (no empty chunk after) */
    if (c->n_lines == max_pairs && pair_stream_at_end(ps, err) < 0) {
        st = err->status;
        goto fail;
    }
    block_free(b);
    return TFM_OK;
fail:
    block_free(b);
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
    st = corpus_load_chunk(c, &ps, LONG_MAX, bpe, tgt_subset, max_len, keep_text, 0, 1, 1, NULL,
                           err);
    pair_stream_close(&ps);
    return st;
}

void corpus_free(Corpus *c)
{
    FREE_ALL(c->tokens, c->src_off, c->tgt_off, c->src_len, c->tgt_len, c->text, c->text_off,
             c->spare, c->own_lens);
    memset(c, 0, sizeof *c);
}

size_t corpus_bytes(const Corpus *c)
{
    size_t n = (size_t)c->n_pairs;
    /* (a rank's view of a chunk has the lengths alone: shard.h) */
    size_t tokens = n && c->tokens ? (size_t)(c->tgt_off[n - 1] + c->tgt_len[n - 1]) : 0;
    size_t bytes = tokens * sizeof(int) + n * ((c->src_off ? 2 * sizeof(long) : 0) + 2 * sizeof(int));
    if (c->text_off) bytes += c->text_off[2 * n] + (2 * n + 1) * sizeof(size_t);
    if (c->spare) bytes += tokens * sizeof(int);     /* the segmentation before (bpe_dropout) */
    if (c->own_lens) bytes += 2 * (size_t)c->n_encoded * sizeof(int);
    return bytes;
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
                           uint64_t seed, const long *index, int max_len, TfmErr *err)
{
    IdBuf s = {0}, t = {0};
    TfmStatus st = TFM_OK;
    long n_tok = 0;
    for (long i = 0; i < c->n_pairs && st == TFM_OK; i++) {
        Rng rng;
        rng_seed(&rng, seed ^ ((uint64_t)(index ? index[i] : i) * 0x9e3779b97f4a7c15ULL));
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

void batcher_get_share(Batcher *b, long i, int part, int parts, PairIds ids, const void *ctx,
                       Batch *out)
{
    const Corpus *c = b->c;
    long k = b->batch_perm[i];
    long lo = b->batch_start[k], hi = b->batch_start[k + 1];
    int S = 0, T = 0, r0, r1;
    long targets = 0;
    for (long j = lo; j < hi; j++) {
        long p = b->order[j];
        if (src_width(c, p) > S) S = src_width(c, p);
        if (tgt_width(c, p) > T) T = tgt_width(c, p);
        targets += tgt_width(c, p);
    }
    batch_share_rows((int)(hi - lo), part, parts, &r0, &r1);
    const int n = r1 - r0;
    memset(b->src, 0, (size_t)n * S * sizeof(int));
    memset(b->tgt_in, 0, (size_t)n * T * sizeof(int));
    memset(b->tgt_out, 0, (size_t)n * T * sizeof(int));
    for (int r = 0; r < n; r++) {
        long p = b->order[lo + r0 + r];
        const int *src, *tgt;
        ids(ctx, p, r, &src, &tgt);
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
    /* a share's loss is divided by the whole batch's target count */
    out->loss_tokens = parts > 1 ? targets : 0;
}

static void corpus_ids(const void *ctx, long p, int row, const int **src, const int **tgt)
{
    (void)row;
    const Corpus *c = ctx;
    *src = c->tokens + c->src_off[p];
    *tgt = c->tokens + c->tgt_off[p];
}

void batcher_get(Batcher *b, long i, Batch *out)
{
    batcher_get_share(b, i, 0, 1, corpus_ids, b->c, out);
}

long batcher_real_tokens(const Batcher *b, long i)
{
    const Corpus *c = b->c;
    long k = b->batch_perm[i], n = 0;
    for (long j = b->batch_start[k]; j < b->batch_start[k + 1]; j++)
        n += src_width(c, b->order[j]) + tgt_width(c, b->order[j]);
    return n;
}

void batcher_free(Batcher *b)
{
    FREE_ALL(b->order, b->batch_start, b->batch_perm, b->keys, b->src, b->tgt_in, b->tgt_out);
    memset(b, 0, sizeof *b);
}

size_t batcher_bytes(const Batcher *b)
{
    size_t n = (size_t)b->c->n_pairs + 1;
    return n * (3 * sizeof(long) + sizeof(SortKey)) + 3 * (size_t)b->budget * sizeof(int);
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
