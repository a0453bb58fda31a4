/* batcher: the one queue of lines from every request and the decoding
 * worker that empties it. An idle worker starts at once on what is queued
 * (up to batch_size lines; batch_wait_ms lets it wait that long for
 * company); while it decodes, new lines gather for its next batch. A batch
 * holds only lines with the same decoding options (the oldest line's), so a
 * line's translation is what `tfm translate` gives it with those options.
 * A job is finished when its last line is done, or when its lines leave
 * the queue undecoded: at its deadline (504), or when its client went away.
 * A second thread, the reaper, sees to that while the worker decodes, so a
 * 504 goes out at its deadline (not a batch later) and a client that left
 * costs at most the lines already in a batch; the worker checks too, before
 * each batch. The done callback runs on either thread. Nothing is
 * allocated per line or per batch once the buffers are warm. */
#ifndef TFM_SERVE_BATCHER_H
#define TFM_SERVE_BATCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "decode/batch.h"
#include "base/buf.h"
#include "serve/metrics.h"

typedef struct {
    int off, len;           /* the text, in the job's out; len -1: none (fewer finished) */
    float logprob, score;
} JobHyp;

typedef struct ServeJob ServeJob;
struct ServeJob {
    /* set by the submitter */
    int n;                          /* lines */
    const char *const *lines;       /* NUL-terminated */
    const size_t *lens;
    DecodeOptions opt;
    double deadline;                /* clock_now_s(); the job times out after it */
    void (*done)(ServeJob *job, void *ctx);
    bool (*gone)(void *ctx);        /* NULL, or: has the client gone away? (a cheap check) */
    void *ctx;
    /* results, for the done callback and after it */
    int status;                     /* 0, 504 (timed out), 499 (client gone) or 500 (msg says why) */
    char msg[160];
    JobHyp *hyps;                   /* (n · opt.nbest), best first per line */
    int *full_tokens, *src_tokens;  /* (n) a line's pieces, before and after the cut */
    Buf out;
    /* the batcher's */
    int left, line_cap, hyp_cap;
    unsigned pass;
};

/* Makes room in job for n lines of nbest hypotheses (kept for reuse). */
bool job_reserve(ServeJob *job, int n, int nbest);
void job_free(ServeJob *job);

typedef struct {
    int batch_size, batch_wait_ms, max_queue, threads;
} QueueConfig;

typedef struct LineQueue LineQueue;

/* Starts the worker on p (its decoder made for batch_size sentences). */
TfmStatus queue_start(LineQueue **out, Pipeline *p, const QueueConfig *cfg, Metrics *metrics,
                        TfmErr *err);

/* Queues job's lines (job->n >= 1). before(arg), if not NULL, runs under
 * the queue's lock just before the lines become visible to the worker (the
 * HTTP side suspends the connection there, so the answer cannot come
 * first). Returns 0, or 503 with why in job->msg: the queue would exceed
 * max_queue lines, or the batcher is stopping. */
int queue_submit(LineQueue *b, ServeJob *job, void (*before)(void *), void *arg);

int queue_queued(LineQueue *b);     /* lines waiting now */

/* No more submits; the worker finishes every queued line, then ends. */
void queue_stop(LineQueue *b);
void queue_free(LineQueue *b);

#endif
