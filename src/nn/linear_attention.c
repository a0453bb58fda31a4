/* linear_attention: attention with the kernel sim(q, k) = φ(q)·φ(k),
 * φ(x) = elu(x) + 1 (Katharopoulos et al. 2020), per (sentence, head):
 *     out_i = φ(q_i) S / (φ(q_i)·z + eps),  S = Σ_j φ(k_j) v_jᵀ,  z = Σ_j φ(k_j)
 * over the visible keys j (all of them, or j <= i when causal). Time and
 * memory are linear in the length: nothing of size Tq·Tk exists.
 *
 * The causal form runs in chunks of LIN_CHUNK positions: within a chunk a
 * masked (C, C) product, across chunks the running S and z, so training is
 * a few products per chunk instead of a loop over positions. Backward
 * recomputes φ(Q), φ(K) and the chunk products instead of storing them; the
 * forward keeps only the denominators (n, H, Tq). */
#include "nn/layers.h"

#include <omp.h>
#include <string.h>

#include "nn/blas.h"

#define PAR_MIN_FLOPS 65536L

/* φ(x) = elu(x) + 1 > 0, and its derivative φ'(x) = 1 (x > 0) or exp(x).
 * Branch-free (exp of min(x, 0) always), so loops over them vectorize. */
static inline float phi(float x)
{
    const float e = exp_fast(x < 0 ? x : 0.0f);
    return x > 0 ? x + 1.0f : e;
}
static inline float phi_grad(float x)
{
    const float e = exp_fast(x < 0 ? x : 0.0f);
    return x > 0 ? 1.0f : e;
}

/* y[c] = φ(x[c]) for c < n */
static void phi_row(float *y, const float *x, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++) y[c] = phi(x[c]);
}

/* d[c] += g[c] · φ'(x[c]) for c < n */
static void phi_grad_row(float *d, const float *g, const float *x, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++) d[c] += g[c] * phi_grad(x[c]);
}

/* c (m, n; ldc) = alpha·op(a)·op(b) + beta·c; a no-op product (k = 0) only scales. */
static void gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (int i = 0; i < m; i++)    /* beta 0 overwrites, as sgemm does */
            for (int j = 0; j < n; j++)
                c[(long)i * ldc + j] = beta == 0.0f ? 0.0f : c[(long)i * ldc + j] * beta;
        return;
    }
    blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

long linattn_scratch_floats(int max_len, int dh)
{
    const long t = max_len;
    /* A, B, DN, DA, DB (t, dh); dd (t); S, R (dh, dh); z, r (dh); G, P (C, C) */
    return 5 * t * dh + t + 2L * dh * dh + 2L * dh + 2L * LIN_CHUNK * LIN_CHUNK + 16;
}

typedef struct {
    float *a, *b, *dn, *da, *db, *dd, *S, *R, *z, *r, *G, *P;
} Scratch;

static Scratch scratch_of(float *base, const AttnShape *s)
{
    const long t = s->tq > s->tk ? s->tq : s->tk, dh = s->dh;
    Scratch w;
    w.a = base;
    w.b = w.a + t * dh;
    w.dn = w.b + t * dh;
    w.da = w.dn + t * dh;
    w.db = w.da + t * dh;
    w.dd = w.db + t * dh;
    w.S = w.dd + t;
    w.R = w.S + dh * dh;
    w.z = w.R + dh * dh;
    w.r = w.z + dh;
    w.G = w.r + dh;
    w.P = w.G + (long)LIN_CHUNK * LIN_CHUNK;
    return w;
}

/* One pair's view of the shape: where its rows start and how many count. */
typedef struct {
    const float *q, *k, *v;
    int ql, kl;     /* query rows computed, keys that exist */
    int b, h;       /* its sentence and head */
    long bh;        /* b * heads + h */
} Pair;

static Pair pair_of(const AttnShape *s, const float *q, const float *k, const float *v, long bh)
{
    const int b = (int)(bh / s->heads), h = (int)(bh % s->heads);
    Pair p;
    p.b = b;
    p.h = h;
    p.bh = bh;
    p.q = q + b * s->q_stride + h * s->dh;
    p.k = k + b * s->k_stride + h * s->dh;
    p.v = v + b * s->v_stride + h * s->dh;
    p.kl = s->key_len && s->key_len[b] < s->tk ? s->key_len[b] : s->tk;
    p.ql = s->query_pad && p.kl < s->tq ? p.kl : s->tq;
    return p;
}

/* a = φ(q) for rows < ql; b = φ(k) for keys < kl, 0 for padded keys (so
 * they drop out of every sum). */
