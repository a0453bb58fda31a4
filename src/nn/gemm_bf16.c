/* gemm_bf16: bfloat16 products over oneDNN's matmul (see gemm_bf16.h). */
#include "nn/gemm_bf16.h"

#include <dlfcn.h>
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BF16_SLOTS = 8 };

/* oneDNN is loaded when bf16 is first asked about (dlopen), not linked: the
 * binary starts, and runs in fp32, on a machine without it, and says what
 * is missing when bf16 is asked for. TFM_DNNL_LIB names another file to
 * load (the tests: one that is not there). */
#define STR_(x) #x
#define STR(x) STR_(x)
static const char DNNL_SONAME[] = "libdnnl.so." STR(DNNL_VERSION_MAJOR);
#define DNNL_FUNCTIONS(X) \
    X(engine_create) \
    X(engine_destroy) \
    X(get_effective_cpu_isa) \
    X(matmul_desc_init) \
    X(memory_create) \
    X(memory_desc_init_by_tag) \
    X(memory_destroy) \
    X(post_ops_append_sum) \
    X(post_ops_create) \
    X(post_ops_destroy) \
    X(primitive_attr_create) \
    X(primitive_attr_destroy) \
    X(primitive_attr_set_post_ops) \
    X(primitive_create) \
    X(primitive_desc_create) \
    X(primitive_desc_destroy) \
    X(primitive_destroy) \
    X(primitive_execute) \
    X(stream_create) \
    X(stream_destroy) \
    X(stream_wait) \
    X(version)
static struct {
    int state;                    /* 0: not tried, 1: loaded, -1: missing */
#define FIELD(name) __typeof__(dnnl_##name) *name;
    DNNL_FUNCTIONS(FIELD)
#undef FIELD
} D;

static bool load_symbol(void *lib, const char *name, void *field)
{
    void *sym = dlsym(lib, name);
    memcpy(field, &sym, sizeof sym);    /* a function pointer, as POSIX has it */
    return sym != NULL;
}

static bool dnnl_loaded(void)
{
    if (D.state == 0) {
        const char *file = getenv("TFM_DNNL_LIB");
        void *lib = dlopen(file && *file ? file : DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
        bool ok = lib != NULL;
#define LOAD(name) ok = ok && load_symbol(lib, "dnnl_" #name, &D.name);
        DNNL_FUNCTIONS(LOAD)
#undef LOAD
        D.state = ok ? 1 : -1;
    }
    return D.state > 0;
}
        /* two inputs for each of up to four products */

/* oneDNN state, made at first use. One primitive per (A transposed, B
 * transposed, C = or +=) takes every shape at run time
 * (DNNL_RUNTIME_DIM_VAL): eight primitives serve all the products of a run,
 * where fixed shapes would need one per (rows, cols, depth), and the row
 * count changes with every batch (a new shape costs ~1.5 ms to compile).
 * The layouts stay fixed (dense, by tag): with run-time strides too, oneDNN
 * 2.6 falls back to its reference loop, 100x slower. Measured on an
 * AVX512-BF16 core at 4096x512x512: 390 GFLOP/s with run-time shapes
 * ("gemm:jit"), 402 with fixed ones ("brg"), sgemm 185-194. */
static struct {
    int state;                    /* 0: not tried, 1: ready, -1: unusable */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim[2][2][2]; /* [trans_a][trans_b][accumulate] */
    int threads;                  /* the OpenMP thread count they were made for */
    /* The inputs rounded to bf16, packed. A group of products (one
     * blas_gemm_parallel call: inputs do not change during it) rounds a
     * matrix they share once: a backward's dx = dy·W and dW = dyᵀ·x read
     * the same dy, and the output layer's two products the same logits,
     * the largest matrix of the step. */
    struct Rounded {
        uint16_t *data;
        size_t cap;
        const float *src;         /* what it holds, in this group */
        int rows, cols, ld;
    } slot[BF16_SLOTS];
    int used;                     /* slots filled in this group */
} S;

uint16_t bf16_from_float(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    /* A NaN keeps its sign and stays a (quiet) NaN; rounding could carry
     * its low mantissa bits into the exponent and make it infinite. */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);      /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The CPU's bf16 unit as oneDNN sees it. dnnl_get_effective_cpu_isa caps
 * by what the CPU has and by ONEDNN_MAX_CPU_ISA. Without AVX512-BF16 or
 * AMX, oneDNN would emulate bf16 on float32 units, slower than sgemm: tfm
 * refuses instead. */
static int isa_level(void)
{
    if (!dnnl_loaded()) return 0;
    const dnnl_cpu_isa_t isa = D.get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx) return 2;
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) return 1;
    return 0;
}

const char *bf16_isa_name(void)
{
    static const char *const names[] = {"none", "AVX512-BF16", "AMX"};
    return names[isa_level()];
}

