/* model: the encoder-decoder forward and backward over a batch, and the
 * inference encoder, built from the kernels of nn/layers.h over the
 * parameter layout of params.c (model/layout.h).
 *
 * Activations are (tokens, D) row-major with padding rows included (every
 * sentence of a batch has the same length); heads are column blocks of D.
 * Padding rows compute garbage that nothing reads: padded keys are masked,
 * and the loss only looks at non-pad targets.
 */
#include "model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/blas.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "nn/packed_linear.h"
#include "model/layout.h"
#include "model/model_work.h"
#include "model/sublayer.h"

/* ---- forward and backward ---- */

#define P(off) (m->params + (off))
#define G(off) (m->grads + (off))
/* a LayerNorm bias, absent (NULL) with RMSNorm */
#define PB(off) ((off) == NO_PARAM ? NULL : m->params + (off))
#define GB(off) ((off) == NO_PARAM ? NULL : m->grads + (off))

/* Dropout sites: one seed each per step, so no two sites share a mask. */
enum { SITE_EMB_SRC = 1, SITE_EMB_TGT = 2, SITE_ENC = 100, SITE_DEC = 10000 };
static uint64_t site(const ModelWork *w, int id) { return dropout_site_seed(w->seed, (uint64_t)id); }

static AttnShape attn_shape(const Model *m, int n, int tq, int tk, int ldq, int ldkv,
                            const int *key_tok, int causal)
{
    const int D = m->cfg.d_model;
    return (AttnShape){
        .n = n, .heads = m->cfg.heads, .dh = D / m->cfg.heads, .tq = tq, .tk = tk,
        .ldq = ldq, .ldk = ldkv, .ldv = ldkv, .ldo = D,
        .q_stride = (long)tq * ldq, .k_stride = (long)tk * ldkv, .v_stride = (long)tk * ldkv,
        .o_stride = (long)tq * D, .key_tok = key_tok, .key_tok_stride = tk, .key_pad = TOK_PAD,
        .causal = causal,
    };
}

/* Attention of either kind (model.attention). att: softmax's probabilities
 * (att_d after its dropout), or linear attention's denominators. */
static void attend_forward(Model *m, float *ctx, float *att, float *att_d, const float *q,
                           const float *k, const float *v, const AttnShape *sh, float p_att,
                           uint64_t seed)
{
    ModelWork *w = m->work;    /* model_encode lends its workspace here */
    if (m->cfg.attention == ATTN_LINEAR)
        linattn_forward(ctx, att, w->lin_scratch, w->lin_slices, q, k, v, sh);
    else
        attention_forward(ctx, att, att_d, q, k, v, sh, p_att, seed);
}

/* Backward of attend_forward (training): dq, dk, dv += ... from dctx. */
static void attend_backward(Model *m, float *dq, float *dk, float *dv, const float *dctx,
                            const float *ctx, const float *att, const float *att_d,
                            const float *q, const float *k, const float *v, const AttnShape *sh,
                            float p_att)
{
    ModelWork *w = m->work;
    if (m->cfg.attention == ATTN_LINEAR)
        linattn_backward(dq, dk, dv, w->lin_scratch, w->lin_slices, dctx, ctx, att, q, k, v, sh);
    else
        attention_backward(dq, dk, dv, w->back.datt, dctx, att, att_d, q, k, v, sh, p_att);
}

/* The input of a sublayer's function F: pre-norm LN(x), post-norm x. */
static const float *sub_input(Model *m, ResAct *r, const float *x, LnP ln, int N)
{
    return sublayer_norm(m->cfg.norm, NORM_PRE, m->cfg.norm_type, r->ln, r->mean, r->rstd, x, P(ln.g), PB(ln.b), N,
                          m->cfg.d_model);
}

/* The sublayer's output from x and y = F(...): pre-norm x + drop(y),
 * post-norm LN(x + drop(y)). */
static const float *sub_output(Model *m, ResAct *r, const float *x, const float *y, LnP ln,
                               int N, float p, uint64_t seed)
{
    const int D = m->cfg.d_model;
    residual_dropout_forward(r->r, x, y, (long)N * D, p, seed);
    return sublayer_norm(m->cfg.norm, NORM_POST, m->cfg.norm_type, r->ln, r->mean, r->rstd, r->r, P(ln.g),
                           PB(ln.b), N, D);
}

static const float *sub_result(const Model *m, const ResAct *r)
{
    return m->cfg.norm == NORM_PRE ? r->r : r->ln;
}

/* Backward of sub_output from dout: dx (zeroed by the caller) += the residual
 * path, w->back.dy = d(loss)/dy. Returns where F's backward must accumulate the
 * gradient of its input: dx itself (post-norm) or w->back.dt, zeroed (pre-norm,
 * finished by sub_input_backward).
 * forward post: r = x + drop(y), out = LN(r): dr = LN'(dout), dx += dr, dy = drop(dr)
 * forward pre:  out = x + drop(y):            dx += dout,     dy = drop(dout) */
