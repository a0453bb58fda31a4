/* step: one model's incremental decoder (see step.h). */
#include "decode/step.h"

#include <math.h>
#include <string.h>

#include "nn/layers.h"
#include "model/sublayer.h"

/* ---- the packed products ---- */

typedef struct { const float *w; const int *rows; const float *b; int in, out; } Product;

/* Product i (LP_*) of a decoder layer: the one table that packing,
 * repacking and the memory estimate read. */
static Product layer_product(const DecLayerWeights *w, int i, int D, int F)
{
    const Product p[LP_COUNT] = {
        [LP_QKV] = {w->wqkv, NULL, w->bqkv, D, 3 * D}, [LP_O] = {w->wo, NULL, w->bo, D, D},
        [LP_CQ] = {w->cwq, NULL, w->cbq, D, D},        [LP_CO] = {w->cwo, NULL, w->cbo, D, D},
        [LP_CKV] = {w->cwkv, NULL, w->cbkv, D, 2 * D}, [LP_F1] = {w->w1, NULL, w->b1, D, F},
        [LP_F2] = {w->w2, NULL, w->b2, F, D},
    };
    return p[i];
}

/* The output projection. model.output_vocab "target": it covers the output
 * pieces' rows only (out_ids: NULL, every row, otherwise). */
static Product out_product(const Model *m)
{
    return (Product){m->out_proj, m->out_ids, NULL, m->cfg.d_model, model_n_out(m)};
}

size_t dec_step_packed_bytes(const Model *m)
{
    const DecLayerWeights none = {0};
    size_t bytes = 0;
    for (int j = 0; j < LP_COUNT; j++) {
        const Product p = layer_product(&none, j, m->cfg.d_model, m->cfg.d_ff);
        bytes += packed_linear_bytes(p.in, p.out, m->int8) * (size_t)m->cfg.dec_layers;
    }
    const Product o = out_product(m);
    return bytes + packed_linear_bytes(o.in, o.out, m->int8) + encoder_pack_bytes(m);
}

size_t dec_step_packed_held(const DecStep *s)
{
    size_t bytes = s->p_out.bytes + encoder_pack_held(s->enc_pack);
    for (int i = 0; i < s->m->cfg.dec_layers; i++)
        for (int j = 0; j < LP_COUNT; j++) bytes += s->layer[i].pk[j].bytes;
    return bytes;
}

TfmStatus dec_step_pack(DecStep *s, TfmErr *err)
{
    /* an int8 model's products run in int8 */
    TfmStatus (*const init)(PackedLinear *, const float *, const int *, const float *, int, int,
                            TfmErr *) = s->m->int8 ? packed_linear_init_int8 : packed_linear_init;
    TfmStatus st;
    for (int i = 0; i < s->m->cfg.dec_layers; i++)
        for (int j = 0; j < LP_COUNT; j++) {
            const Product p = layer_product(&s->layer[i].w, j, s->D, s->F);
            if ((st = init(&s->layer[i].pk[j], p.w, p.rows, p.b, p.in, p.out, err)) != TFM_OK)
                return st;
        }
    const Product o = out_product(s->m);
    if ((st = init(&s->p_out, o.w, o.rows, o.b, o.in, o.out, err)) != TFM_OK) return st;
    /* int8: one buffer of quantized inputs for the step's products, which
     * run one after another (each would grow its own to its largest call) */
    for (int i = 0; i < s->m->cfg.dec_layers; i++)
        for (int j = 0; j < LP_COUNT; j++) packed_linear_share_scratch(&s->layer[i].pk[j], &s->p_out);
    return encoder_pack_new(&s->enc_pack, s->m, err);
}

void dec_step_update_weights(DecStep *s)
{
    const Model *m = s->m;
    for (int i = 0; i < m->cfg.dec_layers; i++)
        for (int j = 0; j < LP_COUNT; j++) {
            const Product p = layer_product(&s->layer[i].w, j, s->D, s->F);
            packed_linear_update(&s->layer[i].pk[j], p.w, p.b);
        }
    const Product o = out_product(m);
    packed_linear_update(&s->p_out, o.w, o.b);
    encoder_pack_update(s->enc_pack, m);
}

