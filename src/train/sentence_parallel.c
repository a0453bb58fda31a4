/* sentence_parallel: train.parallel "sentences". Each of the process's
 * threads runs the whole model, forward and backward, on its share of the
 * step's sentences with one-thread products, and the gradients are summed:
 * what `mpirun -np T` does with T one-thread ranks, in one process. Threads
 * splitting every product (the default) meet at a barrier after each of the
 * step's hundreds of small products, softmaxes and norms; here they meet
 * once a step (BENCHMARKS.md measures the difference).
 *
 * The shares and the dropout streams are those of T ranks (batch_share,
 * rng_fork with the share's index), so a run equals, bit for bit, an
 * `mpirun -np T` run with one thread a rank on the same batches
 * (tests/cli_mpi.sh). */
#include "train/trainer.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* One thread's step: its dropout stream, and what its passes returned. */
struct PartRun {
    Rng rng;
    LossStats ls;
    TfmStatus st;
    TfmErr err;
};

/* The threads a step is shared among: 1 unless "sentences". */
static int part_count(const TfmConfig *cfg)
{
    return cfg->train.parallel == PARALLEL_SENTENCES ? omp_get_max_threads() : 1;
}

/* A share holds at most ceil(n / T) of a batch's n sentences, whose padded
 * rows hold at most batch_tokens tokens: a replica's workspace size (twice
 * that with train.rdrop). */
static int part_tokens(const TfmConfig *cfg, int parts)
{
    return trainer_work_tokens(cfg, cfg->train.batch_tokens / parts +
                                         config_row_len(cfg->data.max_len));
}

double parts_extra_bytes(const TfmConfig *cfg, const ModelConfig *mc)
{
    const int T = part_count(cfg);
    if (T < 2) return 0;
    const double grads = (double)model_param_count(mc) * sizeof(float);
    return (T - 1) * (grads + model_work_bytes(mc, part_tokens(cfg, T),
                                               config_row_len(cfg->data.max_len)));
}

TfmStatus parts_init(Trainer *t, TfmErr *err)
{
    t->n_parts = 1;
    const int threads = part_count(t->cfg);
    if (threads < 2) return TFM_OK;
    t->replicas = xcalloc((size_t)threads - 1, sizeof *t->replicas, err);
    t->part_runs = xcalloc((size_t)threads, sizeof *t->part_runs, err);
    if (!t->replicas || !t->part_runs) return TFM_ERR_NOMEM;
    /* the kernels' own parallel regions run inside the threads' region:
     * one thread each, whatever OMP_NESTED or OMP_MAX_ACTIVE_LEVELS say */
    omp_set_max_active_levels(1);
    const int max_len = config_row_len(t->cfg->data.max_len);
    const int tokens = part_tokens(t->cfg, threads);
    for (int k = 1; k < threads; k++) {
        TfmStatus st = model_init_replica(&t->replicas[k - 1], &t->model, tokens, max_len, err);
        if (st != TFM_OK) return st;
        t->n_parts = k + 1;
    }
    return TFM_OK;
}

void parts_free(Trainer *t)
{
    for (int k = 1; k < t->n_parts; k++) model_free(&t->replicas[k - 1]);
    free(t->replicas);
    free(t->part_runs);
    t->replicas = NULL;
    t->part_runs = NULL;
    t->n_parts = 1;
}

/* Thread k's model. */
static Model *part_model(Trainer *t, int k) { return k == 0 ? &t->model : &t->replicas[k - 1]; }

TfmStatus parts_forward_backward(Trainer *t, const Batch *b, Rng *rng, const StepSettings *s,
                                 LossStats *ls, TfmErr *err)
{
    const int T = t->n_parts;
    struct PartRun *run = t->part_runs;
    for (int k = 0; k < T; k++) {
        /* the stream rank k of a T-rank job would fork from rng's state */
        Rng base = *rng;
        rng_fork(&base, (uint64_t)k, &run[k].rng);
        run[k].ls = (LossStats){0};
        run[k].st = TFM_OK;
    }
    (void)rng_u64(rng);
    /* counted once here rather than by every share */
    Batch whole = *b;
    if (whole.loss_tokens == 0) whole.loss_tokens = batch_targets(b);
#pragma omp parallel num_threads(T)
    {
        /* inside this region every product and kernel runs on one thread;
         * a smaller team than asked for (OMP_DYNAMIC, OMP_THREAD_LIMIT)
         * still runs every share, some threads two, with the same results */
        for (int k = omp_get_thread_num(); k < T; k += omp_get_num_threads()) {
            Model *m = part_model(t, k);
            Batch mine;
            batch_share(&whole, k, T, &mine);
            if (mine.n == 0) {
                memset(m->grads, 0, m->n_params * sizeof *m->grads);
            } else {
                run[k].st = model_forward_step(m, &mine, s, &run[k].rng, &run[k].ls,
                                          &run[k].err);
                if (run[k].st == TFM_OK) model_backward(m);
            }
        }
    }
    for (int k = 0; k < T; k++)
        if (run[k].st != TFM_OK) {
            *err = run[k].err;
            return run[k].st;
        }
    /* the sums in thread order, as the ranks' would be */
    float *g = t->model.grads;
    const size_t n = t->model.n_params;
    for (int k = 1; k < T; k++) {
        const float *gk = t->replicas[k - 1].grads;
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) g[i] += gk[i];
    }
    *ls = (LossStats){0};
    for (int k = 0; k < T; k++) {
        ls->loss += run[k].ls.loss;
        ls->nll += run[k].ls.nll;
        ls->n_tokens += run[k].ls.n_tokens;
        ls->n_correct += run[k].ls.n_correct;
    }
    return TFM_OK;
}
