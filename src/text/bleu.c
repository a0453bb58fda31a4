/* bleu: sacreBLEU-identical BLEU scoring. Every step mirrors a line of
 * sacreBLEU 2.x (metrics/bleu.py); comments name the Python they copy. Each
 * line is tokenized by bleu_tokenize.c; here its tokens are interned, the
 * n-grams of the references counted and clipped against the hypothesis,
 * and the corpus statistics turned into a score (brevity penalty,
 * smoothing, effective order), formatted, and named in a signature. Also
 * here: reading a text file into lines as sacreBLEU does. */
#include "text/bleu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bleu_tokenize.h"
#include "text/metric_text.h"
#include "base/fnv.h"
#include "base/hash_index.h"
#include "base/version.h"

/* One n-gram of the current segment's references, at its id in the table. */
typedef struct {
    uint32_t order;                 /* 1..BLEU_MAX_ORDER */
    uint32_t ids[BLEU_MAX_ORDER];   /* token ids; unused tail is 0 */
    uint32_t ref_max;               /* max count over the references */
    uint32_t cur, cur_ref;          /* count in reference cur_ref */
    uint32_t hyp_count;
} Ngram;

#define NO_ID UINT32_MAX

struct BleuScorer {
    BleuOptions opt;
    BleuTok tok;                    /* tokenizer scratch: the last line's tokens */
    WordIds tokens;                 /* token -> id, shared by all segments */
    /* Token ids of the current segment: references, then the hypothesis. */
    uint32_t *ids;
    size_t n_ids, cap_ids;
    size_t *ref_start;              /* n_refs + 1 offsets into ids */
    size_t cap_ref_start;
    HashIndex index;                /* the segment's reference n-grams */
    Ngram *ng;                      /* by id */
    size_t cap_ng;
};

/* ---- token interning and n-gram table ---- */

/* Id of token p[0..n); a new id when `add`, else NO_ID if unseen. */
static TfmStatus intern(BleuScorer *s, const unsigned char *p, size_t n, int add,
                        uint32_t *id, TfmErr *err)
{
    if (add) return wordids_get(&s->tokens, p, n, id, err);
    if (!wordids_find(&s->tokens, p, n, id)) *id = NO_ID;
    return TFM_OK;
}

/* Preprocesses line and appends its token ids to s->ids. */
static TfmStatus add_line_ids(BleuScorer *s, const char *line, size_t len, int add, TfmErr *err)
{
    const unsigned char *text = NULL;
    const BleuTok *t = &s->tok;
    if (bleu_tok_line(&s->tok, &s->opt, (const unsigned char *)line, len, &text, err))
        return err->status;
    if (xgrow((void **)&s->ids, &s->cap_ids, s->n_ids + t->n_spans, sizeof *s->ids, err))
        return err->status;
    for (size_t i = 0; i < t->n_spans; i++) {
        uint32_t id = NO_ID;
        if (intern(s, text + t->spans[i].off, t->spans[i].len, add, &id, err)) return err->status;
        s->ids[s->n_ids++] = id;
    }
    return TFM_OK;
}

/* An n-gram being looked up (hash_index's HashSame context). */
typedef struct {
    const Ngram *ng;
    uint32_t order;
    const uint32_t *ids;
} NgramKey;

static inline bool ngram_same(const void *ctx, uint32_t id)
{
    const NgramKey *k = ctx;
    const Ngram *e = &k->ng[id];
    return e->order == k->order && memcmp(e->ids, k->ids, k->order * sizeof *k->ids) == 0;
}

/* The entry of (order, ids) in the segment's table, NULL if it has none. */
static Ngram *ngram_find(BleuScorer *s, uint32_t order, const uint32_t *ids)
{
    const NgramKey k = {s->ng, order, ids};
    const long id = hidx_find(&s->index, fnv_hash_words(ids, order), ngram_same, &k);
    return id < 0 ? NULL : &s->ng[id];
}

