/* bpe_learn: learning a vocabulary (bpe_learn) from text files: word counts,
 * the alphabet of frequent characters, then merges picked from incrementally
 * updated pair counts in a lazy max-heap. */
#include "text/bpe.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_internal.h"
#include "text/unicode.h"
#include "base/text.h"

/* Distinct words with their counts. A key is a flag byte (1 = starts with the
 * marker) followed by the word's bytes. */
typedef struct {
    char *pool;
    size_t pool_len, pool_cap;
    size_t *off;
    uint32_t *len;
    int64_t *count;
    int n, cap;
    StrIndex index;
} WordTable;

static void words_free(WordTable *t)
{
    free(t->pool); free(t->off); free(t->len); free(t->count); hidx_free(&t->index);
}

/* Counts `count` more of the word key[0..n). */
static TfmStatus words_add(WordTable *t, const char *key, size_t n, int64_t count, TfmErr *err)
{
    uint64_t h = bpe_hash_bytes(key, n);
    int id = stridx_find(&t->index, (StrTable){t->pool, t->off, t->len}, key, n, h);
    if (id >= 0) {
        t->count[id] += count;
        return TFM_OK;
    }
    if (t->n == t->cap) {
        if (t->cap > INT_MAX / 2) return err_set(err, TFM_ERR_NOMEM, "too many distinct words");
        int c = t->cap ? 2 * t->cap : 4096;
        size_t *off = xrealloc(t->off, (size_t)c * sizeof *off, err);
        if (!off) return TFM_ERR_NOMEM;
        t->off = off;
        uint32_t *len = xrealloc(t->len, (size_t)c * sizeof *len, err);
        if (!len) return TFM_ERR_NOMEM;
        t->len = len;
        int64_t *cnt = xrealloc(t->count, (size_t)c * sizeof *cnt, err);
        if (!cnt) return TFM_ERR_NOMEM;
        t->count = cnt;
        t->cap = c;
    }
    if (xgrow((void **)&t->pool, &t->pool_cap, t->pool_len + n, 1, err)) return TFM_ERR_NOMEM;
    memcpy(t->pool + t->pool_len, key, n);
    t->off[t->n] = t->pool_len;
    t->len[t->n] = (uint32_t)n;
    t->count[t->n] = count;
    t->pool_len += n;
    return stridx_add(&t->index, t->n++, h, err);
}

/* Forgets every word (keeping the memory). */
static void words_reset(WordTable *t)
{
    hidx_reset(&t->index);
    t->n = 0;
    t->pool_len = 0;
}

/* Counts the words of a line. */
static TfmStatus count_line(WordTable *t, const char *line, size_t len, TfmErr *err)
{
    char key[1 + 4 * BPE_MAX_WORD_CHARS];
    Pretok p;
    Word w;
    pretok_init(&p, line, len);
    while (pretok_next(&p, &w)) {
        if (w.raw) continue;
        key[0] = (char)w.marker;
        memcpy(key + 1, line + w.start, w.end - w.start);
        if (words_add(t, key, 1 + w.end - w.start, 1, err)) return err->status;
    }
    return TFM_OK;
}

/* Counting by several threads: the sample's lines are gathered in blocks;
 * each thread counts a contiguous share of a block into a table of its own,
 * and the tables are added to the total in the order of the shares. So the
 * total lists its words in the order a single thread meets them, with the
 * same counts: the vocabulary is the same for any number of threads. */
enum { COUNT_BLOCK_LINES = 16384, COUNT_MAX_THREADS = 64 };

typedef struct {
    WordTable *total;
    int threads;
    WordTable part[COUNT_MAX_THREADS];
    char *text;                     /* the block's lines, back to back */
    size_t text_len, text_cap;
    size_t off[COUNT_BLOCK_LINES + 1];
    long n;
} Counter;

