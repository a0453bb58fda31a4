/* decode: incremental decoder, beam search and ensembles (see decode.h;
 * the state is in decode_internal.h, sampling in decode_sample.c). */
#include "model/decode.h"
#include "model/decode_internal.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/blas.h"
#include "nn/layers.h"
#include "nn/packed_linear.h"
#include "base/sysmem.h"
#include "model/sublayer.h"

typedef struct { const float *w, *b; int in, out; } Product;

static Product layer_product(const DecLayer *l, int i, int D, int F)
{
    const Product p[LP_COUNT] = {
        [LP_QKV] = {l->w.wqkv, l->w.bqkv, D, 3 * D}, [LP_O] = {l->w.wo, l->w.bo, D, D},
        [LP_CQ] = {l->w.cwq, l->w.cbq, D, D},        [LP_CO] = {l->w.cwo, l->w.cbo, D, D},
        [LP_CKV] = {l->w.cwkv, l->w.cbkv, D, 2 * D}, [LP_F1] = {l->w.w1, l->w.b1, D, F},
        [LP_F2] = {l->w.w2, l->w.b2, F, D},
    };
    return p[i];
}

void decoder_free(Decoder *d)
{
    if (!d) return;
    if (d->layer)
        for (int i = 0; i < d->m->cfg.dec_layers; i++) {
            free(d->layer[i].cache);
            free(d->layer[i].cache_next);
            free(d->layer[i].cross_kv);
            free(d->layer[i].cross_state);
            for (int j = 0; j < LP_COUNT; j++) packed_linear_free(&d->layer[i].pk[j]);
        }
    packed_linear_free(&d->p_out);
    encoder_pack_free(d->enc_pack);
    free(d->layer);
    void *bufs[] = {d->enc_out, d->kv_tmp, d->grp_src, d->enc_len, d->enc_order, d->x, d->in,
                    d->qkv, d->ctx, d->y, d->q, d->h, d->att, d->logits, d->logits_out, d->out_w, d->beam.score, d->beam.prev, d->beam.hist, d->beam.hist_next, d->beam.parent, d->beam.cand,
                    d->beam.fin_tok, d->beam.fin_len, d->beam.fin_count, d->beam.fin_score, d->beam.fin_lp, d->beam.limit,
                    d->beam.done, d->beam.orig, d->src_buf, d->padded, d->samp, d->members, d->weights};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(d);
}

/* Allocates count * size bytes or records failure in *ok. */
static void *alloc(size_t count, size_t size, TfmErr *err, int *ok)
{
    void *p = xcalloc(count ? count : 1, size, err);
    if (!p) *ok = 0;
    return p;
}

