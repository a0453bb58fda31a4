/* ter: sacreBLEU-identical TER. Every step mirrors sacreBLEU 2.x
 * metrics/lib_ter.py; comments name the Python function. Words are
 * interned to ids per segment, so the search compares integers.
 *
 * The edit-distance matrix is stored as one band per row: row i holds only
 * the columns [lo[i], hi[i]) that sacreBLEU's beam computes, every other
 * cell reads as "infinite" (as its _empty_row). sacreBLEU memoizes rows in a
 * trie keyed by hypothesis prefixes; a row depends only on the words before
 * it (all shift candidates have the same length, so the band is the same),
 * so here a candidate reuses the rows of the current hypothesis up to the
 * first word the shift changes. Same numbers, no trie. */
#include "text/ter.h"

#include "text/ter_normalize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bleu_tokenize.h"
#include "text/metric_text.h"
#include "base/version.h"

/* lib_ter.py's constants (Tercom's limits, and sacreBLEU's own). */
enum {
    MAX_SHIFT_SIZE = 10,
    MAX_SHIFT_DIST = 50,
    BEAM_WIDTH = 25,
    MAX_SHIFT_CANDIDATES = 1000,
    MAX_WORDS = 1 << 26
};
#define INF ((int32_t)1 << 30)      /* _INT_INFINITY: above any real cost */

/* Edit operations as lib_ter.py names them. */
enum { OP_NOP = ' ', OP_SUB = 's', OP_INS = 'i', OP_DEL = 'd', OP_UNDEF = 'x' };

/* ter_edits' scratch: the banded edit-distance cells and the shift
 * search's hypotheses, reused segment after segment. */
typedef struct {
    size_t *lo, *hi, *off;          /* band of each row, its offset in the cells */
    size_t cap_lo, cap_hi, cap_off;
    int32_t *cost, *cand_cost;      /* band cells: the current hypothesis, a candidate */
    char *op;
    size_t cap_cells, cap_cand_cells, cap_op;
    uint32_t *cur, *cand, *best;    /* hypothesis words: current, candidate, best shift */
    size_t cap_cur, cap_cand, cap_best;
    char *trace;
    size_t cap_trace;
    long *align;                    /* reference position -> hypothesis position */
    size_t cap_align;
    size_t *ref_err, *hyp_err;      /* prefix sums of the error flags */
    size_t cap_ref_err, cap_hyp_err;
} TerEdits;

/* A scorer: its options, the text it tokenizes a line with and the
 * segment's words (the line's life), and ter_edits' scratch. */
struct TerScorer {
    TerOptions opt;
    MText text;
    WordIds words;
    TerNorm norm;                   /* --ter-normalized / --ter-asian-support */
    unsigned char *nopunct;         /* the line without --ter-no-punct's marks */
    size_t cap_nopunct;
    unsigned char *joined;          /* a reference's first tokenization */
    size_t cap_joined;
    uint32_t *hyp, *ref;            /* word ids of the segment */
    size_t cap_hyp, cap_ref;
    TerEdits ed;
};

void ter_options_default(TerOptions *opt)
{
    *opt = (TerOptions){0};
}

TfmStatus ter_scorer_new(const TerOptions *opt, TerScorer **out, TfmErr *err)
{
    *out = xcalloc(1, sizeof **out, err);
    if (!*out) return err->status;
    (*out)->opt = *opt;
    return TFM_OK;
}

void ter_scorer_free(TerScorer *s)
{
    if (!s) return;
    mtext_free(&s->text);
    wordids_free(&s->words);
    ter_norm_free(&s->norm);
    const TerEdits *e = &s->ed;
    FREE_ALL(e->lo, e->hi, e->off, e->cost, e->cand_cost, e->op, e->cur, e->cand, e->best,
             e->trace, e->align, e->ref_err, e->hyp_err);
    FREE_ALL(s->nopunct, s->joined, s->hyp, s->ref, s);
}

#define GROW(p, cap, need) xgrow((void **)&(p), &(cap), (need), sizeof *(p), err)

/* ---- the beam edit distance (BeamEditDistance) ---- */

