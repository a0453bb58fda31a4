/* shortlist_guard: which lines' best hypothesis would rather take a piece
 * outside their shortlist.
 *
 * A shortlist changes a translation where the model, given the prefix the
 * beam holds, would choose a piece the line's candidates lack. At each
 * step the guard computes the whole output row of each checked line's
 * best live hypothesis (row 0 of its block: the beam keeps its rows best
 * first) and marks the line when a piece outside its candidates scores at
 * least as high there as every candidate that can be output (not <pad> or
 * <s>); the shortlist then gives that line the whole output from that
 * step on, that step included (shortlist.h). For greedy decoding the
 * marked steps are exactly those where the list would change greedy's
 * choice, so greedy gives the tokens it gives without a list (up to exact
 * ties, and without no_repeat_ngram, whose bans it does not see). It costs
 * one row of the whole output layer per checked line and step, a beam's
 * share of what the list saves. */
#ifndef TFM_DECODE_SHORTLIST_GUARD_H
#define TFM_DECODE_SHORTLIST_GUARD_H

#include <stdbool.h>

#include "base/err.h"
#include "nn/packed_linear.h"

typedef struct {
    const PackedLinear *full;   /* the model's whole output product */
    const int *out_pos;         /* piece -> its output column (NULL: the piece) */
    int n_out, d, max_sents;
    bool *on;                   /* (max_sents) by the batch's current index: check it */
    int *which;                 /* (max_sents) the sentences checked this step */
    float *x, *z;               /* (max_sents, d) their best rows; (max_sents, n_out) their
                                   logits */
    bool *mark;                 /* (max_sents) by current index: the step's verdict */
} ShortlistGuard;

TfmStatus shortlist_guard_init(ShortlistGuard *g, const PackedLinear *full,
                               const int *out_pos, int n_out, int d, int max_sents, TfmErr *err);
/* For each of the n sentences with on[b] whose len[b] candidates pieces[b]
 * are not every output piece: from the step's top states x (n·k, d), row
 * b·k's whole output, and mark[b] whether a piece outside the candidates
 * scores at least as high as each of them that can be output. Returns how
 * many are marked. */
int shortlist_guard_check(ShortlistGuard *g, const float *x, int n, int k,
                          const int *const *pieces, const int *len);
void shortlist_guard_free(ShortlistGuard *g);

#endif
