/* optim: Adam with bias correction and decoupled weight decay, the learning
 * rate schedules of train.lr (docs/config.md), global-norm gradient clipping and the moving
 * average of the weights (train.ema). Flat loops
 * over the parameter array; the moments are owned here and saved in checkpoints. */
#ifndef TFM_OPTIM_H
#define TFM_OPTIM_H

#include <stddef.h>
#include "base/err.h"

/* Adam's settings (train.adam.* and train.weight_decay in a config). */
typedef struct {
    float beta1, beta2, eps, weight_decay;
} AdamConfig;

typedef enum {
    LR_NOAM = 0, LR_INVERSE_SQRT = 1, LR_CONSTANT = 2, LR_LINEAR = 3, LR_COSINE = 4
} LrSchedule;

/* Where linear and cosine reach `final`: at train.max_steps, or at
 * whichever of train.max_steps and train.max_time_s comes first. */
typedef enum { LR_HORIZON_STEPS = 0, LR_HORIZON_TIME = 1 } LrHorizon;

/* A learning rate schedule (train.lr.* in a config, docs/config.md). */
typedef struct {
    LrSchedule schedule;
    int warmup;
    float factor, peak;
    float final;         /* where linear and cosine end, at the last step */
    LrHorizon horizon;
} LrConfig;

typedef struct {
    size_t n;
    float *m, *v;        /* first and second moments, n each */
    long step;           /* updates done so far */
    float beta1, beta2, eps, weight_decay;
    unsigned char *spared;  /* n flags, 1: no weight decay here; NULL: decay all */
} Adam;

/* What train.weight_decay applies to: every parameter (as PyTorch's AdamW
 * given them all), or the matrices alone (projections and embeddings),
 * sparing the biases and the norms' gains, which set scales and offsets
 * rather than fit the data. */
typedef enum { WD_SCOPE_ALL = 0, WD_SCOPE_MATRICES = 1 } WeightDecayScope;

/* Allocates zeroed moments for n parameters, with the settings of ac. */
TfmStatus adam_init(Adam *a, size_t n, const AdamConfig *ac, TfmErr *err);
void adam_free(Adam *a);

/* Spares parameters [offset, offset + count) from weight decay from now on
 * (not saved in checkpoints: the trainer sets it from its config). */
TfmStatus adam_spare_from_decay(Adam *a, size_t offset, size_t count, TfmErr *err);

/* One update at learning rate lr: step += 1, then
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + lr wd p
 * (without the last term where adam_spare_from_decay said so). */
void adam_update(Adam *a, float *params, const float *grads, float lr);

/* The learning rate for update number `step` (1-based) of a run of `total`
 * updates (train.max_steps). Only linear and cosine use total and
 * time_done: the share of the time budget used since the warm-up ended
 * (0 with horizon "steps"); the decay has gone as far as the larger of the
 * two shares says. */
double lr_at(const LrConfig *lc, int d_model, long step, long total, double time_done);

/* train.ema: an exponential moving average of the weights, ema = d·ema +
 * (1 - d)·w after each step. Its decay at a step (1-based) is
 * min(decay, (1 + step) / (10 + step)), so that the average follows the
 * weights closely while they move fast and the initial ones fade. */
float ema_decay_at(float decay, long step);
void ema_update(float *ema, const float *w, size_t n, float decay_now);

/* L2 norm of g over n values (accumulated in double). */
double grad_norm(const float *g, size_t n);

/* Scales g so its norm is at most max_norm (max_norm <= 0: no clipping).
 * Returns the norm before clipping. */
double clip_grad_norm(float *g, size_t n, float max_norm);

#endif
