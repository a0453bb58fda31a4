/* packed_int8: the quantizers, and every kernel this CPU can run against a
 * double-precision loop over the same quantized values, on random and
 * adversarial matrices; all kernels give the same bits; a row's result does
 * not depend on its batch or the thread count. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/packed_int8.h"
#include "nn/packed_linear.h"
#include "base/rng.h"
#include "test.h"

static const char *const kernel_names[] = {"portable", "avx2", "avxvnni", "avx512vnni"};
enum { N_KERNEL_NAMES = 4 };

enum Fill { RANDOM, OUTLIERS, NEGATIVE, ZERO_ROWS, EXTREME };

/* a (rows, cols) matrix of kind f: RANDOM uniform in ±1; OUTLIERS one entry
 * of each row 1000x the rest; NEGATIVE all < 0; ZERO_ROWS every third row
 * zero; EXTREME all ±1 with the sign of `sign` (quantizes to ±127: the
 * largest sums, where a saturating kernel would go wrong) */
static void fill(float *a, int rows, int cols, enum Fill f, float sign, Rng *rng)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float v = (float)(rng_uniform(rng) * 2.0 - 1.0);
            if (f == OUTLIERS && c == (r * 7) % cols) v *= 1000.0f;
            if (f == NEGATIVE) v = -fabsf(v) - 1e-3f;
            if (f == ZERO_ROWS && r % 3 == 1) v = 0.0f;
            if (f == EXTREME) v = sign;
            a[(long)r * cols + c] = v;
        }
}

TEST(test_int8_quantize_row)
{
    Rng rng;
    rng_seed(&rng, 3);
    const int n = 77;
    float w[77], back[77];
    int8_t q[77], q2[77];
    for (int f = RANDOM; f <= EXTREME; f++) {
        fill(w, 1, n, (enum Fill)f, -1.0f, &rng);
        const float s = int8_quantize_row(q, w, n);
        float m = 0;
        int qmax = 0;
        for (int i = 0; i < n; i++) {
            m = fmaxf(m, fabsf(w[i]));
            qmax = abs(q[i]) > qmax ? abs(q[i]) : qmax;
            /* each weight within half a step of q·s */
            CHECK(fabs((double)q[i] * s - w[i]) <= 0.5 * s * (1 + 1e-5));
            CHECK(q[i] >= -127 && q[i] <= 127);
        }
        CHECK_EQ_INT(qmax, 127);
        CHECK(s >= m / 127.0 && s <= m / 127.0 * (1 + 3e-5));
        /* q·s quantizes back to the same q and s, exactly */
        for (int i = 0; i < n; i++) back[i] = (float)q[i] * s;
        CHECK(int8_quantize_row(q2, back, n) == s);
        CHECK(memcmp(q, q2, (size_t)n) == 0);
    }
    /* zero and negligible rows: scale 0, q 0 */
    memset(w, 0, sizeof w);
    w[5] = 1e-35f;
    memset(q, 1, sizeof q);
    CHECK(int8_quantize_row(q, w, n) == 0.0f);
    for (int i = 0; i < n; i++) CHECK_EQ_INT(q[i], 0);
}

TEST(test_int8_quantize_input)
{
    float x[9] = {0.5f, -2.0f, 1.0f, 0, 0, 0, 0, 0, 0.25f};
    int8_t q[9];
    float s = int8_quantize_input(q, x, 9);
    CHECK_NEAR(s, 2.0 / 127, 1e-9);
    CHECK_EQ_INT(q[1], -127);
    CHECK_EQ_INT(q[0], 32);                 /* 31.75 rounds to 32 */
    CHECK_EQ_INT(q[8], 16);                 /* 15.875 */
    memset(x, 0, sizeof x);
    CHECK(int8_quantize_input(q, x, 9) == 0.0f);
    x[3] = NAN;
    CHECK(isnan(int8_quantize_input(q, x, 9)));
    x[3] = -INFINITY;
    CHECK(isnan(int8_quantize_input(q, x, 9)));
}

