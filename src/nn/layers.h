/* layers: the Transformer's kernels as forward/backward pairs on raw float
 * arrays plus dimensions. No allocation, no error paths: shapes are the
 * caller's invariants. Implemented in ops.c, layernorm.c, linear.c and
 * attention.c; the model (model.c) and the incremental decoder build on them.
 *
 * Dimension letters: N rows (tokens, padding included), D d_model, H heads,
 * Dh = D/H head size, F d_ff, V vocabulary, Tq/Tk query/key lengths.
 * All matrices are row-major; weights are (out, in) as in PyTorch.
 *
 * BACKWARD ALWAYS ACCUMULATES: every *_backward adds (+=) into its d* outputs,
 * so a caller zeroes them first (or sums the contributions of several users,
 * e.g. the encoder output read by every cross-attention). A NULL d* pointer
 * skips that gradient. Exceptions are named in their comments (dropout_apply).
 *
 * Threads: loops use OpenMP, products go through blas.c. Results depend only
 * on the inputs and the thread count (no atomics, no dynamic schedules).
 */
#ifndef TFM_LAYERS_H
#define TFM_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

/* ---- linear: y = x·Wᵀ + b (linear.c) ---- */

/* y (N, out) = x (N, in) · w (out, in)ᵀ + b (out); b may be NULL. Overwrites y. */
void linear_forward(float *y, const float *x, const float *w, const float *b,
                    int n, int in, int out);

/* dx (N, in) += dy·w;  dw (out, in) += dyᵀ·x;  db (out) += Σ_rows dy. */
void linear_backward(float *dx, float *dw, float *db, const float *dy,
                     const float *x, const float *w, int n, int in, int out);

/* Position-wise FFN with ReLU and inverted dropout (probability p, mask
 * from seed, see dropout_apply) after the ReLU:
 * h (N, F) = drop(max(0, x·w1ᵀ + b1)), kept for backward; y (N, D) = h·w2ᵀ + b2. */
void ffn_forward(float *y, float *h, const float *x, const float *w1, const float *b1,
                 const float *w2, const float *b2, int n, int d, int f,
                 float p, uint64_t seed);

/* Backward of ffn_forward from dy (N, D). dh (N, F) is scratch (overwritten).
 * dx += ..., dw1, db1, dw2, db2 += ... Uses only h (not the pre-activation):
 * h > 0 exactly where the ReLU passed and the dropout mask kept. */
void ffn_backward(float *dx, float *dw1, float *db1, float *dw2, float *db2,
                  float *dh, const float *dy, const float *x, const float *h,
                  const float *w1, const float *w2, int n, int d, int f, float p);

/* ---- layernorm (layernorm.c) ---- */

#define LN_EPS 1e-5f   /* PyTorch's default */

/* y = (x - mean) * rstd * g + b per row of x (N, D), biased variance.
 * mean, rstd (N) are saved for backward (either may be NULL for inference).
 * y may not alias x. */
void layernorm_forward(float *y, float *mean, float *rstd, const float *x,
                       const float *g, const float *b, int n, int d);

/* dx += ∂/∂x, dg += Σ dy·x̂, db += Σ dy, for y = x̂·g + b, x̂ = (x - mean)·rstd. */
void layernorm_backward(float *dx, float *dg, float *db, const float *dy,
                        const float *x, const float *mean, const float *rstd,
                        const float *g, int n, int d);

/* ---- RMSNorm (rmsnorm.c) ---- */

/* y = x·rstd·g, rstd = (mean(x²) + LN_EPS)^-1/2 per row (no centring, no
 * bias); rstd (n) is kept for backward unless NULL. */
void rmsnorm_forward(float *y, float *rstd, const float *x, const float *g, int n, int d);

/* dx += ∂/∂x, dg += Σ dy·x̂ (either may be NULL). */
void rmsnorm_backward(float *dx, float *dg, const float *dy, const float *x, const float *rstd,
                      const float *g, int n, int d);

/* The model's normalisation (model.norm_type): LayerNorm uses mean and b
 * (db), RMSNorm ignores them (they may be NULL). */
typedef enum { NORM_LAYER = 0, NORM_RMS = 1 } NormType;
void norm_forward(NormType t, float *y, float *mean, float *rstd, const float *x, const float *g,
                  const float *b, int n, int d);
void norm_backward(NormType t, float *dx, float *dg, float *db, const float *dy, const float *x,
                   const float *mean, const float *rstd, const float *g, int n, int d);

/* ---- attention (attention.c) ---- */

/* Shapes and strides of multi-head scaled dot-product attention over n
 * sentences. Head h of a sentence uses columns [h·Dh, (h+1)·Dh) of its rows.
 * Sentence b's query rows start at q + b·q_stride (row stride ldq), and
 * likewise for k, v and out; so Q, K, V can be column blocks of one fused
 * projection (ldq = 3D) or rows of a KV cache (k_stride = T_max·ldk). */
