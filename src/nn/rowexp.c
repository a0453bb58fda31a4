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
 * bit: the same operations in the same order.
 *
 * The 16 lanes are PARTS vectors of the ISA's own width (vn), not one
 * 16-lane vector type: GCC 12 keeps a vector wider than the ISA's in memory
 * and lowers its compares to one scalar compare per lane, so on AVX2 every
 * step of every loop went through the stack (perf, Zen 3: the row kernels
 * were a fifth of a batch-1 decode). */
#include "nn/layers.h"
#include "nn/vec_width.h"

#include <math.h>
#include <string.h>

#define LANES 16
#define NATIVE VEC_FLOATS
#define PARTS (LANES / NATIVE)
typedef float vn __attribute__((vector_size(4 * NATIVE)));
typedef int32_t vni __attribute__((vector_size(4 * NATIVE)));

/* Over the parts of the 16 lanes: GCC unrolls it and keeps each part's
 * vectors in registers. */
#define EACH_PART(k) for (int k = 0; k < PARTS; k++)

static inline vn loadn(const float *p)
{
    vn v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void storen(float *p, vn v) { memcpy(p, &v, sizeof v); }

/* m ? a : b, lane by lane (m is all ones or all zeros in each lane) */
static inline vn selectn(vni m, vn a, vn b)
{
    return (vn)(((vni)a & m) | ((vni)b & ~m));
}

/* exp_fast (layers.h) on every lane: same clamps, same polynomial. */
static inline vn exp_fastn(vn x)
{
    const vn hi = x - x + 88.0f, lo = x - x - 87.0f;
    vn xc = selectn(x < 88.0f, x, hi);   /* NaN fails the test: 88 */
    xc = selectn(xc > -87.0f, xc, lo);
    const vn n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
    const vn r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    vn p = r * (1.0f / 720) + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vni two_n = (__builtin_convertvector(n, vni) + 127) << 23;
    const vn y = p * (vn)two_n;
    return (vn)((vni)y & ~(x < -87.33654f));
}

/* The lanes added in order: 0, 1, ..., 15. */
static inline float lanes_sum(const vn v[PARTS])
{
    float s = 0;
    EACH_PART(k) {
        for (int j = 0; j < NATIVE; j++) s += v[k][j];
    }
    return s;
}

/* The lanes' sum in any order (a NaN probe, where only 0 or not counts). */
static inline float lanes_sum_any(const vn v[PARTS])
{
    vn s = v[0];
    for (int k = 1; k < PARTS; k++) s += v[k];
    float t = 0;
    for (int j = 0; j < NATIVE; j++) t += s[j];
    return t;
}

/* The largest lane: the parts, then the halves of one vector (16 -> 8 ->
 * 4 lanes), in registers, then 4 scalars: a loop over a wide vector's
 * lanes reads them back from the stack one by one, a store-forwarding
 * stall that was most of a short row's time (perf, int8 batch 1, Zen 4).
 * A max does not depend on its order (NaN lanes never win). */
static inline float lanes_max(const vn v[PARTS])
{
    typedef float vf4 __attribute__((vector_size(16)));
    vn m = v[0];
    for (int k = 1; k < PARTS; k++) m = selectn(v[k] > m, v[k], m);
#if NATIVE == 16
    typedef float vf8 __attribute__((vector_size(32)));
    typedef int32_t vi8 __attribute__((vector_size(32)));
    vf8 m8 = __builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7);
    const vf8 h8 = __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15);
    const vi8 k8 = h8 > m8;
    m8 = (vf8)(((vi8)h8 & k8) | ((vi8)m8 & ~k8));
#else
    const vn m8 = m;
#endif
#if NATIVE >= 8
    typedef int32_t vi4 __attribute__((vector_size(16)));
    vf4 m4 = __builtin_shufflevector(m8, m8, 0, 1, 2, 3);
    const vf4 h4 = __builtin_shufflevector(m8, m8, 4, 5, 6, 7);
    const vi4 k4 = h4 > m4;
    m4 = (vf4)(((vi4)h4 & k4) | ((vi4)m4 & ~k4));
#else
    const vf4 m4 = m8;
#endif
    const float a = m4[0] > m4[2] ? m4[0] : m4[2];
    const float b = m4[1] > m4[3] ? m4[1] : m4[3];
    return a > b ? a : b;
}

/* All ones in lanes 0 .. rem-1 (0 <= rem <= LANES): loads from a window
 * of ones then zeros, not a compare of each lane's index with rem (GCC 12
 * for AVX2 built that mask lane by lane on the stack). */
