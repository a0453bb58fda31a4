/* chrf: chrF (Popović 2015) and chrF++ (Popović 2017) computed exactly as
 * sacreBLEU 2.x does (metrics/chrf.py, helpers.py): character n-grams of
 * orders 1..char_order over the line with its whitespace removed, word
 * n-grams of orders 1..word_order over str.split() words with one leading or
 * trailing ASCII punctuation mark split off, per-order [hyp, ref, match]
 * counts from the reference with the best F-score, and the corpus score from
 * the summed counts (effective-order averaging, or eps smoothing).
 * Bootstrap and paired tests: significance.h.
 *
 * Usage:
 *   ChrfScorer *s; chrf_scorer_new(&opt, &s, err);
 *   for each line: chrf_segment_stats(s, hyp, hyp_len, refs, ref_lens, n_refs, &st, err);
 *                  chrf_stats_add(&total, &st);
 *   double score = chrf_compute(&total, &opt);
 *   chrf_scorer_free(s); */
#ifndef TFM_CHRF_H
#define TFM_CHRF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define CHRF_MAX_CHAR_ORDER 32
#define CHRF_MAX_WORD_ORDER 32
#define CHRF_MAX_ORDERS (CHRF_MAX_CHAR_ORDER + CHRF_MAX_WORD_ORDER)

typedef struct {
    int char_order;         /* 1..CHRF_MAX_CHAR_ORDER, default 6 */
    int word_order;         /* 0..CHRF_MAX_WORD_ORDER, default 0; 2 is chrF++ */
    int beta;               /* >= 0, default 2 */
    bool lowercase;         /* sacreBLEU --chrf-lowercase (not -lc) */
    bool whitespace;        /* --chrf-whitespace: keep spaces in char n-grams */
    bool eps_smoothing;     /* --chrf-eps-smoothing; default effective order */
} ChrfOptions;

/* Statistics of a segment or (summed) of a corpus, sacreBLEU's flat list:
 * for each order (char orders first, then word orders) the hypothesis
 * n-gram count, the reference n-gram count and the clipped matches. */
typedef struct {
    long long v[3 * CHRF_MAX_ORDERS];
} ChrfStats;

typedef struct ChrfScorer ChrfScorer;

/* sacreBLEU's defaults: chrF2 (char order 6, word order 0, beta 2), cased,
 * no whitespace, effective order. */
void chrf_options_default(ChrfOptions *opt);

/* Creates a scorer for these options (copied; the orders must be in range).
 * Free with chrf_scorer_free. Errors: TFM_ERR_NOMEM. */
TfmStatus chrf_scorer_new(const ChrfOptions *opt, ChrfScorer **out, TfmErr *err);
void chrf_scorer_free(ChrfScorer *s);

/* Statistics of one segment: hyp[0..hyp_len) against n_refs >= 1 references.
 * Raw valid UTF-8 lines; rstrip and lowercasing are applied here. The
 * reference with the highest F-score wins (the first on ties). Overwrites
 * *out. Errors: TFM_ERR_NOMEM; TFM_ERR_USAGE when n_refs is 0. */
TfmStatus chrf_segment_stats(ChrfScorer *s, const char *hyp, size_t hyp_len,
                             const char *const *refs, const size_t *ref_lens,
                             size_t n_refs, ChrfStats *out, TfmErr *err);

/* acc += x. */
void chrf_stats_add(ChrfStats *acc, const ChrfStats *x);

/* The score (0..100) from statistics, as sacreBLEU's _compute_f_score. */
double chrf_compute(const ChrfStats *st, const ChrfOptions *opt);

/* The metric's name, "chrF2" or "chrF2++" (one '+' per word order). */
void chrf_name(const ChrfOptions *opt, char *buf, size_t size);

/* Writes "nrefs:N|case:mixed|eff:yes|nc:6|nw:0|space:no|version:tfm-V"
 * (sacreBLEU's layout; the version names tfm). */
void chrf_signature(const ChrfOptions *opt, size_t n_refs, char *buf, size_t size);

#endif
