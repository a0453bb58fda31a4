/* train: the training loop of `tfm train` — vocabulary, data, model, Adam,
 * validation, checkpoints (last, best, numbered), exact resume, limits,
 * early stopping, signals. Shows progress through progress.c. */
#ifndef TFM_TRAIN_H
#define TFM_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include "model/config.h"
#include "base/err.h"

/* How the caller asks a run to stop, from a signal handler (cli/main.c):
 * it sets signo; the run stops after the current step, saves last.tfm and
 * returns TFM_INTERRUPTED. The run sets started once its loop has begun
 * (before that a stop has nothing to save, so the handler need not wait). */
typedef struct {
    volatile sig_atomic_t signo;    /* 0: go on */
    volatile sig_atomic_t started;
} TrainStop;

typedef struct {
    bool restart;           /* ignore out_dir/last.tfm */
    bool quiet;             /* no progress on stderr */
    const char *config_path;    /* for error messages about the config's keys */
    TrainStop *stop;        /* NULL: only the config's limits stop the run */
    /* called after each step with its number (1-based); NULL: none */
    void (*after_step)(long step, void *ctx);
    void *after_step_ctx;
} TrainOptions;

/* train.init: gives cfg the architecture of the model it names (a key the
 * config sets otherwise is an error naming it and both values); nothing to
 * do without train.init. Before --dry-run and the run. Errors start
 * "train.init: " or name the key. */
TfmStatus train_adopt_init(TfmConfig *cfg, TfmErr *err);

/* The threads (train.threads; 0: all cores, shared by the ranks of an
 * mpirun job on one machine), the sgemm check, and train.precision and
 * train.parallel "auto" resolved in cfg (so the run records its choice),
 * saying what "auto" chose on stderr unless quiet. train_run calls it. */
TfmStatus train_set_up_arithmetic(TfmConfig *cfg, bool quiet, TfmErr *err);

/* Trains per cfg, after train_set_up_arithmetic (cfg's "auto" keys are
 * resolved in place). On success the model path
 * (cfg->train.model) holds the best model. Returns TFM_INTERRUPTED with
 * err->signo after a signal, once last.tfm is saved; TFM_ERR_NUMERIC when a
 * loss or gradient is NaN/Inf (naming the step; last.tfm, if there is one,
 * keeps the last good state). */
TfmStatus train_run(TfmConfig *cfg, const TrainOptions *opt, TfmErr *err);

#endif
