/* ops: elementwise and row kernels of layers.h (dropout, residual, positions,
 * embeddings, log-softmax, row gather/scatter). */
#include "nn/layers.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Below this many elements a parallel region costs more than it saves. The
 * loops a decoder step runs then stay out of libgomp: even an if(0) region
 * allocates a team and ends with a futex wake (a system call). */
#define PAR_MIN 16384

/* ---- dropout ---- */

/* lowbias32 (Chris Wellons' hash-prospector): a 32-bit mixer with good
 * avalanche; two rounds keyed by the two seed halves give one 32-bit word per
 * pair of elements. Only 32-bit multiplies, so the loop vectorizes with AVX2.
 * This is what keeps dropout cheap: 2 hashes per 2 elements, no stream state. */
static inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static inline uint32_t mask_word(uint32_t pair, uint32_t s_lo, uint32_t s_hi)
{
    return mix32(mix32(pair ^ s_lo) + s_hi);
}

static uint32_t drop_threshold(float p)
{
    if (p <= 0) return 0;
    long t = lrintf(p * 65536.0f);
    if (t > 65535) t = 65535;
    return (uint32_t)t;
}

float dropout_scale(float p)
{
    uint32_t t = drop_threshold(p);
    return 65536.0f / (float)(65536 - t);
}