void dec_step_free(DecStep *s)
{
    if (s->layer)
        for (int i = 0; i < s->m->cfg.dec_layers; i++)
            for (int j = 0; j < LP_COUNT; j++) packed_linear_free(&s->layer[i].pk[j]);
    packed_linear_free(&s->p_out);
    encoder_pack_free(s->enc_pack);
}

/* ---- memory ---- */

void dec_step_carve(DecStep *s, Arena *a, const Model *m, int max_sents, int max_beam)
{
    const ModelConfig *c = &m->cfg;
    s->m = m;
    s->max_sents = max_sents;
    s->rows = max_sents * max_beam;
    s->T = s->S = c->max_len;
    s->D = c->d_model;
    s->H = c->heads;
    s->F = c->d_ff;
    s->V = c->vocab_size;
    s->Vo = model_n_out(m);
    /* linear attention keeps sums of a fixed size instead of a cache that
     * grows with the output */
    s->linear = c->attention == ATTN_LINEAR;
    s->lin_w = (size_t)s->D * (size_t)(s->D / s->H) + (size_t)s->D;
    s->self_w = s->linear ? s->lin_w : (size_t)s->T * 2 * (size_t)s->D;
    const size_t R = (size_t)s->rows, D = (size_t)s->D, T = (size_t)s->T, S = (size_t)s->S;
    const size_t n = (size_t)max_sents, F = (size_t)s->F, H = (size_t)s->H;
    const size_t f = sizeof(float);

    s->layer = arena_take(a, (size_t)c->dec_layers, sizeof *s->layer);
    for (int i = 0; i < c->dec_layers; i++) {
        DecLayer counting, *l = s->layer ? &s->layer[i] : &counting;
        l->w = model_dec_layer_weights(m, i);
        l->cache = arena_take(a, R * s->self_w, f);
        l->cache_next = s->linear ? arena_take(a, R * s->self_w, f) : NULL;
        /* cross-attention: softmax reads the source's K | V, linear attention
         * only their sums */
        l->cross_state = s->linear ? arena_take(a, n * s->lin_w, f) : NULL;
        l->cross_kv = s->linear ? NULL : arena_take(a, n * S * 2 * D, f);
    }
    s->anc = s->linear ? NULL : arena_take(a, R * T, sizeof(int));
    s->anc_next = s->linear ? NULL : arena_take(a, R * T, sizeof(int));
    s->logits_out = m->out_ids ? arena_take(a, R * (size_t)s->Vo, f) : NULL;
    model_dec_final_ln(m, &s->fin_g, &s->fin_b);

    const size_t grp = n < ENC_GROUP ? n : ENC_GROUP;
    model_work_carve(&s->enc.work, a, c, (int)(grp * S), c->max_len, 0);
    s->enc.out = arena_take(a, grp * S * D, f);
    s->enc.kv = arena_take(a, grp * S * 2 * D, f);
    s->enc.src = arena_take(a, grp * S, sizeof(int));
    s->enc_len = arena_take(a, n, sizeof(int));
    s->enc_slot = arena_take(a, n, sizeof(int));
    s->enc.order = arena_take(a, n, sizeof(int));

    /* attention probabilities: self (R, H, T), cross (n, H, k, S) */
    size_t att = R * H * T;
    if (n * H * (size_t)max_beam * S > att) att = n * H * (size_t)max_beam * S;
    s->tmp.x = arena_take(a, R * D, f);
    s->tmp.in = arena_take(a, R * D, f);
    s->tmp.qkv = arena_take(a, R * 3 * D, f);
    s->tmp.ctx = arena_take(a, R * D, f);
    s->tmp.y = arena_take(a, R * D, f);
    s->tmp.q = arena_take(a, R * D, f);
    s->tmp.h = arena_take(a, R * F, f);
    s->tmp.att = arena_take(a, att, f);
    s->logits = arena_take(a, R * (size_t)s->V, f);
}

