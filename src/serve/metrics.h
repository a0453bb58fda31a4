/* metrics: what GET /metrics reports, in Prometheus' text format: requests
 * by status code, sentences and tokens translated, the queue, and
 * histograms of the batch sizes and of the request latencies. Updated from
 * the HTTP thread and the decoding worker (one mutex, held for a few adds). */
#ifndef TFM_SERVE_METRICS_H
#define TFM_SERVE_METRICS_H

#include "base/err.h"
#include "base/buf.h"

typedef struct Metrics Metrics;

TfmStatus metrics_new(Metrics **out, TfmErr *err);
void metrics_request(Metrics *m, int status, double seconds);
void metrics_batch(Metrics *m, int sentences, long src_tokens, long out_tokens);
/* lines that left the queue undecoded: timed out, or their client went away */
void metrics_dropped(Metrics *m, int timed_out, int gone);
/* appends the whole page; queued: sentences waiting now */
void metrics_render(Metrics *m, Buf *out, int queued);
void metrics_free(Metrics *m);

#endif
