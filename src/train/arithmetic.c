/* arithmetic: how a training run computes, chosen before it starts: the
 * threads (train.threads, shared by the ranks of an mpirun job on one
 * machine), the sgemm check, train.precision and train.parallel "auto"
 * resolved (train_set_up_arithmetic, train.h). */
#include "train/train.h"

#include <stdio.h>
#include <unistd.h>

#include "dist/dist.h"
#include "nn/blas.h"
#include "nn/gemm_bf16.h"

/* train.threads 0 means all cores: in an mpirun job, the ranks on this
 * machine share them. */
static int threads_per_rank(int threads)
{
    if (threads > 0 || dist_local_size() == 1) return threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long each = cores / dist_local_size();
    return each > 1 ? (int)each : 1;
}

/* train.precision "auto": bf16 where its products run faster than float32
 * here (not on every CPU with a bf16 unit: on a Xeon with AVX512-BF16 but
 * no AMX they ran slower), timed on the model's two largest products: the
 * feed-forward layer's and the output layer's, for half a batch of rows.
 * The run then records what it chose. */
static Precision pick_precision(const TfmConfig *cfg, bool quiet)
{
    const int rows = cfg->train.batch_tokens / 2 > 0 ? cfg->train.batch_tokens / 2 : 1;
    const int d = cfg->model.d_model, ff = cfg->model.d_ff, v = cfg->data.vocab_size;
    bf16_allow_fixed_shapes(true);      /* timed on the kernels training runs */
    double r_ff = blas_bf16_speedup(rows, ff, d), r_out = blas_bf16_speedup(rows, v, d);
    bf16_allow_fixed_shapes(false);     /* train_run allows them for its run */
    double f_ff = (double)ff, f_out = (double)v;    /* their flops, over rows·d */
    double r = r_ff > 0 && r_out > 0 ? (f_ff + f_out) / (f_ff / r_ff + f_out / r_out) : 0;
    Precision p = r > 1.05 ? PRECISION_BF16 : PRECISION_FP32;
    if (!quiet) {
        if (r > 0)
            fprintf(stderr, "train.precision auto: %s (bf16 products ran %.2fx float32's speed "
                    "here)\n", p == PRECISION_BF16 ? "bf16" : "fp32", r);
        else
            fprintf(stderr, "train.precision auto: fp32 (no bf16 unit: %s)\n", bf16_isa_name());
    }
    return p;
}

TfmStatus train_set_up_arithmetic(TfmConfig *cfg, bool quiet, TfmErr *err)
{
    const int threads = blas_set_threads(threads_per_rank(cfg->train.threads));
    TfmStatus st = blas_selftest(err);
    TrainConfig *tc = &cfg->train;
    if (st == TFM_OK && tc->precision == PRECISION_AUTO) {
        if (tc->parallel == PARALLEL_SENTENCES) {
            tc->precision = PRECISION_FP32;
            if (!quiet)
                fprintf(stderr, "train.precision auto: fp32 (train.parallel \"sentences\" "
                        "runs float32 products)\n");
        } else {
            tc->precision = pick_precision(cfg, quiet);
        }
    }
    /* "sentences" pays where the threads share float32 products; oneDNN's
     * bf16 products are threaded by oneDNN, one product at a time */
    if (tc->parallel == PARALLEL_AUTO)
        tc->parallel = tc->precision == PRECISION_FP32 && threads > 1 ? PARALLEL_SENTENCES
                                                                       : PARALLEL_PRODUCTS;
    if (st == TFM_OK && cfg->train.precision == PRECISION_BF16)
        st = blas_use_bf16("train.precision", err);
    return st;
}
