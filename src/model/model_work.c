/* model_work: the workspace of the forward and backward passes (carved
 * from one block by base/arena.h: sizes counted by the same code that
 * carves them), and a model's memory: model_alloc_training, model_free. */
#include "model/model_work.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "nn/layers.h"
#include "model/layout.h"

/* count floats from a (NULL while it only counts) */
static float *carve(Arena *a, size_t count) { return arena_take(a, count, sizeof(float)); }

static void carve_res(Arena *c, ResAct *r, size_t nd, size_t n)
{
    r->ln = carve(c, nd);
    r->mean = carve(c, n);
    r->rstd = carve(c, n);
    r->r = carve(c, nd);
}

/* attention probabilities (a floats) and, with dropout, their dropped copy
 * (else the same buffer) */
static void carve_probs(Arena *c, float **att, float **att_d, size_t a, int dropout)
{
    *att = carve(c, a);
    *att_d = dropout ? carve(c, a) : *att;
}

static void carve_ends(Arena *c, StackEnds *e, size_t nd, size_t n)
{
    e->x0 = carve(c, nd);
    e->fin = carve(c, nd);
    e->fmean = carve(c, n);
    e->frstd = carve(c, n);
}

void model_work_carve(ModelWork *w, Arena *c, const ModelConfig *cfg, int max_tokens,
                      int max_len, int training)
{
    *w = (ModelWork){.max_tokens = max_tokens, .max_len = max_len, .training = training};
    const size_t N = (size_t)w->max_tokens, D = (size_t)cfg->d_model, F = (size_t)cfg->d_ff;
    const int linear = cfg->attention == ATTN_LINEAR;
    /* softmax keeps its probabilities (n, H, Tq, Tk), linear attention only
     * its denominators (n, H, Tq): nothing quadratic in the length */
    const size_t A = (size_t)cfg->heads * N * (linear ? 1 : (size_t)w->max_len);
    const size_t V = (size_t)cfg->vocab_size;
    const int attd = w->training && cfg->attn_dropout > 0;
    EncAct enc_count = {0};     /* while counting, w->enc and w->dec are NULL */
    DecAct dec_count = {0};
    w->enc = arena_take(c, (size_t)cfg->enc_layers, sizeof *w->enc);
    if (training) {
        w->dec = arena_take(c, (size_t)cfg->dec_layers, sizeof *w->dec);
        w->rows = arena_take(c, N, sizeof(int));
        w->targets = arena_take(c, N, sizeof(int));
        w->row_loss = arena_take(c, 3 * N, sizeof(double));
        w->rep_tok = arena_take(c, 3 * N, sizeof(int));
    } else {
        w->src_len = arena_take(c, N, sizeof(int));
    }
    for (int i = 0; i < cfg->enc_layers; i++) {
        EncAct *e = w->enc ? &w->enc[i] : &enc_count;
        carve_res(c, &e->res1, N * D, N);
        carve_res(c, &e->res2, N * D, N);
        e->qkv = carve(c, 3 * N * D);
        carve_probs(c, &e->att, &e->att_d, A, attd);
        e->ctx = carve(c, N * D);
        e->h = carve(c, N * F);
    }
    carve_ends(c, &w->enc_io, N * D, N);
    w->y = carve(c, N * D);
    if (linear) {
        w->lin_slices = omp_get_max_threads();
        w->lin_scratch = carve(c, (size_t)w->lin_slices *
                                      (size_t)linattn_scratch_floats(w->max_len, cfg->d_model / cfg->heads));
    }
    if (!w->training) return;
    for (int i = 0; i < cfg->dec_layers; i++) {
        DecAct *e = w->dec ? &w->dec[i] : &dec_count;
        carve_res(c, &e->res1, N * D, N);
        carve_res(c, &e->res2, N * D, N);
        carve_res(c, &e->res3, N * D, N);
        e->qkv = carve(c, 3 * N * D);
        carve_probs(c, &e->att, &e->att_d, A, attd);
        e->ctx = carve(c, N * D);
        e->q = carve(c, N * D);
        e->kv = carve(c, 2 * N * D);
        carve_probs(c, &e->catt, &e->catt_d, A, attd);
        e->cctx = carve(c, N * D);
        e->h = carve(c, N * F);
    }
    carve_ends(c, &w->dec_io, N * D, N);
    w->hc = carve(c, N * D);
    w->logits = carve(c, N * V);
    if (cfg->output_vocab == OUTPUT_TARGET) {   /* at most V rows each */
        w->out_w = carve(c, V * D);
        w->out_dw = carve(c, V * D);
    }
    w->back.dA = carve(c, N * D);
    w->back.dB = carve(c, N * D);
    w->back.dt = carve(c, N * D);
    w->back.dy = carve(c, N * D);
    w->back.dctx = carve(c, N * D);
    w->back.dq = carve(c, N * D);
    w->back.denc = carve(c, N * D);
    w->back.dhc = carve(c, N * D);
    w->back.dqkv = carve(c, 3 * N * D);
    w->back.dh = carve(c, N * F);
    w->back.datt = linear ? NULL : carve(c, A);
    w->diff_slices = omp_get_max_threads();
    w->diff_scratch = carve(c, (size_t)w->diff_slices * V);
}