static TfmStatus count_block(Counter *c, TfmErr *err)
{
    int T = c->threads;
    if (c->n < 256 * (long)T) T = 1;
    TfmStatus st = TFM_OK;
    if (T == 1) {
        for (long i = 0; i < c->n && st == TFM_OK; i++)
            st = count_line(c->total, c->text + c->off[i], c->off[i + 1] - c->off[i], err);
        c->n = c->text_len = 0;
        return st;
    }
    TfmStatus part_st[COUNT_MAX_THREADS];
    TfmErr part_err[COUNT_MAX_THREADS];
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int k = 0; k < T; k++) {
        WordTable *p = &c->part[k];
        part_st[k] = TFM_OK;
        if (!p->index.n_slots) part_st[k] = stridx_init(&p->index, 1 << 15, &part_err[k]);
        words_reset(p);
        for (long i = c->n * k / T; i < c->n * (k + 1) / T && part_st[k] == TFM_OK; i++)
            part_st[k] = count_line(p, c->text + c->off[i], c->off[i + 1] - c->off[i], &part_err[k]);
    }
    for (int k = 0; k < T && st == TFM_OK; k++) {
        const WordTable *p = &c->part[k];
        if ((st = part_st[k]) != TFM_OK) {
            *err = part_err[k];
            break;
        }
        for (int w = 0; w < p->n && st == TFM_OK; w++)
            st = words_add(c->total, p->pool + p->off[w], p->len[w], p->count[w], err);
    }
    c->n = c->text_len = 0;
    return st;
}

/* Gathers a line of the sample (line_sample's callback). */
static TfmStatus gather_line(void *ctx, int file, const char *line, size_t len, TfmErr *err)
{
    (void)file;
    Counter *c = ctx;
    /* a byte to spare: text is allocated even when the lines so far are empty
     * (no memcpy to, or offset from, a NULL text) */
    if (xgrow((void **)&c->text, &c->text_cap, c->text_len + len + 1, 1, err)) return TFM_ERR_NOMEM;
    if (len > 0) memcpy(c->text + c->text_len, line, len);
    c->off[c->n] = c->text_len;
    c->text_len += len;
    c->off[++c->n] = c->text_len;
    return c->n == COUNT_BLOCK_LINES ? count_block(c, err) : TFM_OK;
}

/* The words of the sample's lines, counted into t by up to `threads` threads. */
static TfmStatus count_sample(WordTable *t, const char *const *paths, int n_paths, long sample,
                              int threads, LineSampleStats *stats, TfmErr *err)
{
    Counter *c = xcalloc(1, sizeof *c, err);
    if (!c) return TFM_ERR_NOMEM;
    c->total = t;
    c->threads = threads < 1 ? 1 : threads > COUNT_MAX_THREADS ? COUNT_MAX_THREADS : threads;
    TfmStatus st = line_sample_read(paths, n_paths, sample, gather_line, c, stats, err);
    if (st == TFM_OK) st = count_block(c, err);
    for (int k = 0; k < COUNT_MAX_THREADS; k++) words_free(&c->part[k]);
    free(c->text);
    free(c);
    return st;
}

typedef struct { uint32_t cp; int64_t count; } CharCount;

static int char_count_cmp(const void *x, const void *y)
{
    const CharCount *a = x, *b = y;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return a->cp < b->cp ? -1 : a->cp > b->cp;
}

/* Adds the alphabet to b: every non-ASCII character seen at least twice, most
 * frequent first (ties by code point), as long as the vocabulary has room.
 * Rarer ones are spelled in byte pieces; ASCII is the byte pieces. */
