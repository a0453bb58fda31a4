/* cmd_serve: `tfm serve [-m MODEL ...] [--host H] [--port P] ...`: the
 * options, the model, the start-up line and the access log; the server is
 * src/serve/. Runs until SIGINT or SIGTERM, then answers what it accepted
 * and returns 0. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/text.h"
#include "nn/blas.h"
#include "decode/pipeline.h"
#include "serve/batcher.h"
#include "serve/http.h"
#include "serve/metrics.h"
#include "cli/cmds.h"
#include "cli/decode_args.h"

static const char usage[] =
    "usage: tfm serve [-m MODEL [-m MODEL ...] [--weights W,W,...]] [--host 127.0.0.1]\n"
    "                 [--port 8080] [--batch-size N] [--batch-wait-ms M] [--max-queue N]\n"
    "                 [--timeout-ms T] [--max-request-bytes B] [--api-key-file F]\n"
    "                 [--source-lang L] [--target-lang L] [-b BEAM] [--alpha A]\n"
    "                 [--max-len-a A] [--max-len-b B] [--no-repeat-ngram N]\n"
    "                 [--precision fp32|bf16|int8] [--shortlist FILE] [--threads N] [-q]\n"
    "\n"
    "Translates over HTTP: POST /translate {\"text\": \"line\" | [\"line\", ...]} answers\n"
    "{\"translations\": [...]}, each line exactly what tfm translate gives it (also\n"
    "LibreTranslate's {\"q\", \"source\", \"target\", \"format\": \"text\"|\"html\"}, as JSON\n"
    "or a form, keys it does not know ignored, and its POST /detect); GET / is a\n"
    "page to try it, GET /health, /languages and /metrics (Prometheus). Lines of\n"
    "concurrent requests are decoded together. Once it accepts connections it\n"
    "prints 'tfm: serving MODEL on http://HOST:PORT' on stderr, then one line per\n"
    "request. SIGINT or SIGTERM: it stops accepting, answers what it accepted and\n"
    "exits 0 (a client that hung up holds nothing).\n"
    "\n"
    "  -m, --model MODEL    model file (default: $TFM_MODEL, else model.tfm); several\n"
    "                       make an ensemble, as in tfm translate\n"
    "      --weights W,W..  the ensemble's weights, one a model (default: equal)\n"
    "      --host H         address to listen on (default 127.0.0.1: this machine only)\n"
    "      --port P         port (default 8080; 0: any free port, the line says which)\n"
    "      --batch-size N   lines decoded together at most (default 32)\n"
    "      --batch-wait-ms M  an idle decoder waits up to M ms for more lines before\n"
    "                       it starts (default 0: it starts at once)\n"
    "      --max-queue N    lines waiting at most; a request that would go over gets\n"
    "                       503 with Retry-After; a request may hold N lines (default 1024)\n"
    "      --timeout-ms T   a request still waiting after T ms gets 504 and its lines\n"
    "                       leave the queue; a connection idle T ms is closed\n"
    "                       (default 30000)\n"
    "      --max-request-bytes B  larger bodies get 413 (default 1048576)\n"
    "      --api-key-file F POST /translate needs the key on F's first line, as\n"
    "                       'Authorization: Bearer KEY', 'X-API-Key: KEY' or\n"
    "                       LibreTranslate's \"api_key\" (401 otherwise)\n"
    "      --source-lang L, --target-lang L  the pair, for LibreTranslate's form and\n"
    "                       GET /languages (default: any pair is taken)\n"
    "  -b, --beam N         beam size, and the largest a request may ask\n"
    "                       (default: the model's decode.beam)\n"
    "      --alpha A, --max-len-a A, --max-len-b B, --no-repeat-ngram N,\n"
    "      --precision P, --shortlist FILE  as in tfm translate (requests may change\n"
    "                       alpha and max_len_b)\n"
    "      --threads N      decoding threads (default 0: the cores other programs\n"
    "                       leave free when the server starts)\n"
    "  -q, --quiet          no access log\n"
    "  -h, --help           this help\n";

typedef struct {
    DecodeArgs dec;         /* models and decoding defaults, as translate reads them */
    const char *host, *api_key_file, *source_lang, *target_lang;
    int port, batch, batch_wait_ms, max_queue, timeout_ms;
    int max_request_bytes;
    bool quiet;
} Options;