/* in × out: one input, inputs not a multiple of 4, a partial last panel,
 * and the decoder's sizes */
static const int shapes[][2] = {{1, 5}, {3, 37}, {5, 33}, {16, 64}, {67, 130}, {512, 96},
                                {2048, 40}};

/* y against Σ q_x·q_w (exact, in int64) · s_x·s_w + b, in double: only the
 * float32 rounding of the last step may differ. */
static double worst_error(const float *y, const float *x, const float *w, const float *b,
                          int n, int in, int out, int relu)
{
    int8_t *qx = malloc((size_t)in), *qw = malloc((size_t)in);
    double worst = 0;
    for (int r = 0; r < n; r++) {
        const double sx = int8_quantize_input(qx, x + (long)r * in, in);
        for (int j = 0; j < out; j++) {
            const double sw = int8_quantize_row(qw, w + (long)j * in, in);
            long long dot = 0;
            for (int k = 0; k < in; k++) dot += (long long)qx[k] * qw[k];
            double want = (double)dot * sx * sw + b[j];
            if (relu && want < 0) want = 0;
            const double mag = fabs((double)dot * sx * sw) + fabs(b[j]) + 1e-30;
            const double e = fabs(y[(long)r * out + j] - want) / mag;
            if (e > worst) worst = e;
        }
    }
    free(qx);
    free(qw);
    return worst;
}

/* Every shape and fill with the kernel `name`; y_ref (when not NULL, one
 * buffer per case) holds the portable kernel's outputs, which every other
 * kernel must equal bit for bit. */
static void run_kernel(const char *name, float **y_ref)
{
    CHECK(int8_kernel_select(name, NULL) == TFM_OK);
    Rng rng;
    rng_seed(&rng, 11);
    int cas = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int f = RANDOM; f <= EXTREME; f++, cas++) {
            const int in = shapes[s][0], out = shapes[s][1], n = 13;
            float *w = malloc(sizeof(float) * in * out), *b = malloc(sizeof(float) * out);
            float *x = malloc(sizeof(float) * n * in), *y = malloc(sizeof(float) * n * out);
            fill(w, out, in, (enum Fill)f, -1.0f, &rng);
            fill(b, 1, out, RANDOM, 1.0f, &rng);
            fill(x, n, in, (enum Fill)f, -1.0f, &rng);
            PackedInt8 p;
            CHECK(packed_int8_init(&p, w, NULL, b, in, out, NULL) == TFM_OK);
            const int relu = f == NEGATIVE;
            packed_int8_forward(&p, y, x, n, relu);
            const double e = worst_error(y, x, w, b, n, in, out, relu);
            if (!(e < 1e-6)) test_fail(__FILE__, __LINE__, "kernel %s, %dx%d, fill %d: error %g",
                                       name, in, out, f, e);
            if (y_ref && !y_ref[cas]) {
                y_ref[cas] = y;
                y = NULL;
            } else if (y_ref && memcmp(y, y_ref[cas], sizeof(float) * n * out) != 0) {
                test_fail(__FILE__, __LINE__, "kernel %s, %dx%d, fill %d: not the portable "
                          "kernel's bits", name, in, out, f);
            }
            packed_int8_free(&p);
            free(w), free(b), free(x), free(y);
        }
}

TEST(test_int8_kernels_match_loop_and_each_other)
{
    float *ref[sizeof shapes / sizeof *shapes * (EXTREME + 1)] = {0};
    int ran = 0;
    for (int i = 0; i < N_KERNEL_NAMES; i++) {
        if (!int8_kernel_available(kernel_names[i])) {
            printf("  (int8 kernel %s: this CPU cannot run it, not tested)\n", kernel_names[i]);
            continue;
        }
        run_kernel(kernel_names[i], ref);
        ran++;
    }
    CHECK(ran >= 1);
    CHECK(int8_kernel_available("portable"));
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) free(ref[i]);
    CHECK(int8_kernel_select(NULL, NULL) == TFM_OK);
}

