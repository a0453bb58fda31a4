/* http: see http.h. Every callback here runs on libmicrohttpd's one
 * polling thread, except job_done and client_gone, which the batcher's
 * threads call (the decoding worker and the reaper). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "base/clock.h"
#include "serve/http.h"
#include "serve/page.h"
#include "serve/reply.h"

enum { KEEP_BYTES = 64 * 1024 };     /* a request's buffers kept for the next, at most */

typedef enum { PHASE_HEADERS, PHASE_BODY, PHASE_QUEUED, PHASE_DONE, PHASE_ANSWERED } Phase;

/* One request's state, reused by the next request once answered. */
typedef struct Conn Conn;
struct Conn {
    Conn *next_free;
    HttpServer *srv;
    struct MHD_Connection *mc;
    Phase phase;
    double t0;
    int status;
    size_t bytes;
    bool too_large, key_ok;
    char client[64];
    char what[160];             /* "POST /translate", escaped, for the log */
    Buf body;
    Request req;
    ServeJob job;
    Buf out;
};

struct HttpServer {
    HttpConfig cfg;
    LineQueue *batcher;
    Metrics *metrics;
    struct MHD_Daemon *d;
    int port;
    Conn *free_conns;
    atomic_int open;            /* requests read, not yet answered */
    atomic_bool stopping;
    Buf log;                    /* the access-log line */
};

static Conn *conn_get(HttpServer *s)
{
    Conn *c = s->free_conns;
    if (c) {
        s->free_conns = c->next_free;
    } else {
        c = xcalloc(1, sizeof *c, NULL);
        if (!c) return NULL;
        c->srv = s;
    }
    c->phase = PHASE_HEADERS;
    c->status = 0;
    c->bytes = 0;
    c->too_large = c->key_ok = false;
    buf_reset(&c->body);
    buf_reset(&c->out);
    return c;
}

static void conn_free(Conn *c)
{
    buf_free(&c->body);
    buf_free(&c->out);
    request_free(&c->req);
    job_free(&c->job);
    free(c);
}

/* The request line for the log, with control and non-ASCII bytes as \xNN
 * (a path can hold anything). */
static void describe(Conn *c, const char *method, const char *url)
{
    size_t o = 0, cap = sizeof c->what - 8;
    for (const char *p = method; *p && o < 16; p++) c->what[o++] = (*p > 0x20 && *p < 0x7f) ? *p : '?';
    c->what[o++] = ' ';
    for (const unsigned char *p = (const unsigned char *)url; *p && o < cap; p++) {
        if (*p > 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
            c->what[o++] = (char)*p;
        } else {
            snprintf(c->what + o, 5, "\\x%02X", *p);
            o += 4;
        }
    }
    c->what[o] = '\0';
}

static void client_address(Conn *c)
{
    strcpy(c->client, "-");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *a = ci->client_addr;
    if (a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)a)->sin_addr, c->client,
                  sizeof c->client);
    else if (a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr, c->client,
                  sizeof c->client);
}

/* Queues c->out (or the static body) with status. */
static enum MHD_Result respond_with(Conn *c, int status, const char *type, const char *body,
                                    size_t len)
{
    HttpServer *s = c->srv;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)(body ? body : ""), MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    /* browser pages elsewhere may call the API (LibreTranslate does the same) */
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, "*");
    if (status == 503) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (atomic_load(&s->stopping)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c->mc, (unsigned)status, r);
    MHD_destroy_response(r);
    c->status = status;
    c->bytes = len;
    c->phase = PHASE_ANSWERED;
    return ret;
}

static enum MHD_Result respond_json(Conn *c, int status)
{
    if (c->out.failed) {
        buf_reset(&c->out);
        reply_error(&c->out, "out of memory");
        status = 500;
    }
    return respond_with(c, status, "application/json", c->out.p, c->out.len);
}

static enum MHD_Result respond_error(Conn *c, int status, const char *msg)
{
    reply_error(&c->out, msg);
    return respond_json(c, status);
}