static float *sub_output_backward(Model *m, ResAct *r, LnP ln, const float *dout, float *dx,
                                  int N, float p, uint64_t seed)
{
    ModelWork *w = m->work;
    const int D = m->cfg.d_model;
    const long nd = (long)N * D;
    if (m->cfg.norm == NORM_POST) {
        memset(w->back.dt, 0, (size_t)nd * sizeof(float));
        norm_backward(m->cfg.norm_type, w->back.dt, G(ln.g), GB(ln.b), dout, r->r, r->mean, r->rstd,
                      P(ln.g), N, D);
        add_inplace(dx, w->back.dt, nd);
        dropout_apply(w->back.dy, w->back.dt, nd, p, seed);
        return dx;
    }
    add_inplace(dx, dout, nd);
    dropout_apply(w->back.dy, dout, nd, p, seed);
    memset(w->back.dt, 0, (size_t)nd * sizeof(float));
    return w->back.dt;
}

/* forward pre: s = LN(x), so dx += LN'(ds) with ds in w->back.dt. */
static void sub_input_backward(Model *m, ResAct *r, LnP ln, const float *x, float *dx, int N)
{
    if (m->cfg.norm == NORM_POST) return;
    norm_backward(m->cfg.norm_type, dx, G(ln.g), GB(ln.b), m->work->back.dt, x, r->mean, r->rstd,
                  P(ln.g), N, m->cfg.d_model);
}

/* Self-attention F: qkv = x·Wqkvᵀ + b, ctx = attention, w->y = ctx·Woᵀ + bo.
 * pk (inference only, or NULL): packed Wqkv and Wo. */
static void self_attn_forward(Model *m, AttnP a, const PackedLinear *pk, float *qkv,
                              float *att, float *att_d, float *ctx, const float *x,
                              const AttnShape *sh, int N, float p_att, uint64_t seed)
{
    const int D = m->cfg.d_model;
    if (pk) packed_linear_forward(&pk[0], qkv, x, N, 0);
    else linear_forward(qkv, x, P(a.w), P(a.b), N, D, 3 * D);
    attend_forward(m, ctx, att, att_d, qkv, qkv + D, qkv + 2 * D, sh, p_att, seed);
    if (pk) packed_linear_forward(&pk[1], m->work->y, ctx, N, 0);
    else linear_forward(m->work->y, ctx, P(a.wo), P(a.bo), N, D, D);
}

/* Backward of self_attn_forward from w->back.dy; dx += d/dx. */
static void self_attn_backward(Model *m, AttnP a, const float *qkv, const float *att,
                               const float *att_d, const float *ctx, const float *x,
                               float *dx, const AttnShape *sh, int N, float p_att)
{
    ModelWork *w = m->work;
    const int D = m->cfg.d_model;
    memset(w->back.dctx, 0, (size_t)N * D * sizeof(float));
    linear_backward(w->back.dctx, G(a.wo), G(a.bo), w->back.dy, ctx, P(a.wo), N, D, D);
    memset(w->back.dqkv, 0, (size_t)N * 3 * D * sizeof(float));
    attend_backward(m, w->back.dqkv, w->back.dqkv + D, w->back.dqkv + 2 * D, w->back.dctx, ctx, att, att_d, qkv,
                    qkv + D, qkv + 2 * D, sh, p_att);
    linear_backward(dx, G(a.w), G(a.b), w->back.dqkv, x, P(a.w), N, D, 3 * D);
}

/* Packed encoder weights per layer: qkv, self out, FFN w1, FFN w2. */
enum { PK_QKV, PK_O, PK_F1, PK_F2, PK_PER_LAYER };
struct EncoderPack {
    int layers;
    PackedLinear *lin;      /* layers × PK_PER_LAYER */
};

typedef struct { const float *w, *b; int in, out; } EncProduct;

/* Product j (PK_*) of encoder layer i: the one table that packing,
 * repacking and the memory estimate read. */
static EncProduct enc_product(const Model *m, int i, int j)
{
    const EncP *lp = &m->layout->enc[i];
    const int D = m->cfg.d_model, F = m->cfg.d_ff;
    const EncProduct p[PK_PER_LAYER] = {
        [PK_QKV] = {P(lp->self.w), P(lp->self.b), D, 3 * D},
        [PK_O] = {P(lp->self.wo), P(lp->self.bo), D, D},
        [PK_F1] = {P(lp->ffn.w1), P(lp->ffn.b1), D, F},
        [PK_F2] = {P(lp->ffn.w2), P(lp->ffn.b2), F, D},
    };
    return p[j];
}