/* ---- the encoder side, once per batch ---- */

/* Linear cross-attention reads the sums of φ(k) vᵀ and φ(k) over the
 * source's keys (its length, s->enc_len[b]: padding stays out), computed
 * once per sentence from its K | V rows kv. */
static void cross_state(DecStep *s, DecLayer *l, int b, const float *kv)
{
    const int D = s->D, dh = D / s->H;
    float *St = l->cross_state + (size_t)b * s->lin_w, *z = St + (size_t)D * dh;
    memset(St, 0, s->lin_w * sizeof(float));
    for (int j = 0; j < s->enc_len[b]; j++)
        linattn_state_add(St, z, kv + (size_t)j * 2 * D, kv + (size_t)j * 2 * D + D, s->H, dh);
}

/* Fills every layer's cross-attention K | V (n, S, 2D) up to each
 * sentence's length (s->enc_len, where cross-attention stops). Sentences go
 * through the encoder ENC_GROUP at a time in order of length, each group
 * padded only to its own longest. A sentence's encoding does not depend on
 * its group (see model_encode). */
TfmStatus dec_step_encode(DecStep *s, const int *src, int n, int S, TfmErr *err)
{
    const int D2 = 2 * s->D;
    int *len = s->enc_len, *order = s->enc.order;
    for (int b = 0; b < n; b++) {
        s->enc_slot[b] = b;
        const int l = len[b] = model_src_len(src + (size_t)b * S, S);
        int i = b;                      /* insertion sort by length, stable */
        while (i > 0 && len[order[i - 1]] > l) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = b;
    }
    for (int g0 = 0; g0 < n; g0 += ENC_GROUP) {
        const int ng = n - g0 < ENC_GROUP ? n - g0 : ENC_GROUP;
        int Sg = 1;
        for (int i = 0; i < ng; i++)
            if (len[order[g0 + i]] > Sg) Sg = len[order[g0 + i]];
        for (int i = 0; i < ng; i++)
            memcpy(s->enc.src + (size_t)i * Sg, src + (size_t)order[g0 + i] * S,
                   (size_t)Sg * sizeof(int));
        TfmStatus st = model_encode(s->m, s->enc_pack, &s->enc.work, s->enc.src, ng,
                                    Sg, s->enc.out, err);
        if (st != TFM_OK) return st;
        for (int l = 0; l < s->m->cfg.dec_layers; l++) {
            packed_linear_forward(&s->layer[l].pk[LP_CKV], s->enc.kv, s->enc.out, ng * Sg, 0);
            for (int i = 0; i < ng; i++) {
                const float *kv = s->enc.kv + (size_t)i * Sg * D2;
                if (s->linear) {
                    cross_state(s, &s->layer[l], order[g0 + i], kv);
                    continue;
                }
                float *dst = s->layer[l].cross_kv + (size_t)order[g0 + i] * S * D2;
                memcpy(dst, kv, (size_t)Sg * D2 * sizeof(float));
            }
        }
    }
    return TFM_OK;
}

void dec_step_move_sentence(DecStep *s, int to, int from)
{
    s->enc_slot[to] = s->enc_slot[from];
    s->enc_len[to] = s->enc_len[from];
}

/* ---- one step for all rows ---- */

void dec_step_reorder(DecStep *s, const int *parent, int R, int t)
{
    if (!s->linear) {       /* the caches stay; a row takes its parent's ancestors */
        const size_t T = (size_t)s->T;
        for (int r = 0; r < R; r++)
            memcpy(s->anc_next + r * T, s->anc + (size_t)parent[r] * T, (size_t)t * sizeof(int));
        int *tmp = s->anc;
        s->anc = s->anc_next;
        s->anc_next = tmp;
        return;
    }
    const size_t used = s->lin_w, w = s->self_w;
    for (int i = 0; i < s->m->cfg.dec_layers; i++) {
        DecLayer *l = &s->layer[i];
#pragma omp parallel for schedule(static)
        for (int r = 0; r < R; r++)
            memcpy(l->cache_next + (size_t)r * w, l->cache + (size_t)parent[r] * w,
                   used * sizeof(float));
        float *tmp = l->cache;
        l->cache = l->cache_next;
        l->cache_next = tmp;
    }
}