static void features(Scratch *w, const AttnShape *s, const Pair *p, long bh)
{
    const int dh = s->dh, b = (int)(bh / s->heads);
    for (int i = 0; i < p->ql; i++) phi_row(w->a + (long)i * dh, p->q + (long)i * s->ldq, dh);
    for (int j = 0; j < p->kl; j++) {
        float *row = w->b + (long)j * dh;
        if (s->key_tok && s->key_tok[(long)b * s->key_tok_stride + j] == s->key_pad) {
            memset(row, 0, sizeof(float) * (size_t)dh);
            continue;
        }
        phi_row(row, p->k + (long)j * s->ldk, dh);
    }
}

/* z (dh) += Σ rows [j0, j1) of b */
static void add_rows(float *z, const float *b, int j0, int j1, int dh)
{
    for (int j = j0; j < j1; j++)
        for (int c = 0; c < dh; c++) z[c] += b[(long)j * dh + c];
}

static float dotf(const float *x, const float *y, int n)
{
    float acc = 0;
    for (int c = 0; c < n; c++) acc += x[c] * y[c];
    return acc;
}

/* P (m, kn) = a_c · b_cᵀ with the causal mask inside a diagonal chunk (key
 * j visible to query i when j <= i; both counted from the chunk start). */
static void chunk_scores(float *P, const float *a, const float *b, int m, int kn, int dh)
{
    gemm(0, 1, m, kn, dh, 1.0f, a, dh, b, dh, 0.0f, P, LIN_CHUNK);
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < kn; j++) P[(long)i * LIN_CHUNK + j] = 0.0f;
}

/* G (m, kn) = M ⊙ (DN_c V_cᵀ + dd_c 1ᵀ) within a diagonal chunk: the gradient
 * of the masked scores φ(q_i)·φ(k_j), j <= i. */
static void chunk_grad_scores(float *G, const float *dn, const float *dd, const float *v, int ldv,
                              int m, int kn, int dh)
{
    gemm(0, 1, m, kn, dh, 1.0f, dn, dh, v, ldv, 0.0f, G, LIN_CHUNK);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < kn; j++)
            G[(long)i * LIN_CHUNK + j] = j <= i ? G[(long)i * LIN_CHUNK + j] + dd[i] : 0.0f;
}

/* Runs fn on every (sentence, head) pair of s, in parallel (slices
 * threads), each with its thread's slice of scratch and the pair's
 * features a = φ(q), b = φ(k) computed: the loop of both passes. */
static void each_pair(float *scratch, int slices, const float *q, const float *k,
                      const float *v, const AttnShape *s,
                      void (*fn)(const AttnShape *s, const Pair *p, Scratch *w, void *ctx),
                      void *ctx)
{
    const int dh = s->dh, tq = s->tq;
    const long pairs = (long)s->n * s->heads;
    const long per = linattn_scratch_floats(s->tq > s->tk ? s->tq : s->tk, dh);
#pragma omp parallel for schedule(static) num_threads(slices) \
    if (pairs * tq * dh * dh > PAR_MIN_FLOPS)
    for (long bh = 0; bh < pairs; bh++) {
        const Pair p = pair_of(s, q, k, v, bh);
        Scratch w = scratch_of(scratch + omp_get_thread_num() * per, s);
        features(&w, s, &p, bh);
        fn(s, &p, &w, ctx);
    }
}

/* linattn_forward's arrays, for pair_forward */
typedef struct {
    float *out, *den;
} ForwardArgs;