/* Runs the encoder stack on w's buffers; returns its output (N, D). pk
 * (evaluation only, or NULL): packed weights to use instead of sgemm. */
/* A stack's output: pre-norm the final LayerNorm of x (into e), post-norm x. */
static const float *stack_output(Model *m, StackEnds *e, const float *x, LnP ln, int N)
{
    if (m->cfg.norm != NORM_PRE) return x;
    norm_forward(m->cfg.norm_type, e->fin, e->fmean, e->frstd, x, P(ln.g), PB(ln.b), N,
                 m->cfg.d_model);
    return e->fin;
}

static const float *encoder_forward(Model *m, ModelWork *w, const EncoderPack *pk,
                                    const int *src, int n, int S, float p, float p_att,
                                    float p_relu, float p_word)
{
    const ModelConfig *c = &m->cfg;
    const ModelLayout *L = m->layout;
    const int D = c->d_model, N = n * S;
    embed_forward(w->enc_io.x0, src, n, S, m->emb_src, m->pos_table, 0, D, sqrtf((float)D), p_word,
                  site(w, SITE_EMB_SRC));
    dropout_apply(w->enc_io.x0, w->enc_io.x0, (long)N * D, p, site(w, SITE_EMB_SRC));
    AttnShape sh = attn_shape(m, n, S, S, 3 * D, 3 * D, src, 0);
    if (pk) {
        /* Inference: attention stops at each sentence's end, so its encoding
         * does not depend on the batch's padding (the other products are
         * row-independent already). */
        for (int b = 0; b < n; b++) w->src_len[b] = model_src_len(src + (size_t)b * S, S);
        sh.key_len = w->src_len;
        sh.query_pad = 1;
    }
    const float *x = w->enc_io.x0;
    for (int i = 0; i < c->enc_layers; i++) {
        EncAct *e = &w->enc[i];
        const EncP *lp = &L->enc[i];
        const int s0 = SITE_ENC + 8 * i;
        const float *in = sub_input(m, &e->res1, x, lp->ln1, N);
        const PackedLinear *lpk = pk ? pk->lin + (size_t)i * PK_PER_LAYER : NULL;
        self_attn_forward(m, lp->self, lpk, e->qkv, e->att, e->att_d, e->ctx, in, &sh, N,
                          p_att, site(w, s0));
        x = sub_output(m, &e->res1, x, w->y, lp->ln1, N, p, site(w, s0 + 1));
        in = sub_input(m, &e->res2, x, lp->ln2, N);
        if (lpk) {
            packed_linear_forward(&lpk[PK_F1], e->h, in, N, 1);
            packed_linear_forward(&lpk[PK_F2], w->y, e->h, N, 0);
        } else {
            ffn_forward(w->y, e->h, in, P(lp->ffn.w1), P(lp->ffn.b1), P(lp->ffn.w2),
                        P(lp->ffn.b2), N, D, c->d_ff, p_relu, site(w, s0 + 2));
        }
        x = sub_output(m, &e->res2, x, w->y, lp->ln2, N, p, site(w, s0 + 3));
    }
    return stack_output(m, &w->enc_io, x, L->enc_ln, N);
}

static const float *decoder_forward(Model *m, const float *enc_out, const Batch *b,
                                    float p, float p_att, float p_relu, float p_word)
{
    ModelWork *w = m->work;
    const ModelConfig *c = &m->cfg;
    const ModelLayout *L = m->layout;
    const int D = c->d_model, n = b->n, T = b->tgt_len, S = b->src_len;
    const int N = n * T, Ns = n * S;
    embed_forward(w->dec_io.x0, b->tgt_in, n, T, m->emb_tgt, m->pos_table, 0, D, sqrtf((float)D),
                  p_word, site(w, SITE_EMB_TGT));
    dropout_apply(w->dec_io.x0, w->dec_io.x0, (long)N * D, p, site(w, SITE_EMB_TGT));
    /* The causal mask alone hides every pad key from the non-pad queries
     * (padding is at the end); the padding mask also keeps pad queries finite. */
    const AttnShape sh = attn_shape(m, n, T, T, 3 * D, 3 * D, b->tgt_in, 1);
    AttnShape csh = attn_shape(m, n, T, S, D, 2 * D, b->src, 0);
    const float *x = w->dec_io.x0;
    for (int i = 0; i < c->dec_layers; i++) {
        DecAct *e = &w->dec[i];
        const DecP *lp = &L->dec[i];
        const int s0 = SITE_DEC + 8 * i;
        const float *in = sub_input(m, &e->res1, x, lp->ln1, N);
        self_attn_forward(m, lp->self, NULL, e->qkv, e->att, e->att_d, e->ctx, in, &sh, N, p_att,
                          site(w, s0));
        x = sub_output(m, &e->res1, x, w->y, lp->ln1, N, p, site(w, s0 + 1));
        /* cross-attention: q from the decoder, k/v from the encoder output */
        in = sub_input(m, &e->res2, x, lp->ln2, N);
        const AttnP a = lp->cross;
        linear_forward(e->q, in, P(a.w), P(a.b), N, D, D);
        linear_forward(e->kv, enc_out, P(a.w) + (size_t)D * D, P(a.b) + D, Ns, D, 2 * D);
        attend_forward(m, e->cctx, e->catt, e->catt_d, e->q, e->kv, e->kv + D, &csh, p_att,
                       site(w, s0 + 2));
        linear_forward(w->y, e->cctx, P(a.wo), P(a.bo), N, D, D);
        x = sub_output(m, &e->res2, x, w->y, lp->ln2, N, p, site(w, s0 + 3));
        in = sub_input(m, &e->res3, x, lp->ln3, N);
        ffn_forward(w->y, e->h, in, P(lp->ffn.w1), P(lp->ffn.b1), P(lp->ffn.w2),
                    P(lp->ffn.b2), N, D, c->d_ff, p_relu, site(w, s0 + 4));
        x = sub_output(m, &e->res3, x, w->y, lp->ln3, N, p, site(w, s0 + 5));
    }
    return stack_output(m, &w->dec_io, x, L->dec_ln, N);
}

