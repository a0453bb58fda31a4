/* test_model: whole-model gradient checks (both norms, both embedding
 * sharings, dropout off and on), parameter layout and count, the eval-mode
 * encoder, and a copy/reverse learning test with Adam. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "fixed_batch.h"
#include "gradcheck.h"
#include "model/model.h"
#include "model/model_work.h"
#include "nn/optim.h"
#include "test.h"

static ModelConfig tiny_cfg(NormKind norm, bool share)
{
    return (ModelConfig){
        .d_model = 16, .heads = 2, .enc_layers = 2, .dec_layers = 2, .d_ff = 32,
        .dropout = 0.0f, .attn_dropout = 0.0f, .relu_dropout = 0.0f, .norm = norm,
        .share_embeddings = share, .vocab_size = 20, .max_len = 16,
    };
}

/* m: a model of cfg with its weights drawn from seed and, when max_tokens >
 * 0, a training workspace of max_tokens tokens and max_len positions.
 * Returns the generator after the weights (some tests draw on from it). */
static Rng seeded_model(Model *m, const ModelConfig *cfg, uint64_t seed, int max_tokens,
                        int max_len)
{
    TfmErr err;
    CHECK(model_init(m, cfg, &err) == TFM_OK);
    Rng rng;
    rng_seed(&rng, seed);
    model_init_weights(m, &rng);
    if (max_tokens > 0) CHECK(model_alloc_training(m, max_tokens, max_len, &err) == TFM_OK);
    return rng;
}

/* A copy of m's gradients (malloc'd). */
static float *grads_copy(const Model *m)
{
    float *g = malloc(m->n_params * sizeof *g);
    CHECK(g != NULL);
    memcpy(g, m->grads, m->n_params * sizeof *g);
    return g;
}

/* model_encode's workspace for tokens tokens of at most max_len positions. */
static ModelWork *encoder_work(const ModelConfig *cfg, int tokens, int max_len)
{
    TfmErr err;
    ModelWork *w = model_work_alloc(cfg, tokens, max_len, 0, &err);
    CHECK(w != NULL);
    return w;
}

typedef struct {
    Model m;
    Batch b;
    Rng drop;           /* copied before every forward: the same masks each time */
    int use_dropout;
} GcModel;

static double model_obj(void *p)
{
    GcModel *g = p;
    LossStats st;
    Rng r = g->drop;
    TfmErr err;
    if (model_forward(&g->m, &g->b, 0.1f, g->use_dropout ? &r : NULL, &st, &err) != TFM_OK)
        return NAN;
    return st.loss / (double)st.n_tokens;
}

/* Every tensor is checked: all elements of tensors up to 48 floats, 48
 * random ones of larger tensors, plus whole embedding rows of tokens the
 * batch uses (a random sample mostly hits rows that only the output layer sees).
 * Step and tolerance: h = 1e-2 with the objective (mean loss ~3) accumulated
 * in double from float32 values has noise ~1e-7 / (2h) ≈ 1e-5, truncation
 * error h²·f'''/6 is of the same order; measured worst |num - ana| is ~2e-5.
 * Hence atol 1e-4 with rtol 2e-2 (gradients of the mean loss are
 * 1e-3..1e-1); a wrong backward misses by O(|g|). */
static void model_gradcheck_full(NormKind norm, NormType nt, AttnKind attn, bool share,
                                 float dropout)
{
    /* One thread: the tiny model is all parallel-region overhead otherwise
     * (and the machine may be shared). */
    const int threads = omp_get_max_threads();
    blas_set_threads(1);
    GcModel *g = calloc(1, sizeof *g);
    ModelConfig cfg = tiny_cfg(norm, share);
    cfg.norm_type = nt;
    cfg.attention = attn;
    cfg.dropout = dropout;
    cfg.attn_dropout = attn == ATTN_LINEAR ? 0 : dropout;
    cfg.relu_dropout = dropout;
    cfg.word_dropout = dropout;
    Rng rng = seeded_model(&g->m, &cfg, 100 + norm * 2 + share, 64, 16);
    /* Non-trivial biases and gains, so their paths are exercised. ReLU kinks:
     * a step on an embedding or an early weight moves thousands of FFN
     * pre-activations, and one that crosses 0 spoils the difference. So the
     * FFN biases b1 are ±4 (random sign): pre-activations (an LN output, unit
     * variance, times Xavier weights: sd ≈ 0.8) stay clear of 0, and both the
     * open and the closed ReLU path are covered. ffn_gradcheck in
     * test_layers.c checks the kink handling itself. */
    for (int t = 0; t < g->m.n_tensors; t++) {
        const TensorInfo *ti = &g->m.tensors[t];
        float *p = g->m.params + ti->offset;
        if (strstr(ti->name, "ffn.b1"))
            for (int j = 0; j < ti->cols; j++) p[j] = rng_uniform(&rng) < 0.5f ? -4.0f : 4.0f;
        else if (ti->rows == 1)
            for (int j = 0; j < ti->cols; j++) p[j] += 0.2f * (rng_uniform(&rng) - 0.5f);
    }
    g->b = fixed_batch();
    g->use_dropout = dropout > 0;
    rng_seed(&g->drop, 7);
    double f0 = model_obj(g);
    CHECK(isfinite(f0));
    model_backward(&g->m);
    float *grads = grads_copy(&g->m);
    GcReport rep = {0};
    for (int t = 0; t < g->m.n_tensors; t++) {
        const TensorInfo *ti = &g->m.tensors[t];
        long cnt = (long)ti->rows * ti->cols;
        GcReport tr = {0};
        gc_check(&tr, ti->name, g->m.params + ti->offset, grads + ti->offset, cnt, model_obj, g,
                 1e-2f, 1e-4, 2e-2, 48, &rng);
        rep.checked += tr.checked;
        rep.failed += tr.failed;
        if (tr.max_abs > rep.max_abs) rep.max_abs = tr.max_abs;
    }
    /* embedding rows of tokens in the batch (the random sample above mostly
     * hits rows of unused tokens, whose gradient is only the output layer's) */
    const char *emb_names[3] = {share ? "emb.shared" : "emb.src", share ? NULL : "emb.tgt", NULL};
    for (int e = 0; e < 2; e++) {
        if (!emb_names[e]) continue;
        const TensorInfo *ti = model_tensor(&g->m, emb_names[e]);
        const int *toks = e == 0 ? b_src : b_tgt_in;
        for (int k = 0; k < 4; k++) {
            int tok = toks[k * 4 % (BN * BT)];
            size_t off = ti->offset + (size_t)tok * 16;
            gc_check(&rep, ti->name, g->m.params + off, grads + off, 16, model_obj, g, 1e-2f,
                     1e-4, 2e-2, 16, &rng);
        }
    }
    CHECK_EQ_INT(rep.failed, 0);
    CHECK(rep.checked > 1000);
    printf("  %s %s %s %s dropout %.1f: %ld checked, max |num - ana| %.2g\n",
           attn == ATTN_LINEAR ? "linear" : "softmax",
           norm == NORM_PRE ? "pre" : "post", nt == NORM_RMS ? "rmsnorm" : "layernorm",
           share ? "shared" : "unshared", dropout, rep.checked, rep.max_abs);
    free(grads);
    model_free(&g->m);
    free(g);
    blas_set_threads(threads);
}

