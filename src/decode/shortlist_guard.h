/* shortlist_guard: which lines' best hypothesis wants a piece outside
 * their shortlist.
 *
 * A shortlist changes a translation where the model, given the prefix
 * the beam holds, would choose a piece the line's candidates lack. At
 * each step the guard computes the whole output row of each checked
 * line's best live hypothesis (row 0 of its block: the beam keeps its
 * rows best first) and counts the candidates that can be output (not
 * <pad> or <s>) whose logit beats the best piece outside them; a line
 * where fewer than `rank` do is marked, and the shortlist then gives it
 * the whole output from that step on (shortlist.h). With rank 1 and
 * greedy decoding the marked steps are exactly those where the list
 * would change greedy's choice. It costs one row of the whole output
 * layer per checked line and step. */
#ifndef TFM_DECODE_SHORTLIST_GUARD_H
#define TFM_DECODE_SHORTLIST_GUARD_H

#include <stdbool.h>

#include "base/err.h"
#include "nn/packed_linear.h"

typedef struct {
    const PackedLinear *full;   /* the model's whole output product */
    const int *out_pos;         /* piece -> its output column (NULL: the piece) */
    int n_out, d, max_sents;
    int rank;                   /* mark when fewer candidates beat the outside piece */
    int max_rows;               /* rows checked a sentence at most */
    int *on;                    /* (max_sents) by the batch's current index: how many of
                                   its first rows (live ones) to check */
    int *which;                 /* (max_sents · max_rows) the sentence of each row checked */
    float *x, *z, *cz;          /* (max_sents · max_rows, d) those rows; (·, n_out) their
                                   logits, and their candidates' */
    bool *row_mark;             /* (max_sents · max_rows) each checked row's verdict */
    bool *mark;                 /* (max_sents) by current index: the step's verdict */
} ShortlistGuard;

TfmStatus shortlist_guard_init(ShortlistGuard *g, const PackedLinear *full,
                               const int *out_pos, int n_out, int d, int max_sents,
                               int max_rows, TfmErr *err);
/* For each of the n sentences: from the step's top states x (n·k, d),
 * the whole output of its first on[b] rows (none when its len[b]
 * candidates pieces[b] are every output piece), and mark[b] whether in
 * one of them fewer than rank of the candidates beat the best piece
 * outside them.
 * Returns how many are marked. */
int shortlist_guard_check(ShortlistGuard *g, const float *x, int n, int k,
                          const int *const *pieces, const int *len);
void shortlist_guard_free(ShortlistGuard *g);

#endif
