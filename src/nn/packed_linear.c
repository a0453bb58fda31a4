/* packed_linear: the decoder-step product over pre-packed weights (see
 * packed_linear.h). The kernel keeps an MR × NR block of outputs in
 * registers: per input index it loads one row of a panel (NV vectors) and
 * broadcasts one input of each of the MR rows. */
#include "nn/packed_linear.h"

#include "nn/blas.h"
#include "nn/gemm_bf16.h"

#include <omp.h>
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
#define VL 16
#define ISA "AVX-512"
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vbcast(x) _mm512_set1_ps(x)
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vrelu(v) _mm512_max_ps(v, _mm512_setzero_ps())
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
#define VL 8
#define ISA "AVX2+FMA"
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vbcast(x) _mm256_set1_ps(x)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vrelu(v) _mm256_max_ps(v, _mm256_setzero_ps())
#else
/* Portable build: GCC/Clang vectors of 4 floats (SSE2 on any x86-64), plain
 * multiply then add (fmaf without hardware FMA would be a slow library
 * call); still one fixed order per element. */
typedef float vec __attribute__((vector_size(16)));
#define VL 4
#define ISA "portable 4-wide vectors"
static inline vec vload_(const float *p) { vec v; memcpy(&v, p, sizeof v); return v; }
static inline void vstore_(float *p, vec v) { memcpy(p, &v, sizeof v); }
typedef int ivec __attribute__((vector_size(16)));
static inline vec vrelu_(vec v)         /* keep the lanes > 0, zero the rest */
{
    const vec z = {0};
    ivec bits;
    memcpy(&bits, &v, sizeof v);
    bits &= (v > z);
    memcpy(&v, &bits, sizeof v);
    return v;
}
#define vload(p) vload_(p)
#define vstore(p, v) vstore_(p, v)
#define vbcast(x) ((vec){(x), (x), (x), (x)})
#define vfma(a, b, c) ((a) * (b) + (c))
#define vrelu(v) vrelu_(v)
#endif

#define NV 2                    /* vectors per panel row */
#define NR (NV * VL)            /* output columns per panel */
#define MR 6                    /* rows per register block: MR·NV accumulators */
#define ALIGN 64

const char *packed_linear_isa(void)
{
    return ISA;
}

/* What alloc_aligned asks malloc for, for n floats. */
static size_t aligned_bytes(size_t n)
{
    return n * sizeof(float) + ALIGN + sizeof(void *);
}

/* 64-byte aligned, zeroed; the pointer malloc gave is kept just before it.
 * *held adds up what was allocated. */
static float *alloc_aligned(size_t n, size_t *held, TfmErr *err)
{
    char *raw = xcalloc(1, aligned_bytes(n), err);
    if (!raw) return NULL;
    *held += aligned_bytes(n);
    uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
    ((void **)p)[-1] = raw;
    return (float *)p;
}

static void free_aligned(float *p)
{
    if (p) free(((void **)p)[-1]);
}

/* The float slots of an (in, out) packing's weights and bias, in the
 * precision on now: the one count init allocates and packed_linear_bytes
 * adds up. bf16 values go two to a float slot: panels × pairs × NR × 2. */
static void float_sizes(int in, int out, size_t *weights, size_t *bias)
{
    const size_t cols = (size_t)((out + NR - 1) / NR) * NR;
    *weights = cols * (blas_bf16() ? (size_t)((in + 1) / 2) : (size_t)in);
    *bias = cols;
}

size_t packed_linear_bytes(int in, int out, bool int8)
{
    if (int8) return packed_int8_bytes(in, out);
    size_t weights, bias;
    float_sizes(in, out, &weights, &bias);
    return aligned_bytes(weights) + aligned_bytes(bias);
}

TfmStatus packed_linear_init(PackedLinear *p, const float *w, const int *rows, const float *b,
                             int in, int out, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->in = in;
    p->out = out;
    p->rows = rows;
    p->panels = (out + NR - 1) / NR;
    size_t weights, bias;
    float_sizes(in, out, &weights, &bias);
    p->b = alloc_aligned(bias, &p->bytes, err);
    if (blas_bf16()) {
        p->wh = (uint16_t *)alloc_aligned(weights, &p->bytes, err);
        p->scratch = xcalloc(1, sizeof *p->scratch, err);
        if (!p->wh || !p->scratch) {
            packed_linear_free(p);
            return TFM_ERR_NOMEM;
        }
    } else {
        p->w = alloc_aligned(weights, &p->bytes, err);
    }
    if ((!p->w && !p->wh) || !p->b) {
        packed_linear_free(p);
        return TFM_ERR_NOMEM;
    }
    packed_linear_update(p, w, b);
    return TFM_OK;
}

