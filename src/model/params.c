/* params: the parameter layout of model.h — tensor names, offsets, the
 * typed per-layer views — and model_init / model_init_weights.
 *
 * Parameter layout (FIXED: checkpoints and scripts/make_ref.py rely on it).
 * One float array, tensors in this order, each row-major (out, in):
 *   share_embeddings: "emb.shared" (V, D)
 *   else:             "emb.src" (V, D), "emb.tgt" (V, D), "out.proj" (V, D)
 *   for i in 0..enc_layers-1:
 *     "enc.{i}.self.wq" (D,D), "enc.{i}.self.wk" (D,D), "enc.{i}.self.wv" (D,D)  [one (3D,D) block]
 *     "enc.{i}.self.bq" (1,D), "enc.{i}.self.bk", "enc.{i}.self.bv"           [one (3D) block]
 *     "enc.{i}.self.wo" (D,D), "enc.{i}.self.bo" (1,D)
 *     "enc.{i}.ln1.g" (1,D), "enc.{i}.ln1.b" (1,D) (no ".b" with model.norm_type rmsnorm)
 *     "enc.{i}.ffn.w1" (F,D), "enc.{i}.ffn.b1" (1,F), "enc.{i}.ffn.w2" (D,F), "enc.{i}.ffn.b2" (1,D)
 *     "enc.{i}.ln2.g", "enc.{i}.ln2.b"
 *   pre-norm: "enc.ln.g", "enc.ln.b"
 *   for i in 0..dec_layers-1:
 *     "dec.{i}.self.{wq,wk,wv,bq,bk,bv,wo,bo}", "dec.{i}.ln1.{g,b}",
 *     "dec.{i}.cross.{wq,wk,wv,bq,bk,bv,wo,bo}"  [wk, wv one (2D,D) block; bk, bv one (2D)]
 *     "dec.{i}.ln2.{g,b}", "dec.{i}.ffn.{w1,b1,w2,b2}", "dec.{i}.ln3.{g,b}"
 *   pre-norm: "dec.ln.g", "dec.ln.b"
 * lnK belongs to sublayer K: post-norm applies it after the residual add,
 * pre-norm to the sublayer's input.
 */
#include "model/model.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nn/layers.h"
#include "model/layout.h"

typedef struct {
    TensorInfo *tab;        /* NULL: only count */
    int n;
    size_t off;
    int overflow;
} Builder;

static size_t add_tensor(Builder *b, TensorKind kind, int rows, int cols, const char *prefix,
                         const char *suffix)
{
    size_t off = b->off, cnt;
    if (!size_mul_ok((size_t)rows, (size_t)cols, &cnt) || b->off + cnt < b->off)
        b->overflow = 1;
    if (b->tab) {
        TensorInfo *t = &b->tab[b->n];
        snprintf(t->name, sizeof t->name, "%s%s", prefix, suffix);
        t->offset = off;
        t->rows = rows;
        t->cols = cols;
        t->kind = kind;
    }
    b->n++;
    b->off += cnt;
    return off;
}

/* pre: "enc.3.self." etc. q, k, v (and their biases) are added back to back,
 * so w and b address (3D, D) and (3D) blocks. */
static void add_attn(Builder *b, AttnP *a, const char *pre, int d)
{
    a->w = add_tensor(b, TENSOR_MATRIX, d, d, pre, "wq");
    add_tensor(b, TENSOR_MATRIX, d, d, pre, "wk");
    add_tensor(b, TENSOR_MATRIX, d, d, pre, "wv");
    a->b = add_tensor(b, TENSOR_BIAS, 1, d, pre, "bq");
    add_tensor(b, TENSOR_BIAS, 1, d, pre, "bk");
    add_tensor(b, TENSOR_BIAS, 1, d, pre, "bv");
    a->wo = add_tensor(b, TENSOR_MATRIX, d, d, pre, "wo");
    a->bo = add_tensor(b, TENSOR_BIAS, 1, d, pre, "bo");
}

static void add_ln(Builder *b, LnP *l, const char *pre, int d, NormType t)
{
    l->g = add_tensor(b, TENSOR_GAIN, 1, d, pre, "g");
    l->b = t == NORM_RMS ? NO_PARAM : add_tensor(b, TENSOR_BIAS, 1, d, pre, "b");
}

