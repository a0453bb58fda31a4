/* test_rdrop: train.rdrop (R-Drop, Liang et al. 2021), every sentence trained
 * twice under two dropout masks with a symmetric-KL term between the two
 * predictions. The paired loss kernel against a double-precision reference
 * and finite differences; the whole model's gradient with R-Drop and
 * dropout on; with the masks switched off the two copies agree, so the loss
 * and the gradients are the plain ones; batches that fit only once are
 * refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "fixed_batch.h"
#include "gradcheck.h"
#include "model/model.h"
#include "nn/blas.h"
#include "nn/loss.h"
#include "test.h"

/* ---- the loss kernel ---- */

enum { PM = 3, PV = 37 };   /* 3 pairs; 37 columns: the 8-lane kernels' tails too */

typedef struct {
    float z[2 * PM * PV], tmp[2 * PM * PV], scratch[PV];
    int tgt[2 * PM];
    float eps, alpha;
    double rows[3 * PM];
} PairCtx;

static double pair_obj(void *p)
{
    PairCtx *c = p;
    double l, n;
    memcpy(c->tmp, c->z, sizeof c->z);
    loss_xent_rdrop(c->tmp, c->tgt, PM, PV, c->eps, c->alpha, 0.0f, c->scratch, 1, c->rows, &l,
                    &n, NULL);
    return l;
}

/* log-softmax of row z (v entries) in double */
static void log_softmax_d(const float *z, int v, double *lp)
{
    double mx = -INFINITY, se = 0;
    for (int k = 0; k < v; k++) mx = fmax(mx, z[k]);
    for (int k = 0; k < v; k++) se += exp(z[k] - mx);
    for (int k = 0; k < v; k++) lp[k] = z[k] - mx - log(se);
}