static TfmStatus learn_alphabet(Bpe *b, const WordTable *t, int vocab_size, TfmErr *err)
{
    U64Map counts = {0};
    CharCount *cc = NULL;
    TfmStatus st = u64map_init(&counts, 1024, err);
    if (st) goto fail;
    for (int w = 0; w < t->n; w++) {
        const unsigned char *s = (const unsigned char *)t->pool + t->off[w] + 1;
        size_t n = t->len[w] - 1;
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            int l = text_utf8_decode(s + i, n - i, &cp);
            i += (size_t)l;
            if (cp < 0x80) continue;
            uint64_t *v = u64map_slot(&counts, cp, err);
            if (!v) { st = TFM_ERR_NOMEM; goto fail; }
            *v += (uint64_t)t->count[w];
        }
    }
    cc = xmalloc((counts.n + 1) * sizeof *cc, err);
    if (!cc) { st = TFM_ERR_NOMEM; goto fail; }
    size_t k = 0;
    for (size_t i = 0; i <= counts.mask; i++)
        if (counts.keys[i] != UINT64_MAX)
            cc[k++] = (CharCount){(uint32_t)counts.keys[i], (int64_t)counts.vals[i]};
    qsort(cc, k, sizeof *cc, char_count_cmp);
    for (size_t i = 0; i < k && b->n_pieces < vocab_size && cc[i].count >= 2; i++) {
        unsigned char u[4];
        const size_t l = unicode_encode(cc[i].cp, u);
        if (bpe_add_piece(b, KIND_CHAR, (const char *)u, l, err) < 0) { st = err->status; goto fail; }
    }
fail:
    u64map_free(&counts);
    free(cc);
    return st;
}

typedef struct {
    int a, b;
    int64_t count;          /* weighted by word counts */
    int *occ;               /* words that contain (or once contained) the pair */
    int n_occ, cap_occ;
    int stamp;              /* last merge that queued it for a heap push */
} Pair;

typedef struct { int64_t count; int pair; } HeapItem;

/* Pair counts are kept exact at all times; the heap is lazy: an entry's
 * count may be stale (too high) for pairs whose count fell, and is then
 * re-pushed with the true count when it reaches the top. Every increase
 * pushes a fresh entry, so each live pair has an entry >= its count. */
typedef struct {
    Bpe *bpe;
    Pair *pairs;
    int n_pairs, cap_pairs;
    U64Map index;           /* a << 32 | b -> pair */
    HeapItem *heap;
    size_t n_heap, cap_heap;
    int *touched;
    int n_touched, cap_touched;
} Learner;

static int piece_cmp(const Bpe *b, int x, int y)
{
    size_t lx = b->len[x], ly = b->len[y];
    int c = memcmp(b->pool + b->off[x], b->pool + b->off[y], lx < ly ? lx : ly);
    if (c) return c;
    return lx < ly ? -1 : lx > ly;
}

/* Heap order: higher count first; ties by the bytes of left, then right. */
static bool heap_before(const Learner *L, HeapItem x, HeapItem y)
{
    if (x.count != y.count) return x.count > y.count;
    const Pair *p = &L->pairs[x.pair], *q = &L->pairs[y.pair];
    int c = piece_cmp(L->bpe, p->a, q->a);
    if (c) return c < 0;
    return piece_cmp(L->bpe, p->b, q->b) < 0;
}

static TfmStatus heap_push(Learner *L, int64_t count, int pair, TfmErr *err)
{
    if (L->n_heap == L->cap_heap) {
        size_t c = L->cap_heap ? 2 * L->cap_heap : 4096;
        HeapItem *h = xrealloc(L->heap, c * sizeof *h, err);
        if (!h) return TFM_ERR_NOMEM;
        L->heap = h;
        L->cap_heap = c;
    }
    HeapItem it = {count, pair};
    size_t i = L->n_heap++;
    while (i > 0 && heap_before(L, it, L->heap[(i - 1) / 2])) {
        L->heap[i] = L->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    L->heap[i] = it;
    return TFM_OK;
}

static HeapItem heap_pop(Learner *L)
{
    HeapItem top = L->heap[0], last = L->heap[--L->n_heap];
    size_t i = 0, n = L->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(L, L->heap[c + 1], L->heap[c])) c++;
        if (!heap_before(L, L->heap[c], last)) break;
        L->heap[i] = L->heap[c];
        i = c;
    }
    if (n) L->heap[i] = last;
    return top;
}

