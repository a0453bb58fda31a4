/* train: start-up (vocabulary, data, model; fresh or resumed), the training
 * loop and saving. One step: batch -> forward -> backward -> clip ->
 * Adam at the scheduled lr. The output folder is run_dir.c's, validation
 * evaluate.c's. Everything that decides the next step (params,
 * Adam moments, data position, dropout rng) is in the checkpoint, so a
 * resumed run continues bit for bit (same threads). */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/path.h"
#include "base/sysmem.h"
#include "dist/dist.h"
#include "nn/gemm_bf16.h"
#include "train/data_print.h"

/* train.log_every 0: after AUTO_LOG_PROBE steps, pick a round number of
 * steps that takes about AUTO_LOG_S seconds. */
enum { AUTO_LOG_PROBE = 5 };
static const double AUTO_LOG_S = 20;

/* The interval for about AUTO_LOG_S seconds at step_s a step, rounded to
 * 1, 2 or 5 times a power of ten (so rows fall on readable steps). */
static long auto_log_every(double step_s)
{
    double want = step_s > 0 ? AUTO_LOG_S / step_s : 1e9;
    long every = 1;
    for (long p = 1; p <= 100000000; p *= 10)
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)   /* 1, 2, 5 */
            if (p * m <= want) every = p * m;
    return every;
}


/* ---- set-up ---- */

static TfmStatus get_vocabulary(Trainer *t, TfmErr *err)
{
    const DataConfig *d = &t->cfg->data;
    if (d->vocab) {
        TfmStatus st = bpe_load(&t->bpe, d->vocab, err);
        if (st == TFM_OK && d->bpe_dropout > 0 && strcmp(bpe_kind(t->bpe), "tfm BPE") != 0)
            st = err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS("data.bpe_dropout", "data.vocab"),
                              "data.bpe_dropout: BPE-dropout needs tfm's own BPE vocabulary; "
                              "data.vocab %s is a SentencePiece model", d->vocab);
        return st;
    }
    char *path = path_join(t->cfg->train.out_dir, "vocab.txt", err);
    if (!path) return TFM_ERR_NOMEM;
    /* before learning, which may take minutes: out_dir/vocab.txt is ours to
     * replace only if it is a tfm vocabulary (and not a FIFO, ...) */
    TfmStatus st = atomic_check_target(path, err);
    if (st == TFM_OK) st = atomic_check_own_kind(path, "tfm-bpe ", "tfm vocabulary", err);
    if (st == TFM_OK) {
        const int n = d->train_src.n;
        const char **files = xcalloc(2 * (size_t)n, sizeof *files, err);
        if (!files) st = TFM_ERR_NOMEM;
        for (int i = 0; files && i < n; i++) {
            files[2 * i] = d->train_src.v[i];
            files[2 * i + 1] = d->train_tgt.v[i];
        }
        if (files && n == 1)
            progress_note(&t->prog, "learning a %d-token BPE vocabulary from %s and %s",
                          d->vocab_size, files[0], files[1]);
        else if (files)
            progress_note(&t->prog, "learning a %d-token BPE vocabulary from the %d training "
                          "files", d->vocab_size, 2 * n);
        LineSampleStats got = {0};
        if (files)
            st = bpe_learn_sample(&t->bpe, files, 2 * n, d->vocab_size, d->bpe_sample,
                                  omp_get_max_threads(), &got, err);
        if (st == TFM_OK && got.estimated)
            progress_note(&t->prog, "data.bpe_sample: learned from %ld of about %ld lines (runs "
                          "of lines spread over the files)", got.read, got.total);
        else if (st == TFM_OK && got.read < got.total)
            progress_note(&t->prog, "data.bpe_sample: learned from %ld of the %ld lines", got.read,
                          got.total);
        free(files);
    }
    if (st == TFM_OK) st = bpe_save(t->bpe, path, err);
    free(path);
    return st;
}

/* train.weight_decay_scope "matrices": the vectors (tensor_is_vector: the
 * biases and the norms' gains and biases) get no weight decay. On every
 * rank, after the optimizer exists, so fresh and resumed runs alike. */