static void pair_forward(const AttnShape *s, const Pair *pp, Scratch *wp, void *ctx)
{
    const ForwardArgs *a = ctx;
    const int dh = s->dh, tq = s->tq;
    const Pair p = *pp;
    Scratch w = *wp;
    float *ob = a->out + p.b * s->o_stride + p.h * dh, *db = a->den + p.bh * tq;
    memset(w.z, 0, sizeof(float) * (size_t)dh);
    if (!s->causal) {
        gemm(1, 0, dh, dh, p.kl, 1.0f, w.b, dh, p.v, s->ldv, 0.0f, w.S, dh);
        add_rows(w.z, w.b, 0, p.kl, dh);
        gemm(0, 0, p.ql, dh, dh, 1.0f, w.a, dh, w.S, dh, 0.0f, ob, s->ldo);
        for (int i = 0; i < p.ql; i++) db[i] = dotf(w.a + (long)i * dh, w.z, dh) + LIN_EPS;
    } else {
        /* tq == tk: query i sees keys j <= i (below kl) */
        memset(w.S, 0, sizeof(float) * (size_t)(dh * dh));
        for (int c0 = 0; c0 < p.ql; c0 += LIN_CHUNK) {
            const int m = p.ql - c0 < LIN_CHUNK ? p.ql - c0 : LIN_CHUNK;
            const int kn = c0 + m <= p.kl ? m : (p.kl > c0 ? p.kl - c0 : 0);
            const float *ac = w.a + (long)c0 * dh, *bc = w.b + (long)c0 * dh;
            const float *vc = p.v + (long)c0 * s->ldv;
            float *oc = ob + (long)c0 * s->ldo;
            /* the chunks before: φ(Q_c)·S, φ(Q_c)·z */
            gemm(0, 0, m, dh, dh, 1.0f, ac, dh, w.S, dh, 0.0f, oc, s->ldo);
            for (int i = 0; i < m; i++) db[c0 + i] = dotf(ac + (long)i * dh, w.z, dh);
            /* within the chunk */
            if (kn > 0) {
                chunk_scores(w.P, ac, bc, m, kn, dh);
                gemm(0, 0, m, dh, kn, 1.0f, w.P, LIN_CHUNK, vc, s->ldv, 1.0f, oc, s->ldo);
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < kn; j++) db[c0 + i] += w.P[(long)i * LIN_CHUNK + j];
                gemm(1, 0, dh, dh, kn, 1.0f, bc, dh, vc, s->ldv, 1.0f, w.S, dh);
                add_rows(w.z, bc, 0, kn, dh);
            }
            for (int i = 0; i < m; i++) db[c0 + i] += LIN_EPS;
        }
    }
    for (int i = 0; i < p.ql; i++) {
        const float inv = 1.0f / db[i];
        for (int c = 0; c < dh; c++) ob[(long)i * s->ldo + c] *= inv;
    }
    for (int i = p.ql; i < tq; i++) {       /* padding queries: 0 */
        db[i] = 1.0f;
        for (int c = 0; c < dh; c++) ob[(long)i * s->ldo + c] = 0.0f;
    }
}

void linattn_forward(float *out, float *den, float *scratch, int slices, const float *q,
                     const float *k, const float *v, const AttnShape *s)
{
    ForwardArgs a = {out, den};
    each_pair(scratch, slices, q, k, v, s, pair_forward, &a);
}

/* Backward of one pair, all keys visible: w->da, w->db (and dv) from w->dn, w->dd. */
static void pair_backward_full(Scratch *wp, const AttnShape *s, const Pair *pp, float *dvb)
{
    const Scratch w = *wp;
    const Pair p = *pp;
    const int dh = s->dh;
    memset(w.z, 0, sizeof(float) * (size_t)dh);
    gemm(1, 0, dh, dh, p.kl, 1.0f, w.b, dh, p.v, s->ldv, 0.0f, w.S, dh);
    add_rows(w.z, w.b, 0, p.kl, dh);
    /* dA = DN Sᵀ + dd zᵀ */
    gemm(0, 1, p.ql, dh, dh, 1.0f, w.dn, dh, w.S, dh, 0.0f, w.da, dh);
    for (int i = 0; i < p.ql; i++)
        for (int c = 0; c < dh; c++) w.da[(long)i * dh + c] += w.dd[i] * w.z[c];
    /* R = dS = Aᵀ DN, r = dz = Aᵀ dd */
    gemm(1, 0, dh, dh, p.ql, 1.0f, w.a, dh, w.dn, dh, 0.0f, w.R, dh);
    memset(w.r, 0, sizeof(float) * (size_t)dh);
    for (int i = 0; i < p.ql; i++)
        for (int c = 0; c < dh; c++) w.r[c] += w.a[(long)i * dh + c] * w.dd[i];
    /* dB = V dSᵀ + 1 dzᵀ;  dV += B dS */
    gemm(0, 1, p.kl, dh, dh, 1.0f, p.v, s->ldv, w.R, dh, 0.0f, w.db, dh);
    for (int j = 0; j < p.kl; j++)
        for (int c = 0; c < dh; c++) w.db[(long)j * dh + c] += w.r[c];
    if (dvb) gemm(0, 0, p.kl, dh, dh, 1.0f, w.b, dh, w.R, dh, 1.0f, dvb, s->ldv);
}

/* Backward of one pair, causal, chunk by chunk: a forward sweep for w->da,
 * a reverse sweep for w->db and dv. */
