/* rowexp: max, exp and sums along one row of floats, in 8 fixed lanes.
 *
 * The loss and the log-softmax spend their time here (a 10000-word row per
 * target token). GCC 12 at -O2 leaves the `omp simd` form of these loops
 * scalar (its cheap cost model refuses the reductions and exp_fast's
 * selects), so they are written with GCC/Clang vector extensions instead:
 * 8 lanes, whatever the ISA (-march=native gives one AVX2 register, a
 * generic build two SSE ones). Lane k takes elements k, k+8, ...; the lanes
 * are added in order, then the tail, so the sums are the same bits on any
 * compiler and any thread count. Each element's exp is exp_fast's, bit for
 * bit: the same operations in the same order. */
#include "nn/layers.h"

#include <math.h>
#include <string.h>

typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

static inline f32x8 load8(const float *p)
{
    f32x8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, f32x8 v) { memcpy(p, &v, sizeof v); }

/* m ? a : b, lane by lane (m is all ones or all zeros in each lane) */
static inline f32x8 select8(i32x8 m, f32x8 a, f32x8 b)
{
    return (f32x8)(((i32x8)a & m) | ((i32x8)b & ~m));
}

/* exp_fast (layers.h) on 8 lanes: same clamps, same polynomial. */
static inline f32x8 exp_fast8(f32x8 x)
{
    const f32x8 hi = x - x + 88.0f, lo = x - x - 87.0f;
    f32x8 xc = select8(x < 88.0f, x, hi);   /* NaN fails the test: 88 */
    xc = select8(xc > -87.0f, xc, lo);
    const f32x8 n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
    const f32x8 r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    f32x8 p = r * (1.0f / 720) + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const i32x8 two_n = (__builtin_convertvector(n, i32x8) + 127) << 23;
    const f32x8 y = p * (f32x8)two_n;
    return (f32x8)((i32x8)y & ~(x < -87.33654f));
}

static inline float lanes_sum(f32x8 v)
{
    float s = 0;
    for (int k = 0; k < 8; k++) s += v[k];
    return s;
}

float row_max(const float *x, int n)
{
    float mx = -INFINITY;
    int i = 0;
    if (n >= 8) {
        f32x8 m = load8(x);
        for (i = 8; i + 8 <= n; i += 8) {
            const f32x8 v = load8(x + i);
            m = select8(v > m, v, m);
        }
        for (int k = 0; k < 8; k++) mx = m[k] > mx ? m[k] : mx;
    }
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

float row_exp_sum(const float *x, int n, float shift, float *sum_x)
{
    f32x8 acc = {0}, acc_x = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const f32x8 v = load8(x + i);
        acc_x += v;
        acc += exp_fast8(v - shift);
    }
    float s = lanes_sum(acc), sx = lanes_sum(acc_x);
    for (; i < n; i++) {
        sx += x[i];
        s += exp_fast(x[i] - shift);
    }
    if (sum_x) *sum_x = sx;
    return s;
}

float row_exp_inplace(float *x, int n, float shift, float *sum_before)
{
    f32x8 acc = {0}, acc_x = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const f32x8 v = load8(x + i);
        const f32x8 e = exp_fast8(v - shift);
        acc_x += v;
        acc += e;
        store8(x + i, e);
    }
    float s = lanes_sum(acc), sx = lanes_sum(acc_x);
    for (; i < n; i++) {
        sx += x[i];
        x[i] = exp_fast(x[i] - shift);
        s += x[i];
    }
    if (sum_before) *sum_before = sx;
    return s;
}

float row_dot(const float *x, const float *y, int n)
{
    f32x8 acc = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) acc += load8(x + i) * load8(y + i);
    float s = lanes_sum(acc);
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}
