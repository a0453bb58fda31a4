/* train_data: the training data of a run, in chunks of data.shuffle_buffer
 * pairs. Each chunk is read (pair_stream.c), encoded, shuffled and batched
 * by length within itself (corpus.c); an epoch is its chunks in order. When
 * the whole epoch fits in one chunk (and no weights mix the corpora) it is
 * read once and kept: "resident", training exactly as before chunks
 * existed. Chunk k of an epoch is a function of the files, the seed, the
 * epoch and k, so a checkpoint's (epoch, chunk, batch) is all a resumed run
 * needs: it reads its way back to the chunk's first pair. Chunk 0 batches
 * and shuffles as the resident corpus does, so a corpus that fits trains
 * the same whatever the buffer. While a chunk trains, the next is read on
 * a thread of its own (the prefetch), so reading costs the training little.
 * The validation set is read whole (by rank 0 alone under mpirun).
 *
 * Under mpirun every rank reads through every chunk but encodes only its
 * part of the lines (1/R, on the prefetch thread as above); the chunk's
 * lengths are gathered by all ranks (on the main thread, which alone calls
 * MPI: when a chunk is taken, and after BPE-dropout encodes it again), so
 * each plans the global batches one process plans; and after each plan a
 * rank fetches the ids of its sentences of them from the ranks that
 * encoded them (shard.h). A rank holds about 2/R of a chunk's ids when it
 * is kept for the next epochs, 1/R (plus the next chunk's) otherwise. */
#include "train/trainer.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "dist/dist.h"
#include "text/bpe_cache.h"
#include "text/line_sample.h"

/* Says why: the keys that skipped the pairs are what the user can change. */
static TfmStatus no_usable_pairs(const Corpus *c, const Batcher *b, const TfmConfig *cfg,
                                 const char *what, const char *path, TfmErr *err)
{
    return err_set(err, TFM_ERR_FORMAT, "%s: no usable %s pairs (%ld line%s: %ld empty, %ld over "
                   "data.max_len %d tokens, %ld over train.batch_tokens %d)", path, what,
                   c->n_lines, text_plural(c->n_lines), c->skipped_empty, c->skipped_long,
                   cfg->data.max_len, b->skipped_budget, cfg->train.batch_tokens);
}

/* The subset the targets are spelled in: the model's output pieces. */
static TfmStatus make_target_subset(Trainer *t, TfmErr *err)
{
    const Model *m = &t->model;
    bool *in = xcalloc((size_t)m->cfg.vocab_size, sizeof(bool), err);
    if (!in) return TFM_ERR_NOMEM;
    for (int i = 0; i < m->n_out; i++) in[m->out_ids[i]] = true;
    TfmStatus st = bpe_subset_new(&t->tgt_subset, t->bpe, in, err);
    free(in);
    return st;
}

/* Marks the pieces of a target line (line_sample's callback). */
typedef struct { const Bpe *bpe; BpeCache *cache; bool *in; int *ids, n, cap; } TargetPieces;

static TfmStatus mark_pieces(void *ctx, int file, const char *line, size_t len, TfmErr *err)
{
    (void)file;
    TargetPieces *tp = ctx;
    if (bpe_encode_cached(tp->bpe, tp->cache, line, len, &tp->ids, &tp->n, &tp->cap, err) != TFM_OK)
        return err->status;
    for (int j = 0; j < tp->n; j++) tp->in[tp->ids[j]] = true;
    return TFM_OK;
}

/* The pieces a job's ranks marked: all ranks' (each marked those of its
 * part), or rank 0's (it read the sample). Collective; agreed. */
static TfmStatus share_pieces(bool *in, int V, bool all, TfmErr *err)
{
    if (!all) {
        dist_broadcast(in, (size_t)V * sizeof *in);
        return TFM_OK;
    }
    long *x = xmalloc((size_t)V * sizeof *x, err);
    TfmStatus st = dp_agree(x ? TFM_OK : TFM_ERR_NOMEM, err);
    if (st == TFM_OK) {
        for (int id = 0; id < V; id++) x[id] = in[id];
        dist_max_longs(x, V);
        for (int id = 0; id < V; id++) in[id] = x[id] != 0;
    }
    free(x);
    return st;
}

