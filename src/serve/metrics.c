/* metrics: see metrics.h. */
#include <pthread.h>
#include <stdlib.h>

#include "serve/metrics.h"

/* the status codes the server answers with; others count under "other" */
static const int codes[] = {200, 204, 400, 401, 404, 405, 413, 500, 503, 504};
enum { N_CODES = sizeof codes / sizeof *codes };
static const int batch_le[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
enum { N_BATCH = sizeof batch_le / sizeof *batch_le };
static const double latency_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
enum { N_LAT = sizeof latency_le / sizeof *latency_le };

struct Metrics {
    pthread_mutex_t lock;
    unsigned long long requests[N_CODES + 1];
    unsigned long long sentences, src_tokens, out_tokens, batches;
    unsigned long long dropped_timeout, dropped_gone;
    unsigned long long batch_count[N_BATCH + 1];    /* per bucket, not cumulative */
    unsigned long long lat_count[N_LAT + 1];
    double lat_sum;
    unsigned long long lat_n, batch_sum;
};

TfmStatus metrics_new(Metrics **out, TfmErr *err)
{
    Metrics *m = xcalloc(1, sizeof *m, err);
    if (!m) return TFM_ERR_NOMEM;
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return TFM_OK;
}

void metrics_request(Metrics *m, int status, double seconds)
{
    int c = 0;
    while (c < N_CODES && codes[c] != status) c++;
    int b = 0;
    while (b < N_LAT && seconds > latency_le[b]) b++;
    pthread_mutex_lock(&m->lock);
    m->requests[c]++;
    m->lat_count[b]++;
    m->lat_sum += seconds;
    m->lat_n++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_batch(Metrics *m, int sentences, long src_tokens, long out_tokens)
{
    int b = 0;
    while (b < N_BATCH && sentences > batch_le[b]) b++;
    pthread_mutex_lock(&m->lock);
    m->sentences += (unsigned long long)sentences;
    m->src_tokens += (unsigned long long)src_tokens;
    m->out_tokens += (unsigned long long)out_tokens;
    m->batches++;
    m->batch_sum += (unsigned long long)sentences;
    m->batch_count[b]++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_dropped(Metrics *m, int timed_out, int gone)
{
    pthread_mutex_lock(&m->lock);
    m->dropped_timeout += (unsigned long long)timed_out;
    m->dropped_gone += (unsigned long long)gone;
    pthread_mutex_unlock(&m->lock);
}

void metrics_render(Metrics *m, Buf *o, int queued)
{
    pthread_mutex_lock(&m->lock);
    Metrics s = *m;     /* a consistent copy; printed after the lock is let go */
    pthread_mutex_unlock(&m->lock);
    buf_puts(o, "# HELP tfm_requests_total HTTP requests answered, by status code.\n"
                "# TYPE tfm_requests_total counter\n");
    for (int c = 0; c <= N_CODES; c++) {
        if (c < N_CODES) buf_printf(o, "tfm_requests_total{code=\"%d\"} %llu\n", codes[c], s.requests[c]);
        else buf_printf(o, "tfm_requests_total{code=\"other\"} %llu\n", s.requests[c]);
    }
    buf_printf(o, "# HELP tfm_sentences_total Lines translated.\n"
                  "# TYPE tfm_sentences_total counter\ntfm_sentences_total %llu\n"
                  "# HELP tfm_source_tokens_total Source tokens (BPE pieces) translated.\n"
                  "# TYPE tfm_source_tokens_total counter\ntfm_source_tokens_total %llu\n"
                  "# HELP tfm_output_tokens_total Output tokens (BPE pieces) of the best translations.\n"
                  "# TYPE tfm_output_tokens_total counter\ntfm_output_tokens_total %llu\n"
                  "# HELP tfm_queue_sentences Lines waiting for the decoder.\n"
                  "# TYPE tfm_queue_sentences gauge\ntfm_queue_sentences %d\n",
               s.sentences, s.src_tokens, s.out_tokens, queued);
    buf_printf(o, "# HELP tfm_sentences_dropped_total Lines that left the queue undecoded: their "
                  "request timed out (504) or its client went away.\n"
                  "# TYPE tfm_sentences_dropped_total counter\n"
                  "tfm_sentences_dropped_total{reason=\"timeout\"} %llu\n"
                  "tfm_sentences_dropped_total{reason=\"client_gone\"} %llu\n",
               s.dropped_timeout, s.dropped_gone);
    buf_puts(o, "# HELP tfm_batch_sentences Lines decoded together, per batch.\n"
                "# TYPE tfm_batch_sentences histogram\n");
    unsigned long long cum = 0;
    for (int b = 0; b < N_BATCH; b++) {
        cum += s.batch_count[b];
        buf_printf(o, "tfm_batch_sentences_bucket{le=\"%d\"} %llu\n", batch_le[b], cum);
    }
    buf_printf(o, "tfm_batch_sentences_bucket{le=\"+Inf\"} %llu\ntfm_batch_sentences_sum %llu\n"
                  "tfm_batch_sentences_count %llu\n", s.batches, s.batch_sum, s.batches);
    buf_puts(o, "# HELP tfm_request_seconds Time from a request's headers to its answer.\n"
                "# TYPE tfm_request_seconds histogram\n");
    cum = 0;
    for (int b = 0; b < N_LAT; b++) {
        cum += s.lat_count[b];
        buf_printf(o, "tfm_request_seconds_bucket{le=\"%g\"} %llu\n", latency_le[b], cum);
    }
    buf_printf(o, "tfm_request_seconds_bucket{le=\"+Inf\"} %llu\ntfm_request_seconds_sum %.6f\n"
                  "tfm_request_seconds_count %llu\n", s.lat_n, s.lat_sum, s.lat_n);
}

void metrics_free(Metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}
