/* average: parameter averaging of checkpoints (see average.h). */
#include <stdlib.h>
#include <string.h>

#include "model/average.h"

/* What the tensors' shapes do not show but the model's function depends on:
 * averaging such models gives a model of neither. NULL when they agree. */
static const char *config_difference(const ModelConfig *a, const ModelConfig *b)
{
    if (a->heads != b->heads) return "model.heads";
    if (a->norm != b->norm) return "model.norm";
    if (a->attention != b->attention) return "model.attention";
    if (a->output_vocab != b->output_vocab) return "model.output_vocab";
    if (a->max_len != b->max_len) return "data.max_len";
    return NULL;
}

static bool same_vocab(const Bpe *a, const Bpe *b)
{
    size_t la, lb;
    char *sa = bpe_serialize(a, &la), *sb = bpe_serialize(b, &lb);
    bool same = sa && sb && la == lb && memcmp(sa, sb, la) == 0;
    free(sa);
    free(sb);
    return same;
}

/* model.output_vocab "target": the same output pieces. */
static bool same_outputs(const Model *a, const Model *b)
{
    if (a->n_out != b->n_out) return false;
    return !a->out_ids || memcmp(a->out_ids, b->out_ids, sizeof(int) * (size_t)a->n_out) == 0;
}

static bool same_shapes(const Model *a, const Model *b)
{
    if (a->n_params != b->n_params || a->n_tensors != b->n_tensors) return false;
    for (int t = 0; t < a->n_tensors; t++)
        if (strcmp(a->tensors[t].name, b->tensors[t].name) != 0 ||
            a->tensors[t].rows != b->tensors[t].rows || a->tensors[t].cols != b->tensors[t].cols)
            return false;
    return true;
}

TfmStatus average_models(const char *const *paths, int n, ModelFile *out, TfmErr *err)
{
    memset(out, 0, sizeof *out);
    TfmStatus st = ckpt_load(paths[0], out, false, err);
    if (st != TFM_OK) return st;
    size_t np = out->model.n_params;
    /* sums in double: the mean of 20 float32 checkpoints loses no bits to
     * the order of the additions */
    double *sum = xcalloc(np, sizeof(double), err);
    if (!sum) { st = TFM_ERR_NOMEM; goto done; }
    for (size_t i = 0; i < np; i++) sum[i] = out->model.params[i];
    for (int k = 1; k < n; k++) {
        ModelFile other;
        if ((st = ckpt_load(paths[k], &other, false, err)) != TFM_OK) goto done;
        const char *differs = !same_shapes(&out->model, &other.model) ? "model shape"
                              : !same_vocab(out->bpe, other.bpe) ? "vocabulary"
                              : config_difference(&out->cfg.model, &other.cfg.model);
        if (!differs && !same_outputs(&out->model, &other.model)) differs = "output vocabulary";
        if (differs) {
            st = err_set(err, TFM_ERR_FORMAT, "%s: %s differs from %s's", paths[k], differs,
                         paths[0]);
            ckpt_free(&other);
            goto done;
        }
        for (size_t i = 0; i < np; i++) sum[i] += other.model.params[i];
        ckpt_free(&other);
    }
    for (size_t i = 0; i < np; i++) out->model.params[i] = (float)(sum[i] / n);
    /* a mean is no point of the run: no step, no optimizer state */
    out->has_train_state = out->has_step = false;
done:
    free(sum);
    if (st != TFM_OK) ckpt_free(out);
    return st;
}
