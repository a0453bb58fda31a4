/* packed_int8: int8 products over packed weights (see packed_int8.h).
 *
 * Packing: panels of NR = 32 output columns; within a panel, the inputs in
 * groups of four, each column's four weights side by side (128 bytes per
 * group), which is what vpdpbusd reads: per 32-bit lane, four u8 × s8
 * products added to an int32. Every kernel reads this one packing.
 *
 * A kernel computes an MR × 32 tile of exact int32 sums; finish_tile, the
 * same C code for all kernels, turns it into floats. */
#include "nn/packed_int8.h"
#include "nn/layers.h"

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define NR 32                   /* output columns per panel */
#define GROUP_BYTES (NR * 4)    /* one group of four inputs of a panel */
#define MR_MAX 8                /* rows per register block, at most */

/* The quantized inputs of one forward call. aux is what the kernel reads
 * besides q: q + 128 as u8 (VNNI), |q| (AVX2), unused (portable). */
struct Int8Scratch {
    int8_t *q;
    uint8_t *aux;
    float *s;                   /* each row's scale */
    size_t bytes, rows;         /* what q and aux hold, and s (shared by
                                   products of different widths) */
};

/* ---- quantizers ---- */

float int8_quantize_row(int8_t *q, const float *w, int n)
{
    /* row_max_abs, not an fmaxf loop: fmaxf is a libm call per weight, which
     * made quantizing at load 5x the load itself (a base model, Xeon) */
    bool nonfinite;
    const float m = row_max_abs(w, n, &nonfinite);
    if (!(m >= 0x1p-100f)) {            /* zero (or NaN: w must be finite) */
        memset(q, 0, (size_t)n);
        return 0.0f;
    }
    /* Rounded up to 17 significant bits: q (7 bits) times s is then exact
     * in float32's 24, and so are 127·s and 127·s / 127. */
    float s = m / 127.0f;
    uint32_t u;
    memcpy(&u, &s, sizeof u);
    if (u & 0x7fu) u = (u | 0x7fu) + 1;
    memcpy(&s, &u, sizeof s);
    for (int i = 0; i < n; i++) {
        const float v = rintf(w[i] / s);
        q[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
    return s;
}

float int8_quantize_input(int8_t *restrict q, const float *restrict x, int n)
{
    bool nonfinite;
    const float m = row_max_abs(x, n, &nonfinite);
    if (nonfinite || !(m >= 0x1p-100f)) {
        memset(q, 0, (size_t)n);
        return nonfinite ? NAN : 0.0f;
    }
    /* |x·inv| <= 127·(1 + 2^-23) rounds to at most 127: no clamp (and
     * the loop vectorizes) */
    const float inv = 127.0f / m;
#pragma omp simd
    for (int i = 0; i < n; i++) q[i] = (int8_t)(int32_t)rintf(x[i] * inv);
    return m / 127.0f;
}

/* ---- the kernels: an mr × 32 tile of int32 sums over all groups ----
 * a: mr rows of q (stride kp bytes); aux likewise; panel: this panel's
 * groups; corr: the panel's 128·Σw; acc: mr × 32 int32. */
typedef void (*BlockFn)(int mr, const int8_t *a, const uint8_t *aux, int kp, int groups,
                        const int8_t *panel, const int32_t *corr, int32_t *acc);

enum { AUX_NONE, AUX_SHIFTED, AUX_ABS };

typedef struct {
    const char *name, *label;
    int mr, aux;
    BlockFn block;
    bool (*available)(void);
} Kernel;

static inline int32_t load4(const void *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Portable C: int32 products. */
static void block_portable(int mr, const int8_t *a, const uint8_t *aux, int kp, int groups,
                           const int8_t *panel, const int32_t *corr, int32_t *acc)
{
    (void)aux, (void)corr;
    memset(acc, 0, (size_t)mr * NR * sizeof *acc);
    for (int g = 0; g < groups; g++) {
        const int8_t *pg = panel + (size_t)g * GROUP_BYTES;
        for (int r = 0; r < mr; r++) {
            const int8_t *ar = a + (size_t)r * kp + 4 * g;
            int32_t *ac = acc + r * NR;
#pragma omp simd
            for (int j = 0; j < NR; j++)
                ac[j] += ar[0] * pg[4 * j] + ar[1] * pg[4 * j + 1] + ar[2] * pg[4 * j + 2] +
                         ar[3] * pg[4 * j + 3];
        }
    }
}

static bool has_none(void) { return true; }

/* AVX2: vpmaddubsw multiplies u8 by s8 and adds pairs into int16 with
 * saturation; with activations shifted to u8 (0..255) a pair could reach
 * 2·255·127 = 64770 and saturate (intgemm's caveat). Here the u8 operand
 * is |q_x| (0..127) and the weight takes q_x's sign (vpsignb, which also
 * zeroes it where q_x = 0): a pair is at most 2·127·127 = 32258 < 32767,
 * so it never saturates and keeps both operands' full 8 bits. vpmaddwd
 * with ones then widens the pairs to int32. Weights are never -128 (the
 * quantizer's range is ±127), so vpsignb cannot overflow. */
#define AVX2_TARGET __attribute__((target("avx2")))

static inline __attribute__((always_inline)) AVX2_TARGET void
blk_avx2(const int mr, const int8_t *a, const uint8_t *aux, int kp, int groups,
         const int8_t *panel, int32_t *acc)
{
    __m256i c[MR_MAX][4];
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) c[r][v] = _mm256_setzero_si256();
    for (int g = 0; g < groups; g++) {
        __m256i w[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            w[v] = _mm256_loadu_si256((const __m256i *)(panel + (size_t)g * GROUP_BYTES + 32 * v));
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            const __m256i sx = _mm256_set1_epi32(load4(a + (size_t)r * kp + 4 * g));
            const __m256i ux = _mm256_set1_epi32(load4(aux + (size_t)r * kp + 4 * g));
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                const __m256i pairs = _mm256_maddubs_epi16(ux, _mm256_sign_epi8(w[v], sx));
                c[r][v] = _mm256_add_epi32(c[r][v], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm256_storeu_si256((__m256i *)(acc + r * NR + 8 * v), c[r][v]);
}

enum { MR_AVX2 = 2 };

static AVX2_TARGET void block_avx2(int mr, const int8_t *a, const uint8_t *aux, int kp,
                                   int groups, const int8_t *panel, const int32_t *corr,
                                   int32_t *acc)
{
    (void)corr;
    if (mr == 1) blk_avx2(1, a, aux, kp, groups, panel, acc);
    else blk_avx2(MR_AVX2, a, aux, kp, groups, panel, acc);
}

static bool has_avx2(void) { return __builtin_cpu_supports("avx2"); }

/* VNNI: vpdpbusd adds four u8 × s8 products to each int32 lane, without
 * saturation. The u8 operand is q_x + 128 (1..255); the sums then hold
 * 128·Σw too, which the accumulators start without: they start at
 * -corr = -128·Σw, so the tile is exactly Σ q_x·q_w. */
#define VNNI512_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

static inline __attribute__((always_inline)) VNNI512_TARGET void
blk_vnni512(const int mr, const uint8_t *aux, int kp, int groups, const int8_t *panel,
            const int32_t *corr, int32_t *acc)
{
    __m512i c[MR_MAX][2];
    const __m512i c0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr));
    const __m512i c1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr + 16));
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) c[r][0] = c0, c[r][1] = c1;
    for (int g = 0; g < groups; g++) {
        const __m512i w0 = _mm512_loadu_si512(panel + (size_t)g * GROUP_BYTES);
        const __m512i w1 = _mm512_loadu_si512(panel + (size_t)g * GROUP_BYTES + 64);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            const __m512i ux = _mm512_set1_epi32(load4(aux + (size_t)r * kp + 4 * g));
            c[r][0] = _mm512_dpbusd_epi32(c[r][0], ux, w0);
            c[r][1] = _mm512_dpbusd_epi32(c[r][1], ux, w1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(acc + r * NR, c[r][0]);
        _mm512_storeu_si512(acc + r * NR + 16, c[r][1]);
    }
}

enum { MR_VNNI512 = 8 };

static VNNI512_TARGET void block_vnni512(int mr, const int8_t *a, const uint8_t *aux, int kp,
                                         int groups, const int8_t *panel, const int32_t *corr,
                                         int32_t *acc)
{
    (void)a;
    switch (mr) {
    case 1: blk_vnni512(1, aux, kp, groups, panel, corr, acc); break;
    case 2: blk_vnni512(2, aux, kp, groups, panel, corr, acc); break;
    case 3: blk_vnni512(3, aux, kp, groups, panel, corr, acc); break;
    case 4: blk_vnni512(4, aux, kp, groups, panel, corr, acc); break;
    case 5: blk_vnni512(5, aux, kp, groups, panel, corr, acc); break;
    case 6: blk_vnni512(6, aux, kp, groups, panel, corr, acc); break;
    case 7: blk_vnni512(7, aux, kp, groups, panel, corr, acc); break;
    default: blk_vnni512(MR_VNNI512, aux, kp, groups, panel, corr, acc); break;
    }
}

static bool has_vnni512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}