TfmStatus decoder_init(Decoder **out, const Model *m, int max_sents, int max_beam, TfmErr *err)
{
    *out = NULL;
    const ModelConfig *c = &m->cfg;
    if (max_sents < 1 || max_beam < 1)
        return err_set(err, TFM_ERR_USAGE, "decoder needs at least one sentence and beam 1");
    /* The caches are sized for the worst case: refuse a request this
     * machine cannot hold instead of being killed halfway through. */
    const double self_row = c->attention == ATTN_LINEAR
                                ? (double)c->d_model * (c->d_model / c->heads + 1) /* S, z */
                                : c->max_len * 2.0 * c->d_model;                  /* K|V */
    double rows = (double)max_sents * max_beam, floats =
        rows * self_row * 2.0 * c->dec_layers +                        /* self caches, 2 copies */
        (double)max_sents * (c->attention == ATTN_LINEAR ? self_row     /* cross sums */
                                                           : c->max_len * 2.0 * c->d_model) *
            c->dec_layers +                                             /* or cross K|V */
        rows * ((double)c->vocab_size + c->d_ff + 8.0 * c->d_model) +
        ((7.0 * c->d_model + 2.0 * c->d_ff) * c->d_model * c->dec_layers +   /* packed weights */
         (4.0 * c->d_model + 2.0 * c->d_ff) * c->d_model * c->enc_layers +
         (double)c->vocab_size * c->d_model);
    char what[96];
    snprintf(what, sizeof what, "decoding %d sentences at once with beam %d", max_sents, max_beam);
    TfmStatus st = sysmem_check(floats * sizeof(float), what, "lower --batch-size or --beam", err);
    if (st != TFM_OK) return st;
    Decoder *d = xcalloc(1, sizeof *d, err);
    if (!d) return TFM_ERR_NOMEM;
    d->m = m;
    d->max_sents = max_sents;
    d->max_beam = max_beam;
    d->rows = max_sents * max_beam;
    d->T = c->max_len;
    d->S = c->max_len;
    d->D = c->d_model;
    d->H = c->heads;
    d->F = c->d_ff;
    d->V = c->vocab_size;
    /* linear attention keeps sums of a fixed size instead of a cache that
     * grows with the output */
    d->linear = c->attention == ATTN_LINEAR;
    d->lin_w = (size_t)d->D * (size_t)(d->D / d->H) + (size_t)d->D;
    d->self_w = d->linear ? d->lin_w : (size_t)d->T * 2 * (size_t)d->D;
    const size_t R = (size_t)d->rows, D = (size_t)d->D, T = (size_t)d->T, S = (size_t)d->S;
    const size_t n = (size_t)max_sents, k2 = 2 * (size_t)max_beam;
    int ok = 1;
    d->layer = alloc((size_t)c->dec_layers, sizeof *d->layer, err, &ok);
    for (int i = 0; ok && i < c->dec_layers; i++) {
        DecLayer *l = &d->layer[i];
        l->w = model_dec_layer_weights(m, i);
        l->cache = alloc(R, d->self_w * sizeof(float), err, &ok);
        l->cache_next = alloc(R, d->self_w * sizeof(float), err, &ok);
        /* cross-attention: softmax reads the source's K | V, linear attention
         * only their sums */
        if (d->linear) l->cross_state = alloc(n, d->lin_w * sizeof(float), err, &ok);
        else l->cross_kv = alloc(n * S, 2 * D * sizeof(float), err, &ok);
        for (int j = 0; ok && j < LP_COUNT; j++) {
            const Product p = layer_product(l, j, d->D, d->F);
            if (packed_linear_init(&l->pk[j], p.w, p.b, p.in, p.out, err) != TFM_OK) ok = 0;
        }
    }
    /* model.output_vocab "target": the product covers the output pieces'
     * rows only (out_w), and step() spreads them over the vocabulary */
    d->Vo = model_n_out(m);
    const float *out_w = m->out_proj;
    if (m->out_ids) {
        d->out_w = alloc((size_t)d->Vo, D * sizeof(float), err, &ok);
        d->logits_out = alloc(R, (size_t)d->Vo * sizeof(float), err, &ok);
        if (ok) model_gather_output(m, d->out_w);
        out_w = d->out_w;
    }
    if (ok && (packed_linear_init(&d->p_out, out_w, NULL, d->D, d->Vo, err) != TFM_OK ||
               encoder_pack_new(&d->enc_pack, m, err) != TFM_OK))
        ok = 0;
    model_dec_final_ln(m, &d->fin_g, &d->fin_b);
    size_t att = R * (size_t)d->H * T;
    if (n * (size_t)d->H * max_beam * S > att) att = n * (size_t)d->H * max_beam * S;
    const size_t grp = n < ENC_GROUP ? n : ENC_GROUP;
    d->enc_out = alloc(grp * S, D * sizeof(float), err, &ok);
    d->kv_tmp = alloc(grp * S, 2 * D * sizeof(float), err, &ok);
    d->grp_src = alloc(grp * S, sizeof(int), err, &ok);
    d->enc_len = alloc(n, sizeof(int), err, &ok);
    d->enc_order = alloc(n, sizeof(int), err, &ok);
    d->x = alloc(R, D * sizeof(float), err, &ok);
    d->in = alloc(R, D * sizeof(float), err, &ok);
    d->qkv = alloc(R, 3 * D * sizeof(float), err, &ok);
    d->ctx = alloc(R, D * sizeof(float), err, &ok);
    d->y = alloc(R, D * sizeof(float), err, &ok);
    d->q = alloc(R, D * sizeof(float), err, &ok);
    d->h = alloc(R, (size_t)d->F * sizeof(float), err, &ok);
    d->att = alloc(att, sizeof(float), err, &ok);
    d->logits = alloc(R, (size_t)d->V * sizeof(float), err, &ok);
    d->beam.score = alloc(R, sizeof(float), err, &ok);
    d->beam.prev = alloc(R, sizeof(int), err, &ok);
    d->beam.parent = alloc(R, sizeof(int), err, &ok);
    d->beam.hist = alloc(R * T, sizeof(int), err, &ok);
    d->beam.hist_next = alloc(R * T, sizeof(int), err, &ok);
    d->beam.cand = alloc(n * k2, sizeof(Cand), err, &ok);
    d->samp = alloc((size_t)c->vocab_size, sizeof(SampItem), err, &ok);
    d->beam.fin_tok = alloc(n * k2 * T, sizeof(int), err, &ok);
    d->beam.fin_len = alloc(n * k2, sizeof(int), err, &ok);
    d->beam.fin_count = alloc(n, sizeof(int), err, &ok);
    d->beam.fin_score = alloc(n * k2, sizeof(float), err, &ok);
    d->beam.fin_lp = alloc(n * k2, sizeof(float), err, &ok);
    d->beam.limit = alloc(n, sizeof(int), err, &ok);
    d->beam.done = alloc(n, 1, err, &ok);
    d->beam.orig = alloc(n, sizeof(int), err, &ok);
    d->src_buf = alloc(n * S, sizeof(int), err, &ok);
    d->padded = alloc(n * S, sizeof(int), err, &ok);
    if (!ok) {
        decoder_free(d);
        return TFM_ERR_NOMEM;
    }
    *out = d;
    return TFM_OK;
}