static TfmStatus check_tokens(const int *tok, long cnt, int V, const char *what, TfmErr *err)
{
    for (long i = 0; i < cnt; i++)
        if (tok[i] < 0 || tok[i] >= V)
            return err_set(err, TFM_ERR_FORMAT, "%s token id %d out of range [0, %d)", what,
                           tok[i], V);
    return TFM_OK;
}

int model_src_len(const int *row, int S)
{
    int l = S;
    while (l > 1 && row[l - 1] == TOK_PAD) l--;
    return l;
}

/* R-Drop: the batch's sentences twice over, in w->rep_tok (the caller
 * checked that 2 n len tokens fit). Rows are whole sentences, so the
 * repeat is the array written twice. */
static Batch repeat_batch(ModelWork *w, const Batch *b)
{
    const long ns = (long)b->n * b->src_len, nt = (long)b->n * b->tgt_len;
    int *src = w->rep_tok, *tin = src + 2 * ns, *tout = tin + 2 * nt;
    const size_t I = sizeof(int);
    memcpy(src, b->src, ns * I);
    memcpy(src + ns, b->src, ns * I);
    memcpy(tin, b->tgt_in, nt * I);
    memcpy(tin + nt, b->tgt_in, nt * I);
    memcpy(tout, b->tgt_out, nt * I);
    memcpy(tout + nt, b->tgt_out, nt * I);
    Batch r = *b;
    r.n = 2 * b->n;
    r.src = src;
    r.tgt_in = tin;
    r.tgt_out = tout;
    return r;
}

TfmStatus model_forward(Model *m, const Batch *b, float label_smoothing,
                        Rng *dropout_rng, LossStats *out, TfmErr *err)
{
    const StepSettings s = {label_smoothing, 1.0f, 0.0f};
    return model_forward_step(m, b, &s, dropout_rng, out, err);
}

