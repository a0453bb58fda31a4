/* train_memory: whether this machine can hold a training run, asked before
 * the big allocations by a fresh, a resumed and a fine-tuning run alike. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>

#include "base/sysmem.h"

/* Refuses a model and batch size this machine cannot train, before the big
 * allocations: `copies` float arrays of the parameters' size (params, grads,
 * Adam's m and v: 4; fewer when some are already held) plus the activation
 * workspace for the largest batch, and the threads' replicas. */
static TfmStatus check_memory(const Trainer *t, const ModelConfig *mc, int copies,
                              const char *at_least, TfmErr *err)
{
    size_t n = model_param_count(mc);
    double need = n ? (double)copies * n * sizeof(float) : INFINITY;
    need += model_work_bytes(mc, trainer_work_tokens(t->cfg, t->cfg->train.batch_tokens),
                             config_row_len(t->cfg->data.max_len));
    need += parts_extra_bytes(t->cfg, mc);     /* train.parallel "sentences": the replicas */
    if (t->cfg->train.weight_decay_scope == WD_SCOPE_MATRICES)
        need += (double)n;                     /* Adam's byte a parameter: spared from decay */
    char what[128];
    snprintf(what, sizeof what, "training this model (%s%.0f parameters, batches of %d tokens)",
             at_least, (double)n, t->cfg->train.batch_tokens);
    return sysmem_check(need, what, "lower model.d_model, model.d_ff, the layers, "
                        "data.vocab_size or train.batch_tokens", err);
}

TfmStatus trainer_check_memory(const Trainer *t, const ModelConfig *mc, int copies, TfmErr *err)
{
    return check_memory(t, mc, copies, "", err);
}

TfmStatus trainer_check_memory_any_vocab(const Trainer *t, const ModelConfig *mc, int copies,
                                         TfmErr *err)
{
    ModelConfig least = *mc;
    least.vocab_size = BPE_MIN_VOCAB;
    return check_memory(t, &least, copies, "at least ", err);
}