typedef struct {
    int n, heads, dh;
    int tq, tk;                 /* query and key lengths */
    int ldq, ldk, ldv, ldo;     /* row strides, in floats */
    long q_stride, k_stride, v_stride, o_stride;   /* sentence strides, in floats */
    const int *key_tok;         /* (n, key_tok_stride): key j of sentence b is
                                   masked when key_tok[b·stride + j] == key_pad;
                                   NULL: no padding mask */
    int key_tok_stride;
    int key_pad;                /* the padding id (the vocabulary's TOK_PAD, 0) */
    const int *key_len;         /* forward only, (n) or NULL: keys j >= key_len[b]
                                   are padding and are not computed at all
                                   (probability 0); they must be masked anyway */
    int query_pad;              /* forward only, with key_len (self-attention):
                                   query rows i >= key_len[b] are padding too,
                                   not computed, output 0. Then nothing a
                                   sentence gets depends on how far the batch
                                   is padded (translation: batch independence) */
    int causal;                 /* query i sees keys j <= i + (tk - tq), so a
                                   single query at the end (tq = 1) sees all */
    const int *key_row;         /* forward only, (n, key_row_stride) or NULL: key
                                   (and value) j of sentence b is in sentence
                                   key_row[b·stride + j]'s rows (at + that ·
                                   k_stride + j·ldk; v likewise, v_stride must
                                   equal k_stride), not b's: a beam's rows
                                   share the cache of their common prefix */
    int key_row_stride;
    const int *kv_sent;         /* forward only, (n) or NULL: sentence b's keys and
                                   values are sentence kv_sent[b]'s (at k +
                                   kv_sent[b]·k_stride, v likewise), not b's: a
                                   decoder drops finished sentences from its
                                   batch without moving the others' */
} AttnShape;

/* Floats in one probability array: n · heads · tq · tk. */
long attn_probs_size(const AttnShape *s);

/* out = softmax(mask(Q·Kᵀ/sqrt(Dh)))·V per (sentence, head).
 * att (n, H, Tq, Tk): probabilities after masking, kept for backward.
 * att_d: the probabilities after inverted dropout (probability p, mask from
 * seed) and used for the product; pass att_d == att when p == 0.
 * A query row whose keys are all masked gets probabilities 0 and output 0. */
void attention_forward(float *out, float *att, float *att_d, const float *q,
                       const float *k, const float *v, const AttnShape *s,
                       float p, uint64_t seed);

/* Backward from dout: dq, dk, dv += (same layouts/strides as q, k, v).
 * datt is scratch of attn_probs_size floats (overwritten). */
void attention_backward(float *dq, float *dk, float *dv, float *datt,
                        const float *dout, const float *att, const float *att_d,
                        const float *q, const float *k, const float *v,
                        const AttnShape *s, float p);

/* ---- linear attention (linear_attention.c, model.attention "linear") ---- */

/* out_i = φ(q_i)·S / (φ(q_i)·z + LIN_EPS) per (sentence, head), S = Σ_j φ(k_j) v_jᵀ,
 * z = Σ_j φ(k_j) over the visible keys, φ(x) = elu(x) + 1. Same AttnShape as
 * softmax attention (padding mask, key_len/query_pad); causal needs tq == tk
 * and then runs in chunks of LIN_CHUNK positions. No attention dropout. */
#define LIN_EPS 1e-6f       /* as in Katharopoulos et al.'s code */
#define LIN_CHUNK 64

/* Floats of one scratch slice for lengths up to max_len. Forward and
 * backward take `slices` of them and run on at most that many threads, one
 * slice each (which thread takes which (sentence, head) pair does not
 * change any result). */
long linattn_scratch_floats(int max_len, int dh);

/* Overwrites out; den (n, H, Tq): the denominators, kept for backward. */
void linattn_forward(float *out, float *den, float *scratch, int slices, const float *q,
                     const float *k, const float *v, const AttnShape *s);

/* dq, dk, dv += the gradients from dout; out and den are the forward's. */
void linattn_backward(float *dq, float *dk, float *dv, float *scratch, int slices,
                      const float *dout, const float *out, const float *den, const float *q,
                      const float *k, const float *v, const AttnShape *s);

/* The recurrent form for decoding, per position, all heads of one row:
 * S (H, Dh, Dh) += φ(k) vᵀ and z (H, Dh) += φ(k) for k, v (D) ... */
void linattn_state_add(float *S, float *z, const float *k, const float *v, int heads, int dh);
/* ... and out (D) = φ(q)·S / (φ(q)·z + LIN_EPS) per head. */
void linattn_state_query(float *out, const float *q, const float *S, const float *z, int heads,
                         int dh);

/* ---- elementwise and row kernels (ops.c) ---- */

/* exp(x) to ~2 ulp, in plain float arithmetic so that `omp simd` loops
 * vectorize it (glibc's expf is a call per element): x = n·ln2 + r with
 * |r| <= ln2/2, degree-6 Taylor polynomial for exp(r) (truncation r^7/7! <
 * 1.2e-7), then 2^n through the exponent bits. Underflow (x < -87.3,
 * including -inf) gives exactly 0; x > 88 is clamped (softmax and the loss
 * only pass x <= 0). The clamps are written so that NaN becomes 88 before
 * the int conversion (no undefined behaviour); a NaN input then shows up
 * through the caller's other sums (the loss adds the raw logits). */
