/* ter: Translation Edit Rate (Snover et al. 2006) computed exactly as
 * sacreBLEU 2.x does (metrics/ter.py, metrics/lib_ter.py, which follow
 * Tercom): greedy block shifts chosen by Tercom's ranking (edit-distance
 * gain, then longer, then earlier), at most 10 words moved at most 50
 * positions, at most 1000 candidate shifts per sentence pair, and a
 * Levenshtein distance restricted to a beam of 25 around the diagonal.
 * Per segment: the fewest edits over the references and their average
 * length; the corpus score is total edits / total average reference length.
 * The tokenizer options are sacreBLEU's: --ter-case-sensitive,
 * --ter-no-punct, --ter-normalized and --ter-asian-support
 * (ter_normalize.h).
 *
 * Usage:
 *   TerScorer *s; ter_scorer_new(&opt, &s, err);
 *   for each line: ter_segment_stats(s, hyp, hyp_len, refs, ref_lens, n_refs, &st, err);
 *                  ter_stats_add(&total, &st);
 *   double score = ter_compute(&total);
 *   ter_scorer_free(s); */
#ifndef TFM_TER_H
#define TFM_TER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    bool case_sensitive;    /* sacreBLEU --ter-case-sensitive; default: lowercase */
    bool no_punct;          /* --ter-no-punct: drop . , ? : ; ! " ( ) */
    bool normalized;        /* --ter-normalized: tercom's normalization */
    bool asian_support;     /* --ter-asian-support: CJK characters split apart (with
                             * normalized), CJK punctuation dropped (with no_punct) */
} TerOptions;

/* Statistics of a segment or (summed, in line order) of a corpus. */
typedef struct {
    long long edits;        /* fewest edits (shifts + insertions, deletions, substitutions) */
    double ref_len;         /* average reference length in words */
} TerStats;

typedef struct TerScorer TerScorer;

/* sacreBLEU's defaults: case-insensitive, punctuation kept, no normalization. */
void ter_options_default(TerOptions *opt);

TfmStatus ter_scorer_new(const TerOptions *opt, TerScorer **out, TfmErr *err);
void ter_scorer_free(TerScorer *s);

/* Statistics of one segment: hyp[0..hyp_len) against n_refs >= 1 raw, valid
 * UTF-8 references (rstrip, lowercasing and word splitting are applied
 * here). Overwrites *out. Errors: TFM_ERR_NOMEM; TFM_ERR_USAGE when n_refs
 * is 0; TFM_ERR_FORMAT when a line has more than 2^26 words. */
TfmStatus ter_segment_stats(TerScorer *s, const char *hyp, size_t hyp_len,
                            const char *const *refs, const size_t *ref_lens,
                            size_t n_refs, TerStats *out, TfmErr *err);

/* The number of edits that turn hyp[0..nh) into ref[0..nr) (word ids), with
 * sacreBLEU's shift search: lib_ter.translation_edit_rate. */
TfmStatus ter_edits(TerScorer *s, const uint32_t *hyp, size_t nh, const uint32_t *ref, size_t nr,
                    long long *edits, TfmErr *err);

/* acc += x. */
void ter_stats_add(TerStats *acc, const TerStats *x);

/* The score (0..100 and above) from statistics, as TER._compute_score_from_stats. */
double ter_compute(const TerStats *st);

/* Writes "nrefs:N|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:tfm-V"
 * (norm, punct and asian as the options say). */
void ter_signature(const TerOptions *opt, size_t n_refs, char *buf, size_t size);

#endif