TfmStatus model_forward_step(Model *m, const Batch *given, const StepSettings *s,
                             Rng *dropout_rng, LossStats *out, TfmErr *err)
{
    const float label_smoothing = s->label_smoothing;
    ModelWork *w = m->work;
    const ModelConfig *c = &m->cfg;
    const int D = c->d_model, V = c->vocab_size;
    *out = (LossStats){0};
    if (!w) return err_set(err, TFM_ERR_FORMAT, "model has no training workspace");
    const int rdrop = dropout_rng && s->rdrop > 0;
    const long copies = rdrop ? 2 : 1;
    const Batch *g = given;
    if (g->n <= 0 || g->src_len <= 0 || g->tgt_len <= 0 || g->src_len > w->max_len ||
        g->tgt_len > w->max_len || copies * g->n * g->src_len > w->max_tokens ||
        copies * g->n * g->tgt_len > w->max_tokens)
        return err_set(err, TFM_ERR_FORMAT,
                       "batch of %d x (%d, %d) tokens%s does not fit the workspace "
                       "(%d tokens, length %d)", g->n, g->src_len, g->tgt_len,
                       rdrop ? " twice (train.rdrop)" : "", w->max_tokens, w->max_len);
    TfmStatus st;
    if ((st = check_tokens(g->src, (long)g->n * g->src_len, V, "source", err)) ||
        (st = check_tokens(g->tgt_in, (long)g->n * g->tgt_len, V, "target", err)) ||
        (st = check_tokens(g->tgt_out, (long)g->n * g->tgt_len, V, "target", err)))
        return st;
    w->fwd = rdrop ? repeat_batch(w, g) : *g;
    const Batch *b = &w->fwd;
    const long Nt = (long)b->n * b->tgt_len;

    const float scale = dropout_rng ? s->dropout_factor : 0.0f;
    w->p_drop = scale * c->dropout;
    w->p_att = scale * c->attn_dropout;
    w->p_relu = scale * c->relu_dropout;
    w->p_word = scale * c->word_dropout;
    w->seed = dropout_rng ? rng_u64(dropout_rng) : 0;

    const float *enc = encoder_forward(m, w, NULL, b->src, b->n, b->src_len, w->p_drop, w->p_att,
                                       w->p_relu, w->p_word);
    const float *dec = decoder_forward(m, enc, b, w->p_drop, w->p_att, w->p_relu, w->p_word);

    /* Logits only for the rows that have a target: padding can be a third of
     * a batch, and the (M, V) product is the largest of the step. */
    int M = 0;
    for (long r = 0; r < Nt; r++)
        if (b->tgt_out[r] != TOK_PAD) {
            const int tok = b->tgt_out[r];
            w->rows[M] = (int)r;
            w->targets[M] = m->out_pos ? m->out_pos[tok] : tok;   /* its logit's column */
            if (w->targets[M] < 0)
                return err_set(err, TFM_ERR_FORMAT, "target piece %d is not in the model's "
                               "output vocabulary (model.output_vocab)", tok);
            M++;
        }
    w->m_rows = M;
    out->n_tokens = M;
    if (M == 0) return TFM_OK;
    gather_rows(w->hc, dec, w->rows, M, D);
    /* model.output_vocab "target": the rows of the pieces the targets use,
     * copied together so that one product computes all their logits */
    const int Vo = model_n_out(m);
    const float *W = m->out_proj;
    if (m->out_ids) {
        model_gather_output(m, w->out_w);
        W = w->out_w;
    }
    blas_gemm_parallel(&(GemmArgs){0, 1, M, Vo, D, 1.0f, w->hc, D, W, D, 0.0f, w->logits, Vo}, 1);
    /* The gradient is computed here, while the logits are in cache, and kept
     * for model_backward (it replaces the logits). */
    if (rdrop) {
        /* the rows of the second copy follow those of the first, in the same order */
        const int pairs = M / 2;
        const long norm = b->loss_tokens > 0 ? b->loss_tokens : pairs;
        out->n_tokens = pairs;
        loss_xent_rdrop(w->logits, w->targets, pairs, Vo, label_smoothing, s->rdrop,
                        1.0f / (float)norm, w->diff_scratch, w->diff_slices, w->row_loss,
                        &out->loss, &out->nll, &out->n_correct);
        return TFM_OK;
    }
    const long norm = b->loss_tokens > 0 ? b->loss_tokens : M;
    loss_xent_smoothed(w->logits, w->targets, M, Vo, label_smoothing, 1.0f / (float)norm,
                       w->row_loss, &out->loss, &out->nll, &out->n_correct);
    return TFM_OK;
}

static void swap(float **a, float **b)
{
    float *t = *a;
    *a = *b;
    *b = t;
}

/* The backward of the residual sublayers x_out = sub(x_in): *cur holds the
 * gradient of x_out on entry and that of x_in on return (*other is the
 * second buffer; the two swap). s1 is the site of the sublayer's dropout. */

/* FFN sublayer; h: its hidden activations. */
static void ffn_sublayer_backward(Model *m, ResAct *r, LnP ln, FfnP f, const float *h,
                                  const float *x_in, float **cur, float **other, int N,
                                  uint64_t s1)
{
    ModelWork *w = m->work;
    const int D = m->cfg.d_model;
    memset(*other, 0, (size_t)N * D * sizeof(float));
    float *dfin = sub_output_backward(m, r, ln, *cur, *other, N, w->p_drop, s1);
    const float *fin = m->cfg.norm == NORM_PRE ? r->ln : x_in;
    ffn_backward(dfin, G(f.w1), G(f.b1), G(f.w2), G(f.b2), w->back.dh, w->back.dy, fin, h, P(f.w1),
                 P(f.w2), N, D, m->cfg.d_ff, w->p_relu);
    sub_input_backward(m, r, ln, x_in, *other, N);
    swap(cur, other);
}

/* Self-attention sublayer; qkv, att, att_d, ctx: its forward activations. */
static void self_sublayer_backward(Model *m, ResAct *r, LnP ln, AttnP a, const float *qkv,
                                   const float *att, const float *att_d, const float *ctx,
                                   const AttnShape *sh, const float *x_in, float **cur,
                                   float **other, int N, uint64_t s1)
{
    ModelWork *w = m->work;
    memset(*other, 0, (size_t)N * m->cfg.d_model * sizeof(float));
    float *dfin = sub_output_backward(m, r, ln, *cur, *other, N, w->p_drop, s1);
    const float *fin = m->cfg.norm == NORM_PRE ? r->ln : x_in;
    self_attn_backward(m, a, qkv, att, att_d, ctx, fin, dfin, sh, N, w->p_att);
    sub_input_backward(m, r, ln, x_in, *other, N);
    swap(cur, other);
}

