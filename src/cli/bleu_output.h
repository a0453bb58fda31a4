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

/* Prints one score as sacreBLEU's line or a one-line JSON object; ci (may be
 * NULL) adds the bootstrap mean and interval as sacreBLEU does (not when the
 * mean is 0, as sacreBLEU's Score.format). */
TfmStatus bleu_print_bleu(const BleuScore *sc, bool json, const char *sig, const SigResult *ci,
                          TfmErr *err);
TfmStatus bleu_print_chrf(const ChrfStats *st, const ChrfOptions *opt, bool json, const char *sig,
                          const SigResult *ci, TfmErr *err);
TfmStatus bleu_print_ter(const TerStats *st, bool json, const char *sig, const SigResult *ci,
                         TfmErr *err);

/* The paired tests' table on stdout, a row a system (names[0] the baseline)
 * and a column a metric: "score (mean ± ci) (p = P)", '*' where p <= 0.05;
 * or with json one object a line a system. */
TfmStatus bleu_print_paired(const char *const *names, int n_systems, const PairedColumn *cols,
                            int n_cols, bool json, TfmErr *err);

/* Writes sig with the test's fields ("bs:1000|seed:12345|", sacreBLEU's
 * order) after its "nrefs:N|" into buf. */
void bleu_sig_with_test(const char *sig, const char *test, char *buf, size_t size);

#endif