/* ---- one decoder step for all rows ---- */

/* Sublayer input: pre-norm LN(x), post-norm x. */
static const float *sub_in(Decoder *d, const float *x, const float *g, const float *b, int R)
{
    return sublayer_input(d->m->cfg.norm, d->m->cfg.norm_type, d->in, NULL, NULL, x, g, b, R, d->D);
}

/* x = post-norm LN(x + y), pre-norm x + y. */
static void sub_out(Decoder *d, float *x, const float *y, const float *g, const float *b, int R)
{
    const long nd = (long)R * d->D;
    add_inplace(x, y, nd);
    const float *out = sublayer_output(d->m->cfg.norm, d->m->cfg.norm_type, d->in, NULL, NULL, x, g, b, R, d->D);
    if (out != x) memcpy(x, out, (size_t)nd * sizeof(float));
}

/* Linear self-attention at position t: adds this position's φ(k) vᵀ and
 * φ(k) to each row's sums (starting from zero at t = 0) and reads them with
 * φ(q). Constant time and memory per token, whatever t. */
static void linear_self_step(Decoder *d, DecLayer *l, int R, int t)
{
    const int D = d->D, dh = D / d->H;
#pragma omp parallel for schedule(static) if (R * (long)D * dh > 65536)
    for (int r = 0; r < R; r++) {
        float *S = l->cache + (size_t)r * d->self_w, *z = S + (size_t)D * dh;
        const float *qkv = d->qkv + (size_t)r * 3 * D;
        if (t == 0) memset(S, 0, d->lin_w * sizeof(float));
        linattn_state_add(S, z, qkv + D, qkv + 2 * D, d->H, dh);
        linattn_state_query(d->ctx + (size_t)r * D, qkv, S, z, d->H, dh);
    }
}

/* Computes log-probabilities (R, V) of the next token for every row from
 * its previous token d->beam.prev at position t; appends K/V at t to the caches. */
static void step(Decoder *d, int n, int k, int S, const int *src, int t)
{
    const Model *m = d->m;
    const int R = n * k, D = d->D, T = d->T;
    embed_forward(d->x, d->beam.prev, R, 1, m->emb_tgt, m->pos_table, t, D, sqrtf((float)D), 0,
                  0);
    const AttnShape self = {
        .n = R, .heads = d->H, .dh = D / d->H, .tq = 1, .tk = t + 1,
        .ldq = 3 * D, .ldk = 2 * D, .ldv = 2 * D, .ldo = D,
        .q_stride = 3 * D, .k_stride = (long)T * 2 * D, .v_stride = (long)T * 2 * D,
        .o_stride = D,
    };
    /* cross-attention: the k rows of a sentence are k queries on its source */
    const AttnShape cross = {
        .n = n, .heads = d->H, .dh = D / d->H, .tq = k, .tk = S,
        .ldq = D, .ldk = 2 * D, .ldv = 2 * D, .ldo = D,
        .q_stride = (long)k * D, .k_stride = (long)S * 2 * D, .v_stride = (long)S * 2 * D,
        .o_stride = (long)k * D, .key_tok = src, .key_tok_stride = S, .key_pad = TOK_PAD,
        .key_len = d->enc_len,
    };
    for (int i = 0; i < m->cfg.dec_layers; i++) {
        DecLayer *l = &d->layer[i];
        const float *in = sub_in(d, d->x, l->w.ln1_g, l->w.ln1_b, R);
        packed_linear_forward(&l->pk[LP_QKV], d->qkv, in, R, 0);
        if (d->linear) {
            linear_self_step(d, l, R, t);
        } else {
            for (int r = 0; r < R; r++)      /* this position's K | V into the cache */
                memcpy(l->cache + ((size_t)r * T + t) * 2 * D, d->qkv + (size_t)r * 3 * D + D,
                       2 * D * sizeof(float));
            attention_forward(d->ctx, d->att, d->att, d->qkv, l->cache, l->cache + D, &self, 0,
                              0);
        }
        packed_linear_forward(&l->pk[LP_O], d->y, d->ctx, R, 0);
        sub_out(d, d->x, d->y, l->w.ln1_g, l->w.ln1_b, R);

        in = sub_in(d, d->x, l->w.ln2_g, l->w.ln2_b, R);
        packed_linear_forward(&l->pk[LP_CQ], d->q, in, R, 0);
        if (d->linear) {
#pragma omp parallel for schedule(static) if (R * (long)D * (D / d->H) > 65536)
            for (int r = 0; r < R; r++) {
                const float *st = l->cross_state + (size_t)(r / k) * d->lin_w;
                linattn_state_query(d->ctx + (size_t)r * D, d->q + (size_t)r * D, st,
                                    st + (size_t)D * (D / d->H), d->H, D / d->H);
            }
        } else {
            attention_forward(d->ctx, d->att, d->att, d->q, l->cross_kv, l->cross_kv + D,
                              &cross, 0, 0);
        }
        packed_linear_forward(&l->pk[LP_CO], d->y, d->ctx, R, 0);
        sub_out(d, d->x, d->y, l->w.ln2_g, l->w.ln2_b, R);

        in = sub_in(d, d->x, l->w.ln3_g, l->w.ln3_b, R);
        packed_linear_forward(&l->pk[LP_F1], d->h, in, R, 1);   /* relu(in·w1ᵀ + b1) */
        packed_linear_forward(&l->pk[LP_F2], d->y, d->h, R, 0);
        sub_out(d, d->x, d->y, l->w.ln3_g, l->w.ln3_b, R);
    }
    const float *top = d->x;
    if (m->cfg.norm == NORM_PRE) {
        norm_forward(d->m->cfg.norm_type, d->in, NULL, NULL, d->x, d->fin_g, d->fin_b, R, D);
        top = d->in;
    }
    if (!m->out_ids) {
        packed_linear_forward(&d->p_out, d->logits, top, R, 0);
        logsoftmax_rows(d->logits, R, d->V);
        return;
    }
    /* the other pieces have probability 0 */
    packed_linear_forward(&d->p_out, d->logits_out, top, R, 0);
    logsoftmax_rows(d->logits_out, R, d->Vo);
    for (int r = 0; r < R; r++) {
        float *lp = d->logits + (size_t)r * d->V;
        const float *lo = d->logits_out + (size_t)r * d->Vo;
        for (int v = 0; v < d->V; v++) lp[v] = -INFINITY;
        for (int j = 0; j < d->Vo; j++) lp[m->out_ids[j]] = lo[j];
    }
}

