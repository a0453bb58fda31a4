/* decoder_internal: the Decoder behind decoder.h, private to src/decode/.
 *
 * A Decoder is one model's step (step.h), the ensemble stepped with
 * it and the batch they share (scorer.c: decoder_begin,
 * decoder_step), and the search that decoder_run drives over them
 * (search.h). Calls go one way: decoder.c -> search strategies ->
 * search.c, and decoder.c -> scorer.c -> step.c. All
 * buffers are carved from one block (decoder_init), which the same code
 * counts first for the memory check. */
#ifndef TFM_DECODE_INTERNAL_H
#define TFM_DECODE_INTERNAL_H

#include "decode/decoder.h"
#include "decode/search.h"
#include "decode/step.h"

struct Decoder {
    DecStep step;                        /* this model */
    int max_sents, max_beam;
    /* an ensemble: other models' decoders, stepped in lockstep with this
     * one; the log-probabilities are the weighted mean (weights[0] is this
     * decoder's own) */
    Decoder **members;
    int n_members;
    float *weights;
    /* the batch of the last decoder_begin */
    int *src_buf;                        /* (n, S) source rows, compacted with the batch */
    int cur_n, cur_S, cur_k;
    int cur_rows;                        /* rows whose caches hold the last step */
    Search search;                       /* decoder_run's */
    int *padded;                         /* (n, S): decoder_pad's rows */
    int *forced;                         /* (n): decoder_score's tokens of a step */
    void *block;                         /* every buffer above is carved from it */
    ShortlistRun *sl;                    /* decoder_set_shortlist's, or NULL */
};

/* decoder_step, but a step's log-probabilities over d's columns
 * (decoder_columns): a model with model.output_vocab "target" and no
 * ensemble gives its output pieces' only, not spread over the vocabulary. */
const float *decoder_step_columns(Decoder *d, const int *prev, const int *parent, int t);
StepColumns decoder_columns(const Decoder *d);

/* Writes n ragged sentences (sents[b]: lens[b] ids, no </s>; the caller
 * checked n <= max_sents and lens[b] + 1 <= the model's max_len) to
 * d->padded as rows (n, S) ending with </s>, padded with <pad>; returns S. */
int decoder_pad(Decoder *d, const int *const *sents, const int *lens, int n);

/* Removes the sentences done[b] marks from the batch of d and its members:
 * the others move down to 0.. in order (their encoder state and source
 * rows; the rows' caches move with the next step's parent). */
void decoder_drop_sentences(Decoder *d, const char *done);

#endif
