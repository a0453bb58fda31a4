/* trainer: the helpers the files of a run share over its Trainer: the
 * clock, the change mark, the events the log gets, the states and the
 * checkpoint it saves. (train.c runs the loop, evaluate.c validates and
 * hands the model over; both call here, never each other's way back.) */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "dist/dist.h"

int trainer_stop_signal(const Trainer *t) { return t->opt->stop ? t->opt->stop->signo : 0; }

double trainer_elapsed(const Trainer *t) { return t->ts.elapsed_s + clock_now_s() - t->run_start; }

void trainer_mark_changed(Trainer *t)
{
    if (!t->changed && dist_rank() == 0) {
        unlink(t->run.ema_path);
        unlink(t->run.average_path);
    }
    t->changed = true;
}

double trainer_lr_time_done(const Trainer *t)
{
    const TrainConfig *tc = &t->cfg->train;
    if (tc->lr.horizon != LR_HORIZON_TIME || t->ts.warmup_end_s <= 0) return 0;
    double left = tc->max_time_s - t->ts.warmup_end_s;
    return left > 0 ? (trainer_elapsed(t) - t->ts.warmup_end_s) / left : 1.0;
}

void trainer_fill_event(const Trainer *t, ProgressEvent *ev)
{
    ev->step = t->ts.step;
    ev->epoch = t->ts.epoch + 1;
    ev->train_loss = ev->train_nll = ev->valid_loss = ev->valid_ppl = ev->valid_bleu = NAN;
    ev->tok_per_s = ev->eta_s = NAN;
    ev->averaged = 0;
    ev->ema = false;
    ev->lr = lr_at(&t->cfg->train.lr, t->model.cfg.d_model, t->ts.step > 0 ? t->ts.step : 1,
                   t->cfg->train.max_steps, trainer_lr_time_done(t));
    ev->elapsed_s = trainer_elapsed(t);
}

TrainState trainer_model_state(const Trainer *t)
{
    TrainState ts = t->ts;
    ts.elapsed_s = ts.log_step_s = ts.warmup_end_s = 0;
    ts.log_loss = ts.log_nll = 0;
    ts.log_tokens = ts.log_real_tokens = 0;
    return ts;
}

TfmStatus trainer_save_last(Trainer *t, TfmErr *err)
{
    TrainState ts = t->ts;
    ts.elapsed_s = trainer_elapsed(t);
    TfmStatus st = ckpt_save_run(t->run.last_path, t->cfg, t->bpe, &t->model, &t->adam, t->ema,
                                 &ts, t->data_print, err);
    if (st != TFM_OK) return st;
    /* The numbered copy is a hard link: last.tfm is replaced by rename, so
     * the link keeps this content. */
    char *numbered = run_dir_checkpoint_path(t->cfg->train.out_dir, t->ts.step, err);
    if (!numbered) return TFM_ERR_NOMEM;
    unlink(numbered);
    if (link(t->run.last_path, numbered) != 0) st = ckpt_copy(t->run.last_path, numbered, err);
    free(numbered);
    if (st == TFM_OK) run_dir_prune_checkpoints(t->cfg->train.out_dir, t->cfg->train.keep);
    return st;
}

/* train.ema's average, on rank 0 (which saves it): a checkpoint's, or the
 * weights'. */
TfmStatus trainer_start_ema(Trainer *t, const float *saved, TfmErr *err)
{
    if (t->cfg->train.ema <= 0) return TFM_OK;
    const size_t bytes = sizeof(float) * t->model.n_params;
    if (!(t->ema = xmalloc(bytes, err))) return TFM_ERR_NOMEM;
    memcpy(t->ema, saved ? saved : t->model.params, bytes);
    return TFM_OK;
}
