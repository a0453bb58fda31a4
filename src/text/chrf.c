/* chrf: sacreBLEU-identical chrF / chrF++. Comments name the Python
 * (sacreBLEU 2.x metrics/chrf.py and metrics/helpers.py) each step mirrors.
 * Characters are Unicode code points and words are interned to ids, so that
 * both kinds of n-gram are runs of uint32 values counted in one hash table. */
#include "text/chrf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bleu_tokenize.h"
#include "text/metric_text.h"
#include "text/unicode.h"
#include "base/fnv.h"
#include "base/hash_index.h"
#include "base/version.h"

/* One distinct n-gram of the current reference, at its id in the table. */
typedef struct {
    uint32_t pos;                   /* start in the reference sequence */
    uint32_t ref, hyp;              /* counts in the reference, in the hypothesis */
} Entry;

/* A side of the comparison: code points, then word ids for chrF++. */
typedef struct {
    MText text;
    uint32_t *wids;
    size_t n_wids, cap_wids;
} Side;

struct ChrfScorer {
    ChrfOptions opt;
    Side hyp, ref;
    WordIds words;
    HashIndex index;                /* one order's n-grams of the reference */
    Entry *ent;                     /* by id */
    size_t cap_ent;
};

void chrf_options_default(ChrfOptions *opt)
{
    *opt = (ChrfOptions){.char_order = 6, .word_order = 0, .beta = 2};
}

TfmStatus chrf_scorer_new(const ChrfOptions *opt, ChrfScorer **out, TfmErr *err)
{
    *out = NULL;
    if (opt->char_order < 1 || opt->char_order > CHRF_MAX_CHAR_ORDER || opt->word_order < 0 ||
        opt->word_order > CHRF_MAX_WORD_ORDER || opt->beta < 0)
        return err_set(err, TFM_ERR_USAGE, "chrf: orders or beta out of range");
    ChrfScorer *s = xcalloc(1, sizeof *s, err);
    if (!s) return err->status;
    s->opt = *opt;
    *out = s;
    return TFM_OK;
}

static void side_free(Side *d)
{
    mtext_free(&d->text);
    free(d->wids);
}

void chrf_scorer_free(ChrfScorer *s)
{
    if (!s) return;
    side_free(&s->hyp);
    side_free(&s->ref);
    wordids_free(&s->words);
    hidx_free(&s->index);
    free(s->ent);
    free(s);
}

void chrf_stats_add(ChrfStats *acc, const ChrfStats *x)
{
    for (int i = 0; i < 3 * CHRF_MAX_ORDERS; i++) acc->v[i] += x->v[i];
}

/* ---- preprocessing ---- */

/* string.punctuation, the set chrF++'s word splitter checks. */
static bool is_punct(unsigned char c)
{
    return c < 128 && c != 0 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != NULL;
}

static TfmStatus push_word(ChrfScorer *s, Side *d, const unsigned char *p, size_t n, TfmErr *err)
{
    uint32_t id;
    if (wordids_get(&s->words, p, n, &id, err) ||
        xgrow((void **)&d->wids, &d->cap_wids, d->n_wids + 1, sizeof *d->wids, err))
        return err->status;
    d->wids[d->n_wids++] = id;
    return TFM_OK;
}

/* CHRF._remove_punctuation: a word of one character stays; otherwise a
 * trailing punctuation mark is split off, else a leading one (only one of
 * the two: '(hi)' gives '(hi' and ')', sacreBLEU issue #124). */
static TfmStatus side_words(ChrfScorer *s, Side *d, TfmErr *err)
{
    d->n_wids = 0;
    if (mtext_split(&d->text, err)) return err->status;
    for (size_t i = 0; i < d->text.n_words; i++) {
        const unsigned char *w = d->text.text + d->text.words[i].off;
        size_t n = d->text.words[i].len;
        uint32_t cp;
        TfmStatus st;
        if (unicode_decode(w, n, &cp) == n)                 /* len(w) == 1 */
            st = push_word(s, d, w, n, err);
        else if (is_punct(w[n - 1]))
            st = push_word(s, d, w, n - 1, err) || push_word(s, d, w + n - 1, 1, err);
        else if (is_punct(w[0]))
            st = push_word(s, d, w, 1, err) || push_word(s, d, w + 1, n - 1, err);
        else
            st = push_word(s, d, w, n, err);
        if (st) return err->status;
    }
    return TFM_OK;
}

/* The line as chrF sees it: rstrip (sacreBLEU's file reading), lower if
 * asked, then its code points (without whitespace unless opt.whitespace)
 * and, for chrF++, its word ids. */
static TfmStatus side_prepare(ChrfScorer *s, Side *d, const char *line, size_t len, TfmErr *err)
{
    if (mtext_prepare(&d->text, line, len, s->opt.lowercase, err) ||
        mtext_codepoints(&d->text, s->opt.whitespace, err))
        return err->status;
    if (s->opt.word_order > 0) return side_words(s, d, err);
    return TFM_OK;
}

/* ---- n-gram matching ---- */

/* An n-gram being looked up (hash_index's HashSame context): n values at
 * x, against the reference r; the stored hashes reject most others. */
typedef struct {
    const Entry *ent;
    const uint32_t *hash, *r, *x;
    size_t n;
    uint32_t h;
} SeqKey;

static inline bool seq_same(const void *ctx, uint32_t id)
{
    const SeqKey *k = ctx;
    return k->hash[id] == k->h && memcmp(k->r + k->ent[id].pos, k->x, k->n * sizeof *k->x) == 0;
}

/* CHRF._get_match_statistics for the order-n n-grams of hyp and ref:
 * out = [hyp count (0 when the reference has none of this order), reference
 * count, sum over hypothesis n-grams of min(hyp count, ref count)]. */
