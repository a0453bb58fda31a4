/* bpe_cache: the pieces of the words a thread has encoded, so that a word
 * met again (most of a corpus's words are) is looked up, not merged again.
 * The ids are those bpe_encode gives, whatever the cache holds: it only
 * saves time. One cache a thread; it forgets everything when full. */
#ifndef TFM_BPE_CACHE_H
#define TFM_BPE_CACHE_H

#include "text/bpe.h"

typedef struct BpeCache BpeCache;

/* A cache of up to max_words words. */
BpeCache *bpe_cache_new(int max_words, TfmErr *err);
void bpe_cache_free(BpeCache *c);

/* bpe_encode through the cache (which must be used with one vocabulary). */
TfmStatus bpe_encode_cached(const Bpe *b, BpeCache *c, const char *line, size_t len, int **ids,
                            int *n, int *cap, TfmErr *err);

#endif