static TfmStatus spare_vectors_from_decay(Trainer *t, TfmErr *err)
{
    if (t->cfg->train.weight_decay_scope != WD_SCOPE_MATRICES) return TFM_OK;
    for (int i = 0; i < t->model.n_tensors; i++) {
        const TensorInfo *ti = &t->model.tensors[i];
        if (!tensor_is_vector(ti)) continue;
        TfmStatus st = adam_spare_from_decay(&t->adam, ti->offset, (size_t)ti->cols, err);
        if (st != TFM_OK) return st;
    }
    return TFM_OK;
}

static TfmStatus resume(Trainer *t, TfmErr *err)
{
    ModelFile mf;
    TfmStatus st = ckpt_load(t->run.last_path, &mf, true, err);
    if (st == TFM_ERR_FORMAT)
        err_suffix(err, "; copy a ckpt.STEP.tfm of %s over it to resume from there, or start "
                   "over with --restart", t->cfg->train.out_dir);
    if (st != TFM_OK) return st;
    if (!mf.has_train_state) {
        ckpt_free(&mf);
        return err_set(err, TFM_ERR_FORMAT, "%s: has no training state to resume from "
                       "(use --restart)", t->run.last_path);
    }
    char diff[512];
    if (config_arch_diff(&mf.cfg, t->cfg, diff, sizeof diff) > 0) {
        ckpt_free(&mf);
        return err_set(err, TFM_ERR_CONFIG, "%s: was trained with another model config: %s "
                       "(use --restart to start over)", t->run.last_path, diff);
    }
    /* a learned vocabulary of another size would not be the one the
     * config asks for (data.vocab_size is ignored with data.vocab) */
    if (!t->cfg->data.vocab && mf.cfg.data.vocab_size != t->cfg->data.vocab_size) {
        TfmStatus st2 = err_set(err, TFM_ERR_CONFIG, "%s: was trained with data.vocab_size %d, "
                                "the config says %d (use --restart to start over)", t->run.last_path,
                                mf.cfg.data.vocab_size, t->cfg->data.vocab_size);
        ckpt_free(&mf);
        return st2;
    }
    /* the data position means something only with the same batches */
    if (mf.cfg.train.seed != t->cfg->train.seed ||
        mf.cfg.train.batch_tokens != t->cfg->train.batch_tokens) {
        TfmStatus st2 = err_set(err, TFM_ERR_CONFIG, "%s: was trained with train.seed %llu and "
                                "train.batch_tokens %d, the config says %llu and %d (use --restart "
                                "to start over)", t->run.last_path, mf.cfg.train.seed,
                                mf.cfg.train.batch_tokens, t->cfg->train.seed,
                                t->cfg->train.batch_tokens);
        ckpt_free(&mf);
        return st2;
    }
    /* the data position and the best model mean something only on the same data */
    if (mf.data_print && (st = data_print_compare(mf.data_print, t->data_print, t->run.last_path,
                                                  err)) != TFM_OK) {
        ckpt_free(&mf);
        return st;
    }
    /* take ownership of the pieces */
    t->bpe = mf.bpe;
    mf.bpe = NULL;
    t->model = mf.model;
    memset(&mf.model, 0, sizeof mf.model);
    t->adam = mf.adam;
    memset(&mf.adam, 0, sizeof mf.adam);
    const AdamConfig ac = config_adam(&t->cfg->train);  /* the user's current settings */
    t->adam.beta1 = ac.beta1;
    t->adam.beta2 = ac.beta2;
    t->adam.eps = ac.eps;
    t->adam.weight_decay = ac.weight_decay;
    t->ts = mf.ts;
    /* a run whose best.tfm is gone (removed, or last.tfm copied alone into
     * a new out_dir) would end with no model: its next validation is the best */
    if (t->ts.has_best && !run_dir_file_exists(t->run.best_path)) {
        progress_note(&t->prog, "%s is missing: the next validation's model becomes the best",
                      t->run.best_path);
        t->ts.has_best = false;
        t->ts.validated = false;
    }
    if (t->cfg->train.ema > 0 && !mf.ema) {
        progress_note(&t->prog, "train.ema: %s has no moving average; it starts from the "
                      "weights of step %ld", t->run.last_path, t->ts.step);
        t->ema_unaveraged = true;
    }
    st = trainer_start_ema(t, mf.ema, err);
    ckpt_free(&mf);
    if (st != TFM_OK) return st;
    /* params and Adam's moments are loaded; grads and activations are to come */
    if ((st = trainer_check_memory(t, &t->model.cfg, 1, err)) != TFM_OK) return st;
    progress_note(&t->prog, "resuming from %s at step %ld (epoch %ld)", t->run.last_path,
                  t->ts.step, t->ts.epoch + 1);
    return TFM_OK;
}

