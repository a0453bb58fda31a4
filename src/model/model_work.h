/* model_work: the activations and scratch of the model's forward and
 * backward passes (private to src/model): one block carved into every
 * buffer a batch of max_tokens tokens needs, allocated once, so no step
 * allocates. */
#ifndef TFM_MODEL_WORK_H
#define TFM_MODEL_WORK_H

#include <stdint.h>

#include "base/arena.h"
#include "model/model.h"

/* One sublayer's residual + LayerNorm wrapper (see sub_input / sub_output). */
typedef struct {
    float *ln;          /* (N, D) LN output: pre-norm the sublayer input, post-norm its output */
    float *mean, *rstd; /* (N) */
    float *r;           /* (N, D) x + drop(y): post-norm the LN input, pre-norm the output */
} ResAct;

typedef struct {
    ResAct res1, res2;
    float *qkv;         /* (N, 3D) */
    float *att, *att_d; /* (n, H, S, S); att_d == att without attention dropout */
    float *ctx;         /* (N, D) attention output before W_O */
    float *h;           /* (N, F) FFN hidden, after ReLU and dropout */
} EncAct;

typedef struct {
    ResAct res1, res2, res3;
    float *qkv, *att, *att_d, *ctx;            /* self: (N,3D), (n,H,T,T), (N,D) */
    float *q, *kv, *catt, *catt_d, *cctx;      /* cross: (N,D), (Ns,2D), (n,H,T,S), (N,D) */
    float *h;
} DecAct;

/* A stack's ends: its input and, pre-norm, its final LayerNorm. */
typedef struct {
    float *x0;                  /* (N, D) embeddings + positions, after dropout */
    float *fin;                 /* (N, D) final LN output (pre-norm) */
    float *fmean, *frstd;       /* (N) */
} StackEnds;

/* Training only: the gradients backward passes from sublayer to sublayer. */
typedef struct {
    float *dA, *dB, *dt, *dy, *dctx, *dq, *denc, *dhc; /* (N, D) each */
    float *dqkv;                /* (N, 3D), also dkv (Ns, 2D) */
    float *dh;                  /* (N, F) */
    float *datt;                /* (n, H, Tq, Tk); softmax attention only */
} BackScratch;

/* The rest is one thing, the state of a pass over one batch: the output
 * layer's rows and logits, the R-Drop and linear-attention scratch, and
 * what forward leaves for backward (sizes, probabilities, seed). */
struct ModelWork {
    int max_tokens, max_len;
    int training;
    void *block;        /* model_work_alloc's: every buffer below points into it */
    EncAct *enc;
    DecAct *dec;
    StackEnds enc_io, dec_io;
    float *y;                   /* (N, D) a sublayer's output before dropout */
    /* output layer */
    int *rows, *targets;        /* (max_tokens) non-pad target positions, ids */
    int *src_len;               /* (max_tokens) inference: sentence lengths with </s> */
    double *row_loss;           /* (3 max_tokens) */
    float *hc;                  /* (M, D) decoder outputs at non-pad targets */
    float *logits;              /* (M, V) logits, then d(loss/n)/d(logits); V: model_n_out */
    float *out_w, *out_dw;      /* model.output_vocab "target": (V, D) the output rows
                                   (model_gather_output), their gradient */
    BackScratch back;
    float *lin_scratch;         /* linear attention: lin_slices slices */
    int lin_slices;
    /* R-Drop (StepSettings.rdrop): the batch twice over, sentences n..2n-1
     * repeating 0..n-1; diff_scratch: loss_xent_rdrop's rows */
    int *rep_tok;               /* (3 max_tokens): src, tgt_in, tgt_out */
    float *diff_scratch;        /* (diff_slices, V) */
    int diff_slices;
    /* state of the last forward, for backward */
    Batch fwd;                  /* the batch it ran: the caller's or the repeated one */
    int m_rows;
    float p_drop, p_att, p_relu, p_word;
    uint64_t seed;
};

/* Sets w's sizes and carves every buffer of a workspace for batches of at
 * most max_tokens tokens and max_len positions from a (all NULL while a
 * only counts; see base/arena.h); training 0: only the encoder's buffers
 * (model_encode). The one list behind model_work_alloc, model_work_bytes
 * and the decoder's block (decode/step.c). */
void model_work_carve(ModelWork *w, Arena *a, const ModelConfig *cfg, int max_tokens,
                      int max_len, int training);
/* The same workspace in a block of its own. */
ModelWork *model_work_alloc(const ModelConfig *cfg, int max_tokens, int max_len, int training,
                            TfmErr *err);
void model_work_free(ModelWork *w);

#endif
