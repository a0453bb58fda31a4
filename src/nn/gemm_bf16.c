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
    X(primitive_desc_query) \
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

/* oneDNN state, made at first use. oneDNN 2.6 picks its kernel by the
 * primitive's shapes: for shapes fixed at creation its brgemm kernels
 * ("brg:avx512_core_amx_bf16" on AMX, "brg:avx512_core_bf16" on
 * AVX512-BF16), for shapes given at run time (DNNL_RUNTIME_DIM_VAL) only
 * its older GEMM ("gemm:jit"), which never reaches AMX. So tfm keeps both:
 *   - eight run-time-shape primitives, one per (A transposed, B transposed,
 *     C = or +=), which take every shape;
 *   - a cache of fixed-shape primitives, keyed by (transposes, C = or +=,
 *     m, n, k), with the shapes that change with the batch rounded so a run
 *     makes a bounded number (FIXED_CAP / 2 at most; ~1 ms each to create):
 *     the depth k rounded up to a bucket (8 an octave from 128, steps of 16
 *     below: 12.5% extra work at most from k 128; the bf16 copies are
 *     padded with zeros, which add nothing), the
 *     rows m cut into blocks of M_BLOCK and a remainder rounded down to a
 *     multiple of M_STEP, the last rows (< M_STEP) left to the run-time
 *     primitive. Only A's rows are cut: the rows of A transposed are m
 *     columns of the copy, which a dense block cannot take.
 * Which serves the products is measured, not assumed (bf16_shapes_auto):
 * the fixed shapes on AMX hosts (where PyTorch on oneDNN 2.6.3 measured
 * brgemm at 512-677 GFLOP/s on 2 threads, OpenBLAS fp32 126-308), elsewhere
 * TFM_BF16_SHAPES picks (docs/speed.md has the measurements).
 * The layouts stay fixed (dense, by tag): with run-time strides too,
 * oneDNN 2.6 falls back to its reference loop, 100x slower. */
enum { FIXED_CAP = 1024, M_BLOCK = 512, M_STEP = 32 };
typedef struct {
    int ta, tb, acc;
    long m, n, k;
    dnnl_primitive_t p;           /* NULL and not refused: a free entry */
    bool refused;                 /* oneDNN made none for the key: not asked again */
} FixedPrim;