/* Sets each row's band for hypotheses of nh words against nr reference
 * words, as BeamEditDistance._edit_distance picks min_j and max_j. */
static TfmStatus set_bands(TerScorer *s, size_t nh, size_t nr, size_t *cells, TfmErr *err)
{
    TerEdits *const ed = &s->ed;
    if (GROW(ed->lo, ed->cap_lo, nh + 1) || GROW(ed->hi, ed->cap_hi, nh + 1) ||
        GROW(ed->off, ed->cap_off, nh + 1))
        return err->status;
    const double ratio = nh ? (double)nr / (double)nh : 1.0;
    long beam = BEAM_WIDTH;
    if (BEAM_WIDTH < ratio / 2) beam = (long)ceil(ratio / 2 + BEAM_WIDTH);
    size_t total = 0;
    for (size_t i = 0; i <= nh; i++) {
        long lo = 0, hi = (long)nr + 1;     /* row 0: the initial row, all of it */
        if (i > 0) {
            const long diag = (long)floor((double)i * ratio);
            lo = diag - beam > 0 ? diag - beam : 0;
            if (diag + beam < hi) hi = diag + beam;
            if (i == nh) hi = (long)nr + 1;
            if (hi < lo) hi = lo;
        }
        ed->lo[i] = (size_t)lo;
        ed->hi[i] = (size_t)hi;
        ed->off[i] = total;
        total += (size_t)(hi - lo);
    }
    *cells = total;
    return TFM_OK;
}

/* Cell (i, j) of a band matrix; INF outside the band. */
static inline int32_t cell(const TerScorer *s, const int32_t *m, size_t i, size_t j)
{
    const TerEdits *const ed = &s->ed;
    return j >= ed->lo[i] && j < ed->hi[i] ? m[ed->off[i] + j - ed->lo[i]] : INF;
}

/* Row i of matrix m from row i - 1, for hypothesis words w; ops too when
 * op is not NULL. Tercom's preference on ties: match/substitution, then
 * deletion, then insertion (sacreBLEU swaps the last two because it flips
 * the trace afterwards). */
static void edit_row(const TerScorer *s, int32_t *m, char *op, size_t i, const uint32_t *w,
                     const uint32_t *ref)
{
    const TerEdits *const ed = &s->ed;
    const size_t lo = ed->lo[i], hi = ed->hi[i], base = ed->off[i] - lo;
    for (size_t j = lo; j < hi; j++) {
        int32_t best;
        char o;
        if (j == 0) {
            best = cell(s, m, i - 1, 0) + 1;
            o = OP_DEL;
        } else {
            const int same = w[i - 1] == ref[j - 1];
            best = INF;
            o = OP_UNDEF;
            int32_t c = cell(s, m, i - 1, j - 1) + (same ? 0 : 1);
            if (best > c) { best = c; o = same ? OP_NOP : OP_SUB; }
            c = cell(s, m, i - 1, j) + 1;
            if (best > c) { best = c; o = OP_DEL; }
            c = (j - 1 >= lo ? m[base + j - 1] : INF) + 1;
            if (best > c) { best = c; o = OP_INS; }
        }
        m[base + j] = best;
        if (op) op[base + j] = o;
    }
}

/* The full matrix (costs and ops) of hypothesis w into s->ed.cost / s->ed.op. */
static void edit_full(TerScorer *s, const uint32_t *w, size_t nh, const uint32_t *ref, size_t nr)
{
    TerEdits *const ed = &s->ed;
    for (size_t j = 0; j <= nr; j++) {      /* _initial_row: j insertions */
        ed->cost[j] = (int32_t)j;
        ed->op[j] = OP_INS;
    }
    for (size_t i = 1; i <= nh; i++) edit_row(s, ed->cost, ed->op, i, w, ref);
}

/* The edit distance of candidate w, which equals s->ed.cur before word p:
 * rows 0..p are those of the current hypothesis. */
