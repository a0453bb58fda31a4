/* bf16_peak: the bf16 matmul throughput of oneDNN on this machine (bf16
 * inputs, float32 output), the yardstick for tfm's bf16 training speed, as
 * sgemm_peak.c is for float32. Times C = A·B for n x n matrices, fixed
 * shape (oneDNN's best kernel for it), best of reps. Prints one JSON line
 * with the implementation oneDNN chose.
 *   cc -O2 bf16_peak.c -ldnnl && OMP_NUM_THREADS=2 ./a.out 2048 5 */
#include <dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define TRY(x)                                                   \
    do {                                                         \
        if ((x) != dnnl_success) {                               \
            fprintf(stderr, "bf16_peak: %s failed\n", #x);       \
            return 1;                                            \
        }                                                        \
    } while (0)

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2048;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n <= 0 || reps <= 0) return 2;
    uint16_t *a = malloc(sizeof *a * n * n), *b = malloc(sizeof *b * n * n);
    float *c = malloc(sizeof *c * n * n);
    if (!a || !b || !c) return 1;
    for (long i = 0; i < n * n; i++) {
        a[i] = 0x3dcd;          /* about 0.1 */
        b[i] = 0x3e4d;          /* about 0.2 */
    }
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    TRY(dnnl_engine_create(&eng, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags));
    dnnl_memory_desc_t da, db, dc;
    const dnnl_dims_t dims = {n, n};
    TRY(dnnl_memory_desc_init_by_tag(&da, 2, dims, dnnl_bf16, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_tag(&db, 2, dims, dnnl_bf16, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_tag(&dc, 2, dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    TRY(dnnl_matmul_desc_init(&md, &da, &db, NULL, &dc));
    dnnl_primitive_desc_t pd;
    TRY(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL));
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    dnnl_primitive_t p;
    TRY(dnnl_primitive_create(&p, pd));
    dnnl_memory_t ma, mb, mc;
    TRY(dnnl_memory_create(&ma, &da, eng, a));
    TRY(dnnl_memory_create(&mb, &db, eng, b));
    TRY(dnnl_memory_create(&mc, &dc, eng, c));
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {       /* the first run warms up */
        double t0 = now();
        TRY(dnnl_primitive_execute(p, stream, 3, args));
        TRY(dnnl_stream_wait(stream));
        double t = now() - t0;
        if (r > 0 && t < best) best = t;
    }
    printf("{\"n\": %ld, \"impl\": \"%s\", \"isa\": \"0x%x\", \"gflops\": %.1f}\n", n, impl,
           (unsigned)dnnl_get_effective_cpu_isa(), 2.0 * n * n * n / best / 1e9);
    return 0;
}
