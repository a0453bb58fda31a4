/* step: one model's incremental decoder, the step under every search.
 * It holds the model's packed weights, the per-row caches, the encoder
 * output of the current batch, and the scratch of one step; it encodes a
 * batch (dec_step_encode) and turns each row's previous token into the
 * log-probabilities of the next (dec_step_forward). It knows nothing of
 * beams, sampling or ensembles (search.h, decoder_internal.h).
 * Private to src/decode/. */
#ifndef TFM_DECODE_STEP_H
#define TFM_DECODE_STEP_H

#include <stddef.h>

#include "base/arena.h"
#include "model/model.h"
#include "model/model_work.h"
#include "nn/packed_linear.h"
#include "decode/shortlist.h"

/* A layer's products: self-attention QKV and output, cross-attention query,
 * output and K | V (of the encoder output, once per batch), FFN. */
enum { LP_QKV, LP_O, LP_CQ, LP_CO, LP_CKV, LP_F1, LP_F2, LP_COUNT };

typedef struct {
    DecLayerWeights w;          /* views into the model's parameters */
    float *cache, *cache_next;  /* (R, self_w): softmax attention's K | V per
                                   position (T, 2D), row r's position t
                                   written by row r at step t and read through
                                   DecStep.anc; linear attention's running
                                   sums S (H, Dh, Dh) and z (D), moved with
                                   their rows (cache_next: the copy's
                                   target; NULL for softmax attention) */
    float *cross_kv;            /* softmax: (n · S, 2D) encoder output's K | V */
    float *cross_state;         /* linear attention: (n, lin_w) S and z of the
                                   encoder output's K, V (the other is NULL) */
    PackedLinear pk[LP_COUNT];  /* the products over packed weights */
} DecLayer;

/* Sentences encoded together: sorted by length and taken 16 at a time, a
 * batch of mixed lengths pads far less than as one (n, S) block. */
enum { ENC_GROUP = 16 };

/* Encoding a batch a group at a time (dec_step_encode): one group's
 * buffers, reused group after group and dead once the cross-attention
 * state is filled. */
typedef struct {
    ModelWork work;     /* model_encode's workspace for one group */
    float *out;         /* (ENC_GROUP · S, D): the group's encoder output */
    float *kv;          /* (ENC_GROUP · S, 2D): its cross K | V */
    int *src;           /* (ENC_GROUP · S): its source rows */
    int *order;         /* (n): the batch's sentences by length */
} EncGroups;

/* One step's activations, (R, ·) each, dead once the step's
 * log-probabilities are out: x the residual stream, in a sublayer's input
 * (post-norm swaps the two), qkv, ctx, y, q, h (R, F) and att the attention
 * probabilities. */
typedef struct {
    float *x, *in, *qkv, *ctx, *y, *q, *h, *att;
} StepScratch;

/* One model's decoder for a batch: its sizes, its packed weights, and the
 * state that lives from dec_step_encode through the batch's last step (the
 * per-row caches and their ancestors, the cross-attention state and each
 * sentence's source length) are one thing: a batch's compaction and a
 * beam's reorder move them together. The group encoder and a step's
 * scratch, which live shorter, are apart. */
typedef struct {
    const Model *m;
    int max_sents, rows;                 /* sentences and rows (sentences · beam) at most */
    int T, S, D, H, F, V;
    int Vo;                              /* output columns: model_n_out (V unless
                                            model.output_vocab "target") */
    int linear;                          /* model.attention "linear" */
    size_t self_w, lin_w;                /* floats per row of a self cache; of a
                                            linear-attention state (D·Dh + D) */
    DecLayer *layer;
    int *anc, *anc_next;                 /* softmax attention, (R, T): anc[r·T + p] is
                                            the row whose cache holds row r's
                                            position p (its ancestor in the beam);
                                            a reorder moves these, not the caches */
    const float *fin_g, *fin_b;          /* pre-norm final LayerNorm */
    float *logits_out;                   /* (R, Vo) their log-probabilities, or NULL */
    PackedLinear p_out;                  /* output projection to the vocabulary */
    EncoderPack *enc_pack;               /* the encoder's weights, packed */
    EncGroups enc;                       /* encoding in groups of similar length */
    int *enc_len;                        /* (n): source length with </s>, moved with
                                            its sentence (cross-attention keys) */
    int *enc_slot;                       /* (n): where sentence b's cross-attention
                                            state is (the b it had when encoded):
                                            dropping a sentence moves this, not
                                            the state */
    StepScratch tmp;                     /* one step's activations */
    float *logits;                       /* (R, V): the step's log-probabilities
                                            (spread over the vocabulary when Vo < V) */
    ShortlistRun *sl;                    /* a shortlist's batch (decoder_run sets it
                                            for its batch): sentence b's rows are
                                            (k, sl->cur_len[b]) at logits + b·k·n_out,
                                            over its own candidates; or NULL */
} DecStep;

/* Sets s's sizes for m, up to max_sents sentences of max_beam rows each,
 * and carves its buffers from a (all NULL while a only counts; see
 * base/arena.h). The weights are not packed yet. */
void dec_step_carve(DecStep *s, Arena *a, const Model *m, int max_sents, int max_beam);
/* Bytes of the packed weights dec_step_pack will allocate for m (in its
 * precision: int8, or bf16 while that is on), from the lists it packs; and
 * what s's packed products hold (the same figure once packed). */
size_t dec_step_packed_bytes(const Model *m);
size_t dec_step_packed_held(const DecStep *s);
/* Packs the model's weights (after dec_step_carve over the real block). */
TfmStatus dec_step_pack(DecStep *s, TfmErr *err);
/* Repacks after the model's weights changed (training). */
void dec_step_update_weights(DecStep *s);
/* Frees what dec_step_pack allocated (the block is the caller's). */
void dec_step_free(DecStep *s);

/* Encodes src (n, S) and fills every layer's cross-attention state. */
TfmStatus dec_step_encode(DecStep *s, const int *src, int n, int S, TfmErr *err);
/* Makes row r continue row parent[r]'s self-attention history (positions
 * < t; linear attention: its sums), for R rows. */
void dec_step_reorder(DecStep *s, const int *parent, int R, int t);
/* dec_step_scores(s) (n·k, Vo) = log-probabilities of the next token for
 * every row r from its token prev[r] at position t; appends position t to
 * the caches. src (n, S) is the batch as encoded (its padding masks
 * cross-attention). Column j is token m->out_ids[j] under
 * model.output_vocab "target", else token j. */
void dec_step_forward(DecStep *s, const int *prev, int n, int k, int S, const int *src, int t);
/* The last step's log-probabilities (R, Vo): logits_out or logits; with
 * a shortlist (s->sl), logits in sentence blocks (see DecStep.sl), each
 * row normalized over its sentence's own candidates. */
float *dec_step_scores(DecStep *s);
/* s->logits (R, V) from the last step's columns (-inf for the pieces the
 * model cannot output); nothing to do when Vo is V. */
void dec_step_spread(DecStep *s, int R);
/* Sentence from becomes sentence to: its encoder state (cross-attention,
 * length) is to's from now on (the state itself stays where it is). */
void dec_step_move_sentence(DecStep *s, int to, int from);

#endif
