/* test_blas: blas_gemm_parallel against a plain loop, for the row splits that
 * thread counts 1-3 give (3 threads on 2 cores still splits), transposed
 * operands, beta 0 and 1, and calls from inside a parallel region. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "nn/blas.h"
#include "base/rng.h"
#include "test.h"

/* C (m,n) = alpha·op(A)·op(B) + beta·C in double, row-major. */
static void gemm_ref(const GemmArgs *g, const float *c0, double *out)
{
    for (int i = 0; i < g->m; i++)
        for (int j = 0; j < g->n; j++) {
            double s = 0;
            for (int p = 0; p < g->k; p++) {
                float a = g->trans_a ? g->a[(long)p * g->lda + i] : g->a[(long)i * g->lda + p];
                float b = g->trans_b ? g->b[(long)j * g->ldb + p] : g->b[(long)p * g->ldb + j];
                s += (double)a * b;
            }
            out[i * g->n + j] = g->alpha * s + g->beta * c0[(long)i * g->ldc + j];
        }
}

static float *random_floats(long n, Rng *rng)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (long i = 0; i < n; i++) x[i] = rng_uniform(rng) * 2.0f - 1.0f;
    return x;
}

enum { PRODUCTS = 3 };

/* Three products shaped like training's: a tall one (tokens × d), a weight
 * gradient (A transposed, k = tokens) and a short wide one. */
static void check_parallel(int threads, bool nested)
{
    const int shape[PRODUCTS][5] = {   /* m, n, k, trans_a, trans_b */
        {301, 24, 17, 0, 1}, {24, 17, 301, 1, 0}, {70, 150, 9, 0, 0}};
    const float alpha[PRODUCTS] = {1.0f, 0.5f, -2.0f}, beta[PRODUCTS] = {0.0f, 1.0f, 1.0f};
    Rng rng;
    rng_seed(&rng, 7);
    GemmArgs g[PRODUCTS];
    float *c0[PRODUCTS];
    for (int i = 0; i < PRODUCTS; i++) {
        const int m = shape[i][0], n = shape[i][1], k = shape[i][2];
        const int ta = shape[i][3], tb = shape[i][4];
        const int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
        g[i] = (GemmArgs){ta, tb, m, n, k, alpha[i],
                          random_floats((long)lda * (ta ? k : m), &rng), lda,
                          random_floats((long)ldb * (tb ? n : k), &rng), ldb,
                          beta[i], random_floats((long)ldc * m, &rng), ldc};
        c0[i] = malloc((size_t)ldc * m * sizeof(float));
        memcpy(c0[i], g[i].c, (size_t)ldc * m * sizeof(float));
    }
    blas_set_threads(threads);
    if (nested) {
#pragma omp parallel num_threads(2)
#pragma omp single
        blas_gemm_parallel(g, PRODUCTS);
    } else {
        blas_gemm_parallel(g, PRODUCTS);
    }
    blas_set_threads(1);
    for (int i = 0; i < PRODUCTS; i++) {
        double *ref = malloc((size_t)g[i].m * g[i].n * sizeof *ref);
        gemm_ref(&g[i], c0[i], ref);
        int bad = 0;
        for (int r = 0; r < g[i].m; r++)
            for (int j = 0; j < g[i].n; j++) {
                double want = ref[r * g[i].n + j], got = g[i].c[(long)r * g[i].ldc + j];
                bad += !(fabs(got - want) <= 1e-4 * (1 + fabs(want)));
            }
        /* the padding columns past n are never written */
        for (int r = 0; r < g[i].m; r++)
            for (int j = g[i].n; j < g[i].ldc; j++)
                bad += g[i].c[(long)r * g[i].ldc + j] != c0[i][(long)r * g[i].ldc + j];
        if (bad) test_fail(__FILE__, __LINE__, "product %d, %d threads%s: %d wrong values",
                           i, threads, nested ? " (nested)" : "", bad);
        free(ref);
        free((void *)g[i].a);
        free((void *)g[i].b);
        free(g[i].c);
        free(c0[i]);
    }
}

TEST(blas_gemm_parallel_matches_loop)
{
    for (int threads = 1; threads <= 3; threads++) check_parallel(threads, false);
    check_parallel(2, true);
}