static void model_gradcheck_nt(NormKind norm, NormType nt, bool share, float dropout)
{
    model_gradcheck_full(norm, nt, ATTN_SOFTMAX, share, dropout);
}

static void model_gradcheck(NormKind norm, bool share, float dropout)
{
    model_gradcheck_nt(norm, NORM_LAYER, share, dropout);
}

TEST(model_gradcheck_post_shared) { model_gradcheck(NORM_POST, true, 0); }
TEST(model_gradcheck_post_unshared) { model_gradcheck(NORM_POST, false, 0); }
TEST(model_gradcheck_pre_shared) { model_gradcheck(NORM_PRE, true, 0); }
TEST(model_gradcheck_pre_unshared) { model_gradcheck(NORM_PRE, false, 0); }
TEST(model_gradcheck_post_shared_dropout) { model_gradcheck(NORM_POST, true, 0.2f); }
TEST(model_gradcheck_pre_unshared_dropout) { model_gradcheck(NORM_PRE, false, 0.2f); }
TEST(model_gradcheck_rmsnorm_post_shared) { model_gradcheck_nt(NORM_POST, NORM_RMS, true, 0); }
TEST(model_gradcheck_rmsnorm_pre_unshared_dropout)
{
    model_gradcheck_nt(NORM_PRE, NORM_RMS, false, 0.2f);
}

/* Linear attention in all three places (encoder, causal decoder, cross). */
TEST(model_gradcheck_linear_post_shared)
{
    model_gradcheck_full(NORM_POST, NORM_LAYER, ATTN_LINEAR, true, 0);
}
TEST(model_gradcheck_linear_pre_rmsnorm_dropout)
{
    model_gradcheck_full(NORM_PRE, NORM_RMS, ATTN_LINEAR, false, 0.2f);
}

/* RMSNorm has gains and no biases: every "ln*.b" tensor is gone. */
TEST(model_layout_rmsnorm_has_no_norm_bias)
{
    ModelConfig cfg = tiny_cfg(NORM_PRE, true), lcfg = cfg;
    cfg.norm_type = NORM_RMS;
    Model m;
    TfmErr err;
    CHECK(model_init(&m, &cfg, &err) == TFM_OK);
    CHECK_EQ_INT(m.n_params, model_param_count(&cfg));
    /* 2 enc layers x 2 + 2 dec layers x 3 + 2 final norms = 12 biases of 16 */
    CHECK_EQ_INT(model_param_count(&lcfg) - m.n_params, 12 * 16);
    CHECK(model_tensor(&m, "enc.0.ln1.g") && !model_tensor(&m, "enc.0.ln1.b"));
    CHECK(model_tensor(&m, "dec.ln.g") && !model_tensor(&m, "dec.ln.b"));
    model_free(&m);
}

TEST(model_layout_names_and_count)
{
    ModelConfig cfg = tiny_cfg(NORM_PRE, false);
    Model m;
    TfmErr err;
    CHECK(model_init(&m, &cfg, &err) == TFM_OK);
    CHECK_EQ_INT(m.n_params, model_param_count(&cfg));
    CHECK_STR(m.tensors[0].name, "emb.src");
    CHECK_STR(m.tensors[2].name, "out.proj");
    CHECK_STR(m.tensors[3].name, "enc.0.self.wq");
    const TensorInfo *wq = model_tensor(&m, "dec.1.cross.wq"), *wk = model_tensor(&m, "dec.1.cross.wk");
    const TensorInfo *wv = model_tensor(&m, "dec.1.cross.wv"), *bk = model_tensor(&m, "dec.1.cross.bk");
    CHECK(wq && wk && wv && bk);
    if (wq && wk && wv) {
        CHECK_EQ_INT(wk->offset, wq->offset + 16 * 16);
        CHECK_EQ_INT(wv->offset, wk->offset + 16 * 16);
    }
    CHECK(model_tensor(&m, "enc.ln.g") && model_tensor(&m, "dec.ln.b"));
    CHECK(model_tensor(&m, "dec.1.ln3.g") && model_tensor(&m, "enc.1.ffn.b2"));
    CHECK(model_tensor(&m, "enc.2.self.wq") == NULL);
    const TensorInfo *last = &m.tensors[m.n_tensors - 1];
    CHECK_STR(last->name, "dec.ln.b");
    CHECK_EQ_INT(last->offset + last->cols, m.n_params);
    /* tensors tile the array in order */
    size_t off = 0;
    for (int t = 0; t < m.n_tensors; t++) {
        CHECK_EQ_INT(m.tensors[t].offset, off);
        off += (size_t)m.tensors[t].rows * m.tensors[t].cols;
    }
    model_free(&m);
    cfg.norm = NORM_POST;
    cfg.share_embeddings = true;
    CHECK(model_init(&m, &cfg, &err) == TFM_OK);
    CHECK_STR(m.tensors[0].name, "emb.shared");
    CHECK(m.emb_src == m.out_proj && m.emb_tgt == m.out_proj);
    CHECK(model_tensor(&m, "enc.ln.g") == NULL);
    model_free(&m);
}

