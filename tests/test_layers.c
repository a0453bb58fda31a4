/* test_layers: finite-difference checks of linear, layernorm, attention (with
 * padding and causal masks) and the FFN, plus mask semantics. */
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "nn/layers.h"
#include "model/model.h"
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

/* Sizes vary so that both the plain-loop path (small products) and the
 * sgemm path of attention.c are covered. */
typedef struct {
    int n, H, dh, tq, tk;
    float *q, *k, *v, *out, *r, *att, *att_d;
    int *keys;
    AttnShape s;
    float p;
    uint64_t seed;
} AttCtx;

static double att_obj(void *p)
{
    AttCtx *c = p;
    attention_forward(c->out, c->att, c->p > 0 ? c->att_d : c->att, c->q, c->k, c->v, &c->s,
                      c->p, c->seed);
    return gc_dot(c->out, c->r, (long)c->n * c->tq * c->H * c->dh);
}

/* Sentence 0 has no padding, sentence 1 keys from 3 on padded, and the last
 * sentence only padding (its outputs must be 0, not NaN). */
static void att_case(int H, int dh, int tq, int tk, int causal, float p, uint64_t seed)
{
    AttCtx c = {.n = 3, .H = H, .dh = dh, .tq = tq, .tk = tk, .p = p, .seed = seed * 77};
    const int D = H * dh;
    const long nq = (long)c.n * tq * D, nk = (long)c.n * tk * D, na = (long)c.n * H * tq * tk;
    c.q = malloc(nq * sizeof(float));
    c.out = malloc(nq * sizeof(float));
    c.r = malloc(nq * sizeof(float));
    c.k = malloc(nk * sizeof(float));
    c.v = malloc(nk * sizeof(float));
    c.att = malloc(na * sizeof(float));
    c.att_d = malloc(na * sizeof(float));
    c.keys = malloc((size_t)c.n * tk * sizeof(int));
    for (int j = 0; j < tk; j++) {
        c.keys[j] = 5 + j % 7;
        c.keys[tk + j] = j < 3 ? 5 + j : TOK_PAD;
        c.keys[2 * tk + j] = TOK_PAD;
    }
    Rng rng;
    rng_seed(&rng, seed);
    gc_fill(c.q, nq, &rng, -1.5f, 1.5f);
    gc_fill(c.k, nk, &rng, -1.5f, 1.5f);
    gc_fill(c.v, nk, &rng, -1, 1);
    gc_fill(c.r, nq, &rng, -1, 1);
    c.s = (AttnShape){
        .n = c.n, .heads = H, .dh = dh, .tq = tq, .tk = tk, .ldq = D, .ldk = D, .ldv = D,
        .ldo = D, .q_stride = (long)tq * D, .k_stride = (long)tk * D, .v_stride = (long)tk * D,
        .o_stride = (long)tq * D, .key_tok = c.keys, .key_tok_stride = tk, .causal = causal,
    };
    att_obj(&c);
    /* against a plain double-precision implementation (no dropout) */
    if (p == 0) {
        double worst = 0;
        for (int b = 0; b < c.n; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < tq; i++) {
                    double w[64], mx = -1e300, sum = 0;
                    for (int j = 0; j < tk; j++) {
                        int vis = c.keys[b * tk + j] != TOK_PAD && (!causal || j <= i + tk - tq);
                        double sc = 0;
                        for (int e = 0; e < dh; e++)
                            sc += (double)c.q[((long)b * tq + i) * D + h * dh + e] *
                                  c.k[((long)b * tk + j) * D + h * dh + e];
                        w[j] = vis ? sc / sqrt(dh) : -INFINITY;
                        if (w[j] > mx) mx = w[j];
                    }
                    for (int j = 0; j < tk; j++) sum += w[j] = mx > -1e300 ? exp(w[j] - mx) : 0;
                    for (int e = 0; e < dh; e++) {
                        double o = 0;
                        for (int j = 0; j < tk; j++)
                            if (sum > 0) o += w[j] / sum * c.v[((long)b * tk + j) * D + h * dh + e];
                        double got = c.out[((long)b * tq + i) * D + h * dh + e];
                        if (fabs(got - o) > worst) worst = fabs(got - o);
                    }
                }
        CHECK(worst < 1e-5);
    }
    /* masks: probabilities of masked keys are 0, visible rows sum to 1 */
    for (int b = 0; b < c.n; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < tq; i++) {
                const float *row = c.att + (((long)b * H + h) * tq + i) * tk;
                double s = 0;
                int any = 0;
                for (int j = 0; j < tk; j++) {
                    int vis = c.keys[b * tk + j] != TOK_PAD && (!causal || j <= i + tk - tq);
                    if (!vis) CHECK(row[j] == 0.0f);
                    any |= vis;
                    s += row[j];
                }
                CHECK_NEAR(s, any ? 1.0 : 0.0, 1e-5);
            }
    for (long i = 2L * tq * D; i < nq; i++) CHECK(c.out[i] == 0.0f);

    float *dq = calloc(nq, sizeof *dq), *dk = calloc(nk, sizeof *dk), *dv = calloc(nk, sizeof *dv);
    float *datt = calloc(na, sizeof *datt);
    attention_backward(dq, dk, dv, datt, c.r, c.att, p > 0 ? c.att_d : c.att, c.q, c.k, c.v,
                       &c.s, p);
    GcReport rep = {0};
    gc_check(&rep, "dq", c.q, dq, nq, att_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    gc_check(&rep, "dk", c.k, dk, nk, att_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    gc_check(&rep, "dv", c.v, dv, nk, att_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    free(dq);
    free(dk);
    free(dv);
    free(datt);
    free(c.q);
    free(c.k);
    free(c.v);
    free(c.out);
    free(c.r);
    free(c.att);
    free(c.att_d);
    free(c.keys);
}

TEST(attention_gradcheck_padding) { att_case(2, 4, 5, 6, 0, 0, 3); }
TEST(attention_gradcheck_causal) { att_case(2, 4, 5, 6, 1, 0, 4); }
TEST(attention_gradcheck_dropout) { att_case(2, 4, 5, 6, 1, 0.3f, 5); }
/* 20·24·16 multiply-adds: the sgemm path */
TEST(attention_gradcheck_large_padding) { att_case(2, 16, 20, 24, 0, 0, 6); }
TEST(attention_gradcheck_large_causal) { att_case(2, 16, 24, 24, 1, 0, 7); }
TEST(attention_gradcheck_large_dropout) { att_case(2, 16, 24, 24, 1, 0.3f, 8); }

/* The last query row of a causal attention equals a one-query attention over
 * the same keys (what the incremental decoder relies on), including strides
 * of a KV cache longer than the keys in use. T·T·Dh is above the sgemm
 * threshold, a step (1·t·Dh) below it, so the two paths agree too. */
enum { AH = 2, ADH = 32, AD = AH * ADH };
TEST(attention_incremental_matches_full)
{
    enum { T = 12, TMAX = 16 };
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

/* AttnShape.key_row (the decoder's beams sharing a cache): each key read
 * from the row the table names gives the same bits as the keys gathered
 * into the sentence's own rows first; rows past the table's keys and
 * every other row of the cache hold garbage that must not be read. */
TEST(attention_key_rows_match_gathered)
{
    enum { N = 3, T = 9, TMAX = 12 };
    Rng rng;
    rng_seed(&rng, 21);
    static float cache[N * TMAX * 2 * AD], own[N * TMAX * 2 * AD];
    float q[N * AD], o1[N * AD], o2[N * AD], a1[N * AH * T], a2[N * AH * T];
    gc_fill(cache, N * TMAX * 2 * AD, &rng, -1, 1);
    gc_fill(q, N * AD, &rng, -1, 1);
    for (int i = 0; i < N * TMAX * 2 * AD; i++) own[i] = NAN;
    int rows[N * TMAX];
    for (int b = 0; b < N; b++)
        for (int j = 0; j < T; j++) {
            rows[b * TMAX + j] = (b + j * 2 + (j > 4)) % N;    /* ancestors vary by position */
            memcpy(own + ((size_t)b * TMAX + j) * 2 * AD,
                   cache + ((size_t)rows[b * TMAX + j] * TMAX + j) * 2 * AD, 2 * AD * sizeof(float));
        }
    for (int i = (N - 1) * TMAX * 2 * AD + T * 2 * AD; i < N * TMAX * 2 * AD; i++) cache[i] = NAN;
    AttnShape s = {.n = N, .heads = AH, .dh = ADH, .tq = 1, .tk = T, .ldq = AD, .ldk = 2 * AD,
                   .ldv = 2 * AD, .ldo = AD, .q_stride = AD, .k_stride = TMAX * 2 * AD,
                   .v_stride = TMAX * 2 * AD, .o_stride = AD, .causal = 1};
    attention_forward(o1, a1, a1, q, own, own + AD, &s, 0, 0);
    s.key_row = rows;
    s.key_row_stride = TMAX;
    attention_forward(o2, a2, a2, q, cache, cache + AD, &s, 0, 0);
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    CHECK(memcmp(a1, a2, sizeof a1) == 0);
    for (int i = 0; i < N * AD; i++) CHECK(isfinite(o2[i]));
}

/* AttnShape.kv_sent (a decoder's batch after sentences left it): each
 * sentence reading the keys and values of the slot the map names gives the
 * same bits as those keys and values moved into its own place first; the
 * slots no sentence names hold garbage that must not be read. */
TEST(attention_kv_sent_matches_moved)
{
    enum { SLOTS = 4, N = 2, TQ = 3, TK = 7 };
    Rng rng;
    rng_seed(&rng, 23);
    static float kv[SLOTS * TK * 2 * AD], moved[N * TK * 2 * AD];
    float q[N * TQ * AD], o1[N * TQ * AD], o2[N * TQ * AD], a1[N * AH * TQ * TK],
        a2[N * AH * TQ * TK];
    gc_fill(kv, SLOTS * TK * 2 * AD, &rng, -1, 1);
    gc_fill(q, N * TQ * AD, &rng, -1, 1);
    const int slot[N] = {3, 1};
    for (int b = 0; b < N; b++)
        memcpy(moved + (size_t)b * TK * 2 * AD, kv + (size_t)slot[b] * TK * 2 * AD,
               TK * 2 * AD * sizeof(float));
    for (int i = 0; i < TK * 2 * AD; i++) kv[i] = kv[2 * TK * 2 * AD + i] = NAN;
    const int len[N] = {TK, TK - 2};
    AttnShape s = {.n = N, .heads = AH, .dh = ADH, .tq = TQ, .tk = TK, .ldq = AD,
                   .ldk = 2 * AD, .ldv = 2 * AD, .ldo = AD, .q_stride = TQ * AD,
                   .k_stride = TK * 2 * AD, .v_stride = TK * 2 * AD, .o_stride = TQ * AD,
                   .key_len = len};
    attention_forward(o1, a1, a1, q, moved, moved + AD, &s, 0, 0);
    s.kv_sent = slot;
    attention_forward(o2, a2, a2, q, kv, kv + AD, &s, 0, 0);
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    CHECK(memcmp(a1, a2, sizeof a1) == 0);
    for (int i = 0; i < N * TQ * AD; i++) CHECK(isfinite(o2[i]));
}

/* A decoding step's attention (one query, a few dozen keys: the plain
 * loops, eight keys at a time, 32 and 16 columns at a time, and their
 * tails) against a double-precision reference, with padded keys. */
TEST(attention_step_matches_double_reference)
{
    enum { N = 3, H = 2, MAXDH = 72, MAXT = 21 };
    static const int dhs[] = {8, 12, 32, 40, 64, 72};
    Rng rng;
    rng_seed(&rng, 33);
    static float q[N * H * MAXDH], kv[N * MAXT * 2 * H * MAXDH], out[N * H * MAXDH],
        att[N * H * MAXT];
    int tok[N * MAXT];
    for (size_t d = 0; d < sizeof dhs / sizeof *dhs; d++)
        for (int tk = 1; tk <= MAXT; tk += tk < 10 ? 1 : 4) {
            const int dh = dhs[d], D = H * dh;
            gc_fill(q, N * D, &rng, -2, 2);
            gc_fill(kv, N * tk * 2 * D, &rng, -2, 2);
            for (int b = 0; b < N; b++)
                for (int j = 0; j < tk; j++) tok[b * tk + j] = (b == 1 && j % 3 == 2) ? TOK_PAD : 7;
            AttnShape s = {.n = N, .heads = H, .dh = dh, .tq = 1, .tk = tk, .ldq = D,
                           .ldk = 2 * D, .ldv = 2 * D, .ldo = D, .q_stride = D,
                           .k_stride = (long)tk * 2 * D, .v_stride = (long)tk * 2 * D,
                           .o_stride = D, .key_tok = tok, .key_tok_stride = tk,
                           .key_pad = TOK_PAD};
            attention_forward(out, att, att, q, kv, kv + D, &s, 0, 0);
            double worst = 0;
            for (int b = 0; b < N; b++)
                for (int h = 0; h < H; h++) {
                    double sc[MAXT], mx = -INFINITY, sum = 0;
                    for (int j = 0; j < tk; j++) {
                        sc[j] = -INFINITY;
                        if (tok[b * tk + j] == TOK_PAD) continue;
                        double dotp = 0;
                        for (int c = 0; c < dh; c++)
                            dotp += (double)q[b * D + h * dh + c] *
                                    kv[((long)b * tk + j) * 2 * D + h * dh + c];
                        sc[j] = dotp / sqrt((double)dh);
                        mx = sc[j] > mx ? sc[j] : mx;
                    }
                    for (int j = 0; j < tk; j++) sum += sc[j] == -INFINITY ? 0 : exp(sc[j] - mx);
                    for (int c = 0; c < dh; c++) {
                        double o = 0;
                        for (int j = 0; j < tk; j++)
                            if (sc[j] != -INFINITY)
                                o += exp(sc[j] - mx) / sum *
                                     kv[((long)b * tk + j) * 2 * D + D + h * dh + c];
                        const double e = fabs(o - out[b * D + h * dh + c]);
                        worst = e > worst ? e : worst;
                    }
                }
            if (worst > 2e-5)
                test_fail(__FILE__, __LINE__, "dh %d, %d keys: off by %g", dh, tk, worst);
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

/* ---- RMSNorm ---- */

static double rms_obj(void *p)
{
    LnCtx *c = p;
    rmsnorm_forward(c->y, c->rstd, c->x, c->g, LR, LD);
    return gc_dot(c->y, c->r, LR * LD);
}

TEST(rmsnorm_values_and_gradcheck)
{
    LnCtx c;
    Rng rng;
    rng_seed(&rng, 5);
    gc_fill(c.x, LR * LD, &rng, -2, 3);   /* a mean far from 0: not LayerNorm */
    gc_fill(c.g, LD, &rng, 0.5f, 1.5f);
    gc_fill(c.r, LR * LD, &rng, -1, 1);
    rms_obj(&c);
    for (int r = 0; r < LR; r++) {
        double ss = 0;
        for (int j = 0; j < LD; j++) ss += (double)c.x[r * LD + j] * c.x[r * LD + j];
        double rs = 1.0 / sqrt(ss / LD + 1e-5);
        for (int j = 0; j < LD; j++)
            CHECK_NEAR(c.y[r * LD + j], c.x[r * LD + j] * rs * c.g[j], 1e-5);
    }
    float dx[LR * LD] = {0}, dg[LD] = {0};
    rmsnorm_backward(dx, dg, c.r, c.x, c.rstd, c.g, LR, LD);
    GcReport rep = {0};
    gc_check(&rep, "dx", c.x, dx, LR * LD, rms_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    gc_check(&rep, "dg", c.g, dg, LD, rms_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    /* the dispatch: NORM_RMS is rmsnorm, NORM_LAYER layernorm */
    float y2[LR * LD], r2[LR];
    rms_obj(&c);
    norm_forward(NORM_RMS, y2, NULL, r2, c.x, c.g, NULL, LR, LD);
    CHECK(memcmp(y2, c.y, sizeof y2) == 0);
}

/* The row kernels run small calls in this thread and large ones in a
 * parallel loop (a decoder step's calls stay out of libgomp): a row comes
 * out the same bits either way. Each row alone (the small path) against
 * one call over all rows (the large path). */
TEST(test_row_kernels_small_and_large_calls_agree)
{
    enum { N = 160, D = 128, V = 300 };     /* N·D and N·V above 16384; one row below */
    float *x = malloc(sizeof(float) * N * V), *g = malloc(sizeof(float) * D);
    float *b = malloc(sizeof(float) * D), *all = malloc(sizeof(float) * N * V);
    float *one = malloc(sizeof(float) * V);
    Rng rng;
    rng_seed(&rng, 3);
    for (int i = 0; i < N * V; i++) x[i] = (float)(rng_uniform(&rng) * 4.0 - 2.0);
    for (int j = 0; j < D; j++) g[j] = 1.0f + 0.1f * j / D, b[j] = 0.01f * j;
    layernorm_forward(all, NULL, NULL, x, g, b, N, D);
    for (int r = 0; r < N; r++) {
        layernorm_forward(one, NULL, NULL, x + r * D, g, b, 1, D);
        CHECK(memcmp(one, all + r * D, sizeof(float) * D) == 0);
    }
    rmsnorm_forward(all, NULL, x, g, N, D);
    for (int r = 0; r < N; r++) {
        rmsnorm_forward(one, NULL, x + r * D, g, 1, D);
        CHECK(memcmp(one, all + r * D, sizeof(float) * D) == 0);
    }
    memcpy(all, x, sizeof(float) * N * V);
    logsoftmax_rows(all, N, V);
    for (int r = 0; r < N; r++) {
        memcpy(one, x + r * V, sizeof(float) * V);
        logsoftmax_rows(one, 1, V);
        CHECK(memcmp(one, all + r * V, sizeof(float) * V) == 0);
    }
    /* attention: 40 sentences of 4 heads (parallel) against each alone */
    enum { S = 40, H = 4, DH = 16, TQ = 4, TK = 16 };
    const int Dm = H * DH;
    float *q = malloc(sizeof(float) * S * TQ * Dm), *kv = malloc(sizeof(float) * S * TK * Dm);
    float *out = malloc(sizeof(float) * S * TQ * Dm), *o1 = malloc(sizeof(float) * TQ * Dm);
    float *att = malloc(sizeof(float) * S * H * TQ * TK);
    for (int i = 0; i < S * TQ * Dm; i++) q[i] = (float)(rng_uniform(&rng) - 0.5);
    for (int i = 0; i < S * TK * Dm; i++) kv[i] = (float)(rng_uniform(&rng) - 0.5);
    AttnShape sh = {.n = S, .heads = H, .dh = DH, .tq = TQ, .tk = TK, .ldq = Dm, .ldk = Dm,
                    .ldv = Dm, .ldo = Dm, .q_stride = (long)TQ * Dm, .k_stride = (long)TK * Dm,
                    .v_stride = (long)TK * Dm, .o_stride = (long)TQ * Dm};
    attention_forward(out, att, att, q, kv, kv, &sh, 0, 0);
    sh.n = 1;
    for (int s = 0; s < S; s++) {
        attention_forward(o1, att, att, q + (long)s * TQ * Dm, kv + (long)s * TK * Dm,
                          kv + (long)s * TK * Dm, &sh, 0, 0);
        CHECK(memcmp(o1, out + (long)s * TQ * Dm, sizeof(float) * TQ * Dm) == 0);
    }
    free(q), free(kv), free(out), free(o1), free(att);
    free(x), free(g), free(b), free(all), free(one);
}