#if defined(__AVX512F__)
#include <immintrin.h>
static inline void lanes_below(vni m[PARTS], int rem)
{
    m[0] = (vni)_mm512_maskz_set1_epi32((__mmask16)((1u << rem) - 1), -1);
}
#else
static inline void lanes_below(vni m[PARTS], int rem)
{
    static const int32_t window[2 * LANES] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                              -1, -1, -1, -1, -1, -1, -1, -1};
    EACH_PART(k) memcpy(&m[k], window + LANES - rem + k * NATIVE, sizeof m[k]);
}
#endif

/* The last rem (< LANES) elements of a row, the other lanes `pad`, and
 * their store back: a short row (attention over a few keys) is one vector
 * operation, not rem scalar ones. Masked loads and stores where the ISA
 * has them: a short copy through a stack buffer then read as one vector
 * stalls on store forwarding, and at batch 1 that stall was most of
 * row_exp_inplace's time (perf, int8 decoder). */
#if defined(__AVX512F__)
static inline void load_tail(vn v[PARTS], const float *x, int rem, float pad)
{
    v[0] = (vn)_mm512_mask_loadu_ps(_mm512_set1_ps(pad), (__mmask16)((1u << rem) - 1), x);
}

static inline void store_tail(float *x, int rem, const vn v[PARTS])
{
    _mm512_mask_storeu_ps(x, (__mmask16)((1u << rem) - 1), (__m512)v[0]);
}
#elif defined(__AVX2__)
#include <immintrin.h>
static inline void load_tail(vn v[PARTS], const float *x, int rem, float pad)
{
    vni m[PARTS];
    lanes_below(m, rem);
    v[0] = (vn)_mm256_maskload_ps(x, (__m256i)m[0]);
    v[1] = rem > 8 ? (vn)_mm256_maskload_ps(x + 8, (__m256i)m[1]) : (vn){0};
    EACH_PART(k) v[k] = selectn(m[k], v[k], (vn){0} + pad);
}

static inline void store_tail(float *x, int rem, const vn v[PARTS])
{
    vni m[PARTS];
    lanes_below(m, rem);
    _mm256_maskstore_ps(x, (__m256i)m[0], (__m256)v[0]);
    if (rem > 8) _mm256_maskstore_ps(x + 8, (__m256i)m[1], (__m256)v[1]);
}
#else
static inline void load_tail(vn v[PARTS], const float *x, int rem, float pad)
{
    float buf[LANES];
    for (int k = 0; k < LANES; k++) buf[k] = pad;
    memcpy(buf, x, (size_t)rem * sizeof *x);
    EACH_PART(k) v[k] = loadn(buf + k * NATIVE);
}

static inline void store_tail(float *x, int rem, const vn v[PARTS])
{
    float buf[LANES];
    EACH_PART(k) storen(buf + k * NATIVE, v[k]);
    memcpy(x, buf, (size_t)rem * sizeof *x);
}
#endif

/* A row's tail (rem < LANES elements at x): its values in v (missing
 * lanes 0) and their exp_fast(v - shift) in e (missing lanes 0, not
 * exp(-shift)). */
static inline void tail_exp(vn v[PARTS], vn e[PARTS], const float *x, int rem, float shift)
{
    vni m[PARTS];
    load_tail(v, x, rem, 0.0f);
    lanes_below(m, rem);
    EACH_PART(k) e[k] = (vn)((vni)exp_fastn(v[k] - shift) & m[k]);
}

float row_max(const float *x, int n)
{
    if (n <= 0) return -INFINITY;
    vn m[PARTS];
    EACH_PART(k) m[k] = (vn){0} - INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn v = loadn(x + i + k * NATIVE);
            m[k] = selectn(v > m[k], v, m[k]);
        }
    }
    if (i < n) {
        vn v[PARTS];
        load_tail(v, x + i, n - i, -INFINITY);
        EACH_PART(k) m[k] = selectn(v[k] > m[k], v[k], m[k]);
    }
    return lanes_max(m);
}

/* The NaN/Inf probe is Σ x[i]·0: 0 for finite x, NaN otherwise. */
float row_max_abs(const float *x, int n, bool *nonfinite)
{
    vn m[PARTS], probe[PARTS];
    EACH_PART(k) m[k] = probe[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn v = loadn(x + i + k * NATIVE);
            const vn a = (vn)((vni)v & 0x7fffffff);
            m[k] = selectn(a > m[k], a, m[k]);
            probe[k] += v * 0.0f;
        }
    }
    if (i < n) {
        vn v[PARTS];
        load_tail(v, x + i, n - i, 0.0f);
        EACH_PART(k) {
            const vn a = (vn)((vni)v[k] & 0x7fffffff);
            m[k] = selectn(a > m[k], a, m[k]);
            probe[k] += v[k] * 0.0f;
        }
    }
    *nonfinite = lanes_sum_any(probe) != 0.0f;
    return lanes_max(m);
}