/* p's int8 product: like's shape with room for cap columns
 * (packed_int8_init_like) when like is given, else w's rows (packed_int8_init). */
static TfmStatus new_int8(PackedLinear *p, const PackedInt8 *like, int cap, const float *w,
                          const float *b, TfmErr *err)
{
    p->i8 = xcalloc(1, sizeof *p->i8, err);
    if (!p->i8) return TFM_ERR_NOMEM;
    TfmStatus st = like ? packed_int8_init_like(p->i8, like, cap, err)
                        : packed_int8_init(p->i8, w, p->rows, b, p->in, p->out, err);
    if (st != TFM_OK) {
        free(p->i8);
        p->i8 = NULL;
        return st;
    }
    p->bytes = p->i8->bytes;
    return TFM_OK;
}

TfmStatus packed_linear_init_int8(PackedLinear *p, const float *w, const int *rows,
                                  const float *b, int in, int out, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->in = in;
    p->out = out;
    p->rows = rows;
    return new_int8(p, NULL, 0, w, b, err);
}

/* Output column j of a float product from its weights wj (in floats):
 * fp32 as they are, bf16 rounded, in the panel layout. */
static void pack_column(PackedLinear *p, int j, const float *wj)
{
    const int in = p->in;
    if (p->wh) {
        uint16_t *panel = p->wh + (size_t)(j / NR) * ((in + 1) / 2) * NR * 2;
        for (int k = 0; k < in; k++)
            panel[((size_t)(k / 2) * NR + j % NR) * 2 + k % 2] = bf16_from_float(wj[k]);
        return;
    }
    float *panel = p->w + (size_t)(j / NR) * in * NR;
    for (int k = 0; k < in; k++) panel[(size_t)k * NR + j % NR] = wj[k];
}

void packed_linear_update(PackedLinear *p, const float *w, const float *b)
{
    const int in = p->in;
    if (p->i8) {
        packed_int8_update(p->i8, w, p->rows, b);
        return;
    }
    p->w_src = w;
    for (int j = 0; j < p->out; j++) {
        pack_column(p, j, w + (size_t)(p->rows ? p->rows[j] : j) * in);
        p->b[j] = b ? b[j] : 0.0f;
    }
}

TfmStatus packed_linear_init_like(PackedLinear *p, const PackedLinear *src, int cap, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->in = src->in;
    if (src->i8) return new_int8(p, src->i8, cap, NULL, NULL, err);
    const size_t cols = (size_t)((cap + NR - 1) / NR) * NR;
    const size_t weights = cols * (src->wh ? (size_t)((src->in + 1) / 2) : (size_t)src->in);
    p->b = alloc_aligned(cols, &p->bytes, err);
    if (src->wh) {
        p->wh = (uint16_t *)alloc_aligned(weights, &p->bytes, err);
        p->scratch = xcalloc(1, sizeof *p->scratch, err);
    } else {
        p->w = alloc_aligned(weights, &p->bytes, err);
    }
    if (!p->b || (!p->w && !p->wh) || (p->wh && !p->scratch)) {
        packed_linear_free(p);
        return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

void packed_linear_select(PackedLinear *p, const PackedLinear *src, const int *cols, int n)
{
    p->out = n;
    p->panels = (n + NR - 1) / NR;
    if (p->i8) {
        packed_int8_select(p->i8, src->i8, cols, n);
        return;
    }
    /* from the caller's rows, packed as update packs them: a column read
     * out of src's panels would touch one cache line an input */
    for (int j = 0; j < n; j++) {
        const int c = cols[j];
        p->b[j] = src->b[c];
        pack_column(p, j, src->w_src + (size_t)(src->rows ? src->rows[c] : c) * p->in);
    }
}

void packed_linear_free(PackedLinear *p)
{
    if (p->i8) packed_int8_free(p->i8);
    free(p->i8);
    p->i8 = NULL;
    free_aligned(p->w);
    free_aligned(p->b);
    free_aligned((float *)p->wh);
    if (p->scratch) free(p->scratch->x);
    free(p->scratch);
    p->w = p->b = NULL;
    p->wh = NULL;
    p->rows = NULL;
    p->scratch = NULL;
}

void packed_linear_share_scratch(PackedLinear *p, const PackedLinear *owner)
{
    if (p->i8 && owner->i8) packed_int8_share_scratch(p->i8, owner->i8);
}

/* ---- bf16: the same blocking over vdpbf16ps (AVX512-BF16), compiled for
 * that instruction set whatever the build's -march, and run only when
 * blas_bf16() was on at packing (blas_use_bf16 checked the CPU). Per pair
 * of inputs, one load of NV vectors of the panel (16 columns x 2 values
 * each) and one broadcast of each row's pair. ---- */
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

static inline __attribute__((always_inline)) BF16_TARGET void
block_bf16(const int mr, const uint32_t *x, int pairs, const uint16_t *panel, const float *bias,
           float *y, int ldy, int ncols, int relu)
{
    __m512 acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < 2; v++) acc[r][v] = _mm512_loadu_ps(bias + v * 16);
    for (int k = 0; k < pairs; k++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + (size_t)k * 64);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + (size_t)k * 64 + 32);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            const __m512bh a = (__m512bh)_mm512_set1_epi32((int)x[(size_t)r * pairs + k]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
        float *yr = y + (size_t)r * ldy;
        float tmp[32];
        for (int v = 0; v < 2; v++) {
            if (relu) acc[r][v] = _mm512_max_ps(acc[r][v], _mm512_setzero_ps());
            _mm512_storeu_ps(tmp + v * 16, acc[r][v]);
        }
        memcpy(yr, tmp, (size_t)ncols * sizeof(float));
    }
}