/* model.output_vocab "target" on a fresh start: the output pieces are the
 * pieces every text needs (bpe_subset_mark_writable), and those the training targets use: all of
 * them when the corpus is read once and kept (the targets of the pairs
 * kept), else those of a sample of data.bpe_sample lines of the target
 * files (line_sample.h; every line with 0), so that no chunk decides
 * alone. */
static TfmStatus choose_output_vocab(Trainer *t, TfmErr *err)
{
    const int V = t->model.cfg.vocab_size;
    const Corpus *c = &t->train;
    const DataConfig *d = &t->cfg->data;
    bool *in = xcalloc((size_t)V, sizeof(bool), err);
    int *ids = xmalloc(sizeof(int) * (size_t)V, err);
    TfmStatus st = TFM_ERR_NOMEM;
    LineSampleStats got = {0};
    if (in && ids) {
        st = TFM_OK;
        bpe_subset_mark_writable(t->bpe, in);
        if (t->chunks.resident) {
            /* a job's ranks: each has the ids of its part */
            const Corpus *e = t->parts > 1 ? &t->shard.own : c;
            for (long i = 0; i < e->n_pairs; i++)
                for (int j = 0; j < e->tgt_len[i]; j++) in[e->tokens[e->tgt_off[i] + j]] = true;
        } else if (t->part == 0) {    /* a job's rank 0 reads the sample for all */
            TargetPieces tp = {t->bpe, bpe_cache_new(1 << 16, err), in, NULL, 0, 0};
            st = tp.cache ? line_sample_read((const char *const *)d->train_tgt.v, d->train_tgt.n,
                                             d->bpe_sample, mark_pieces, &tp, &got, err)
                          : TFM_ERR_NOMEM;
            bpe_cache_free(tp.cache);
            free(tp.ids);
        }
    }
    if (t->parts > 1 && (st = dp_agree(st, err)) == TFM_OK)
        st = share_pieces(in, V, t->chunks.resident, err);
    if (st == TFM_OK) {
        int n = 0;
        for (int id = 0; id < V; id++)
            if (in[id]) ids[n++] = id;
        st = model_set_output_vocab(&t->model, ids, n, err);
        if (st == TFM_OK && t->chunks.resident)
            progress_note(&t->prog, "model.output_vocab \"target\": the output layer scores %d "
                          "of the %d pieces", n, V);
        else if (st == TFM_OK)
            progress_note(&t->prog, "model.output_vocab \"target\": the output layer scores %d "
                          "of the %d pieces (those of %ld target line%s of data.bpe_sample)", n,
                          V, got.read, text_plural(got.read));
    }
    free(in);
    free(ids);
    return st;
}

/* "29 kB", "226.6 MB". */
static void say_bytes(char *buf, size_t size, size_t bytes)
{
    const double b = (double)bytes;
    snprintf(buf, size, "%.*f %s", b < 1e6 ? 0 : 1, b < 1e6 ? b / 1e3 : b / 1e6, b < 1e6 ? "kB" : "MB");
}

/* The batching seed of chunk k: chunk 0's is the run's. */
static uint64_t chunk_seed(const Trainer *t, long k)
{
    return t->cfg->train.seed ^ ((uint64_t)k * 0xc2b2ae3d27d4eb4fULL);
}

/* Reads chunk `chunk` of `epoch` into c from t->chunks.stream, which goes on from
 * where it is when that is the chunk's start, else reads its way there from
 * the epoch's; *last: it is the epoch's last chunk. */
static TfmStatus read_chunk(Trainer *t, Corpus *c, long epoch, long chunk, int threads,
                            const atomic_bool *cancel, bool *last, TfmErr *err)
{
    const TfmConfig *cfg = t->cfg;
    const DataConfig *d = &cfg->data;
    const long B = d->shuffle_buffer;
    TfmStatus st;
    memset(c, 0, sizeof *c);
    if (!t->chunks.stream_open || t->chunks.stream_epoch != epoch || t->chunks.stream.pairs != chunk * B) {
        if (t->chunks.stream_open) pair_stream_close(&t->chunks.stream);
        t->chunks.stream_open = false;
        if ((st = pair_stream_open(&t->chunks.stream, (const char *const *)d->train_src.v,
                                   (const char *const *)d->train_tgt.v, d->train_src.n,
                                   d->train_weights.n ? d->train_weights.v : NULL,
                                   cfg->train.seed, epoch, err)) != TFM_OK)
            return st;
        t->chunks.stream_open = true;
        t->chunks.stream_epoch = epoch;
        if (pair_stream_skip(&t->chunks.stream, chunk * B, err) < 0) return err->status;
    }
    if ((st = corpus_load_chunk(c, &t->chunks.stream, B, t->bpe, t->tgt_subset, d->max_len,
                                d->bpe_dropout > 0, t->part, t->parts, threads, cancel, err)) !=
        TFM_OK)
        return st;
    *last = t->chunks.stream.ended;
    return TFM_OK;
}