/* AVX-VNNI: the same on 256-bit registers (CPUs with VNNI but no AVX-512). */
#define AVXVNNI_TARGET __attribute__((target("avx2,avxvnni")))

static inline __attribute__((always_inline)) AVXVNNI_TARGET void
blk_avxvnni(const int mr, const uint8_t *aux, int kp, int groups, const int8_t *panel,
            const int32_t *corr, int32_t *acc)
{
    __m256i c[MR_MAX][4];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            c[r][v] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                       _mm256_loadu_si256((const __m256i *)(corr + 8 * v)));
    for (int g = 0; g < groups; g++) {
        const int8_t *pg = panel + (size_t)g * GROUP_BYTES;
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            const __m256i ux = _mm256_set1_epi32(load4(aux + (size_t)r * kp + 4 * g));
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                c[r][v] = _mm256_dpbusd_avx_epi32(
                    c[r][v], ux, _mm256_loadu_si256((const __m256i *)(pg + 32 * v)));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm256_storeu_si256((__m256i *)(acc + r * NR + 8 * v), c[r][v]);
}

enum { MR_AVXVNNI = 3 };

static AVXVNNI_TARGET void block_avxvnni(int mr, const int8_t *a, const uint8_t *aux, int kp,
                                         int groups, const int8_t *panel, const int32_t *corr,
                                         int32_t *acc)
{
    (void)a;
    switch (mr) {
    case 1: blk_avxvnni(1, aux, kp, groups, panel, corr, acc); break;
    case 2: blk_avxvnni(2, aux, kp, groups, panel, corr, acc); break;
    default: blk_avxvnni(MR_AVXVNNI, aux, kp, groups, panel, corr, acc); break;
    }
}

