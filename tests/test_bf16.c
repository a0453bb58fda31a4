/* test_bf16: bfloat16 rounding, and oneDNN's bf16 products (gemm_bf16.h)
 * against a double loop over the same rounded inputs, for every transpose
 * and beta, alone and through blas_gemm_parallel. On a CPU without a bf16
 * unit the products are not run; the refusal is checked instead. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "test.h"

static float round_trip(float x) { return bf16_to_float(bf16_from_float(x)); }

TEST(bf16_rounding)
{
    /* bf16 keeps 7 mantissa bits: the spacing at 1 is 2^-7 */
    CHECK(round_trip(1.0f) == 1.0f);
    CHECK(round_trip(-2.5f) == -2.5f);
    CHECK(round_trip(1.0f + 0x1p-9f) == 1.0f);                /* below half: down */
    CHECK(round_trip(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);  /* above half: up */
    CHECK(round_trip(1.0f + 0x1p-8f) == 1.0f);                /* a tie: to even (down) */
    CHECK(round_trip(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  /* a tie: to even (up) */
    CHECK(round_trip(INFINITY) == INFINITY);
    CHECK(round_trip(-INFINITY) == -INFINITY);
    CHECK(isnan(round_trip(NAN)));
    /* a NaN whose payload is all in the low bits stays a NaN, not infinity */
    uint32_t u = 0x7f800001u;
    float low_nan;
    memcpy(&low_nan, &u, sizeof low_nan);
    CHECK(isnan(round_trip(low_nan)));
    CHECK(round_trip(3.4e38f) == INFINITY);                   /* past the largest bf16 */
    CHECK(round_trip(1e-40f) == bf16_to_float(bf16_from_float(1e-40f)));  /* subnormals pass */
    /* 8 significant bits: at most half a unit in the last place, 2^-8 of
     * |x|, on normal numbers */
    Rng rng;
    rng_seed(&rng, 3);
    for (int i = 0; i < 10000; i++) {
        float x = (rng_uniform(&rng) - 0.5f) * powf(2.0f, (float)(i % 40) - 20);
        if (x != 0) CHECK(fabsf(round_trip(x) - x) <= fabsf(x) * 0x1p-8f);
    }
}

/* the vectorized rounding gives the scalar one's bits on every kind of
 * float: random bit patterns (NaNs, infinities, subnormals, ties among
 * them) and the edges by hand, over a length that is no multiple of a
 * vector */
TEST(bf16_rounding_vectorized)
{
    enum { N = 4099 };
    static float src[N];
    static uint16_t got[N];
    const uint32_t edges[] = {0x7f800000u, 0xff800000u, 0x7f800001u, 0xffffffffu, 0x7fc00000u,
                              0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x00000001u, 0x80000000u};
    Rng rng;
    rng_seed(&rng, 5);
    for (int i = 0; i < N; i++) {
        uint32_t u = i < (int)(sizeof edges / sizeof *edges) ? edges[i] : (uint32_t)rng_u64(&rng);
        if (i % 7 == 3) u = (u & 0xffff0000u) | 0x8000u;          /* an exact tie */
        memcpy(src + i, &u, sizeof u);
    }
    bf16_from_floats(got, src, N);
    int same = 0;
    for (int i = 0; i < N; i++) same += got[i] == bf16_from_float(src[i]);
    CHECK(same == N);
}

/* C = op(A)·op(B) + beta·C0 in double over bf16-rounded inputs; also the sum
 * of |terms| per element, the scale of float32 summation error. */
static void ref_rounded(const GemmArgs *g, const float *c0, double *out, double *mag)
{
    for (int i = 0; i < g->m; i++)
        for (int j = 0; j < g->n; j++) {
            double s = g->beta * c0[(long)i * g->ldc + j], t = fabs(s);
            for (int p = 0; p < g->k; p++) {
                float a = g->trans_a ? g->a[(long)p * g->lda + i] : g->a[(long)i * g->lda + p];
                float b = g->trans_b ? g->b[(long)j * g->ldb + p] : g->b[(long)p * g->ldb + j];
                double x = (double)round_trip(a) * round_trip(b);
                s += x;
                t += fabs(x);
            }
            out[i * g->n + j] = s;
            mag[i * g->n + j] = t;
        }
}

static float *random_floats(long n, Rng *rng)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (long i = 0; i < n; i++) x[i] = rng_uniform(rng) * 2.0f - 1.0f;
    return x;
}

/* One product of each kind training has; leading dimensions of A and B
 * wider than the rows (the gather and the head slices are not packed). */
static void check_products_sized(bool through_blas, int m0, int k0)
{
    Rng rng;
    rng_seed(&rng, 11);
    for (int kind = 0; kind < 8; kind++) {
        const int ta = kind >> 2 & 1, tb = kind >> 1 & 1, acc = kind & 1;
        const int m = m0 + kind, n = 45, k = k0 - kind;
        const int lda = (ta ? m : k) + 5, ldb = (tb ? k : n) + 3;
        float *a = random_floats((long)(ta ? k : m) * lda, &rng);
        float *b = random_floats((long)(tb ? n : k) * ldb, &rng);
        float *c = random_floats((long)m * n, &rng), *c0 = malloc((size_t)m * n * sizeof *c0);
        memcpy(c0, c, (size_t)m * n * sizeof *c);
        double *ref = malloc((size_t)m * n * sizeof *ref), *mag = malloc((size_t)m * n * sizeof *mag);
        GemmArgs g = {ta, tb, m, n, k, 1.0f, a, lda, b, ldb, acc ? 1.0f : 0.0f, c, n};
        ref_rounded(&g, c0, ref, mag);
        if (through_blas) {
            blas_set_bf16(true);
            blas_gemm_parallel(&g, 1);
            blas_set_bf16(false);
        } else {
            CHECK(bf16_gemm(&g));
        }
        /* float32 accumulation of k products: error ~k·2^-24 of the sum of
         * |terms|; 1e-5 is loose for k = 131, a wrong product is off by O(1) */
        double worst = 0;
        for (long i = 0; i < (long)m * n; i++) {
            double e = fabs(c[i] - ref[i]) / (mag[i] + 1e-30);
            if (!(e <= worst)) worst = e;
        }
        if (!(worst <= 1e-5))
            test_fail(__FILE__, __LINE__, "bf16 product ta=%d tb=%d beta=%d: relative error %g",
                      ta, tb, acc, worst);
        free(a), free(b), free(c), free(c0), free(ref), free(mag);
    }
}

static void check_products(bool through_blas) { check_products_sized(through_blas, 67, 131); }

TEST(bf16_products)
{
    if (!bf16_available()) {
        TfmErr err;
        CHECK(bf16_require("train.precision", &err) == TFM_ERR_CONFIG);
        CHECK(strstr(err.msg, "AVX512-BF16 or AMX") != NULL);
        printf("  (no bf16 unit on this CPU: products not run; refusal checked)\n");
        return;
    }
    TfmErr err;
    CHECK(bf16_require("train.precision", &err) == TFM_OK);
    CHECK(bf16_selftest(&err) == TFM_OK);
    check_products(false);
    check_products(true);
    /* again with another thread count (oneDNN's plans depend on it) */
    const int threads = omp_get_max_threads();
    blas_set_threads(threads == 1 ? 2 : 1);
    check_products(false);
    blas_set_threads(threads);
    /* a group whose products share an input (a backward's dy: dx = dy·W,
     * dW = dyᵀ·x) gives what the products give one by one */
    {
        Rng r2;
        rng_seed(&r2, 5);
        const int n = 50, in = 24, out = 40;
        float *dy = random_floats((long)n * out, &r2), *w = random_floats((long)out * in, &r2);
        float *x = random_floats((long)n * in, &r2);
        float *dx1 = calloc((size_t)n * in, sizeof(float)), *dx2 = calloc((size_t)n * in, sizeof(float));
        float *dw1 = calloc((size_t)out * in, sizeof(float)), *dw2 = calloc((size_t)out * in, sizeof(float));
        GemmArgs g[2] = {{0, 0, n, in, out, 1.0f, dy, out, w, in, 1.0f, dx1, in},
                         {1, 0, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw1, in}};
        blas_set_bf16(true);
        blas_gemm_parallel(g, 2);
        blas_set_bf16(false);
        g[0].c = dx2, g[1].c = dw2;
        CHECK(bf16_gemm(&g[0]) && bf16_gemm(&g[1]));
        CHECK(memcmp(dx1, dx2, (size_t)n * in * sizeof(float)) == 0);
        CHECK(memcmp(dw1, dw2, (size_t)out * in * sizeof(float)) == 0);
        free(dy), free(w), free(x), free(dx1), free(dx2), free(dw1), free(dw2);
    }
    /* what bf16_gemm does not take, it leaves to sgemm: alpha != 1, a
     * strided C */
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[6] = {0};
    CHECK(!bf16_gemm(&(GemmArgs){0, 0, 2, 2, 2, 0.5f, a, 2, b, 2, 0.0f, c, 2}));
    CHECK(!bf16_gemm(&(GemmArgs){0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 3}));
    /* blas_gemm_parallel runs those in float32, exactly */
    blas_set_bf16(true);
    blas_gemm_parallel(&(GemmArgs){0, 0, 2, 2, 2, 0.5f, a, 2, b, 2, 0.0f, c, 3}, 1);
    blas_set_bf16(false);
    CHECK(c[0] == 0.5f && c[1] == 1.0f && c[3] == 1.5f && c[4] == 2.0f);
    /* empty products: C = beta·C */
    float one[1] = {7};
    CHECK(bf16_gemm(&(GemmArgs){0, 0, 1, 1, 0, 1.0f, a, 1, b, 1, 0.0f, one, 1}));
    CHECK(one[0] == 0.0f);
}

/* The fixed-shape primitives (bf16_allow_fixed_shapes, forced on with
 * TFM_BF16_SHAPES=fixed on any bf16 host): the same products as the double
 * loop for row counts that make whole blocks of 512, a remainder of 32s
 * and a tail for the run-time primitive, depths padded to their bucket;
 * and a bounded number of primitives for a run's many row counts: at most
 * 16 for the rows of a forward (512 and the 15 multiples of 32 below it)
 * and 8 an octave for the depth of a weight's gradient. */
TEST(bf16_fixed_shapes)
{
    if (!bf16_available()) {
        printf("  (no bf16 unit on this CPU: fixed shapes not run)\n");
        return;
    }
    setenv("TFM_BF16_SHAPES", "fixed", 1);
    bf16_allow_fixed_shapes(true);
    check_products_sized(false, 67, 131);
    check_products_sized(false, 1100, 77);      /* 2 blocks, 64 + 12 rows */
    check_products_sized(true, 531, 300);
    const int before = bf16_fixed_primitives();
    CHECK(before > 0);
    Rng rng;
    rng_seed(&rng, 7);
    enum { D = 64, MAXR = 2000 };
    float *x = random_floats((long)MAXR * D, &rng), *w = random_floats((long)D * D, &rng);
    float *y = calloc((size_t)MAXR * D, sizeof(float)), *dw = calloc((size_t)D * D, sizeof(float));
    for (int rows = 1; rows <= MAXR; rows += 7) {
        /* y = x·wᵀ (a forward: the rows vary) and dW += yᵀ·x (the depth varies) */
        CHECK(bf16_gemm(&(GemmArgs){0, 1, rows, D, D, 1.0f, x, D, w, D, 0.0f, y, D}));
        CHECK(bf16_gemm(&(GemmArgs){1, 0, D, D, rows, 1.0f, y, D, x, D, 1.0f, dw, D}));
    }
    /* depths 1-2000: 16 buckets to 256 (steps of 16), 8 to 512, 8 to 1024, 16 to 2048 */
    const int made = bf16_fixed_primitives() - before;
    if (made > 16 + 48) test_fail(__FILE__, __LINE__, "%d fixed-shape primitives for 286 row counts", made);
    CHECK(made >= 16);
    bf16_allow_fixed_shapes(false);
    unsetenv("TFM_BF16_SHAPES");
    free(x), free(w), free(y), free(dw);
}