static void pair_backward_causal(Scratch *wp, const AttnShape *s, const Pair *pp, float *dvb)
{
    const Scratch w = *wp;
    const Pair p = *pp;
    const int dh = s->dh;
    const int nchunks = (p.ql + LIN_CHUNK - 1) / LIN_CHUNK;
    memset(w.S, 0, sizeof(float) * (size_t)(dh * dh));
    memset(w.z, 0, sizeof(float) * (size_t)dh);
    for (int ci = 0; ci < nchunks; ci++) {     /* forward sweep: dA */
        const int c0 = ci * LIN_CHUNK, m = p.ql - c0 < LIN_CHUNK ? p.ql - c0 : LIN_CHUNK;
        const int kn = c0 + m <= p.kl ? m : (p.kl > c0 ? p.kl - c0 : 0);
        const float *bc = w.b + (long)c0 * dh, *vc = p.v + (long)c0 * s->ldv;
        const float *dnc = w.dn + (long)c0 * dh, *ddc = w.dd + c0;
        float *dac = w.da + (long)c0 * dh;
        gemm(0, 1, m, dh, dh, 1.0f, dnc, dh, w.S, dh, 0.0f, dac, dh);
        for (int i = 0; i < m; i++)
            for (int c = 0; c < dh; c++) dac[(long)i * dh + c] += ddc[i] * w.z[c];
        if (kn == 0) continue;
        chunk_grad_scores(w.G, dnc, ddc, vc, s->ldv, m, kn, dh);
        gemm(0, 0, m, dh, kn, 1.0f, w.G, LIN_CHUNK, bc, dh, 1.0f, dac, dh);
        gemm(1, 0, dh, dh, kn, 1.0f, bc, dh, vc, s->ldv, 1.0f, w.S, dh);
        add_rows(w.z, bc, 0, kn, dh);
    }
    memset(w.R, 0, sizeof(float) * (size_t)(dh * dh));
    memset(w.r, 0, sizeof(float) * (size_t)dh);
    for (int ci = nchunks - 1; ci >= 0; ci--) {  /* reverse sweep: dB, dV */
        const int c0 = ci * LIN_CHUNK, m = p.ql - c0 < LIN_CHUNK ? p.ql - c0 : LIN_CHUNK;
        const int kn = c0 + m <= p.kl ? m : (p.kl > c0 ? p.kl - c0 : 0);
        const float *ac = w.a + (long)c0 * dh, *bc = w.b + (long)c0 * dh;
        const float *vc = p.v + (long)c0 * s->ldv;
        const float *dnc = w.dn + (long)c0 * dh, *ddc = w.dd + c0;
        float *dbc = w.db + (long)c0 * dh;
        if (kn > 0) {
            /* the chunks after: dB_c = V_c Rᵀ + 1 rᵀ, dV_c += B_c R */
            gemm(0, 1, kn, dh, dh, 1.0f, vc, s->ldv, w.R, dh, 0.0f, dbc, dh);
            for (int j = 0; j < kn; j++)
                for (int c = 0; c < dh; c++) dbc[(long)j * dh + c] += w.r[c];
            if (dvb)
                gemm(0, 0, kn, dh, dh, 1.0f, bc, dh, w.R, dh, 1.0f,
                     dvb + (long)c0 * s->ldv, s->ldv);
            /* within: dB_c += Gᵀ A_c, dV_c += Pᵀ DN_c */
            chunk_grad_scores(w.G, dnc, ddc, vc, s->ldv, m, kn, dh);
            gemm(1, 0, kn, dh, m, 1.0f, w.G, LIN_CHUNK, ac, dh, 1.0f, dbc, dh);
            if (dvb) {
                chunk_scores(w.P, ac, bc, m, kn, dh);
                gemm(1, 0, kn, dh, m, 1.0f, w.P, LIN_CHUNK, dnc, dh, 1.0f,
                     dvb + (long)c0 * s->ldv, s->ldv);
            }
        }
        gemm(1, 0, dh, dh, m, 1.0f, ac, dh, dnc, dh, 1.0f, w.R, dh);
        for (int i = 0; i < m; i++)
            for (int c = 0; c < dh; c++) w.r[c] += ac[(long)i * dh + c] * ddc[i];
    }
}

/* forward, per query i:  num_i = Σ_j (a_i·b_j) v_j,  den_i = Σ_j a_i·b_j + eps,
 * out_i = num_i / den_i  (a = φ(q), b = φ(k), j over visible keys). So
 *   dnum_i = dout_i / den_i,  dden_i = -(dout_i·out_i) / den_i
 *   da_i = Σ_j (dnum_i·v_j + dden_i) b_j,   db_j = Σ_i (dnum_i·v_j + dden_i) a_i,
 *   dv_j = Σ_i (a_i·b_j) dnum_i
 * Non-causal: with S = Bᵀ V, z = Bᵀ1: dA = DN Sᵀ + dd zᵀ, dS = Aᵀ DN, dz = Aᵀ dd,
 * dB = V dSᵀ + 1 dzᵀ, dV = B dS. Causal: the same split into the chunks
 * before (running S, z: a forward sweep for dA) and after (running
 * R = Σ Aᵀ DN, r = Σ Aᵀ dd: a reverse sweep for dB, dV), plus the masked
 * products G = M ⊙ (DN Vᵀ + dd 1ᵀ) and P = M ⊙ (A Bᵀ) within each chunk. */
