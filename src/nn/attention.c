/* attention: multi-head scaled dot-product attention with padding and causal
 * masks, per (sentence, head) through strided sgemm. The (sentence, head)
 * pairs run in parallel; inside an OpenMP region OpenBLAS runs each small
 * product on the calling thread. */
#include "nn/layers.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "nn/blas.h"
#include "nn/vec_width.h"

/* Below this, a loop runs here without a parallel region: even an if(0)
 * region makes libgomp allocate a team and end it with a futex wake (a
 * system call), and a decoder step makes dozens of such small calls. */
#define PAR_MIN_FLOPS 65536L

long attn_probs_size(const AttnShape *s)
{
    return (long)s->n * s->heads * s->tq * s->tk;
}

/* Below this many multiply-adds a product is a plain loop: a decoding step
 * (one query against a few dozen keys) costs less than sgemm's call overhead. */
#define SMALL_PRODUCT 4096L

/* x · y over n floats, in eight lanes of one vector (an array of lanes
 * made GCC add them up through the stack); the lanes are added in order
 * after the tail, so the sum does not depend on the compiler. */
typedef float f32x8 __attribute__((vector_size(32)));

/* The weighted sum's columns, in vectors of the ISA's own width
 * (vec_width.h; on AVX2 a 16-lane sum was stored and reloaded at every
 * key, most of attention's time at batch 1 on Zen 3). Each column is its
 * own chain, so any width gives the same bits. */
#define COL_LANES VEC_FLOATS
typedef float vcol __attribute__((vector_size(4 * COL_LANES)));

static inline float dot(const float *x, const float *y, int n)
{
    f32x8 lane = {0};
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        f32x8 a, b;
        memcpy(&a, x + c, sizeof a);
        memcpy(&b, y + c, sizeof b);
        lane += a * b;
    }
    float acc = 0;
    for (; c < n; c++) acc += x[c] * y[c];
    for (int i = 0; i < 8; i++) acc += lane[i];
    return acc;
}

/* Where key (or value) row j is: at base + j·ld, or with rows
 * (AttnShape.key_row) at base + rows[j]·stride + j·ld. */
typedef struct {
    const int *rows;
    long stride;
} KeyRows;

static inline const float *key_at(const float *base, int ld, KeyRows kr, int j)
{
    return base + (kr.rows ? kr.rows[j] * kr.stride : 0) + (long)j * ld;
}

/* The sums of eight vectors' lanes, as one vector: lane i is Σ a[i]'s
 * lanes, added by a fixed tree (pairs, then fours, then the halves).
 * Written through out, not returned: a 32-byte vector return changes the
 * ABI in a build without AVX (PORTABLE=1), which GCC warns of. */