static enum MHD_Result respond_405(Conn *c, const char *allow)
{
    char msg[96];
    snprintf(msg, sizeof msg, "method not allowed here (allowed: %s)", allow);
    reply_error(&c->out, msg);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(c->out.len, c->out.p, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(c->mc, 405, r);
    MHD_destroy_response(r);
    c->status = 405;
    c->bytes = c->out.len;
    c->phase = PHASE_ANSWERED;
    return ret;
}

/* Equal in time that depends only on the key's length, not on where a
 * guess goes wrong. */
static bool key_equal(const char *key, size_t key_len, const char *given, size_t given_len)
{
    unsigned char diff = (unsigned char)(key_len != given_len);
    for (size_t i = 0; i < key_len; i++)
        diff |= (unsigned char)(key[i] ^ (i < given_len ? given[i] : 0));
    return diff == 0;
}

/* The key from the headers: "Authorization: Bearer KEY" or "X-API-Key". */
static const char *header_key(Conn *c)
{
    const char *auth = MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) return auth + 7;
    return MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND, "X-API-Key");
}

/* A form field's value, or the next part of it. */
static enum MHD_Result form_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *filename, const char *content_type,
                                  const char *transfer_encoding, const char *data, uint64_t off,
                                  size_t size)
{
    Conn *c = cls;
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
    return request_form_add(&c->req, key, key ? strlen(key) : 0, data, (size_t)off, size)
               ? MHD_YES : MHD_NO;
}

/* One of the URL's query arguments, as a form field: LibreTranslate reads
 * them with the form's fields (Flask's request.values), so
 * POST /translate?q=...&source=de&target=en works without a body. */
static enum MHD_Result query_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    Conn *c = cls;
    (void)kind;
    return request_form_add(&c->req, key, key_size, value, 0, value ? value_size : 0) ? MHD_YES
                                                                                      : MHD_NO;
}

static bool has_type(const char *type, const char *want)
{
    return type && strncasecmp(type, want, strlen(want)) == 0;
}

/* The body's fields into c->req, as LibreTranslate takes them: a form
 * (urlencoded or multipart) through libmicrohttpd's decoder, after the
 * URL's query arguments (also alone, with an empty body), else JSON.
 * curl -d sends JSON as urlencoded unless told: a body opening with '{'
 * or '[' is JSON whatever the type says. Returns 0 or the error's status. */
