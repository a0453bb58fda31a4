/* bench_packed_linear: the decoder-step product y = x·wᵀ, tfm's packed-weight
 * kernel (src/nn/packed_linear.c) against cblas_sgemm, at the row counts of
 * decoding (1, 4, 64, 256), the encoder over a batch (2048), and the small and base model shapes. Eight
 * distinct weight matrices take turns, so caches behave as in a decoder
 * step that goes through many matrices.
 *
 * build and run (after `make`):  make bench-kernel [THREADS=1]  */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nn/blas.h"
#include "nn/packed_linear.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    blas_set_threads(threads);
    printf("threads %d, OpenBLAS kernel %s, packed kernel %s\n", threads, blas_kernel_name(),
           packed_linear_isa());
    static const int shapes[][2] = {{128, 384}, {128, 128}, {128, 512}, {512, 128}, {128, 8000},
                                    {512, 1536}, {512, 2048}, {2048, 512}, {512, 8000}};
    static const int rows[] = {1, 4, 64, 256, 2048};
    enum { COPIES = 8 };
    printf("| in | out | rows | sgemm µs | packed µs | sgemm GFLOP/s | packed GFLOP/s | speed-up |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int in = shapes[s][0], out = shapes[s][1];
        float *w[COPIES];
        PackedLinear p[COPIES];
        float *b = calloc((size_t)out, sizeof(float));
        for (int c = 0; c < COPIES; c++) {
            w[c] = malloc(sizeof(float) * in * out);
            for (long i = 0; i < (long)in * out; i++) w[c][i] = (float)(rand() % 1000) / 1000 - 0.5f;
            if (packed_linear_init(&p[c], w[c], NULL, b, in, out, NULL) != TFM_OK) return 1;
        }
        float *x = malloc(sizeof(float) * 2048 * in), *y = malloc(sizeof(float) * 2048 * out);
        for (long i = 0; i < 2048L * in; i++) x[i] = (float)(rand() % 1000) / 1000;
        for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++) {
            const int n = rows[ri];
            const double flops = 2.0 * n * in * out;
            int reps = (int)(4e8 / flops) + 16;
            if (reps > 20000) reps = 20000;
            double t0 = now();
            for (int i = 0; i < reps; i++)
                blas_gemm(0, 1, n, out, in, 1.0f, x, in, w[i % COPIES], in, 0.0f, y, out);
            const double tg = (now() - t0) / reps;
            t0 = now();
            for (int i = 0; i < reps; i++) packed_linear_forward(&p[i % COPIES], y, x, n, 0);
            const double tp = (now() - t0) / reps;
            printf("| %d | %d | %d | %.1f | %.1f | %.0f | %.0f | %.1fx |\n", in, out, n, tg * 1e6,
                   tp * 1e6, flops / tg * 1e-9, flops / tp * 1e-9, tg / tp);
        }
        for (int c = 0; c < COPIES; c++) {
            packed_linear_free(&p[c]);
            free(w[c]);
        }
        free(b), free(x), free(y);
    }
    return 0;
}