static inline void sums8(const f32x8 a[8], f32x8 *out)
{
#define EVEN(x, y) __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14)
#define ODD(x, y) __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15)
    const f32x8 p01 = EVEN(a[0], a[1]) + ODD(a[0], a[1]), p23 = EVEN(a[2], a[3]) + ODD(a[2], a[3]);
    const f32x8 p45 = EVEN(a[4], a[5]) + ODD(a[4], a[5]), p67 = EVEN(a[6], a[7]) + ODD(a[6], a[7]);
#undef EVEN
#undef ODD
    /* p01 = (a0 01, a1 01, a0 23, a1 23, a0 45, a1 45, a0 67, a1 67) */
    const f32x8 q03 = __builtin_shufflevector(p01, p23, 0, 1, 8, 9, 4, 5, 12, 13) +
                      __builtin_shufflevector(p01, p23, 2, 3, 10, 11, 6, 7, 14, 15);
    const f32x8 q47 = __builtin_shufflevector(p45, p67, 0, 1, 8, 9, 4, 5, 12, 13) +
                      __builtin_shufflevector(p45, p67, 2, 3, 10, 11, 6, 7, 14, 15);
    /* q03 = (a0..a3 over lanes 0-3, then a0..a3 over lanes 4-7) */
    *out = __builtin_shufflevector(q03, q47, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(q03, q47, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* a (tq, tk; row stride lda) = scale · q (tq, dh) · k (tk, dh)ᵀ */
static void scores(float *a, int lda, const float *q, int ldq, const float *k, int ldk,
                   KeyRows kr, int tq, int tk, int dh, float scale)
{
    if ((long)tq * tk * dh > SMALL_PRODUCT && !kr.rows) {
        blas_gemm(0, 1, tq, tk, dh, scale, q, ldq, k, ldk, 0.0f, a, lda);
        return;
    }
    for (int i = 0; i < tq; i++) {
        const float *qi = q + (long)i * ldq;
        float *ai = a + (long)i * lda;
        int j = 0;
        /* a decoding step: eight keys at a time, eight sums in flight
         * rather than one chain through a register per key; the last
         * block reads its missing keys as the first one and keeps only
         * the real ones (a lane's sum never meets the others', so a key's
         * score is the same bits wherever it falls) */
        if (dh % 8 == 0)
            for (; j < tk; j += 8) {
                f32x8 acc[8];
                const float *kj[8];
                const int m = tk - j < 8 ? tk - j : 8;
#pragma GCC unroll 8
                for (int u = 0; u < 8; u++) {
                    kj[u] = key_at(k, ldk, kr, j + (u < m ? u : 0));
                    acc[u] = (f32x8){0};
                }
                for (int c = 0; c < dh; c += 8) {
                    f32x8 x;
                    memcpy(&x, qi + c, sizeof x);
#pragma GCC unroll 8
                    for (int u = 0; u < 8; u++) {
                        f32x8 y;
                        memcpy(&y, kj[u] + c, sizeof y);
                        acc[u] += x * y;
                    }
                }
                f32x8 sum;
                sums8(acc, &sum);
                sum *= scale;
                if (m == 8) {
                    memcpy(ai + j, &sum, sizeof sum);
                } else {
                    for (int u = 0; u < m; u++) ai[j + u] = sum[u];
                }
            }
        for (; j < tk; j++) ai[j] = dot(qi, key_at(k, ldk, kr, j), dh) * scale;
    }
}

/* o (tq, dh) = p (tq, tk; row stride ldp) · v (tk, dh) */
static void weighted_sum(float *o, int ldo, const float *p, int ldp, const float *v, int ldv,
                         KeyRows kr, int tq, int tk, int dh)
{
    if ((long)tq * tk * dh > SMALL_PRODUCT && !kr.rows) {
        blas_gemm(0, 0, tq, dh, tk, 1.0f, p, ldp, v, ldv, 0.0f, o, ldo);
        return;
    }
    for (int i = 0; i < tq; i++) {
        float *oi = o + (long)i * ldo;
        const float *pi = p + (long)i * ldp;
        int c0 = 0;
        /* 32 columns at a time, summed in registers over the keys: several
         * independent sums, and each key's weight read once for all */
        for (; c0 + 32 <= dh; c0 += 32) {
            vcol acc[32 / COL_LANES] = {{0}};
            for (int j = 0; j < tk; j++) {
                if (pi[j] == 0.0f) continue;    /* masked or dropped */
                const float *vj = key_at(v, ldv, kr, j) + c0;
                for (int u = 0; u < 32 / COL_LANES; u++) {
                    vcol x;
                    memcpy(&x, vj + u * COL_LANES, sizeof x);
                    acc[u] += pi[j] * x;
                }
            }
            for (int u = 0; u < 32 / COL_LANES; u++)
                memcpy(oi + c0 + u * COL_LANES, &acc[u], sizeof acc[u]);
        }
        for (; c0 + COL_LANES <= dh; c0 += COL_LANES) {
            vcol lane = {0};
            for (int j = 0; j < tk; j++) {
                if (pi[j] == 0.0f) continue;
                vcol x;
                memcpy(&x, key_at(v, ldv, kr, j) + c0, sizeof x);
                lane += pi[j] * x;
            }
            memcpy(oi + c0, &lane, sizeof lane);
        }
        for (int c = c0; c < dh; c++) oi[c] = 0.0f;
        for (int j = 0; j < tk && c0 < dh; j++) {
            const float *vj = key_at(v, ldv, kr, j);
            if (pi[j] == 0.0f) continue;
            for (int c = c0; c < dh; c++) oi[c] += pi[j] * vj[c];
        }
    }
}

static int key_visible(const AttnShape *s, int b, int i, int j)
{
    if (s->causal && j > i + (s->tk - s->tq)) return 0;
    if (s->key_tok && s->key_tok[(long)b * s->key_tok_stride + j] == s->key_pad) return 0;
    return 1;
}

/* attention_forward for one (sentence, head) pair bh. */
static inline void attend_pair(float *out, float *att, float *att_d, const float *q,
                               const float *k, const float *v, const AttnShape *s, float p,
                               uint64_t seed, long bh)
{
    const int H = s->heads, dh = s->dh, tq = s->tq, tk = s->tk;
    const float scale = 1.0f / sqrtf((float)dh);
    const int b = (int)(bh / H), h = (int)(bh % H);
    const float *qb = q + b * s->q_stride + h * dh;
    /* with key_row, k and v start at sentence 0's rows */
    const KeyRows kr = {s->key_row ? s->key_row + (long)b * s->key_row_stride : NULL,
                        s->k_stride};
    const long kvb = s->kv_sent ? s->kv_sent[b] : b;
    const float *kb = k + (kr.rows ? 0 : kvb * s->k_stride) + h * dh;
    const float *vb = v + (kr.rows ? 0 : kvb * s->v_stride) + h * dh;
    float *ob = out + b * s->o_stride + h * dh;
    float *a = att + bh * tq * tk;
    const int kl = s->key_len && s->key_len[b] < tk ? s->key_len[b] : tk;
    const int ql = s->query_pad && kl < tq ? kl : tq;     /* query rows computed */
    /* S = Q·Kᵀ/sqrt(Dh) */
    scores(a, tk, qb, s->ldq, kb, s->ldk, kr, ql, kl, dh, scale);
    for (int i = ql; i < tq; i++) {                        /* padding queries */
        for (int j = 0; j < tk; j++) a[(long)i * tk + j] = 0.0f;
        for (int c = 0; c < dh; c++) ob[(long)i * s->ldo + c] = 0.0f;
    }
    for (int i = 0; i < ql; i++) {
        float *row = a + (long)i * tk;
        for (int j = kl; j < tk; j++) row[j] = 0.0f;
        float mx = -INFINITY;
        if (!s->causal && !s->key_tok) {    /* no mask: a decoder's self-attention */
            mx = row_max(row, kl);
        } else {
            for (int j = 0; j < kl; j++) {
                if (!key_visible(s, b, i, j)) row[j] = -INFINITY;
                else if (row[j] > mx) mx = row[j];
            }
        }
        if (mx == -INFINITY) {      /* every key masked: zeros, not NaN */
            for (int j = 0; j < kl; j++) row[j] = 0.0f;
            continue;
        }
        /* exp (exactly 0 for masked keys), divided by their sum, in the
         * fixed lanes of rowexp.c */
        row_softmax_inplace(row, kl, mx);
    }
    float *ad = a;
    if (p > 0) {
        /* Each pair has its own stream, so the mask does not depend on
         * which thread runs which pair. */
        ad = att_d + bh * tq * tk;
        dropout_apply(ad, a, (long)tq * tk, p, dropout_site_seed(seed, (uint64_t)bh));
    }
    /* O = P·V */
    weighted_sum(ob, s->ldo, ad, tk, vb, s->ldv, kr, ql, kl, dh);
}

void attention_forward(float *out, float *att, float *att_d, const float *q,
                       const float *k, const float *v, const AttnShape *s,
                       float p, uint64_t seed)
{
    const long pairs = (long)s->n * s->heads;
    /* A decoding step (tq = 1, few sentences) is too small to share, and
     * runs here without entering libgomp (see PAR_MIN_FLOPS). */
    if (pairs * s->tq * s->tk * s->dh <= PAR_MIN_FLOPS) {
        for (long bh = 0; bh < pairs; bh++) attend_pair(out, att, att_d, q, k, v, s, p, seed, bh);
        return;
    }
#pragma omp parallel for schedule(static)
    for (long bh = 0; bh < pairs; bh++) attend_pair(out, att, att_d, q, k, v, s, p, seed, bh);
}

/* forward: S = c·Q·Kᵀ (c = 1/sqrt(Dh)), P = softmax(S), P' = drop(P), O = P'·V.
 *   dP' = dO·Vᵀ,  dV += P'ᵀ·dO
 *   dP  = dP'·scale where P' > 0, else 0 (the dropout mask, read off P')
 *   dS  = P ⊙ (dP - Σ_j P·dP)          (softmax; masked keys have P = 0)
 *   dQ += c·dS·K,  dK += c·dSᵀ·Q */
void attention_backward(float *dq, float *dk, float *dv, float *datt,
                        const float *dout, const float *att, const float *att_d,
                        const float *q, const float *k, const float *v,
                        const AttnShape *s, float p)
{
    const int H = s->heads, dh = s->dh, tq = s->tq, tk = s->tk;
    const float c = 1.0f / sqrtf((float)dh);
    const float dscale = p > 0 ? dropout_scale(p) : 1.0f;
    const long pairs = (long)s->n * H;
#pragma omp parallel for schedule(static) if (pairs * tq * tk * dh > PAR_MIN_FLOPS)
    for (long bh = 0; bh < pairs; bh++) {
        const int b = (int)(bh / H), h = (int)(bh % H);
        const float *qb = q + b * s->q_stride + h * dh;
        const float *kb = k + b * s->k_stride + h * dh;
        const float *vb = v + b * s->v_stride + h * dh;
        const float *dob = dout + b * s->o_stride + h * dh;
        const float *a = att + bh * tq * tk;
        const float *ad = p > 0 ? att_d + bh * tq * tk : a;
        float *da = datt + bh * tq * tk;
        blas_gemm(0, 1, tq, tk, dh, 1.0f, dob, s->ldo, vb, s->ldv, 0.0f, da, tk);
        if (dv)
            blas_gemm(1, 0, tk, dh, tq, 1.0f, ad, tk, dob, s->ldo, 1.0f,
                      dv + b * s->v_stride + h * dh, s->ldv);
        for (int i = 0; i < tq; i++) {
            const float *pr = a + (long)i * tk, *pdr = ad + (long)i * tk;
            float *dr = da + (long)i * tk;
            if (p > 0)
                for (int j = 0; j < tk; j++) dr[j] = pdr[j] > 0 ? dr[j] * dscale : 0.0f;
            float dot = 0;
            for (int j = 0; j < tk; j++) dot += pr[j] * dr[j];
            for (int j = 0; j < tk; j++) dr[j] = pr[j] * (dr[j] - dot);
        }
        if (dq)
            blas_gemm(0, 0, tq, dh, tk, c, da, tk, kb, s->ldk, 1.0f,
                      dq + b * s->q_stride + h * dh, s->ldq);
        if (dk)
            blas_gemm(1, 0, tk, dh, tq, c, da, tk, qb, s->ldq, 1.0f,
                      dk + b * s->k_stride + h * dh, s->ldk);
    }
}
