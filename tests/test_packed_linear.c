/* packed_linear: agrees with a double-precision loop, and each row's result is
 * bit-identical whatever the other rows, the row count and the threads. */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/packed_linear.h"
#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "base/rng.h"
#include "test.h"

static void fill(float *a, long n, Rng *rng)
{
    for (long i = 0; i < n; i++) a[i] = (float)(rng_uniform(rng) * 2.0 - 1.0);
}

/* in × out shapes cover a partial last panel (out = 37, 8003), one input
 * (in = 1) and the decoder's usual sizes. */
static const int shapes[][2] = {{1, 5}, {3, 37}, {16, 64}, {128, 384}, {67, 8003}, {512, 96}};

/* bf16: the inputs and weights as the kernel sees them */
static double as_used(float x, bool bf16)
{
    return bf16 ? bf16_to_float(bf16_from_float(x)) : x;
}

static void matches_loop(bool bf16)
{
    blas_set_bf16(bf16);
    Rng rng;
    rng_seed(&rng, 7);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int in = shapes[s][0], out = shapes[s][1], n = 11;
        float *w = malloc(sizeof(float) * in * out), *b = malloc(sizeof(float) * out);
        float *x = malloc(sizeof(float) * n * in), *y = malloc(sizeof(float) * n * out);
        fill(w, (long)in * out, &rng);
        fill(b, out, &rng);
        fill(x, (long)n * in, &rng);
        PackedLinear p;
        CHECK(packed_linear_init(&p, w, NULL, b, in, out, NULL) == TFM_OK);
        for (int relu = 0; relu < 2; relu++) {
            packed_linear_forward(&p, y, x, n, relu);
            double worst = 0;
            for (int r = 0; r < n; r++)
                for (int j = 0; j < out; j++) {
                    double want = b[j], mag = fabs(b[j]);
                    for (int k = 0; k < in; k++) {
                        double t = as_used(x[r * in + k], bf16) * as_used(w[(long)j * in + k], bf16);
                        want += t;
                        mag += fabs(t);
                    }
                    if (relu && want < 0) want = 0;
                    /* float32 accumulation: error below in · 2^-24 · Σ|terms|
                     * (bf16: the products of two bf16 values are exact in
                     * float32, and vdpbf16ps sums them in float32 too) */
                    double e = fabs(y[(long)r * out + j] - want) / (mag * (in + 1));
                    if (e > worst) worst = e;
                }
            CHECK(worst < 1.2e-7);
        }
        packed_linear_free(&p);
        free(w), free(b), free(x), free(y);
    }
    blas_set_bf16(false);
}

TEST(test_packed_linear_matches_loop) { matches_loop(false); }

TEST(test_packed_linear_bf16_matches_loop)
{
    if (!bf16_available()) {
        printf("  (no bf16 unit on this CPU: not run)\n");
        return;
    }
    matches_loop(true);
}

static void rows_independent(bool bf16)
{
    blas_set_bf16(bf16);
    Rng rng;
    rng_seed(&rng, 11);
    /* in 300: the float32 kernel sums a many-row product in ranges of 128
     * inputs (KC) and a row alone in one; out 1000: a partial last panel */
    const int in = 300, out = 1000, n = 23;
    float *w = malloc(sizeof(float) * in * out), *b = malloc(sizeof(float) * out);
    float *x = malloc(sizeof(float) * n * in), *all = malloc(sizeof(float) * n * out);
    float *one = malloc(sizeof(float) * out);
    fill(w, (long)in * out, &rng);
    fill(b, out, &rng);
    fill(x, (long)n * in, &rng);
    PackedLinear p;
    CHECK(packed_linear_init(&p, w, NULL, b, in, out, NULL) == TFM_OK);
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++)
        for (int relu = 0; relu <= 1; relu++) {
            omp_set_num_threads(threads);
            packed_linear_forward(&p, all, x, n, relu);
            /* row r alone, and as row 0 of the rows r.. (every block position) */
            for (int r = 0; r < n; r++) {
                packed_linear_forward(&p, one, x + (long)r * in, 1, relu);
                CHECK(memcmp(one, all + (long)r * out, sizeof(float) * out) == 0);
            }
            for (int r = 0; r < n; r++) {
                float *part = malloc(sizeof(float) * (n - r) * out);
                packed_linear_forward(&p, part, x + (long)r * in, n - r, relu);
                CHECK(memcmp(part, all + (long)r * out, sizeof(float) * (n - r) * out) == 0);
                free(part);
            }
        }
    omp_set_num_threads(saved);
    packed_linear_free(&p);
    free(w), free(b), free(x), free(all), free(one);
    blas_set_bf16(false);
}