/* AVX-VNNI is CPUID leaf 7, sub-leaf 1, EAX bit 4, read directly: clang 14
 * (the fuzz build's compiler) has no "avxvnni" in __builtin_cpu_supports. */
static bool has_avxvnni(void)
{
    unsigned eax, ebx, ecx, edx;
    return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) &&
           (eax >> 4 & 1u);
}

/* Best first. */
static const Kernel kernels[] = {
    {"avx512vnni", "AVX-512 VNNI (vpdpbusd)", MR_VNNI512, AUX_SHIFTED, block_vnni512, has_vnni512},
    {"avxvnni", "AVX-VNNI (vpdpbusd, 256-bit)", MR_AVXVNNI, AUX_SHIFTED, block_avxvnni, has_avxvnni},
    {"avx2", "AVX2 (vpmaddubsw + vpmaddwd)", MR_AVX2, AUX_ABS, block_avx2, has_avx2},
    {"portable", "portable C", 4, AUX_NONE, block_portable, has_none},
};
enum { N_KERNELS = sizeof kernels / sizeof *kernels };

static const Kernel *kernel;    /* NULL until the first int8 product is packed */

bool int8_kernel_available(const char *name)
{
    for (int i = 0; i < N_KERNELS; i++)
        if (strcmp(kernels[i].name, name) == 0) return kernels[i].available();
    return false;
}

