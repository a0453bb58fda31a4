/* decode_internal: the decoder's state, shared by the files that make up
 * the decoder (decode.c: caches, steps, beam search, ensembles;
 * decode_sample.c: sampling). Private to src/model/. */
#ifndef TFM_DECODE_INTERNAL_H
#define TFM_DECODE_INTERNAL_H

#include "model/decode.h"
#include "model/model.h"
#include "nn/packed_linear.h"

typedef struct {
    DecLayerWeights w;          /* views into the model's parameters */
    float *cache, *cache_next;  /* (R, self_w): softmax attention's K | V per
                                   position (T, 2D); linear attention's
                                   running sums S (H, Dh, Dh) and z (D) */
    float *cross_kv;            /* softmax: (n · S, 2D) encoder output's K | V */
    float *cross_state;         /* linear attention: (n, lin_w) S and z of the
                                   encoder output's K, V (the other is NULL) */
    PackedLinear pk[7];         /* the products over packed weights (LP_*) */
} DecLayer;

/* A layer's products: self-attention QKV and output, cross-attention query,
 * output and K | V (of the encoder output, once per batch), FFN. */
enum { LP_QKV, LP_O, LP_CQ, LP_CO, LP_CKV, LP_F1, LP_F2, LP_COUNT };

typedef struct { float score; int row, tok; } Cand;

/* Beam search's state (decoder_run), apart from the cache state that
 * decoder_begin/decoder_step keep in Decoder. Rows: sentence b's are
 * b·k .. b·k + k - 1. */
typedef struct {
    float *score;                        /* (rows): log-probability so far */
    int *prev, *hist, *hist_next, *parent;
    Cand *cand;                          /* 2k candidates per sentence */
    /* finished hypotheses: up to 2k per sentence */
    int *fin_tok, *fin_len, *fin_count;
    float *fin_score, *fin_lp;
    /* per sentence of the current (compacted) batch */
    int *limit;                          /* output length limit */
    char *done;
    int *orig;                           /* index in the caller's batch (fin_* use it) */
} Beam;

/* A word's weight when sampling, and its id. */
typedef struct {
    float p;
    int id;
} SampItem;

/* Sentences encoded together: sorted by length and taken 16 at a time, a
 * batch of mixed lengths pads far less than as one (n, S) block. */
enum { ENC_GROUP = 16 };

struct Decoder {
    const Model *m;
    int max_sents, max_beam, rows, T, S, D, H, F, V;
    int Vo;                              /* output columns: model_n_out (V unless
                                            model.output_vocab "target") */
    float *out_w;                        /* (Vo, D) the output pieces' rows, or NULL */
    float *logits_out;                   /* (R, Vo) their log-probabilities, or NULL */
    int linear;                          /* model.attention "linear" */
    size_t self_w, lin_w;                /* floats per row of a self cache; of a
                                            linear-attention state (D·Dh + D) */
    DecLayer *layer;
    const float *fin_g, *fin_b;          /* pre-norm final LayerNorm */
    PackedLinear p_out;                  /* output projection to the vocabulary */
    EncoderPack *enc_pack;               /* the encoder's weights, packed */
    /* encoding in groups of similar length (encode_batch) */
    float *enc_out;                      /* (ENC_GROUP · S, D): one group's encoder output */
    float *kv_tmp;                       /* (ENC_GROUP · S, 2D): its cross K | V */
    int *grp_src, *enc_order;            /* (ENC_GROUP · S); (n) */
    int *enc_len;                        /* (n): source length with </s>, compacted
                                            with the batch (cross-attention keys) */
    float *x, *in, *qkv, *ctx, *y, *q, *h, *att, *logits;
    Beam beam;                           /* decoder_run's search over the cache */
    SampItem *samp;                      /* (V): sampling's probabilities */
    /* an ensemble: other models' decoders, stepped in lockstep with this
     * one; the log-probabilities are the weighted mean (weights[0] is this
     * decoder's own) */
    Decoder **members;
    int n_members;
    float *weights;
    int *src_buf;                        /* (n, S) source rows, compacted with the batch */
    int *padded;                         /* (n, S): decoder_translate's rows */
    /* the batch of the last decoder_begin */
    const int *cur_src;
    int cur_n, cur_S, cur_k;
    int cur_rows;           /* rows whose caches hold the last step */
};

/* Records a finished hypothesis of sentence b (decode.c). */
void decoder_finish(Decoder *d, int b, int k, const int *tokens, int len, float logprob,
                    int out_len, float alpha);
/* --no-repeat-ngram: sets to -inf the log-probability of every token that
 * would complete an n-gram already in h[0..t) (decode.c). */
void decoder_ban_repeats(float *lp, const int *h, int t, int n);
/* Sampling's step for sentence b (decode_sample.c). */
void decoder_sample_advance(Decoder *d, int b, int t, const DecodeOptions *opt);

#endif