TEST(test_packed_linear_rows_independent) { rows_independent(false); }

/* bf16 too: a sentence translates the same alone or in a batch */
TEST(test_packed_linear_bf16_rows_independent)
{
    if (!bf16_available()) {
        printf("  (no bf16 unit on this CPU: not run)\n");
        return;
    }
    rows_independent(true);
}

/* A product over some rows of a matrix (rows map) gives the bits of the
 * same product packed from a gathered copy, in fp32, bf16 and int8, and
 * after an update too. */
static void rows_map(bool bf16, bool int8)
{
    blas_set_bf16(bf16);
    Rng rng;
    rng_seed(&rng, 13);
    const int in = 40, all = 300, out = 77, n = 9;
    float *w = malloc(sizeof(float) * in * all), *g = malloc(sizeof(float) * in * out);
    float *x = malloc(sizeof(float) * n * in);
    float *y1 = malloc(sizeof(float) * n * out), *y2 = malloc(sizeof(float) * n * out);
    int rows[77];
    for (int j = 0; j < out; j++) rows[j] = (j * 37 + 5) % all;   /* any order, distinct */
    fill(w, (long)in * all, &rng);
    fill(x, (long)n * in, &rng);
    for (int round = 0; round < 2; round++) {
        for (int j = 0; j < out; j++)
            memcpy(g + (size_t)j * in, w + (size_t)rows[j] * in, sizeof(float) * in);
        PackedLinear pm, pg;
        TfmStatus (*init)(PackedLinear *, const float *, const int *, const float *, int, int,
                          TfmErr *) = int8 ? packed_linear_init_int8 : packed_linear_init;
        CHECK(init(&pm, w, rows, NULL, in, out, NULL) == TFM_OK);
        CHECK(init(&pg, g, NULL, NULL, in, out, NULL) == TFM_OK);
        if (round == 1) {           /* the weights change: both repack */
            for (long i = 0; i < (long)in * all; i++) w[i] *= -0.5f;
            for (int j = 0; j < out; j++)
                memcpy(g + (size_t)j * in, w + (size_t)rows[j] * in, sizeof(float) * in);
            packed_linear_update(&pm, w, NULL);
            packed_linear_update(&pg, g, NULL);
        }
        packed_linear_forward(&pm, y1, x, n, 0);
        packed_linear_forward(&pg, y2, x, n, 0);
        CHECK(memcmp(y1, y2, sizeof(float) * n * out) == 0);
        /* and not the unmapped rows' product (the test can fail) */
        PackedLinear p0;
        CHECK(init(&p0, w, NULL, NULL, in, out, NULL) == TFM_OK);
        packed_linear_forward(&p0, y2, x, n, 0);
        CHECK(memcmp(y1, y2, sizeof(float) * n * out) != 0);
        packed_linear_free(&p0);
        packed_linear_free(&pm);
        packed_linear_free(&pg);
    }
    free(w), free(g), free(x), free(y1), free(y2);
    blas_set_bf16(false);
}

TEST(test_packed_linear_rows_map)
{
    rows_map(false, false);
    rows_map(false, true);
    if (bf16_available()) rows_map(true, false);
}

/* packed_linear_bytes is what init allocates: float32, int8 (a byte a
 * weight, not four), and bf16 (half) where the CPU has it. */
TEST(test_packed_linear_bytes_match_init)
{
    const int sizes[][2] = {{1, 1}, {7, 37}, {64, 64}, {129, 300}, {33, 8003}};
    Rng rng;
    rng_seed(&rng, 9);
    const bool bf16 = bf16_available();
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int in = sizes[s][0], out = sizes[s][1];
        float *w = malloc(sizeof(float) * (size_t)in * out);
        CHECK(w != NULL);
        fill(w, (long)in * out, &rng);
        size_t f32 = 0;
        for (int kind = 0; kind < 3; kind++) {      /* fp32, int8, bf16 */
            if (kind == 2 && !bf16) break;
            blas_set_bf16(kind == 2);
            PackedLinear p;
            TfmStatus st = kind == 1 ? packed_linear_init_int8(&p, w, NULL, NULL, in, out, NULL)
                                     : packed_linear_init(&p, w, NULL, NULL, in, out, NULL);
            CHECK(st == TFM_OK);
            const size_t want = packed_linear_bytes(in, out, kind == 1);
            CHECK_EQ_INT(p.bytes, want);
            if (kind == 0) f32 = want;
            else if (in * out >= 4096) CHECK(kind == 1 ? want * 2 < f32 : want < f32);
            packed_linear_free(&p);
        }
        blas_set_bf16(false);
        free(w);
    }
}