/* Adds delta to the count of pair (a, b), creating it; when word >= 0, also
 * records that the word contains it. Returns the pair index or -1. */
static int pair_update(Learner *L, int a, int b, int64_t delta, int word, TfmErr *err)
{
    uint64_t *slot = u64map_slot(&L->index, (uint64_t)a << 32 | (uint32_t)b, err);
    if (!slot) return -1;
    if (*slot == 0) {       /* new: indices are stored + 1 so 0 means absent */
        if (L->n_pairs == L->cap_pairs) {
            int c = L->cap_pairs ? 2 * L->cap_pairs : 4096;
            Pair *p = xrealloc(L->pairs, (size_t)c * sizeof *p, err);
            if (!p) return -1;
            L->pairs = p;
            L->cap_pairs = c;
        }
        L->pairs[L->n_pairs] = (Pair){.a = a, .b = b, .stamp = -1};
        *slot = (uint64_t)++L->n_pairs;
    }
    int idx = (int)*slot - 1;
    Pair *p = &L->pairs[idx];
    p->count += delta;
    if (word >= 0 && (p->n_occ == 0 || p->occ[p->n_occ - 1] != word)) {
        if (p->n_occ == p->cap_occ) {
            int c = p->cap_occ ? 2 * p->cap_occ : 4;
            int *o = xrealloc(p->occ, (size_t)c * sizeof *o, err);
            if (!o) return -1;
            p->occ = o;
            p->cap_occ = c;
        }
        p->occ[p->n_occ++] = word;
    }
    return idx;
}

/* Replaces (a, b) by c in every word that contains it, keeping the pair
 * counts exact, and queues the pairs that gained count for a heap push. */
