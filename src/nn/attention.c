/* attention: multi-head scaled dot-product attention with padding and causal
 * masks, per (sentence, head) through strided sgemm. The (sentence, head)
 * pairs run in parallel; inside an OpenMP region OpenBLAS runs each small
 * product on the calling thread. */
#include "nn/layers.h"

#include <math.h>
#include <omp.h>

#include "nn/blas.h"

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

/* x · y over n floats, in eight lanes that the compiler keeps in one vector
 * register (a reduction pragma here made GCC sum through the stack). */
static inline float dot(const float *x, const float *y, int n)
{
    float lane[8] = {0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int i = 0; i < 8; i++) lane[i] += x[c + i] * y[c + i];
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

/* a (tq, tk; row stride lda) = scale · q (tq, dh) · k (tk, dh)ᵀ */
static void scores(float *a, int lda, const float *q, int ldq, const float *k, int ldk,
                   KeyRows kr, int tq, int tk, int dh, float scale)
{
    if ((long)tq * tk * dh > SMALL_PRODUCT && !kr.rows) {
        blas_gemm(0, 1, tq, tk, dh, scale, q, ldq, k, ldk, 0.0f, a, lda);
        return;
    }
    for (int i = 0; i < tq; i++)
        for (int j = 0; j < tk; j++)
            a[(long)i * lda + j] = dot(q + (long)i * ldq, key_at(k, ldk, kr, j), dh) * scale;
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
        /* 16 columns at a time, summed in registers over the keys */
        for (; c0 + 16 <= dh; c0 += 16) {
            float lane[16] = {0};
            for (int j = 0; j < tk; j++) {
                const float *vj = key_at(v, ldv, kr, j) + c0;
                if (pi[j] == 0.0f) continue;    /* masked or dropped */
                for (int c = 0; c < 16; c++) lane[c] += pi[j] * vj[c];
            }
            for (int c = 0; c < 16; c++) oi[c0 + c] = lane[c];
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
    const float *kb = k + (kr.rows ? 0 : b * s->k_stride) + h * dh;
    const float *vb = v + (kr.rows ? 0 : b * s->v_stride) + h * dh;
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
        for (int j = 0; j < kl; j++) {
            if (!key_visible(s, b, i, j)) row[j] = -INFINITY;
            else if (row[j] > mx) mx = row[j];
        }
        if (mx == -INFINITY) {      /* every key masked: zeros, not NaN */
            for (int j = 0; j < kl; j++) row[j] = 0.0f;
            continue;
        }
        /* exp (exactly 0 for masked keys) and their sum, in 16 lanes
         * fixed by the key index, so the sum does not depend on how
         * the compiler handles the loop's tail */
        float lane[16] = {0};
        int j = 0;
        for (; j + 16 <= kl; j += 16)
            for (int c = 0; c < 16; c++) {
                row[j + c] = exp_fast(row[j + c] - mx);
                lane[c] += row[j + c];
            }
        float sum = 0;
        for (; j < kl; j++) {
            row[j] = exp_fast(row[j] - mx);
            sum += row[j];
        }
        for (int c = 0; c < 16; c++) sum += lane[c];
        const float inv = 1.0f / sum;
        for (j = 0; j < kl; j++) row[j] *= inv;
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
