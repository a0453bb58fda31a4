/* batcher: see batcher.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "nn/blas.h"
#include "serve/batcher.h"

/* How often the reaper asks whether the clients of queued lines are still there. */
#define GONE_CHECK_S 0.05
/* Batches of fewer lines than this run on one thread (worker()). */
#define PARALLEL_MIN_LINES 16

typedef struct {
    ServeJob *job;
    int line;
} Ref;

struct LineQueue {
    Pipeline *p;
    QueueConfig cfg;
    Metrics *metrics;
    pthread_t thread, reaper;
    bool started, reaper_started;
    pthread_mutex_t lock;
    pthread_cond_t wake, reap_wake;
    bool stopping, reaper_stopping;
    unsigned pass;          /* drop_lines' passes, so that each job is asked once a pass */
    ServeJob **reaped;      /* (max_queue) the reaper's jobs to call back */
    int n_reaped;
    Ref *queue;             /* (max_queue) oldest first */
    int queued;
    /* the worker's */
    Ref *batch;             /* (batch_size) */
    LineBatch lines;        /* the batch's lines (as batch[j]) and their translations */
    ServeJob **finished;    /* (max_queue + batch_size) jobs to call back */
    int n_finished;
};

bool job_reserve(ServeJob *job, int n, int nbest)
{
    if (n > job->line_cap) {
        int cap = n < 16 ? 16 : n;
        int *f = xrealloc(job->full_tokens, sizeof(int) * (size_t)cap, NULL);
        if (f) job->full_tokens = f;
        int *s = xrealloc(job->src_tokens, sizeof(int) * (size_t)cap, NULL);
        if (s) job->src_tokens = s;
        if (!f || !s) return false;
        job->line_cap = cap;
    }
    if (n * nbest > job->hyp_cap) {
        int cap = n * nbest < 16 ? 16 : n * nbest;
        JobHyp *h = xrealloc(job->hyps, sizeof *h * (size_t)cap, NULL);
        if (!h) return false;
        job->hyps = h;
        job->hyp_cap = cap;
    }
    return true;
}

void job_free(ServeJob *job)
{
    free(job->hyps);
    free(job->full_tokens);
    free(job->src_tokens);
    buf_free(&job->out);
}

static bool same_options(const DecodeOptions *a, const DecodeOptions *b)
{
    return a->beam == b->beam && a->nbest == b->nbest && a->alpha == b->alpha &&
           a->max_len_a == b->max_len_a && a->max_len_b == b->max_len_b &&
           a->no_repeat_ngram == b->no_repeat_ngram;
}

/* Under the lock: a line of job is done; a finished job is kept for its
 * callback, made once the lock is let go. */
static void line_done(LineQueue *b, ServeJob *job)
{
    if (--job->left == 0) b->finished[b->n_finished++] = job;
}

/* Under the lock: the queued lines of jobs past their deadline, whose
 * client went away, or that failed, leave the queue; finished jobs go to
 * fin (*n_fin of them) for their callbacks. */
static void drop_lines(LineQueue *b, double now, ServeJob **fin, int *n_fin)
{
    b->pass++;
    int w = 0, timed_out = 0, gone = 0;
    for (int i = 0; i < b->queued; i++) {
        ServeJob *job = b->queue[i].job;
        if (job->pass != b->pass && job->status == 0) {
            job->pass = b->pass;
            if (now > job->deadline) {
                job->status = 504;
                snprintf(job->msg, sizeof job->msg, "timed out: waited longer than --timeout-ms "
                         "for the decoder");
            } else if (job->gone && job->gone(job->ctx)) {
                job->status = 499;
                snprintf(job->msg, sizeof job->msg, "the client went away");
            }
        }
        if (job->status == 0) {
            b->queue[w++] = b->queue[i];
            continue;
        }
        timed_out += job->status == 504;
        gone += job->status == 499;
        if (--job->left == 0) fin[(*n_fin)++] = job;
    }
    b->queued = w;
    if (timed_out || gone) metrics_dropped(b->metrics, timed_out, gone);
}

/* Under the lock: takes up to batch_size lines with the oldest line's
 * options out of the queue, oldest first. */
static int take_batch(LineQueue *b)
{
    const DecodeOptions *opt = &b->queue[0].job->opt;
    int n = 0, w = 0;
    for (int i = 0; i < b->queued; i++) {
        if (n < b->cfg.batch_size && same_options(&b->queue[i].job->opt, opt))
            b->batch[n++] = b->queue[i];
        else
            b->queue[w++] = b->queue[i];
    }
    b->queued = w;
    return n;
}

static void fail_job(ServeJob *job, const char *msg)
{
    job->status = 500;
    snprintf(job->msg, sizeof job->msg, "%.150s", msg);
}