/* Cross-attention sublayer of decoder layer e (weights lp): its queries
 * from x_in (or its norm), its keys and values from enc_out, whose gradient
 * it adds to w->back.denc (summed over the layers). */
static void cross_sublayer_backward(Model *m, DecAct *e, const DecP *lp,
                                    const float *x_in, const float *enc_out, const AttnShape *sh,
                                    float **cur, float **other, int Nt, int Ns, uint64_t s3)
{
    ModelWork *w = m->work;
    const int D = m->cfg.d_model;
    const size_t ndt = (size_t)Nt * D * sizeof(float);
    memset(*other, 0, ndt);
    float *dfin = sub_output_backward(m, &e->res2, lp->ln2, *cur, *other, Nt, w->p_drop, s3);
    const float *fin = m->cfg.norm == NORM_PRE ? e->res2.ln : x_in;
    const AttnP a = lp->cross;
    memset(w->back.dctx, 0, ndt);
    linear_backward(w->back.dctx, G(a.wo), G(a.bo), w->back.dy, e->cctx, P(a.wo), Nt, D, D);
    memset(w->back.dq, 0, ndt);
    memset(w->back.dqkv, 0, 2 * (size_t)Ns * D * sizeof(float));
    attend_backward(m, w->back.dq, w->back.dqkv, w->back.dqkv + D, w->back.dctx, e->cctx, e->catt, e->catt_d, e->q,
                    e->kv, e->kv + D, sh, w->p_att);
    linear_backward(dfin, G(a.w), G(a.b), w->back.dq, fin, P(a.w), Nt, D, D);
    linear_backward(w->back.denc, G(a.w) + (size_t)D * D, G(a.b) + D, w->back.dqkv, enc_out,
                    P(a.w) + (size_t)D * D, Ns, D, 2 * D);
    sub_input_backward(m, &e->res2, lp->ln2, x_in, *other, Nt);
    swap(cur, other);
}

/* The ranges of model_backward_notify: [start, end) of each decoder layer,
 * each encoder layer, and the embeddings before them (params.c lays out the
 * embeddings, the encoder layers and then enc.ln, the decoder layers and
 * then dec.ln, so a pre-norm's final norm rides with the layer before it;
 * its gradient is final before that layer's). */
static size_t dec_layer_end(const Model *m, int i)
{
    return i + 1 < m->cfg.dec_layers ? m->layout->dec[i + 1].self.w : m->n_params;
}

static size_t enc_layer_end(const Model *m, int i)
{
    if (i + 1 < m->cfg.enc_layers) return m->layout->enc[i + 1].self.w;
    return m->cfg.dec_layers > 0 ? m->layout->dec[0].self.w : m->n_params;
}

static size_t embeddings_end(const Model *m)
{
    return m->cfg.enc_layers > 0 ? m->layout->enc[0].self.w : enc_layer_end(m, -1);
}

static void notify(Model *m, GradsReady ready, void *ctx, size_t start, size_t end)
{
    if (ready && end > start) ready(ctx, m->grads + start, end - start);
}

void model_grads_zero_notify(Model *m, GradsReady ready, void *ctx)
{
    memset(m->grads, 0, m->n_params * sizeof(float));
    for (int i = m->cfg.dec_layers - 1; i >= 0; i--)
        notify(m, ready, ctx, m->layout->dec[i].self.w, dec_layer_end(m, i));
    for (int i = m->cfg.enc_layers - 1; i >= 0; i--)
        notify(m, ready, ctx, m->layout->enc[i].self.w, enc_layer_end(m, i));
    notify(m, ready, ctx, 0, embeddings_end(m));
}

void model_backward(Model *m)
{
    model_backward_notify(m, NULL, NULL);
}