static int read_body(Conn *c, char *msg, size_t size)
{
    const RequestLimits *lim = &c->srv->cfg.limits;
    const char *body = c->body.p ? c->body.p : "";
    const char *type = MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t lead = 0;
    while (lead < c->body.len && strchr(" \t\r\n", body[lead])) lead++;
    const int n_query = MHD_get_connection_values_n(c->mc, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    const bool multipart = has_type(type, MHD_HTTP_POST_ENCODING_MULTIPART_FORMDATA);
    const bool urlencoded = has_type(type, MHD_HTTP_POST_ENCODING_FORM_URLENCODED);
    const bool empty = lead == c->body.len;
    const bool form = multipart || (empty && n_query > 0) ||
                      (urlencoded && (empty || (body[lead] != '{' && body[lead] != '[')));
    if (!form) return request_parse(&c->req, body, c->body.len, lim, msg, size);
    request_form_start(&c->req);
    if (n_query > 0) MHD_get_connection_values_n(c->mc, MHD_GET_ARGUMENT_KIND, query_field, c);
    if (!multipart && !urlencoded) return request_parse_form(&c->req, lim, msg, size);  /* no body */
    struct MHD_PostProcessor *pp = MHD_create_post_processor(c->mc, 4096, form_field, c);
    if (!pp) {
        snprintf(msg, size, "cannot read the form body (a multipart body needs its boundary in "
                 "Content-Type)");
        return 400;
    }
    const bool ok = c->body.len == 0 || MHD_post_process(pp, body, c->body.len) == MHD_YES;
    MHD_destroy_post_processor(pp);
    if (!ok && !c->req.form_data.failed) {   /* out of memory: request_parse_form says so */
        snprintf(msg, size, "malformed form body");
        return 400;
    }
    return request_parse_form(&c->req, lim, msg, size);
}

static void job_done(ServeJob *job, void *ctx)
{
    Conn *c = ctx;
    (void)job;
    c->phase = PHASE_DONE;
    MHD_resume_connection(c->mc);
}

/* Has the client of a suspended connection (libmicrohttpd does not watch
 * those) closed it? Its end of the socket reads as closed: a peek reads 0
 * bytes, or fails. A client that only shuts down its sending side while it
 * waits would look gone too; HTTP clients do not. */
static bool client_gone(void *ctx)
{
    Conn *c = ctx;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    char byte;
    ssize_t n = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void suspend(void *arg)
{
    Conn *c = arg;
    c->phase = PHASE_QUEUED;
    MHD_suspend_connection(c->mc);
}

/* The whole body is in: check it and queue its lines. */
static enum MHD_Result start_translation(Conn *c)
{
    HttpServer *s = c->srv;
    if (c->too_large) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than --max-request-bytes (%zu)",
                 s->cfg.max_request_bytes);
        return respond_error(c, 413, msg);
    }
    char msg[256];
    int status = read_body(c, msg, sizeof msg);
    if (s->cfg.api_key && !c->key_ok) {
        c->key_ok = status == 0 && c->req.has_key &&
                    key_equal(s->cfg.api_key, s->cfg.api_key_len, c->req.key.p, c->req.key.len);
        if (!c->key_ok) return respond_error(c, 401, "missing or wrong API key");
    }
    if (status) return respond_error(c, status, msg);
    if (c->req.detect) {
        reply_detect(&c->out, s->cfg.limits.source_lang);
        return respond_json(c, 200);
    }
    ServeJob *job = &c->job;
    const Request *r = &c->req;
    job->n = r->n;
    job->lines = r->lines;
    job->lens = r->lens;
    job->opt = r->opt;
    job->deadline = c->t0 + s->cfg.timeout_ms / 1000.0;
    job->done = job_done;
    job->gone = client_gone;
    job->ctx = c;
    job->status = 0;
    buf_reset(&job->out);
    if (!job_reserve(job, r->n, r->opt.nbest)) return respond_error(c, 500, "out of memory");
    if (r->n == 0) {                /* nothing to decode: answer at once */
        reply_translations(&c->out, r, job);
        return respond_json(c, 200);
    }
    status = queue_submit(s->batcher, job, suspend, c);
    if (status) return respond_error(c, status, job->msg);
    return MHD_YES;
}

static enum MHD_Result finish_translation(Conn *c)
{
    const ServeJob *job = &c->job;
    if (job->status) return respond_error(c, job->status, job->msg);
    reply_translations(&c->out, &c->req, job);
    return respond_json(c, 200);
}