/* Sublayer input: pre-norm LN(x), post-norm x. */
static const float *sub_in(DecStep *s, const float *x, const float *g, const float *b, int R)
{
    return sublayer_norm(s->m->cfg.norm, NORM_PRE, s->m->cfg.norm_type, s->tmp.in, NULL, NULL, x, g, b, R,
                          s->D);
}

/* s->tmp.x = post-norm LN(x + y), pre-norm x + y. Post-norm writes LN to
 * s->tmp.in, which then becomes s->tmp.x (the two swap: no copy). */
static void sub_out(DecStep *s, const float *y, const float *g, const float *b, int R)
{
    add_inplace(s->tmp.x, y, (long)R * s->D);
    const float *out = sublayer_norm(s->m->cfg.norm, NORM_POST, s->m->cfg.norm_type, s->tmp.in, NULL, NULL,
                                       s->tmp.x, g, b, R, s->D);
    if (out != s->tmp.x) {
        s->tmp.in = s->tmp.x;
        s->tmp.x = (float *)out;
    }
}

/* Linear self-attention at position t: adds this position's φ(k) vᵀ and
 * φ(k) to each row's sums (starting from zero at t = 0) and reads them with
 * φ(q). Constant time and memory per token, whatever t. */
static void linear_self_step(DecStep *s, DecLayer *l, int R, int t)
{
    const int D = s->D, dh = D / s->H;
#pragma omp parallel for schedule(static) if (R * (long)D * dh > 65536)
    for (int r = 0; r < R; r++) {
        float *St = l->cache + (size_t)r * s->self_w, *z = St + (size_t)D * dh;
        const float *qkv = s->tmp.qkv + (size_t)r * 3 * D;
        if (t == 0) memset(St, 0, s->lin_w * sizeof(float));
        linattn_state_add(St, z, qkv + D, qkv + 2 * D, s->H, dh);
        linattn_state_query(s->tmp.ctx + (size_t)r * D, qkv, St, z, s->H, dh);
    }
}