/* Lane k sums elements k, k+LANES, ... (the tail as one more vector whose
 * missing lanes add 0), then the lanes are added in order. */
float row_exp_sum(const float *x, int n, float shift, float *sum_x)
{
    vn acc[PARTS], acc_x[PARTS];
    EACH_PART(k) acc[k] = acc_x[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn v = loadn(x + i + k * NATIVE);
            acc_x[k] += v;
            acc[k] += exp_fastn(v - shift);
        }
    }
    if (i < n) {
        vn v[PARTS], e[PARTS];
        tail_exp(v, e, x + i, n - i, shift);
        EACH_PART(k) {
            acc_x[k] += v[k];
            acc[k] += e[k];
        }
    }
    if (sum_x) *sum_x = lanes_sum(acc_x);
    return lanes_sum(acc);
}

float row_exp_inplace(float *x, int n, float shift, float *sum_before)
{
    vn acc[PARTS], acc_x[PARTS];
    EACH_PART(k) acc[k] = acc_x[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn v = loadn(x + i + k * NATIVE);
            const vn e = exp_fastn(v - shift);
            acc_x[k] += v;
            acc[k] += e;
            storen(x + i + k * NATIVE, e);
        }
    }
    if (i < n) {
        vn v[PARTS], e[PARTS];
        tail_exp(v, e, x + i, n - i, shift);
        EACH_PART(k) {
            acc_x[k] += v[k];
            acc[k] += e[k];
        }
        store_tail(x + i, n - i, e);
    }
    if (sum_before) *sum_before = lanes_sum(acc_x);
    return lanes_sum(acc);
}

float row_softmax_inplace(float *x, int n, float shift)
{
    vn acc[PARTS], tail[PARTS];
    EACH_PART(k) acc[k] = tail[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn e = exp_fastn(loadn(x + i + k * NATIVE) - shift);
            acc[k] += e;
            storen(x + i + k * NATIVE, e);
        }
    }
    if (i < n) {
        vn v[PARTS];
        tail_exp(v, tail, x + i, n - i, shift);
        EACH_PART(k) acc[k] += tail[k];
    }
    const float sum = lanes_sum(acc), inv = 1.0f / sum;
    for (int j = 0; j + LANES <= n; j += LANES) {
        EACH_PART(k) storen(x + j + k * NATIVE, loadn(x + j + k * NATIVE) * inv);
    }
    /* the tail from its register: read back from a masked store, it stalled */
    if (i < n) {
        EACH_PART(k) tail[k] *= inv;
        store_tail(x + i, n - i, tail);
    }
    return sum;
}

float row_dot(const float *x, const float *y, int n)
{
    vn acc[PARTS];
    EACH_PART(k) acc[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) acc[k] += loadn(x + i + k * NATIVE) * loadn(y + i + k * NATIVE);
    }
    if (i < n) {
        vn a[PARTS], b[PARTS];
        load_tail(a, x + i, n - i, 0.0f);
        load_tail(b, y + i, n - i, 0.0f);
        EACH_PART(k) acc[k] += a[k] * b[k];
    }
    return lanes_sum(acc);
}

float row_sum(const float *x, int n)
{
    vn acc[PARTS];
    EACH_PART(k) acc[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) acc[k] += loadn(x + i + k * NATIVE);
    }
    if (i < n) {
        vn v[PARTS];
        load_tail(v, x + i, n - i, 0.0f);
        EACH_PART(k) acc[k] += v[k];
    }
    return lanes_sum(acc);
}

float row_centered_sq_sum(const float *x, int n, float mu)
{
    vn acc[PARTS];
    EACH_PART(k) acc[k] = (vn){0};
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        EACH_PART(k) {
            const vn c = loadn(x + i + k * NATIVE) - mu;
            acc[k] += c * c;
        }
    }
    if (i < n) {
        vn v[PARTS];
        vni m[PARTS];
        load_tail(v, x + i, n - i, 0.0f);
        lanes_below(m, n - i);
        EACH_PART(k) {
            const vn c = (vn)((vni)(v[k] - mu) & m[k]);
            acc[k] += c * c;
        }
    }
    return lanes_sum(acc);
}
