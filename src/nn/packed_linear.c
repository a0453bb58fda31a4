/* packed_linear: the decoder-step product over pre-packed weights (see
 * packed_linear.h). The kernel keeps an MR × NR block of outputs in
 * registers: per input index it loads one row of a panel (NV vectors) and
 * broadcasts one input of each of the MR rows. */
#include "nn/packed_linear.h"

#include <omp.h>
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

/* 64-byte aligned, zeroed; the pointer malloc gave is kept just before it. */
static float *alloc_aligned(size_t n, TfmErr *err)
{
    char *raw = xcalloc(1, n * sizeof(float) + ALIGN + sizeof(void *), err);
    if (!raw) return NULL;
    uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
    ((void **)p)[-1] = raw;
    return (float *)p;
}

static void free_aligned(float *p)
{
    if (p) free(((void **)p)[-1]);
}

TfmStatus packed_linear_init(PackedLinear *p, const float *w, const float *b, int in, int out,
                             TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->in = in;
    p->out = out;
    p->panels = (out + NR - 1) / NR;
    const size_t cols = (size_t)p->panels * NR;
    p->w = alloc_aligned(cols * (size_t)in, err);
    p->b = alloc_aligned(cols, err);
    if (!p->w || !p->b) {
        packed_linear_free(p);
        return TFM_ERR_NOMEM;
    }
    packed_linear_update(p, w, b);
    return TFM_OK;
}

void packed_linear_update(PackedLinear *p, const float *w, const float *b)
{
    const int in = p->in;
    for (int j = 0; j < p->out; j++) {
        float *panel = p->w + (size_t)(j / NR) * in * NR;
        for (int k = 0; k < in; k++) panel[(size_t)k * NR + j % NR] = w[(size_t)j * in + k];
        p->b[j] = b ? b[j] : 0.0f;
    }
}

void packed_linear_free(PackedLinear *p)
{
    free_aligned(p->w);
    free_aligned(p->b);
    p->w = p->b = NULL;
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

/* Tasks [t0, t1) of packed_linear_forward: (row chunk, panel) pairs. */
static void run_tasks(const PackedLinear *p, float *y, const float *x, int n, int relu,
                      int chunk, long t0, long t1)
{
    const int in = p->in, out = p->out, panels = p->panels;
    for (long t = t0; t < t1; t++) {
        const int j = (int)(t % panels), r0 = (int)(t / panels) * chunk;
        const int r1 = n - r0 < chunk ? n : r0 + chunk;
        const float *panel = p->w + (size_t)j * in * NR;
        const int ncols = out - j * NR < NR ? out - j * NR : NR;
        for (int r = r0; r < r1; r += MR)
            block_rows(r1 - r < MR ? r1 - r : MR, x + (size_t)r * in, in, panel, p->b + j * NR,
                       y + (size_t)r * out + j * NR, out, ncols, relu);
    }
}

void packed_linear_forward(const PackedLinear *p, float *y, const float *x, int n, int relu)
{
    /* Rows in chunks of about 256 KB of input (a core's L2 holds it); within
     * a chunk, panels outermost: a panel stays in L1 while the register
     * blocks pass over it, and the weights stream from memory once per
     * chunk (once per call in a decoder step). Threads split the (chunk,
     * panel) pairs, which changes no element's arithmetic. */
    int chunk = (65536 / p->in) / MR * MR;
    if (chunk < MR) chunk = MR;
    const long tasks = (long)((n + chunk - 1) / chunk) * p->panels;
    /* A small product runs here: even an `if (0)` parallel region costs
     * libgomp a team allocation, which shows at batch 1. */
    if ((long)n * p->out * p->in <= (1L << 18) || omp_get_max_threads() == 1) {
        run_tasks(p, y, x, n, relu, chunk, 0, tasks);
        return;
    }
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), id = omp_get_thread_num();
        run_tasks(p, y, x, n, relu, chunk, tasks * id / nt, tasks * (id + 1) / nt);
    }
}
