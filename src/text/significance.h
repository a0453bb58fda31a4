/* significance: sacreBLEU 2.x's statistical tests of corpus scores, computed
 * from per-segment statistics (BLEU's n-gram counts, chrF's, TER's edits):
 *   - the bootstrap confidence interval of one system (--confidence):
 *     resample the segments with replacement, score each resample; the mean
 *     and half the width of the central 95% of the scores;
 *   - the paired bootstrap resampling test (--paired-bs; Koehn 2004, as
 *     Moses' bootstrap-hypothesis-difference-significance.pl): the same
 *     resamples for a system and the baseline; the p-value of their score
 *     difference, and the system's interval;
 *   - paired approximate randomization (--paired-ar; Riezler and Maxwell
 *     2005, as multeval): trials that swap each segment between the two
 *     systems with probability 1/2.
 * The resamples and swaps come from numpy's stream (numpy_rng.h) with
 * sacreBLEU's seed, and the sums are taken as sacreBLEU takes them (float32
 * for the bootstrap), so the figures are sacreBLEU's: p-values equal, means
 * and intervals to about 1e-6 (sacreBLEU's float32 arithmetic). The one
 * known exception: randomization trials whose difference ties the real one
 * to the last bit, which happens with fractional statistics (TER with
 * several references, whose lengths are averages): sacreBLEU sums them with
 * a BLAS product whose rounding decides the tie, tfm sums them exactly. */
#ifndef TFM_SIGNIFICANCE_H
#define TFM_SIGNIFICANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/ter.h"

/* A metric's score from summed segment statistics (k values). */
typedef double (*SigScoreFn)(const double *sums, const void *ctx);

/* One system's statistics: n segments of k values each, row after row. */
typedef struct {
    const double *stats;
    size_t n;
    int k;
    SigScoreFn score;
    const void *ctx;
} SigSystem;

/* What a test reports of a system; has_ci and has_p say which parts are set. */
typedef struct {
    double score;               /* the corpus score */
    double mean, ci;            /* bootstrap mean and 95% half-width */
    double p;                   /* p-value against the baseline */
    bool has_ci, has_p;
} SigResult;

/* Each metric's segment statistics as a row, in sacreBLEU's order, and its
 * score from summed rows (a SigScoreFn; ctx: the metric's options):
 *   BLEU [sys_len, ref_len, matches by order, n-grams by order];
 *   chrF its flat list ([hyp, ref, match] an order, chars first);
 *   TER [edits, average reference length]. */
enum { SIG_BLEU_K = 2 + 2 * BLEU_MAX_ORDER, SIG_TER_K = 2 };
int sig_chrf_k(const ChrfOptions *opt);
void sig_bleu_row(const BleuStats *st, double *row);
void sig_chrf_row(const ChrfStats *st, const ChrfOptions *opt, double *row);
void sig_ter_row(const TerStats *st, double *row);
double sig_bleu_score(const double *sums, const void *bleu_options);
double sig_chrf_score(const double *sums, const void *chrf_options);
double sig_ter_score(const double *sums, const void *unused);

/* sacreBLEU's seed: SACREBLEU_SEED if set (an integer as Python's int()
 * reads it, or "none" for a random one), else 12345. *fixed is false for
 * "none". 0 is a fixed seed here, where sacreBLEU's paired tests take it as
 * "none". Errors: TFM_ERR_USAGE for anything else, naming the variable. */
TfmStatus sig_seed_from_env(uint64_t *seed, bool *fixed, TfmErr *err);

/* The corpus score alone, as the tests report it (no interval, no p). */
TfmStatus sig_score(const SigSystem *sys, SigResult *out, TfmErr *err);
/* The bootstrap interval of one system with n_samples resamples
 * (sacreBLEU's corpus_score(n_bootstrap=n_samples)). Errors: TFM_ERR_NOMEM;
 * TFM_ERR_USAGE for more than 2^32-1 segments (numpy's 32-bit draws). The
 * paired tests below fail alike. */
TfmStatus sig_bootstrap(const SigSystem *sys, int n_samples, uint64_t seed, SigResult *out,
                        TfmErr *err);
/* The paired bootstrap test of sys against base (same n and k). */
TfmStatus sig_paired_bs(const SigSystem *base, const SigSystem *sys, int n_samples, uint64_t seed,
                        SigResult *out, TfmErr *err);
/* The paired approximate randomization test of sys against base. */
TfmStatus sig_paired_ar(const SigSystem *base, const SigSystem *sys, int n_trials, uint64_t seed,
                        SigResult *out, TfmErr *err);

#endif