static TfmStatus learn_merge(Learner *L, int pi, int c, int merge_no, int *sym_pool,
                             const size_t *sym_off, int *sym_len, const int64_t *wcount,
                             int *word_stamp, TfmErr *err)
{
    int a = L->pairs[pi].a, b = L->pairs[pi].b;
    int *occ = L->pairs[pi].occ, n_occ = L->pairs[pi].n_occ;
    L->n_touched = 0;
    for (int k = 0; k < n_occ; k++) {
        int w = occ[k];
        if (word_stamp[w] == merge_no) continue;
        word_stamp[w] = merge_no;
        int *s = sym_pool + sym_off[w], n = sym_len[w];
        bool found = false;
        for (int i = 0; i + 1 < n && !found; i++) found = s[i] == a && s[i + 1] == b;
        if (!found) continue;
        for (int i = 0; i + 1 < n; i++)
            if (s[i] >= 0 && s[i + 1] >= 0 && pair_update(L, s[i], s[i + 1], -wcount[w], -1, err) < 0)
                return TFM_ERR_NOMEM;
        int j = 0;
        for (int i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) { s[j++] = c; i += 2; }
            else s[j++] = s[i++];
        }
        sym_len[w] = n = j;
        for (int i = 0; i + 1 < n; i++) {
            if (s[i] < 0 || s[i + 1] < 0) continue;
            bool fresh = s[i] == c || s[i + 1] == c;
            int q = pair_update(L, s[i], s[i + 1], wcount[w], fresh ? w : -1, err);
            if (q < 0) return TFM_ERR_NOMEM;
            if (fresh && L->pairs[q].stamp != merge_no) {
                L->pairs[q].stamp = merge_no;
                if (L->n_touched == L->cap_touched) {
                    int cap = L->cap_touched ? 2 * L->cap_touched : 256;
                    int *t = xrealloc(L->touched, (size_t)cap * sizeof *t, err);
                    if (!t) return TFM_ERR_NOMEM;
                    L->touched = t;
                    L->cap_touched = cap;
                }
                L->touched[L->n_touched++] = q;
            }
        }
    }
    Pair *p = &L->pairs[pi];
    p->count = 0;
    free(p->occ);
    p->occ = NULL;
    p->n_occ = p->cap_occ = 0;
    for (int k = 0; k < L->n_touched; k++) {
        int q = L->touched[k];
        if (L->pairs[q].count > 0 && heap_push(L, L->pairs[q].count, q, err)) return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

/* Pops the pair with the highest true count (>= 2), or returns -1. */
static int learn_best(Learner *L, TfmErr *err)
{
    while (L->n_heap > 0) {
        HeapItem it = heap_pop(L);
        int64_t now = L->pairs[it.pair].count;
        if (now == it.count) {
            if (now < 2) return -1;
            return it.pair;
        }
        if (now > 0 && now < it.count && heap_push(L, now, it.pair, err)) return -2;
    }
    return -1;
}

/* Each word as symbols: the marker, then char pieces or -1 (a character
 * spelled in bytes: no merge can cross it). Allocates the symbol pool and
 * each word's offset, length and stamp (for learn_merge); the caller frees
 * them, also on failure. */
static TfmStatus spell_words(const Bpe *b, const WordTable *t, int n_alpha, int **sym_pool_out,
                             size_t **sym_off_out, int **sym_len_out, int **word_stamp_out,
                             TfmErr *err)
{
    U64Map chars = {0};
    TfmStatus st = u64map_init(&chars, (size_t)n_alpha, err);
    if (st) return st;
    for (int id = BPE_MARKER + 1; id < n_alpha; id++) {
        uint32_t cp;
        text_utf8_decode((const unsigned char *)b->pool + b->off[id], b->len[id], &cp);
        uint64_t *v = u64map_slot(&chars, cp, err);
        if (!v) { u64map_free(&chars); return TFM_ERR_NOMEM; }
        *v = (uint64_t)id;
    }
    size_t *sym_off = *sym_off_out = xmalloc((size_t)t->n * sizeof *sym_off, err);
    int *sym_len = *sym_len_out = xmalloc((size_t)t->n * sizeof *sym_len, err);
    int *word_stamp = *word_stamp_out = xmalloc((size_t)t->n * sizeof *word_stamp, err);
    int *sym_pool = *sym_pool_out = xmalloc(t->pool_len * sizeof *sym_pool, err); /* >= 1 per byte */
    if (!sym_off || !sym_len || !word_stamp || !sym_pool) {
        u64map_free(&chars);
        return TFM_ERR_NOMEM;
    }
    size_t total = 0;
    for (int w = 0; w < t->n; w++) {
        const unsigned char *s = (const unsigned char *)t->pool + t->off[w];
        size_t n = t->len[w];
        sym_off[w] = total;
        word_stamp[w] = -1;
        int k = 0;
        int *sym = sym_pool + total;
        if (s[0]) sym[k++] = BPE_MARKER;
        for (size_t i = 1; i < n;) {
            uint32_t cp;
            i += (size_t)text_utf8_decode(s + i, n - i, &cp);
            uint64_t v;
            if (cp < 0x80) sym[k++] = bpe_mergeable(b, BPE_BYTE0 + (int)cp) ? BPE_BYTE0 + (int)cp : -1;
            else sym[k++] = u64map_get(&chars, cp, &v) ? (int)v : -1;
        }
        sym_len[w] = k;
        total += (size_t)k;
    }
    u64map_free(&chars);
    return TFM_OK;
}

TfmStatus bpe_learn(Bpe **out, const char *const *paths, int n_paths, int vocab_size, TfmErr *err)
{
    return bpe_learn_sample(out, paths, n_paths, vocab_size, 0, 1, NULL, err);
}

TfmStatus bpe_learn_sample(Bpe **out, const char *const *paths, int n_paths, int vocab_size,
                           long sample, int threads, LineSampleStats *sample_stats, TfmErr *err)
{
    *out = NULL;
    if (vocab_size < BPE_MIN_VOCAB || vocab_size > BPE_MAX_VOCAB)
        return err_set(err, TFM_ERR_CONFIG,
                       "vocabulary size %d out of range [%d, %d] (4 specials + 256 bytes + "
                       "the word marker at least)", vocab_size, BPE_MIN_VOCAB, BPE_MAX_VOCAB);
    WordTable t = {0};
    Learner L = {0};
    Bpe *b = NULL;
    int *sym_pool = NULL, *sym_len = NULL, *word_stamp = NULL;
    size_t *sym_off = NULL;
    LineSampleStats stats;
    TfmStatus st = stridx_init(&t.index, 1 << 15, err);
    if (st) goto fail;
    if ((st = count_sample(&t, paths, n_paths, sample, threads, &stats, err))) goto fail;
    if (sample_stats) *sample_stats = stats;
    if (t.n == 0) {
        if (n_paths == 1) st = err_set(err, TFM_ERR_FORMAT, "%s: no text to learn from", paths[0]);
        else st = err_set(err, TFM_ERR_FORMAT, "no text to learn from in %s and %d other file%s",
                          paths[0], n_paths - 1, n_paths == 2 ? "" : "s");
        goto fail;
    }
    b = bpe_alloc(err);
    if (!b) { st = TFM_ERR_NOMEM; goto fail; }
    if ((st = bpe_add_fixed(b, err))) goto fail;
    if ((st = learn_alphabet(b, &t, vocab_size, err))) goto fail;
    int n_alpha = b->n_pieces;

    if ((st = spell_words(b, &t, n_alpha, &sym_pool, &sym_off, &sym_len, &word_stamp, err)))
        goto fail;

    L.bpe = b;
    if ((st = u64map_init(&L.index, 1 << 16, err))) goto fail;
    for (int w = 0; w < t.n; w++) {
        const int *s = sym_pool + sym_off[w];
        for (int i = 0; i + 1 < sym_len[w]; i++)
            if (s[i] >= 0 && s[i + 1] >= 0 && pair_update(&L, s[i], s[i + 1], t.count[w], w, err) < 0) {
                st = TFM_ERR_NOMEM;
                goto fail;
            }
    }
    for (int q = 0; q < L.n_pairs; q++)
        if ((st = heap_push(&L, L.pairs[q].count, q, err))) goto fail;

    char *cat = NULL;
    size_t cat_cap = 0;
    for (int merge_no = 0; b->n_pieces < vocab_size; merge_no++) {
        int pi = learn_best(&L, err);
        if (pi == -2) { st = TFM_ERR_NOMEM; break; }
        if (pi < 0) break;
        int a = L.pairs[pi].a, bb = L.pairs[pi].b;
        size_t la = b->len[a], lb = b->len[bb];
        if ((st = xgrow((void **)&cat, &cat_cap, la + lb + 1, 1, err))) break;
        memcpy(cat, b->pool + b->off[a], la);
        memcpy(cat + la, b->pool + b->off[bb], lb);
        /* The same string can come from two different pairs ("▁a"+"bc" and
         * "▁ab"+"c"): the second merge reuses the piece and costs no slot. */
        int c = bpe_piece_id(b, cat, la + lb);
        if (c < 0) c = bpe_add_piece(b, KIND_MERGED, cat, la + lb, err);
        if (c < 0) { st = err->status; break; }
        if ((st = bpe_add_merge(b, a, bb, c, err))) break;
        if ((st = learn_merge(&L, pi, c, merge_no, sym_pool, sym_off, sym_len, t.count,
                              word_stamp, err)))
            break;
    }
    free(cat);
    if (st) goto fail;
    if ((st = bpe_index(b, err))) goto fail;
    *out = b;
    b = NULL;
fail:
    bpe_free(b);
    words_free(&t);
    for (int q = 0; q < L.n_pairs; q++) free(L.pairs[q].occ);
    free(L.pairs);
    u64map_free(&L.index);
    free(L.heap);
    free(L.touched);
    free(sym_pool); free(sym_off); free(sym_len); free(word_stamp);
    return st;
}