/* The entry of (order, ids), added (zeroed) if new. The table grows with
 * the distinct n-grams of a segment, not its length: a 30M-character line
 * of one letter needs 4. */
static Ngram *ngram_get(BleuScorer *s, uint32_t order, const uint32_t *ids, TfmErr *err)
{
    const uint32_t next = s->index.n;
    if (hidx_room(&s->index, 1024, err) ||
        (next >= s->cap_ng && xgrow((void **)&s->ng, &s->cap_ng, (size_t)next + 1, sizeof *s->ng, err)))
        return NULL;
    const uint64_t h = fnv_hash_words(ids, order);
    const NgramKey k = {s->ng, order, ids};
    const size_t i = hidx_probe(&s->index, h, ngram_same, &k);
    if (s->index.slot[i]) return &s->ng[s->index.slot[i] - 1];
    Ngram *e = &s->ng[hidx_put(&s->index, i, h)];
    memset(e, 0, sizeof *e);
    e->order = order;
    e->cur_ref = UINT32_MAX;
    memcpy(e->ids, ids, order * sizeof *ids);
    return e;
}

/* ---- public API ---- */

void bleu_options_default(BleuOptions *opt)
{
    opt->tokenize = BLEU_TOK_13A;
    opt->lowercase = false;
    opt->smooth = BLEU_SMOOTH_EXP;
    opt->smooth_value = -1.0;
    opt->effective_order = false;
}

TfmStatus bleu_scorer_new(const BleuOptions *opt, BleuScorer **out, TfmErr *err)
{
    *out = NULL;
    BleuScorer *s = xcalloc(1, sizeof *s, err);
    if (!s) return err->status;
    s->opt = *opt;
    *out = s;
    return TFM_OK;
}

void bleu_scorer_free(BleuScorer *s)
{
    if (!s) return;
    bleu_tok_free(&s->tok);
    wordids_free(&s->tokens);
    free(s->ids);
    free(s->ref_start);
    hidx_free(&s->index);
    free(s->ng);
    free(s);
}

TfmStatus bleu_tokenize(BleuScorer *s, const char *line, size_t len,
                        const char **out, size_t *out_len, TfmErr *err)
{
    return bleu_tok_join(&s->tok, &s->opt, line, len, out, out_len, err);
}

TfmStatus bleu_segment_stats(BleuScorer *s, const char *hyp, size_t hyp_len,
                             const char *const *refs, const size_t *ref_lens,
                             size_t n_refs, BleuStats *out, TfmErr *err)
{
    memset(out, 0, sizeof *out);
    if (n_refs == 0) return err_set(err, TFM_ERR_USAGE, "bleu: no reference given");
    s->n_ids = 0;
    if (xgrow((void **)&s->ref_start, &s->cap_ref_start, n_refs + 1, sizeof *s->ref_start, err))
        return err->status;
    for (size_t r = 0; r < n_refs; r++) {
        s->ref_start[r] = s->n_ids;
        if (add_line_ids(s, refs[r], ref_lens[r], 1, err)) return err->status;
    }
    s->ref_start[n_refs] = s->n_ids;
    size_t hyp0 = s->n_ids;
    if (add_line_ids(s, hyp, hyp_len, 0, err)) return err->status;
    long long hl = (long long)(s->n_ids - hyp0);

    /* _get_closest_ref_len: smallest |hyp - ref|, ties to the shorter ref. */
    long long best_diff = -1, best_len = -1;
    for (size_t r = 0; r < n_refs; r++) {
        long long rl = (long long)(s->ref_start[r + 1] - s->ref_start[r]);
        long long d = llabs(hl - rl);
        if (best_diff == -1 || d < best_diff) { best_diff = d; best_len = rl; }
        else if (d == best_diff && rl < best_len) best_len = rl;
    }
    out->sys_len = hl;
    out->ref_len = best_len;

    /* _extract_reference_info: per n-gram, the max count over references. */
    hidx_reset(&s->index);
    for (size_t r = 0; r < n_refs; r++) {
        size_t len = s->ref_start[r + 1] - s->ref_start[r];
        if (len == 0) continue;     /* (s->ids may be NULL: all lines empty so far) */
        const uint32_t *ids = s->ids + s->ref_start[r];
        for (uint32_t order = 1; order <= BLEU_MAX_ORDER; order++) {
            for (size_t i = 0; i + order <= len; i++) {
                Ngram *e = ngram_get(s, order, ids + i, err);
                if (!e) return err->status;
                if (e->cur_ref != r) {
                    e->cur_ref = (uint32_t)r;
                    e->cur = 0;
                }
                if (++e->cur > e->ref_max) e->ref_max = e->cur;
            }
        }
    }

    /* _compute_segment_statistics: correct += min(hyp count, ref max) per
     * distinct n-gram, counted one occurrence at a time. */
    const uint32_t *ids = hl > 0 ? s->ids + hyp0 : NULL;
    for (uint32_t order = 1; order <= BLEU_MAX_ORDER; order++) {
        if (hl >= (long long)order) out->totals[order - 1] = hl - order + 1;
        for (long long i = 0; i + order <= hl; i++) {
            int unseen = 0;
            for (uint32_t k = 0; k < order; k++) unseen |= ids[i + k] == NO_ID;
            if (unseen) continue;
            Ngram *e = ngram_find(s, order, ids + i);
            if (!e) continue;
            if (++e->hyp_count <= e->ref_max) out->counts[order - 1]++;
        }
    }
    return TFM_OK;
}

