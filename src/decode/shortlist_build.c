/* shortlist_build: a shortlist from a parallel corpus (see shortlist.h).
 *
 * The score of target piece t for source piece s is IBM Model 1's
 * translation probability p(t | s) (Brown et al. 1993), trained by
 * SHORTLIST_EM_ITERS rounds of expectation-maximization over the corpus
 * with a NULL source word. Plain co-occurrence ranks for every source piece
 * the pieces that go with every sentence ("a", "the", ".") high; Model 1
 * lets each target occurrence be explained by the source piece that
 * explains it best, so a piece's list holds its translations. On Multi30k
 * de→en test_2016 a list of 50 (beside the 100 frequent pieces) missed
 * 4.6% of the reference's pieces, against 5.3% for co-occurrence counts
 * of the same size. fast_align (Marian's shortlists) adds a preference for
 * the diagonal; a shortlist needs no alignment of positions, only p(t | s).
 *
 * Every sum runs in one order (the corpus's, then the table's), in double,
 * with no product to fuse: the lists are the same on every machine. */
#include "decode/shortlist.h"

#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"
#include "base/text.h"

enum { SHORTLIST_EM_ITERS = 5 };

/* p(t | s) and this round's expected count of (s, t), by the key
 * s << 32 | t: open addressing, linear probing, grown at half full. Only
 * pairs that meet in a sentence pair are held: the others' p is 0. */
typedef struct {
    uint64_t *key;      /* 0: empty (s is never 0: <pad> is no source piece) */
    double *p, *e;
    size_t cap, used;
} PairTable;

static size_t slot_of(const PairTable *pt, uint64_t k)
{
    size_t h = fnv_mix64(k) & (pt->cap - 1);
    while (pt->key[h] && pt->key[h] != k) h = (h + 1) & (pt->cap - 1);
    return h;
}

static TfmStatus pairs_grow(PairTable *pt, TfmErr *err)
{
    PairTable n = {.cap = pt->cap ? 2 * pt->cap : (size_t)1 << 16};
    n.key = xcalloc(n.cap, sizeof *n.key, err);
    n.p = xmalloc(n.cap * sizeof *n.p, err);
    n.e = xcalloc(n.cap, sizeof *n.e, err);
    if (!n.key || !n.p || !n.e) {
        FREE_ALL(n.key, n.p, n.e);
        return TFM_ERR_NOMEM;
    }
    for (size_t i = 0; i < pt->cap; i++) {
        if (!pt->key[i]) continue;
        const size_t h = slot_of(&n, pt->key[i]);
        n.key[h] = pt->key[i];
        n.p[h] = pt->p[i];
    }
    n.used = pt->used;
    FREE_ALL(pt->key, pt->p, pt->e);
    *pt = n;
    return TFM_OK;
}

/* (s, t) into the table with p = 1 (Model 1's uniform start). */
static TfmStatus pairs_add(PairTable *pt, int s, int t, TfmErr *err)
{
    if (2 * (pt->used + 1) > pt->cap) {
        TfmStatus st = pairs_grow(pt, err);
        if (st != TFM_OK) return st;
    }
    const uint64_t k = (uint64_t)s << 32 | (uint32_t)t;
    const size_t h = slot_of(pt, k);
    if (!pt->key[h]) {
        pt->key[h] = k;
        pt->p[h] = 1.0;
        pt->used++;
    }
    return TFM_OK;
}

/* The corpus, encoded once for the rounds: pair i's source pieces are
 * ids[off[2i] .. off[2i+1]), its target's ids[off[2i+1] .. off[2i+2]),
 * specials left out. */
typedef struct {
    int *ids;
    size_t *off;
    size_t n_ids, n_off, cap_ids, cap_off;
    long pairs;
} Corpus;

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

/* Appends one side's pieces (not the specials) and where they end. */
static TfmStatus corpus_side(Corpus *c, const int *ids, int n, TfmErr *err)
{
    TfmStatus st = xgrow((void **)&c->ids, &c->cap_ids, c->n_ids + (size_t)n, sizeof *c->ids, err);
    if (st == TFM_OK) st = xgrow((void **)&c->off, &c->cap_off, c->n_off + 1, sizeof *c->off, err);
    if (st != TFM_OK) return st;
    for (int i = 0; i < n; i++)
        if (ids[i] > TOK_EOS) c->ids[c->n_ids++] = ids[i];
    c->off[c->n_off++] = c->n_ids;
    return TFM_OK;
}

/* Reads and encodes the corpus into c, each target piece's occurrences
 * into freq (V), and every (s, t) that meet in a pair into pt. */