/* The next chunk, read on a thread of its own while the current one trains
 * (one thread: the run's threads are training). Only that thread touches
 * t->chunks.stream until it is joined. */
struct Prefetch {
    pthread_t thread;
    Trainer *t;
    long epoch, chunk;
    Corpus c;
    bool last;
    TfmStatus st;
    TfmErr err;
    atomic_bool cancel;
};

static void *prefetch_main(void *arg)
{
    struct Prefetch *p = arg;
    p->st = read_chunk(p->t, &p->c, p->epoch, p->chunk, 1, &p->cancel, &p->last, &p->err);
    return NULL;
}

/* Waits for the prefetch (cancelled first when `cancel`) and hands it over. */
static struct Prefetch *prefetch_join(Trainer *t, bool cancel)
{
    struct Prefetch *p = t->chunks.prefetch;
    if (!p) return NULL;
    if (cancel) atomic_store(&p->cancel, true);
    pthread_join(p->thread, NULL);
    t->chunks.prefetch = NULL;
    return p;
}

static void prefetch_free(struct Prefetch *p)
{
    if (!p) return;
    corpus_free(&p->c);
    free(p);
}

/* Starts reading the chunk after the loaded one (the next epoch's first
 * after the last); without a thread the chunk is read when needed. */
static void prefetch_start(Trainer *t)
{
    if (t->chunks.resident || t->chunks.prefetch) return;
    TfmErr err = {0};
    struct Prefetch *p = xcalloc(1, sizeof *p, &err);
    if (!p) return;
    p->t = t;
    p->epoch = t->chunks.last_chunk ? t->chunks.loaded_epoch + 1 : t->chunks.loaded_epoch;
    p->chunk = t->chunks.last_chunk ? 0 : t->chunks.loaded_chunk + 1;
    atomic_init(&p->cancel, false);
    if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) {
        free(p);
        return;
    }
    t->chunks.prefetch = p;
}

/* Makes chunk `chunk` of `epoch` t->train and prepares its batcher (planned
 * by data_ready): the prefetched one when it is that chunk, else read now
 * with all the run's threads. In a job, collective (agreed). */
static TfmStatus load_chunk(Trainer *t, long epoch, long chunk, TfmErr *err)
{
    struct Prefetch *p = prefetch_join(t, false);
    bool take = p && p->epoch == epoch && p->chunk == chunk;
    batcher_free(&t->train_b);
    corpus_free(&t->train);
    shard_free(&t->shard);
    t->chunks.loaded_epoch = t->chunks.loaded_chunk = -1;
    TfmStatus st;
    bool last = false;
    Corpus c;
    if (take) {
        /* its error is this chunk's: met when the training got there */
        if ((st = p->st) != TFM_OK) *err = p->err;
        c = p->c;
        last = p->last;
        memset(&p->c, 0, sizeof p->c);
    } else {
        st = read_chunk(t, &c, epoch, chunk, omp_get_max_threads(), NULL, &last, err);
    }
    prefetch_free(p);
    if (t->parts == 1) {
        t->train = c;
    } else {
        /* every rank read its part; the lengths of all, gathered */
        if ((st = dp_agree(st, err)) == TFM_OK)
            st = shard_gather(&t->shard, &c, &t->train, t->cfg->data.max_len, err);
        corpus_free(&c);
    }
    if (st == TFM_OK)
        st = batcher_init(&t->train_b, &t->train, t->cfg->train.batch_tokens, chunk_seed(t, chunk),
                          true, err);
    if ((st = dp_agree(st, err)) != TFM_OK) return st;
    t->chunks.loaded_epoch = epoch;
    t->chunks.loaded_chunk = chunk;
    t->chunks.last_chunk = last;
    return TFM_OK;
}

