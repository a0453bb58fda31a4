/* trainer: the state of one `tfm train` run, shared by the files of
 * train/: train.c (start-up and the loop), trainer.c (the helpers below on
 * the Trainer), train_memory.c (the memory check), finetune.c (train.init),
 * train_data.c (the chunks), evaluate.c (validation and the end of the
 * run), data_parallel.c (ranks) and sentence_parallel.c (threads' replicas).
 * Private to train/: callers use train.h. */
#ifndef TFM_TRAINER_H
#define TFM_TRAINER_H

#include <stdbool.h>

#include "nn/optim.h"
#include "text/bpe.h"
#include "model/ckpt.h"
#include "decode/decoder.h"
#include "model/model.h"
#include "train/corpus.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/shard.h"
#include "train/train.h"

/* The training data in chunks (train_data.c): `train` holds chunk
 * loaded_chunk of epoch loaded_epoch, read from `stream`, and the next
 * one is read ahead on a thread. */
typedef struct {
    PairStream stream;
    bool stream_open;
    long stream_epoch;          /* the epoch `stream` reads */
    long loaded_epoch, loaded_chunk;
    bool last_chunk;            /* `train` is its epoch's last chunk */
    bool resident;              /* the epoch is one chunk, kept: read once */
    struct Prefetch *prefetch;  /* the chunk after `train`, read on a thread while it trains */
    long prefetch_after;        /* the step data_load left off at: no prefetch before the next */
} TrainChunks;

/* One run's state. Its parts live as long as the run and are read
 * together by the loop, validation and the checkpoints, which is why they
 * are one struct (passed as one handle between the files above); what has
 * a life of its own is a member of its own type: the corpora and batchers,
 * the model and optimizer, progress, the run folder, the chunks, a job's
 * shard. */
typedef struct {
    const TfmConfig *cfg;
    const TrainOptions *opt;
    Bpe *bpe;
    Corpus train, valid;
    BpeSubset *tgt_subset;      /* model.output_vocab "target": the targets' pieces, else NULL */
    Batcher train_b, valid_b;
    Model model;
    Adam adam;
    float *ema;                 /* train.ema's average of the weights (rank 0), or NULL */
    bool ema_unaveraged;        /* ema is a copy of a resumed run's weights, no step averaged yet */
    TrainState ts;
    Progress prog;
    Decoder *decoder;           /* for validation BLEU, made at the first use */
    RunDir run;                 /* out_dir: lock and paths */
    double run_start;           /* monotonic seconds at the start of this run */
    bool changed;               /* this run stepped or validated: last.tfm is behind */
    long log_every;             /* train.log_every, or the interval picked for 0 */
    /* train.parallel "sentences": the threads' models; replicas[k-1] is
     * thread k's (thread 0 trains `model`); n_parts 1: products mode */
    Model *replicas;
    struct PartRun *part_runs;  /* n_parts of them (sentence_parallel.c) */
    int n_parts;
    char *data_print;           /* rank 0: the fingerprint of the data files (data_print.h) */
    TrainChunks chunks;         /* which chunk `train` holds (train_data.c) */
    /* a job's ranks (part of parts): each encodes its part of a chunk,
     * `train` has the lengths of all, `shard` the ids (shard.h) */
    int part, parts;
    Shard shard;
    bool shard_noted;           /* the note of what a rank holds is made */
} Trainer;

/* ---- trainer.c ---- */

/* The signal number a caller asked the run to stop with, 0 if none. */
int trainer_stop_signal(const Trainer *t);

/* Training time so far, this run's and earlier runs' (seconds). */
double trainer_elapsed(const Trainer *t);

/* The share of the time budget used since the warm-up ended, for the decay
 * of train.lr.horizon "time" (0 for horizon "steps" and during warm-up). */
double trainer_lr_time_done(const Trainer *t);

/* Records that this run stepped or validated. The first time, on rank 0,
 * out_dir's end models (ema.tfm, average.tfm) are removed: they are of an
 * earlier end, and a run that fails before it makes them again must not have
 * its rerun hand the old ones over. */
void trainer_mark_changed(Trainer *t);

/* Refuses a model and batch size this machine cannot train, before the big
 * allocations (`copies` float arrays of the parameters' size, and the
 * activations; train_memory.c). */
TfmStatus trainer_check_memory(const Trainer *t, const ModelConfig *mc, int copies, TfmErr *err);
/* The same check with the smallest vocabulary a run can learn (its
 * message says "at least"): asked before the vocabulary is learned. */
TfmStatus trainer_check_memory_any_vocab(const Trainer *t, const ModelConfig *mc, int copies,
                                         TfmErr *err);

/* train.ema's average on rank 0: saved's copy, or the weights' when NULL. */
TfmStatus trainer_start_ema(Trainer *t, const float *saved, TfmErr *err);

/* train.init: a fresh run that starts from a trained model's weights,
 * vocabulary and output pieces, with a fresh optimizer at step 0
 * (finetune.c). */