uint64_t dropout_site_seed(uint64_t base, uint64_t site)
{
    uint64_t z = base + (site + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* y[i] = base[i] + x[i]·keep(i)·scale, with base NULL meaning 0. Elements are
 * handled in pairs (one hash word: low 16 bits for the even element, high 16
 * for the odd one), so mask bit i depends only on (seed, i). */
static void dropout_core(float *y, const float *base, const float *x, long n, float p,
                         uint64_t seed)
{
    const uint32_t t = drop_threshold(p);
    const float scale = 65536.0f / (float)(65536 - t);
    const uint32_t s_lo = (uint32_t)seed, s_hi = (uint32_t)(seed >> 32);
    const long pairs = n / 2;
    /* Two copies of the loop so that each vectorizes without a branch on base. */
    if (base) {
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (long j = 0; j < pairs; j++) {
            uint32_t w = mask_word((uint32_t)j, s_lo, s_hi);
            y[2 * j] = base[2 * j] + x[2 * j] * ((w & 0xffffU) >= t ? scale : 0.0f);
            y[2 * j + 1] = base[2 * j + 1] + x[2 * j + 1] * ((w >> 16) >= t ? scale : 0.0f);
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (long j = 0; j < pairs; j++) {
            uint32_t w = mask_word((uint32_t)j, s_lo, s_hi);
            y[2 * j] = x[2 * j] * ((w & 0xffffU) >= t ? scale : 0.0f);
            y[2 * j + 1] = x[2 * j + 1] * ((w >> 16) >= t ? scale : 0.0f);
        }
    }
    if (n & 1) {
        uint32_t w = mask_word((uint32_t)pairs, s_lo, s_hi);
        float m0 = (w & 0xffffU) >= t ? scale : 0.0f;
        y[n - 1] = (base ? base[n - 1] : 0.0f) + x[n - 1] * m0;
    }
}

void dropout_apply(float *y, const float *x, long n, float p, uint64_t seed)
{
    if (p <= 0) {
        if (y != x) memmove(y, x, (size_t)n * sizeof *y);
        return;
    }
    dropout_core(y, NULL, x, n, p, seed);
}

void residual_dropout_forward(float *out, const float *x, const float *y, long n,
                              float p, uint64_t seed)
{
    if (p > 0) {
        dropout_core(out, x, y, n, p, seed);
        return;
    }
    if (n <= PAR_MIN) {
#pragma omp simd
        for (long i = 0; i < n; i++) out[i] = x[i] + y[i];
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) out[i] = x[i] + y[i];
}

void add_inplace(float *y, const float *x, long n)
{
    if (n <= PAR_MIN) {
#pragma omp simd
        for (long i = 0; i < n; i++) y[i] += x[i];
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) y[i] += x[i];
}

/* ---- embeddings and positions ---- */

void positions_init(float *pe, int max_len, int d)
{
    for (int pos = 0; pos < max_len; pos++)
        for (int i = 0; i < d; i += 2) {
            double angle = pos / pow(10000.0, (double)i / d);
            pe[(long)pos * d + i] = (float)sin(angle);
            if (i + 1 < d) pe[(long)pos * d + i + 1] = (float)cos(angle);
        }
}

float word_keep(long r, float p, uint64_t seed)
{
    const uint32_t t = drop_threshold(p);
    if (t == 0) return 1.0f;
    /* Its own hash stream (the seed's halves swapped), so it does not repeat
     * the element masks of dropout_apply drawn from the same site seed. */
    uint32_t w = mask_word((uint32_t)r, (uint32_t)(seed >> 32), (uint32_t)seed);
    return (w & 0xffffU) >= t ? dropout_scale(p) : 0.0f;
}

/* Row r of embed_forward. */
static inline void embed_row(float *out, const int *tok, int len, const float *emb,
                             const float *pe, int pos0, int d, float scale, float p_word,
                             uint64_t seed, long r)
{
    const float *e = emb + (long)tok[r] * d;
    const float *p = pe + (long)(pos0 + r % len) * d;
    const float s = scale * word_keep(r, p_word, seed);
    float *o = out + r * d;
#pragma omp simd
    for (int j = 0; j < d; j++) o[j] = e[j] * s + p[j];
}

void embed_forward(float *out, const int *tok, int n, int len, const float *emb,
                   const float *pe, int pos0, int d, float scale, float p_word,
                   uint64_t seed)
{
    const long rows = (long)n * len;
    if (rows * d <= PAR_MIN) {
        for (long r = 0; r < rows; r++)
            embed_row(out, tok, len, emb, pe, pos0, d, scale, p_word, seed, r);
        return;
    }
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) embed_row(out, tok, len, emb, pe, pos0, d, scale, p_word, seed, r);
}

/* Rows with the same token add into the same embedding row, so threads split
 * the columns instead of the rows: no races, and the sum order is fixed. */
void embed_backward(float *demb, const float *dout, const int *tok, long rows, int d,
                    float scale, float p_word, uint64_t seed)
{
#pragma omp parallel if (rows * d > PAR_MIN)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)d * id / nt), c1 = (int)((long)d * (id + 1) / nt);
        for (long r = 0; r < rows; r++) {
            const float s = scale * word_keep(r, p_word, seed);
            if (s == 0.0f) continue;
            float *e = demb + (long)tok[r] * d;
            const float *g = dout + r * d;
#pragma omp simd
            for (int j = c0; j < c1; j++) e[j] += s * g[j];
        }
    }
}

/* ---- rows ---- */

static inline void logsoftmax_row(float *row, int v)
{
    const float mx = row_max(row, v);
    /* exp and sum in 8 lanes (rowexp.c): this runs on every decoding step
     * over the whole vocabulary */
    const float s = row_exp_sum(row, v, mx, NULL);
    const float lse = mx + logf(s);
#pragma omp simd
    for (int j = 0; j < v; j++) row[j] -= lse;
}

void logsoftmax_rows(float *x, int n, int v)
{
    if ((long)n * v <= PAR_MIN || omp_in_parallel()) {
        for (int r = 0; r < n; r++) logsoftmax_row(x + (long)r * v, v);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) logsoftmax_row(x + (long)r * v, v);
}

void gather_rows(float *dst, const float *src, const int *idx, int m, int d)
{
#pragma omp parallel for schedule(static) if ((long)m * d > PAR_MIN)
    for (int i = 0; i < m; i++)
        memcpy(dst + (long)i * d, src + (long)idx[i] * d, (size_t)d * sizeof *dst);
}

void scatter_add_rows(float *dst, const float *src, const int *idx, int m, int d)
{
#pragma omp parallel for schedule(static) if ((long)m * d > PAR_MIN)
    for (int i = 0; i < m; i++) {
        float *o = dst + (long)idx[i] * d;
        const float *s = src + (long)i * d;
#pragma omp simd
        for (int j = 0; j < d; j++) o[j] += s[j];
    }
}