TfmStatus data_load(Trainer *t, TfmErr *err)
{
    const TfmConfig *cfg = t->cfg;
    const DataConfig *d = &cfg->data;
    const bool restrict_out = cfg->model.output_vocab == OUTPUT_TARGET;
    TfmStatus st;
    t->chunks.loaded_epoch = t->chunks.loaded_chunk = t->chunks.stream_epoch = -1;
    t->part = dist_rank();
    t->parts = dist_size();
    /* a resumed or fine-tuned model has its output pieces already (in a
     * job, each step is agreed: the next has collectives) */
    if (restrict_out && t->model.out_ids && (st = dp_agree(make_target_subset(t, err), err)) != TFM_OK)
        return st;
    if ((st = load_chunk(t, t->ts.epoch, t->ts.chunk, err)) != TFM_OK) return st;
    /* the whole epoch in one chunk, the same every epoch: kept */
    t->chunks.resident = t->ts.chunk == 0 && t->chunks.last_chunk && (d->train_src.n == 1 || !d->train_weights.n);
    if (t->chunks.resident) {
        pair_stream_close(&t->chunks.stream);
        t->chunks.stream_open = false;
    }
    if (restrict_out && !t->model.out_ids) {
        if ((st = dp_agree(choose_output_vocab(t, err), err)) != TFM_OK ||
            (st = dp_agree(make_target_subset(t, err), err)) != TFM_OK)
            return st;
        /* from a sample: the chunk read again, its targets in the output pieces */
        if (!t->chunks.resident && (st = load_chunk(t, t->ts.epoch, t->ts.chunk, err)) != TFM_OK)
            return st;
    }
    /* rank 0 alone validates */
    if (t->part == 0 &&
        ((st = corpus_load(&t->valid, d->valid_src, d->valid_tgt, t->bpe, t->tgt_subset,
                           d->max_len, false, err)) != TFM_OK ||
         (st = batcher_init(&t->valid_b, &t->valid, cfg->train.batch_tokens, cfg->train.seed,
                            false, err)) != TFM_OK))
        return st;
    if (t->chunks.resident)
        progress_note(&t->prog, "train: %ld pair%s of %ld line%s (%ld empty, %ld over %d tokens, "
                      "%ld over batch_tokens skipped); valid: %ld pair%s", t->train.n_pairs,
                      text_plural(t->train.n_pairs), t->train.n_lines, text_plural(t->train.n_lines),
                      t->train.skipped_empty, t->train.skipped_long, d->max_len,
                      t->train_b.skipped_budget, t->valid.n_pairs, text_plural(t->valid.n_pairs));
    else {
        /* a chunk's own memory: what data.shuffle_buffer costs, twice */
        char size[32];
        say_bytes(size, sizeof size, corpus_bytes(&t->train) + batcher_bytes(&t->train_b) +
                                         shard_bytes(&t->shard));
        progress_note(&t->prog, "train: read in chunks of %ld pair%s (data.shuffle_buffer); "
                      "chunk %ld of epoch %ld: %ld pair%s of %ld line%s, %s encoded and "
                      "batched (two chunks while the next is read); valid: %ld pair%s",
                      d->shuffle_buffer, text_plural(d->shuffle_buffer), t->ts.chunk + 1,
                      t->ts.epoch + 1, t->train.n_pairs, text_plural(t->train.n_pairs),
                      t->train.n_lines, text_plural(t->train.n_lines), size,
                      t->valid.n_pairs, text_plural(t->valid.n_pairs));
    }
    if (t->train.n_pairs - t->train_b.skipped_budget <= 0 && t->chunks.last_chunk && t->ts.chunk == 0)
        return no_usable_pairs(&t->train, &t->train_b, cfg, "training", d->train_src.v[0], err);
    if (t->part > 0) {
        t->chunks.prefetch_after = t->ts.step;
        return TFM_OK;
    }
    if (t->valid.n_pairs - t->valid_b.skipped_budget <= 0)
        return no_usable_pairs(&t->valid, &t->valid_b, cfg, "validation", d->valid_src, err);
    batcher_plan_epoch(&t->valid_b, 0);
    t->chunks.prefetch_after = t->ts.step;
    return TFM_OK;
}

