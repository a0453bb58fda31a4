/* trainer: the state of one `tfm train` run, shared by the files of
 * train/ (train.c: start-up, the loop, saving; evaluate.c: validation).
 * Private to train/: callers use train.h. */
#ifndef TFM_TRAINER_H
#define TFM_TRAINER_H

#include <stdbool.h>

#include "nn/optim.h"
#include "text/bpe.h"
#include "model/ckpt.h"
#include "model/decode.h"
#include "model/model.h"
#include "train/corpus.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/train.h"

typedef struct {
    const TfmConfig *cfg;
    const TrainOptions *opt;
    Bpe *bpe;
    Corpus train, valid;
    Batcher train_b, valid_b;
    Model model;
    Adam adam;
    TrainState ts;
    Progress prog;
    Decoder *decoder;           /* for validation BLEU, made at the first use */
    RunDir run;                 /* out_dir: lock and paths */
    double run_start;           /* monotonic seconds at the start of this run */
    bool changed;               /* this run stepped or validated: last.tfm is behind */
    long log_every;             /* train.log_every, or the interval picked for 0 */
} Trainer;

/* Training time so far, this run's and earlier runs' (seconds). */
double trainer_elapsed(const Trainer *t);

/* An event for progress_log with this step's fields set and the rest NaN. */
void trainer_fill_event(const Trainer *t, ProgressEvent *ev);

/* Validates (loss, and BLEU with train.valid_bleu), logs, keeps best.tfm and
 * counts validations without improvement (evaluate.c). */
TfmStatus eval_validate_and_log(Trainer *t, TfmErr *err);

/* train.average_last: the mean of the newest numbered checkpoints (the last
 * one is the final step), written to out_dir/average.tfm, validated like a
 * step and logged with "averaged": K. It leaves the mean in t->model. */
TfmStatus eval_average_checkpoints(Trainer *t, TfmErr *err);

#endif