TfmStatus int8_kernel_select(const char *name, TfmErr *err)
{
    const char *from = "int8 kernel";
    if (!name && (name = getenv("TFM_INT8_KERNEL")) && *name) from = "TFM_INT8_KERNEL";
    else if (name && !*name) name = NULL;
    if (!name) {
        for (int i = 0; i < N_KERNELS; i++)
            if (kernels[i].available()) {
                kernel = &kernels[i];
                return TFM_OK;
            }
    }
    for (int i = 0; i < N_KERNELS; i++) {
        if (strcmp(kernels[i].name, name) != 0) continue;
        if (!kernels[i].available())
            return err_set(err, TFM_ERR_CONFIG, "%s=%s: this CPU cannot run the %s kernel", from,
                           name, kernels[i].label);
        kernel = &kernels[i];
        return TFM_OK;
    }
    return err_set(err, TFM_ERR_CONFIG, "%s=%s: unknown (portable, avx2, avxvnni or avx512vnni)",
                   from, name);
}

const char *int8_kernel_name(void)
{
    if (!kernel && int8_kernel_select(NULL, NULL) != TFM_OK) return "none (TFM_INT8_KERNEL is wrong)";
    return kernel->label;
}

/* ---- packing ---- */

/* What alloc64 takes for bytes: whole 64-byte lines, at least one. */
static size_t bytes64(size_t bytes)
{
    return bytes ? (bytes + 63) / 64 * 64 : 64;
}

/* The packing of an (in, out) product: its buffers w, corr, scale and b, in
 * bytes; the one list init allocates and packed_int8_bytes adds up. */
enum { I8_W, I8_CORR, I8_SCALE, I8_B, I8_BUFFERS };
static void int8_sizes(int in, int out, size_t size[I8_BUFFERS])
{
    const size_t cols = (size_t)((out + NR - 1) / NR) * NR, groups = (size_t)((in + 3) / 4);
    size[I8_W] = cols * groups * 4;
    size[I8_CORR] = cols * sizeof(int32_t);
    size[I8_SCALE] = cols * sizeof(float);
    size[I8_B] = cols * sizeof(float);
}

size_t packed_int8_bytes(int in, int out)
{
    size_t size[I8_BUFFERS], total = 0;
    int8_sizes(in, out, size);
    for (int i = 0; i < I8_BUFFERS; i++) total += bytes64(size[i]);
    return total;
}

