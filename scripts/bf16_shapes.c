/* bf16_shapes: oneDNN's bf16 matmul with the shape fixed at creation (its
 * brgemm kernels: "brg:avx512_core_amx_bf16" on AMX, "brg:avx512_core_bf16"
 * on AVX512-BF16) against the same product through a run-time-shape
 * primitive ("gemm:jit"), the two ways src/nn/gemm_bf16.c can run a
 * product. Alternates the two R times for 0.25 s each and prints a Markdown
 * row: each kernel's median GFLOP/s, the median fixed/run-time ratio (min-max)
 * and the fixed primitive's creation time.
 *   cc -O2 -fopenmp bf16_shapes.c -ldnnl && OMP_NUM_THREADS=2 ./a.out M N K TA TB
 * (C (M, N) = A·B; TA: A stored transposed (K, M); TB: B stored (N, K)). */
#include <dnnl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static void check(dnnl_status_t s, const char *what)
{
    if (s != dnnl_success) {
        fprintf(stderr, "bf16_shapes: %s failed (%d)\n", what, (int)s);
        exit(1);
    }
}

static void dense(dnnl_memory_desc_t *d, dnnl_data_type_t t, long r, long c, int trans)
{
    check(dnnl_memory_desc_init_by_tag(d, 2, (dnnl_dims_t){r, c}, t, trans ? dnnl_ba : dnnl_ab),
          "memory_desc_init_by_tag");
}

static dnnl_primitive_t make(long m, long n, long k, int ta, int tb, const char **impl)
{
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    dense(&a, dnnl_bf16, m, k, ta);
    dense(&b, dnnl_bf16, k, n, tb);
    dense(&c, dnnl_f32, m, n, 0);
    check(dnnl_matmul_desc_init(&md, &a, &b, NULL, &c), "matmul_desc_init");
    check(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL), "primitive_desc_create");
    check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl), "query");
    check(dnnl_primitive_create(&p, pd), "primitive_create");
    dnnl_primitive_desc_destroy(pd);
    return p;
}

static double gflops(dnnl_primitive_t p, dnnl_exec_arg_t *args, double secs, double flop)
{
    long reps = 0;
    const double t0 = omp_get_wtime();
    while (omp_get_wtime() - t0 < secs) {
        check(dnnl_primitive_execute(p, strm, 3, args), "execute");
        check(dnnl_stream_wait(strm), "stream_wait");
        reps++;
    }
    return flop * (double)reps / (omp_get_wtime() - t0) / 1e9;
}

static int by_value(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bf16_shapes M N K TA TB\n");
        return 2;
    }
    const long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
    const int ta = atoi(argv[4]), tb = atoi(argv[5]);
    check(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine_create");
    check(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags), "stream_create");
    uint16_t *A = malloc((size_t)(m * k) * 2), *B = malloc((size_t)(k * n) * 2);
    float *C = malloc((size_t)(m * n) * sizeof *C);
    if (!A || !B || !C) return 1;
    for (long i = 0; i < m * k; i++) A[i] = (uint16_t)(0x3f80 + i % 7);   /* 1.0, 1.0078, ... */
    for (long i = 0; i < k * n; i++) B[i] = (uint16_t)(0x3f00 + i % 5);   /* 0.5, ... */
    const char *fixed_name, *any_name;
    const double t0 = omp_get_wtime();
    dnnl_primitive_t fixed = make(m, n, k, ta, tb, &fixed_name);
    const double create_ms = (omp_get_wtime() - t0) * 1e3;
    const long any = DNNL_RUNTIME_DIM_VAL;
    dnnl_primitive_t runtime = make(any, any, any, ta, tb, &any_name);
    dnnl_memory_desc_t da, db, dc;
    dnnl_memory_t ma, mb, mc;
    dense(&da, dnnl_bf16, m, k, ta);
    dense(&db, dnnl_bf16, k, n, tb);
    dense(&dc, dnnl_f32, m, n, 0);
    check(dnnl_memory_create(&ma, &da, eng, A), "memory_create");
    check(dnnl_memory_create(&mb, &db, eng, B), "memory_create");
    check(dnnl_memory_create(&mc, &dc, eng, C), "memory_create");
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    gflops(fixed, args, 0.2, flop);     /* warm-up */
    gflops(runtime, args, 0.2, flop);
    enum { R = 7 };
    double f[R], r[R], ratio[R];
    for (int i = 0; i < R; i++) {
        f[i] = gflops(fixed, args, 0.25, flop);
        r[i] = gflops(runtime, args, 0.25, flop);
        ratio[i] = f[i] / r[i];
    }
    qsort(f, R, sizeof *f, by_value);
    qsort(r, R, sizeof *r, by_value);
    qsort(ratio, R, sizeof *ratio, by_value);
    printf("| %ldx%ldx%ld%s%s | %s %.0f | %s %.0f | %.2f (%.2f-%.2f) | %.1f ms |\n", m, n, k,
           ta ? " Aᵀ" : "", tb ? " Bᵀ" : "", fixed_name, f[R / 2], any_name, r[R / 2],
           ratio[R / 2], ratio[0], ratio[R - 1], create_ms);
    return 0;
}