/* BPE-dropout (data.bpe_dropout): each epoch (and chunk) trains on its own
 * random segmentation of the training text, a function of the seed, the
 * epoch and the chunk, so a resumed run sees the same one. */
static TfmStatus resegment(Trainer *t, TfmErr *err)
{
    const TfmConfig *cfg = t->cfg;
    if (cfg->data.bpe_dropout <= 0) return TFM_OK;
    uint64_t seed = cfg->train.seed ^ (0xb9e5d7ULL + (uint64_t)t->ts.epoch * 0xd1b54a32d192ed69ULL) ^
                    ((uint64_t)t->ts.chunk * 0x94d049bb133111ebULL);
    if (t->parts == 1)
        return corpus_resegment(&t->train, t->bpe, t->tgt_subset, cfg->data.bpe_dropout, seed,
                                NULL, cfg->data.max_len, err);
    /* a job: each rank its part (seeded by the pairs' places in the chunk),
     * then the new lengths to all */
    TfmStatus st = corpus_resegment(&t->shard.own, t->bpe, t->tgt_subset, cfg->data.bpe_dropout,
                                    seed, t->shard.own_index, cfg->data.max_len, err);
    if ((st = dp_agree(st, err)) != TFM_OK) return st;
    return shard_regather(&t->shard, &t->train, err);
}

/* A job, after an epoch of the chunk is planned: each rank fetches the ids
 * of its sentences of the batches; the first time, what a rank holds is
 * said (the most any rank holds). Collective (agreed). */
static TfmStatus fetch_shares(Trainer *t, TfmErr *err)
{
    TfmStatus st = shard_fetch(&t->shard, &t->train_b, t->chunks.resident, err);
    if (st != TFM_OK) return st;
    long most[3] = {t->shard.encoded, t->shard.n_rows, (long)shard_bytes(&t->shard)};
    /* a chunk that is not kept is planned once */
    if (!t->chunks.resident) shard_drop_own(&t->shard);
    if (t->shard_noted) return TFM_OK;
    t->shard_noted = true;
    dist_max_longs(most, 3);
    char size[32];
    say_bytes(size, sizeof size, (size_t)most[2]);
    progress_note(&t->prog, "data-parallel: each rank encoded at most %ld of the chunk's %ld "
                  "line%s and fetched the ids of at most %ld of its %ld pair%s, those it trains "
                  "on (at most %s with those it encoded%s)", most[0], t->train.n_lines,
                  text_plural(t->train.n_lines), most[1], t->train.n_pairs,
                  text_plural(t->train.n_pairs), size,
                  t->cfg->data.bpe_dropout > 0 ? " and their text" : "");
    return TFM_OK;
}

int data_ready(Trainer *t, TfmErr *err)
{
    TrainState *ts = &t->ts;
    /* the first step after the start has the cores to itself; the next
     * chunk is read from the second on */
    if (ts->step > t->chunks.prefetch_after) prefetch_start(t);
    for (;;) {
        if (!t->chunks.resident && (t->chunks.loaded_epoch != ts->epoch || t->chunks.loaded_chunk != ts->chunk)) {
            if (load_chunk(t, ts->epoch, ts->chunk, err) != TFM_OK) return -1;
            prefetch_start(t);
        }
        if (t->train_b.epoch != ts->epoch) {
            if (resegment(t, err) != TFM_OK) return -1;
            batcher_plan_epoch(&t->train_b, ts->epoch);
            if (t->parts > 1 && fetch_shares(t, err) != TFM_OK) return -1;
        }
        if (ts->batch_in_epoch < t->train_b.n_batches) return 0;
        ts->batch_in_epoch = 0;
        if (t->chunks.resident || t->chunks.last_chunk) {
            ts->epoch++;
            ts->chunk = 0;
            return 1;
        }
        ts->chunk++;
    }
}

long data_batch(Trainer *t, Batch *mine)
{
    if (t->parts > 1) return shard_batch(&t->shard, &t->train_b, t->ts.batch_in_epoch, mine);
    batcher_get(&t->train_b, t->ts.batch_in_epoch, mine);
    return batch_real_tokens(mine);
}

void data_close(Trainer *t)
{
    shard_free(&t->shard);
    prefetch_free(prefetch_join(t, true));
    if (t->chunks.stream_open) pair_stream_close(&t->chunks.stream);
    t->chunks.stream_open = false;
}
