/* shortlist: building, the file, and a batch's columns (see shortlist.h;
 * the file's layout is docs/shortlist.md). */
#include "decode/shortlist.h"

#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/fnv.h"
#include "base/text.h"

uint64_t shortlist_vocab_print(const Bpe *bpe)
{
    size_t len;
    char *v = bpe_serialize(bpe, &len);
    if (!v) return 0;
    const uint64_t h = fnv1a64(FNV1A64_START, v, len);
    free(v);
    return h;
}

void shortlist_free(Shortlist *sl)
{
    free(sl->frequent);
    free(sl->start);
    free(sl->list);
    memset(sl, 0, sizeof *sl);
}

/* ---- counting ---- */

/* c(s, t) by the key s << 32 | t: open addressing, linear probing, grown
 * at half full. */
typedef struct {
    uint64_t *key;      /* 0: empty (s is never 0: <pad> is no source piece) */
    uint32_t *count;
    size_t cap, used;
} PairCounts;

static TfmStatus pairs_grow(PairCounts *pc, TfmErr *err)
{
    const size_t cap = pc->cap ? 2 * pc->cap : (size_t)1 << 16;
    uint64_t *key = xcalloc(cap, sizeof *key, err);
    uint32_t *count = xcalloc(cap, sizeof *count, err);
    if (!key || !count) {
        free(key);
        free(count);
        return TFM_ERR_NOMEM;
    }
    for (size_t i = 0; i < pc->cap; i++) {
        if (!pc->key[i]) continue;
        size_t h = fnv_mix64(pc->key[i]) & (cap - 1);
        while (key[h]) h = (h + 1) & (cap - 1);
        key[h] = pc->key[i];
        count[h] = pc->count[i];
    }
    free(pc->key);
    free(pc->count);
    pc->key = key;
    pc->count = count;
    pc->cap = cap;
    return TFM_OK;
}

static TfmStatus pairs_add(PairCounts *pc, int s, int t, TfmErr *err)
{
    if (2 * (pc->used + 1) > pc->cap) {
        TfmStatus st = pairs_grow(pc, err);
        if (st != TFM_OK) return st;
    }
    const uint64_t k = (uint64_t)s << 32 | (uint32_t)t;
    size_t h = fnv_mix64(k) & (pc->cap - 1);
    while (pc->key[h] && pc->key[h] != k) h = (h + 1) & (pc->cap - 1);
    if (!pc->key[h]) {
        pc->key[h] = k;
        pc->used++;
    }
    pc->count[h]++;
    return TFM_OK;
}

/* The distinct pieces of ids[0..n) that are not specials, into out (the
 * pieces seen get seen[v] = stamp); returns how many. */
static int distinct(const int *ids, int n, int *seen, int stamp, int *out)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        const int v = ids[i];
        if (v <= TOK_EOS || seen[v] == stamp) continue;
        seen[v] = stamp;
        out[m++] = v;
    }
    return m;
}

typedef struct { uint32_t c; int t; } Scored;