/* ---- beam bookkeeping ---- */

static float length_penalty(int len, float alpha)
{
    return alpha == 0.0f ? 1.0f : powf((5.0f + (float)len) / 6.0f, alpha);
}

/* Keeps the best `want` candidates in c[0..*have), sorted by score desc. */
static void offer(Cand *c, int *have, int want, float score, int row, int tok)
{
    if (*have == want && score <= c[want - 1].score) return;
    int i = *have < want ? (*have)++ : want - 1;
    while (i > 0 && c[i - 1].score < score) {
        c[i] = c[i - 1];
        i--;
    }
    c[i] = (Cand){score, row, tok};
}

void decoder_finish(Decoder *d, int b, int k, const int *tokens, int len, float logprob,
                    int out_len, float alpha)
{
    const int o = d->beam.orig[b];
    int slot = o * 2 * k + d->beam.fin_count[o]++;
    memcpy(d->beam.fin_tok + (size_t)slot * d->T, tokens, (size_t)len * sizeof(int));
    d->beam.fin_len[slot] = len;
    d->beam.fin_lp[slot] = logprob;
    d->beam.fin_score[slot] = logprob / length_penalty(out_len, alpha);
}

enum { CHUNK = 32 };

/* max of p[0..CHUNK): eight lanes, so the compiler makes vector max of it */
static inline float chunk_max(const float *p)
{
    float m[8];
    for (int i = 0; i < 8; i++) m[i] = p[i];
    for (int j = 8; j < CHUNK; j += 8)
        for (int i = 0; i < 8; i++) m[i] = p[j + i] > m[i] ? p[j + i] : m[i];
    float mx = m[0];
    for (int i = 1; i < 8; i++) mx = m[i] > mx ? m[i] : mx;
    return mx;
}

/* Advances sentence b after the step at position t; rows of the next step
 * are written to parent/prev/score at the same row indices. */
/* --no-repeat-ngram (fairseq's rule): a token that would complete an
 * n-gram the row's history h[0..t) already holds is banned, by setting its
 * log-probability to -inf. The history is short: a scan per row is enough. */
void decoder_ban_repeats(float *lp, const int *h, int t, int n)
{
    if (n <= 0 || t < n - 1) return;
    const int *tail = h + t - (n - 1);          /* the last n-1 tokens */
    for (int i = 0; i + n - 1 < t; i++)
        if (memcmp(h + i, tail, sizeof(int) * (size_t)(n - 1)) == 0) lp[h[i + n - 1]] = -INFINITY;
}

