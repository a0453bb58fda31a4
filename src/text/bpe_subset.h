/* bpe_subset: spelling text in a subset of a vocabulary's pieces.
 *
 * A model whose output layer covers only some pieces (model.output_vocab
 * "target": the pieces its training targets use) must see every target in
 * those pieces. Like subword-nmt's --vocabulary filter, a piece outside the
 * subset is split back into the two pieces its merge joined, recursively,
 * and a character piece outside it into its UTF-8 byte pieces; the text
 * stays the same byte for byte. The specials, the byte pieces and the
 * marker must be in the subset, so that every line can be spelled. A
 * SentencePiece vocabulary has no merges: a piece outside the subset is
 * spelled as the fewest subset pieces that make its text (spm_spell), and
 * the subset must hold the pieces bpe_subset_mark_writable names. */
#ifndef TFM_BPE_SUBSET_H
#define TFM_BPE_SUBSET_H

#include <stdbool.h>
#include "base/err.h"
#include "text/bpe.h"

typedef struct BpeSubset BpeSubset;

/* Marks in[0..bpe_vocab_size(b)) the pieces every subset must hold: tfm's
 * specials, bytes and marker, or for a SentencePiece model tfm's specials
 * and spm_mark_writable's pieces. */
void bpe_subset_mark_writable(const Bpe *b, bool *in);

/* TFM_ERR_FORMAT "output vocabulary: piece N (...) is missing; ..." for the
 * first piece bpe_subset_mark_writable names that in[] leaves out. */
TfmStatus bpe_subset_check(const Bpe *b, const bool *in, TfmErr *err);

/* The subset of b's pieces with in[id] true (bpe_vocab_size(b) entries).
 * TFM_ERR_FORMAT when a piece bpe_subset_mark_writable names is left out;
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