/* Higher count first, then the lower id: the same order on every machine. */
static int cmp_scored(const void *a, const void *b)
{
    const Scored *x = a, *y = b;
    if (x->c != y->c) return x->c > y->c ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* One line of each file: 1 both, 0 both ended, -1 error (set). */
static int read_pair(LineReader *rs, LineReader *rt, char **ls, size_t *ns, char **lt,
                     size_t *nt, TfmErr *err)
{
    const int a = text_read_line(rs, ls, ns, err);
    if (a < 0) return -1;
    const int b = text_read_line(rt, lt, nt, err);
    if (b < 0) return -1;
    if (a == b) return a;
    LineReader *longer = a ? rs : rt;   /* read to its end, to say how long it is */
    char *l;
    size_t n;
    int got;
    while ((got = text_read_line(longer, &l, &n, err)) > 0) continue;
    if (got < 0) return -1;
    err_set(err, TFM_ERR_FORMAT, "%s has %ld lines, %s has %ld (a parallel corpus needs "
            "one line a sentence on each side)", rs->name, rs->line_no, rt->name, rt->line_no);
    return -1;
}

/* Counts the corpus: c(s, t) in pc, each target piece's occurrences in
 * freq (V). */
static TfmStatus count_corpus(const Bpe *bpe, const char *src, const char *tgt, PairCounts *pc,
                              uint64_t *freq, TfmErr *err)
{
    const int V = bpe_vocab_size(bpe);
    LineReader rs = {0}, rt = {0};
    int *ids = NULL, cap = 0, n = 0;
    int *seen = xcalloc((size_t)V, sizeof *seen, err);
    int *us = xmalloc((size_t)V * sizeof *us, err), *ut = xmalloc((size_t)V * sizeof *ut, err);
    TfmStatus st = TFM_ERR_NOMEM;
    if (!seen || !us || !ut) goto done;
    if ((st = text_reader_open(&rs, src, err)) != TFM_OK) goto done;
    if ((st = text_reader_open(&rt, tgt, err)) != TFM_OK) goto done;
    char *ls, *lt;
    size_t ns, nt;
    int got, stamp = 0;
    long pairs = 0;
    while ((got = read_pair(&rs, &rt, &ls, &ns, &lt, &nt, err)) > 0) {
        if ((st = bpe_encode(bpe, ls, ns, &ids, &n, &cap, err)) != TFM_OK) goto done;
        const int ms = distinct(ids, n, seen, ++stamp, us);
        if ((st = bpe_encode(bpe, lt, nt, &ids, &n, &cap, err)) != TFM_OK) goto done;
        for (int i = 0; i < n; i++) freq[ids[i]]++;
        const int mt = distinct(ids, n, seen, ++stamp, ut);
        for (int i = 0; i < ms; i++)
            for (int j = 0; j < mt; j++)
                if ((st = pairs_add(pc, us[i], ut[j], err)) != TFM_OK) goto done;
        pairs++;
    }
    if (got < 0) {
        st = err->status ? err->status : TFM_ERR_FORMAT;
        goto done;
    }
    st = pairs ? TFM_OK : err_set(err, TFM_ERR_FORMAT, "%s: no sentence pairs", src);
done:
    text_reader_close(&rs);
    text_reader_close(&rt);
    FREE_ALL(ids, seen, us, ut);
    return st;
}

TfmStatus shortlist_build(Shortlist *sl, const Bpe *bpe, const char *src, const char *tgt,
                          int top_k, int frequent, TfmErr *err)
{
    memset(sl, 0, sizeof *sl);
    const int V = bpe_vocab_size(bpe);
    PairCounts pc = {0};
    uint64_t *freq = xcalloc((size_t)V, sizeof *freq, err);
    Scored *all = xmalloc((size_t)V * sizeof *all, err);
    int *fill = NULL;
    unsigned char *in_freq = xcalloc((size_t)V, 1, err);
    TfmStatus st = TFM_ERR_NOMEM;
    if (!freq || !all || !in_freq) goto fail;
    if ((st = count_corpus(bpe, src, tgt, &pc, freq, err)) != TFM_OK) goto fail;
    sl->vocab = V;
    sl->print = shortlist_vocab_print(bpe);
    sl->top_k = top_k;

    /* the frequent pieces: by occurrences, then id (pieces never seen come
     * last, so --frequent of the vocabulary's size keeps every piece) */
    int m = 0;
    for (int v = TOK_EOS + 1; v < V; v++)
        all[m++] = (Scored){freq[v] > UINT32_MAX ? UINT32_MAX : (uint32_t)freq[v], v};
    qsort(all, (size_t)m, sizeof *all, cmp_scored);
    sl->n_frequent = frequent < m ? frequent : m;
    sl->frequent = xmalloc((size_t)(sl->n_frequent ? sl->n_frequent : 1) * sizeof(int), err);
    sl->start = xcalloc((size_t)V + 1, sizeof(int), err);
    fill = xcalloc((size_t)V + 1, sizeof *fill, err);
    if (!sl->frequent || !sl->start || !fill) goto nomem;
    for (int i = 0; i < sl->n_frequent; i++) {
        sl->frequent[i] = all[i].t;
        in_freq[all[i].t] = 1;
    }

    /* each source piece's counts, grouped: how many, then where */
    size_t total = 0;
    for (size_t i = 0; i < pc.cap; i++)
        if (pc.key[i] && !in_freq[(uint32_t)pc.key[i]]) fill[(int)(pc.key[i] >> 32) + 1]++;
    for (int s = 0; s < V; s++) fill[s + 1] += fill[s];
    total = (size_t)fill[V];
    Scored *grp = xmalloc((total ? total : 1) * sizeof *grp, err);
    if (!grp) goto nomem;
    for (size_t i = 0; i < pc.cap; i++) {
        if (!pc.key[i]) continue;
        const int s = (int)(pc.key[i] >> 32), t = (int)(uint32_t)pc.key[i];
        if (!in_freq[t]) grp[fill[s]++] = (Scored){pc.count[i], t};
    }
    /* fill[s] is now the end of s's group, which starts at fill[s - 1] */
    size_t kept = 0;
    for (int s = 0; s < V; s++) {
        const int b = s ? fill[s - 1] : 0, e = fill[s];
        const int k = e - b < top_k ? e - b : top_k;
        kept += (size_t)k;
    }
    sl->list = xmalloc((kept ? kept : 1) * sizeof(int), err);
    if (!sl->list) {
        free(grp);
        goto nomem;
    }
    size_t at = 0;
    for (int s = 0; s < V; s++) {
        const int b = s ? fill[s - 1] : 0, e = fill[s];
        qsort(grp + b, (size_t)(e - b), sizeof *grp, cmp_scored);
        sl->start[s] = (int)at;
        for (int i = b; i < e && i - b < top_k; i++) sl->list[at++] = grp[i].t;
    }
    sl->start[V] = (int)at;
    free(grp);
    st = TFM_OK;
    goto done;
nomem:
    st = TFM_ERR_NOMEM;
fail:
    shortlist_free(sl);
done:
    FREE_ALL(pc.key, pc.count, freq, all, fill, in_freq);
    return st;
}

/* ---- the file ----
 * Little-endian: magic (8 bytes), u32 version, u32 vocabulary size, u64
 * its fingerprint, u32 top_k, u32 frequent count, u32 list length, the
 * frequent pieces (u32 each), each source piece's list length (u32, V),
 * the lists (u32 each), u64 FNV-1a of every byte before it. */

enum { HEADER_BYTES = 8 + 4 + 4 + 8 + 4 + 4 + 4 };

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
    return p + 4;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

TfmStatus shortlist_save(const Shortlist *sl, const char *path, TfmErr *err)
{
    const size_t V = (size_t)sl->vocab, L = (size_t)sl->start[sl->vocab];
    const size_t size = HEADER_BYTES + 4 * ((size_t)sl->n_frequent + V + L) + 8;
    unsigned char *buf = xmalloc(size, err), *p = buf;
    if (!buf) return TFM_ERR_NOMEM;
    memcpy(p, SHORTLIST_MAGIC, 8);
    p = put32(p + 8, SHORTLIST_VERSION);
    p = put32(p, (uint32_t)V);
    p = put64(p, sl->print);
    p = put32(p, (uint32_t)sl->top_k);
    p = put32(p, (uint32_t)sl->n_frequent);
    p = put32(p, (uint32_t)L);
    for (int i = 0; i < sl->n_frequent; i++) p = put32(p, (uint32_t)sl->frequent[i]);
    for (size_t s = 0; s < V; s++) p = put32(p, (uint32_t)(sl->start[s + 1] - sl->start[s]));
    for (size_t i = 0; i < L; i++) p = put32(p, (uint32_t)sl->list[i]);
    p = put64(p, fnv1a64(FNV1A64_START, buf, size - 8));
    AtomicFile af;
    TfmStatus st = atomic_open(&af, path, err);
    if (st == TFM_OK) {
        if (fwrite(buf, 1, size, af.f) != size) {
            atomic_abort(&af);
            st = err_set(err, TFM_ERR_IO, "%s: write failed", path);
        } else {
            st = atomic_commit(&af, err);
        }
    }
    free(buf);
    return st;
}

TfmStatus shortlist_load(Shortlist *sl, const char *path, const Bpe *bpe, TfmErr *err)
{
    memset(sl, 0, sizeof *sl);
    char *raw;
    size_t len;
    TfmStatus st = text_read_file(path, (size_t)1 << 31, "a shortlist", NULL, &raw, &len, err);
    if (st != TFM_OK) return st;
    const unsigned char *b = (const unsigned char *)raw;
    const int V = bpe_vocab_size(bpe);
    if (len < 8 || memcmp(b, SHORTLIST_MAGIC, 8) != 0) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: not a tfm shortlist (make one with tfm shortlist)",
                     path);
        goto fail;
    }
    if (len < HEADER_BYTES + 8) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (%zu bytes, shorter than its "
                     "header)", path, len);
        goto fail;
    }
    const uint32_t version = get32(b + 8);
    if (version != SHORTLIST_VERSION) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: shortlist version %u (this tfm reads %d)", path,
                     version, SHORTLIST_VERSION);
        goto fail;
    }
    const uint64_t sum = get64(b + len - 8), want = fnv1a64(FNV1A64_START, b, len - 8);
    const uint32_t fv = get32(b + 12);
    const uint64_t print = get64(b + 16);
    const uint32_t k = get32(b + 24), nf = get32(b + 28), L = get32(b + 32);
    /* the sizes agree with the file's length before anything is read by them */
    const uint64_t need = HEADER_BYTES + 4 * ((uint64_t)nf + fv + L) + 8;
    if (sum != want || need != len || k < 1 || k > SHORTLIST_MAX_K || nf > fv ||
        (uint64_t)L > (uint64_t)fv * k) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (%s)", path,
                     sum != want ? "checksum mismatch" : "its sizes do not match its length");
        goto fail;
    }
    if ((int)fv != V || print != shortlist_vocab_print(bpe)) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: a shortlist for another vocabulary (%u pieces, "
                     "fingerprint %016llx; the model's: %d, %016llx); make it with tfm shortlist "
                     "-m MODEL", path, fv, (unsigned long long)print, V,
                     (unsigned long long)shortlist_vocab_print(bpe));
        goto fail;
    }
    sl->vocab = V;
    sl->print = print;
    sl->top_k = (int)k;
    sl->n_frequent = (int)nf;
    sl->frequent = xmalloc(((size_t)nf + 1) * sizeof(int), err);
    sl->start = xmalloc(((size_t)V + 1) * sizeof(int), err);
    sl->list = xmalloc(((size_t)L + 1) * sizeof(int), err);
    if (!sl->frequent || !sl->start || !sl->list) {
        st = TFM_ERR_NOMEM;
        goto fail;
    }
    const unsigned char *p = b + HEADER_BYTES;
    uint64_t at = 0;
    for (uint32_t i = 0; i < nf; i++, p += 4) {
        const uint32_t v = get32(p);
        if (v >= (uint32_t)V) goto bad;
        sl->frequent[i] = (int)v;
    }
    for (int s = 0; s < V; s++, p += 4) {
        const uint32_t c = get32(p);
        if (c > k) goto bad;
        sl->start[s] = (int)at;
        at += c;
    }
    sl->start[V] = (int)at;
    if (at != L) goto bad;
    for (uint32_t i = 0; i < L; i++, p += 4) {
        const uint32_t v = get32(p);
        if (v >= (uint32_t)V) goto bad;
        sl->list[i] = (int)v;
    }
    free(raw);
    return TFM_OK;