bool bf16_available(void) { return isa_level() > 0; }

const char *bf16_library_version(void)
{
    static char text[32];
    if (!dnnl_loaded()) return "not installed";
    const dnnl_version_t *v = D.version();
    snprintf(text, sizeof text, "%d.%d.%d", v->major, v->minor, v->patch);
    return text;
}

TfmStatus bf16_require(const char *what, TfmErr *err)
{
    if (bf16_available()) return TFM_OK;
    if (!dnnl_loaded())
        return err_set(err, TFM_ERR_CONFIG, "%s: bf16 runs on oneDNN (%s), which is not "
                       "installed (use \"fp32\", or install libdnnl: make deps)", what,
                       DNNL_SONAME);
    return err_set(err, TFM_ERR_CONFIG,
                   "%s: bf16 needs a CPU with AVX512-BF16 or AMX, and this one has neither "
                   "(use \"fp32\")", what);
}

/* A dense (rows, cols) descriptor; transposed: stored as (cols, rows). */
static bool desc(dnnl_memory_desc_t *d, dnnl_data_type_t type, long rows, long cols,
                 int transposed)
{
    return D.memory_desc_init_by_tag(d, 2, (dnnl_dims_t){rows, cols}, type,
                                        transposed ? dnnl_ba : dnnl_ab) == dnnl_success;
}

static dnnl_primitive_t make_primitive(int trans_a, int trans_b, int accumulate)
{
    const long any = DNNL_RUNTIME_DIM_VAL;
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    if (!desc(&a, dnnl_bf16, any, any, trans_a) || !desc(&b, dnnl_bf16, any, any, trans_b) ||
        !desc(&c, dnnl_f32, any, any, 0) || D.matmul_desc_init(&md, &a, &b, NULL, &c) ||
        D.primitive_attr_create(&attr))
        goto done;
    if (accumulate) {
        if (D.post_ops_create(&ops) || D.post_ops_append_sum(ops, 1.0f) ||
            D.primitive_attr_set_post_ops(attr, ops))
            goto done;
    }
    if (D.primitive_desc_create(&pd, &md, attr, S.engine, NULL) == dnnl_success)
        if (D.primitive_create(&p, pd) != dnnl_success) p = NULL;
done:
    if (pd) D.primitive_desc_destroy(pd);
    if (ops) D.post_ops_destroy(ops);
    if (attr) D.primitive_attr_destroy(attr);
    return p;
}

static void destroy_primitives(void)
{
    for (int i = 0; i < 8; i++) {
        dnnl_primitive_t *p = &S.prim[i >> 2][(i >> 1) & 1][i & 1];
        if (*p) D.primitive_destroy(*p);
        *p = NULL;
    }
}

/* A primitive plans its work for the thread count at its creation and
 * waits for that many at run time: run with fewer (blas_set_threads
 * lowered it) it would wait forever, so a new count makes new primitives. */
static bool ready(void)
{
    const int threads = omp_get_max_threads();
    if (S.state > 0 && S.threads == threads) return true;
    if (S.state < 0) return false;
    if (S.state == 0) {
        S.state = -1;
        if (!bf16_available()) return false;
        if (D.engine_create(&S.engine, dnnl_cpu, 0) != dnnl_success) return false;
        if (D.stream_create(&S.stream, S.engine, dnnl_stream_default_flags) != dnnl_success)
            return false;
    }
    destroy_primitives();
    S.state = -1;
    for (int i = 0; i < 8; i++)
        if (!(S.prim[i >> 2][(i >> 1) & 1][i & 1] = make_primitive(i >> 2, (i >> 1) & 1, i & 1)))
            return false;
    S.threads = threads;
    S.state = 1;
    return true;
}

void bf16_release(void)
{
    destroy_primitives();
    if (S.stream) D.stream_destroy(S.stream);
    if (S.engine) D.engine_destroy(S.engine);
    for (int i = 0; i < BF16_SLOTS; i++) free(S.slot[i].data);
    memset(&S, 0, sizeof S);
}

/* dst (rows, cols) packed = bf16(src (rows, cols) with leading dimension ld). */
static void round_rows(uint16_t *dst, const float *src, int rows, int cols, int ld)
{
#pragma omp parallel for schedule(static) if ((long)rows * cols > 32768)
    for (int r = 0; r < rows; r++) {
        const float *s = src + (long)r * ld;
        uint16_t *d = dst + (long)r * cols;
#pragma omp simd
        for (int j = 0; j < cols; j++) d[j] = bf16_from_float(s[j]);
    }
}

/* src (rows, cols; leading dimension ld) rounded to bf16 and packed: the
 * copy this group already made, or a new one; NULL when memory runs out or
 * the group has no slot left. */