static void advance(Decoder *d, int b, int k, int nbest, int t, float alpha, int no_repeat)
{
    const int V = d->V, T = d->T, base = b * k;
    Cand *c = d->beam.cand + (size_t)b * 2 * k;
    int have = 0;
    for (int r = base; r < base + k; r++) {
        const float s = d->beam.score[r];
        if (s == -INFINITY) continue;
        float *lp = d->logits + (size_t)r * V;
        decoder_ban_repeats(lp, d->beam.hist + (size_t)r * T, t, no_repeat);
        for (int v = 0; v < V; v++) {
            if (v == TOK_PAD || v == TOK_BOS) continue;
            /* Once 2k candidates are kept, a chunk whose best cannot beat
             * the worst kept one is skipped whole (s + x is monotonic in
             * x, so this drops only what offer would reject). */
            if (v % CHUNK == 0 && have == 2 * k && v + CHUNK <= V) {
                if (s + chunk_max(lp + v) <= c[have - 1].score) {
                    v += CHUNK - 1;
                    continue;
                }
            }
            offer(c, &have, 2 * k, s + lp[v], r, v);
        }
    }
    const bool last = t + 1 >= d->beam.limit[b];
    int live = 0;
    for (int i = 0; i < have; i++) {
        const int *h = d->beam.hist + (size_t)c[i].row * T;
        if (c[i].tok == TOK_EOS) {
            if (i < k) decoder_finish(d, b, k, h, t, c[i].score, t + 1, alpha);
            continue;
        }
        if (live == k) continue;
        if (last) {
            /* out of length: this continuation ends here without </s> */
            if (d->beam.fin_count[d->beam.orig[b]] < 2 * k) {
                int *tmp = d->beam.hist_next + (size_t)(base + live) * T;
                memcpy(tmp, h, (size_t)t * sizeof(int));
                tmp[t] = c[i].tok;
                decoder_finish(d, b, k, tmp, t + 1, c[i].score, t + 1, alpha);
            }
            live++;
            continue;
        }
        int r = base + live++;
        d->beam.parent[r] = c[i].row;
        d->beam.prev[r] = c[i].tok;
        d->beam.score[r] = c[i].score;
    }
    if (last) live = 0;
    for (int r = base + live; r < base + k; r++) {
        d->beam.parent[r] = r;
        d->beam.prev[r] = TOK_PAD;
        d->beam.score[r] = -INFINITY;
    }
    /* done: k finished, or no live hypothesis can beat the nbest-th best
     * finished one (a log-probability only falls; the penalty divides it by
     * at most lp(limit) for alpha >= 0), so the n-best list is final */
    const int o = d->beam.orig[b];
    float nth_fin = -INFINITY;
    if (d->beam.fin_count[o] >= nbest) {
        float top[2 * 1024];
        int cnt = d->beam.fin_count[o];
        memcpy(top, d->beam.fin_score + o * 2 * k, sizeof(float) * cnt);
        for (int i = 0; i < nbest; i++) {          /* partial selection sort */
            int best = i;
            for (int j = i + 1; j < cnt; j++)
                if (top[j] > top[best]) best = j;
            float tmp = top[i];
            top[i] = top[best];
            top[best] = tmp;
        }
        nth_fin = top[nbest - 1];
    }
    float best_live = -INFINITY;
    for (int r = base; r < base + live; r++) {
        float bound = alpha >= 0 ? d->beam.score[r] / length_penalty(d->beam.limit[b], alpha)
                                 : d->beam.score[r] / length_penalty(t + 2, alpha);
        best_live = fmaxf(best_live, bound);
    }
    if (last || live == 0 || d->beam.fin_count[o] >= k || nth_fin >= best_live) d->beam.done[b] = 1;
}

/* Moves histories (through position t) to the new rows' parents. */
static void reorder_history(Decoder *d, int R, int t)
{
    const int T = d->T;
    for (int r = 0; r < R; r++) {
        int p = d->beam.parent[r];
        memcpy(d->beam.hist_next + (size_t)r * T, d->beam.hist + (size_t)p * T, (size_t)t * sizeof(int));
        d->beam.hist_next[(size_t)r * T + t] = d->beam.prev[r];
    }
    int *h = d->beam.hist;
    d->beam.hist = d->beam.hist_next;
    d->beam.hist_next = h;
}

/* Moves every layer's self-attention cache (positions < t; linear
 * attention: its sums) to the parents. */
static void reorder_cache(Decoder *d, const int *parent, int R, int t)
{
    const size_t used = d->linear ? d->lin_w : (size_t)t * 2 * d->D, w = d->self_w;
    for (int i = 0; i < d->m->cfg.dec_layers; i++) {
        DecLayer *l = &d->layer[i];
#pragma omp parallel for schedule(static)
        for (int r = 0; r < R; r++)
            memcpy(l->cache_next + (size_t)r * w, l->cache + (size_t)parent[r] * w,
                   used * sizeof(float));
        float *tmp = l->cache;
        l->cache = l->cache_next;
        l->cache_next = tmp;
    }
}