void bleu_stats_add(BleuStats *acc, const BleuStats *x)
{
    acc->sys_len += x->sys_len;
    acc->ref_len += x->ref_len;
    for (int k = 0; k < BLEU_MAX_ORDER; k++) {
        acc->counts[k] += x->counts[k];
        acc->totals[k] += x->totals[k];
    }
}

/* utils.my_log: log floored at -9999999999 for 0. */
static double my_log(double x)
{
    return x == 0.0 ? -9999999999.0 : log(x);
}

void bleu_compute(const BleuStats *st, const BleuOptions *opt, BleuScore *out)
{
    memset(out, 0, sizeof *out);
    double sv = opt->smooth_value;
    if (sv < 0) sv = opt->smooth == BLEU_SMOOTH_FLOOR ? 0.1 : opt->smooth == BLEU_SMOOTH_ADD_K ? 1.0 : 0.0;
    double *correct = out->counts, *total = out->totals;
    int any = 0;
    for (int k = 0; k < BLEU_MAX_ORDER; k++) {
        correct[k] = (double)st->counts[k];
        total[k] = (double)st->totals[k];
        any |= st->counts[k] != 0;
    }
    out->sys_len = st->sys_len;
    out->ref_len = st->ref_len;
    out->ratio = st->ref_len ? (double)st->sys_len / (double)st->ref_len : 0.0;
    if (st->sys_len < st->ref_len)
        out->bp = st->sys_len > 0 ? exp(1.0 - (double)st->ref_len / (double)st->sys_len) : 0.0;
    else
        out->bp = 1.0;
    if (!any) return;                          /* "Early stop if there are no matches (#141)" */

    double smooth_mteval = 1.0;
    int eff_order = BLEU_MAX_ORDER;
    for (int n = 1; n <= BLEU_MAX_ORDER; n++) {
        if (opt->smooth == BLEU_SMOOTH_ADD_K && n > 1) {
            correct[n - 1] += sv;
            total[n - 1] += sv;
        }
        if (total[n - 1] == 0) break;
        if (opt->effective_order) eff_order = n;
        if (correct[n - 1] == 0) {
            if (opt->smooth == BLEU_SMOOTH_EXP) {
                smooth_mteval *= 2;
                out->precisions[n - 1] = 100. / (smooth_mteval * total[n - 1]);
            } else if (opt->smooth == BLEU_SMOOTH_FLOOR) {
                out->precisions[n - 1] = 100. * sv / total[n - 1];
            }
        } else {
            out->precisions[n - 1] = 100. * correct[n - 1] / total[n - 1];
        }
    }
    double sum = 0.0;
    for (int k = 0; k < eff_order; k++) sum += my_log(out->precisions[k]);
    out->score = out->bp * exp(sum / eff_order);
}