static void add_ffn(Builder *b, FfnP *f, const char *pre, int d, int ff)
{
    f->w1 = add_tensor(b, TENSOR_MATRIX, ff, d, pre, "w1");
    f->b1 = add_tensor(b, TENSOR_BIAS, 1, ff, pre, "b1");
    f->w2 = add_tensor(b, TENSOR_MATRIX, d, ff, pre, "w2");
    f->b2 = add_tensor(b, TENSOR_BIAS, 1, d, pre, "b2");
}

/* One sublayer of layer i of stack "enc" or "dec": its attention `part`
 * ("self", "cross"; attn) or its FFN (part "ffn"; ffn), then its norm lnK:
 * "enc.0.self.wq" ... "enc.0.ln1.g". */
static void add_sublayer(Builder *b, const ModelConfig *c, const char *stack, int i,
                         const char *part, AttnP *attn, FfnP *ffn, LnP *ln, int k)
{
    char pre[48];
    snprintf(pre, sizeof pre, "%s.%d.%s.", stack, i, part);
    if (ffn) add_ffn(b, ffn, pre, c->d_model, c->d_ff);
    else add_attn(b, attn, pre, c->d_model);
    snprintf(pre, sizeof pre, "%s.%d.ln%d.", stack, i, k);
    add_ln(b, ln, pre, c->d_model, c->norm_type);
}

/* Walks the layout of cfg; fills lay's offsets (lay->enc/dec may be NULL)
 * and b->tab (if not NULL). */
static void build_layout(const ModelConfig *c, Builder *b, ModelLayout *lay)
{
    ModelLayout tmp = {0};
    EncP ep;
    DecP dp;
    const int d = c->d_model, V = c->vocab_size;
    if (!lay) lay = &tmp;
    if (c->share_embeddings) {
        lay->emb_src = lay->emb_tgt = lay->out_proj =
            add_tensor(b, TENSOR_EMBEDDING, V, d, "emb.shared", "");
    } else {
        lay->emb_src = add_tensor(b, TENSOR_EMBEDDING, V, d, "emb.src", "");
        lay->emb_tgt = add_tensor(b, TENSOR_EMBEDDING, V, d, "emb.tgt", "");
        lay->out_proj = add_tensor(b, TENSOR_EMBEDDING, V, d, "out.proj", "");
    }
    for (int i = 0; i < c->enc_layers; i++) {
        EncP *e = lay->enc ? &lay->enc[i] : &ep;
        add_sublayer(b, c, "enc", i, "self", &e->self, NULL, &e->ln1, 1);
        add_sublayer(b, c, "enc", i, "ffn", NULL, &e->ffn, &e->ln2, 2);
    }
    if (c->norm == NORM_PRE) add_ln(b, &lay->enc_ln, "enc.ln.", d, c->norm_type);
    for (int i = 0; i < c->dec_layers; i++) {
        DecP *e = lay->dec ? &lay->dec[i] : &dp;
        add_sublayer(b, c, "dec", i, "self", &e->self, NULL, &e->ln1, 1);
        add_sublayer(b, c, "dec", i, "cross", &e->cross, NULL, &e->ln2, 2);
        add_sublayer(b, c, "dec", i, "ffn", NULL, &e->ffn, &e->ln3, 3);
    }
    if (c->norm == NORM_PRE) add_ln(b, &lay->dec_ln, "dec.ln.", d, c->norm_type);
}

size_t model_param_count(const ModelConfig *cfg)
{
    Builder b = {0};
    build_layout(cfg, &b, NULL);
    return b.overflow ? 0 : b.off;
}

static const float *param_or_null(const float *p, size_t off)
{
    return off == NO_PARAM ? NULL : p + off;
}