static TfmStatus read_corpus(const Bpe *bpe, const char *src, const char *tgt, Corpus *c,
                             uint64_t *freq, PairTable *pt, TfmErr *err)
{
    LineReader rs = {0}, rt = {0};
    int *ids = NULL, cap = 0, n = 0;
    TfmStatus st = xgrow((void **)&c->off, &c->cap_off, 2, sizeof *c->off, err);
    if (st != TFM_OK) return st;
    c->off[c->n_off++] = 0;
    if ((st = text_reader_open(&rs, src, err)) != TFM_OK) goto done;
    if ((st = text_reader_open(&rt, tgt, err)) != TFM_OK) goto done;
    char *ls, *lt;
    size_t ns, nt;
    int got;
    while ((got = read_pair(&rs, &rt, &ls, &ns, &lt, &nt, err)) > 0) {
        if ((st = bpe_encode(bpe, ls, ns, &ids, &n, &cap, err)) != TFM_OK) goto done;
        if ((st = corpus_side(c, ids, n, err)) != TFM_OK) goto done;
        if ((st = bpe_encode(bpe, lt, nt, &ids, &n, &cap, err)) != TFM_OK) goto done;
        for (int i = 0; i < n; i++) freq[ids[i]]++;
        if ((st = corpus_side(c, ids, n, err)) != TFM_OK) goto done;
        const size_t s0 = c->off[2 * c->pairs], t0 = c->off[2 * c->pairs + 1],
                     t1 = c->off[2 * c->pairs + 2];
        for (size_t i = s0; i < t0; i++)
            for (size_t j = t0; j < t1; j++)
                if ((st = pairs_add(pt, c->ids[i], c->ids[j], err)) != TFM_OK) goto done;
        c->pairs++;
    }
    if (got < 0) {
        st = err->status ? err->status : TFM_ERR_FORMAT;
        goto done;
    }
    st = c->pairs ? TFM_OK : err_set(err, TFM_ERR_FORMAT, "%s: no sentence pairs", src);
done:
    text_reader_close(&rs);
    text_reader_close(&rt);
    free(ids);
    return st;
}

/* One round of EM: the expected counts of every (s, t) and (NULL, t) over
 * the corpus under the current p, then p(t | s) = e(s, t) / Σ_t' e(s, t').
 * slot (scratch) holds one pair's table slots, so each is looked up once. */
static TfmStatus em_round(const Corpus *c, PairTable *pt, double *p_null, double *e_null,
                          double *total, int V, size_t **slot, size_t *slot_cap, TfmErr *err)
{
    memset(pt->e, 0, pt->cap * sizeof *pt->e);
    memset(e_null, 0, (size_t)V * sizeof *e_null);
    for (long q = 0; q < c->pairs; q++) {
        const size_t s0 = c->off[2 * q], t0 = c->off[2 * q + 1], t1 = c->off[2 * q + 2];
        const size_t ms = t0 - s0;
        TfmStatus st = xgrow((void **)slot, slot_cap, ms ? ms : 1, sizeof **slot, err);
        if (st != TFM_OK) return st;
        for (size_t j = t0; j < t1; j++) {
            const int t = c->ids[j];
            double z = p_null[t];
            for (size_t i = 0; i < ms; i++) {
                (*slot)[i] = slot_of(pt, (uint64_t)c->ids[s0 + i] << 32 | (uint32_t)t);
                z += pt->p[(*slot)[i]];
            }
            e_null[t] += p_null[t] / z;
            for (size_t i = 0; i < ms; i++) pt->e[(*slot)[i]] += pt->p[(*slot)[i]] / z;
        }
    }
    memset(total, 0, (size_t)V * sizeof *total);
    for (size_t h = 0; h < pt->cap; h++)
        if (pt->key[h]) total[pt->key[h] >> 32] += pt->e[h];
    for (size_t h = 0; h < pt->cap; h++)
        if (pt->key[h]) pt->p[h] = pt->e[h] / total[pt->key[h] >> 32];
    double all = 0;
    for (int t = 0; t < V; t++) all += e_null[t];
    for (int t = 0; t < V; t++) p_null[t] = all > 0 ? e_null[t] / all : 0;
    return TFM_OK;
}

typedef struct { double score; int t; } Scored;

