/* corpus: a parallel corpus as BPE token ids, and token-budget batching.
 * Pairs are read line by line from two plain UTF-8 files, encoded with the
 * vocabulary, and filtered (empty side, or longer than max_len tokens).
 * Batches group pairs of similar length so that padded source + target
 * tokens stay within the budget; their order is shuffled per epoch from the
 * seed, so a data position (epoch, batch index) is all resume needs. */
#ifndef TFM_CORPUS_H
#define TFM_CORPUS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "text/bpe.h"
#include "text/bpe_subset.h"
#include "base/err.h"
#include "model/model.h"
#include "train/pair_stream.h"

typedef struct {
    int *tokens;            /* every side's ids, back to back */
    long *src_off, *tgt_off;/* where pair i's sides start in tokens (the target's
                             * right after the source's) */
    int *src_len, *tgt_len; /* BPE tokens per side, without </s> or <s> */
    long n_pairs;           /* pairs kept */
    long n_lines;           /* lines read per file */
    long n_encoded;         /* of them, those encoded (all but with corpus_load_chunk's parts) */
    long skipped_empty;     /* pairs with an empty side */
    long skipped_long;      /* pairs with a side over max_len tokens */
    /* With keep_text: the text of the kept pairs, for corpus_resegment.
     * Pair i's source is text[text_off[2i] .. text_off[2i+1]), its target
     * text[text_off[2i+1] .. text_off[2i+2]). */
    char *text;
    size_t *text_off;
    int *spare;             /* corpus_resegment's next token array */
    /* Read as part `part` of `parts` > 1 (corpus_load_chunk): the pairs
     * above are those of the lines j (from 0) with j % parts == part;
     * own_lens has every such line's source and target token counts, the
     * pairs left out included (2 ints a line). NULL otherwise. */
    int *own_lens;
    size_t tok_cap, spare_cap, text_cap, text_off_cap, own_lens_cap;
} Corpus;

/* Why a pair read is kept or left out. */
typedef enum { PAIR_KEPT, PAIR_EMPTY, PAIR_LONG } PairFate;

/* A pair of src_n and tgt_n tokens: empty when a side has none, long when
 * a side is over max_len. */
static inline PairFate pair_fate(int src_n, int tgt_n, int max_len)
{
    if (src_n == 0 || tgt_n == 0) return PAIR_EMPTY;
    return src_n > max_len || tgt_n > max_len ? PAIR_LONG : PAIR_KEPT;
}

/* Reads and encodes src_path/tgt_path, the targets spelled in tgt_subset's
 * pieces when it is not NULL (model.output_vocab "target"), before the
 * max_len filter; keep_text also keeps the pairs' text (for BPE-dropout). Errors: TFM_ERR_IO (unreadable),
 * TFM_ERR_FORMAT ("a.de has 10 lines, a.en has 9 lines"; invalid UTF-8 with
 * file and line). */
TfmStatus corpus_load(Corpus *c, const char *src_path, const char *tgt_path,
                      const Bpe *bpe, const BpeSubset *tgt_subset, int max_len, bool keep_text,
                      TfmErr *err);
/* Reads, encodes and filters the next max_pairs pairs of ps (fewer at the
 * end of its epoch) as corpus_load does; n_lines counts the pairs read.
 * With parts > 1 it reads them all but encodes and keeps only part `part`
 * of them (see own_lens). Encodes with up to `threads` OpenMP threads; the
 * corpus is the same for any number. When *cancel (may be NULL) turns true
 * it stops within a block of pairs: TFM_INTERRUPTED, the corpus empty. */
TfmStatus corpus_load_chunk(Corpus *c, PairStream *ps, long max_pairs, const Bpe *bpe,
                            const BpeSubset *tgt_subset, int max_len, bool keep_text, int part,
                            int parts, int threads, const atomic_bool *cancel, TfmErr *err);
/* The lines j < n_lines with j % parts == part. */
static inline long corpus_part_lines(long n_lines, int part, int parts)
{
    return n_lines > part ? (n_lines - part + parts - 1) / parts : 0;
}
void corpus_free(Corpus *c);

/* The bytes the corpus's pairs take: their ids, offsets and lengths (and
 * kept text), as used, not as allocated. */
size_t corpus_bytes(const Corpus *c);

/* Encodes every pair again from its kept text with BPE-dropout p (the
 * targets then spelled in tgt_subset's pieces, as by corpus_load)
 * (bpe_encode_dropout), drawing from streams seeded by seed and the pair's
 * index (pair i's index is index[i], or i when index is NULL), so the same
 * seed gives the same ids. A side whose segmentation
 * comes out longer than max_len keeps its plain encoding (which fit). The
 * corpus must have been loaded with keep_text. The token arrays are reused
 * (they grow only past their largest size so far). Only TFM_ERR_NOMEM; the
 * corpus is unusable after an error. */
TfmStatus corpus_resegment(Corpus *c, const Bpe *bpe, const BpeSubset *tgt_subset, float p,
                           uint64_t seed, const long *index, int max_len, TfmErr *err);

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

/* The rows [*lo, *hi) of a batch of n sentences that share `part` of
 * `parts` trains on (a rank's or a thread's): an even split, since a batch
 * holds sentences of about one length, so equal counts are about equal
 * work. */
static inline void batch_share_rows(int n, int part, int parts, int *lo, int *hi)
{
    *lo = (int)((long)n * part / parts);
    *hi = (int)((long)n * (part + 1) / parts);
}

/* Where pair p's ids are, the pair being row `row` of a share. */
typedef void (*PairIds)(const void *ctx, long p, int row, const int **src, const int **tgt);

/* Share `part` of `parts` of batch i (batch_share_rows) as batcher_get
 * fills the whole batch: the whole batch's widths, and with parts > 1 its
 * target count in loss_tokens. The ids of row r come from ids(ctx, ...),
 * so the corpus needs only the lengths of the pairs of other shares. */
void batcher_get_share(Batcher *b, long i, int part, int parts, PairIds ids, const void *ctx,
                       Batch *out);

/* batch_real_tokens of batch i, from the lengths alone. */
long batcher_real_tokens(const Batcher *b, long i);

void batcher_free(Batcher *b);

/* The bytes of the batcher's arrays (a pair's place in the plan, and the
 * current batch). */
size_t batcher_bytes(const Batcher *b);

/* Source + target tokens of a batch without padding (the <s>/</s> included). */
long batch_real_tokens(const Batch *b);
/* The target tokens that are not padding: what the batch's loss is a mean over. */
long batch_targets(const Batch *b);

#endif