void model_work_free(ModelWork *w)
{
    if (!w) return;
    free(w->block);
    free(w);
}

/* False when the workspace's sizes could overflow size_t: all factors are
 * positive ints, and the largest buffer is heads · max_tokens · max_len or
 * max_tokens · V. */
static bool work_size_ok(const ModelConfig *cfg, int max_tokens, int max_len)
{
    double biggest = (double)cfg->heads * max_tokens * max_len;
    double logits = (double)max_tokens * cfg->vocab_size;
    if (biggest < logits) biggest = logits;
    return biggest * 64.0 * (cfg->enc_layers + cfg->dec_layers + 4) <= (double)SIZE_MAX / 8;
}

double model_work_bytes(const ModelConfig *cfg, int max_tokens, int max_len)
{
    if (!work_size_ok(cfg, max_tokens, max_len)) return INFINITY;
    /* the same carving as model_work_alloc, so the estimate cannot drift from it */
    ModelWork w;
    Arena count = {0};
    model_work_carve(&w, &count, cfg, max_tokens, max_len, 1);
    return (double)count.used + 64;
}

ModelWork *model_work_alloc(const ModelConfig *cfg, int max_tokens, int max_len, int training,
                            TfmErr *err)
{
    /* Bound the sizes before any size_t product. */
    if (!work_size_ok(cfg, max_tokens, max_len)) {
        err_set(err, TFM_ERR_NOMEM, "workspace for %d tokens is too large", max_tokens);
        return NULL;
    }
    ModelWork *w = xcalloc(1, sizeof *w, err);
    if (!w) return NULL;
    Arena a = {0};
    model_work_carve(w, &a, cfg, max_tokens, max_len, training);
    char *block = xmalloc(a.used + 64, err);
    if (!block) {
        free(w);
        return NULL;
    }
    /* align the block start to 64 bytes */
    a = (Arena){.base = (char *)(((uintptr_t)block + 63) & ~(uintptr_t)63)};
    model_work_carve(w, &a, cfg, max_tokens, max_len, training);
    w->block = block;
    return w;
}

TfmStatus model_alloc_training(Model *m, int max_tokens, int max_len, TfmErr *err)
{
    if (max_tokens <= 0 || max_len <= 0 || max_len > m->cfg.max_len)
        return err_set(err, TFM_ERR_CONFIG, "bad workspace size (%d tokens, length %d, "
                       "model max_len %d)", max_tokens, max_len, m->cfg.max_len);
    model_work_free(m->work);
    m->work = NULL;
    if (!m->grads) {
        m->grads = xcalloc(m->n_params, sizeof(float), err);
        if (!m->grads) return TFM_ERR_NOMEM;
    }
    m->work = model_work_alloc(&m->cfg, max_tokens, max_len, 1, err);
    return m->work ? TFM_OK : TFM_ERR_NOMEM;
}

TfmStatus model_init_replica(Model *r, const Model *m, int max_tokens, int max_len,
                             TfmErr *err)
{
    *r = *m;
    r->replica = true;
    r->grads = NULL;
    r->work = NULL;
    TfmStatus st = model_alloc_training(r, max_tokens, max_len, err);
    if (st != TFM_OK) model_free(r);
    return st;
}

void model_free(Model *m)
{
    if (!m) return;
    free(m->grads);
    model_work_free(m->work);
    if (m->replica) {           /* the rest is its owner's */
        *m = (Model){0};
        return;
    }
    free(m->params);
    free(m->tensors);
    if (m->layout) {
        free(m->layout->enc);
        free(m->layout->dec);
        free(m->layout);
    }
    free(m->pos_table);
    free(m->out_ids);
    free(m->out_pos);
    *m = (Model){0};
}