/* The quantized product is close to the float32 one: each output within a
 * few quantization steps of both operands. */
TEST(test_int8_close_to_float)
{
    Rng rng;
    rng_seed(&rng, 5);
    const int in = 256, out = 70, n = 4;
    float *w = malloc(sizeof(float) * in * out), *x = malloc(sizeof(float) * n * in);
    float *y = malloc(sizeof(float) * n * out);
    fill(w, out, in, RANDOM, 1, &rng);
    fill(x, n, in, RANDOM, 1, &rng);
    PackedInt8 p;
    CHECK(packed_int8_init(&p, w, NULL, NULL, in, out, NULL) == TFM_OK);
    packed_int8_forward(&p, y, x, n, 0);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < out; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < in; k++) {
                want += (double)x[r * in + k] * w[j * in + k];
                mag += fabs((double)x[r * in + k] * w[j * in + k]);
            }
            /* |x|, |w| <= 1: steps of 1/127 each, half a step of error */
            CHECK(fabs(y[r * out + j] - want) <= in * (1.0 / 127) * 1.01);
            (void)mag;
        }
    packed_int8_free(&p);
    free(w), free(x), free(y);
}

/* Non-finite and zero input rows; the other rows unaffected. */
TEST(test_int8_special_rows)
{
    const int in = 9, out = 3;
    float w[27], b[3] = {0.5f, -1.0f, 2.0f}, x[3 * 9], y[9];
    for (int i = 0; i < 27; i++) w[i] = (float)((i % 5) - 2);
    for (int i = 0; i < 27; i++) x[i] = (float)(i % 4) - 1.5f;
    memset(x + in, 0, sizeof(float) * in);      /* row 1: zeros */
    x[2 * in + 4] = NAN;                        /* row 2: a NaN */
    PackedInt8 p;
    CHECK(packed_int8_init(&p, w, NULL, b, in, out, NULL) == TFM_OK);
    packed_int8_forward(&p, y, x, 3, 0);
    for (int j = 0; j < out; j++) {
        CHECK(isfinite(y[j]));
        CHECK(y[out + j] == b[j]);
        CHECK(isnan(y[2 * out + j]));
    }
    packed_int8_forward(&p, y, x, 3, 1);
    for (int j = 0; j < out; j++) CHECK(y[2 * out + j] == 0.0f);
    packed_int8_free(&p);
}

/* Row r alone, in a batch of any size, with 1 or 2 threads: the same bits,
 * with each kernel. The sizes are large enough to split over threads. */
TEST(test_int8_batch_and_thread_independent)
{
    Rng rng;
    rng_seed(&rng, 9);
    const int in = 384, out = 1000, n = 37;
    float *w = malloc(sizeof(float) * in * out), *b = malloc(sizeof(float) * out);
    float *x = malloc(sizeof(float) * n * in), *y = malloc(sizeof(float) * n * out);
    float *y1 = malloc(sizeof(float) * out);
    fill(w, out, in, RANDOM, 1, &rng);
    fill(b, 1, out, RANDOM, 1, &rng);
    fill(x, n, in, OUTLIERS, 1, &rng);
    const int threads = omp_get_max_threads();
    for (int i = 0; i < N_KERNEL_NAMES; i++) {
        if (!int8_kernel_available(kernel_names[i])) continue;
        CHECK(int8_kernel_select(kernel_names[i], NULL) == TFM_OK);
        PackedInt8 p;
        CHECK(packed_int8_init(&p, w, NULL, b, in, out, NULL) == TFM_OK);
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            packed_int8_forward(&p, y, x, n, 0);
            for (int r = 0; r < n; r += 6) {
                packed_int8_forward(&p, y1, x + (long)r * in, 1, 0);
                if (memcmp(y1, y + (long)r * out, sizeof(float) * out) != 0)
                    test_fail(__FILE__, __LINE__, "kernel %s, %d threads: row %d differs alone",
                              kernel_names[i], t, r);
            }
        }
        packed_int8_free(&p);
    }
    omp_set_num_threads(threads);
    CHECK(int8_kernel_select(NULL, NULL) == TFM_OK);
    free(w), free(b), free(x), free(y), free(y1);
}

