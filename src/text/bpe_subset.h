/* bpe_subset: spelling text in a subset of a vocabulary's pieces.
 *
 * A model whose output layer covers only some pieces (model.output_vocab
 * "target": the pieces its training targets use) must see every target in
 * those pieces. Like subword-nmt's --vocabulary filter, a piece outside the
 * subset is split back into the two pieces its merge joined, recursively,
 * and a character piece outside it into its UTF-8 byte pieces; the text
 * stays the same byte for byte. The specials, the byte pieces and the
 * marker must be in the subset, so that every line can be spelled. */
#ifndef TFM_BPE_SUBSET_H
#define TFM_BPE_SUBSET_H

#include <stdbool.h>
#include "base/err.h"
#include "text/bpe.h"

typedef struct BpeSubset BpeSubset;

/* The subset of b's pieces with in[id] true (bpe_vocab_size(b) entries).
 * TFM_ERR_FORMAT when a special, byte piece or the marker is left out;
 * TFM_ERR_NOMEM. */
TfmStatus bpe_subset_new(BpeSubset **out, const Bpe *b, const bool *in, TfmErr *err);

/* Rewrites (*ids)[0..*n) so that every id is in the subset, growing *ids
 * and *cap (xrealloc) when a split lengthens it. Ids in the subset are kept
 * as they are, so ids already in it cost one pass. Only TFM_ERR_NOMEM. */
TfmStatus bpe_subset_apply(const BpeSubset *s, int **ids, int *n, int *cap, TfmErr *err);

/* Whether id is in the subset (false for ids out of range). */
bool bpe_subset_has(const BpeSubset *s, int id);

void bpe_subset_free(BpeSubset *s);

#endif