static int32_t edit_from(TerScorer *s, const uint32_t *w, size_t p, size_t nh,
                         const uint32_t *ref, size_t nr)
{
    TerEdits *const ed = &s->ed;
    if (p >= nh) return ed->cost[ed->off[nh] + nr - ed->lo[nh]];
    const size_t a = ed->off[p], b = ed->off[p] + (ed->hi[p] - ed->lo[p]);
    memcpy(ed->cand_cost + a, ed->cost + a, (b - a) * sizeof *ed->cost);
    for (size_t i = p + 1; i <= nh; i++) edit_row(s, ed->cand_cost, NULL, i, w, ref);
    return ed->cand_cost[ed->off[nh] + nr - ed->lo[nh]];
}

/* ---- shifts (_shift, _perform_shift, trace_to_alignment) ---- */

/* _perform_shift: words[start, start + len) moved to before target, with
 * Python's slice clamping in the "within" case. */
static void perform_shift(const uint32_t *w, size_t n, size_t start, size_t len, size_t target,
                          uint32_t *out)
{
    size_t k = 0;
#define COPY(from, to) do { for (size_t q = (from); q < (to); q++) out[k++] = w[q]; } while (0)
    if (target < start) {
        COPY(0, target); COPY(start, start + len); COPY(target, start); COPY(start + len, n);
    } else if (target > start + len) {
        COPY(0, start); COPY(start + len, target); COPY(start, start + len); COPY(target, n);
    } else {
        const size_t mid = len + target < n ? len + target : n;
        COPY(0, start); COPY(start + len, mid); COPY(start, start + len); COPY(mid, n);
    }
#undef COPY
}

/* Traces the current matrix back from (nh, nr), flips insertions and
 * deletions (_flip_trace) and turns it into the alignment and error flags
 * of trace_to_alignment (here as prefix sums). */
static TfmStatus alignment(TerScorer *s, size_t nh, size_t nr, TfmErr *err)
{
    TerEdits *const ed = &s->ed;
    size_t n = 0, i = nh, j = nr;
    while (i > 0 || j > 0) {
        const char o =
            j >= ed->lo[i] && j < ed->hi[i] ? ed->op[ed->off[i] + j - ed->lo[i]] : OP_UNDEF;
        if (o == OP_UNDEF)
            return err_set(err, TFM_ERR_NUMERIC, "ter: no edit path (internal error)");
        ed->trace[n++] = o;
        if (o == OP_SUB || o == OP_NOP) { i--; j--; }
        else if (o == OP_INS) j--;
        else i--;
    }
    long ph = -1, pr = -1;
    ed->ref_err[0] = ed->hyp_err[0] = 0;
    while (n-- > 0) {
        char o = ed->trace[n];
        o = o == OP_INS ? OP_DEL : o == OP_DEL ? OP_INS : o;
        const size_t e = o != OP_NOP;
        if (o != OP_DEL) { ph++; ed->hyp_err[ph + 1] = ed->hyp_err[ph] + e; }
        if (o != OP_INS) { pr++; ed->ref_err[pr + 1] = ed->ref_err[pr] + e; ed->align[pr] = ph; }
    }
    return TFM_OK;
}