bad:
    st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (a piece or a count out of range)",
                 path);
fail:
    free(raw);
    shortlist_free(sl);
    return st;
}

/* ---- a batch's columns ---- */

TfmStatus shortlist_run_init(ShortlistRun *r, const Shortlist *sl, const PackedLinear *out,
                             int n_out, const int *out_pos, int max_sents, TfmErr *err)
{
    (void)out;
    memset(r, 0, sizeof *r);
    const size_t V = (size_t)sl->vocab, no = (size_t)n_out, n = (size_t)max_sents;
    r->sl = sl;
    r->V = sl->vocab;
    r->n_out = n_out;
    r->out_pos = out_pos;
    r->max_sents = max_sents;
    r->mark = xcalloc(V, 1, err);
    r->tok = xmalloc(no * sizeof(int), err);
    r->col = xmalloc(V * sizeof(int), err);
    r->sel = xmalloc(no * sizeof(int), err);
    r->own = xmalloc(n * no * sizeof(int), err);
    r->own_len = xcalloc(n, sizeof(int), err);
    r->line = xcalloc(n, sizeof *r->line, err);
    r->line_cap = xcalloc(n, sizeof(int), err);
    r->cur = xcalloc(n, sizeof *r->cur, err);
    r->cur_slot = xcalloc(n, sizeof(int), err);
    r->cur_len = xcalloc(n, sizeof(int), err);
    if (!r->mark || !r->tok || !r->col || !r->sel || !r->own || !r->own_len || !r->line ||
        !r->line_cap || !r->cur || !r->cur_slot || !r->cur_len) {
        shortlist_run_free(r);
        return TFM_ERR_NOMEM;
    }
    for (size_t v = 0; v < V; v++) r->col[v] = -1;
    int c = 0;                                  /* </s>, <unk> and the frequent pieces */
    const int specials[] = {TOK_UNK, TOK_EOS};
    for (int i = 0; i < 2; i++) c += !out_pos || out_pos[specials[i]] >= 0;
    for (int i = 0; i < sl->n_frequent; i++) c += !out_pos || out_pos[sl->frequent[i]] >= 0;
    r->min_cands = c;
    return TFM_OK;
}

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Piece v into sentence list l (of *n) unless there or not an output. */
static void take(ShortlistRun *r, int *l, int *n, int v)
{
    if (r->mark[v] || (r->out_pos && r->out_pos[v] < 0)) return;
    r->mark[v] = 1;
    l[(*n)++] = v;
}