static const uint16_t *rounded(const float *src, int rows, int cols, int ld)
{
    for (int i = 0; i < S.used; i++) {
        const struct Rounded *r = &S.slot[i];
        if (r->src == src && r->rows == rows && r->cols == cols && r->ld == ld) return r->data;
    }
    if (S.used == BF16_SLOTS) return NULL;
    struct Rounded *r = &S.slot[S.used];
    const size_t n = (size_t)rows * cols;
    if (n > r->cap) {
        uint16_t *p = realloc(r->data, n * sizeof *p);
        if (!p) return NULL;
        r->data = p;
        r->cap = n;
    }
    round_rows(r->data, src, rows, cols, ld);
    r->src = src, r->rows = rows, r->cols = cols, r->ld = ld;
    S.used++;
    return r->data;
}

static bool memory(dnnl_memory_t *mem, dnnl_data_type_t type, long rows, long cols,
                   int transposed, void *data)
{
    dnnl_memory_desc_t d;
    return desc(&d, type, rows, cols, transposed) &&
           D.memory_create(mem, &d, S.engine, data) == dnnl_success;
}

static bool run_one(const GemmArgs *g)
{
    if (g->alpha != 1.0f || (g->beta != 0.0f && g->beta != 1.0f) || g->ldc != g->n ||
        !ready())
        return false;
    const int m = g->m, n = g->n, k = g->k, acc = g->beta != 0.0f;
    if (m <= 0 || n <= 0) return true;
    if (k <= 0) {                                  /* C = beta·C */
        if (!acc)
            for (int i = 0; i < m; i++) memset(g->c + (long)i * g->ldc, 0, (size_t)n * sizeof(float));
        return true;
    }
    /* As stored: A is (m, k), or (k, m) when transposed; B is (k, n), or
     * (n, k). The packed copies keep that orientation; the tags tell
     * oneDNN which way to read them. */
    const int ar = g->trans_a ? k : m, ac = g->trans_a ? m : k;
    const int br = g->trans_b ? n : k, bc = g->trans_b ? k : n;
    const uint16_t *a = rounded(g->a, ar, ac, g->lda), *b = a ? rounded(g->b, br, bc, g->ldb) : NULL;
    if (!b) return false;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    bool ok = memory(&ma, dnnl_bf16, m, k, g->trans_a, (void *)a) &&
              memory(&mb, dnnl_bf16, k, n, g->trans_b, (void *)b) &&
              memory(&mc, dnnl_f32, m, n, 0, g->c);
    if (ok) {
        const dnnl_exec_arg_t args[] = {
            {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        ok = D.primitive_execute(S.prim[g->trans_a != 0][g->trans_b != 0][acc], S.stream, 3, args) == dnnl_success &&
             D.stream_wait(S.stream) == dnnl_success;
    }
    if (ma) D.memory_destroy(ma);
    if (mb) D.memory_destroy(mb);
    if (mc) D.memory_destroy(mc);
    return ok;
}

void bf16_gemm_group(const GemmArgs *g, int count, bool *ran)
{
    S.used = 0;                 /* copies of an earlier group are never trusted */
    for (int i = 0; i < count; i++) ran[i] = run_one(&g[i]);
}

bool bf16_gemm(const GemmArgs *g)
{
    bool ran;
    bf16_gemm_group(g, 1, &ran);
    return ran;
}

TfmStatus bf16_selftest(TfmErr *err)
{
    if (!bf16_available()) return TFM_OK;
    enum { M = 37, N = 29, K = 53 };
    float a[M * K], b[N * K], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7919) % 23) / 11.0f - 1.0f;
    for (int i = 0; i < N * K; i++) b[i] = (float)((i * 104729) % 19) / 9.0f - 1.0f;
    for (int i = 0; i < M * N; i++) c[i] = 0.5f;
    /* C += A·Bᵀ, as a linear layer's forward over a bias */
    if (!bf16_gemm(&(GemmArgs){0, 1, M, N, K, 1.0f, a, K, b, K, 1.0f, c, N}))
        return err_set(err, TFM_ERR_NUMERIC, "oneDNN's bf16 matmul (%s) cannot run",
                       bf16_isa_name());
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            /* the same bf16-rounded inputs, summed in double: only float32
             * rounding of the sum may differ */
            double ref = 0.5, mag = 0.5;
            for (int t = 0; t < K; t++) {
                double p = (double)bf16_to_float(bf16_from_float(a[i * K + t])) *
                           bf16_to_float(bf16_from_float(b[j * K + t]));
                ref += p;
                mag += fabs(p);
            }
            if (!(fabs(c[i * N + j] - ref) <= 1e-5 * mag))
                return err_set(err, TFM_ERR_NUMERIC,
                               "oneDNN's bf16 matmul (%s) computes wrong results", bf16_isa_name());
        }
    return TFM_OK;
}