/* The paper's base model: 6+6 layers, d 512, d_ff 2048, shared 37000 vocab:
 * 44.1M in the layers + 18.9M embedding = 63.1M ("65M" in the paper's
 * table counts a slightly different vocabulary). */
TEST(model_param_count_base)
{
    ModelConfig cfg = {.d_model = 512, .heads = 8, .enc_layers = 6, .dec_layers = 6,
                       .d_ff = 2048, .norm = NORM_POST, .share_embeddings = true,
                       .vocab_size = 37000, .max_len = 256};
    const size_t D = 512, F = 2048;
    size_t enc = 4 * D * D + 4 * D + 2 * D + 2 * D * F + F + D + 2 * D;
    size_t dec = 8 * D * D + 8 * D + 2 * D + 2 * D * F + F + D + 4 * D;
    CHECK_EQ_INT(model_param_count(&cfg), 37000 * D + 6 * enc + 6 * dec);
    CHECK(model_param_count(&cfg) > 62000000 && model_param_count(&cfg) < 64000000);
}

/* model_encode: padding does not change a sentence's encoding (the padding
 * mask works), and eval-mode model_forward uses the same encoder. */
TEST(model_encode_padding_invariant)
{
    ModelConfig cfg = tiny_cfg(NORM_PRE, true);
    Model m;
    TfmErr err;
    seeded_model(&m, &cfg, 3, 0, 0);
    ModelWork *w = encoder_work(&cfg, BN * BS, BS);
    float all[BN * BS * 16], one[4 * 16];
    CHECK(model_encode(&m, NULL, w, b_src, BN, BS, all, &err) == TFM_OK);
    /* sentence 1 alone, length 3 (no padding) */
    CHECK(model_encode(&m, NULL, w, b_src + BS, 1, 3, one, &err) == TFM_OK);
    for (int i = 0; i < 3 * 16; i++) CHECK_NEAR(all[BS * 16 + i], one[i], 1e-5);
    const int bad[2] = {5, 20};
    CHECK(model_encode(&m, NULL, w, bad, 1, 2, one, &err) == TFM_ERR_FORMAT);
    model_work_free(w);
    /* a batch larger than the workspace is refused, not written past it */
    w = encoder_work(&cfg, BS, BS);
    CHECK(model_encode(&m, NULL, w, b_src, 2, BS, all, &err) == TFM_ERR_USAGE);
    CHECK(strstr(err.msg, "encoder workspace of"));
    model_work_free(w);
    model_free(&m);
}

/* The packed encoder (inference) computes what the sgemm one does at every
 * real position, and encoder_pack_update follows the weights after they
 * change. */
TEST(model_encode_packed_matches_sgemm)
{
    for (int norm = 0; norm < 2; norm++) {
        ModelConfig cfg = tiny_cfg(norm ? NORM_PRE : NORM_POST, true);
        Model m;
        TfmErr err;
        seeded_model(&m, &cfg, 5, 0, 0);
        EncoderPack *pk = NULL;
        CHECK(encoder_pack_new(&pk, &m, &err) == TFM_OK);
        ModelWork *w = encoder_work(&cfg, BN * BS, BS);
        float plain[BN * BS * 16], packed[BN * BS * 16];
        for (int round = 0; round < 2; round++) {
            CHECK(model_encode(&m, NULL, w, b_src, BN, BS, plain, &err) == TFM_OK);
            CHECK(model_encode(&m, pk, w, b_src, BN, BS, packed, &err) == TFM_OK);
            /* real positions only: the packed (inference) path leaves
             * padding out of attention, the sgemm one computes it */
            for (int b = 0; b < BN; b++)
                for (int t = 0; t < BS && (t == 0 || b_src[b * BS + t] != TOK_PAD); t++)
                    for (int c = 0; c < 16; c++)
                        CHECK_NEAR(packed[(b * BS + t) * 16 + c], plain[(b * BS + t) * 16 + c],
                                   1e-5);
            /* new weights: the pack must be updated to agree again */
            for (size_t i = 0; i < m.n_params; i++) m.params[i] *= 1.5f;
            encoder_pack_update(pk, &m);
        }
        model_work_free(w);
        encoder_pack_free(pk);
        model_free(&m);
    }
}

/* Translation's encoder (packed weights): a sentence's encoding is the same,
 * bit for bit, alone or next to a long sentence that pads the batch (long
 * enough that padded attention would take another code path). */
