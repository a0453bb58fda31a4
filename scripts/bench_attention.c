/* bench_attention: softmax against linear attention (model.attention) as
 * the length grows, on synthetic data, everything else equal.
 *
 *   bench_attention train softmax|linear LEN [THREADS]
 *       one training step (forward + backward) over a batch of about 4096
 *       tokens a side in sentences of LEN tokens: best of 3 after a warm-up,
 *       the model's workspace and the process's peak RSS
 *   bench_attention decode softmax|linear LEN [THREADS]
 *       greedy decoding of one sentence for LEN steps (the output forced to
 *       random tokens so it never ends): milliseconds per token at 64, 128,
 *       256, 512 and 1024 steps (each figure the mean over the 32 steps up to it)
 *
 * Model: d_model 128, 4 heads, 2+2 layers, d_ff 256, vocabulary 8000, post-norm.
 * Run by scripts/bench_attention.sh, one process per line so that each
 * peak RSS is its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <omp.h>

#include "decode/decoder.h"
#include "model/model.h"
#include "nn/blas.h"

static long peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int fail(const TfmErr *err)
{
    fprintf(stderr, "bench_attention: %s\n", err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    /* the OpenBLAS kernel tfm itself would run (see blas_select_kernel) */
    if (blas_select_kernel()) {
        execv("/proc/self/exe", argv);
        blas_reexec_failed();
    }
    if (argc < 4 || (strcmp(argv[1], "train") && strcmp(argv[1], "decode")) ||
        (strcmp(argv[2], "softmax") && strcmp(argv[2], "linear"))) {
        fprintf(stderr, "usage: bench_attention train|decode softmax|linear LEN [THREADS]\n");
        return 2;
    }
    const int train = strcmp(argv[1], "train") == 0, len = atoi(argv[3]);
    const int threads = argc > 4 ? atoi(argv[4]) : 2;
    if (len < 8 || len > 8192) {
        fprintf(stderr, "bench_attention: LEN must be in 8..8192\n");
        return 2;
    }
    blas_set_threads(threads);
    ModelConfig cfg = {.d_model = 128, .heads = 4, .enc_layers = 2, .dec_layers = 2,
                       .d_ff = 256, .norm = NORM_POST, .share_embeddings = true,
                       .vocab_size = 8000, .max_len = len + 2,
                       .attention = strcmp(argv[2], "linear") == 0 ? ATTN_LINEAR : ATTN_SOFTMAX};
    Model m;
    TfmErr err = {0};
    Rng rng;
    rng_seed(&rng, 1);
    if (model_init(&m, &cfg, &err) != TFM_OK) return fail(&err);
    model_init_weights(&m, &rng);
    const int V = cfg.vocab_size, L = len + 1;  /* tokens + </s> (or <s>) */
    if (train) {
        const int n = 4096 / L > 0 ? 4096 / L : 1;
        if (model_alloc_training(&m, n * L, L, &err) != TFM_OK) return fail(&err);
        int *src = malloc(sizeof(int) * (size_t)n * L), *tin = malloc(sizeof(int) * (size_t)n * L);
        int *tout = malloc(sizeof(int) * (size_t)n * L);
        for (int b = 0; b < n; b++)
            for (int i = 0; i < L; i++) {
                src[b * L + i] = i < len ? 4 + (int)rng_below(&rng, (uint64_t)V - 4) : TOK_EOS;
                tout[b * L + i] = i < len ? 4 + (int)rng_below(&rng, (uint64_t)V - 4) : TOK_EOS;
                tin[b * L + i] = i == 0 ? TOK_BOS : tout[b * L + i - 1];
            }
        Batch bt = {.n = n, .src_len = L, .tgt_len = L, .src = src, .tgt_in = tin, .tgt_out = tout};
        LossStats st;
        double best = 1e30;
        for (int r = -1; r < 3; r++) {
            double t0 = omp_get_wtime();
            if (model_forward(&m, &bt, 0.0f, NULL, &st, &err) != TFM_OK) return fail(&err);
            model_backward(&m, &bt);
            double t = omp_get_wtime() - t0;
            if (r >= 0 && t < best) best = t;
        }
        printf("train %s len %d sentences %d tokens/side %d step_s %.4f workspace_mb %.1f "
               "peak_rss_mb %.1f threads %d kernel %s\n",
               argv[2], len, n, n * L, best, model_work_bytes(&cfg, n * L, L) / 1048576.0,
               peak_rss_kb() / 1024.0, threads, blas_kernel_name());
        free(src);
        free(tin);
        free(tout);
    } else {
        Decoder *d;
        if (decoder_init(&d, &m, 1, 1, &err) != TFM_OK) return fail(&err);
        int src[33];
        for (int i = 0; i < 32; i++) src[i] = 4 + (int)rng_below(&rng, (uint64_t)V - 4);
        src[32] = TOK_EOS;
        if (decoder_begin(d, src, 1, 33, 1, &err) != TFM_OK) return fail(&err);
        const int marks[] = {64, 128, 256, 512, 1024, 2048, 4096};
        double window = 0;
        int prev = TOK_BOS;
        printf("decode %s threads %d", argv[2], threads);
        for (int t = 0; t < len; t++) {
            double t0 = omp_get_wtime();
            decoder_step(d, &prev, NULL, t);
            double dt = omp_get_wtime() - t0;
            prev = 4 + (int)rng_below(&rng, (uint64_t)V - 4);
            window += dt;
            if ((t + 1) % 32 > 0) continue;
            for (size_t k = 0; k < sizeof marks / sizeof *marks; k++)
                if (t + 1 == marks[k]) printf(" ms_per_token@%d %.4f", marks[k], window / 32 * 1e3);
            window = 0;
        }
        printf(" peak_rss_mb %.1f\n", peak_rss_kb() / 1024.0);
        decoder_free(d);
    }
    model_free(&m);
    return 0;
}
