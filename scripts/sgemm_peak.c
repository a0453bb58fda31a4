/* sgemm_peak: the sgemm throughput of this machine's OpenBLAS, the yardstick
 * for tfm's training speed. Times C = A·B for n x n matrices (best of reps).
 *   cc -O2 sgemm_peak.c -lopenblas && OPENBLAS_NUM_THREADS=2 ./a.out 2048 5 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n <= 0 || reps <= 0) return 2;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    if (!a || !b || !c) return 1;
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {       /* the first run warms up */
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n,
                    0.0f, c, n);
        double dt = now() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    printf("{\"n\": %d, \"kernel\": \"%s\", \"threads\": %d, \"gflops\": %.1f}\n", n,
           openblas_get_corename(), openblas_get_num_threads(), 2.0 * n * n * (double)n / best / 1e9);
    free(a);
    free(b);
    free(c);
    return 0;
}
