/* ckpt: the model file format (docs/model-format.md). A file is
 * self-contained: config JSON, vocabulary, named parameter tensors and, for
 * training checkpoints, the Adam moments and the trainer's position and
 * random state. Writes are atomic (temp file, fsync, rename); reads verify
 * magic, version, sizes and a checksum before trusting anything. */
#ifndef TFM_CKPT_H
#define TFM_CKPT_H

#include <stdbool.h>
#include <stdint.h>
#include "text/bpe.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/optim.h"
#include "base/rng.h"

/* Where training stands; saved in checkpoints so a resumed run continues
 * exactly where the interrupted one would have. */
typedef struct {
    long step;              /* optimizer updates done */
    long epoch;             /* current epoch, 0-based */
    long batch_in_epoch;    /* next batch of that epoch */
    Rng dropout_rng;
    double best_metric;     /* lower is better (valid loss or -BLEU) */
    bool has_best;
    bool validated;         /* `step` was validated (and logged) */
    int bad_validations;    /* validations since the best, for patience */
    double elapsed_s;       /* training time before this run */
    /* sums for the next train record of log.jsonl, so that a resumed run
     * logs the same train_loss as one never interrupted */
    double log_loss, log_nll, log_step_s;
    long log_tokens, log_real_tokens;
    double warmup_end_s;    /* training time when the warm-up ended (0: not yet);
                               where train.lr.horizon "time" starts the decay */
    long chunk;             /* the epoch's chunk of data.shuffle_buffer pairs being
                               trained on; batch_in_epoch counts within it */
    uint64_t init_sum;      /* train.init: the checksum of the model started from; 0: none */
} TrainState;

/* Everything a model file holds. */
typedef struct {
    TfmConfig cfg;
    Bpe *bpe;
    Model model;
    bool has_train_state;   /* a checkpoint: optimizer and trainer state, resumable */
    bool has_step;          /* ts is valid: checkpoints and trained models have it */
    Adam adam;              /* valid when has_train_state (and asked for) */
    bool has_ema;           /* a checkpoint with train.ema's moving average */
    float *ema;             /* that average, loaded with adam; else NULL */
    TrainState ts;          /* valid when has_step */
    uint64_t checksum;      /* the file's own checksum (END section) */
    char *data_print;       /* checkpoints: what the run's data files were (DATA), or NULL */
} ModelFile;

/* Writes cfg (its architecture keys, config_arch_diff's, taken from the
 * model itself), bpe, the model's params, the trainer state when ts is
 * non-NULL, and the optimizer state (with the weights' moving average when
 * ema is non-NULL) when adam is too, atomically to path. Errors:
 * TFM_ERR_IO naming path. */
TfmStatus ckpt_save(const char *path, const TfmConfig *cfg, const Bpe *bpe,
                    const Model *model, const Adam *adam, const float *ema,
                    const TrainState *ts, TfmErr *err);

/* ckpt_save with the fingerprint of the run's data files (text the trainer
 * makes and compares; NULL: none), for the checkpoints a run resumes from. */
TfmStatus ckpt_save_run(const char *path, const TfmConfig *cfg, const Bpe *bpe,
                        const Model *model, const Adam *adam, const float *ema,
                        const TrainState *ts, const char *data_print, TfmErr *err);

/* Reads a model file into out (which the caller frees with ckpt_free).
 * want_train_state: also load Adam moments (they are skipped otherwise).
 * Errors: TFM_ERR_IO (unreadable), TFM_ERR_FORMAT ("path: ..." for bad magic,
 * version, truncation, checksum mismatch, missing or mis-shaped tensors). */
TfmStatus ckpt_load(const char *path, ModelFile *out, bool want_train_state, TfmErr *err);

void ckpt_free(ModelFile *mf);

/* Whether path starts as a model file does (its magic), for a friendlier
 * error where a config was expected; false when it cannot be read. */
bool ckpt_file_is_model(const char *path);

/* Copies a model file atomically (best.tfm -> train.model, last.tfm ->
 * ckpt.N.tfm where hard links fail) after checking its checksum. */
TfmStatus ckpt_copy(const char *from, const char *to, TfmErr *err);

/* Refuses an existing, non-empty regular file at path that is not a tfm
 * model: a slip in `-o` or train.model must not replace a text file. */
TfmStatus ckpt_check_replaceable(const char *path, TfmErr *err);

#endif
