/* rowexp: max, exp and sums along one row of floats, in 16 fixed lanes.
 *
 * The loss and the log-softmax spend their time here (a 10000-word row per
 * target token). GCC 12 at -O2 leaves the `omp simd` form of these loops
 * scalar (its cheap cost model refuses the reductions and exp_fast's
 * selects), so they are written with GCC/Clang vector extensions instead:
 * 16 lanes, whatever the ISA (one AVX-512 register, two AVX2 ones, four
 * SSE ones in a generic build; 16 rather than 8 halved the decoder's
 * log-softmax time on AVX-512 and keeps two independent chains in flight
 * on AVX2). Lane k takes elements k, k+16, ...; the lanes
 * are added in order (a row's tail is one more vector, its missing lanes
 * left out), so the sums are the same bits on any compiler and any thread
 * count. Each element's exp is exp_fast's, bit for
 * bit: the same operations in the same order. */
#include "nn/layers.h"

#include <math.h>
#include <string.h>

/* Every function that passes a 16-lane vector by value is static inline
 * in this file, so the vectors never cross an ABI boundary: GCC's note that
 * a 64-byte vector's passing differs without AVX-512 does not apply. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define LANES 16
typedef float vf __attribute__((vector_size(4 * LANES)));
typedef int32_t vi __attribute__((vector_size(4 * LANES)));

static inline vf loadv(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void storev(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* m ? a : b, lane by lane (m is all ones or all zeros in each lane) */
static inline vf selectv(vi m, vf a, vf b)
{
    return (vf)(((vi)a & m) | ((vi)b & ~m));
}

/* exp_fast (layers.h) on every lane: same clamps, same polynomial. */
static inline vf exp_fastv(vf x)
{
    const vf hi = x - x + 88.0f, lo = x - x - 87.0f;
    vf xc = selectv(x < 88.0f, x, hi);   /* NaN fails the test: 88 */
    xc = selectv(xc > -87.0f, xc, lo);
    const vf n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
    const vf r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    vf p = r * (1.0f / 720) + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vi two_n = (__builtin_convertvector(n, vi) + 127) << 23;
    const vf y = p * (vf)two_n;
    return (vf)((vi)y & ~(x < -87.33654f));
}

static inline float lanes_sum(vf v)
{
    float s = 0;
    for (int k = 0; k < LANES; k++) s += v[k];
    return s;
}

/* All ones in lanes 0 .. rem-1. */
static inline vi lanes_below(int rem)
{
    vi idx;
    for (int k = 0; k < LANES; k++) idx[k] = k;
    return idx < rem;
}

/* The last rem (< LANES) elements of a row as one vector, the other lanes
 * `pad`, and their store back: a short row (attention over a few keys) is
 * one vector operation, not rem scalar ones. Masked loads and stores where
 * the ISA has them: a short copy through a stack buffer then read as one
 * vector stalls on store forwarding, and at batch 1 that stall was most of
 * row_exp_inplace's time (perf, int8 decoder). */
#if defined(__AVX512F__)
#include <immintrin.h>
static inline vf load_tail(const float *x, int rem, float pad)
{
    return (vf)_mm512_mask_loadu_ps(_mm512_set1_ps(pad), (__mmask16)((1u << rem) - 1), x);
}

static inline void store_tail(float *x, int rem, vf v)
{
    _mm512_mask_storeu_ps(x, (__mmask16)((1u << rem) - 1), (__m512)v);
}
#elif defined(__AVX2__)
#include <immintrin.h>
static inline vf load_tail(const float *x, int rem, float pad)
{
    const vi m = lanes_below(rem);
    __m256i m_lo, m_hi;
    memcpy(&m_lo, &m, sizeof m_lo);
    memcpy(&m_hi, (const char *)&m + sizeof m_lo, sizeof m_hi);
    const __m256 lo = _mm256_maskload_ps(x, m_lo);
    const __m256 hi = rem > 8 ? _mm256_maskload_ps(x + 8, m_hi) : _mm256_setzero_ps();
    vf v;
    memcpy(&v, &lo, sizeof lo);
    memcpy((char *)&v + sizeof lo, &hi, sizeof hi);
    return selectv(m, v, (vf){0} + pad);
}

static inline void store_tail(float *x, int rem, vf v)
{
    const vi m = lanes_below(rem);
    __m256i m_lo, m_hi;
    __m256 lo, hi;
    memcpy(&m_lo, &m, sizeof m_lo);
    memcpy(&m_hi, (const char *)&m + sizeof m_lo, sizeof m_hi);
    memcpy(&lo, &v, sizeof lo);
    memcpy(&hi, (const char *)&v + sizeof lo, sizeof hi);
    _mm256_maskstore_ps(x, m_lo, lo);
    if (rem > 8) _mm256_maskstore_ps(x + 8, m_hi, hi);
}
#else
static inline vf load_tail(const float *x, int rem, float pad)
{
    float buf[LANES];
    for (int k = 0; k < LANES; k++) buf[k] = pad;
    memcpy(buf, x, (size_t)rem * sizeof *x);
    return loadv(buf);
}

static inline void store_tail(float *x, int rem, vf v)
{
    float buf[LANES];
    storev(buf, v);
    memcpy(x, buf, (size_t)rem * sizeof *x);
}
#endif

/* The largest lane, by halves (16 -> 8 -> 4 -> 2 -> 1) in registers: a
 * loop over the lanes reads them back from the stack one by one, a
 * store-forwarding stall that was most of a short row's time (perf, int8
 * batch 1). A max does not depend on its order (NaN lanes never win), so
 * any reduction gives the same value. */
