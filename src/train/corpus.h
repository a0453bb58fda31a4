/* corpus: a parallel corpus as BPE token ids, and token-budget batching.
 * Pairs are read line by line from two plain UTF-8 files, encoded with the
 * vocabulary, and filtered (empty side, or longer than max_len tokens).
 * Batches group pairs of similar length so that padded source + target
 * tokens stay within the budget; their order is shuffled per epoch from the
 * seed, so a data position (epoch, batch index) is all resume needs. */
#ifndef TFM_CORPUS_H
#define TFM_CORPUS_H

#include <stdbool.h>
#include <stdint.h>
#include "text/bpe.h"
#include "base/err.h"
#include "model/model.h"

typedef struct {
    int *tokens;            /* every side's ids, back to back */
    long *src_off, *tgt_off;/* where pair i's sides start in tokens */
    int *src_len, *tgt_len; /* BPE tokens per side, without </s> or <s> */
    long n_pairs;           /* pairs kept */
    long n_lines;           /* lines read per file */
    long skipped_empty;     /* pairs with an empty side */
    long skipped_long;      /* pairs with a side over max_len tokens */
} Corpus;

/* Reads and encodes src_path/tgt_path. Errors: TFM_ERR_IO (unreadable),
 * TFM_ERR_FORMAT ("a.de has 10 lines, a.en has 9 lines"; invalid UTF-8 with
 * file and line). */
TfmStatus corpus_load(Corpus *c, const char *src_path, const char *tgt_path,
                      const Bpe *bpe, int max_len, TfmErr *err);
void corpus_free(Corpus *c);

typedef struct {
    const Corpus *c;
    int budget;             /* max padded source + target tokens per batch */
    uint64_t seed;
    bool shuffle;           /* false: length-sorted order, the same every epoch */
    long epoch;             /* the epoch whose plan is built, -1 before any */
    long n_batches;
    long *order;            /* pair indices grouped by batch */
    long *batch_start;      /* n_batches + 1 offsets into order */
    long *batch_perm;       /* the order in which batches are served */
    struct BatchKey *keys;  /* sort scratch, one per pair */
    long skipped_budget;    /* pairs that alone exceed the budget */
    int *src, *tgt_in, *tgt_out;   /* the current batch, budget ints each */
} Batcher;

/* Prepares batching; budget >= 4. Pairs whose padded size alone exceeds the
 * budget are left out and counted in skipped_budget. */
TfmStatus batcher_init(Batcher *b, const Corpus *c, int budget, uint64_t seed,
                       bool shuffle, TfmErr *err);

/* Builds the batches of an epoch (deterministic in seed and epoch). */
void batcher_plan_epoch(Batcher *b, long epoch);

/* Fills out with batch number i (0 <= i < n_batches) of the planned epoch;
 * out points into the batcher's buffers until the next call. */
void batcher_get(Batcher *b, long i, Batch *out);

void batcher_free(Batcher *b);

/* Source + target tokens of a batch without padding (the <s>/</s> included). */
long batch_real_tokens(const Batch *b);

#endif