TfmStatus bleu_corpus(const BleuOptions *opt, const char *const *hyps, size_t n,
                      const char *const *const *refs, size_t n_refs,
                      BleuScore *out, TfmErr *err)
{
    BleuScorer *s = NULL;
    const char **seg = NULL;
    size_t *lens = NULL;
    BleuStats total = {0}, st;
    if (bleu_scorer_new(opt, &s, err)) goto fail;
    seg = xcalloc(n_refs ? n_refs : 1, sizeof *seg, err);
    lens = xcalloc(n_refs ? n_refs : 1, sizeof *lens, err);
    if (!seg || !lens) goto fail;
    for (size_t i = 0; i < n; i++) {
        for (size_t r = 0; r < n_refs; r++) {
            seg[r] = refs[r][i];
            lens[r] = strlen(refs[r][i]);
        }
        if (bleu_segment_stats(s, hyps[i], strlen(hyps[i]), seg, lens, n_refs, &st, err))
            goto fail;
        bleu_stats_add(&total, &st);
    }
    bleu_compute(&total, opt, out);
    free(seg);
    free(lens);
    bleu_scorer_free(s);
    return TFM_OK;
fail:
    free(seg);
    free(lens);
    bleu_scorer_free(s);
    return err->status;
}

void bleu_format(const BleuScore *sc, int width, char *buf, size_t size)
{
    /* BLEUScore: f"{score:.{width}f} {p1:.1f}/.../{p4:.1f} (BP = {bp:.3f} ratio = {ratio:.3f} ...)" */
    snprintf(buf, size,
             "BLEU = %.*f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
             width, sc->score, sc->precisions[0], sc->precisions[1], sc->precisions[2],
             sc->precisions[3], sc->bp, sc->ratio, sc->sys_len, sc->ref_len);
}

void bleu_signature(const BleuOptions *opt, size_t n_refs, char *buf, size_t size)
{
    char smooth[48];
    double sv = opt->smooth_value;
    if (opt->smooth == BLEU_SMOOTH_FLOOR || opt->smooth == BLEU_SMOOTH_ADD_K) {
        if (sv < 0) sv = opt->smooth == BLEU_SMOOTH_FLOOR ? 0.1 : 1.0;
        snprintf(smooth, sizeof smooth, "%s[%.2f]", bleu_smooth_name(opt->smooth), sv);
    } else {
        snprintf(smooth, sizeof smooth, "%s", bleu_smooth_name(opt->smooth));
    }
    snprintf(buf, size, "nrefs:%zu|case:%s|eff:%s|tok:%s|smooth:%s|version:tfm-%s", n_refs,
             opt->lowercase ? "lc" : "mixed", opt->effective_order ? "yes" : "no",
             bleu_tokenizer_name(opt->tokenize), smooth, TFM_VERSION);
}

static const char *const tok_names[] = {"13a", "intl", "char", "none", "zh"};
static const char *const smooth_names[] = {"exp", "floor", "add-k", "none"};

bool bleu_parse_tokenizer(const char *name, BleuTokenizer *out)
{
    for (int i = 0; i < (int)(sizeof tok_names / sizeof *tok_names); i++)
        if (strcmp(name, tok_names[i]) == 0) { *out = (BleuTokenizer)i; return true; }
    return false;
}

bool bleu_parse_smooth(const char *name, BleuSmooth *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, smooth_names[i]) == 0) { *out = (BleuSmooth)i; return true; }
    return false;
}

const char *bleu_tokenizer_name(BleuTokenizer t) { return tok_names[t]; }
const char *bleu_smooth_name(BleuSmooth s) { return smooth_names[s]; }
