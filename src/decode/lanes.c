/* lanes: see lanes.h. The second lane is a thread of its own (a pthread,
 * not an OpenMP team: inside a team every region of the decoder would be a
 * nested one, which costs libgomp a team allocation each time), made with
 * the lanes and woken for each split batch. */
#include "decode/lanes.h"
#include "decode/step.h"

#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { IDLE, WORK, DONE, QUIT };

struct DecodeLanes {
    Decoder *dec;                   /* the second lane's decoder */
    int cap, max_beam;              /* sentences a lane takes; beam at most */
    /* each lane's part of the batch, [0] the caller's decoder's */
    const int **sents[2];
    int *lens[2];
    long *ids[2];                   /* sampling's sentence numbers */
    Hypothesis *hyps[2];            /* (cap · max_beam) */
    /* the second lane's job, under mu */
    pthread_t thread;
    bool running;                   /* the thread was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    int n;
    DecodeOptions opt;
    TfmStatus st;
    TfmErr err;
};

static void *second_lane(void *arg)
{
    DecodeLanes *l = arg;
    omp_set_num_threads(1);         /* a lane is one thread (lanes_translate) */
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (l->state == IDLE || l->state == DONE) pthread_cond_wait(&l->cv, &l->mu);
        if (l->state == QUIT) break;
        pthread_mutex_unlock(&l->mu);
        TfmErr err = {0};
        const TfmStatus st = decoder_translate(l->dec, l->sents[1], l->lens[1], l->n, &l->opt,
                                               l->hyps[1], &err);
        pthread_mutex_lock(&l->mu);
        l->st = st;
        l->err = err;
        l->state = DONE;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

bool lanes_fit(const Model *m)
{
    return dec_step_packed_bytes(m) <= LANES_MAX_PACKED;
}

TfmStatus lanes_new(DecodeLanes **out, const Model *m, const Shortlist *sl, int max_sents,
                    int max_beam, TfmErr *err)
{
    *out = NULL;
    DecodeLanes *l = xcalloc(1, sizeof *l, err);
    if (!l) return TFM_ERR_NOMEM;
    l->cap = max_sents - max_sents / 2;
    l->max_beam = max_beam;
    TfmStatus st = decoder_init(&l->dec, m, l->cap, max_beam, err);
    if (st == TFM_OK && sl) st = decoder_set_shortlist(l->dec, sl, err);
    for (int k = 0; k < 2 && st == TFM_OK; k++) {
        l->sents[k] = xcalloc((size_t)l->cap, sizeof *l->sents[k], err);
        l->lens[k] = xcalloc((size_t)l->cap, sizeof *l->lens[k], err);
        l->ids[k] = xcalloc((size_t)l->cap, sizeof *l->ids[k], err);
        l->hyps[k] = xcalloc((size_t)l->cap * (size_t)max_beam, sizeof *l->hyps[k], err);
        if (!l->sents[k] || !l->lens[k] || !l->ids[k] || !l->hyps[k]) st = TFM_ERR_NOMEM;
    }
    if (st != TFM_OK) {
        lanes_free(l);
        return st;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->state = IDLE;
    if (pthread_create(&l->thread, NULL, second_lane, l) != 0) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        lanes_free(l);
        return err_set(err, TFM_ERR_NOMEM, "decoder: cannot start a second thread");
    }
    l->running = true;
    *out = l;
    return TFM_OK;
}

TfmStatus lanes_translate(DecodeLanes *l, Decoder *d, const int *const *sents, const int *lens,
                          int n, const DecodeOptions *opt, Hypothesis *out, TfmErr *err)
{
    /* two threads only: a lane is then one thread, whose OpenBLAS calls (the
     * encoder's attention) are single-threaded; two lanes of several
     * threads would each enter OpenBLAS's parallel section at once, which
     * its OpenMP build does not promise to allow (not tried) */
    const int threads = omp_get_max_threads();
    if (!l || n < LANES_MIN_SENTS || threads != 2 || omp_in_parallel() || n > 2 * l->cap ||
        opt->beam > l->max_beam)
        return decoder_translate(d, sents, lens, n, opt, out, err);
    /* every other sentence: lengths and output lengths even out between
     * the lanes whatever order the batch is in */
    int m[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        const int k = i & 1;
        l->sents[k][m[k]] = sents[i];
        l->lens[k][m[k]] = lens[i];
        if (opt->sentence_ids) l->ids[k][m[k]] = opt->sentence_ids[i];
        m[k]++;
    }
    DecodeOptions mine = *opt;
    if (opt->sentence_ids) mine.sentence_ids = l->ids[0];
    pthread_mutex_lock(&l->mu);
    l->opt = *opt;
    if (opt->sentence_ids) l->opt.sentence_ids = l->ids[1];
    l->n = m[1];
    l->state = WORK;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);

    omp_set_num_threads(1);
    TfmStatus st = decoder_translate(d, l->sents[0], l->lens[0], m[0], &mine, l->hyps[0], err);
    omp_set_num_threads(threads);

    pthread_mutex_lock(&l->mu);
    while (l->state != DONE) pthread_cond_wait(&l->cv, &l->mu);
    l->state = IDLE;
    const TfmStatus st2 = l->st;
    if (st == TFM_OK && st2 != TFM_OK) *err = l->err;
    pthread_mutex_unlock(&l->mu);
    if (st != TFM_OK) return st;
    if (st2 != TFM_OK) return st2;
    const int nb = opt->nbest;
    for (int i = 0; i < n; i++)
        memcpy(out + (size_t)i * nb, l->hyps[i & 1] + (size_t)(i >> 1) * nb, sizeof *out * (size_t)nb);
    return TFM_OK;
}

long lanes_lines_guarded(const DecodeLanes *l)
{
    return decoder_lines_guarded(l->dec);
}

void lanes_free(DecodeLanes *l)
{
    if (!l) return;
    if (l->running) {
        pthread_mutex_lock(&l->mu);
        l->state = QUIT;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
    }
    decoder_free(l->dec);
    for (int k = 0; k < 2; k++) {
        free(l->sents[k]);
        free(l->lens[k]);
        free(l->ids[k]);
        free(l->hyps[k]);
    }
    free(l);
}