TEST(model_encode_packed_padding_bitwise)
{
    ModelConfig cfg = {.d_model = 64, .heads = 2, .enc_layers = 2, .dec_layers = 1, .d_ff = 96,
                       .norm = NORM_POST, .share_embeddings = true, .vocab_size = 50,
                       .max_len = 40};
    Model m;
    TfmErr err;
    seeded_model(&m, &cfg, 9, 0, 0);
    EncoderPack *pk = NULL;
    CHECK(encoder_pack_new(&pk, &m, &err) == TFM_OK);
    enum { S = 33, SHORT = 5 };
    int batch[2 * S] = {0}, alone[SHORT];
    for (int t = 0; t < S - 1; t++) batch[t] = 4 + (t * 7) % 46;      /* long sentence */
    batch[S - 1] = TOK_EOS;
    for (int t = 0; t < SHORT - 1; t++) batch[S + t] = alone[t] = 4 + (t * 13) % 46;
    batch[S + SHORT - 1] = alone[SHORT - 1] = TOK_EOS;
    ModelWork *w = encoder_work(&cfg, 2 * S, cfg.max_len);
    float *all = malloc(sizeof(float) * 2 * S * 64), *one = malloc(sizeof(float) * SHORT * 64);
    CHECK(model_encode(&m, pk, w, batch, 2, S, all, &err) == TFM_OK);
    CHECK(model_encode(&m, pk, w, alone, 1, SHORT, one, &err) == TFM_OK);
    CHECK(memcmp(all + S * 64, one, sizeof(float) * SHORT * 64) == 0);
    free(all), free(one);
    model_work_free(w);
    encoder_pack_free(pk);
    model_free(&m);
}

TEST(model_forward_rejects_bad_batches)
{
    ModelConfig cfg = tiny_cfg(NORM_POST, true);
    Model m;
    TfmErr err;
    LossStats st;
    CHECK(model_init(&m, &cfg, &err) == TFM_OK);
    CHECK(model_alloc_training(&m, 12, 8, &err) == TFM_OK);
    Batch b = fixed_batch();
    CHECK(model_forward(&m, &b, 0.1f, NULL, &st, &err) == TFM_ERR_FORMAT);  /* 18 > 12 tokens */
    int src[2] = {5, -1}, tin[2] = {TOK_BOS, 5}, tout[2] = {5, TOK_EOS};
    b = (Batch){.n = 1, .src_len = 2, .tgt_len = 2, .src = src, .tgt_in = tin, .tgt_out = tout};
    CHECK(model_forward(&m, &b, 0.1f, NULL, &st, &err) == TFM_ERR_FORMAT);
    src[1] = TOK_EOS;
    CHECK(model_forward(&m, &b, 0.1f, NULL, &st, &err) == TFM_OK);
    CHECK_EQ_INT(st.n_tokens, 2);
    model_free(&m);
}

/* model_backward_notify's ranges: together they cover grads once, and a
 * range holds its final values when reported (a copy taken then equals
 * grads at the end), so a sum started at that moment sums the right
 * numbers. The zero-batch form reports the same ranges in the same order. */
typedef struct {
    const Model *m;
    float *snap;            /* each range as it was when reported */
    int *covered;           /* times each float was reported */
    size_t order[16][2];    /* (offset, length) of each report */
    int n;
} NotifyLog;

static void log_ready(void *ctx, float *g, size_t n)
{
    NotifyLog *l = ctx;
    size_t off = (size_t)(g - l->m->grads);
    memcpy(l->snap + off, g, n * sizeof *g);
    for (size_t i = 0; i < n; i++) l->covered[off + i]++;
    if (l->n < 16) l->order[l->n][0] = off, l->order[l->n][1] = n;
    l->n++;
}

TEST(model_backward_notify_ranges_final_and_complete)
{
    for (int v = 0; v < 4; v++) {
        ModelConfig cfg = tiny_cfg(v & 1 ? NORM_PRE : NORM_POST, v < 2);
        cfg.enc_layers = 2;
        cfg.dec_layers = 3;
        if (v == 3) cfg.norm_type = NORM_RMS, cfg.attention = ATTN_LINEAR;
        cfg.dropout = 0.2f;
        Model m;
        TfmErr err;
        LossStats st;
        Rng rng = seeded_model(&m, &cfg, 21, 64, 16);
        Batch bt = fixed_batch();
        NotifyLog l = {.m = &m, .snap = calloc(m.n_params, sizeof(float)),
                       .covered = calloc(m.n_params, sizeof(int))};
        Rng r1 = rng, r2 = rng;
        CHECK(model_forward(&m, &bt, 0.1f, &r1, &st, &err) == TFM_OK);
        model_backward(&m);
        float *plain = grads_copy(&m);
        CHECK(model_forward(&m, &bt, 0.1f, &r2, &st, &err) == TFM_OK);
        model_backward_notify(&m, log_ready, &l);
        int once = 1;
        for (size_t i = 0; i < m.n_params; i++) once &= l.covered[i] == 1;
        CHECK(once);
        CHECK_EQ_INT(l.n, cfg.enc_layers + cfg.dec_layers + 1);
        CHECK(memcmp(l.snap, m.grads, m.n_params * sizeof(float)) == 0);
        CHECK(memcmp(plain, m.grads, m.n_params * sizeof(float)) == 0);
        CHECK(l.order[l.n - 1][0] == 0);     /* the embeddings come last */
        NotifyLog z = {.m = &m, .snap = l.snap, .covered = l.covered};
        model_grads_zero_notify(&m, log_ready, &z);
        CHECK_EQ_INT(z.n, l.n);
        CHECK(memcmp(z.order, l.order, sizeof z.order) == 0);
        int zero = 1;
        for (size_t i = 0; i < m.n_params; i++) zero &= m.grads[i] == 0.0f;
        CHECK(zero);
        free(l.snap);
        free(l.covered);
        free(plain);
        model_free(&m);
    }
}

