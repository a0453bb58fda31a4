/* fma_peak: the float32 multiply-add ceiling of this CPU, which no product can
 * pass: every thread runs independent chains of vector FMAs on registers
 * (no memory traffic), timed together. bench_train.sh reports it beside the
 * sgemm peak, so a speed target can be checked against what the hardware
 * allows at all.
 *   cc -O2 -march=native -fopenmp fma_peak.c && OMP_NUM_THREADS=2 ./a.out */
#include <omp.h>
#include <stdio.h>
#include <time.h>

/* One register of the widest vector unit -march=native allows, and enough
 * independent chains to hide the FMA latency (4 cycles x 2 pipes) while
 * fitting in the registers with the two operands (32 zmm, 16 ymm/xmm). */
#if defined(__AVX512F__)
enum { LANES = 16, CHAINS = 16 };
#elif defined(__AVX__)
enum { LANES = 8, CHAINS = 12 };
#else
enum { LANES = 4, CHAINS = 12 };
#endif
typedef float vec __attribute__((vector_size(LANES * 4)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* n rounds of CHAINS FMAs; returns a sum so the work cannot be dropped. */
static float chains(long n)
{
    vec acc[CHAINS];
    const vec x = {0}, y = {0};
    for (int j = 0; j < CHAINS; j++) acc[j] = (vec){0} + (float)j;
    vec mul = x + 0.999999f, add = y + 1e-7f;
    for (long i = 0; i < n; i++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; j++) acc[j] = acc[j] * mul + add;
        /* keeps the compiler from hoisting or folding the loop */
        __asm__ volatile("" : "+x"(mul));
    }
    float s = 0;
    for (int j = 0; j < CHAINS; j++)
        for (int k = 0; k < LANES; k++) s += acc[j][k];
    return s;
}

int main(void)
{
    const long n = 100000000;
    double best = 1e30;
    float sink = 0;
    int threads = 1;
    for (int r = 0; r < 4; r++) {           /* the first run warms up */
        double t0 = now();
#pragma omp parallel reduction(+ : sink)
        {
            sink += chains(n);
#pragma omp single
            threads = omp_get_num_threads();
        }
        double dt = now() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    double flops = 2.0 * LANES * CHAINS * (double)n * threads;
    printf("{\"threads\": %d, \"gflops\": %.1f, \"check\": %g}\n", threads, flops / best / 1e9,
           (double)sink);
    return 0;
}
