/* bleu_output: what `tfm bleu` prints: sacreBLEU's line or JSON object of
 * each metric (with the bootstrap interval of --confidence), and the table
 * of the paired tests (--paired-bs, --paired-ar). */
#ifndef TFM_BLEU_OUTPUT_H
#define TFM_BLEU_OUTPUT_H

#include <stdbool.h>

#include "base/err.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/significance.h"
#include "text/ter.h"

/* One metric's printed name and its results for the systems of a paired
 * test (res[0] the baseline). */
typedef struct {
    char name[64];
    SigResult *res;
} PairedColumn;

/* How a score is printed: the score alone (--score-only, which wins over
 * json as in sacreBLEU), a JSON object (the score in full precision, the
 * interval's keys rounded to width) or sacreBLEU's line, with width decimals
 * in the score and its interval (sacreBLEU's --width). */
typedef struct {
    bool json, score_only;
    int width;
} ScoreFormat;

/* Prints one score as fmt says; ci (may be NULL) adds the bootstrap mean and
 * interval as sacreBLEU does (not when the mean is 0, as sacreBLEU's
 * Score.format). */
TfmStatus bleu_print_bleu(const BleuScore *sc, const ScoreFormat *fmt, const char *sig,
                          const SigResult *ci, TfmErr *err);
TfmStatus bleu_print_chrf(const ChrfStats *st, const ChrfOptions *opt, const ScoreFormat *fmt,
                          const char *sig, const SigResult *ci, TfmErr *err);
TfmStatus bleu_print_ter(const TerStats *st, const ScoreFormat *fmt, const char *sig,
                         const SigResult *ci, TfmErr *err);

/* The paired tests' table on stdout, a row a system (names[0] the baseline)
 * and a column a metric: "score (mean ± ci) (p = P)" (scores with
 * fmt->width decimals), '*' where p <= 0.05; or with fmt->json one object a
 * line a system. */
TfmStatus bleu_print_paired(const char *const *names, int n_systems, const PairedColumn *cols,
                            int n_cols, const ScoreFormat *fmt, TfmErr *err);

/* Writes sig with the test's fields ("bs:1000|seed:12345|", sacreBLEU's
 * order) after its "nrefs:N|" into buf. */
void bleu_sig_with_test(const char *sig, const char *test, char *buf, size_t size);

#endif