/* Dropout is a function of the rng state: the same state gives the same
 * loss and gradients bit for bit, another state a different loss; no rng
 * is evaluation (the same as dropout probabilities of 0). */
TEST(model_dropout_deterministic)
{
    ModelConfig cfg = tiny_cfg(NORM_POST, true);
    cfg.dropout = cfg.attn_dropout = cfg.relu_dropout = 0.3f;
    Model m;
    TfmErr err;
    LossStats a, b, c, e;
    seeded_model(&m, &cfg, 8, 64, 16);
    Batch bt = fixed_batch();
    Rng r1, r2;
    rng_seed(&r1, 99);
    r2 = r1;
    CHECK(model_forward(&m, &bt, 0.1f, &r1, &a, &err) == TFM_OK);
    model_backward(&m);
    float *g1 = grads_copy(&m);
    CHECK(model_forward(&m, &bt, 0.1f, &r2, &b, &err) == TFM_OK);
    model_backward(&m);
    CHECK(a.loss == b.loss);
    CHECK(memcmp(g1, m.grads, m.n_params * sizeof *g1) == 0);
    CHECK(model_forward(&m, &bt, 0.1f, &r2, &c, &err) == TFM_OK);    /* advanced state */
    CHECK(c.loss != a.loss);
    CHECK(model_forward(&m, &bt, 0.1f, NULL, &e, &err) == TFM_OK);
    Model m0;
    cfg.dropout = cfg.attn_dropout = cfg.relu_dropout = 0.0f;
    CHECK(model_init(&m0, &cfg, &err) == TFM_OK);
    memcpy(m0.params, m.params, m.n_params * sizeof *m.params);
    CHECK(model_alloc_training(&m0, 64, 16, &err) == TFM_OK);
    CHECK(model_forward(&m0, &bt, 0.1f, &r2, &b, &err) == TFM_OK);
    CHECK(b.loss == e.loss && b.nll == e.nll && b.n_tokens == 11);
    free(g1);
    model_free(&m);
    model_free(&m0);
}

/* train.dropout_warmup's lever: StepSettings.dropout_factor s makes the three dropouts s
 * times the model's, bit for bit the same as a model configured with those
 * probabilities (loss and gradients); 0 is evaluation's loss. */
TEST(model_dropout_factor)
{
    ModelConfig cfg = tiny_cfg(NORM_POST, true);
    cfg.dropout = cfg.attn_dropout = cfg.relu_dropout = cfg.word_dropout = 0.3f;
    Model m, half;
    TfmErr err;
    LossStats a, b, e, z;
    seeded_model(&m, &cfg, 8, 64, 16);
    cfg.dropout = cfg.attn_dropout = cfg.relu_dropout = cfg.word_dropout = 0.5f * 0.3f;
    CHECK(model_init(&half, &cfg, &err) == TFM_OK);
    memcpy(half.params, m.params, m.n_params * sizeof *m.params);
    CHECK(model_alloc_training(&half, 64, 16, &err) == TFM_OK);
    Batch bt = fixed_batch();
    Rng r1, r2;
    rng_seed(&r1, 99);
    r2 = r1;
    StepSettings s = {0.1f, 0.5f, 0.0f};
    CHECK(model_forward_step(&m, &bt, &s, &r1, &a, &err) == TFM_OK);
    model_backward(&m);
    float *g1 = grads_copy(&m);
    CHECK(model_forward(&half, &bt, 0.1f, &r2, &b, &err) == TFM_OK);
    model_backward(&half);
    CHECK(a.loss == b.loss && a.nll == b.nll);
    CHECK(memcmp(g1, half.grads, m.n_params * sizeof *g1) == 0);
    CHECK(model_forward(&m, &bt, 0.1f, NULL, &e, &err) == TFM_OK);
    CHECK(e.loss != a.loss);       /* the scaled dropout did drop */
    s.dropout_factor = 0.0f;
    CHECK(model_forward_step(&m, &bt, &s, &r1, &z, &err) == TFM_OK);
    CHECK(z.loss == e.loss && z.nll == e.nll);
    free(g1);
    model_free(&m);
    model_free(&half);
}

/* A replica reads its model's weights and keeps gradients of its own: two
 * threads' shares of a batch (train.parallel "sentences"), their gradients
 * summed, give the whole batch's to float rounding. */
TEST(model_replica_shares_weights)
{
    ModelConfig cfg = tiny_cfg(NORM_POST, true);
    Model m, r;
    TfmErr err;
    seeded_model(&m, &cfg, 12, 64, 16);
    CHECK(model_init_replica(&r, &m, 32, 16, &err) == TFM_OK);
    CHECK(r.params == m.params && r.grads != m.grads && r.replica && !m.replica);
    Batch whole = fixed_batch();
    LossStats all, a, b;
    CHECK(model_forward(&m, &whole, 0.1f, NULL, &all, &err) == TFM_OK);
    model_backward(&m);
    float *g = grads_copy(&m);
    /* sentence 0 on m, sentences 1-2 on the replica, each averaged over the
     * whole batch's targets */
    Batch first = whole, rest = whole;
    first.n = 1;
    first.loss_tokens = rest.loss_tokens = all.n_tokens;
    rest.n = BN - 1;
    rest.src += BS;
    rest.tgt_in += BT;
    rest.tgt_out += BT;
    CHECK(model_forward(&m, &first, 0.1f, NULL, &a, &err) == TFM_OK);
    CHECK(model_forward(&r, &rest, 0.1f, NULL, &b, &err) == TFM_OK);
    model_backward(&m);
    model_backward(&r);
    CHECK(a.n_tokens + b.n_tokens == all.n_tokens);
    CHECK(fabs(a.loss + b.loss - all.loss) <= 1e-5 * all.loss);
    double worst = 0;
    for (size_t i = 0; i < m.n_params; i++) {
        double d = fabs((double)m.grads[i] + r.grads[i] - g[i]) / (1e-3 + fabs(g[i]));
        if (d > worst) worst = d;
    }
    CHECK(worst < 1e-4);
    /* a change of the weights is the replica's too */
    m.params[m.n_params - 1] += 1.0f;
    CHECK(r.params[m.n_params - 1] == m.params[m.n_params - 1]);
    free(g);
    model_free(&r);         /* frees its own only: m stays whole */
    CHECK(r.params == NULL && m.params != NULL);
    model_free(&m);
}

