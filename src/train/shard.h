/* shard: a chunk of training pairs shared by the ranks of a job
 * (docs/distributed.md, "The data"). Every rank reads through the chunk's
 * lines (to find them, and the files' line counts) but encodes only its
 * part: line j with j % R == rank (corpus_load_chunk's part). The lengths
 * of every pair are then gathered by all ranks (8 bytes a pair), so each
 * rank plans the global batches one process plans, from lengths alone; and
 * after each plan every rank fetches the ids of its rows of the batches
 * (the sentences batch_share gives it) from the ranks that encoded them.
 * A rank holds the ids of about 2/R of a chunk: those it encoded (kept
 * while the chunk may be planned again) and those it trains on (the ones
 * it encoded itself are not copied: 2/R - 1/R^2).
 *
 * The functions marked collective must be called by every rank at once,
 * from the main thread (MPI is MPI_THREAD_FUNNELED); an error on any rank
 * is every rank's (dp_agree): they return together. */
#ifndef TFM_SHARD_H
#define TFM_SHARD_H

#include "train/corpus.h"

typedef struct {
    Corpus own;             /* the kept pairs this rank encoded (with their text for BPE-dropout) */
    long *own_index;        /* own pair k's index among the chunk's kept pairs */
    long *at;               /* kept pair p: its encoder rank + R * its index in that rank's own */
    int *held;              /* the ids of this rank's rows of the planned batches, from others */
    const int **row_ids;    /* row r's source ids (in held or own), its target's follow */
    long *batch_row;        /* served batch i's rows here: [batch_row[i], batch_row[i + 1]) */
    long *part_pairs;       /* the kept pairs of each rank's part */
    long encoded;           /* the chunk's lines this rank encoded */
    long n_rows;            /* this rank's rows of the planned batches */
    size_t held_n;
    const Corpus *view;     /* shard_batch's: the lengths, and the batch's first row */
    long row0;
} Shard;

/* Takes over own (this rank's part of a chunk, read by corpus_load_chunk)
 * and gathers every rank's lengths: view becomes the chunk as one process
 * reads it, without ids: its kept pairs' lengths, its line and skip counts
 * (for batcher_init and batcher_plan_epoch). Collective. */
TfmStatus shard_gather(Shard *s, Corpus *own, Corpus *view, int max_len, TfmErr *err);

/* After own's pairs were encoded again (BPE-dropout, corpus_resegment with
 * own_index): their new lengths into view. Collective. */
TfmStatus shard_regather(Shard *s, Corpus *view, TfmErr *err);

/* After b planned an epoch of view: fetches the ids of this rank's rows.
 * keep_own: own stays (the chunk is planned again), so the rows this rank
 * encoded are read there, not copied; else own may be dropped after this.
 * Collective. */
TfmStatus shard_fetch(Shard *s, const Batcher *b, bool keep_own, TfmErr *err);

/* Frees the ids and text this rank encoded (a chunk not planned again). */
void shard_drop_own(Shard *s);

/* This rank's rows of served batch i of b's plan, cut as batch_share cuts
 * the whole batch (its columns and loss_tokens the whole batch's); returns
 * the whole batch's real tokens (batch_real_tokens). */
long shard_batch(Shard *s, Batcher *b, long i, Batch *out);

/* The bytes this rank's ids, text and offsets take. */
size_t shard_bytes(const Shard *s);

void shard_free(Shard *s);

#endif