/* Without the lock: translates the batch's lines into their jobs. */
static void decode_batch(LineQueue *b, int n)
{
    TfmErr err = {0};
    LineBatch *lb = &b->lines;
    const DecodeOptions *opt = &b->batch[0].job->opt;
    const int nbest = opt->nbest;
    for (int j = 0; j < n; j++) {
        ServeJob *job = b->batch[j].job;
        const int i = b->batch[j].line;
        if (job->status != 0)
            line_batch_skip(lb, j);
        else if (line_batch_set(lb, j, job->lines[i], job->lens[i], &err) != TFM_OK)
            fail_job(job, err.msg);
        else
            job->full_tokens[i] = lb->lines[j].full;
        job->src_tokens[i] = lb->lines[j].n;
    }
    TfmStatus st = line_batch_translate(lb, n, opt, 0, &err);
    long out_tokens = 0;
    for (int j = 0; j < n; j++) {
        ServeJob *job = b->batch[j].job;
        JobHyp *out = &job->hyps[(size_t)b->batch[j].line * nbest];
        if (job->status != 0) continue;
        if (st != TFM_OK) {
            fail_job(job, err.msg);
            continue;
        }
        for (int h = 0; h < nbest; h++) {
            out[h] = (JobHyp){.off = (int)job->out.len, .len = -1};
            const BatchResult *r = line_batch_result(lb, j, h);
            if (!r) continue;       /* fewer finished than asked; a blank line has one */
            if (h == 0) out_tokens += r->tokens;
            buf_put(&job->out, r->text, r->len);
            if (job->out.failed) {
                fail_job(job, "out of memory");
                break;
            }
            out[h].len = (int)r->len;
            out[h].logprob = r->logprob;
            out[h].score = r->score;
        }
    }
    metrics_batch(b->metrics, n, lb->src_tokens, out_tokens);
}

/* Under the lock: calls back the jobs fin[0..*n_fin), without it. */
static void call_back(LineQueue *b, ServeJob **fin, int *n_fin)
{
    int n = *n_fin;
    *n_fin = 0;
    if (n == 0) return;
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < n; i++) fin[i]->done(fin[i], fin[i]->ctx);
    pthread_mutex_lock(&b->lock);
}

/* Waits on cond until the absolute monotonic time t. */
static void wait_until(LineQueue *b, pthread_cond_t *cond, double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, &b->lock, &ts);
}