/* linattn_backward's arrays, for pair_backward */
typedef struct {
    float *dq, *dk, *dv;
    const float *dout, *out, *den;
} BackwardArgs;

static void pair_backward(const AttnShape *s, const Pair *pp, Scratch *wp, void *ctx)
{
    const BackwardArgs *a = ctx;
    const int dh = s->dh, tq = s->tq, b = pp->b, h = pp->h;
    float *dq = a->dq, *dk = a->dk, *dv = a->dv;
    const Pair p = *pp;
    Scratch w = *wp;
    const float *dob = a->dout + b * s->o_stride + h * dh, *ob = a->out + b * s->o_stride + h * dh;
    const float *denb = a->den + p.bh * tq;
    for (int i = 0; i < p.ql; i++) {
        const float *g = dob + (long)i * s->ldo, *o = ob + (long)i * s->ldo;
        const float inv = 1.0f / denb[i];
        for (int c = 0; c < dh; c++) w.dn[(long)i * dh + c] = g[c] * inv;
        w.dd[i] = -dotf(g, o, dh) * inv;
    }
    memset(w.db, 0, sizeof(float) * (size_t)p.kl * (size_t)dh);
    float *dvb = dv ? dv + b * s->v_stride + h * dh : NULL;
    if (s->causal) pair_backward_causal(&w, s, &p, dvb);
    else pair_backward_full(&w, s, &p, dvb);
    /* through φ: dq += dA ⊙ φ'(q), dk += dB ⊙ φ'(k) (padded keys: b was
     * set to 0, not computed from k, so no gradient) */
    if (dq) {
        float *dqb = dq + b * s->q_stride + h * dh;
        for (int i = 0; i < p.ql; i++)
            phi_grad_row(dqb + (long)i * s->ldq, w.da + (long)i * dh, p.q + (long)i * s->ldq, dh);
    }
    if (dk) {
        float *dkb = dk + b * s->k_stride + h * dh;
        for (int j = 0; j < p.kl; j++) {
            if (s->key_tok && s->key_tok[(long)b * s->key_tok_stride + j] == s->key_pad)
                continue;
            phi_grad_row(dkb + (long)j * s->ldk, w.db + (long)j * dh, p.k + (long)j * s->ldk, dh);
        }
    }
}

void linattn_backward(float *dq, float *dk, float *dv, float *scratch, int slices,
                      const float *dout, const float *out, const float *den, const float *q,
                      const float *k, const float *v, const AttnShape *s)
{
    BackwardArgs a = {dq, dk, dv, dout, out, den};
    each_pair(scratch, slices, q, k, v, s, pair_backward, &a);
}

/* ---- the recurrent form, for decoding ---- */

void linattn_state_add(float *S, float *z, const float *k, const float *v, int heads, int dh)
{
    for (int h = 0; h < heads; h++) {
        float *restrict Sh = S + (long)h * dh * dh, *restrict zh = z + (long)h * dh;
        const float *restrict kh = k + (long)h * dh, *restrict vh = v + (long)h * dh;
        for (int c = 0; c < dh; c++) {
            const float f = phi(kh[c]);
            zh[c] += f;
            float *restrict row = Sh + (long)c * dh;
#pragma omp simd
            for (int e = 0; e < dh; e++) row[e] += f * vh[e];
        }
    }
}

void linattn_state_query(float *out, const float *q, const float *S, const float *z, int heads,
                         int dh)
{
    for (int h = 0; h < heads; h++) {
        const float *restrict Sh = S + (long)h * dh * dh, *restrict zh = z + (long)h * dh;
        const float *restrict qh = q + (long)h * dh;
        float *restrict oh = out + (long)h * dh;
        float den = 0;
        for (int e = 0; e < dh; e++) oh[e] = 0.0f;
        for (int c = 0; c < dh; c++) {
            const float *restrict row = Sh + (long)c * dh;
            const float fc = phi(qh[c]);
            den += fc * zh[c];
#pragma omp simd
            for (int e = 0; e < dh; e++) oh[e] += fc * row[e];
        }
        const float inv = 1.0f / (den + LIN_EPS);
        for (int e = 0; e < dh; e++) oh[e] *= inv;
    }
}