/* Sentence b's product: its m candidates l (pieces) selected from out,
 * in room grown by half again when short. */
static TfmStatus line_product(ShortlistRun *r, const PackedLinear *out, int b, const int *l,
                              int m, TfmErr *err)
{
    if (m > r->line_cap[b]) {
        packed_linear_free(&r->line[b]);
        r->line_cap[b] = 0;
        int cap = m + m / 2;
        if (cap > r->n_out) cap = r->n_out;
        TfmStatus st = packed_linear_init_like(&r->line[b], out, cap, err);
        if (st != TFM_OK) return st;
        r->line_cap[b] = cap;
    }
    for (int i = 0; i < m; i++) r->sel[i] = r->out_pos ? r->out_pos[l[i]] : l[i];
    packed_linear_select(&r->line[b], out, r->sel, m);
    return TFM_OK;
}

TfmStatus shortlist_run_batch(ShortlistRun *r, const PackedLinear *out, const int *src, int n,
                              int S, TfmErr *err)
{
    const Shortlist *sl = r->sl;
    for (int j = 0; j < r->width; j++) r->col[r->tok[j]] = -1;     /* the last batch's */
    r->width = 0;
    for (int b = 0; b < n; b++) {
        int *l = r->own + (size_t)b * r->n_out, m = 0;
        for (int v = TOK_PAD; v <= TOK_EOS; v++) take(r, l, &m, v);
        for (int i = 0; i < sl->n_frequent; i++) take(r, l, &m, sl->frequent[i]);
        for (int i = 0; i < S && src[(size_t)b * S + i] != TOK_PAD; i++) {
            const int s = src[(size_t)b * S + i];
            for (int j = sl->start[s]; j < sl->start[s + 1]; j++) take(r, l, &m, sl->list[j]);
        }
        for (int i = 0; i < m; i++) r->mark[l[i]] = 0;
        qsort(l, (size_t)m, sizeof *l, cmp_int);
        r->own_len[b] = m;
        TfmStatus st = line_product(r, out, b, l, m, err);
        if (st != TFM_OK) return st;
    }
    /* the union, in the order of the pieces */
    for (int b = 0; b < n; b++)
        for (int i = 0; i < r->own_len[b]; i++) r->mark[r->own[(size_t)b * r->n_out + i]] = 1;
    int w = 0;
    for (int v = 0; v < r->V; v++) {
        if (!r->mark[v]) continue;
        r->mark[v] = 0;
        r->col[v] = w;
        r->tok[w++] = v;
    }
    r->width = w;
    for (int b = 0; b < n; b++) {
        int *l = r->own + (size_t)b * r->n_out;
        for (int i = 0; i < r->own_len[b]; i++) l[i] = r->col[l[i]];
        r->cur[b] = l;
        r->cur_slot[b] = b;
        r->cur_len[b] = r->own_len[b];
    }
    return TFM_OK;
}

void shortlist_run_drop(ShortlistRun *r, const char *done, int n)
{
    int j = 0;
    for (int b = 0; b < n; b++) {
        if (done[b]) continue;
        r->cur[j] = r->cur[b];
        r->cur_slot[j] = r->cur_slot[b];
        r->cur_len[j++] = r->cur_len[b];
    }
}

void shortlist_run_free(ShortlistRun *r)
{
    if (r->line)
        for (int b = 0; b < r->max_sents; b++) packed_linear_free(&r->line[b]);
    FREE_ALL(r->line, r->line_cap, r->mark, r->tok, r->col, r->sel, r->own, r->own_len, r->cur,
             r->cur_slot, r->cur_len);
    memset(r, 0, sizeof *r);
}