static TfmStatus match_order(ChrfScorer *s, const uint32_t *h, size_t hn, const uint32_t *r,
                             size_t rn, int n, long long out[3], TfmErr *err)
{
    const size_t un = (size_t)n;
    const size_t rc = rn >= un ? rn - un + 1 : 0, hc = hn >= un ? hn - un + 1 : 0;
    out[0] = rc ? (long long)hc : 0;
    out[1] = (long long)rc;
    out[2] = 0;
    if (!rc || !hc) return TFM_OK;
    if (rc > UINT32_MAX / 4) return err_set(err, TFM_ERR_NOMEM, "chrf: line too long");
    hidx_reset(&s->index);
    if (hidx_reserve(&s->index, rc, 64, err) ||
        xgrow((void **)&s->ent, &s->cap_ent, rc, sizeof *s->ent, err))
        return err->status;
    HashIndex *x = &s->index;
    SeqKey k = {s->ent, x->hash, r, NULL, un, 0};
    for (size_t i = 0; i < rc; i++) {
        const uint64_t hv = fnv_hash_words(r + i, un);
        k.x = r + i;
        k.h = (uint32_t)hv;
        const size_t slot = hidx_probe(x, hv, seq_same, &k);
        if (x->slot[slot]) {
            s->ent[x->slot[slot] - 1].ref++;
            continue;
        }
        s->ent[hidx_put(x, slot, hv)] = (Entry){.pos = (uint32_t)i, .ref = 1};
    }
    long long match = 0;
    for (size_t i = 0; i < hc; i++) {
        const uint64_t hv = fnv_hash_words(h + i, un);
        k.x = h + i;
        k.h = (uint32_t)hv;
        const long id = hidx_find(x, hv, seq_same, &k);
        /* clipping done incrementally: the c-th copy matches while c <= ref count */
        if (id >= 0 && ++s->ent[id].hyp <= s->ent[id].ref) match++;
    }
    out[2] = match;
    return TFM_OK;
}

TfmStatus chrf_segment_stats(ChrfScorer *s, const char *hyp, size_t hyp_len,
                             const char *const *refs, const size_t *ref_lens,
                             size_t n_refs, ChrfStats *out, TfmErr *err)
{
    memset(out, 0, sizeof *out);
    if (n_refs == 0) return err_set(err, TFM_ERR_USAGE, "chrf: no reference");
    const int nc = s->opt.char_order, nw = s->opt.word_order;
    wordids_reset(&s->words);
    if (side_prepare(s, &s->hyp, hyp, hyp_len, err)) return err->status;
    ChrfStats cur;
    double best = -1.0;
    /* CHRF._compute_segment_statistics: the reference with the best F wins */
    for (size_t r = 0; r < n_refs; r++) {
        if (side_prepare(s, &s->ref, refs[r], ref_lens[r], err)) return err->status;
        memset(&cur, 0, sizeof cur);
        for (int n = 1; n <= nc; n++)
            if (match_order(s, s->hyp.text.cps, s->hyp.text.n_cps, s->ref.text.cps,
                            s->ref.text.n_cps, n, &cur.v[3 * (n - 1)], err))
                return err->status;
        for (int n = 1; n <= nw; n++)
            if (match_order(s, s->hyp.wids, s->hyp.n_wids, s->ref.wids, s->ref.n_wids, n,
                            &cur.v[3 * (nc + n - 1)], err))
                return err->status;
        double f = chrf_compute(&cur, &s->opt);
        if (f > best) {
            best = f;
            *out = cur;
        }
    }
    return TFM_OK;
}

/* CHRF._compute_f_score, operation for operation (the same rounding). */
double chrf_compute(const ChrfStats *st, const ChrfOptions *opt)
{
    const double eps = 1e-16;
    const int order = opt->char_order + opt->word_order;
    const double factor = (double)opt->beta * opt->beta;
    double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
    int effective_order = 0;
    for (int i = 0; i < order; i++) {
        const long long n_hyp = st->v[3 * i], n_ref = st->v[3 * i + 1], n_match = st->v[3 * i + 2];
        const double prec = n_hyp > 0 ? (double)n_match / (double)n_hyp : eps;
        const double rec = n_ref > 0 ? (double)n_match / (double)n_ref : eps;
        const double denom = factor * prec + rec;
        score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        if (n_hyp > 0 && n_ref > 0) {       /* sacreBLEU < 2.0 effective order */
            avg_prec += prec;
            avg_rec += rec;
            effective_order++;
        }
    }
    if (opt->eps_smoothing) return 100 * score / order;
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec != 0) {
        score = (1 + factor) * avg_prec * avg_rec;
        score /= (factor * avg_prec) + avg_rec;
        return 100 * score;
    }
    return 0.0;
}

void chrf_name(const ChrfOptions *opt, char *buf, size_t size)
{
    int n = snprintf(buf, size, "chrF%d", opt->beta);
    for (int i = 0; i < opt->word_order && n >= 0 && (size_t)n + 1 < size; i++) buf[n++] = '+';
    if (n >= 0 && (size_t)n < size) buf[n] = '\0';
}

void chrf_signature(const ChrfOptions *opt, size_t n_refs, char *buf, size_t size)
{
    snprintf(buf, size, "nrefs:%zu|case:%s|eff:%s|nc:%d|nw:%d|space:%s|version:tfm-%s", n_refs,
             opt->lowercase ? "lc" : "mixed", opt->eps_smoothing ? "no" : "yes", opt->char_order,
             opt->word_order, opt->whitespace ? "yes" : "no", TFM_VERSION);
}