static TfmStatus fresh_start(Trainer *t, TfmErr *err)
{
    if (t->cfg->train.init) return finetune_start(t, err);
    ModelConfig mc = t->cfg->model;
    mc.max_len = config_positions(t->cfg->data.max_len);
    const int copies = 4 + (t->cfg->train.ema > 0);
    /* a model this machine cannot hold with any vocabulary is refused
     * before the vocabulary is learned, which may take minutes */
    TfmStatus st = trainer_check_memory_any_vocab(t, &mc, copies, err);
    if (st == TFM_OK) st = get_vocabulary(t, err);
    if (st != TFM_OK) return st;
    mc.vocab_size = bpe_vocab_size(t->bpe);
    if ((st = trainer_check_memory(t, &mc, copies, err)) != TFM_OK) return st;
    if ((st = model_init(&t->model, &mc, err)) != TFM_OK) return st;
    Rng init_rng;
    rng_seed(&init_rng, t->cfg->train.seed);
    model_init_weights(&t->model, &init_rng);
    const AdamConfig ac = config_adam(&t->cfg->train);
    if ((st = adam_init(&t->adam, t->model.n_params, &ac, err)) != TFM_OK) return st;
    memset(&t->ts, 0, sizeof t->ts);
    rng_seed(&t->ts.dropout_rng, t->cfg->train.seed ^ 0xd209u);
    return trainer_start_ema(t, NULL, err);
}

/* ---- evaluation and saving ---- */

/* ---- the loop ---- */

static double eta(const Trainer *t, double step_s)
{
    const TrainConfig *tc = &t->cfg->train;
    double best = INFINITY;
    if (tc->max_steps > 0) best = fmin(best, (tc->max_steps - t->ts.step) * step_s);
    if (tc->max_time_s > 0) best = fmin(best, tc->max_time_s - trainer_elapsed(t));
    if (tc->max_epochs > 0 && t->chunks.resident && t->train_b.n_batches > 0) {
        double left = (tc->max_epochs - t->ts.epoch) * (double)t->train_b.n_batches -
                      t->ts.batch_in_epoch;
        best = fmin(best, left * step_s);
    }
    return isinf(best) ? NAN : fmax(best, 0);
}

static bool limit_reached(const Trainer *t)
{
    const TrainConfig *tc = &t->cfg->train;
    return (tc->max_steps > 0 && t->ts.step >= tc->max_steps) ||
           (tc->max_epochs > 0 && t->ts.epoch >= tc->max_epochs) ||
           (tc->patience > 0 && t->ts.bad_validations >= tc->patience) ||
           (tc->max_time_s > 0 && trainer_elapsed(t) >= tc->max_time_s);
}

/* What a numeric stop leaves behind: say "last.tfm keeps ..." only when
 * there is one (a fresh run may stop before its first save). */
static const char *stop_note(const Trainer *t)
{
    return t->run.last_path && run_dir_file_exists(t->run.last_path)
               ? "last.tfm keeps the last good state" : "no checkpoint was saved yet";
}

/* A numeric stop that every rank of a job meets at the same step (the
 * losses and gradients are summed across ranks first): rank 0 reports it. */
static TfmStatus numeric_stop(const Trainer *t, long step, const char *what, double x, TfmErr *err)
{
    err->collective = true;
    err->quiet = dist_rank() > 0;
    return err_set(err, TFM_ERR_NUMERIC, "step %ld: %s is %s; stopping (%s)", step, what,
                   isnan(x) ? "NaN" : "Inf", stop_note(t));
}

static void sum_across_ranks(void *ctx, float *grads, size_t n)
{
    (void)ctx;
    dist_sum_start(grads, n);
}

/* train.dropout_warmup: the dropouts rise linearly from 0 to the model's
 * over the first steps, so the model fits fast while it cannot yet overfit. */
static float dropout_factor_at(const TrainConfig *tc, long step)
{
    if (tc->dropout_warmup <= 0 || step >= tc->dropout_warmup) return 1.0f;
    return (float)((double)step / (double)tc->dropout_warmup);
}

