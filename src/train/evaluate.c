/* evaluate: validation during training — the loss on the validation set,
 * greedy-decoding BLEU (train.valid_bleu), keeping best.tfm, early-stopping
 * counts — and the end of a run: the moving average (train.ema) or the
 * checkpoint average (train.average_last), the summary, the hand-over. */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "dist/dist.h"
#include "text/bleu.h"
#include "model/average.h"
#include "train/run_dir.h"

static TfmStatus validate(Trainer *t, double *loss_out, TfmErr *err)
{
    double nll = 0;
    long tokens = 0;
    for (long i = 0; i < t->valid_b.n_batches; i++) {
        Batch b;
        LossStats ls;
        batcher_get(&t->valid_b, i, &b);
        TfmStatus st = model_forward(&t->model, &b, t->cfg->train.label_smoothing, NULL, &ls, err);
        if (st != TFM_OK) return st;
        nll += ls.nll;
        tokens += ls.n_tokens;
    }
    *loss_out = tokens ? nll / tokens : NAN;
    return TFM_OK;
}

enum { BLEU_BATCH = 64 };

/* Greedy translation of the validation set, scored with BLEU against the
 * references (the target side decoded back to text: BPE is lossless). */
static TfmStatus validate_bleu(Trainer *t, double *bleu_out, TfmErr *err)
{
    const Corpus *c = &t->valid;
    const DecodeConfig *dc = &t->cfg->decode;
    TfmStatus st = TFM_OK;
    if (!t->decoder && (st = decoder_init(&t->decoder, &t->model, BLEU_BATCH, 1, err)) != TFM_OK)
        return st;
    decoder_update_weights(t->decoder);     /* its packed weights are from the last validation */
    char **hyps = xcalloc((size_t)c->n_pairs + 1, sizeof(char *), err);
    char **refs = xcalloc((size_t)c->n_pairs + 1, sizeof(char *), err);
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (!hyps || !refs) { st = TFM_ERR_NOMEM; goto done; }
    DecodeOptions opt = {.beam = 1, .alpha = dc->alpha, .max_len_a = dc->max_len_a,
                         .max_len_b = dc->max_len_b, .nbest = 1};
    for (long lo = 0; lo < c->n_pairs; lo += BLEU_BATCH) {
        int n = (int)(c->n_pairs - lo < BLEU_BATCH ? c->n_pairs - lo : BLEU_BATCH);
        const int *sents[BLEU_BATCH];
        int lens[BLEU_BATCH];
        for (int i = 0; i < n; i++) {
            sents[i] = c->tokens + c->src_off[lo + i];
            lens[i] = c->src_len[lo + i];
        }
        Hypothesis hyp[BLEU_BATCH];
        if ((st = decoder_translate(t->decoder, sents, lens, n, &opt, hyp, err)) != TFM_OK) goto done;
        for (int i = 0; i < n; i++) {
            if ((st = bpe_decode(t->bpe, hyp[i].tokens, hyp[i].len, &text, &len, &cap, err)) ||
                !(hyps[lo + i] = xstrdup(text, NULL)) ||
                (st = bpe_decode(t->bpe, c->tokens + c->tgt_off[lo + i], c->tgt_len[lo + i],
                                 &text, &len, &cap, err)) ||
                !(refs[lo + i] = xstrdup(text, NULL))) {
                if (st == TFM_OK) st = err_set(err, TFM_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
    }
    BleuOptions bo;
    bleu_options_default(&bo);
    BleuScore score;
    const char *const *ref_set[1] = {(const char *const *)refs};
    if ((st = bleu_corpus(&bo, (const char *const *)hyps, (size_t)c->n_pairs, ref_set, 1, &score,
                          err)) == TFM_OK)
        *bleu_out = score.score;
done:
    for (long i = 0; hyps && refs && i < c->n_pairs; i++) {
        free(hyps[i]);
        free(refs[i]);
    }
    free(hyps);
    free(refs);
    free(text);
    return st;
}

TfmStatus eval_validate_and_log(Trainer *t, TfmErr *err)
{
    double loss;
    TfmStatus st = validate(t, &loss, err);
    if (st != TFM_OK) return st;
    t->ts.validated = true;
    trainer_mark_changed(t);
    ProgressEvent ev;
    trainer_fill_event(t, &ev);
    ev.valid_loss = loss;
    ev.valid_ppl = exp(loss);
    /* the best model: lowest loss, or highest BLEU (stored negated: lower is better) */
    double metric = loss;
    if (t->cfg->train.valid_bleu) {
        if ((st = validate_bleu(t, &ev.valid_bleu, err)) != TFM_OK) return st;
        metric = -ev.valid_bleu;
    }
    if ((st = progress_log(&t->prog, &ev, err)) != TFM_OK) return st;
    bool better = !t->ts.has_best || metric < t->ts.best_metric;
    if (t->cfg->train.valid_bleu)
        progress_note(&t->prog, "step %ld: valid nll %.4f ppl %.2f bleu %.2f%s", t->ts.step,
                      loss, exp(loss), ev.valid_bleu, better ? " (best)" : "");
    else
        progress_note(&t->prog, "step %ld: valid nll %.4f ppl %.2f%s", t->ts.step, loss,
                      exp(loss), better ? " (best)" : "");
    if (better) {
        t->ts.best_metric = metric;
        t->ts.has_best = true;
        t->ts.bad_validations = 0;
        TrainState ts = trainer_model_state(t);
        return ckpt_save(t->run.best_path, t->cfg, t->bpe, &t->model, NULL, NULL, &ts, err);
    }
    t->ts.bad_validations++;
    return TFM_OK;
}

/* Validates the weights now in t->model (the moving average, or the
 * average of `averaged` checkpoints), logs them in ev, and puts " bleu B"
 * (with train.valid_bleu) or "" in bleu for the note. */
static TfmStatus validate_final(Trainer *t, bool ema, int averaged, ProgressEvent *ev,
                                char bleu[32], TfmErr *err)
{
    trainer_fill_event(t, ev);
    ev->ema = ema;
    ev->averaged = averaged;
    TfmStatus st = validate(t, &ev->valid_loss, err);
    if (st != TFM_OK) return st;
    ev->valid_ppl = exp(ev->valid_loss);
    bleu[0] = '\0';
    if (t->cfg->train.valid_bleu) {
        if ((st = validate_bleu(t, &ev->valid_bleu, err)) != TFM_OK) return st;
        snprintf(bleu, 32, " bleu %.2f", ev->valid_bleu);
    }
    return progress_log(&t->prog, ev, err);
}

TfmStatus eval_ema(Trainer *t, TfmErr *err)
{
    memcpy(t->model.params, t->ema, sizeof(float) * t->model.n_params);
    TrainState ts = trainer_model_state(t);
    TfmStatus st = ckpt_save(t->run.ema_path, t->cfg, t->bpe, &t->model, NULL, NULL, &ts, err);
    if (st != TFM_OK) return st;
    ProgressEvent ev;
    char bleu[32];
    if ((st = validate_final(t, true, 0, &ev, bleu, err)) != TFM_OK) return st;
    progress_note(&t->prog, "moving average of the weights (train.ema %g): valid nll %.4f "
                  "ppl %.2f%s", (double)t->cfg->train.ema, ev.valid_loss, ev.valid_ppl, bleu);
    return TFM_OK;
}

TfmStatus eval_average_checkpoints(Trainer *t, TfmErr *err)
{
    const char *dir = t->cfg->train.out_dir;
    long steps[RUN_DIR_MAX_CHECKPOINTS];
    int n = run_dir_list_checkpoints(dir, steps);
    int k = n < t->cfg->train.average_last ? n : t->cfg->train.average_last;
    if (k == 0) return err_set(err, TFM_ERR_IO, "%s: no numbered checkpoints to average", dir);
    char **paths = xcalloc((size_t)k, sizeof(char *), err);
    TfmStatus st = paths ? TFM_OK : TFM_ERR_NOMEM;
    for (int i = 0; st == TFM_OK && i < k; i++) {
        if (!(paths[i] = run_dir_checkpoint_path(dir, steps[n - k + i], err))) st = TFM_ERR_NOMEM;
    }
    ModelFile avg;
    if (st == TFM_OK && (st = average_models((const char *const *)paths, k, &avg, err)) == TFM_OK) {
        memcpy(t->model.params, avg.model.params, sizeof(float) * t->model.n_params);
        st = ckpt_save(t->run.average_path, t->cfg, t->bpe, &avg.model, NULL, NULL, NULL, err);
        ckpt_free(&avg);
    }
    for (int i = 0; paths && i < k; i++) free(paths[i]);
    free(paths);
    if (st != TFM_OK) return st;

    ProgressEvent ev;
    char bleu[32];
    if ((st = validate_final(t, false, k, &ev, bleu, err)) != TFM_OK) return st;
    progress_note(&t->prog, "average of the last %d checkpoint%s (steps %ld-%ld): valid nll %.4f "
                  "ppl %.2f%s", k, k == 1 ? "" : "s", steps[n - k], steps[n - 1], ev.valid_loss,
                  ev.valid_ppl, bleu);
    return TFM_OK;
}

/* Which limit ended the run, for the summary. */
static const char *stop_reason(const Trainer *t, char *buf, size_t n)
{
    const TrainConfig *tc = &t->cfg->train;
    if (tc->max_steps > 0 && t->ts.step >= tc->max_steps)
        snprintf(buf, n, "train.max_steps (%ld) reached", tc->max_steps);
    else if (tc->max_epochs > 0 && t->ts.epoch >= tc->max_epochs)
        snprintf(buf, n, "train.max_epochs (%ld) reached", tc->max_epochs);
    else if (tc->patience > 0 && t->ts.bad_validations >= tc->patience)
        snprintf(buf, n, "no better validation in train.patience (%d) validations", tc->patience);
    else if (tc->max_time_s > 0 && trainer_elapsed(t) >= tc->max_time_s)
        snprintf(buf, n, "train.max_time_s (%g s) reached", tc->max_time_s);
    else
        snprintf(buf, n, "stopped");
    return buf;
}

/* The end of a run in a few lines: why it stopped, the best validation,
 * the time, where the model goes. */
static void summarize(Trainer *t)
{
    char why[128], best[160] = "no validation";
    const TrainConfig *tc = &t->cfg->train;
    if (t->ts.has_best) {
        ModelFile mf;
        TfmErr ignored = {0};
        long step = -1;
        if (ckpt_load(t->run.best_path, &mf, false, &ignored) == TFM_OK) {
            if (mf.has_step) step = mf.ts.step;
            ckpt_free(&mf);
        }
        if (tc->valid_bleu)
            snprintf(best, sizeof best, "best validation at step %ld: BLEU %.2f", step,
                     -t->ts.best_metric);
        else
            snprintf(best, sizeof best, "best validation at step %ld: nll %.4f ppl %.2f", step,
                     t->ts.best_metric, exp(t->ts.best_metric));
    }
    double s = trainer_elapsed(t);
    progress_note(&t->prog, "%s %s at step %ld (epoch %ld) after %ldh%02ldm%02lds of training",
                  t->changed ? "finished:" : "this run had already finished:",
                  stop_reason(t, why, sizeof why), t->ts.step, t->ts.epoch + 1, (long)s / 3600,
                  (long)s / 60 % 60, (long)s % 60);
    if (dist_size() > 1)
        progress_note(&t->prog, "data-parallel: %.1f s of this run's %.1f s in MPI sums, "
                      "broadcasts and exchanges of data (%.1f%%; waiting for the slowest rank "
                      "included)",
                      dist_comm_seconds(), clock_now_s() - t->run_start,
                      100 * dist_comm_seconds() / fmax(clock_now_s() - t->run_start, 1e-9));
    progress_note(&t->prog, "%s; model: %s -> %s", best,
                  tc->average_last > 0 ? "the average of the last checkpoints"
                  : t->ema && !t->ema_unaveraged ? "ema.tfm (the moving average of the weights)"
                                       : "best.tfm",
                  tc->model);
}

/* The end of a finished run, on rank 0: the last validation and save if
 * the last step had none, the model to hand over (best.tfm, ema.tfm, or the
 * average of the last checkpoints, made again only when they changed), the
 * summary, and the copy to train.model. */
TfmStatus eval_hand_over(Trainer *t, TfmErr *err)
{
    const TrainConfig *tc = &t->cfg->train;
    TfmStatus st;
    if (!t->ts.validated && (st = eval_validate_and_log(t, err)) != TFM_OK) return st;
    /* a rerun of a finished run only copies the model again */
    if (t->changed && (st = trainer_save_last(t, err)) != TFM_OK) return st;
    /* the model to hand over: best.tfm, ema.tfm, or the average of the
     * last checkpoints (made again only when they changed) */
    const char *final = t->run.best_path;
    if (t->ema && t->ema_unaveraged)
        progress_note(&t->prog, "train.ema: no step was averaged (%s had no moving average and "
                      "no steps were left to train), so there is no ema.tfm", t->run.last_path);
    else if (t->ema) {
        if ((t->changed || !run_dir_file_exists(t->run.ema_path)) && (st = eval_ema(t, err)) != TFM_OK)
            return st;
        final = t->run.ema_path;
    }
    if (tc->average_last > 0) {
        final = t->run.average_path;
        if ((t->changed || !run_dir_file_exists(final)) && (st = eval_average_checkpoints(t, err)) != TFM_OK)
            return st;
    }
    /* a signal during that validation or save: saved, so stop as promised;
     * the rerun copies the model */
    if (trainer_stop_signal(t)) {
        err->signo = trainer_stop_signal(t);
        return err_set(err, TFM_INTERRUPTED, "interrupted after the last step (%ld), which is "
                       "saved; run the same command to copy the model to %s", t->ts.step, tc->model);
    }
    summarize(t);
    if ((st = ckpt_copy(final, tc->model, err)) != TFM_OK &&
        access(final, F_OK) != 0 && errno == ENOENT)
        return err_set(err, st, "%s: missing: the %s model of this finished run is gone; "
                       "copy it back, or train again with --restart", final,
                       final == t->run.best_path ? "best" : final == t->run.ema_path
                                                                  ? "moving-average" : "averaged");
    return st;
}