TfmStatus finetune_start(Trainer *t, TfmErr *err);

/* ---- the training data (train_data.c) ---- */

/* Reads the chunk of the training data at t->ts's position (the first on a
 * fresh start) and the validation set, and prepares their batchers (the
 * output pieces too, for model.output_vocab "target"). */
TfmStatus data_load(Trainer *t, TfmErr *err);

/* Makes batch ts.batch_in_epoch of ts's (epoch, chunk) ready in train_b,
 * reading the next chunk when one is used up: 0 when it is ready, 1 when
 * ts moved on to a new epoch (the caller checks its limits first, then
 * calls again), -1 on an error (a pair of files ending early, ...). */
int data_ready(Trainer *t, TfmErr *err);

/* This rank's share of the batch data_ready made ready (the whole batch
 * with one rank); returns the whole batch's real tokens (batch_real_tokens). */
long data_batch(Trainer *t, Batch *mine);

void data_close(Trainer *t);

/* An event for progress_log with this step's fields set and the rest NaN. */
void trainer_fill_event(const Trainer *t, ProgressEvent *ev);

/* The state saved with a model (best.tfm, ema.tfm): the step, for `tfm
 * info`, and no clock time, so that a rerun or a resumed run writes the
 * same bytes as an uninterrupted one. */
TrainState trainer_model_state(const Trainer *t);

/* Saves out_dir/last.tfm, links it as ckpt.STEP.tfm and prunes the
 * numbered checkpoints to train.keep. */
TfmStatus trainer_save_last(Trainer *t, TfmErr *err);

/* ---- evaluate.c ---- */

/* Validates (loss, and BLEU with train.valid_bleu), logs, keeps best.tfm and
 * counts validations without improvement. */
TfmStatus eval_validate_and_log(Trainer *t, TfmErr *err);

/* The end of a finished run (rank 0): the last step validated and saved,
 * the model to hand over made (ema.tfm, average.tfm) when it changed, the
 * summary, and the copy to train.model. */
TfmStatus eval_hand_over(Trainer *t, TfmErr *err);

/* train.ema: the moving average of the weights, written to out_dir/ema.tfm,
 * validated like a step and logged with "ema": true. It leaves the average
 * in t->model. */
TfmStatus eval_ema(Trainer *t, TfmErr *err);

/* train.average_last: the mean of the newest numbered checkpoints (the last
 * one is the final step), written to out_dir/average.tfm, validated like a
 * step and logged with "averaged": K. It leaves the mean in t->model. */
TfmStatus eval_average_checkpoints(Trainer *t, TfmErr *err);

/* ---- data-parallel runs (data_parallel.c); trivial with one rank ---- */

/* Share `part` of `parts` of b's sentences (all of b when parts is 1), cut
 * the same way for ranks and threads; its loss_tokens is b's target count,
 * so the shares' gradients add up to b's. */
void batch_share(const Batch *b, int part, int parts, Batch *out);

/* Every rank passes its status; all get TFM_OK, or all stop: a rank that
 * failed keeps its error, the others get a quiet one (when every rank
 * failed, rank 0's error alone is printed). */
TfmStatus dp_agree(TfmStatus st, TfmErr *err);

/* Rank 0 passes its start-up status (run folder, vocabulary, model, resume);
 * if it is TFM_OK, every rank receives rank 0's vocabulary, weights, Adam
 * state and training state (the others build their model from them). */
TfmStatus dp_share_start(Trainer *t, TfmStatus st, TfmErr *err);

/* Whether every rank holds the same weights, bit for bit (true with one
 * rank): the ranks apply the same updates, so a difference is a bug (a
 * rate or a sum that differed between ranks). */
bool dp_weights_agree(const Trainer *t);

/* ---- train.parallel "sentences" (sentence_parallel.c) ---- */

/* Makes a replica of the model for every thread after the first when the
 * run is in "sentences" mode with more than one thread; else n_parts is 1. */
TfmStatus parts_init(Trainer *t, TfmErr *err);

/* The memory parts_init will allocate for a model of shape mc (0 unless
 * "sentences" with more than one thread). */
double parts_extra_bytes(const TfmConfig *cfg, const ModelConfig *mc);

/* One step's forward and backward passes over b (this rank's share of the
 * batch), each thread on its share of the sentences with masks of its own
 * (streams forked from rng, which then advances once): t->model.grads gets
 * the sum of the threads' gradients, ls the sum of their losses. */
TfmStatus parts_forward_backward(Trainer *t, const Batch *b, Rng *rng, const StepSettings *s,
                                 LossStats *ls, TfmErr *err);

void parts_free(Trainer *t);

/* The workspace a batch of `tokens` needs: twice them with train.rdrop,
 * which runs every sentence twice. */
static inline int trainer_work_tokens(const TfmConfig *cfg, int tokens)
{
    return cfg->train.rdrop > 0 ? 2 * tokens : tokens;
}

#endif