/* PackedLinear's int8 mode is this product. */
TEST(test_int8_through_packed_linear)
{
    float w[6 * 10], b[6], x[2 * 10], y[12], y2[12];
    for (int i = 0; i < 60; i++) w[i] = sinf((float)i);
    for (int i = 0; i < 6; i++) b[i] = 0.1f * i;
    for (int i = 0; i < 20; i++) x[i] = cosf((float)i);
    PackedLinear pl;
    PackedInt8 p8;
    CHECK(packed_linear_init_int8(&pl, w, NULL, b, 10, 6, NULL) == TFM_OK);
    CHECK(packed_int8_init(&p8, w, NULL, b, 10, 6, NULL) == TFM_OK);
    packed_linear_forward(&pl, y, x, 2, 1);
    packed_int8_forward(&p8, y2, x, 2, 1);
    CHECK(memcmp(y, y2, sizeof y) == 0);
    packed_linear_free(&pl);
    packed_int8_free(&p8);
}

TEST(test_int8_kernel_select_errors)
{
    TfmErr err = {0};
    CHECK(int8_kernel_select("sse9", &err) == TFM_ERR_CONFIG);
    CHECK(strstr(err.msg, "sse9") != NULL);
    CHECK(int8_kernel_select("portable", NULL) == TFM_OK);
    CHECK_STR(int8_kernel_name(), "portable C");
    CHECK(int8_kernel_select(NULL, NULL) == TFM_OK);
}

/* Products sharing one buffer of quantized inputs (packed_int8_share_scratch:
 * different input widths, calls of growing and shrinking row counts, in
 * turn, on 1 and 2 threads) give the bits of products with their own; the
 * sharer and the owner free in either order. */
TEST(test_int8_shared_scratch)
{
    Rng rng;
    rng_seed(&rng, 17);
    enum { N = 300 };
    const int ins[3] = {10, 70, 256}, outs[3] = {33, 64, 40};
    PackedInt8 own[3], shared[3];
    float *w[3], *x = malloc(sizeof(float) * N * 256);
    float *y1 = malloc(sizeof(float) * N * 64), *y2 = malloc(sizeof(float) * N * 64);
    fill(x, N, 256, RANDOM, 1.0f, &rng);
    for (int i = 0; i < 3; i++) {
        w[i] = malloc(sizeof(float) * ins[i] * outs[i]);
        fill(w[i], outs[i], ins[i], RANDOM, 1.0f, &rng);
        CHECK(packed_int8_init(&own[i], w[i], NULL, NULL, ins[i], outs[i], NULL) == TFM_OK);
        CHECK(packed_int8_init(&shared[i], w[i], NULL, NULL, ins[i], outs[i], NULL) == TFM_OK);
    }
    packed_int8_share_scratch(&shared[1], &shared[0]);
    packed_int8_share_scratch(&shared[2], &shared[0]);
    CHECK(shared[1].scratch == shared[0].scratch && shared[2].scratch == shared[0].scratch);
    const int saved = omp_get_max_threads();
    const int rows[] = {1, N, 7, 200, 3, N, 64};
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t c = 0; c < sizeof rows / sizeof *rows; c++)
            for (int i = 0; i < 3; i++) {
                const int n = rows[c] * (i + 1) % N + 1;
                packed_int8_forward(&own[i], y1, x, n, 0);
                packed_int8_forward(&shared[i], y2, x, n, 0);
                CHECK(memcmp(y1, y2, sizeof(float) * n * outs[i]) == 0);
            }
    }
    omp_set_num_threads(saved);
    packed_int8_free(&shared[0]);       /* the owner first: the others only point at it */
    packed_int8_free(&shared[1]);
    packed_int8_free(&shared[2]);
    for (int i = 0; i < 3; i++) {
        packed_int8_free(&own[i]);
        free(w[i]);
    }
    free(x), free(y1), free(y2);
}
