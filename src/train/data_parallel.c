/* data_parallel: what `mpirun -np N tfm train` adds to a run (dist/dist.h).
 * Rank 0 owns the run: out_dir, checkpoints, log.jsonl, progress,
 * validation. At the start it sends every rank the vocabulary, the weights,
 * Adam's state and the training state; then every rank cuts the same global
 * batch, trains on its share of the sentences, and the gradients are summed,
 * so the ranks apply the same update and stay identical. With one rank every
 * function here is the single-process code path. */
#include "train/trainer.h"

#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"
#include "dist/dist.h"

void batch_share(const Batch *b, int part, int parts, Batch *out)
{
    *out = *b;
    if (parts == 1) return;
    int lo, hi;
    batch_share_rows(b->n, part, parts, &lo, &hi);
    out->n = hi - lo;
    out->src = b->src + (size_t)lo * b->src_len;
    out->tgt_in = b->tgt_in + (size_t)lo * b->tgt_len;
    out->tgt_out = b->tgt_out + (size_t)lo * b->tgt_len;
    /* every share's loss is divided by the whole batch's target count */
    out->loss_tokens = b->loss_tokens ? b->loss_tokens : batch_targets(b);
}

TfmStatus dp_agree(TfmStatus st, TfmErr *err)
{
    if (dist_size() == 1) return st;
    /* any rank failed; every rank failed (the max of -failed is -min) */
    long failed[2] = {st != TFM_OK, -(long)(st != TFM_OK)};
    dist_max_longs(failed, 2);
    if (!failed[0]) return TFM_OK;
    err->collective = true;
    /* the same error on every rank (a pair of files ending early, which
     * every rank reads): said once */
    if (failed[1] == -1 && dist_rank() > 0) err->quiet = true;
    if (st != TFM_OK) return st;            /* this rank failed: it says why */
    err->quiet = true;
    return err_set(err, TFM_ERR_IO, "another rank failed");
}

/* The other ranks build the vocabulary, model and optimizer that rank 0
 * loaded or initialized, from what it sends. */
static TfmStatus receive_start(Trainer *t, const char *vocab, size_t len, TfmErr *err)
{
    TfmStatus st = bpe_deserialize(&t->bpe, vocab, len, "the vocabulary from rank 0", err);
    if (st != TFM_OK) return st;
    ModelConfig mc = t->cfg->model;
    mc.vocab_size = bpe_vocab_size(t->bpe);
    mc.max_len = config_positions(t->cfg->data.max_len);
    if ((st = model_init(&t->model, &mc, err)) != TFM_OK) return st;
    const AdamConfig ac = config_adam(&t->cfg->train);
    return adam_init(&t->adam, t->model.n_params, &ac, err);
}

TfmStatus dp_share_start(Trainer *t, TfmStatus st, TfmErr *err)
{
    if (dist_size() == 1) return st;
    const bool lead = dist_rank() == 0;
    long failed = st != TFM_OK;
    dist_broadcast(&failed, sizeof failed);
    if (failed) {
        err->collective = true;
        if (lead) return st;
        err->quiet = true;
        return err_set(err, TFM_ERR_IO, "rank 0 failed");
    }
    size_t len = 0;
    char *vocab = lead ? bpe_serialize(t->bpe, &len) : NULL;
    if (lead && !vocab) return err_set(err, TFM_ERR_NOMEM, "out of memory");
    dist_broadcast(&len, sizeof len);
    if (!lead && !(vocab = xmalloc(len, err))) return TFM_ERR_NOMEM;
    dist_broadcast(vocab, len);
    /* an error past this point is this rank's own: the job is aborted */
    if (!lead && (st = receive_start(t, vocab, len, err)) != TFM_OK) {
        free(vocab);
        return st;
    }
    free(vocab);
    size_t n = t->model.n_params;
    dist_broadcast(t->model.params, n * sizeof(float));
    dist_broadcast(t->adam.m, n * sizeof(float));
    dist_broadcast(t->adam.v, n * sizeof(float));
    dist_broadcast(&t->adam.step, sizeof t->adam.step);
    dist_broadcast(&t->ts, sizeof t->ts);
    return TFM_OK;
}

bool dp_weights_agree(const Trainer *t)
{
    if (dist_size() == 1) return true;
    /* FNV-1a of the weights' bytes; one max of (h, -h) gives every rank the
     * largest and the smallest hash */
    const uint64_t h = fnv1a64(FNV1A64_START, t->model.params, t->model.n_params * sizeof(float));
    long x[2] = {(long)(h >> 2), -(long)(h >> 2)};
    dist_max_longs(x, 2);
    return x[0] == -x[1];
}