static inline float exp_fast(float x)
{
    float xc = x < 88.0f ? x : 88.0f;
    xc = xc > -87.0f ? xc : -87.0f;
    /* round to nearest via the 1.5·2^23 trick (no libm call) */
    const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
    const float r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { int32_t i; float f; } two_n = {.i = ((int32_t)n + 127) << 23};
    return x < -87.33654f ? 0.0f : p * two_n.f;
}

/* Row kernels in 16 fixed lanes (rowexp.c): the same bits on any compiler
 * and thread count. row_max of an empty row is -inf. */
float row_max(const float *x, int n);
/* max |x[i]| (0 for an empty row); *nonfinite says whether any x[i] is NaN
 * or ±Inf. */
float row_max_abs(const float *x, int n, bool *nonfinite);
/* Σ exp_fast(x[i] - shift); x is not changed. If sum_x is not NULL, the
 * sum of the x[i] goes there. */
float row_exp_sum(const float *x, int n, float shift, float *sum_x);
/* x[i] = exp_fast(x[i] - shift); returns their sum, and, if sum_before is
 * not NULL, stores there the sum of the x[i] it replaced. */
float row_exp_inplace(float *x, int n, float shift, float *sum_before);
/* x[i] = exp_fast(x[i] - shift) · (1 / Σ), Σ the sum of those exps, which
 * it returns: row_exp_inplace then a multiply by 1/Σ, the same bits. */
float row_softmax_inplace(float *x, int n, float shift);
/* Σ x[i]·y[i]. */
float row_dot(const float *x, const float *y, int n);
/* Σ x[i], and Σ (x[i] - mu)² (a LayerNorm's two passes). */
float row_sum(const float *x, int n);
float row_centered_sq_sum(const float *x, int n, float mu);

/* The inverted-dropout mask of element i is a pure function of (seed, i):
 * kept with probability 1 - t/65536, t = round(p·65536), and scaled by
 * 65536/(65536 - t) so the expectation is exact. Counter-based, so the mask
 * does not depend on threads, and backward regenerates it instead of storing it. */
float dropout_scale(float p);

/* y = x ⊙ mask(seed)·scale over n elements; y may alias x; p <= 0 copies.
 * The op is diagonal, so it is its own backward: call it on dy to get dx
 * (this one OVERWRITES, unlike the *_backward functions). */
void dropout_apply(float *y, const float *x, long n, float p, uint64_t seed);

/* out = x + dropout(y) over n elements (the residual add of a sublayer). */
void residual_dropout_forward(float *out, const float *x, const float *y, long n,
                              float p, uint64_t seed);

/* A seed for dropout site `site` from a per-step base seed. */
uint64_t dropout_site_seed(uint64_t base, uint64_t site);

/* Sinusoidal positions (max_len, D): PE[pos, 2i] = sin(pos / 10000^(2i/D)),
 * PE[pos, 2i+1] = cos(same angle). */
void positions_init(float *pe, int max_len, int d);

/* Word dropout (Gal & Ghahramani 2016; Sennrich & Zhang 2019): row r of an
 * embedding lookup keeps its token embedding with probability 1 - p, scaled
 * by 1/(1 - p) as dropout_apply scales, or loses it whole and keeps only its
 * position. Returns that factor (0 or the scale; 1 for p <= 0), a pure
 * function of (seed, r) like the dropout masks, so backward regenerates it. */
float word_keep(long r, float p, uint64_t seed);

/* out[b·len + t] = emb[tok[b·len + t]]·scale·word_keep(b·len + t, p_word, seed)
 * + pe[pos0 + t] for tok (n, len), out (n·len, D). For one decoding step:
 * len = 1, pos0 = step. p_word 0: no word dropout (evaluation, decoding).
 * Token ids must be valid (the caller checks). */
void embed_forward(float *out, const int *tok, int n, int len, const float *emb,
                   const float *pe, int pos0, int d, float scale, float p_word,
                   uint64_t seed);

/* demb[tok[r]] += scale·word_keep(r, p_word, seed) · dout[r] for r < rows
 * (positions have no parameters). */
void embed_backward(float *demb, const float *dout, const int *tok, long rows,
                    int d, float scale, float p_word, uint64_t seed);

/* In place: each row of x (N, V) becomes its log-softmax (a row's bits do
 * not depend on N; from a parallel region, on the calling thread). */
void logsoftmax_rows(float *x, int n, int v);

/* dst[i] = src[idx[i]] for rows of width d, i < m. */
void gather_rows(float *dst, const float *src, const int *idx, int m, int d);

/* dst[idx[i]] += src[i] (idx distinct). */
void scatter_add_rows(float *dst, const float *src, const int *idx, int m, int d);

/* y += x over n elements. */
void add_inplace(float *y, const float *x, long n);

#endif