/* ---- learning: copy and reverse ---- */

enum { LV = 20, LBATCH = 32, LMAXLEN = 10 };

static void make_task_batch(Rng *rng, int reverse, int *src, int *tin, int *tout, int *S, int *T)
{
    int lens[LBATCH], maxl = 0;
    for (int b = 0; b < LBATCH; b++) {
        lens[b] = 3 + (int)rng_below(rng, 6);     /* 3..8 */
        if (lens[b] > maxl) maxl = lens[b];
    }
    *S = *T = maxl + 1;
    for (int b = 0; b < LBATCH; b++) {
        int seq[8];
        for (int i = 0; i < lens[b]; i++) seq[i] = 4 + (int)rng_below(rng, LV - 4);
        for (int i = 0; i <= maxl; i++) {
            int *s = &src[b * *S + i], *ti = &tin[b * *T + i], *to = &tout[b * *T + i];
            *s = i < lens[b] ? seq[i] : i == lens[b] ? TOK_EOS : TOK_PAD;
            int y = i < lens[b] ? seq[reverse ? lens[b] - 1 - i : i] : TOK_EOS;
            *to = i <= lens[b] ? y : TOK_PAD;
            *ti = i == 0 ? TOK_BOS : i <= lens[b] ? tout[b * *T + i - 1] : TOK_PAD;
        }
    }
}

static void learn_task_attn(int reverse, bool bf16, AttnKind attn)
{
    if (bf16 && !bf16_available()) {
        printf("  (no bf16 unit on this CPU: not run)\n");
        return;
    }
    const int threads = omp_get_max_threads();
    blas_set_threads(1);
    blas_set_bf16(bf16);    /* ~300-token batches: a second thread only adds barriers */
    ModelConfig cfg = {.d_model = 32, .heads = 2, .enc_layers = 2, .dec_layers = 2, .d_ff = 64,
                       .norm = NORM_PRE, .share_embeddings = true, .vocab_size = LV,
                       .max_len = LMAXLEN, .attention = attn};
    AdamConfig tc = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f};
    LrConfig lc = {.schedule = LR_INVERSE_SQRT, .warmup = 100, .peak = 3e-3f};
    Model m;
    Adam adam;
    TfmErr err;
    Rng data;
    rng_seed(&data, 2 + reverse);
    seeded_model(&m, &cfg, 1, LBATCH * LMAXLEN, LMAXLEN);
    CHECK(adam_init(&adam, m.n_params, &tc, &err) == TFM_OK);
    static int src[LBATCH * LMAXLEN], tin[LBATCH * LMAXLEN], tout[LBATCH * LMAXLEN];
    LossStats st = {0};
    clock_t t0 = clock();
    int step;
    double loss = 1e9;
    for (step = 1; step <= 3000; step++) {
        int S, T;
        make_task_batch(&data, reverse, src, tin, tout, &S, &T);
        Batch b = {.n = LBATCH, .src_len = S, .tgt_len = T, .src = src, .tgt_in = tin,
                   .tgt_out = tout};
        CHECK(model_forward(&m, &b, 0.0f, NULL, &st, &err) == TFM_OK);
        loss = st.loss / st.n_tokens;
        if (loss < 0.002) break;
        model_backward(&m);
        adam_update(&adam, m.params, m.grads, (float)lr_at(&lc, cfg.d_model, step, 0, 0));
    }
    /* a fresh batch, evaluation mode: low loss, (almost) every token the argmax */
    int S, T;
    make_task_batch(&data, reverse, src, tin, tout, &S, &T);
    Batch b = {.n = LBATCH, .src_len = S, .tgt_len = T, .src = src, .tgt_in = tin, .tgt_out = tout};
    CHECK(model_forward(&m, &b, 0.0f, NULL, &st, &err) == TFM_OK);
    double eval_loss = st.loss / st.n_tokens;
    printf("  %s%s%s: %d steps, train loss %.4f, eval loss %.4f, accuracy %ld/%ld, %.1f s cpu\n",
           reverse ? "reverse" : "copy", bf16 ? " (bf16)" : "",
           attn == ATTN_LINEAR ? " (linear attention)" : "", step, loss, eval_loss, st.n_correct, st.n_tokens,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    CHECK(eval_loss < 0.1);
    /* all but at most 1% of the tokens: a portable (SSE2) build, whose float
     * rounding differs, ends one token short of 211 */
    CHECK(st.n_correct * 100 >= st.n_tokens * 99);
    adam_free(&adam);
    model_free(&m);
    blas_set_bf16(false);
    blas_set_threads(threads);
}

static void learn_task(int reverse, bool bf16) { learn_task_attn(reverse, bf16, ATTN_SOFTMAX); }

/* Training's products are split among the threads by rows (blas_gemm_parallel)
 * only when a batch has enough rows: this batch (~290 tokens a side) has.
 * 1, 2 and 3 threads (3 splits unevenly, also on 2 cores) must give the same
 * loss and gradients up to float summation order: 1e-5 relative to the
 * largest gradient, where a missing or doubled row block is off by O(1). */
