/* http: the server's HTTP side, over GNU libmicrohttpd (the one file that
 * includes <microhttpd.h>). One polling thread reads requests, answers GET
 * routes and POST /detect at once, and hands POST /translate's lines to the
 * batcher with the connection suspended; the worker's callback resumes it
 * and the answer goes out. No request waits on decoding to be read. */
#ifndef TFM_SERVE_HTTP_H
#define TFM_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/request.h"

typedef struct {
    const char *host;
    int port;                   /* 0: any free port */
    int timeout_ms;             /* queue wait (504) and idle connections */
    size_t max_request_bytes;   /* larger bodies get 413 */
    const char *api_key;        /* NULL: no key needed */
    size_t api_key_len;
    RequestLimits limits;
    /* one access-log line per request (NULL: none); library code never
     * prints, the command does */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} HttpConfig;

typedef struct HttpServer HttpServer;

/* Listens (connections are accepted from the return on). */
TfmStatus http_start(HttpServer **out, const HttpConfig *cfg, LineQueue *batcher, Metrics *metrics,
                     TfmErr *err);
int http_port(const HttpServer *s);

/* Stops accepting connections, answers what comes on open ones with 503
 * and "Connection: close", and returns once every request already read has
 * been answered. */
void http_drain(HttpServer *s);

/* Closes every connection; after http_drain and the batcher's stop. */
void http_free(HttpServer *s);

#endif