void dec_step_forward(DecStep *s, const int *prev, int n, int k, int S, const int *src, int t)
{
    const Model *m = s->m;
    const int R = n * k, D = s->D, T = s->T;
    embed_forward(s->tmp.x, prev, R, 1, m->emb_tgt, m->pos_table, t, D, sqrtf((float)D), 0, 0);
    const AttnShape self = {
        .n = R, .heads = s->H, .dh = D / s->H, .tq = 1, .tk = t + 1,
        .ldq = 3 * D, .ldk = 2 * D, .ldv = 2 * D, .ldo = D,
        .q_stride = 3 * D, .k_stride = (long)T * 2 * D, .v_stride = (long)T * 2 * D,
        .o_stride = D, .key_row = s->anc, .key_row_stride = T,
    };
    if (!s->linear)         /* each row's position t is its own */
        for (int r = 0; r < R; r++) s->anc[(size_t)r * T + t] = r;
    /* cross-attention: the k rows of a sentence are k queries on its source */
    const AttnShape cross = {
        .n = n, .heads = s->H, .dh = D / s->H, .tq = k, .tk = S,
        .ldq = D, .ldk = 2 * D, .ldv = 2 * D, .ldo = D,
        .q_stride = (long)k * D, .k_stride = (long)S * 2 * D, .v_stride = (long)S * 2 * D,
        .o_stride = (long)k * D, .key_tok = src, .key_tok_stride = S, .key_pad = TOK_PAD,
        .key_len = s->enc_len, .kv_sent = s->enc_slot,
    };
    for (int i = 0; i < m->cfg.dec_layers; i++) {
        DecLayer *l = &s->layer[i];
        const float *in = sub_in(s, s->tmp.x, l->w.ln1_g, l->w.ln1_b, R);
        packed_linear_forward(&l->pk[LP_QKV], s->tmp.qkv, in, R, 0);
        if (s->linear) {
            linear_self_step(s, l, R, t);
        } else {
            for (int r = 0; r < R; r++)      /* this position's K | V into the cache */
                memcpy(l->cache + ((size_t)r * T + t) * 2 * D, s->tmp.qkv + (size_t)r * 3 * D + D,
                       2 * D * sizeof(float));
            attention_forward(s->tmp.ctx, s->tmp.att, s->tmp.att, s->tmp.qkv, l->cache,
                              l->cache + D, &self, 0, 0);
        }
        packed_linear_forward(&l->pk[LP_O], s->tmp.y, s->tmp.ctx, R, 0);
        sub_out(s, s->tmp.y, l->w.ln1_g, l->w.ln1_b, R);

        in = sub_in(s, s->tmp.x, l->w.ln2_g, l->w.ln2_b, R);
        packed_linear_forward(&l->pk[LP_CQ], s->tmp.q, in, R, 0);
        if (s->linear) {
#pragma omp parallel for schedule(static) if (R * (long)D * (D / s->H) > 65536)
            for (int r = 0; r < R; r++) {
                const float *st = l->cross_state + (size_t)s->enc_slot[r / k] * s->lin_w;
                linattn_state_query(s->tmp.ctx + (size_t)r * D, s->tmp.q + (size_t)r * D, st,
                                    st + (size_t)D * (D / s->H), s->H, D / s->H);
            }
        } else {
            attention_forward(s->tmp.ctx, s->tmp.att, s->tmp.att, s->tmp.q, l->cross_kv,
                              l->cross_kv + D, &cross, 0, 0);
        }
        packed_linear_forward(&l->pk[LP_CO], s->tmp.y, s->tmp.ctx, R, 0);
        sub_out(s, s->tmp.y, l->w.ln2_g, l->w.ln2_b, R);

        in = sub_in(s, s->tmp.x, l->w.ln3_g, l->w.ln3_b, R);
        packed_linear_forward(&l->pk[LP_F1], s->tmp.h, in, R, 1);   /* relu(in·w1ᵀ + b1) */
        packed_linear_forward(&l->pk[LP_F2], s->tmp.y, s->tmp.h, R, 0);
        sub_out(s, s->tmp.y, l->w.ln3_g, l->w.ln3_b, R);
    }
    const float *top = s->tmp.x;
    if (m->cfg.norm == NORM_PRE) {
        norm_forward(m->cfg.norm_type, s->tmp.in, NULL, NULL, s->tmp.x, s->fin_g, s->fin_b, R, D);
        top = s->tmp.in;
    }
    /* model.output_vocab "target": the output pieces' columns only (the
     * search reads them through the model's out_ids; dec_step_spread
     * writes the whole vocabulary when asked) */
    if (s->sl) {
        shortlist_run_step(s->sl, s->logits, top, n, k);
        return;
    }
    packed_linear_forward(&s->p_out, dec_step_scores(s), top, R, 0);
    logsoftmax_rows(dec_step_scores(s), R, s->Vo);
}

float *dec_step_scores(DecStep *s)
{
    return s->m->out_ids && !s->sl ? s->logits_out : s->logits;
}

void dec_step_spread(DecStep *s, int R)
{
    const int *ids = s->m->out_ids;
    if (!ids) return;
    for (int r = 0; r < R; r++) {    /* the other pieces have probability 0 */
        float *lp = s->logits + (size_t)r * s->V;
        const float *lo = s->logits_out + (size_t)r * s->Vo;
        int v = 0;
        for (int j = 0; j < s->Vo; j++) {
            for (; v < ids[j]; v++) lp[v] = -INFINITY;
            lp[v++] = lo[j];
        }
        for (; v < s->V; v++) lp[v] = -INFINITY;
    }
}
