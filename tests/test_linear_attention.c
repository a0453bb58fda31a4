/* test_linear_attention: linear attention (linear_attention.c) against a plain
 * double-precision implementation of its definition, finite-difference
 * checks of its backward (non-causal and causal, with padding, one chunk and
 * several), and the recurrent decoding form against the chunked one. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "nn/layers.h"
#include "test.h"

typedef struct {
    int n, H, dh, tq, tk;
    float *q, *k, *v, *out, *den, *r, *scratch;
    int slices;
    int *keys;
    AttnShape s;
} LinCtx;

static double lin_obj(void *p)
{
    LinCtx *c = p;
    linattn_forward(c->out, c->den, c->scratch, c->slices, c->q, c->k, c->v, &c->s);
    return gc_dot(c->out, c->r, (long)c->n * c->tq * c->H * c->dh);
}

static double phi_d(double x) { return x > 0 ? x + 1 : exp(x); }

/* Sentence 0 has no padding, sentence 1 keys from 3 on padded, the last one
 * only padding (outputs 0, not NaN). */
static void lin_case(int H, int dh, int tq, int tk, int causal, uint64_t seed)
{
    LinCtx c = {.n = 3, .H = H, .dh = dh, .tq = tq, .tk = tk};
    const int D = H * dh;
    const long nq = (long)c.n * tq * D, nk = (long)c.n * tk * D;
    c.q = malloc(nq * sizeof(float));
    c.out = malloc(nq * sizeof(float));
    c.r = malloc(nq * sizeof(float));
    c.k = malloc(nk * sizeof(float));
    c.v = malloc(nk * sizeof(float));
    c.den = malloc((size_t)c.n * H * tq * sizeof(float));
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
    c.slices = omp_get_max_threads();
    c.scratch = malloc((size_t)(c.slices * linattn_scratch_floats(tq > tk ? tq : tk, dh)) *
                       sizeof(float));
    lin_obj(&c);
    double worst = 0;
    for (int b = 0; b < c.n; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < tq; i++) {
                double num[64] = {0}, den = 0;
                for (int j = 0; j < tk; j++) {
                    if (c.keys[b * tk + j] == TOK_PAD || (causal && j > i)) continue;
                    double sim = 0;
                    for (int e = 0; e < dh; e++)
                        sim += phi_d(c.q[((long)b * tq + i) * D + h * dh + e]) *
                               phi_d(c.k[((long)b * tk + j) * D + h * dh + e]);
                    den += sim;
                    for (int e = 0; e < dh; e++) num[e] += sim * c.v[((long)b * tk + j) * D + h * dh + e];
                }
                for (int e = 0; e < dh; e++) {
                    double want = num[e] / (den + LIN_EPS);
                    double got = c.out[((long)b * tq + i) * D + h * dh + e];
                    if (fabs(got - want) > worst) worst = fabs(got - want);
                }
            }
    CHECK(worst < 1e-5);
    for (long i = 2L * tq * D; i < nq; i++) CHECK(c.out[i] == 0.0f);

    float *dq = calloc(nq, sizeof *dq), *dk = calloc(nk, sizeof *dk), *dv = calloc(nk, sizeof *dv);
    linattn_backward(dq, dk, dv, c.scratch, c.slices, c.r, c.out, c.den, c.q, c.k, c.v, &c.s);
    /* padded keys get no gradient at all */
    for (int j = 3; j < tk; j++)
        for (int e = 0; e < D; e++) {
            CHECK(dk[((long)tk + j) * D + e] == 0.0f);
            CHECK(dv[((long)tk + j) * D + e] == 0.0f);
        }
    GcReport rep = {0};
    gc_check(&rep, "dq", c.q, dq, nq, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    gc_check(&rep, "dk", c.k, dk, nk, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    gc_check(&rep, "dv", c.v, dv, nk, lin_obj, &c, 1e-2f, 1e-3, 2e-2, 300, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    free(dq);
    free(dk);
    free(dv);
    free(c.q);
    free(c.k);
    free(c.v);
    free(c.out);
    free(c.den);
    free(c.r);
    free(c.keys);
    free(c.scratch);
}

TEST(linattn_gradcheck_padding) { lin_case(2, 4, 5, 6, 0, 3); }
TEST(linattn_gradcheck_causal) { lin_case(2, 4, 6, 6, 1, 4); }
/* longer than one chunk: the running sums between chunks, both sweeps */
TEST(linattn_gradcheck_causal_chunks) { lin_case(2, 8, 2 * LIN_CHUNK + 9, 2 * LIN_CHUNK + 9, 1, 5); }
TEST(linattn_gradcheck_long_padding) { lin_case(2, 8, 70, 150, 0, 6); }

/* The recurrent form (decoding: one position at a time into S, z) gives the
 * chunked causal output at every position, across chunk boundaries. */
TEST(linattn_recurrent_matches_chunked)
{
    enum { H = 2, DH = 16, D = H * DH, T = LIN_CHUNK + 20 };
    Rng rng;
    rng_seed(&rng, 9);
    float *q = malloc(sizeof(float) * T * D), *kv = malloc(sizeof(float) * T * 2 * D);
    float *out = malloc(sizeof(float) * T * D), den[H * T];
    gc_fill(q, T * D, &rng, -1, 1);
    gc_fill(kv, T * 2 * D, &rng, -1, 1);
    AttnShape s = {.n = 1, .heads = H, .dh = DH, .tq = T, .tk = T, .ldq = D, .ldk = 2 * D,
                   .ldv = 2 * D, .ldo = D, .q_stride = T * D, .k_stride = T * 2 * D,
                   .v_stride = T * 2 * D, .o_stride = T * D, .causal = 1};
    const int slices = omp_get_max_threads();
    float *scratch = malloc(sizeof(float) * (size_t)(slices * linattn_scratch_floats(T, DH)));
    linattn_forward(out, den, scratch, slices, q, kv, kv + D, &s);
    float S[H * DH * DH] = {0}, z[D] = {0}, o[D];
    double worst = 0;
    for (int t = 0; t < T; t++) {
        linattn_state_add(S, z, kv + t * 2 * D, kv + t * 2 * D + D, H, DH);
        linattn_state_query(o, q + t * D, S, z, H, DH);
        for (int e = 0; e < D; e++) worst = fmax(worst, fabs(o[e] - out[t * D + e]));
    }
    CHECK(worst < 1e-5);
    free(q);
    free(kv);
    free(out);
    free(scratch);
}