void decoder_update_weights(Decoder *d)
{
    const Model *m = d->m;
    for (int i = 0; i < m->cfg.dec_layers; i++)
        for (int j = 0; j < LP_COUNT; j++) {
            const Product p = layer_product(&d->layer[i], j, d->D, d->F);
            packed_linear_update(&d->layer[i].pk[j], p.w, p.b);
        }
    if (m->out_ids) model_gather_output(m, d->out_w);
    packed_linear_update(&d->p_out, m->out_ids ? d->out_w : m->out_proj, NULL);
    encoder_pack_update(d->enc_pack, m);
}

/* Linear cross-attention reads the sums of φ(k) vᵀ and φ(k) over the
 * source's keys (its length, d->enc_len[b]: padding stays out), computed
 * once per sentence from its K | V rows kv. */
static void cross_state(Decoder *d, DecLayer *l, int b, const float *kv)
{
    const int D = d->D, dh = D / d->H;
    float *S = l->cross_state + (size_t)b * d->lin_w, *z = S + (size_t)D * dh;
    memset(S, 0, d->lin_w * sizeof(float));
    for (int j = 0; j < d->enc_len[b]; j++)
        linattn_state_add(S, z, kv + (size_t)j * 2 * D, kv + (size_t)j * 2 * D + D, d->H, dh);
}

/* Encodes src (n, S) and fills every layer's cross-attention K | V (n, S,
 * 2D) up to each sentence's length (d->enc_len, where cross-attention
 * stops). Sentences go through the encoder ENC_GROUP at a time in order of
 * length, each group padded only to its own longest. A sentence's encoding
 * does not depend on its group (see model_encode). */
static TfmStatus encode_batch(Decoder *d, const int *src, int n, int S, TfmErr *err)
{
    const int D2 = 2 * d->D;
    int *len = d->enc_len, *order = d->enc_order;
    for (int b = 0; b < n; b++) {
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
            memcpy(d->grp_src + (size_t)i * Sg, src + (size_t)order[g0 + i] * S,
                   (size_t)Sg * sizeof(int));
        TfmStatus st = model_encode((Model *)d->m, d->enc_pack, d->grp_src, ng, Sg, d->enc_out,
                                    err);
        if (st != TFM_OK) return st;
        for (int l = 0; l < d->m->cfg.dec_layers; l++) {
            packed_linear_forward(&d->layer[l].pk[LP_CKV], d->kv_tmp, d->enc_out, ng * Sg, 0);
            for (int i = 0; i < ng; i++) {
                const float *kv = d->kv_tmp + (size_t)i * Sg * D2;
                if (d->linear) {
                    cross_state(d, &d->layer[l], order[g0 + i], kv);
                    continue;
                }
                float *dst = d->layer[l].cross_kv + (size_t)order[g0 + i] * S * D2;
                memcpy(dst, kv, (size_t)Sg * D2 * sizeof(float));
            }
        }
    }
    return TFM_OK;
}

TfmStatus decoder_set_ensemble(Decoder *d, Decoder *const *members, int n,
                               const float *weights, TfmErr *err)
{
    for (int i = 0; i < n; i++)
        if (members[i]->V != d->V || members[i]->T != d->T || members[i]->max_sents < d->max_sents ||
            members[i]->max_beam < d->max_beam || members[i]->n_members)
            return err_set(err, TFM_ERR_USAGE, "decoder: ensemble member %d does not match "
                           "(vocabulary %d vs %d, positions %d vs %d)", i + 1, members[i]->V, d->V,
                           members[i]->T, d->T);
    double sum = 0;
    for (int i = 0; i <= n; i++) sum += weights ? weights[i] : 1.0;
    if (!(sum > 0)) return err_set(err, TFM_ERR_USAGE, "decoder: ensemble weights sum to %g", sum);
    free(d->members);
    free(d->weights);
    d->members = xcalloc((size_t)n + 1, sizeof *d->members, err);
    d->weights = xcalloc((size_t)n + 1, sizeof *d->weights, err);
    if (!d->members || !d->weights) return TFM_ERR_NOMEM;
    for (int i = 0; i < n; i++) d->members[i] = members[i];
    for (int i = 0; i <= n; i++) d->weights[i] = (float)((weights ? weights[i] : 1.0) / sum);
    d->n_members = n;
    return TFM_OK;
}