static void *alloc64(size_t bytes, size_t *held, TfmErr *err)
{
    void *p = NULL;
    bytes = bytes64(bytes);
    if (posix_memalign(&p, 64, bytes) != 0) {
        err_set(err, TFM_ERR_NOMEM, "out of memory (%zu bytes for int8 weights)", bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    *held += bytes;
    return p;
}

/* p's buffers for `out` rows of `in` inputs (sizes as int8_sizes), and its
 * own scratch; on failure p is freed and TFM_ERR_NOMEM set. */
static TfmStatus alloc_buffers(PackedInt8 *p, int in, int out, TfmErr *err)
{
    size_t size[I8_BUFFERS];
    int8_sizes(in, out, size);
    p->w = alloc64(size[I8_W], &p->bytes, err);
    p->corr = alloc64(size[I8_CORR], &p->bytes, err);
    p->scale = alloc64(size[I8_SCALE], &p->bytes, err);
    p->b = alloc64(size[I8_B], &p->bytes, err);
    p->scratch = xcalloc(1, sizeof *p->scratch, err);
    p->own_scratch = true;
    if (!p->w || !p->corr || !p->scale || !p->b || !p->scratch) {
        packed_int8_free(p);
        return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

TfmStatus packed_int8_init(PackedInt8 *p, const float *w, const int *rows, const float *b,
                           int in, int out, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    if (!kernel) {
        TfmStatus st = int8_kernel_select(NULL, err);
        if (st != TFM_OK) return st;
    }
    p->in = in;
    p->out = out;
    p->panels = (out + NR - 1) / NR;
    p->groups = (in + 3) / 4;
    if (alloc_buffers(p, in, out, err) != TFM_OK) return TFM_ERR_NOMEM;
    packed_int8_update(p, w, rows, b);
    return TFM_OK;
}

void packed_int8_update(PackedInt8 *p, const float *w, const int *rows, const float *b)
{
    const int in = p->in;
    int8_t row[in > 0 ? in : 1];
    for (int j = 0; j < p->out; j++) {
        p->scale[j] = int8_quantize_row(row, w + (size_t)(rows ? rows[j] : j) * in, in);
        int8_t *panel = p->w + (size_t)(j / NR) * p->groups * GROUP_BYTES;
        int32_t sum = 0;
        for (int k = 0; k < in; k++) {
            panel[(size_t)(k / 4) * GROUP_BYTES + (j % NR) * 4 + k % 4] = row[k];
            sum += row[k];
        }
        p->corr[j] = 128 * sum;
        p->b[j] = b ? b[j] : 0.0f;
    }
}

TfmStatus packed_int8_init_like(PackedInt8 *p, const PackedInt8 *src, int cap, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->in = src->in;
    p->out = 0;
    p->groups = src->groups;
    return alloc_buffers(p, src->in, cap, err);
}

void packed_int8_select(PackedInt8 *p, const PackedInt8 *src, const int *cols, int n)
{
    p->out = n;
    p->panels = (n + NR - 1) / NR;
    for (int j = 0; j < n; j++) {
        const int c = cols[j];
        const int8_t *sp = src->w + (size_t)(c / NR) * src->groups * GROUP_BYTES + (c % NR) * 4;
        int8_t *dp = p->w + (size_t)(j / NR) * p->groups * GROUP_BYTES + (j % NR) * 4;
        for (int g = 0; g < p->groups; g++)      /* a column's four weights of a group */
            memcpy(dp + (size_t)g * GROUP_BYTES, sp + (size_t)g * GROUP_BYTES, 4);
        p->corr[j] = src->corr[c];
        p->scale[j] = src->scale[c];
        p->b[j] = src->b[c];
    }
}

static void free_scratch(Int8Scratch *s)
{
    if (s) FREE_ALL(s->q, s->aux, s->s, s);
}

void packed_int8_free(PackedInt8 *p)
{
    FREE_ALL(p->w, p->corr, p->scale, p->b);
    if (p->own_scratch) free_scratch(p->scratch);
    memset(p, 0, sizeof *p);
}

void packed_int8_share_scratch(PackedInt8 *p, const PackedInt8 *owner)
{
    if (p == owner || p->scratch == owner->scratch) return;
    if (p->own_scratch) free_scratch(p->scratch);
    p->scratch = owner->scratch;
    p->own_scratch = false;
}

/* ---- forward ---- */

/* Rows [r0, r1) of x quantized into the scratch (rows of kp bytes, zero
 * past in), with what the kernel reads besides. */
static void quantize_rows(const PackedInt8 *p, const Kernel *k, const float *x, int r0, int r1)
{
    Int8Scratch *s = p->scratch;
    const int in = p->in, kp = 4 * p->groups;
    for (int r = r0; r < r1; r++) {
        int8_t *q = s->q + (size_t)r * kp;
        uint8_t *aux = s->aux + (size_t)r * kp;
        s->s[r] = int8_quantize_input(q, x + (size_t)r * in, in);
        memset(q + in, 0, (size_t)(kp - in));
        if (k->aux == AUX_SHIFTED)
#pragma omp simd
            for (int i = 0; i < kp; i++) aux[i] = (uint8_t)(q[i] + 128);
        else if (k->aux == AUX_ABS)
#pragma omp simd
            for (int i = 0; i < kp; i++) aux[i] = (uint8_t)(q[i] < 0 ? -q[i] : q[i]);
    }
}

/* Room in the scratch for n quantized input rows of this product. */
static bool scratch_rows(const PackedInt8 *p, int n)
{
    Int8Scratch *s = p->scratch;
    const size_t bytes = (size_t)n * 4 * (size_t)p->groups;
    if (bytes > s->bytes) {
        int8_t *q = xrealloc(s->q, bytes, NULL);
        if (q) s->q = q;
        uint8_t *aux = xrealloc(s->aux, bytes, NULL);
        if (aux) s->aux = aux;
        if (!q || !aux) return false;
        s->bytes = bytes;
    }
    if ((size_t)n > s->rows) {
        float *sc = xrealloc(s->s, (size_t)n * sizeof *sc, NULL);
        if (!sc) return false;
        s->s = sc;
        s->rows = (size_t)n;
    }
    return true;
}

/* y = (float)sum · (s_x · s_w) + b, the same code for every kernel. */
static void finish_tile(const int32_t *restrict acc, int mr, const float *restrict sx,
                        const float *restrict sw, const float *restrict b, float *restrict y,
                        int ldy, int ncols, int relu)
{
    for (int r = 0; r < mr; r++) {
        const float s = sx[r];
        float *restrict yr = y + (size_t)r * ldy;
        const int32_t *restrict ar = acc + r * NR;
        /* relu in the same pass: reading back a row just written, by the
         * masked loads of a short row, stalled on store forwarding */
        if (relu)
#pragma omp simd
            for (int j = 0; j < ncols; j++) {
                const float v = (float)ar[j] * (s * sw[j]) + b[j];
                yr[j] = v > 0.0f ? v : 0.0f;
            }
        else
#pragma omp simd
            for (int j = 0; j < ncols; j++) yr[j] = (float)ar[j] * (s * sw[j]) + b[j];
    }
}

/* Tasks [t0, t1): (row chunk, panel) pairs, as packed_linear. */
static void run_tasks(const PackedInt8 *p, const Kernel *k, float *y, int ldy, int n, int relu,
                      int chunk, long t0, long t1)
{
    const int out = p->out, panels = p->panels, kp = 4 * p->groups;
    const Int8Scratch *s = p->scratch;
    int32_t acc[MR_MAX * NR] __attribute__((aligned(64)));
    for (long t = t0; t < t1; t++) {
        const int j = (int)(t % panels), r0 = (int)(t / panels) * chunk;
        const int r1 = n - r0 < chunk ? n : r0 + chunk;
        const int ncols = out - j * NR < NR ? out - j * NR : NR;
        const int8_t *panel = p->w + (size_t)j * p->groups * GROUP_BYTES;
        for (int r = r0; r < r1; r += k->mr) {
            const int mr = r1 - r < k->mr ? r1 - r : k->mr;
            k->block(mr, s->q + (size_t)r * kp, s->aux + (size_t)r * kp, kp, p->groups, panel,
                     p->corr + j * NR, acc);
            finish_tile(acc, mr, s->s + r, p->scale + j * NR, p->b + j * NR,
                        y + (size_t)r * ldy + j * NR, ldy, ncols, relu);
        }
    }
}

void packed_int8_forward(const PackedInt8 *p, float *y, const float *x, int n, int relu)
{
    packed_int8_forward_ld(p, y, p->out, x, n, relu);
}

void packed_int8_forward_ld(const PackedInt8 *p, float *y, int ldy, const float *x, int n, int relu)
{
    const Kernel *k = kernel;
    if (n <= 0) return;
    if (!scratch_rows(p, n)) {
        /* no memory for the quantized inputs: zeros rather than garbage
         * (as packed_linear's bf16 path) */
        for (int r = 0; r < n; r++) memset(y + (size_t)r * ldy, 0, (size_t)p->out * sizeof *y);
        return;
    }
    /* rows in chunks of about 256 KB of quantized input, panels innermost
     * within a chunk: a panel stays in cache while the blocks pass over it */
    int chunk = (1 << 18) / (4 * p->groups) / k->mr * k->mr;
    if (chunk < k->mr) chunk = k->mr;
    const long tasks = (long)((n + chunk - 1) / chunk) * p->panels;
    /* A small product runs here: 2^22 multiply-adds take about 10 µs on one
     * core, less than waking another thread costs on a busy host (and a
     * parallel region costs libgomp a team even on one thread). A decoder
     * step at batch 1 (5 rows) then runs its output layer on one thread. */
    if ((long)n * p->out * p->in <= (1L << 22) || omp_get_max_threads() == 1 || omp_in_parallel()) {
        quantize_rows(p, k, x, 0, n);
        run_tasks(p, k, y, ldy, n, relu, chunk, 0, tasks);
        return;
    }
    /* one region for both steps: on a busy machine every region's start
     * and end wait for the slowest thread */
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), id = omp_get_thread_num();
        quantize_rows(p, k, x, (int)((long)n * id / nt), (int)((long)n * (id + 1) / nt));
#pragma omp barrier
        run_tasks(p, k, y, ldy, n, relu, chunk, tasks * id / nt, tasks * (id + 1) / nt);
    }
}