/* One step on `mine`, this rank's sentences of a batch of real_tokens
 * (the whole batch with one rank). */
static TfmStatus train_step(Trainer *t, const Batch *mine_in, long real_tokens, TfmErr *err)
{
    const TrainConfig *tc = &t->cfg->train;
    LossStats ls = {0};
    long next = t->ts.step + 1;
    /* in a job, masks of its own for this rank's sentences (a stream forked
     * per rank: dropout_rng stays the same on every rank) */
    const Batch mine = *mine_in;
    Rng rank_rng, *dropout_rng = &t->ts.dropout_rng;
    if (dist_size() > 1) {
        rng_fork(&t->ts.dropout_rng, (uint64_t)dist_rank(), &rank_rng);
        dropout_rng = &rank_rng;
    }
    const StepSettings settings = {tc->label_smoothing, dropout_factor_at(tc, next), tc->rdrop};
    /* train.parallel "sentences": the threads' passes, gradients summed */
    const bool parts = t->n_parts > 1;
    if (parts) {
        TfmStatus st = parts_forward_backward(t, &mine, dropout_rng, &settings, &ls, err);
        if (st != TFM_OK) return st;
    } else if (mine.n > 0) {
        TfmStatus st = model_forward_step(&t->model, &mine, &settings, dropout_rng, &ls, err);
        if (st != TFM_OK) return st;
    }
    /* rank 0's clock sets the time share of the rate for every rank (each
     * rank's own would differ a little, and so would the weights) */
    double sums[4] = {ls.loss, ls.nll, (double)ls.n_tokens, dist_rank() == 0 ? trainer_lr_time_done(t) : 0};
    dist_sum_doubles(sums, 4);
    ls.loss = sums[0];
    ls.nll = sums[1];
    ls.n_tokens = (long)sums[2];
    const double time_done = sums[3];
    if (!isfinite(ls.loss)) return numeric_stop(t, next, "loss", ls.loss, err);
    if (parts) {
        dist_sum_floats(t->model.grads, t->model.n_params);
    } else if (dist_overlap_sums()) {
        /* each layer's gradients are summed across ranks while the layers
         * below it run their backward pass */
        if (mine.n > 0) model_backward_notify(&t->model, sum_across_ranks, NULL);
        else model_grads_zero_notify(&t->model, sum_across_ranks, NULL);
        dist_sum_wait();
    } else {
        if (mine.n > 0) model_backward(&t->model);
        else memset(t->model.grads, 0, t->model.n_params * sizeof *t->model.grads);
        dist_sum_floats(t->model.grads, t->model.n_params);
    }
    double norm = clip_grad_norm(t->model.grads, t->model.n_params, tc->clip_norm);
    if (!isfinite(norm)) return numeric_stop(t, next, "gradient", norm, err);
    float lr = (float)lr_at(&tc->lr, t->model.cfg.d_model, next, tc->max_steps, time_done);
    adam_update(&t->adam, t->model.params, t->model.grads, lr);
    if (t->ema) {
        ema_update(t->ema, t->model.params, t->model.n_params, ema_decay_at(tc->ema, next));
        t->ema_unaveraged = false;
    }
    t->ts.step = next;
    if (next == tc->lr.warmup) t->ts.warmup_end_s = trainer_elapsed(t);
    t->ts.validated = false;
    trainer_mark_changed(t);
    t->ts.log_loss += ls.loss;
    t->ts.log_nll += ls.nll;
    t->ts.log_tokens += ls.n_tokens;
    t->ts.log_real_tokens += real_tokens;
    return TFM_OK;
}

static TfmStatus log_training(Trainer *t, bool to_log, bool show, double step_s, TfmErr *err)
{
    ProgressEvent ev;
    trainer_fill_event(t, &ev);
    TrainState *ts = &t->ts;
    if (ts->log_tokens > 0) {
        ev.train_loss = ts->log_loss / ts->log_tokens;
        ev.train_nll = ts->log_nll / ts->log_tokens;
    }
    ev.tok_per_s = ts->log_step_s > 0 ? ts->log_real_tokens / ts->log_step_s : NAN;
    ev.eta_s = eta(t, step_s);
    progress_show(&t->prog, &ev, show);
    if (!to_log) return TFM_OK;
    ts->log_loss = ts->log_nll = ts->log_step_s = 0;
    ts->log_tokens = ts->log_real_tokens = 0;
    return progress_log(&t->prog, &ev, err);
}