DecLayerWeights model_dec_layer_weights(const Model *m, int i)
{
    const DecP *l = &m->layout->dec[i];
    const float *p = m->params;
    const size_t D = (size_t)m->cfg.d_model;
    return (DecLayerWeights){
        .wqkv = p + l->self.w, .bqkv = p + l->self.b, .wo = p + l->self.wo, .bo = p + l->self.bo,
        .ln1_g = p + l->ln1.g, .ln1_b = param_or_null(p, l->ln1.b),
        /* cross q, k, v are back to back (add_attn): k|v is one (2D, D) block after q */
        .cwq = p + l->cross.w, .cbq = p + l->cross.b,
        .cwkv = p + l->cross.w + D * D, .cbkv = p + l->cross.b + D,
        .cwo = p + l->cross.wo, .cbo = p + l->cross.bo,
        .ln2_g = p + l->ln2.g, .ln2_b = param_or_null(p, l->ln2.b),
        .w1 = p + l->ffn.w1, .b1 = p + l->ffn.b1, .w2 = p + l->ffn.w2, .b2 = p + l->ffn.b2,
        .ln3_g = p + l->ln3.g, .ln3_b = param_or_null(p, l->ln3.b),
    };
}

void model_dec_final_ln(const Model *m, const float **g, const float **b)
{
    const bool pre = m->cfg.norm == NORM_PRE;
    *g = pre ? m->params + m->layout->dec_ln.g : NULL;
    *b = pre ? param_or_null(m->params, m->layout->dec_ln.b) : NULL;
}

const TensorInfo *model_tensor(const Model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

TfmStatus model_init(Model *m, const ModelConfig *cfg, TfmErr *err)
{
    *m = (Model){0};
    m->cfg = *cfg;
    const ModelConfig *c = &m->cfg;
    if (c->d_model <= 0 || c->heads <= 0 || c->d_model % c->heads != 0 || c->d_ff <= 0 ||
        c->enc_layers <= 0 || c->dec_layers <= 0 || c->vocab_size <= 4 || c->max_len <= 0)
        return err_set(err, TFM_ERR_CONFIG,
                       "invalid model shape (d_model %d, heads %d, d_ff %d, layers %d+%d, "
                       "vocab %d, max_len %d)", c->d_model, c->heads, c->d_ff,
                       c->enc_layers, c->dec_layers, c->vocab_size, c->max_len);
    Builder b = {0};
    build_layout(c, &b, NULL);
    if (b.overflow || b.off == 0)
        return err_set(err, TFM_ERR_CONFIG, "model too large to address");
    m->n_params = b.off;
    m->n_tensors = b.n;
    m->tensors = xcalloc((size_t)b.n, sizeof *m->tensors, err);
    m->layout = xcalloc(1, sizeof *m->layout, err);
    if (!m->tensors || !m->layout) goto fail;
    m->layout->enc = xcalloc((size_t)c->enc_layers, sizeof(EncP), err);
    m->layout->dec = xcalloc((size_t)c->dec_layers, sizeof(DecP), err);
    m->params = xcalloc(m->n_params, sizeof(float), err);
    m->pos_table = xmalloc((size_t)c->max_len * (size_t)c->d_model * sizeof(float), err);
    if (!m->layout->enc || !m->layout->dec || !m->params || !m->pos_table) goto fail;
    Builder fill = {.tab = m->tensors};
    build_layout(c, &fill, m->layout);
    positions_init(m->pos_table, c->max_len, c->d_model);
    m->emb_src = m->params + m->layout->emb_src;
    m->emb_tgt = m->params + m->layout->emb_tgt;
    m->out_proj = m->params + m->layout->out_proj;
    return TFM_OK;
fail:
    model_free(m);
    return TFM_ERR_NOMEM;
}

/* Projections: Xavier/Glorot uniform, U(±sqrt(6/(fan_in + fan_out))) per
 * (out, in) tensor, so q, k and v each get the (D, D) bound.
 * Embeddings (and the unshared output projection): N(0, 1/D). The input is
 * scaled by sqrt(D), so token vectors have unit variance per component,
 * the same scale as the sinusoids they are added to; and the logits
 * h·E_vᵀ of a unit-variance LayerNorm output h start with unit variance.
 * The <pad> row is drawn like the others and not zeroed: pad keys are masked
 * and pad targets ignored, so it never gets a gradient through the input,
 * and as an output row it is only pushed down (it is never a target).
 * Biases 0, LayerNorm gains 1. Draws in layout order, so a seed fixes all. */
void model_init_weights(Model *m, Rng *rng)
{
    const double emb_std = 1.0 / sqrt((double)m->cfg.d_model);
    for (int t = 0; t < m->n_tensors; t++) {
        const TensorInfo *ti = &m->tensors[t];
        float *p = m->params + ti->offset;
        const size_t cnt = (size_t)ti->rows * (size_t)ti->cols;
        switch (ti->kind) {
        case TENSOR_EMBEDDING:
            for (size_t i = 0; i < cnt; i++) p[i] = (float)(emb_std * rng_normal(rng));
            break;
        case TENSOR_MATRIX: {
            const float lim = (float)sqrt(6.0 / (ti->rows + ti->cols));
            for (size_t i = 0; i < cnt; i++) p[i] = (2.0f * rng_uniform(rng) - 1.0f) * lim;
            break;
        }
        case TENSOR_GAIN:
            for (size_t i = 0; i < cnt; i++) p[i] = 1.0f;
            break;
        case TENSOR_BIAS:
            memset(p, 0, cnt * sizeof *p);
            break;
        }
    }
}

TfmStatus model_set_output_vocab(Model *m, const int *ids, int n, TfmErr *err)
{
    const int V = m->cfg.vocab_size;
    if (m->cfg.output_vocab != OUTPUT_TARGET)
        return err_set(err, TFM_ERR_FORMAT, "an output vocabulary needs model.output_vocab "
                       "\"target\"");
    /* the specials here; the pieces the vocabulary needs to write any text
     * are the vocabulary's to check (bpe_subset_check) */
    if (n < BPE_N_SPECIAL || n > V)
        return err_set(err, TFM_ERR_FORMAT, "output vocabulary of %d pieces (the vocabulary has "
                       "%d; at least the %d specials)", n, V, BPE_N_SPECIAL);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V || (i > 0 && ids[i] <= ids[i - 1]))
            return err_set(err, TFM_ERR_FORMAT, "output vocabulary: piece %d at position %d is "
                           "out of range or out of order", ids[i], i);
        if (i < BPE_N_SPECIAL && ids[i] != i)
            return err_set(err, TFM_ERR_FORMAT, "output vocabulary: piece %d (a special) is "
                           "missing", i);
    }
    int *out_ids = xmalloc(sizeof(int) * (size_t)n, err);
    int *out_pos = xmalloc(sizeof(int) * (size_t)V, err);
    if (!out_ids || !out_pos) {
        free(out_ids);
        free(out_pos);
        return TFM_ERR_NOMEM;
    }
    memcpy(out_ids, ids, sizeof(int) * (size_t)n);
    for (int v = 0; v < V; v++) out_pos[v] = -1;
    for (int i = 0; i < n; i++) out_pos[ids[i]] = i;
    free(m->out_ids);
    free(m->out_pos);
    m->out_ids = out_ids;
    m->out_pos = out_pos;
    m->n_out = n;
    return TFM_OK;
}