static struct {
    int state;                    /* 0: not tried, 1: ready, -1: unusable */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim[2][2][2]; /* [trans_a][trans_b][accumulate] */
    int threads;                  /* the OpenMP thread count they were made for */
    int fixed_wanted;             /* the cache would serve (fixed_shapes_wanted) */
    bool fixed_allowed;           /* bf16_allow_fixed_shapes */
    FixedPrim fixed[FIXED_CAP];   /* open addressing by key_hash */
    int n_fixed;
    /* The inputs rounded to bf16, packed (their depth padded with zeros to
     * its bucket). A group of products (one blas_gemm_parallel call: inputs
     * do not change during it) rounds a matrix they share once: a
     * backward's dx = dy·W and dW = dyᵀ·x read the same dy, and the output
     * layer's two products the same logits, the largest matrix of the step. */
    struct Rounded {
        uint16_t *data;
        size_t cap;
        const float *src;         /* what it holds, in this group */
        int rows, cols, ld, pad_rows, pad_cols;
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

/* The same rounding as bf16_from_float with a select for the NaN case
 * instead of a branch, so that GCC vectorizes the loop: the decoder step
 * rounds every product's inputs, and one float at a time this took 60% of
 * the bf16 product's own time. */
void bf16_from_floats(uint16_t *dst, const float *src, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, sizeof u);
        const uint32_t nan = (u >> 16) | 0x40u;
        const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
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

/* A matmul primitive for (m, n, k), any of them DNNL_RUNTIME_DIM_VAL; its
 * implementation's name (e.g. "brg:avx512_core_bf16") copied into impl
 * (of impl_size bytes) when impl is not NULL: oneDNN's string lives only as
 * long as the primitive descriptor. */
static dnnl_primitive_t make_primitive(int trans_a, int trans_b, int accumulate, long m,
                                       long n, long k, char *impl, size_t impl_size)
{
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    if (!desc(&a, dnnl_bf16, m, k, trans_a) || !desc(&b, dnnl_bf16, k, n, trans_b) ||
        !desc(&c, dnnl_f32, m, n, 0) || D.matmul_desc_init(&md, &a, &b, NULL, &c) ||
        D.primitive_attr_create(&attr))
        goto done;
    if (accumulate) {
        if (D.post_ops_create(&ops) || D.post_ops_append_sum(ops, 1.0f) ||
            D.primitive_attr_set_post_ops(attr, ops))
            goto done;
    }
    if (D.primitive_desc_create(&pd, &md, attr, S.engine, NULL) == dnnl_success) {
        const char *name = NULL;
        if (impl && D.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
            name)
            snprintf(impl, impl_size, "%s", name);
        if (D.primitive_create(&p, pd) != dnnl_success) p = NULL;
    }
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
    for (int i = 0; i < FIXED_CAP; i++)
        if (S.fixed[i].p) D.primitive_destroy(S.fixed[i].p);
    memset(S.fixed, 0, sizeof S.fixed);
    S.n_fixed = 0;
}

/* The fixed shapes by default on AMX only; TFM_BF16_SHAPES "fixed" or
 * "runtime" picks either on any host (to measure them side by side). */
static int fixed_shapes_wanted(void)
{
    const char *e = getenv("TFM_BF16_SHAPES");
    if (e && strcmp(e, "fixed") == 0) return 1;
    if (e && strcmp(e, "runtime") == 0) return 0;
    const dnnl_cpu_isa_t isa = D.get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
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
        S.fixed_wanted = fixed_shapes_wanted();
    }
    destroy_primitives();
    S.state = -1;
    const long any = DNNL_RUNTIME_DIM_VAL;
    for (int i = 0; i < 8; i++)
        if (!(S.prim[i >> 2][(i >> 1) & 1][i & 1] =
                  make_primitive(i >> 2, (i >> 1) & 1, i & 1, any, any, any, NULL, 0)))
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

/* The depth a product runs at: k rounded up to a multiple of an eighth of
 * its octave (at least 16), so the row counts of a run's batches make few
 * shapes. */
static long depth_bucket(long k)
{
    long step = 16;
    while (step * 16 <= k) step *= 2;
    return (k + step - 1) / step * step;
}

/* The fixed-shape primitive for a key: the cached one, a new one, or NULL
 * (the cache is full, or oneDNN refused: the run-time primitive serves). */
static dnnl_primitive_t fixed_primitive(int ta, int tb, int acc, long m, long n, long k)
{
    uint64_t h = 1469598103934665603ull;
    const long key[6] = {ta, tb, acc, m, n, k};
    for (int i = 0; i < 6; i++) h = (h ^ (uint64_t)key[i]) * 1099511628211ull;
    for (unsigned i = (unsigned)(h % FIXED_CAP), tries = 0; tries < FIXED_CAP;
         i = (i + 1) % FIXED_CAP, tries++) {
        FixedPrim *f = &S.fixed[i];
        if (!f->p && !f->refused) {
            if (S.n_fixed >= FIXED_CAP / 2) return NULL;   /* keep probes short */
            f->p = make_primitive(ta, tb, acc, m, n, k, NULL, 0);
            f->refused = f->p == NULL;
            f->ta = ta, f->tb = tb, f->acc = acc, f->m = m, f->n = n, f->k = k;
            S.n_fixed++;
            return f->p;
        }
        if (f->ta == ta && f->tb == tb && f->acc == acc && f->m == m && f->n == n && f->k == k)
            return f->p;
    }
    return NULL;
}

int bf16_fixed_primitives(void) { return S.n_fixed; }

/* dst (pad_rows, pad_cols) packed = bf16(src (rows, cols) with leading
 * dimension ld), zeros beyond. */
static void round_rows(uint16_t *dst, const float *src, int rows, int cols, int ld,
                       int pad_rows, int pad_cols)
{
#pragma omp parallel for schedule(static) if ((long)rows * cols > 32768)
    for (int r = 0; r < rows; r++) {
        const float *s = src + (long)r * ld;
        uint16_t *d = dst + (long)r * pad_cols;
        bf16_from_floats(d, s, (size_t)cols);
        for (int j = cols; j < pad_cols; j++) d[j] = 0;
    }
    memset(dst + (long)rows * pad_cols, 0, (size_t)(pad_rows - rows) * pad_cols * sizeof *dst);
}

/* src (rows, cols; leading dimension ld) rounded to bf16 and packed into
 * (pad_rows, pad_cols): the copy this group already made, or a new one;
 * NULL when memory runs out or the group has no slot left. */
static const uint16_t *rounded(const float *src, int rows, int cols, int ld, int pad_rows,
                               int pad_cols)
{
    for (int i = 0; i < S.used; i++) {
        const struct Rounded *r = &S.slot[i];
        if (r->src == src && r->rows == rows && r->cols == cols && r->ld == ld &&
            r->pad_rows == pad_rows && r->pad_cols == pad_cols)
            return r->data;
    }
    if (S.used == BF16_SLOTS) return NULL;
    struct Rounded *r = &S.slot[S.used];
    const size_t n = (size_t)pad_rows * pad_cols;
    if (n > r->cap) {
        uint16_t *p = xrealloc(r->data, n * sizeof *p, NULL);
        if (!p) return NULL;
        r->data = p;
        r->cap = n;
    }
    round_rows(r->data, src, rows, cols, ld, pad_rows, pad_cols);
    r->src = src, r->rows = rows, r->cols = cols, r->ld = ld;
    r->pad_rows = pad_rows, r->pad_cols = pad_cols;
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

/* C (m, n) (+)= A·B over packed bf16 copies of depth k (already padded). */
static bool execute(dnnl_primitive_t p, int ta, int tb, long m, long n, long k,
                    const uint16_t *a, const uint16_t *b, float *c)
{
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    bool ok = memory(&ma, dnnl_bf16, m, k, ta, (void *)a) &&
              memory(&mb, dnnl_bf16, k, n, tb, (void *)b) && memory(&mc, dnnl_f32, m, n, 0, c);
    if (ok) {
        const dnnl_exec_arg_t args[] = {
            {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        ok = D.primitive_execute(p, S.stream, 3, args) == dnnl_success &&
             D.stream_wait(S.stream) == dnnl_success;
    }
    if (ma) D.memory_destroy(ma);
    if (mb) D.memory_destroy(mb);
    if (mc) D.memory_destroy(mc);
    return ok;
}

static bool run_one(const GemmArgs *g)
{
    if (g->alpha != 1.0f || (g->beta != 0.0f && g->beta != 1.0f) || g->ldc != g->n ||
        !ready())
        return false;
    const int m = g->m, n = g->n, k = g->k, acc = g->beta != 0.0f;
    const int ta = g->trans_a != 0, tb = g->trans_b != 0;
    if (m <= 0 || n <= 0) return true;
    if (k <= 0) {                                  /* C = beta·C */
        if (!acc)
            for (int i = 0; i < m; i++) memset(g->c + (long)i * g->ldc, 0, (size_t)n * sizeof(float));
        return true;
    }
    /* As stored: A is (m, k), or (k, m) when transposed; B is (k, n), or
     * (n, k). The packed copies keep that orientation; the tags tell
     * oneDNN which way to read them. */
    const bool fixed = S.fixed_allowed && S.fixed_wanted;
    const int kp = fixed ? (int)depth_bucket(k) : k;
    const uint16_t *a = ta ? rounded(g->a, k, m, g->lda, kp, m) : rounded(g->a, m, k, g->lda, m, kp);
    const uint16_t *b = !a ? NULL : tb ? rounded(g->b, n, k, g->ldb, n, kp)
                                       : rounded(g->b, k, n, g->ldb, kp, n);
    if (!b) return false;
    dnnl_primitive_t any = S.prim[ta][tb][acc];
    if (!fixed) return execute(any, ta, tb, m, n, kp, a, b, g->c);
    if (ta) {                   /* m is whole: A's rows are the copy's columns */
        dnnl_primitive_t p = fixed_primitive(ta, tb, acc, m, n, kp);
        return execute(p ? p : any, ta, tb, m, n, kp, a, b, g->c);
    }
    for (int r0 = 0; r0 < m;) {
        const int left = m - r0;
        const int rows = left >= M_BLOCK ? M_BLOCK : left >= M_STEP ? left / M_STEP * M_STEP : left;
        dnnl_primitive_t p = rows >= M_STEP ? fixed_primitive(ta, tb, acc, rows, n, kp) : NULL;
        if (!execute(p ? p : any, ta, tb, rows, n, kp, a + (long)r0 * kp, b, g->c + (long)r0 * n))
            return false;
        r0 += rows;
    }
    return true;
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

void bf16_allow_fixed_shapes(bool allow)
{
    S.fixed_allowed = allow;
    if (allow && dnnl_loaded()) S.fixed_wanted = fixed_shapes_wanted();
}

/* The implementation oneDNN picks for a product through the fixed-shape
 * cache (a linear layer's forward at a size the recipes train) or through
 * the run-time primitives. */
static const char *impl_name(bool fixed, char *buf, size_t size)
{
    const long any = DNNL_RUNTIME_DIM_VAL;
    snprintf(buf, size, "unknown");
    dnnl_primitive_t p = fixed ? make_primitive(0, 1, 1, 512, 512, 512, buf, size)
                               : make_primitive(0, 1, 1, any, any, any, buf, size);
    if (p) D.primitive_destroy(p);
    return buf;
}

const char *bf16_kernel_name(void)
{
    static char text[160];
    char fixed[64], runtime[64];
    if (!ready()) return "none";
    impl_name(false, runtime, sizeof runtime);
    if (!S.fixed_wanted)
        snprintf(text, sizeof text, "%s, run-time shapes", runtime);
    else
        snprintf(text, sizeof text, "%s in training, fixed shapes; %s in translation",
                 impl_name(true, fixed, sizeof fixed), runtime);
    return text;
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