/* After the first steps: the time a step takes, how often progress shows,
 * and how long the run will take under its limits (warned when over a day;
 * validations and saves come on top). */
static void announce_pace(Trainer *t, double step_s)
{
    double left = eta(t, step_s);
    char total[256] = "no step, epoch or time limit", left_s[32], every[32] = "step";
    if (!isnan(left)) {
        progress_format_duration(left_s, sizeof left_s, left);
        snprintf(total, sizeof total, "about %s to go%s", left_s,
                 left > 86400 ? " (more than a day: train.max_time_s or train.max_steps sets a "
                                "shorter run, a smaller model (configs/tiny.json) a faster one)"
                              : "");
    }
    if (t->log_every != 1) snprintf(every, sizeof every, "%ld steps", t->log_every);
    progress_note(&t->prog, "%.3f s a step (%.0f s per 1000): %s; progress every %s "
                  "(train.log_every)", step_s, 1000 * step_s, total, every);
}

static TfmStatus loop(Trainer *t, TfmErr *err)
{
    const TrainConfig *tc = &t->cfg->train;
    const bool lead = dist_rank() == 0;
    TfmStatus st;
    double step_time = NAN;
    int probed = 0;
    t->log_every = tc->log_every;
    t->prog.by_step = true;
    /* train.init: the model as it came, validated, is the best until beaten
     * (and the loss a fine-tuning run starts from) */
    if (lead && tc->init && t->ts.step == 0 && !t->ts.validated &&
        (st = eval_validate_and_log(t, err)) != TFM_OK)
        return st;
    for (;;) {
        /* one decision for every rank of a job: rank 0's limits (time,
         * patience), any rank's signal */
        long agreed[2] = {dist_rank() == 0 && limit_reached(t), trainer_stop_signal(t)};
        dist_max_longs(agreed, 2);
        if (agreed[1] && t->opt->stop) t->opt->stop->signo = (int)agreed[1];
        if (agreed[0] || agreed[1]) break;
        int ready = data_ready(t, err);
        if (ready < 0) return err->status;
        if (ready > 0) continue;    /* a new epoch: the limits first */
        Batch mine;
        long real_tokens = data_batch(t, &mine);
        double t0 = clock_now_s();
        if ((st = train_step(t, &mine, real_tokens, err)) != TFM_OK) return st;
        t->ts.batch_in_epoch++;
        double dt = clock_now_s() - t0;
        t->ts.log_step_s += dt;
        step_time = isnan(step_time) ? dt : 0.9 * step_time + 0.1 * dt;
        if (t->opt->after_step) t->opt->after_step(t->ts.step, t->opt->after_step_ctx);
        bool validating = tc->valid_every > 0 && t->ts.step % tc->valid_every == 0;
        if (++probed == AUTO_LOG_PROBE) {
            if (t->log_every == 0) t->log_every = auto_log_every(step_time);
            announce_pace(t, step_time);
        }
        bool row = t->log_every > 0 && t->ts.step % t->log_every == 0;
        if ((st = log_training(t, row || validating || limit_reached(t), row, step_time, err)) !=
            TFM_OK)
            return st;
        if (!lead) continue;        /* rank 0 validates, saves and logs */
        if (validating) {
            if ((st = eval_validate_and_log(t, err)) != TFM_OK) return st;
            if (tc->patience > 0 && t->ts.bad_validations >= tc->patience) {
                progress_note(&t->prog, "early stopping: no improvement in %d validation%s",
                              tc->patience, tc->patience == 1 ? "" : "s");
                if (dist_size() == 1) break;    /* a job stops at the next agreement */
            }
        }
        if (tc->save_every > 0 && t->ts.step % tc->save_every == 0 &&
            (st = trainer_save_last(t, err)) != TFM_OK)
            return st;
    }
    if (!dp_weights_agree(t))
        progress_note(&t->prog, "warning: the ranks' weights differ at step %ld (a bug in tfm; "
                      "the model saved is rank 0's)", t->ts.step);
    if (trainer_stop_signal(t)) {
        if (lead) {
            progress_note(&t->prog, "signal %d: saving %s", trainer_stop_signal(t), t->run.last_path);
            if ((st = trainer_save_last(t, err)) != TFM_OK) return st;
        }
        err->signo = trainer_stop_signal(t);
        err->collective = true;
        err->quiet = !lead;
        return err_set(err, TFM_INTERRUPTED, "interrupted at step %ld; run the same command "
                       "to resume", t->ts.step);
    }
    if (!lead) return TFM_OK;
    return eval_hand_over(t, err);
}