TfmStatus decoder_begin(Decoder *d, const int *src, int n, int S, int k, TfmErr *err)
{
    if (n < 1 || n > d->max_sents || k < 1 || k > d->max_beam || S < 1 || S > d->S)
        return err_set(err, TFM_ERR_USAGE, "decoder: cannot take %d sentences of length %d "
                       "with beam %d", n, S, k);
    TfmStatus st = encode_batch(d, src, n, S, err);
    if (st != TFM_OK) return st;
    for (int i = 0; i < d->n_members; i++)
        if ((st = decoder_begin(d->members[i], src, n, S, k, err)) != TFM_OK) return st;
    d->cur_src = src;
    d->cur_n = n;
    d->cur_S = S;
    d->cur_k = k;
    d->cur_rows = n * k;
    return TFM_OK;
}

const float *decoder_step(Decoder *d, const int *prev, const int *parent, int t)
{
    const int R = d->cur_n * d->cur_k;
    if (parent && t > 0) reorder_cache(d, parent, R, t);
    if (prev != d->beam.prev) memcpy(d->beam.prev, prev, (size_t)R * sizeof(int));
    step(d, d->cur_n, d->cur_k, d->cur_S, d->cur_src, t);
    if (d->n_members > 0) {
        /* the weighted mean of the members' log-probabilities (Marian's
         * ensembles do the same; the mean is not renormalised) */
        const size_t nv = (size_t)R * d->V;
        const float w0 = d->weights[0];
        /* a member of weight 0 has no say, not even its -inf for the pieces
         * it cannot write (model.output_vocab "target"): 0 · -inf is NaN */
        for (size_t i = 0; i < nv; i++) d->logits[i] = w0 == 0 ? 0 : w0 * d->logits[i];
        for (int m = 0; m < d->n_members; m++) {
            Decoder *e = d->members[m];
            e->cur_src = d->cur_src;        /* compaction moves d's copy of the batch */
            const float *lp = decoder_step(e, prev, parent, t);
            const float w = d->weights[m + 1];
            if (w != 0)
                for (size_t i = 0; i < nv; i++) d->logits[i] += w * lp[i];
        }
    }
    return d->logits;
}

/* Removes finished sentences from the batch: the live ones move down to
 * indices 0.. in order. Rows are not moved here: parent[] of a new row
 * names its old row, and the next step's reorder moves histories and
 * caches (a copy beam search makes anyway). */
static void compact(Decoder *d, int k)
{
    const int S = d->cur_S, D2 = 2 * d->D;
    int j = 0;
    for (int b = 0; b < d->cur_n; b++) {
        if (d->beam.done[b]) continue;
        if (j != b) {
            memmove(d->src_buf + (size_t)j * S, d->src_buf + (size_t)b * S, sizeof(int) * S);
            for (int i = 0; i < d->m->cfg.dec_layers; i++) {
                float *kv = d->layer[i].cross_kv, *cs = d->layer[i].cross_state;
                if (kv) memmove(kv + (size_t)j * S * D2, kv + (size_t)b * S * D2, sizeof(float) * S * D2);
                if (cs) memmove(cs + j * d->lin_w, cs + b * d->lin_w, sizeof(float) * d->lin_w);
            }
            for (int m = 0; m < d->n_members; m++) {  /* their copies of the batch too */
                Decoder *e = d->members[m];
                const int E2 = 2 * e->D;
                for (int i = 0; i < e->m->cfg.dec_layers; i++) {
                    float *kv = e->layer[i].cross_kv, *cs = e->layer[i].cross_state;
                    if (kv) memmove(kv + (size_t)j * S * E2, kv + (size_t)b * S * E2, sizeof(float) * S * E2);
                    if (cs) memmove(cs + j * e->lin_w, cs + b * e->lin_w, sizeof(float) * e->lin_w);
                }
                e->enc_len[j] = e->enc_len[b];
            }
            d->beam.limit[j] = d->beam.limit[b];
            d->enc_len[j] = d->enc_len[b];
            d->beam.orig[j] = d->beam.orig[b];
            d->beam.done[j] = 0;
            for (int jj = 0; jj < k; jj++) {
                d->beam.parent[j * k + jj] = d->beam.parent[b * k + jj];
                d->beam.prev[j * k + jj] = d->beam.prev[b * k + jj];
                d->beam.score[j * k + jj] = d->beam.score[b * k + jj];
            }
        }
        j++;
    }
    d->cur_n = j;
    for (int m = 0; m < d->n_members; m++) d->members[m]->cur_n = j;
}

static int cmp_hyp(const void *a, const void *b)
{
    const Hypothesis *x = a, *y = b;
    return x->score > y->score ? -1 : x->score < y->score;
}

