/* train: the training loop of `tfm train` — vocabulary, data, model, Adam,
 * validation, checkpoints (last, best, numbered), exact resume, limits,
 * early stopping, signals. Shows progress through progress.c. */
#ifndef TFM_TRAIN_H
#define TFM_TRAIN_H

#include <stdbool.h>
#include "config.h"
#include "err.h"

typedef struct {
    bool restart;           /* ignore out_dir/last.tfm */
    bool quiet;             /* no progress on stderr */
    const char *config_path;    /* for error messages about the config's keys */
} TrainOptions;

/* Installs SIGINT/SIGTERM/SIGHUP handlers that ask the loop to stop after
 * the current step (the handler sets a flag; with announce it also says so
 * on stderr at once). Before the first step a signal exits at once (nothing
 * to save); a second SIGINT exits at once too. SIGPIPE is ignored. */
void train_install_signal_handlers(bool announce);

/* Trains per cfg (threads already set). On success the model path
 * (cfg->train.model) holds the best model. Returns TFM_INTERRUPTED with
 * err->signo after a signal, once last.tfm is saved; TFM_ERR_NUMERIC when a
 * loss or gradient is NaN/Inf (naming the step; last.tfm, if there is one,
 * keeps the last good state). */
TfmStatus train_run(const TfmConfig *cfg, const TrainOptions *opt, TfmErr *err);

#endif