static TfmStatus parse_options(int argc, char **argv, Options *o, bool *help, TfmErr *err)
{
    enum { OPT_HOST = 256, OPT_PORT, OPT_BATCH, OPT_WAIT, OPT_QUEUE, OPT_TIMEOUT, OPT_BYTES,
           OPT_KEY, OPT_SRC, OPT_TGT };
    static const struct option longopts[] = {
        DECODE_ARGS_LONGOPTS,
        {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT},
        {"batch-size", required_argument, NULL, OPT_BATCH},
        {"batch-wait-ms", required_argument, NULL, OPT_WAIT},
        {"max-queue", required_argument, NULL, OPT_QUEUE},
        {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"max-request-bytes", required_argument, NULL, OPT_BYTES},
        {"api-key-file", required_argument, NULL, OPT_KEY},
        {"source-lang", required_argument, NULL, OPT_SRC},
        {"target-lang", required_argument, NULL, OPT_TGT},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    CmdGetopt g = cmd_getopt_start("serve", argc, argv, ":m:b:qh", longopts, NULL);
    const char *opt = g.opt;
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        bool taken;
        TfmStatus st = decode_args_take(&o->dec, "serve", c, opt, optarg, &taken, err);
        if (st != TFM_OK || taken) {
            if (st != TFM_OK) return st;
            continue;
        }
        switch (c) {
        case OPT_HOST: o->host = optarg; break;
        case OPT_PORT: st = cmd_option_int("serve", opt, optarg, 0, 65535, &o->port, err); break;
        case OPT_BATCH: st = cmd_option_int("serve", opt, optarg, 1, 4096, &o->batch, err); break;
        case OPT_WAIT:
            st = cmd_option_int("serve", opt, optarg, 0, 60000, &o->batch_wait_ms, err);
            break;
        case OPT_QUEUE:
            st = cmd_option_int("serve", opt, optarg, 1, 1 << 20, &o->max_queue, err);
            break;
        case OPT_TIMEOUT:
            st = cmd_option_int("serve", opt, optarg, 1, 24 * 3600 * 1000, &o->timeout_ms, err);
            break;
        case OPT_BYTES:
            st = cmd_option_int("serve", opt, optarg, 16, 1L << 30, &o->max_request_bytes, err);
            break;
        case OPT_KEY: o->api_key_file = optarg; break;
        case OPT_SRC: o->source_lang = optarg; break;
        case OPT_TGT: o->target_lang = optarg; break;
        case 'q': o->quiet = true; break;
        case 'h': *help = true; return TFM_OK;
        }
        if (st != TFM_OK) return st;
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (optind < argc)
        return err_set(err, TFM_ERR_USAGE, "serve: unexpected argument '%s' (models go with -m)",
                       argv[optind]);
    return TFM_OK;
}

/* The key: F's first line without its line end; refused when empty. A
 * FIFO or folder is refused too (fopen would wait on a FIFO forever). */
static TfmStatus read_key(const char *path, char *key, size_t size, size_t *len, TfmErr *err)
{
    FILE *f = text_open_regular(path, err);
    if (!f) return err->status;
    if (!fgets(key, (int)size, f)) key[0] = '\0';
    fclose(f);
    size_t n = strcspn(key, "\r\n");
    key[n] = '\0';
    if (n == 0) return err_set(err, TFM_ERR_FORMAT, "%s: line 1: no API key there", path);
    if (n == size - 1) return err_set(err, TFM_ERR_FORMAT, "%s: line 1: the key is longer than "
                                      "%zu bytes", path, size - 2);
    *len = n;
    return TFM_OK;
}

static void access_log(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "tfm: %s\n", line);
}

TfmStatus cmd_serve(int argc, char **argv, TfmErr *err)
{
    Options o = {.host = "127.0.0.1", .port = 8080, .batch = 32, .max_queue = 1024,
                 .timeout_ms = 30000, .max_request_bytes = 1 << 20};
    o.dec.spec.who = "serve";
    bool help = false;
    TfmStatus st = parse_options(argc, argv, &o, &help, err);
    if (st != TFM_OK) return st;
    if (help) {
        fputs(usage, stdout);
        return TFM_OK;
    }
    char key[4096];
    size_t key_len = 0;
    if (o.api_key_file && (st = read_key(o.api_key_file, key, sizeof key, &key_len, err)) != TFM_OK)
        return st;
    /* a signal from here on asks for a clean stop (checked below) */
    TrainStop *stop = cli_stop_on_signals(false);
    stop->started = 1;
    if ((st = decode_args_start(&o.dec, err)) != TFM_OK) return st;
    PipelineSpec *spec = &o.dec.spec;
    Pipeline p;
    Metrics *metrics = NULL;
    LineQueue *batcher = NULL;
    HttpServer *http = NULL;
    if ((st = pipeline_load(&p, spec, err)) != TFM_OK) goto done;
    if (p.bf16_fallback)
        fprintf(stderr, "tfm: note: %s was trained in bf16; this CPU has no bf16 unit "
                "(AVX512-BF16 or AMX), so it translates in fp32\n", spec->models[0]);
    if ((st = pipeline_start(&p, spec, o.batch, p.dopt.beam, err)) != TFM_OK) goto done;
    if ((st = metrics_new(&metrics, err)) != TFM_OK) goto done;
    QueueConfig bc = {.batch_size = o.batch, .batch_wait_ms = o.batch_wait_ms,
                        .max_queue = o.max_queue, .threads = o.dec.threads};
    if ((st = queue_start(&batcher, &p, &bc, metrics, err)) != TFM_OK) goto done;
    HttpConfig hc = {
        .host = o.host, .port = o.port, .timeout_ms = o.timeout_ms,
        .max_request_bytes = (size_t)o.max_request_bytes,
        .api_key = o.api_key_file ? key : NULL, .api_key_len = key_len,
        .limits = {.max_beam = p.dopt.beam, .max_lines = o.max_queue, .defaults = p.dopt,
                   .source_lang = o.source_lang, .target_lang = o.target_lang},
        .log = o.quiet ? NULL : access_log,
    };
    if ((st = http_start(&http, &hc, batcher, metrics, err)) != TFM_OK) goto done;
    const bool v6 = strchr(o.host, ':') != NULL;
    fprintf(stderr, "tfm: serving %s%s on http://%s%s%s:%d\n", spec->models[0],
            spec->n_models > 1 ? " (an ensemble)" : "", v6 ? "[" : "", o.host, v6 ? "]" : "",
            http_port(http));
    const struct timespec tick = {0, 50 * 1000 * 1000};
    while (!stop->signo) nanosleep(&tick, NULL);
    if (!o.quiet)
        fprintf(stderr, "tfm: stopping: no new connections; answering the %d lines queued\n",
                queue_queued(batcher));
    http_drain(http);
done:
    queue_free(batcher);      /* finishes what is queued, then ends the worker */
    http_free(http);
    metrics_free(metrics);
    pipeline_free(&p);
    if (st == TFM_OK && !o.quiet) fprintf(stderr, "tfm: stopped\n");
    return st;
}