/* Higher score first, then the lower id. */
static int cmp_scored(const void *a, const void *b)
{
    const Scored *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* The frequent pieces: by occurrences, then id (pieces never seen come
 * last, so --frequent of the vocabulary's size keeps every piece); marks
 * them in in_freq. */
static TfmStatus pick_frequent(Shortlist *sl, const uint64_t *freq, int V, int frequent,
                               unsigned char *in_freq, TfmErr *err)
{
    Scored *all = xmalloc((size_t)V * sizeof *all, err);
    if (!all) return TFM_ERR_NOMEM;
    int m = 0;
    for (int v = TOK_EOS + 1; v < V; v++) all[m++] = (Scored){(double)freq[v], v};
    qsort(all, (size_t)m, sizeof *all, cmp_scored);
    sl->n_frequent = frequent < m ? frequent : m;
    sl->frequent = xmalloc((size_t)(sl->n_frequent ? sl->n_frequent : 1) * sizeof(int), err);
    if (sl->frequent)
        for (int i = 0; i < sl->n_frequent; i++) {
            sl->frequent[i] = all[i].t;
            in_freq[all[i].t] = 1;
        }
    free(all);
    return sl->frequent ? TFM_OK : TFM_ERR_NOMEM;
}

/* Each source piece's top_k targets by p(t | s) that are not frequent. */
static TfmStatus pick_lists(Shortlist *sl, const PairTable *pt, const unsigned char *in_freq,
                            int V, int top_k, TfmErr *err)
{
    size_t *fill = xcalloc((size_t)V + 1, sizeof *fill, err);
    sl->start = xcalloc((size_t)V + 1, sizeof(int), err);
    if (!fill || !sl->start) {
        free(fill);
        return TFM_ERR_NOMEM;
    }
    /* each source piece's candidates, grouped: how many, then where */
    for (size_t h = 0; h < pt->cap; h++)
        if (pt->key[h] && !in_freq[(uint32_t)pt->key[h]]) fill[(pt->key[h] >> 32) + 1]++;
    for (int s = 0; s < V; s++) fill[s + 1] += fill[s];
    Scored *grp = xmalloc((fill[V] ? fill[V] : 1) * sizeof *grp, err);
    size_t kept = 0;
    for (int s = 0; s < V; s++) {
        const size_t n = fill[s + 1] - fill[s];
        kept += n < (size_t)top_k ? n : (size_t)top_k;
    }
    sl->list = xmalloc((kept ? kept : 1) * sizeof(int), err);
    if (!grp || !sl->list) {
        FREE_ALL(fill, grp);
        return TFM_ERR_NOMEM;
    }
    for (size_t h = 0; h < pt->cap; h++) {
        if (!pt->key[h]) continue;
        const int s = (int)(pt->key[h] >> 32), t = (int)(uint32_t)pt->key[h];
        if (!in_freq[t]) grp[fill[s]++] = (Scored){pt->p[h], t};
    }
    /* fill[s] is now the end of s's group, which starts at fill[s - 1] */
    size_t at = 0;
    for (int s = 0; s < V; s++) {
        const size_t b = s ? fill[s - 1] : 0, e = fill[s];
        qsort(grp + b, e - b, sizeof *grp, cmp_scored);
        sl->start[s] = (int)at;
        for (size_t i = b; i < e && i - b < (size_t)top_k; i++) sl->list[at++] = grp[i].t;
    }
    sl->start[V] = (int)at;
    FREE_ALL(fill, grp);
    return TFM_OK;
}

TfmStatus shortlist_build(Shortlist *sl, const Bpe *bpe, const char *src, const char *tgt,
                          int top_k, int frequent, TfmErr *err)
{
    memset(sl, 0, sizeof *sl);
    const int V = bpe_vocab_size(bpe);
    PairTable pt = {0};
    Corpus c = {0};
    size_t *slot = NULL, slot_cap = 0;
    uint64_t *freq = xcalloc((size_t)V, sizeof *freq, err);
    unsigned char *in_freq = xcalloc((size_t)V, 1, err);
    double *p_null = xmalloc((size_t)V * sizeof *p_null, err);
    double *e_null = xmalloc((size_t)V * sizeof *e_null, err);
    double *total = xmalloc((size_t)V * sizeof *total, err);
    TfmStatus st = TFM_ERR_NOMEM;
    if (!freq || !in_freq || !p_null || !e_null || !total) goto fail;
    if ((st = read_corpus(bpe, src, tgt, &c, freq, &pt, err)) != TFM_OK) goto fail;
    for (int t = 0; t < V; t++) p_null[t] = 1.0;
    for (int r = 0; r < SHORTLIST_EM_ITERS; r++)
        if ((st = em_round(&c, &pt, p_null, e_null, total, V, &slot, &slot_cap, err)) != TFM_OK)
            goto fail;
    sl->vocab = V;
    sl->print = shortlist_vocab_print(bpe);
    sl->top_k = top_k;
    if ((st = pick_frequent(sl, freq, V, frequent, in_freq, err)) != TFM_OK) goto fail;
    if ((st = pick_lists(sl, &pt, in_freq, V, top_k, err)) != TFM_OK) goto fail;
    goto done;
fail:
    shortlist_free(sl);
done:
    FREE_ALL(pt.key, pt.p, pt.e, c.ids, c.off, slot, freq, in_freq, p_null, e_null, total);
    return st;
}