TfmStatus ter_edits(TerScorer *s, const uint32_t *hyp, size_t nh, const uint32_t *ref, size_t nr,
                    long long *edits, TfmErr *err)
{
    TerEdits *const ed = &s->ed;
    if (nr == 0) {                  /* special treatment of empty refs */
        *edits = (long long)nh;
        return TFM_OK;
    }
    if (nh > MAX_WORDS || nr > MAX_WORDS)
        return err_set(err, TFM_ERR_FORMAT, "ter: a line has more than %d words", MAX_WORDS);
    size_t cells = 0;
    if (set_bands(s, nh, nr, &cells, err) || GROW(ed->cost, ed->cap_cells, cells) ||
        GROW(ed->cand_cost, ed->cap_cand_cells, cells) || GROW(ed->op, ed->cap_op, cells) ||
        GROW(ed->cur, ed->cap_cur, nh + 1) || GROW(ed->cand, ed->cap_cand, nh + 1) ||
        GROW(ed->best, ed->cap_best, nh + 1) || GROW(ed->trace, ed->cap_trace, nh + nr + 1) ||
        GROW(ed->align, ed->cap_align, nr + 1) || GROW(ed->ref_err, ed->cap_ref_err, nr + 1) ||
        GROW(ed->hyp_err, ed->cap_hyp_err, nh + 1))
        return err->status;
    memcpy(ed->cur, hyp, nh * sizeof *hyp);
    long long shifts = 0;
    int checked = 0;
    int32_t pre_score;
    /* translation_edit_rate: shift while the best shift lowers the distance */
    for (;;) {
        edit_full(s, ed->cur, nh, ref, nr);
        pre_score = ed->cost[ed->off[nh] + nr - ed->lo[nh]];
        if (alignment(s, nh, nr, err)) return err->status;
        /* _shift: the best candidate by (gain, length, -start_h, -target) */
        bool have = false, stop = false;
        int32_t b_gain = 0;
        size_t b_len = 0, b_start = 0, b_idx = 0;
        /* _find_shifted_pairs: matching runs of up to 10 words, start
         * positions at most 50 apart */
        for (size_t sh = 0; sh < nh && !stop; sh++) {
            const size_t sr_lo = sh > MAX_SHIFT_DIST ? sh - MAX_SHIFT_DIST : 0;
            const size_t sr_hi = sh + MAX_SHIFT_DIST < nr ? sh + MAX_SHIFT_DIST + 1 : nr;
            for (size_t sr = sr_lo; sr < sr_hi && !stop; sr++) {
                for (size_t len = 1; len <= MAX_SHIFT_SIZE; len++) {
                    if (ed->cur[sh + len - 1] != ref[sr + len - 1]) break;
                    /* both sides must be wrong somewhere in the run, and the
                     * run must not already sit where the reference aligns */
                    if (ed->hyp_err[sh + len] - ed->hyp_err[sh] != 0 &&
                        ed->ref_err[sr + len] - ed->ref_err[sr] != 0 &&
                        !(ed->align[sr] >= (long)sh && ed->align[sr] < (long)(sh + len))) {
                        long prev = -1;
                        for (long o = -1; o < (long)len; o++) {
                            const long idx = (long)sr + o == -1 ? 0 : ed->align[(long)sr + o] + 1;
                            if (idx == prev) continue;
                            prev = idx;
                            perform_shift(ed->cur, nh, sh, len, (size_t)idx, ed->cand);
                            size_t p = 0;
                            while (p < nh && ed->cand[p] == ed->cur[p]) p++;
                            const int32_t gain = pre_score - edit_from(s, ed->cand, p, nh, ref, nr);
                            checked++;
                            if (!have || gain > b_gain ||
                                (gain == b_gain && (len > b_len || (len == b_len &&
                                 (sh < b_start || (sh == b_start && (size_t)idx < b_idx)))))) {
                                have = true;
                                b_gain = gain;
                                b_len = len;
                                b_start = sh;
                                b_idx = (size_t)idx;
                                memcpy(ed->best, ed->cand, nh * sizeof *ed->cand);
                            }
                        }
                        if (checked >= MAX_SHIFT_CANDIDATES) { stop = true; break; }
                    }
                    if (sh + len == nh || sr + len == nr) break;
                }
            }
        }
        if (checked >= MAX_SHIFT_CANDIDATES || !have || b_gain <= 0) break;
        shifts++;
        memcpy(ed->cur, ed->best, nh * sizeof *ed->cur);
    }
    *edits = shifts + pre_score;
    return TFM_OK;
}

/* ---- segments and corpus ---- */

/* TercomTokenizer as sacreBLEU runs it: rstrip, lowercase unless
 * case-sensitive, normalize (ter_normalize.h) and drop punctuation when
 * asked, split on whitespace: s->text's words. */