static bool is_get(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

/* The paths that take a body: POST /translate and LibreTranslate's /detect. */
static bool is_post_path(const char *url)
{
    return strcmp(url, "/translate") == 0 || strcmp(url, "/detect") == 0;
}

/* A request's first call (its headers are in): answer it, or get ready
 * for its body. */
static enum MHD_Result route(Conn *c, const char *url, const char *method)
{
    HttpServer *s = c->srv;
    if (atomic_load(&s->stopping)) return respond_error(c, 503, "the server is shutting down");
    if (is_post_path(url)) {
        if (strcmp(method, "OPTIONS") == 0) {       /* a browser's preflight */
            struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
                                                                     MHD_RESPMEM_PERSISTENT);
            if (!r) return MHD_NO;
            MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, "*");
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                    "Content-Type, Authorization, X-API-Key");
            enum MHD_Result ret = MHD_queue_response(c->mc, 204, r);
            MHD_destroy_response(r);
            c->status = 204;
            c->phase = PHASE_ANSWERED;
            return ret;
        }
        if (strcmp(method, "POST") != 0) return respond_405(c, "POST, OPTIONS");
        c->req.detect = strcmp(url, "/detect") == 0;
        if (s->cfg.api_key) {
            const char *key = header_key(c);
            if (key) {
                c->key_ok = key_equal(s->cfg.api_key, s->cfg.api_key_len, key, strlen(key));
                if (!c->key_ok) return respond_error(c, 401, "missing or wrong API key");
            }
        }
        const char *cl = MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->cfg.max_request_bytes) {
            c->too_large = true;
            return start_translation(c);    /* 413 before the body is read */
        }
        c->phase = PHASE_BODY;
        return MHD_YES;
    }
    if (strcmp(url, "/favicon.ico") == 0 && is_get(method)) {
        /* no icon: 204 (a 404 is an error in the page's console on every load) */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
                                                                 MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "max-age=86400");
        enum MHD_Result ret = MHD_queue_response(c->mc, 204, r);
        MHD_destroy_response(r);
        c->status = 204;
        c->phase = PHASE_ANSWERED;
        return ret;
    }
    const bool page = strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0;
    const bool known = page || strcmp(url, "/health") == 0 || strcmp(url, "/metrics") == 0 ||
                       strcmp(url, "/languages") == 0 || strcmp(url, "/favicon.ico") == 0;
    if (!known) return respond_error(c, 404, "no such path (POST /translate, /detect; GET /, "
                                             "/health, /languages, /metrics)");
    if (!is_get(method)) return respond_405(c, "GET, HEAD");
    if (page) return respond_with(c, 200, "text/html; charset=utf-8", serve_page, serve_page_len);
    buf_reset(&c->out);
    if (strcmp(url, "/health") == 0) {
        buf_puts(&c->out, "{\"status\":\"ok\"}\n");
        return respond_json(c, 200);
    }
    if (strcmp(url, "/languages") == 0) {
        reply_languages(&c->out, s->cfg.limits.source_lang, s->cfg.limits.target_lang);
        return respond_json(c, 200);
    }
    metrics_render(s->metrics, &c->out, queue_queued(s->batcher));
    if (c->out.failed) return respond_error(c, 500, "out of memory");
    return respond_with(c, 200, "text/plain; version=0.0.4; charset=utf-8", c->out.p, c->out.len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    HttpServer *s = cls;
    (void)version;
    Conn *c = *con_cls;
    if (!c) {
        if (!(c = conn_get(s))) return MHD_NO;
        *con_cls = c;
        c->mc = mc;
        c->t0 = clock_now_s();
        atomic_fetch_add(&s->open, 1);
        describe(c, method, url);
        client_address(c);
        /* POST /translate is checked as its headers come (401, 413 before
         * the body is read); the rest is answered once the request is all
         * in, which keeps the connection open for the next one */
        if (is_post_path(url) && strcmp(method, "POST") == 0)
            return route(c, url, method);
        return MHD_YES;
    }
    switch (c->phase) {
    case PHASE_HEADERS:
        if (*upload_size) {
            *upload_size = 0;       /* a body where none is wanted: dropped */
            return MHD_YES;
        }
        return route(c, url, method);
    case PHASE_BODY:
        if (*upload_size) {
            if (!c->too_large && c->body.len + *upload_size > s->cfg.max_request_bytes)
                c->too_large = true;        /* the rest is read and dropped */
            if (!c->too_large) buf_put(&c->body, upload, *upload_size);
            *upload_size = 0;
            return MHD_YES;
        }
        if (c->body.failed) return respond_error(c, 500, "out of memory");
        return start_translation(c);
    case PHASE_DONE:
        return finish_translation(c);
    default:
        *upload_size = 0;       /* an answered request's rest: dropped */
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    HttpServer *s = cls;
    (void)mc;
    Conn *c = *con_cls;
    if (!c) return;
    *con_cls = NULL;
    const double secs = clock_now_s() - c->t0;
    /* a job whose client left (499) is ended here: libmicrohttpd sees the
     * closed socket on resuming, before the answer could be given */
    if (!c->status && c->phase == PHASE_DONE) c->status = c->job.status;
    if (c->status) metrics_request(s->metrics, c->status, secs);
    if (s->cfg.log) {
        Buf *l = &s->log;
        buf_reset(l);
        buf_printf(l, "%s \"%s\" ", c->client, c->what);
        if (c->status) buf_printf(l, "%d %zu", c->status, c->bytes);
        else buf_puts(l, "- -");
        buf_printf(l, " %.1fms", secs * 1e3);
        if (c->job.n > 0 && c->status == 200) buf_printf(l, " %d lines", c->job.n);
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
            buf_puts(l, toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? " (client timed out)"
                                                                     : " (connection closed)");
        if (!l->failed) s->cfg.log(s->cfg.log_ctx, l->p);
    }
    c->job.n = 0;
    /* kept for the next request, but not a rare big body's worth */
    if (c->body.cap > KEEP_BYTES) buf_free(&c->body);
    if (c->out.cap > KEEP_BYTES) buf_free(&c->out);
    if (c->job.out.cap > KEEP_BYTES) buf_free(&c->job.out);
    if (c->req.text.cap > KEEP_BYTES) buf_free(&c->req.text);
    if (c->req.html.cap > KEEP_BYTES) buf_free(&c->req.html);
    if (c->req.form_data.cap > KEEP_BYTES) buf_free(&c->req.form_data);
    c->next_free = s->free_conns;
    s->free_conns = c;
    atomic_fetch_sub(&s->open, 1);
}

/* host:port as a socket address; false when host is no address */
static bool resolve(const char *host, int port, struct sockaddr_storage *sa, socklen_t *len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) return false;
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    if (sa->ss_family == AF_INET) ((struct sockaddr_in *)(void *)sa)->sin_port = htons((uint16_t)port);
    else ((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons((uint16_t)port);
    return true;
}

TfmStatus http_start(HttpServer **out, const HttpConfig *cfg, LineQueue *batcher, Metrics *metrics,
                     TfmErr *err)
{
    *out = NULL;
    struct sockaddr_storage sa;
    socklen_t sa_len;
    if (!resolve(cfg->host, cfg->port, &sa, &sa_len))
        return err_set(err, TFM_ERR_USAGE, "serve: --host %s: not an address of this machine",
                       cfg->host);
    HttpServer *s = xcalloc(1, sizeof *s, err);
    if (!s) return TFM_ERR_NOMEM;
    s->cfg = *cfg;
    s->batcher = batcher;
    s->metrics = metrics;
    atomic_init(&s->open, 0);
    atomic_init(&s->stopping, false);
    /* poll(), not epoll: under libmicrohttpd 0.9.75's epoll a client that
     * sent half a body and closed at once (its last bytes and FIN together)
     * was seen gone only at --timeout-ms, and held a SIGTERM's stop that
     * long; poll() sees the close at once (tests/cli_serve.sh times it) */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME;
    if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    const unsigned idle_s = (unsigned)((cfg->timeout_ms + 999) / 1000);
    s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_s ? idle_s : 1u,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            /* a connection's pool holds its headers and URL arguments:
                             * the default 32 KB ran out at ~480 query arguments and
                             * the client got no answer at all */
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
                            MHD_OPTION_END);
    if (!s->d) {
        free(s);
        return err_set(err, TFM_ERR_IO, "serve: cannot listen on %s port %d (in use, or not "
                       "allowed)", cfg->host, cfg->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    *out = s;
    return TFM_OK;
}

int http_port(const HttpServer *s) { return s->port; }

void http_drain(HttpServer *s)
{
    atomic_store(&s->stopping, true);
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    const struct timespec tick = {0, 10 * 1000 * 1000};
    while (atomic_load(&s->open) > 0) nanosleep(&tick, NULL);
}

void http_free(HttpServer *s)
{
    if (!s) return;
    if (s->d) MHD_stop_daemon(s->d);
    while (s->free_conns) {
        Conn *c = s->free_conns;
        s->free_conns = c->next_free;
        conn_free(c);
    }
    buf_free(&s->log);
    free(s);
}