TfmStatus train_run(TfmConfig *cfg, const TrainOptions *opt, TfmErr *err)
{
    TfmStatus st = train_set_up_arithmetic(cfg, opt->quiet, err);
    if (st != TFM_OK) return st;
    Trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    t.opt = opt;
    t.run_start = clock_now_s();
    t.run.lock_fd = -1;
    if (opt->stop) opt->stop->started = 0;
    bool resuming = false;
    if (dist_rank() == 0) {
        /* rank 0 (the only one without mpirun) owns out_dir */
        if ((st = run_dir_open(&t.run, cfg, opt->config_path, opt->restart, err)) != TFM_OK)
            return dp_share_start(&t, st, err);
        resuming = t.run.resuming;
        if (!(t.data_print = data_print_make(cfg, err))) st = err->status;
        /* a fresh run starts a fresh log; a resumed one continues it */
        if (st == TFM_OK)
            st = progress_open(&t.prog, cfg->train.out_dir, !resuming, opt->quiet, err);
        if (st == TFM_OK) st = resuming ? resume(&t, err) : fresh_start(&t, err);
        if (st == TFM_OK && resuming) st = progress_trim(&t.prog, t.ts.step, err);
    } else {
        progress_open_silent(&t.prog);
    }
    /* a training step need not be the same for another batch: bf16 products
     * may take oneDNN's fixed-shape kernels (AMX); done: turns it off */
    bf16_allow_fixed_shapes(true);
    if ((st = dp_share_start(&t, st, err)) != TFM_OK) goto done;
    if ((st = dp_agree(spare_vectors_from_decay(&t, err), err)) != TFM_OK) goto done;
    if ((st = dp_agree(data_load(&t, err), err)) != TFM_OK) goto done;
    if ((st = dp_agree(model_alloc_training(&t.model,
                                            trainer_work_tokens(cfg, cfg->train.batch_tokens),
                                            config_row_len(cfg->data.max_len), err), err)) != TFM_OK)
        goto done;
    if ((st = dp_agree(parts_init(&t, err), err)) != TFM_OK) goto done;
    if (t.n_parts > 1)
        progress_note(&t.prog, "train.parallel sentences: %d threads, each on its share of "
                      "every batch's sentences with one-thread products", t.n_parts);
    if (dist_size() > 1)
        progress_note(&t.prog, "data-parallel: %d ranks (%s), each on its share of every batch "
                      "of %d tokens", dist_size(), dist_library(), cfg->train.batch_tokens);
    /* the memory plan: everything is allocated now, nothing grows per step */
    progress_note(&t.prog, "model: %zu parameters; %.0f MB in use with the optimizer, gradients "
                  "and activations for %d tokens%s (%.0f MB available)", t.model.n_params,
                  sysmem_resident() / 1e6, cfg->train.batch_tokens,
                  cfg->train.rdrop > 0 ? " run twice (train.rdrop)" : "",
                  sysmem_available() / 1e6);
    t.run_start = clock_now_s();
    if (opt->stop) opt->stop->started = 1;
    st = loop(&t, err);
done:
    bf16_allow_fixed_shapes(false);
    progress_close(&t.prog);
    /* a fresh run refused before its first checkpoint leaves nothing */
    if (st != TFM_OK && st != TFM_INTERRUPTED && !resuming && t.run.last_path &&
        !run_dir_file_exists(t.run.last_path))
        run_dir_abandon(&t.run);
    decoder_free(t.decoder);
    data_close(&t);
    batcher_free(&t.train_b);
    batcher_free(&t.valid_b);
    corpus_free(&t.train);
    corpus_free(&t.valid);
    bpe_subset_free(t.tgt_subset);
    parts_free(&t);
    model_free(&t.model);
    adam_free(&t.adam);
    free(t.ema);
    free(t.data_print);
    if (t.bpe) bpe_free(t.bpe);
    run_dir_close(&t.run);
    return st;
}