static BF16_TARGET void block_rows_bf16(int mr, const uint32_t *x, int pairs,
                                        const uint16_t *panel, const float *bias, float *y,
                                        int ldy, int ncols, int relu)
{
    switch (mr) {
    case 1: block_bf16(1, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    case 2: block_bf16(2, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    case 3: block_bf16(3, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    case 4: block_bf16(4, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    case 5: block_bf16(5, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    default: block_bf16(MR, x, pairs, panel, bias, y, ldy, ncols, relu); break;
    }
}

/* y[0..mr) × [0..ncols) of one panel; mr is a constant after inlining, so
 * the accumulators live in registers. */
static inline __attribute__((always_inline)) void
block(const int mr, const float *x, int in, const float *panel, const float *bias,
      float *y, int ldy, int ncols, int relu)
{
    vec acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = vload(bias + v * VL);
    for (int k = 0; k < in; k++) {
        vec bk[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bk[v] = vload(panel + (size_t)k * NR + v * VL);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            vec a = vbcast(x[(size_t)r * in + k]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = vfma(a, bk[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
        float *yr = y + (size_t)r * ldy;
        if (relu)
            for (int v = 0; v < NV; v++) acc[r][v] = vrelu(acc[r][v]);
        if (ncols == NR) {
            for (int v = 0; v < NV; v++) vstore(yr + v * VL, acc[r][v]);
        } else {                                /* the last, partial panel */
            float tmp[NR];
            for (int v = 0; v < NV; v++) vstore(tmp + v * VL, acc[r][v]);
            memcpy(yr, tmp, (size_t)ncols * sizeof(float));
        }
    }
}

static void block_rows(int mr, const float *x, int in, const float *panel, const float *bias,
                       float *y, int ldy, int ncols, int relu)
{
    switch (mr) {
    case 1: block(1, x, in, panel, bias, y, ldy, ncols, relu); break;
    case 2: block(2, x, in, panel, bias, y, ldy, ncols, relu); break;
    case 3: block(3, x, in, panel, bias, y, ldy, ncols, relu); break;
    case 4: block(4, x, in, panel, bias, y, ldy, ncols, relu); break;
    case 5: block(5, x, in, panel, bias, y, ldy, ncols, relu); break;
    default: block(MR, x, in, panel, bias, y, ldy, ncols, relu); break;
    }
}

#define ROUND_PIECE 128         /* pairs rounded per buffer */

/* bf16: the n input rows rounded into the scratch as pairs (a last odd
 * input paired with 0, matching the zero weights past `in`). */
static bool round_inputs(const PackedLinear *p, const float *x, int n)
{
    const int in = p->in, pairs = (in + 1) / 2;
    PackedScratch *s = p->scratch;
    const size_t need = (size_t)n * pairs;
    if (need > s->cap) {
        uint32_t *nx = xrealloc(s->x, need * sizeof *nx, NULL);
        if (!nx) return false;
        s->x = nx;
        s->cap = need;
    }
    /* a pair is (lo | hi << 16): on x86, the two bf16 values in order, so
     * a row is rounded as one array of 16-bit values, a piece at a time
     * through a buffer (the scratch is uint32_t) */
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * in;
        uint32_t *dst = s->x + (size_t)r * pairs;
        for (int k0 = 0; k0 < in; k0 += 2 * ROUND_PIECE) {
            uint16_t half[2 * ROUND_PIECE];
            const int m = in - k0 < 2 * ROUND_PIECE ? in - k0 : 2 * ROUND_PIECE;
            bf16_from_floats(half, xr + k0, (size_t)m);
            if (m % 2) half[m] = 0;         /* the last odd input's pair */
            memcpy(dst + k0 / 2, half, (size_t)(m + 1) / 2 * sizeof *dst);
        }
    }
    return true;
}

/* Tasks [t0, t1) of packed_linear_forward: (row chunk, panel) pairs. */
static void run_tasks(const PackedLinear *p, float *y, int ldy, const float *x, int n, int relu,
                      int chunk, long t0, long t1)
{
    const int in = p->in, out = p->out, panels = p->panels;
    for (long t = t0; t < t1; t++) {
        const int j = (int)(t % panels), r0 = (int)(t / panels) * chunk;
        const int r1 = n - r0 < chunk ? n : r0 + chunk;
        const int ncols = out - j * NR < NR ? out - j * NR : NR;
        if (p->wh) {
            const int pairs = (in + 1) / 2;
            const uint16_t *panel = p->wh + (size_t)j * pairs * NR * 2;
            for (int r = r0; r < r1; r += MR)
                block_rows_bf16(r1 - r < MR ? r1 - r : MR, p->scratch->x + (size_t)r * pairs,
                                pairs, panel, p->b + j * NR, y + (size_t)r * ldy + j * NR, ldy,
                                ncols, relu);
            continue;
        }
        const float *panel = p->w + (size_t)j * in * NR;
        for (int r = r0; r < r1; r += MR)
            block_rows(r1 - r < MR ? r1 - r : MR, x + (size_t)r * in, in, panel, p->b + j * NR,
                       y + (size_t)r * ldy + j * NR, ldy, ncols, relu);
    }
}

void packed_linear_forward(const PackedLinear *p, float *y, const float *x, int n, int relu)
{
    packed_linear_forward_ld(p, y, p->out, x, n, relu);
}

void packed_linear_forward_ld(const PackedLinear *p, float *y, int ldy, const float *x, int n,
                              int relu)
{
    if (p->i8) {
        packed_int8_forward_ld(p->i8, y, ldy, x, n, relu);
        return;
    }
    /* Rows in chunks of about 256 KB of input (a core's L2 holds it); within
     * a chunk, panels outermost: a panel stays in L1 while the register
     * blocks pass over it, and the weights stream from memory once per
     * chunk (once per call in a decoder step). Threads split the (chunk,
     * panel) pairs, which changes no element's arithmetic. */
    if (p->wh && !round_inputs(p, x, n)) {
        /* no memory for the rounded inputs: zeros rather than garbage; the
         * caller's next allocation reports it (never seen) */
        for (int r = 0; r < n; r++) memset(y + (size_t)r * ldy, 0, (size_t)p->out * sizeof *y);
        return;
    }
    int chunk = (65536 / p->in) / MR * MR;
    if (chunk < MR) chunk = MR;
    const long tasks = (long)((n + chunk - 1) / chunk) * p->panels;
    /* A small product runs here: even an `if (0)` parallel region costs
     * libgomp a team allocation, which shows at batch 1. So does one called
     * from a parallel region (a shortlist's products, one a sentence). */
    if ((long)n * p->out * p->in <= (1L << 18) || omp_get_max_threads() == 1 || omp_in_parallel()) {
        run_tasks(p, y, ldy, x, n, relu, chunk, 0, tasks);
        return;
    }
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), id = omp_get_thread_num();
        run_tasks(p, y, ldy, x, n, relu, chunk, tasks * id / nt, tasks * (id + 1) / nt);
    }
}