TfmStatus decoder_run(Decoder *d, const int *src, int n, int S, const DecodeOptions *opt,
                      Hypothesis *out, TfmErr *err)
{
    const int k = opt->beam;
    if (opt->sample && (k != 1 || !(opt->temperature > 0) || !(opt->top_p > 0)))
        return err_set(err, TFM_ERR_USAGE, "decoder: sampling needs beam 1, temperature > 0 "
                       "and top_p > 0");
    if (opt->nbest < 1 || opt->nbest > k)
        return err_set(err, TFM_ERR_USAGE, "decoder: nbest %d must be in [1, beam %d]",
                       opt->nbest, k);
    TfmStatus st = decoder_begin(d, src, n, S, k, err);
    if (st != TFM_OK) return st;
    int max_limit = 0;
    memcpy(d->src_buf, src, sizeof(int) * (size_t)n * S);
    d->cur_src = d->src_buf;
    for (int b = 0; b < n; b++) {
        int len = 0;
        while (len < S && src[(size_t)b * S + len] != TOK_PAD && src[(size_t)b * S + len] != TOK_EOS)
            len++;
        double lim = (double)opt->max_len_a * len + opt->max_len_b;
        d->beam.limit[b] = lim < 1 ? 1 : lim > d->T ? d->T : (int)lim;
        if (d->beam.limit[b] > max_limit) max_limit = d->beam.limit[b];
        d->beam.done[b] = 0;
        d->beam.orig[b] = b;
        d->beam.fin_count[b] = 0;
        for (int j = 0; j < k; j++) {
            int r = b * k + j;
            d->beam.score[r] = j == 0 ? 0.0f : -INFINITY;   /* one live start per sentence */
            d->beam.prev[r] = TOK_BOS;
            d->beam.parent[r] = r;
        }
    }
    bool moved = false;         /* rows changed places since the last step */
    for (int t = 0; t < max_limit; t++) {
        decoder_step(d, d->beam.prev, moved ? d->beam.parent : NULL, t);
        int active = 0;
        for (int b = 0; b < d->cur_n; b++) {
            if (d->beam.done[b]) {       /* waiting for compaction: rows stay idle */
                for (int r = b * k; r < (b + 1) * k; r++) {
                    d->beam.parent[r] = r;
                    d->beam.prev[r] = TOK_PAD;
                    d->beam.score[r] = -INFINITY;
                }
                continue;
            }
            if (opt->sample) decoder_sample_advance(d, b, t, opt);
            else advance(d, b, k, opt->nbest, t, opt->alpha, opt->no_repeat_ngram);
            active += !d->beam.done[b];
        }
        if (!active) break;
        /* Drop finished sentences once a quarter of the batch is done, so
         * the copies of their cross-attention keys stay linear overall. */
        if (active * 4 <= d->cur_n * 3) compact(d, k);
        moved = k > 1 || d->cur_n * k != d->cur_rows;
        reorder_history(d, d->cur_n * k, t);
        d->cur_rows = d->cur_n * k;
    }
    for (int b = 0; b < n; b++) {
        Hypothesis *h = out + (size_t)b * opt->nbest;
        int cnt = d->beam.fin_count[b];
        Hypothesis all[2 * 1024];
        for (int i = 0; i < cnt; i++) {
            int slot = b * 2 * k + i;
            all[i] = (Hypothesis){d->beam.fin_tok + (size_t)slot * d->T, d->beam.fin_len[slot],
                                  d->beam.fin_score[slot], d->beam.fin_lp[slot]};
        }
        qsort(all, (size_t)cnt, sizeof *all, cmp_hyp);
        for (int i = 0; i < opt->nbest; i++)
            h[i] = i < cnt ? all[i] : (Hypothesis){NULL, 0, -INFINITY, -INFINITY};
    }
    return TFM_OK;
}

TfmStatus decoder_translate(Decoder *d, const int *const *sents, const int *lens, int n,
                            const DecodeOptions *opt, Hypothesis *out, TfmErr *err)
{
    if (n < 1 || n > d->max_sents)
        return err_set(err, TFM_ERR_USAGE, "decoder: %d sentences (at most %d at once)", n,
                       d->max_sents);
    int S = 1;
    for (int b = 0; b < n; b++) {
        if (lens[b] < 0 || lens[b] + 1 > d->S)
            return err_set(err, TFM_ERR_FORMAT, "decoder: a sentence of %d tokens (at most %d)",
                           lens[b], d->S - 1);
        if (lens[b] + 1 > S) S = lens[b] + 1;
    }
    memset(d->padded, 0, sizeof(int) * (size_t)n * S);      /* TOK_PAD */
    for (int b = 0; b < n; b++) {
        memcpy(d->padded + (size_t)b * S, sents[b], sizeof(int) * (size_t)lens[b]);
        d->padded[(size_t)b * S + lens[b]] = TOK_EOS;
    }
    return decoder_run(d, d->padded, n, S, opt, out, err);
}