static TfmStatus tokenize(TerScorer *s, const char *line, size_t len, TfmErr *err)
{
    if (mtext_prepare(&s->text, line, len, !s->opt.case_sensitive, err)) return err->status;
    const bool asian_punct = s->opt.no_punct && s->opt.asian_support;
    if (s->opt.normalized || asian_punct) {
        if (ter_norm_apply(&s->norm, s->text.text, s->text.len, s->opt.normalized,
                           s->opt.asian_support, asian_punct, err))
            return err->status;
        s->text.text = s->norm.out;
        s->text.len = s->norm.out_len;
    }
    if (s->opt.no_punct) {
        if (GROW(s->nopunct, s->cap_nopunct, s->text.len + 1)) return err->status;
        size_t k = 0;
        for (size_t i = 0; i < s->text.len; i++)
            if (!strchr(".,?:;!\"()", s->text.text[i]) || s->text.text[i] == 0)
                s->nopunct[k++] = s->text.text[i];
        s->text.text = s->nopunct;
        s->text.len = k;
    }
    return mtext_split(&s->text, err);
}

/* The word ids of a line. sacreBLEU tokenizes a reference twice
 * (TER._cache_references, then _extract_reference_info, on the first
 * result joined with spaces); only normalization is changed by that: a
 * possessive that the first pass splits from punctuation ("it's." ->
 * "it's .") is split on the second ("it 's ."). Hence `reference`. */
static TfmStatus line_words(TerScorer *s, const char *line, size_t len, bool reference,
                            uint32_t **ids, size_t *cap, size_t *n, TfmErr *err)
{
    if (tokenize(s, line, len, err)) return err->status;
    if (reference && s->opt.normalized) {
        size_t need = s->text.len + 1, k = 0;
        if (GROW(s->joined, s->cap_joined, need)) return err->status;
        for (size_t i = 0; i < s->text.n_words; i++) {
            if (i) s->joined[k++] = ' ';
            memcpy(s->joined + k, s->text.text + s->text.words[i].off, s->text.words[i].len);
            k += s->text.words[i].len;
        }
        if (tokenize(s, (const char *)s->joined, k, err)) return err->status;
    }
    if (xgrow((void **)ids, cap, s->text.n_words + 1, sizeof **ids, err)) return err->status;
    for (size_t i = 0; i < s->text.n_words; i++)
        if (wordids_get(&s->words, s->text.text + s->text.words[i].off, s->text.words[i].len,
                        &(*ids)[i], err))
            return err->status;
    *n = s->text.n_words;
    return TFM_OK;
}

TfmStatus ter_segment_stats(TerScorer *s, const char *hyp, size_t hyp_len,
                            const char *const *refs, const size_t *ref_lens,
                            size_t n_refs, TerStats *out, TfmErr *err)
{
    *out = (TerStats){0};
    if (n_refs == 0) return err_set(err, TFM_ERR_USAGE, "ter: no reference");
    wordids_reset(&s->words);
    size_t nh, nr;
    if (line_words(s, hyp, hyp_len, false, &s->hyp, &s->cap_hyp, &nh, err)) return err->status;
    /* TER._compute_segment_statistics: the fewest edits, the mean length */
    long long best = (long long)1e16, ref_lengths = 0;
    for (size_t r = 0; r < n_refs; r++) {
        long long e;
        if (line_words(s, refs[r], ref_lens[r], true, &s->ref, &s->cap_ref, &nr, err) ||
            ter_edits(s, s->hyp, nh, s->ref, nr, &e, err))
            return err->status;
        ref_lengths += (long long)nr;
        if (e < best) best = e;
    }
    out->edits = best;
    out->ref_len = (double)ref_lengths / (double)n_refs;
    return TFM_OK;
}

void ter_stats_add(TerStats *acc, const TerStats *x)
{
    acc->edits += x->edits;
    acc->ref_len += x->ref_len;
}

double ter_compute(const TerStats *st)
{
    double score;
    if (st->ref_len > 0) score = (double)st->edits / st->ref_len;
    else if (st->edits > 0) score = 1.0;    /* empty references, non-empty hypothesis */
    else score = 0.0;
    return 100 * score;
}

void ter_signature(const TerOptions *opt, size_t n_refs, char *buf, size_t size)
{
    snprintf(buf, size, "nrefs:%zu|case:%s|tok:tercom|norm:%s|punct:%s|asian:%s|version:tfm-%s",
             n_refs, opt->case_sensitive ? "mixed" : "lc", opt->normalized ? "yes" : "no",
             opt->no_punct ? "no" : "yes", opt->asian_support ? "yes" : "no", TFM_VERSION);
}
