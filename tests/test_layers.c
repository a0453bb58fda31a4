/* test_layers: finite-difference checks of linear, layernorm, attention (with
 * padding and causal masks) and the FFN, plus mask semantics. */
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "layers.h"
#include "model.h"
#include "test.h"

/* ---- linear ---- */

enum { LN_ROWS = 5, L_IN = 7, L_OUT = 6 };

typedef struct {
    float x[LN_ROWS * L_IN], w[L_OUT * L_IN], b[L_OUT], y[LN_ROWS * L_OUT], r[LN_ROWS * L_OUT];
} LinCtx;

static double lin_obj(void *p)
{
    LinCtx *c = p;
    linear_forward(c->y, c->x, c->w, c->b, LN_ROWS, L_IN, L_OUT);
    return gc_dot(c->y, c->r, LN_ROWS * L_OUT);
}

TEST(linear_gradcheck)
{
    LinCtx c;
    Rng rng;
    rng_seed(&rng, 1);
    gc_fill(c.x, LN_ROWS * L_IN, &rng, -1, 1);
    gc_fill(c.w, L_OUT * L_IN, &rng, -1, 1);
    gc_fill(c.b, L_OUT, &rng, -1, 1);
    gc_fill(c.r, LN_ROWS * L_OUT, &rng, -1, 1);
    /* forward against a plain loop */
    lin_obj(&c);
    for (int i = 0; i < LN_ROWS; i++)
        for (int o = 0; o < L_OUT; o++) {
            double s = c.b[o];
            for (int k = 0; k < L_IN; k++) s += (double)c.x[i * L_IN + k] * c.w[o * L_IN + k];
            CHECK_NEAR(c.y[i * L_OUT + o], s, 1e-5);
        }
    /* backward accumulates: start from 1 and subtract it afterwards */
    float dx[LN_ROWS * L_IN], dw[L_OUT * L_IN], db[L_OUT];
    for (int i = 0; i < LN_ROWS * L_IN; i++) dx[i] = 1;
    memset(dw, 0, sizeof dw);
    memset(db, 0, sizeof db);
    linear_backward(dx, dw, db, c.r, c.x, c.w, LN_ROWS, L_IN, L_OUT);
    for (int i = 0; i < LN_ROWS * L_IN; i++) dx[i] -= 1;
    GcReport rep = {0};
    gc_check(&rep, "dx", c.x, dx, LN_ROWS * L_IN, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dw", c.w, dw, L_OUT * L_IN, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "db", c.b, db, L_OUT, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
}

/* ---- layernorm ---- */

enum { LR = 4, LD = 12 };

typedef struct {
    float x[LR * LD], g[LD], b[LD], y[LR * LD], r[LR * LD], mean[LR], rstd[LR];
} LnCtx;

static double ln_obj(void *p)
{
    LnCtx *c = p;
    layernorm_forward(c->y, c->mean, c->rstd, c->x, c->g, c->b, LR, LD);
    return gc_dot(c->y, c->r, LR * LD);
}

TEST(layernorm_gradcheck)
{
    LnCtx c;
    Rng rng;
    rng_seed(&rng, 2);
    gc_fill(c.x, LR * LD, &rng, -2, 3);
    gc_fill(c.g, LD, &rng, 0.5f, 1.5f);
    gc_fill(c.b, LD, &rng, -1, 1);
    gc_fill(c.r, LR * LD, &rng, -1, 1);
    ln_obj(&c);
    /* with g = 1, b = 0 every row has mean 0 and variance var/(var + eps) */
    float y1[LR * LD], ones[LD], zeros[LD];
    for (int j = 0; j < LD; j++) ones[j] = 1, zeros[j] = 0;
    layernorm_forward(y1, NULL, NULL, c.x, ones, zeros, LR, LD);
    for (int r = 0; r < LR; r++) {
        double s = 0, s2 = 0;
        for (int j = 0; j < LD; j++) s += y1[r * LD + j], s2 += (double)y1[r * LD + j] * y1[r * LD + j];
        CHECK_NEAR(s / LD, 0.0, 1e-6);
        CHECK_NEAR(s2 / LD, 1.0, 1e-3);   /* var/(var + eps) */
    }
    float dx[LR * LD] = {0}, dg[LD] = {0}, db[LD] = {0};
    layernorm_backward(dx, dg, db, c.r, c.x, c.mean, c.rstd, c.g, LR, LD);
    GcReport rep = {0};
    gc_check(&rep, "dx", c.x, dx, LR * LD, ln_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dg", c.g, dg, LD, ln_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "db", c.b, db, LD, ln_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
}

/* ---- attention ---- */

enum { AN = 3, AH = 2, ADH = 4, AD = AH * ADH, ATQ = 5, ATK = 6 };

typedef struct {
    float q[AN * ATQ * AD], k[AN * ATK * AD], v[AN * ATK * AD];
    float out[AN * ATQ * AD], r[AN * ATQ * AD];
    float att[AN * AH * ATQ * ATK], att_d[AN * AH * ATQ * ATK];
    AttnShape s;
    float p;
    uint64_t seed;
} AttCtx;

static double att_obj(void *p)
{
    AttCtx *c = p;
    attention_forward(c->out, c->att, c->p > 0 ? c->att_d : c->att, c->q, c->k, c->v, &c->s,
                      c->p, c->seed);
    return gc_dot(c->out, c->r, AN * ATQ * AD);
}

static void att_case(int causal, float p, uint64_t seed)
{
    static const int keys[AN * ATK] = {
        5, 6, 7, 8, 9, 3,              /* no padding */
        5, 6, 3, TOK_PAD, TOK_PAD, TOK_PAD,
        TOK_PAD, TOK_PAD, TOK_PAD, TOK_PAD, TOK_PAD, TOK_PAD, /* all masked: zeros */
    };
    AttCtx *c = calloc(1, sizeof *c);
    Rng rng;
    rng_seed(&rng, seed);
    gc_fill(c->q, AN * ATQ * AD, &rng, -1.5f, 1.5f);
    gc_fill(c->k, AN * ATK * AD, &rng, -1.5f, 1.5f);
    gc_fill(c->v, AN * ATK * AD, &rng, -1, 1);
    gc_fill(c->r, AN * ATQ * AD, &rng, -1, 1);
    c->p = p;
    c->seed = seed * 77;
    c->s = (AttnShape){
        .n = AN, .heads = AH, .dh = ADH, .tq = ATQ, .tk = ATK,
        .ldq = AD, .ldk = AD, .ldv = AD, .ldo = AD,
        .q_stride = ATQ * AD, .k_stride = ATK * AD, .v_stride = ATK * AD, .o_stride = ATQ * AD,
        .key_tok = keys, .key_tok_stride = ATK, .causal = causal,
    };
    att_obj(c);
    /* masks: probabilities of masked keys are 0, visible rows sum to 1,
     * a sentence with every key masked gives zeros (not NaN) */
    for (int b = 0; b < AN; b++)
        for (int h = 0; h < AH; h++)
            for (int i = 0; i < ATQ; i++) {
                const float *row = c->att + ((b * AH + h) * ATQ + i) * ATK;
                double s = 0;
                int any = 0;
                for (int j = 0; j < ATK; j++) {
                    int vis = keys[b * ATK + j] != TOK_PAD && (!causal || j <= i + ATK - ATQ);
                    if (!vis) CHECK(row[j] == 0.0f);
                    any |= vis;
                    s += row[j];
                }
                CHECK_NEAR(s, any ? 1.0 : 0.0, 1e-5);
            }
    for (int i = 0; i < ATQ * AD; i++) CHECK(c->out[2 * ATQ * AD + i] == 0.0f);

    float *dq = calloc(AN * ATQ * AD, sizeof *dq), *dk = calloc(AN * ATK * AD, sizeof *dk);
    float *dv = calloc(AN * ATK * AD, sizeof *dv), *datt = calloc(AN * AH * ATQ * ATK, 4);
    attention_backward(dq, dk, dv, datt, c->r, c->att, p > 0 ? c->att_d : c->att, c->q, c->k,
                       c->v, &c->s, p);
    GcReport rep = {0};
    gc_check(&rep, "dq", c->q, dq, AN * ATQ * AD, att_obj, c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dk", c->k, dk, AN * ATK * AD, att_obj, c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dv", c->v, dv, AN * ATK * AD, att_obj, c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    free(dq);
    free(dk);
    free(dv);
    free(datt);
    free(c);
}

TEST(attention_gradcheck_padding) { att_case(0, 0, 3); }
TEST(attention_gradcheck_causal) { att_case(1, 0, 4); }
TEST(attention_gradcheck_dropout) { att_case(1, 0.3f, 5); }

/* The last query row of a causal attention equals a one-query attention over
 * the same keys (what the incremental decoder relies on), including strides
 * of a KV cache longer than the keys in use. */
TEST(attention_incremental_matches_full)
{
    enum { T = 5, TMAX = 8 };
    Rng rng;
    rng_seed(&rng, 9);
    float q[T * AD], kv[T * 2 * AD], out[T * AD], att[AH * T * T];
    gc_fill(q, T * AD, &rng, -1, 1);
    gc_fill(kv, T * 2 * AD, &rng, -1, 1);
    AttnShape s = {.n = 1, .heads = AH, .dh = ADH, .tq = T, .tk = T, .ldq = AD, .ldk = 2 * AD,
                   .ldv = 2 * AD, .ldo = AD, .q_stride = T * AD, .k_stride = T * 2 * AD,
                   .v_stride = T * 2 * AD, .o_stride = T * AD, .causal = 1};
    attention_forward(out, att, att, q, kv, kv + AD, &s, 0, 0);
    for (int t = 0; t < T; t++) {
        /* a cache of 2 sentences x TMAX rows; sentence 1 holds the keys */
        float cache[2 * TMAX * 2 * AD], o1[2 * AD], a1[2 * AH * T], q1[2 * AD];
        memset(cache, 0, sizeof cache);
        memcpy(cache + TMAX * 2 * AD, kv, sizeof kv);
        memcpy(q1 + AD, q + t * AD, AD * sizeof(float));
        memcpy(q1, q + t * AD, AD * sizeof(float));
        AttnShape s1 = {.n = 2, .heads = AH, .dh = ADH, .tq = 1, .tk = t + 1, .ldq = AD,
                        .ldk = 2 * AD, .ldv = 2 * AD, .ldo = AD, .q_stride = AD,
                        .k_stride = TMAX * 2 * AD, .v_stride = TMAX * 2 * AD, .o_stride = AD,
                        .causal = 1};
        attention_forward(o1, a1, a1, q1, cache, cache + AD, &s1, 0, 0);
        for (int j = 0; j < AD; j++) CHECK_NEAR(o1[AD + j], out[t * AD + j], 1e-5);
    }
}

/* ---- FFN ---- */

enum { FN = 5, FD = 6, FF = 10 };

typedef struct {
    float x[FN * FD], w1[FF * FD], b1[FF], w2[FD * FF], b2[FD];
    float y[FN * FD], h[FN * FF], r[FN * FD];
    float p;
} FfnCtx;

static double ffn_obj(void *p)
{
    FfnCtx *c = p;
    ffn_forward(c->y, c->h, c->x, c->w1, c->b1, c->w2, c->b2, FN, FD, FF, c->p, 1234);
    return gc_dot(c->y, c->r, FN * FD);
}

/* ReLU has a kink at 0: draw inputs until every pre-activation is at least
 * 0.05 from 0. One step of h = 1e-2 on one x, w1 or b1 element (|x|, |w1| <= 1)
 * moves a pre-activation by at most 1e-2, so no ReLU flips during the check. */
static void ffn_case(float p)
{
    FfnCtx c;
    Rng rng;
    rng_seed(&rng, 11);
    for (int tries = 0;; tries++) {
        gc_fill(c.x, FN * FD, &rng, -1, 1);
        gc_fill(c.w1, FF * FD, &rng, -1, 1);
        gc_fill(c.b1, FF, &rng, -0.5f, 0.5f);
        float a[FN * FF];
        linear_forward(a, c.x, c.w1, c.b1, FN, FD, FF);
        int ok = 1;
        for (int i = 0; i < FN * FF; i++) ok &= fabsf(a[i]) > 0.05f;
        if (ok) break;
        CHECK(tries < 100000);
        if (tries >= 100000) return;
    }
    gc_fill(c.w2, FD * FF, &rng, -1, 1);
    gc_fill(c.b2, FD, &rng, -1, 1);
    gc_fill(c.r, FN * FD, &rng, -1, 1);
    c.p = p;
    ffn_obj(&c);
    int zeros = 0;
    for (int i = 0; i < FN * FF; i++) zeros += c.h[i] == 0;
    CHECK(zeros > 0 && zeros < FN * FF);
    float dx[FN * FD] = {0}, dw1[FF * FD] = {0}, db1[FF] = {0}, dw2[FD * FF] = {0}, db2[FD] = {0};
    float dh[FN * FF];
    ffn_backward(dx, dw1, db1, dw2, db2, dh, c.r, c.x, c.h, c.w1, c.w2, FN, FD, FF, p);
    GcReport rep = {0};
    gc_check(&rep, "dx", c.x, dx, FN * FD, ffn_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dw1", c.w1, dw1, FF * FD, ffn_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "db1", c.b1, db1, FF, ffn_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dw2", c.w2, dw2, FD * FF, ffn_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "db2", c.b2, db2, FD, ffn_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
}

TEST(ffn_gradcheck) { ffn_case(0); }
TEST(ffn_gradcheck_dropout) { ffn_case(0.4f); }
