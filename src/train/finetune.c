/* finetune: train.init, a run that starts from a trained model. The model
 * brings its weights, its vocabulary, its output pieces and its
 * architecture (train_adopt_init makes the config say so); the run brings a
 * fresh optimizer, step 0, its own schedule, data and dropouts. */
#include "train/trainer.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

TfmStatus train_adopt_init(TfmConfig *cfg, TfmErr *err)
{
    if (!cfg->train.init) return TFM_OK;
    ModelFile mf;
    TfmStatus st = ckpt_load(cfg->train.init, &mf, false, err);
    if (st != TFM_OK) {
        err_prefix(err, "train.init: ");
        return st;
    }
    st = config_adopt_model(cfg, &mf.cfg, cfg->train.init, err);
    ckpt_free(&mf);
    return st;
}

/* data.vocab, when given, must be the model's vocabulary, byte for byte. */
static TfmStatus check_vocab(Trainer *t, const Bpe *model_bpe, TfmErr *err)
{
    const DataConfig *d = &t->cfg->data;
    if (!d->vocab) {
        if (d->vocab_size != bpe_vocab_size(model_bpe))
            progress_note(&t->prog, "train.init: the vocabulary is the model's (%d pieces); "
                          "data.vocab_size %d is not used", bpe_vocab_size(model_bpe),
                          d->vocab_size);
        return TFM_OK;
    }
    Bpe *given = NULL;
    TfmStatus st = bpe_load(&given, d->vocab, err);
    if (st != TFM_OK) return st;
    size_t n1 = 0, n2 = 0;
    char *a = bpe_serialize(given, &n1), *b = bpe_serialize(model_bpe, &n2);
    if (!a || !b) st = err_set(err, TFM_ERR_NOMEM, "out of memory");
    else if (n1 != n2 || memcmp(a, b, n1) != 0)
        st = err_set(err, TFM_ERR_CONFIG, "data.vocab: %s is not the vocabulary of the model of "
                     "train.init %s (a fine-tuned model keeps its own: leave data.vocab out)",
                     d->vocab, t->cfg->train.init);
    free(a);
    free(b);
    bpe_free(given);
    return st;
}

TfmStatus finetune_start(Trainer *t, TfmErr *err)
{
    const TfmConfig *cfg = t->cfg;
    ModelFile mf;
    TfmStatus st = ckpt_load(cfg->train.init, &mf, false, err);
    if (st != TFM_OK) {
        err_prefix(err, "train.init: ");
        return st;
    }
    if ((st = check_vocab(t, mf.bpe, err)) != TFM_OK) goto done;
    t->bpe = mf.bpe;
    mf.bpe = NULL;
    /* the run's config holds the model's architecture (train_adopt_init)
     * and the run's dropouts */
    ModelConfig mc = cfg->model;
    mc.vocab_size = bpe_vocab_size(t->bpe);
    mc.max_len = config_positions(cfg->data.max_len);
    if ((st = trainer_check_memory(t, &mc, 4 + (cfg->train.ema > 0), err)) != TFM_OK) goto done;
    if ((st = model_init(&t->model, &mc, err)) != TFM_OK) goto done;
    if (t->model.n_params != mf.model.n_params) {
        st = err_set(err, TFM_ERR_CONFIG, "train.init: %s has %zu parameters, the config's "
                     "model %zu", cfg->train.init, mf.model.n_params, t->model.n_params);
        goto done;
    }
    memcpy(t->model.params, mf.model.params, sizeof(float) * t->model.n_params);
    /* model.output_vocab "target": the model's output pieces stay; targets
     * of the new data that use other pieces are spelled in these (load_data) */
    if (mf.model.out_ids &&
        (st = model_set_output_vocab(&t->model, mf.model.out_ids, mf.model.n_out, err)) != TFM_OK)
        goto done;
    const AdamConfig ac = config_adam(&cfg->train);
    if ((st = adam_init(&t->adam, t->model.n_params, &ac, err)) != TFM_OK) goto done;
    memset(&t->ts, 0, sizeof t->ts);
    rng_seed(&t->ts.dropout_rng, cfg->train.seed ^ 0xd209u);
    t->ts.init_sum = mf.checksum;
    if ((st = trainer_start_ema(t, NULL, err)) != TFM_OK) goto done;
    progress_note(&t->prog, "train.init: starting from %s (step %ld of its run; checksum "
                  "%016llx)", cfg->train.init, mf.has_step ? mf.ts.step : 0L,
                  (unsigned long long)mf.checksum);
    st = progress_log_init(&t->prog, cfg->train.init, mf.checksum, err);
done:
    ckpt_free(&mf);
    return st;
}
