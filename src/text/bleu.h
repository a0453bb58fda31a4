/* bleu: corpus and sentence BLEU (Papineni et al. 2002) computed exactly as
 * sacreBLEU 2.x does: the same line reading, lowercasing (Python str.lower),
 * tokenizers (13a, intl, zh, char, none), n-gram clipping over references,
 * closest-reference brevity penalty and smoothing (exp, floor, add-k, none).
 * Not here: sacreBLEU's ja-mecab/ko-mecab/spm/flores tokenizers (they need
 * external models), chrF/TER (chrf.h, ter.h), bootstrap and paired tests
 * (significance.h), .gz input (the caller reads lines).
 *
 * Usage:
 *   BleuScorer *s; bleu_scorer_new(&opt, &s, err);
 *   for each line: bleu_segment_stats(s, hyp, hyp_len, refs, ref_lens, n_refs, &st, err);
 *                  bleu_stats_add(&total, &st);
 *   bleu_compute(&total, &opt, &score); bleu_format(&score, 2, buf, sizeof buf);
 *   bleu_scorer_free(s); */
#ifndef TFM_BLEU_H
#define TFM_BLEU_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define BLEU_MAX_ORDER 4

typedef enum {
    BLEU_TOK_13A, BLEU_TOK_INTL, BLEU_TOK_CHAR, BLEU_TOK_NONE, BLEU_TOK_ZH
} BleuTokenizer;
typedef enum { BLEU_SMOOTH_EXP, BLEU_SMOOTH_FLOOR, BLEU_SMOOTH_ADD_K, BLEU_SMOOTH_NONE } BleuSmooth;

typedef struct {
    BleuTokenizer tokenize;  /* default 13a */
    bool lowercase;          /* -lc */
    BleuSmooth smooth;       /* default exp */
    double smooth_value;     /* < 0: the method's default (floor 0.1, add-k 1) */
    bool effective_order;    /* sacreBLEU's sentence-level default */
} BleuOptions;

/* Sufficient statistics of one segment or (summed) of a corpus. */
typedef struct {
    long long sys_len, ref_len;
    long long counts[BLEU_MAX_ORDER];   /* clipped n-gram matches */
    long long totals[BLEU_MAX_ORDER];   /* hypothesis n-grams */
} BleuStats;

/* A score as sacreBLEU's BLEUScore holds it. score and precisions are in
 * 0..100. counts/totals are doubles because add-k adds its k to them, as
 * sacreBLEU reports. ratio is sys_len/ref_len, 0 when ref_len is 0. */
typedef struct {
    double score;
    double precisions[BLEU_MAX_ORDER];
    double counts[BLEU_MAX_ORDER], totals[BLEU_MAX_ORDER];
    double bp, ratio;
    long long sys_len, ref_len;
} BleuScore;

typedef struct BleuScorer BleuScorer;

/* Fills opt with sacreBLEU's corpus defaults: 13a, case-sensitive, exp. */
void bleu_options_default(BleuOptions *opt);

/* Creates a scorer for these options (copied). It owns the scratch buffers
 * and hash tables reused for every segment. Free with bleu_scorer_free. */
TfmStatus bleu_scorer_new(const BleuOptions *opt, BleuScorer **out, TfmErr *err);
void bleu_scorer_free(BleuScorer *s);

/* Statistics of one segment: hyp[0..hyp_len) against n_refs >= 1 references
 * refs[r][0..ref_lens[r]). Raw lines: lowercasing, trailing-whitespace
 * stripping and tokenization are applied here. Overwrites *out.
 * Errors: TFM_ERR_NOMEM; TFM_ERR_USAGE when n_refs is 0. */
TfmStatus bleu_segment_stats(BleuScorer *s, const char *hyp, size_t hyp_len,
                             const char *const *refs, const size_t *ref_lens,
                             size_t n_refs, BleuStats *out, TfmErr *err);

/* acc += x, field by field. */
void bleu_stats_add(BleuStats *acc, const BleuStats *x);

/* BLEU from statistics, as sacreBLEU's BLEU.compute_bleu with opt's
 * smoothing and effective order. Never fails; empty input gives score 0. */
void bleu_compute(const BleuStats *st, const BleuOptions *opt, BleuScore *out);

/* Preprocesses one line as the scorer does (lowercase, rstrip, tokenize) and
 * returns the tokens joined by single spaces: the string sacreBLEU's
 * tokenizer returns. *out points into the scorer and stays valid until its
 * next call. Errors: TFM_ERR_NOMEM. */
TfmStatus bleu_tokenize(BleuScorer *s, const char *line, size_t len,
                        const char **out, size_t *out_len, TfmErr *err);

/* Corpus BLEU of n in-memory NUL-terminated lines against n_refs reference
 * sets: refs[r][i] is reference r of line i. For callers such as
 * validation during training. Errors: TFM_ERR_NOMEM. */
TfmStatus bleu_corpus(const BleuOptions *opt, const char *const *hyps, size_t n,
                      const char *const *const *refs, size_t n_refs,
                      BleuScore *out, TfmErr *err);

/* Writes sacreBLEU's line, e.g. "BLEU = 35.12 65.1/41.3/28.0/19.9 (BP = 0.982
 * ratio = 0.982 hyp_len = 12000 ref_len = 12217)", NUL-terminated, to buf;
 * the score with width decimals (sacreBLEU's --width; 2 above). */
void bleu_format(const BleuScore *sc, int width, char *buf, size_t size);

/* Writes the signature "nrefs:N|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-V"
 * (sacreBLEU's layout; the version names tfm, not sacreBLEU) to buf. */
void bleu_signature(const BleuOptions *opt, size_t n_refs, char *buf, size_t size);

/* Parses a tokenizer or smoothing name ("13a", "exp", ...); false if unknown. */
bool bleu_parse_tokenizer(const char *name, BleuTokenizer *out);
bool bleu_parse_smooth(const char *name, BleuSmooth *out);
const char *bleu_tokenizer_name(BleuTokenizer t);
const char *bleu_smooth_name(BleuSmooth s);

#endif