void model_backward_notify(Model *m, GradsReady ready, void *ctx)
{
    ModelWork *w = m->work;
    const Batch *b = &w->fwd;   /* the forward's batch, or its R-Drop repeat */
    const ModelConfig *c = &m->cfg;
    const ModelLayout *L = m->layout;
    const int D = c->d_model, n = b->n, S = b->src_len, T = b->tgt_len;
    const int Nt = n * T, Ns = n * S, M = w->m_rows;
    const size_t ndt = (size_t)Nt * D * sizeof(float), nds = (size_t)Ns * D * sizeof(float);
    const float p = w->p_drop;
    if (M == 0) {
        model_grads_zero_notify(m, ready, ctx);
        return;
    }
    memset(m->grads, 0, m->n_params * sizeof(float));

    /* forward: logits = hc·Eᵀ, so dhc = dlogits·E, dE += dlogitsᵀ·hc; with an
     * output vocabulary E is its gathered rows (w->out_w), whose gradient
     * goes back to their rows of the projection */
    const int Vo = model_n_out(m);
    const bool sub = m->out_ids != NULL;
    const GemmArgs gh = {0, 0, M, D, Vo, 1.0f, w->logits, Vo, sub ? w->out_w : m->out_proj, D,
                         0.0f, w->back.dhc, D};
    const GemmArgs ge = {1, 0, Vo, D, M, 1.0f, w->logits, Vo, w->hc, D, sub ? 0.0f : 1.0f,
                         sub ? w->out_dw : G(L->out_proj), D};
    blas_gemm_parallel((GemmArgs[]){gh, ge}, 2);
    if (sub) scatter_add_rows(G(L->out_proj), w->out_dw, m->out_ids, Vo, D);
    float *cur = w->back.dA, *other = w->back.dB;
    memset(cur, 0, ndt);
    scatter_add_rows(cur, w->back.dhc, w->rows, M, D);

    /* decoder: layer outputs are x_{i+1}; x_0 = dec_x0 */
    const float *x_last = c->dec_layers > 0 ? sub_result(m, &w->dec[c->dec_layers - 1].res3)
                                            : w->dec_io.x0;
    if (c->norm == NORM_PRE) {
        memset(other, 0, ndt);
        norm_backward(m->cfg.norm_type, other, G(L->dec_ln.g), GB(L->dec_ln.b), cur, x_last,
                      w->dec_io.fmean, w->dec_io.frstd, P(L->dec_ln.g), Nt, D);
        swap(&cur, &other);
    }
    const float *enc_out = c->norm == NORM_PRE ? w->enc_io.fin
                                               : sub_result(m, &w->enc[c->enc_layers - 1].res2);
    memset(w->back.denc, 0, nds);
    const AttnShape sh = attn_shape(m, n, T, T, 3 * D, 3 * D, b->tgt_in, 1);
    const AttnShape csh = attn_shape(m, n, T, S, D, 2 * D, b->src, 0);
    for (int i = c->dec_layers - 1; i >= 0; i--) {
        DecAct *e = &w->dec[i];
        const DecP *lp = &L->dec[i];
        const int s0 = SITE_DEC + 8 * i;
        const float *x0 = i > 0 ? sub_result(m, &w->dec[i - 1].res3) : w->dec_io.x0;
        const float *x1 = sub_result(m, &e->res1), *x2 = sub_result(m, &e->res2);
        /* FFN sublayer: x3 = sub(x2) */
        ffn_sublayer_backward(m, &e->res3, lp->ln3, lp->ffn, e->h, x2, &cur, &other, Nt,
                              site(w, s0 + 5));
        /* cross-attention sublayer: x2 = sub(x1) */
        cross_sublayer_backward(m, e, lp, x1, enc_out, &csh, &cur, &other, Nt, Ns,
                                site(w, s0 + 3));
        /* self-attention sublayer: x1 = sub(x0) */
        self_sublayer_backward(m, &e->res1, lp->ln1, lp->self, e->qkv, e->att, e->att_d,
                               e->ctx, &sh, x0, &cur, &other, Nt, site(w, s0 + 1));
        notify(m, ready, ctx, lp->self.w, dec_layer_end(m, i));
    }
    /* forward: dec_x0 = drop(E[tgt]·sqrt(D)·word_keep + PE) */
    dropout_apply(cur, cur, (long)Nt * D, p, site(w, SITE_EMB_TGT));
    embed_backward(G(L->emb_tgt), cur, b->tgt_in, Nt, D, sqrtf((float)D), w->p_word,
                   site(w, SITE_EMB_TGT));

    /* encoder, from the gradient of its output summed over all cross-attentions */
    cur = w->back.denc;
    other = w->back.dA;
    if (c->norm == NORM_PRE) {
        const float *xe = sub_result(m, &w->enc[c->enc_layers - 1].res2);
        memset(other, 0, nds);
        norm_backward(m->cfg.norm_type, other, G(L->enc_ln.g), GB(L->enc_ln.b), cur, xe,
                      w->enc_io.fmean, w->enc_io.frstd, P(L->enc_ln.g), Ns, D);
        swap(&cur, &other);
    }
    const AttnShape esh = attn_shape(m, n, S, S, 3 * D, 3 * D, b->src, 0);
    for (int i = c->enc_layers - 1; i >= 0; i--) {
        EncAct *e = &w->enc[i];
        const EncP *lp = &L->enc[i];
        const int s0 = SITE_ENC + 8 * i;
        const float *x0 = i > 0 ? sub_result(m, &w->enc[i - 1].res2) : w->enc_io.x0;
        const float *x1 = sub_result(m, &e->res1);
        ffn_sublayer_backward(m, &e->res2, lp->ln2, lp->ffn, e->h, x1, &cur, &other, Ns,
                              site(w, s0 + 3));
        self_sublayer_backward(m, &e->res1, lp->ln1, lp->self, e->qkv, e->att, e->att_d,
                               e->ctx, &esh, x0, &cur, &other, Ns, site(w, s0 + 1));
        notify(m, ready, ctx, lp->self.w, enc_layer_end(m, i));
    }
    dropout_apply(cur, cur, (long)Ns * D, p, site(w, SITE_EMB_SRC));
    embed_backward(G(L->emb_src), cur, b->src, Ns, D, sqrtf((float)D), w->p_word,
                   site(w, SITE_EMB_SRC));
    notify(m, ready, ctx, 0, embeddings_end(m));
}