static inline float lanes_max(vf m)
{
    typedef float vf8 __attribute__((vector_size(32)));
    typedef float vf4 __attribute__((vector_size(16)));
    typedef int32_t vi8 __attribute__((vector_size(32)));
    typedef int32_t vi4 __attribute__((vector_size(16)));
    vf8 m8 = __builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7);
    const vf8 h8 = __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15);
    const vi8 k8 = h8 > m8;
    m8 = (vf8)(((vi8)h8 & k8) | ((vi8)m8 & ~k8));
    vf4 m4 = __builtin_shufflevector(m8, m8, 0, 1, 2, 3);
    const vf4 h4 = __builtin_shufflevector(m8, m8, 4, 5, 6, 7);
    const vi4 k4 = h4 > m4;
    m4 = (vf4)(((vi4)h4 & k4) | ((vi4)m4 & ~k4));
    const float a = m4[0] > m4[2] ? m4[0] : m4[2];
    const float b = m4[1] > m4[3] ? m4[1] : m4[3];
    return a > b ? a : b;
}

/* The lanes' sum by halves, for a sum whose order does not matter. */
static inline float lanes_sum_tree(vf v)
{
    typedef float vf8 __attribute__((vector_size(32)));
    typedef float vf4 __attribute__((vector_size(16)));
    const vf8 p8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    const vf4 p4 = __builtin_shufflevector(p8, p8, 0, 1, 2, 3) +
                   __builtin_shufflevector(p8, p8, 4, 5, 6, 7);
    return p4[0] + p4[1] + p4[2] + p4[3];
}

float row_max(const float *x, int n)
{
    if (n <= 0) return -INFINITY;
    vf m = (vf){0} - INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf v = loadv(x + i);
        m = selectv(v > m, v, m);
    }
    if (i < n) {
        const vf v = load_tail(x + i, n - i, -INFINITY);
        m = selectv(v > m, v, m);
    }
    return lanes_max(m);
}

/* The NaN/Inf probe is Σ x[i]·0: 0 for finite x, NaN otherwise (only
 * whether it is 0 is read, so the order of the sum does not matter). */
float row_max_abs(const float *x, int n, bool *nonfinite)
{
    vf m = {0}, probe = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf v = loadv(x + i);
        const vf a = (vf)((vi)v & 0x7fffffff);
        m = selectv(a > m, a, m);
        probe += v * 0.0f;
    }
    if (i < n) {
        const vf v = load_tail(x + i, n - i, 0.0f);
        const vf a = (vf)((vi)v & 0x7fffffff);
        m = selectv(a > m, a, m);
        probe += v * 0.0f;
    }
    *nonfinite = lanes_sum_tree(probe) != 0.0f;
    return lanes_max(m);
}

/* Lane k sums elements k, k+LANES, ... (the tail as one more vector whose
 * missing lanes add 0), then the lanes are added in order. */
float row_exp_sum(const float *x, int n, float shift, float *sum_x)
{
    vf acc = {0}, acc_x = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf v = loadv(x + i);
        acc_x += v;
        acc += exp_fastv(v - shift);
    }
    if (i < n) {
        const vf v = load_tail(x + i, n - i, 0.0f);
        acc_x += v;
        acc += (vf)((vi)exp_fastv(v - shift) & lanes_below(n - i));
    }
    if (sum_x) *sum_x = lanes_sum(acc_x);
    return lanes_sum(acc);
}

float row_exp_inplace(float *x, int n, float shift, float *sum_before)
{
    vf acc = {0}, acc_x = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf v = loadv(x + i);
        const vf e = exp_fastv(v - shift);
        acc_x += v;
        acc += e;
        storev(x + i, e);
    }
    if (i < n) {
        const vf v = load_tail(x + i, n - i, 0.0f);
        const vf e = (vf)((vi)exp_fastv(v - shift) & lanes_below(n - i));
        acc_x += v;
        acc += e;
        store_tail(x + i, n - i, e);
    }
    if (sum_before) *sum_before = lanes_sum(acc_x);
    return lanes_sum(acc);
}

float row_softmax_inplace(float *x, int n, float shift)
{
    vf acc = {0}, tail = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf e = exp_fastv(loadv(x + i) - shift);
        acc += e;
        storev(x + i, e);
    }
    if (i < n) {
        tail = (vf)((vi)exp_fastv(load_tail(x + i, n - i, 0.0f) - shift) & lanes_below(n - i));
        acc += tail;
    }
    const float sum = lanes_sum(acc), inv = 1.0f / sum;
    for (int j = 0; j + LANES <= n; j += LANES) storev(x + j, loadv(x + j) * inv);
    /* the tail from its register: read back from a masked store, it stalled */
    if (i < n) store_tail(x + i, n - i, tail * inv);
    return sum;
}

float row_dot(const float *x, const float *y, int n)
{
    vf acc = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) acc += loadv(x + i) * loadv(y + i);
    if (i < n) acc += load_tail(x + i, n - i, 0.0f) * load_tail(y + i, n - i, 0.0f);
    return lanes_sum(acc);
}

float row_sum(const float *x, int n)
{
    vf acc = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) acc += loadv(x + i);
    if (i < n) acc += load_tail(x + i, n - i, 0.0f);
    return lanes_sum(acc);
}

float row_centered_sq_sum(const float *x, int n, float mu)
{
    vf acc = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        const vf c = loadv(x + i) - mu;
        acc += c * c;
    }
    if (i < n) {
        const vf c = (vf)((vi)(load_tail(x + i, n - i, 0.0f) - mu) & lanes_below(n - i));
        acc += c * c;
    }
    return lanes_sum(acc);
}