TEST(model_threads_agree)
{
    const int threads = omp_get_max_threads();
    ModelConfig cfg = tiny_cfg(NORM_PRE, true);
    cfg.max_len = LMAXLEN + 1;
    Model m;
    TfmErr err;
    Rng rng = seeded_model(&m, &cfg, 12, 2 * LBATCH * (LMAXLEN + 1), LMAXLEN + 1);
    int src[LBATCH * (LMAXLEN + 1)], tin[LBATCH * (LMAXLEN + 1)], tout[LBATCH * (LMAXLEN + 1)];
    int S, T;
    make_task_batch(&rng, 0, src, tin, tout, &S, &T);
    Batch b = {.n = LBATCH, .src_len = S, .tgt_len = T, .src = src, .tgt_in = tin,
               .tgt_out = tout};
    float *g1 = NULL;
    double loss1 = 0;
    for (int t = 1; t <= 3; t++) {
        blas_set_threads(t);
        LossStats st;
        CHECK(model_forward(&m, &b, 0.1f, NULL, &st, &err) == TFM_OK);
        model_backward(&m);
        if (t == 1) {
            loss1 = st.loss;
            g1 = grads_copy(&m);
            continue;
        }
        CHECK_NEAR(st.loss, loss1, 1e-5 * fabs(loss1));
        double gmax = 0, dmax = 0;
        for (size_t i = 0; i < m.n_params; i++) {
            gmax = fmax(gmax, fabs(g1[i]));
            dmax = fmax(dmax, fabs(g1[i] - m.grads[i]));
        }
        if (!(dmax <= 1e-5 * gmax))
            test_fail(__FILE__, __LINE__, "%d threads: gradients differ by %g (largest %g)", t,
                      dmax, gmax);
    }
    free(g1);
    model_free(&m);
    blas_set_threads(threads);
}

TEST(model_learns_copy) { learn_task(0, false); }
TEST(model_learns_reverse) { learn_task(1, false); }
TEST(model_learns_copy_bf16) { learn_task(0, true); }
TEST(model_learns_reverse_bf16) { learn_task(1, true); }
TEST(model_learns_copy_linear) { learn_task_attn(0, false, ATTN_LINEAR); }
TEST(model_learns_reverse_linear) { learn_task_attn(1, false, ATTN_LINEAR); }
/* bf16 products around fp32 linear attention */
TEST(model_learns_copy_bf16_linear) { learn_task_attn(0, true, ATTN_LINEAR); }

/* bf16 products against float32 ones on one batch: the loss and every
 * gradient. Each product rounds its inputs to 8 significant bits (relative
 * error at most 2^-8 = 0.4% each); over the ~20 products between the loss
 * and the first layer's weights the errors add up like a random walk,
 * and the deepest weights collect the most: measured 4.3% of the norm of
 * enc.0.ffn.w1's gradient, the worst tensor. test_bf16.c checks each
 * product against the rounded inputs to 1e-5, so what differs here is the
 * rounding. Tolerances: the loss to 0.5%, each tensor's gradient to 10% of
 * its norm (relative L2 distance). A product that is wrong (a transposed
 * operand, a lost accumulation) moves a gradient by O(100%). */
TEST(model_bf16_matches_fp32)
{
    if (!bf16_available()) {
        printf("  (no bf16 unit on this CPU: not run)\n");
        return;
    }
    const int threads = omp_get_max_threads();
    blas_set_threads(2);
    ModelConfig cfg = tiny_cfg(NORM_POST, true);
    cfg.d_model = 64, cfg.d_ff = 128, cfg.heads = 4;
    Model m;
    TfmErr err;
    seeded_model(&m, &cfg, 5, 64, 16);
    Batch b = fixed_batch();
    LossStats st[2];
    float *grads[2];
    for (int bf = 0; bf < 2; bf++) {
        blas_set_bf16(bf);
        CHECK(model_forward(&m, &b, 0.1f, NULL, &st[bf], &err) == TFM_OK);
        model_backward(&m);
        grads[bf] = grads_copy(&m);
    }
    blas_set_bf16(false);
    CHECK_NEAR(st[1].loss, st[0].loss, 5e-3 * fabs(st[0].loss));
    double worst = 0;
    const char *worst_name = "";
    for (int t = 0; t < m.n_tensors; t++) {
        const TensorInfo *ti = &m.tensors[t];
        double d2 = 0, n2 = 0;
        for (long i = 0; i < (long)ti->rows * ti->cols; i++) {
            double x = grads[0][ti->offset + i], y = grads[1][ti->offset + i];
            d2 += (x - y) * (x - y);
            n2 += x * x;
        }
        /* unused embedding rows have none; a key bias's gradient is zero
         * but for rounding (softmax ignores a shift common to a query's
         * scores), so there is nothing to compare */
        if (n2 == 0 || strstr(ti->name, ".bk")) continue;
        double rel = sqrt(d2 / n2);
        if (!(rel <= worst)) worst = rel, worst_name = ti->name;
    }
    printf("  bf16 vs fp32: loss %.6f vs %.6f, worst gradient %s off by %.3f%% of its norm\n",
           st[1].loss, st[0].loss, worst_name, 100 * worst);
    CHECK(worst <= 0.10);
    free(grads[0]), free(grads[1]);
    model_free(&m);
    blas_set_threads(threads);
}