void model_gather_output(const Model *m, float *dst)
{
    const int D = m->cfg.d_model;
    if (m->out_ids) gather_rows(dst, m->out_proj, m->out_ids, m->n_out, D);
    else memcpy(dst, m->out_proj, sizeof(float) * (size_t)m->cfg.vocab_size * (size_t)D);
}

/* Whether only the packed products read tensor t at inference. */
static bool product_only(const Model *m, const TensorInfo *t)
{
    const float *at = m->params + t->offset;
    if (t->kind == TENSOR_MATRIX) return true;
    return at == m->out_proj && at != m->emb_src && at != m->emb_tgt;
}

/* The whole pages of [from, to) floats of params, back to the system. */
static void release_range(const Model *m, size_t from, size_t to)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = ((uintptr_t)(m->params + from) + page - 1) & ~(page - 1);
    const uintptr_t b = (uintptr_t)(m->params + to) & ~(page - 1);
    /* advice only: on failure the memory stays, nothing else changes */
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

void model_release_matrices(Model *m)
{
    if (m->replica || m->matrices_released) return;
    /* neighbours (a layer's q, k and v) as one range: fewer partial pages */
    size_t from = 0, to = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (!product_only(m, t)) continue;
        const size_t end = t->offset + (size_t)t->rows * t->cols;
        if (t->offset != to) {
            release_range(m, from, to);
            from = t->offset;
        }
        to = end;
    }
    release_range(m, from, to);
    m->matrices_released = true;
}