TEST(rdrop_loss_value_and_gradcheck)
{
    PairCtx c;
    Rng rng;
    rng_seed(&rng, 11);
    gc_fill(c.z, 2 * PM * PV, &rng, -3, 3);
    const int tgt[PM] = {0, 17, 36};
    for (int r = 0; r < PM; r++) c.tgt[r] = c.tgt[r + PM] = tgt[r];
    c.eps = 0.1f;
    c.alpha = 3.0f;
    /* the reference: ½(xent_a + xent_b) + (alpha/4)·Σ (p_a - p_b)(log p_a - log p_b) */
    double want = 0, want_nll = 0, kl = 0;
    for (int r = 0; r < PM; r++) {
        double la[PV], lb[PV];
        log_softmax_d(c.z + r * PV, PV, la);
        log_softmax_d(c.z + (r + PM) * PV, PV, lb);
        for (int k = 0; k < PV; k++) {
            const double q = (k == tgt[r] ? 1.0 - c.eps : 0.0) + c.eps / PV;
            want -= 0.5 * q * (la[k] + lb[k]);
            kl += (exp(la[k]) - exp(lb[k])) * (la[k] - lb[k]);
        }
        want_nll -= 0.5 * (la[tgt[r]] + lb[tgt[r]]);
    }
    CHECK(kl > 0.1);        /* the two rows differ: the KL term is tested */
    want += c.alpha / 4 * kl;
    double l, n;
    long correct;
    memcpy(c.tmp, c.z, sizeof c.z);
    loss_xent_rdrop(c.tmp, c.tgt, PM, PV, c.eps, c.alpha, 0.5f, c.scratch, 1, c.rows, &l, &n,
                    &correct);
    CHECK_NEAR(l, want, 1e-5);
    CHECK_NEAR(n, want_nll, 1e-5);
    long want_correct = 0;      /* the first copies */
    for (int r = 0; r < PM; r++) {
        int arg = 0;
        for (int k = 1; k < PV; k++)
            if (c.z[r * PV + k] > c.z[r * PV + arg]) arg = k;
        want_correct += arg == tgt[r];
    }
    CHECK_EQ_INT(correct, want_correct);
    float g[2 * PM * PV];
    for (int i = 0; i < 2 * PM * PV; i++) g[i] = c.tmp[i] * 2.0f;    /* written with scale 0.5 */
    GcReport rep = {0};
    gc_check(&rep, "dlogits", c.z, g, 2 * PM * PV, pair_obj, &c, 1e-2f, 1e-3, 2e-2, 10000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    CHECK_EQ_INT(rep.checked, 2 * PM * PV);
    /* alpha 0: the mean of loss_xent_smoothed over the 2m rows, gradient halved */
    c.alpha = 0;
    float plain[2 * PM * PV];
    double rows2[6 * PM], lp, np;
    memcpy(plain, c.z, sizeof c.z);
    loss_xent_smoothed(plain, c.tgt, 2 * PM, PV, c.eps, 1.0f, rows2, &lp, &np, NULL);
    memcpy(c.tmp, c.z, sizeof c.z);
    loss_xent_rdrop(c.tmp, c.tgt, PM, PV, c.eps, 0.0f, 1.0f, c.scratch, 1, c.rows, &l, &n, NULL);
    CHECK_NEAR(l, 0.5 * lp, 1e-5);
    CHECK_NEAR(n, 0.5 * np, 1e-5);
    for (int i = 0; i < 2 * PM * PV; i++) CHECK_NEAR(c.tmp[i], 0.5f * plain[i], 1e-6);
}

/* Identical rows: the KL term and its gradient vanish exactly as in theory
 * (to rounding); and the threads' scratch rows give the same bits as one. */
TEST(rdrop_loss_equal_rows_and_threads)
{
    enum { M = 64, V = 300 };   /* 2·64·300 > 16384: the parallel loop */
    float *z = malloc(sizeof(float) * 2 * M * V), *a = malloc(sizeof(float) * 2 * M * V);
    float *b = malloc(sizeof(float) * 2 * M * V), *scratch = malloc(sizeof(float) * 4 * V);
    int tgt[2 * M];
    double rows[3 * M], la, na, lb, nb;
    Rng rng;
    rng_seed(&rng, 12);
    gc_fill(z, M * V, &rng, -4, 4);
    memcpy(z + M * V, z, sizeof(float) * M * V);
    for (int r = 0; r < M; r++) tgt[r] = tgt[r + M] = (int)rng_below(&rng, V);
    memcpy(a, z, sizeof(float) * 2 * M * V);
    loss_xent_rdrop(a, tgt, M, V, 0.1f, 5.0f, 1.0f, scratch, 1, rows, &la, &na, NULL);
    memcpy(b, z, sizeof(float) * 2 * M * V);
    loss_xent_smoothed(b, tgt, M, V, 0.1f, 1.0f, rows, &lb, &nb, NULL);
    CHECK_NEAR(la, lb, 1e-4);
    CHECK_NEAR(na, nb, 1e-4);
    double worst = 0;
    for (long i = 0; i < (long)M * V; i++) {
        worst = fmax(worst, fabs(a[i] - 0.5 * b[i]));
        worst = fmax(worst, fabs(a[i + (long)M * V] - 0.5 * b[i]));
    }
    CHECK(worst < 1e-6);
    /* other rows (the copies differ), 1 thread against 4 slices */
    gc_fill(z + M * V, M * V, &rng, -4, 4);
    memcpy(a, z, sizeof(float) * 2 * M * V);
    memcpy(b, z, sizeof(float) * 2 * M * V);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    loss_xent_rdrop(a, tgt, M, V, 0.1f, 5.0f, 1.0f, scratch, 4, rows, &la, &na, NULL);
    omp_set_num_threads(4);
    loss_xent_rdrop(b, tgt, M, V, 0.1f, 5.0f, 1.0f, scratch, 4, rows, &lb, &nb, NULL);
    omp_set_num_threads(threads);
    CHECK(la == lb && na == nb);
    CHECK(memcmp(a, b, sizeof(float) * 2 * M * V) == 0);
    free(z);
    free(a);
    free(b);
    free(scratch);
}

/* ---- the model ---- */

/* A 2+2-layer model with every dropout on; FFN biases ±4 keep the ReLUs
 * clear of their kinks for finite differences (see test_model.c). */
static void rd_model(Model *m, float dropout, int max_tokens)
{
    ModelConfig cfg = {
        .d_model = 16, .heads = 2, .enc_layers = 2, .dec_layers = 2, .d_ff = 32,
        .dropout = dropout, .attn_dropout = dropout, .relu_dropout = dropout,
        .word_dropout = dropout / 2, .norm = NORM_POST, .share_embeddings = true,
        .vocab_size = 20, .max_len = 16,
    };
    TfmErr err;
    CHECK(model_init(m, &cfg, &err) == TFM_OK);
    Rng rng;
    rng_seed(&rng, 21);
    model_init_weights(m, &rng);
    for (int t = 0; t < m->n_tensors; t++) {
        const TensorInfo *ti = &m->tensors[t];
        float *p = m->params + ti->offset;
        if (strstr(ti->name, "ffn.b1"))
            for (int j = 0; j < ti->cols; j++) p[j] = rng_uniform(&rng) < 0.5f ? -4.0f : 4.0f;
    }
    CHECK(model_alloc_training(m, max_tokens, 16, &err) == TFM_OK);
}

typedef struct {
    Model m;
    Batch b;
    Rng drop;       /* copied before every forward: the same masks each time */
    StepSettings s;
} RdCtx;

static double rd_obj(void *p)
{
    RdCtx *g = p;
    LossStats st;
    Rng r = g->drop;
    TfmErr err;
    if (model_forward_step(&g->m, &g->b, &g->s, &r, &st, &err) != TFM_OK) return NAN;
    return st.loss / (double)st.n_tokens;
}

/* The whole model under R-Drop with dropout 0.2: 600 sampled parameters
 * plus every element of the tensors up to 48 floats. Tolerances as in
 * test_model.c's checks (same model size and step). */
TEST(rdrop_model_gradcheck)
{
    const int threads = omp_get_max_threads();
    blas_set_threads(1);
    RdCtx *g = calloc(1, sizeof *g);
    rd_model(&g->m, 0.2f, 64);
    g->s = (StepSettings){0.1f, 1.0f, 2.0f};
    g->b = fixed_batch();
    rng_seed(&g->drop, 5);
    const double f0 = rd_obj(g);
    CHECK(isfinite(f0));
    model_backward(&g->m);
    float *grads = malloc(g->m.n_params * sizeof *grads);
    memcpy(grads, g->m.grads, g->m.n_params * sizeof *grads);
    Rng rng;
    rng_seed(&rng, 22);
    GcReport rep = {0};
    for (int t = 0; t < g->m.n_tensors; t++) {
        const TensorInfo *ti = &g->m.tensors[t];
        gc_check(&rep, ti->name, g->m.params + ti->offset, grads + ti->offset,
                 (long)ti->rows * ti->cols, rd_obj, g, 1e-2f, 1e-4, 2e-2, 24, &rng);
    }
    /* embedding rows of the tokens the batch uses */
    const TensorInfo *emb = model_tensor(&g->m, "emb.shared");
    const int toks[4] = {5, 9, 16, TOK_EOS};
    for (int k = 0; k < 4; k++) {
        const size_t off = emb->offset + (size_t)toks[k] * 16;
        gc_check(&rep, "emb.shared", g->m.params + off, grads + off, 16, rd_obj, g, 1e-2f, 1e-4,
                 2e-2, 16, &rng);
    }
    CHECK_EQ_INT(rep.failed, 0);
    CHECK(rep.checked > 500);
    printf("  rdrop 2, dropout 0.2: %ld checked, max |num - ana| %.2g\n", rep.checked,
           rep.max_abs);
    free(grads);
    model_free(&g->m);
    free(g);
    blas_set_threads(threads);
}

/* With the dropouts at 0 the two copies see the same network: R-Drop's
 * loss is the plain loss and its gradient the plain gradient (to rounding:
 * the repeat adds two halves where the plain pass has one whole). With
 * dropout on, the KL term makes the loss larger than alpha 0's, same masks. */
TEST(rdrop_without_dropout_is_the_plain_loss)
{
    Model a, r;
    rd_model(&a, 0.2f, 64);
    rd_model(&r, 0.2f, 64);
    StepSettings sa_set = {0.1f, 0.0f, 0.0f}, sr_set = {0.1f, 0.0f, 5.0f};
    Batch b = fixed_batch();
    LossStats sa, sr;
    TfmErr err;
    Rng d1, d2;
    rng_seed(&d1, 3);
    rng_seed(&d2, 3);
    CHECK(model_forward_step(&a, &b, &sa_set, &d1, &sa, &err) == TFM_OK);
    CHECK(model_forward_step(&r, &b, &sr_set, &d2, &sr, &err) == TFM_OK);
    CHECK_EQ_INT(sr.n_tokens, sa.n_tokens);
    CHECK_EQ_INT(sr.n_correct, sa.n_correct);
    CHECK_NEAR(sr.loss, sa.loss, 1e-5 * sa.loss);
    CHECK_NEAR(sr.nll, sa.nll, 1e-5 * sa.nll);
    model_backward(&a);
    model_backward(&r);
    double worst = 0, big = 0;
    for (size_t i = 0; i < a.n_params; i++) {
        worst = fmax(worst, fabs(a.grads[i] - r.grads[i]));
        big = fmax(big, fabs(a.grads[i]));
    }
    CHECK(big > 1e-3);
    CHECK(worst < 1e-5 * big);
    /* evaluation (no dropout Rng) never repeats the batch */
    CHECK(model_forward_step(&r, &b, &sr_set, NULL, &sr, &err) == TFM_OK);
    CHECK(model_forward_step(&a, &b, &sa_set, NULL, &sa, &err) == TFM_OK);
    CHECK(sr.loss == sa.loss);
    /* masks on (the same in both runs): a KL term on top */
    sr_set.dropout_factor = 1;
    LossStats s0;
    Rng d3;
    rng_seed(&d1, 4);
    rng_seed(&d3, 4);
    CHECK(model_forward_step(&r, &b, &sr_set, &d1, &sr, &err) == TFM_OK);
    sr_set.rdrop = 1e-30f;      /* on, with a KL term too small to count */
    CHECK(model_forward_step(&r, &b, &sr_set, &d3, &s0, &err) == TFM_OK);
    CHECK(sr.loss > s0.loss + 1e-3);
    CHECK(s0.nll == sr.nll);
    model_free(&a);
    model_free(&r);
}

/* A batch that fits the workspace once but not twice is refused, with a
 * message that names train.rdrop. */
TEST(rdrop_refuses_a_batch_that_fits_once)
{
    Model m;
    rd_model(&m, 0.1f, 24);     /* 3 x 6 = 18 source tokens: once, not twice */
    Batch b = fixed_batch();
    LossStats st;
    TfmErr err = {0};
    Rng d;
    rng_seed(&d, 1);
    CHECK(model_forward(&m, &b, 0.1f, &d, &st, &err) == TFM_OK);
    const StepSettings twice = {0.1f, 1.0f, 1.0f};
    CHECK(model_forward_step(&m, &b, &twice, &d, &st, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "train.rdrop") != NULL);
    CHECK(model_forward_step(&m, &b, &twice, NULL, &st, &err) == TFM_OK);   /* evaluation fits */
    model_free(&m);
}