/* ---- speed (only with TFM_BENCH set; not part of make test) ----
 * One training step (forward + backward), best of 5 after a warm-up, with
 * the current thread count. TFM_BENCH=1: d 256, 4 heads, 3+3 layers, d_ff
 * 1024, V 8000; TFM_BENCH=base: the paper's base model (d 512, 8 heads, 6+6,
 * d_ff 2048, V 37000); both shared embeddings, post-norm, dropout 0.1, and a
 * batch of 160 (base: 164) sentences of 18-25 tokens (~4000 a side).
 * FLOPs: 6 per non-embedding weight per token it sees (encoder weights x
 * source positions, decoder weights x target positions, padding included as
 * computed), attention products 3 x 4·Tq·Tk·D per sentence and layer, and
 * the output layer 6·M·V·D for the M non-pad targets. */
TEST(model_bench_step)
{
    const char *which = getenv("TFM_BENCH");
    if (!which) return;
    const int base = strcmp(which, "base") == 0;
    ModelConfig cfg = {.d_model = base ? 512 : 256, .heads = base ? 8 : 4,
                       .enc_layers = base ? 6 : 3, .dec_layers = base ? 6 : 3,
                       .d_ff = base ? 2048 : 1024, .dropout = 0.1f, .norm = NORM_POST,
                       .share_embeddings = true, .vocab_size = base ? 37000 : 8000,
                       .max_len = 130};
    enum { S = 25, T = 26, NMAX = 164 };
    const int NS = base ? 164 : 160;
    Model m;
    TfmErr err;
    Rng drop;
    rng_seed(&drop, 2);
    Rng rng = seeded_model(&m, &cfg, 1, NS * T, 130);
    static int src[NMAX * S], tin[NMAX * T], tout[NMAX * T];
    const int V = cfg.vocab_size;
    long real_src = 0;
    for (int b = 0; b < NS; b++) {
        int ls = 18 + (int)rng_below(&rng, 7), lt = 18 + (int)rng_below(&rng, 8);
        for (int i = 0; i < S; i++)
            src[b * S + i] = i < ls ? 4 + (int)rng_below(&rng, (uint64_t)V - 4)
                                    : i == ls ? TOK_EOS : TOK_PAD;
        for (int i = 0; i < T; i++) {
            tout[b * T + i] = i < lt ? 4 + (int)rng_below(&rng, (uint64_t)V - 4)
                                     : i == lt ? TOK_EOS : TOK_PAD;
            tin[b * T + i] = i == 0 ? TOK_BOS : i <= lt ? tout[b * T + i - 1] : TOK_PAD;
        }
        real_src += ls + 1;
    }
    Batch bt = {.n = NS, .src_len = S, .tgt_len = T, .src = src, .tgt_in = tin, .tgt_out = tout};
    LossStats st;
    /* best of 5 after a warm-up step: the machine may be shared */
    double tf = 1e9, tb = 1e9, tsum = 0;
    const int reps = 5;
    for (int r = -1; r < reps; r++) {
        double t0 = omp_get_wtime();
        CHECK(model_forward(&m, &bt, 0.1f, &drop, &st, &err) == TFM_OK);
        double t1 = omp_get_wtime();
        model_backward(&m);
        double t2 = omp_get_wtime();
        if (r < 0) continue;
        tsum += t2 - t0;
        if (t2 - t0 < tf + tb) tf = t1 - t0, tb = t2 - t1;
    }
    const double D = cfg.d_model, F = cfg.d_ff, L = cfg.enc_layers;
    const double enc_p = 4 * D * D + 2 * D * F, dec_p = 8 * D * D + 2 * D * F;
    double flops = 6 * L * (enc_p * NS * S + dec_p * NS * T);
    flops += 3.0 * 4 * D * NS * L * ((double)S * S + (double)T * T + (double)T * S);
    flops += 6 * (double)st.n_tokens * V * D;
    printf("  %s: %d x (%d, %d) = %ld src + %ld tgt real tokens, %d threads: "
           "best step %.1f ms (forward %.1f, backward %.1f; mean %.1f), %.1f GFLOP -> "
           "%.1f GFLOP/s, %.0f tok/s (src+tgt)\n", base ? "base" : "d256 3+3 ff1024 V8000",
           NS, S, T, real_src, st.n_tokens, omp_get_max_threads(), (tf + tb) * 1e3, tf * 1e3,
           tb * 1e3, tsum / reps * 1e3, flops / 1e9, flops / 1e9 / (tf + tb),
           (real_src + st.n_tokens) / (tf + tb));
    model_free(&m);
}

/* One rule for "matrix or vector": the layout's kind. Every tensor of rows 1
 * is a gain or bias (spared from weight decay's "matrices" scope) and starts
 * at 1 or 0; every other tensor is drawn at random. */
TEST(model_tensor_kinds)
{
    for (int rms = 0; rms < 2; rms++) {
        ModelConfig cfg = tiny_cfg(rms ? NORM_PRE : NORM_POST, rms == 0);
        cfg.norm_type = rms ? NORM_RMS : NORM_LAYER;
        Model m;
        seeded_model(&m, &cfg, 5, 0, 0);
        int vectors = 0;
        for (int i = 0; i < m.n_tensors; i++) {
            const TensorInfo *ti = &m.tensors[i];
            const float *p = m.params + ti->offset;
            const float start = ti->kind == TENSOR_GAIN ? 1.0f : 0.0f;
            bool constant = true;
            for (int j = 0; j < ti->rows * ti->cols; j++) constant = constant && p[j] == start;
            if (tensor_is_vector(ti) != (ti->rows == 1) || tensor_is_vector(ti) != constant)
                test_fail(__FILE__, __LINE__, "%s: kind %d, %d x %d", ti->name, (int)ti->kind,
                          ti->rows, ti->cols);
            vectors += tensor_is_vector(ti);
        }
        CHECK(vectors > 0);
        model_free(&m);
    }
}