static void *worker(void *arg)
{
    LineQueue *b = arg;
    /* the thread count is a per-thread setting in OpenMP: set it here,
     * where the products run */
    int threads = blas_set_threads(b->cfg.threads);
    const int all_threads = threads;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (b->queued == 0 && !b->stopping) pthread_cond_wait(&b->wake, &b->lock);
        if (b->queued == 0) break;      /* stopping, and nothing left */
        if (b->cfg.batch_wait_ms > 0 && b->queued < b->cfg.batch_size && !b->stopping) {
            const double until = clock_now_s() + b->cfg.batch_wait_ms / 1000.0;
            while (b->queued < b->cfg.batch_size && !b->stopping && clock_now_s() < until)
                wait_until(b, &b->wake, until);
        }
        drop_lines(b, clock_now_s(), b->finished, &b->n_finished);
        if (b->queued == 0) {
            call_back(b, b->finished, &b->n_finished);
            continue;
        }
        int n = take_batch(b);
        pthread_mutex_unlock(&b->lock);
        /* A small batch runs on one thread: on 8 sentences two threads
         * translated 1.1x faster for 1.7x the CPU, and beside the server's
         * own request threads (and clients on the same machine) they halved
         * its throughput (BENCHMARKS.md, a busy machine). The translation
         * does not depend on the thread count. */
        const int want = n < PARALLEL_MIN_LINES ? 1 : all_threads;
        if (want != threads) threads = blas_set_threads(want);
        decode_batch(b, n);
        pthread_mutex_lock(&b->lock);
        for (int j = 0; j < n; j++) line_done(b, b->batch[j].job);
        call_back(b, b->finished, &b->n_finished);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* While the worker decodes: drops queued lines at their job's deadline,
 * and every GONE_CHECK_S those whose client went away. */
static void *reaper(void *arg)
{
    LineQueue *b = arg;
    double check_at = 0;        /* the next look at the clients */
    pthread_mutex_lock(&b->lock);
    while (!b->reaper_stopping) {
        if (b->queued == 0) {
            pthread_cond_wait(&b->reap_wake, &b->lock);
            check_at = clock_now_s() + GONE_CHECK_S;
            continue;
        }
        double now = clock_now_s(), next = check_at;
        for (int i = 0; i < b->queued; i++)
            if (b->queue[i].job->deadline < next) next = b->queue[i].job->deadline;
        if (now < next) {
            wait_until(b, &b->reap_wake, next);
            continue;
        }
        drop_lines(b, now, b->reaped, &b->n_reaped);
        call_back(b, b->reaped, &b->n_reaped);
        check_at = clock_now_s() + GONE_CHECK_S;
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

TfmStatus queue_start(LineQueue **out, Pipeline *p, const QueueConfig *cfg, Metrics *metrics,
                        TfmErr *err)
{
    *out = NULL;
    LineQueue *b = xcalloc(1, sizeof *b, err);
    if (!b) return TFM_ERR_NOMEM;
    b->p = p;
    b->cfg = *cfg;
    b->metrics = metrics;
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->wake, &ca);
    pthread_cond_init(&b->reap_wake, &ca);
    pthread_condattr_destroy(&ca);
    const size_t B = (size_t)cfg->batch_size, Q = (size_t)cfg->max_queue;
    b->queue = xcalloc(Q, sizeof *b->queue, err);
    b->batch = xcalloc(B, sizeof *b->batch, err);
    b->finished = xcalloc(Q + B, sizeof *b->finished, err);
    b->reaped = xcalloc(Q, sizeof *b->reaped, err);
    TfmStatus st = line_batch_init(&b->lines, p, cfg->batch_size, p->dopt.beam, err);
    if (!b->queue || !b->batch || !b->finished || !b->reaped || st != TFM_OK) {
        queue_free(b);
        return TFM_ERR_NOMEM;
    }
    if (pthread_create(&b->thread, NULL, worker, b) != 0) {
        queue_free(b);
        return err_set(err, TFM_ERR_NOMEM, "serve: cannot start the decoding thread");
    }
    b->started = true;
    if (pthread_create(&b->reaper, NULL, reaper, b) != 0) {
        queue_free(b);
        return err_set(err, TFM_ERR_NOMEM, "serve: cannot start the queue's reaper thread");
    }
    b->reaper_started = true;
    *out = b;
    return TFM_OK;
}

int queue_submit(LineQueue *b, ServeJob *job, void (*before)(void *), void *arg)
{
    pthread_mutex_lock(&b->lock);
    int status = 0;
    if (b->stopping) {
        status = 503;
        snprintf(job->msg, sizeof job->msg, "the server is shutting down");
    } else if (b->queued + job->n > b->cfg.max_queue) {
        status = 503;
        snprintf(job->msg, sizeof job->msg, "the queue is full (%d lines waiting, --max-queue %d): "
                 "try again later", b->queued, b->cfg.max_queue);
    } else {
        job->status = 0;
        job->msg[0] = '\0';
        job->left = job->n;
        job->pass = 0;
        buf_reset(&job->out);
        if (before) before(arg);
        /* the reaper sleeps only on an empty queue; later deadlines it
         * sees within GONE_CHECK_S */
        if (b->queued == 0) pthread_cond_signal(&b->reap_wake);
        for (int i = 0; i < job->n; i++) b->queue[b->queued++] = (Ref){job, i};
        pthread_cond_signal(&b->wake);
    }
    pthread_mutex_unlock(&b->lock);
    return status;
}

int queue_queued(LineQueue *b)
{
    pthread_mutex_lock(&b->lock);
    int n = b->queued;
    pthread_mutex_unlock(&b->lock);
    return n;
}

/* Raises *stop under the lock, wakes the thread waiting on cond, joins it. */
static void stop_thread(LineQueue *b, pthread_t thread, bool *started, bool *stop,
                        pthread_cond_t *cond)
{
    if (!*started) return;
    pthread_mutex_lock(&b->lock);
    *stop = true;
    pthread_cond_signal(cond);
    pthread_mutex_unlock(&b->lock);
    pthread_join(thread, NULL);
    *started = false;
}

void queue_stop(LineQueue *b)
{
    if (!b) return;
    /* the worker first: it decodes what is queued while the reaper still
     * drops the lines whose clients go */
    stop_thread(b, b->thread, &b->started, &b->stopping, &b->wake);
    stop_thread(b, b->reaper, &b->reaper_started, &b->reaper_stopping, &b->reap_wake);
}

void queue_free(LineQueue *b)
{
    if (!b) return;
    queue_stop(b);
    line_batch_free(&b->lines);
    FREE_ALL(b->queue, b->batch, b->finished, b->reaped);
    pthread_cond_destroy(&b->wake);
    pthread_cond_destroy(&b->reap_wake);
    pthread_mutex_destroy(&b->lock);
    free(b);
}