void encoder_pack_update(EncoderPack *pk, const Model *m)
{
    for (int i = 0; i < pk->layers; i++)
        for (int j = 0; j < PK_PER_LAYER; j++) {
            const EncProduct p = enc_product(m, i, j);
            packed_linear_update(&pk->lin[(size_t)i * PK_PER_LAYER + j], p.w, p.b);
        }
}

size_t encoder_pack_bytes(const Model *m)
{
    size_t bytes = 0;
    for (int i = 0; i < m->cfg.enc_layers; i++)
        for (int j = 0; j < PK_PER_LAYER; j++) {
            const EncProduct p = enc_product(m, i, j);
            bytes += packed_linear_bytes(p.in, p.out, m->int8);
        }
    return bytes;
}

size_t encoder_pack_held(const EncoderPack *pk)
{
    size_t bytes = 0;
    for (int i = 0; i < pk->layers * PK_PER_LAYER; i++) bytes += pk->lin[i].bytes;
    return bytes;
}

TfmStatus encoder_pack_new(EncoderPack **out, const Model *m, TfmErr *err)
{
    const int layers = m->cfg.enc_layers;
    EncoderPack *pk = xcalloc(1, sizeof *pk, err);
    if (!pk) return TFM_ERR_NOMEM;
    pk->lin = xcalloc((size_t)layers * PK_PER_LAYER, sizeof *pk->lin, err);
    if (!pk->lin) {
        free(pk);
        return TFM_ERR_NOMEM;
    }
    /* an int8 model's products run in int8 */
    TfmStatus (*const init)(PackedLinear *, const float *, const int *, const float *, int, int,
                            TfmErr *) = m->int8 ? packed_linear_init_int8 : packed_linear_init;
    for (int i = 0; i < layers; i++) {
        pk->layers = i + 1;
        for (int j = 0; j < PK_PER_LAYER; j++) {
            const EncProduct p = enc_product(m, i, j);
            TfmStatus st = init(&pk->lin[(size_t)i * PK_PER_LAYER + j], p.w, NULL, p.b, p.in,
                                p.out, err);
            if (st != TFM_OK) {
                encoder_pack_free(pk);
                return st;
            }
        }
    }
    /* int8: one buffer of quantized inputs for the encoder's products */
    for (int i = 1; i < layers * PK_PER_LAYER; i++) packed_linear_share_scratch(&pk->lin[i], &pk->lin[0]);
    *out = pk;
    return TFM_OK;
}

void encoder_pack_free(EncoderPack *pk)
{
    if (!pk) return;
    for (int i = 0; i < pk->layers * PK_PER_LAYER; i++) packed_linear_free(&pk->lin[i]);
    free(pk->lin);
    free(pk);
}

TfmStatus model_encode(const Model *m, const EncoderPack *pk, ModelWork *w, const int *src, int n,
                       int src_len, float *enc_out, TfmErr *err)
{
    const ModelConfig *c = &m->cfg;
    if (n <= 0 || src_len <= 0 || src_len > c->max_len)
        return err_set(err, TFM_ERR_FORMAT, "cannot encode %d sentences of length %d "
                       "(model max_len %d)", n, src_len, c->max_len);
    if ((long)n * src_len > w->max_tokens || src_len > w->max_len || w->training)
        return err_set(err, TFM_ERR_USAGE, "encoder workspace of %d tokens (length %d) for "
                       "%d sentences of length %d", w->max_tokens, w->max_len, n, src_len);
    TfmStatus st = check_tokens(src, (long)n * src_len, c->vocab_size, "source", err);
    if (st) return st;
    /* the sublayer helpers read scratch from m->work: lend them w through
     * a copy of the model's handles, so that m itself is only read and
     * decoders on other threads can encode with it at the same time */
    Model lent = *m;
    lent.work = w;
    const float *out = encoder_forward(&lent, w, pk, src, n, src_len, 0, 0, 0, 0);
    memcpy(enc_out, out, (size_t)n * src_len * c->d_model * sizeof(float));
    return TFM_OK;
}
