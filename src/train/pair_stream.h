/* pair_stream: the training pairs of an epoch, in order, read line by line
 * from one or more pairs of files (data.train_src / data.train_tgt, pairs
 * by position; gzipped or not), so that no more than a buffer of them need
 * be in memory.
 *
 * Without weights the corpora are read one after another, and the epoch
 * ends after the last. With weights (data.train_weights) each pair is drawn
 * from corpus i with probability w_i / sum(w), from a generator seeded by
 * the seed and the epoch; a corpus that reaches its end starts again (it is
 * upsampled), and the epoch ends once every corpus has reached its end.
 * Either way the order is a function of the files, the seed and the epoch,
 * so a resumed run finds its place by reading again (pair_stream_skip). */
#ifndef TFM_PAIR_STREAM_H
#define TFM_PAIR_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/text.h"

typedef struct {
    const char *const *src, *const *tgt;   /* borrowed paths, n of each */
    const double *weights;  /* NULL: one corpus after another */
    int n;
    LineReader *rs, *rt;    /* the open readers (all n with weights, else the current) */
    bool *open, *done;      /* corpus i is open; reached its end this epoch */
    int cur;                /* without weights: the corpus being read */
    Rng rng;                /* with weights: which corpus the next pair is from */
    long pairs;             /* pairs returned this epoch */
    bool ended;             /* the epoch is over */
    /* pair_stream_at_end's look ahead: the next pair, read and kept */
    bool held;
    char *held_src, *held_tgt;
    size_t held_src_cap, held_tgt_cap;
    size_t held_src_len, held_tgt_len;
    const LineReader *held_rs, *held_rt;
} PairStream;

/* One pair: its two lines (valid until the next call) and where they are. */
typedef struct {
    const char *src, *tgt;
    size_t src_len, tgt_len;
    const LineReader *rs, *rt;  /* their files and line numbers, for messages */
} PairLine;

/* Positions ps at the start of the given epoch. Paths and weights must
 * outlive ps. */
TfmStatus pair_stream_open(PairStream *ps, const char *const *src, const char *const *tgt, int n,
                           const double *weights, uint64_t seed, long epoch, TfmErr *err);

/* The next pair: 1, 0 at the end of the epoch, -1 on an error:
 * TFM_ERR_FORMAT "a.de has 10 lines, a.en has 9 lines" when a pair of files
 * ends early, and text_read_line's errors. */
int pair_stream_next(PairStream *ps, PairLine *out, TfmErr *err);

/* Whether the epoch has no pair left: 1 or 0 (the next pair is then read
 * ahead and kept for pair_stream_next), -1 on an error as pair_stream_next.
 * So a chunk that takes the last pair knows it is the last. */
int pair_stream_at_end(PairStream *ps, TfmErr *err);

/* Reads past n pairs (for a resumed run); 0 or -1 as pair_stream_next. */
int pair_stream_skip(PairStream *ps, long n, TfmErr *err);

void pair_stream_close(PairStream *ps);

#endif
