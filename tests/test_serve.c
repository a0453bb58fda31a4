/* test_serve: tfm serve's parts that need no model or socket: the request
 * reader (both forms, limits, option checks), the JSON string writer and
 * the metrics page. The server as a whole: tests/cli_serve.sh. */
#include <string.h>

#include "test.h"
#include "serve/buf.h"
#include "serve/metrics.h"
#include "serve/request.h"

static RequestLimits limits(void)
{
    RequestLimits l = {.max_beam = 4, .max_lines = 3, .source_lang = "de", .target_lang = "en"};
    l.defaults.beam = 4;
    l.defaults.alpha = 0.6f;
    l.defaults.max_len_b = 50;
    l.defaults.nbest = 1;
    return l;
}

static int parse(Request *r, const char *body, char *msg)
{
    RequestLimits l = limits();
    return request_parse(r, body, strlen(body), &l, msg, 256);
}

TEST(serve_request_forms)
{
    Request r = {0};
    char msg[256];
    CHECK_EQ_INT(parse(&r, "{\"text\": \"Ein Hund.\"}", msg), 0);
    CHECK_EQ_INT(r.n, 1);
    CHECK(!r.list && r.form == FORM_TFM);
    CHECK(strcmp(r.lines[0], "Ein Hund.") == 0 && r.lens[0] == 9);
    CHECK_EQ_INT(r.opt.beam, 4);
    CHECK_EQ_INT(parse(&r, "{\"text\": [\"a\", \"\", \"c\\u00e4\"], \"beam\": 2, \"nbest\": 2, "
                           "\"alpha\": 1.5, \"max_len_b\": 7}", msg), 0);
    CHECK(r.list && r.n == 3 && r.want_nbest);
    CHECK(strcmp(r.lines[2], "c\xC3\xA4") == 0 && r.lens[1] == 0);
    CHECK(r.opt.beam == 2 && r.opt.nbest == 2 && r.opt.alpha == 1.5f && r.opt.max_len_b == 7);
    CHECK_EQ_INT(parse(&r, "{\"q\": \"x\", \"source\": \"auto\", \"target\": \"en\", "
                           "\"api_key\": \"k\", \"alternatives\": 2}", msg), 0);
    CHECK(r.form == FORM_LIBRE && !r.list && r.has_key && strcmp(r.key.p, "k") == 0);
    CHECK(r.opt.nbest == 3 && r.opt.beam == 4);
    /* the same Request again: nothing of the last one is left */
    CHECK_EQ_INT(parse(&r, "{\"text\": []}", msg), 0);
    CHECK(r.n == 0 && r.list && !r.has_key && r.opt.nbest == 1 && r.form == FORM_TFM);
    request_free(&r);
}

TEST(serve_request_errors)
{
    static const struct { const char *body; int status; const char *msg; } cases[] = {
        {"{\"text\": \"a\"", 400, "malformed JSON at byte 12"},
        {"", 400, "malformed JSON at byte 1"},
        {"{\"text\": \"a\"} {}", 400, "malformed JSON at byte 15"},
        {"\"a\"", 400, "the body must be a JSON object"},
        {"{\"text\": [1]}", 400, "'text'[0] must be a string"},
        {"{\"text\": \"a\", \"x\": 1}", 400, "unknown key 'x'"},
        {"{\"text\": \"a\", \"beam\": 0}", 400, "'beam' must be an integer in [1, 4]"},
        {"{\"text\": \"a\", \"nbest\": 5}", 400, "'nbest' must be an integer in [1, 4]"},
        {"{\"text\": \"a\", \"beam\": 1, \"nbest\": 2}", 400, "'nbest' 2 is larger than the beam (1)"},
        {"{\"text\": \"a\", \"nbest\": 2, \"beam\": 1}", 400, "'nbest' 2 is larger than the beam (1)"},
        {"{\"text\": \"a\\u0000\"}", 400, "contains a NUL byte at byte 12"},
        {"{\"text\": \"\\ud800\"}", 400, "malformed JSON at byte 11"},
        {"{\"text\": [\"a\", \"b\", \"c\", \"d\"]}", 413, "'text' has 4 lines, more than the 3 a request may hold"},
        {"{\"q\": \"a\", \"target\": \"en\"}", 400, "missing 'source' (LibreTranslate's form needs 'source' and 'target')"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"beam\": 2}", 400, "'beam' does not go with 'q'"},
        {"{\"q\": \"a\", \"source\": \"en\", \"target\": \"en\"}", 400, "en is not supported"},
    };
    Request r = {0};
    char msg[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = parse(&r, cases[i].body, msg);
        if (st != cases[i].status || strcmp(msg, cases[i].msg) != 0)
            test_fail(__FILE__, __LINE__, "%s: %d '%s', expected %d '%s'", cases[i].body, st,
                      st ? msg : "", cases[i].status, cases[i].msg);
    }
    const char bad[] = "{\"text\": \"\xff\"}";
    RequestLimits l = limits();
    CHECK_EQ_INT(request_parse(&r, bad, sizeof bad - 1, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "invalid UTF-8 at byte 11") == 0);
    const char nul[] = "{\"text\": \"a\0\"}";
    CHECK_EQ_INT(request_parse(&r, nul, sizeof nul - 1, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "contains a NUL byte at byte 12") == 0);
    request_free(&r);
}

TEST(serve_json_string)
{
    Buf b = {0};
    buf_json_string(&b, "a\"b\\c\n\t\x01\xC3\xA4", 10);
    CHECK(strcmp(b.p, "\"a\\\"b\\\\c\\n\\t\\u0001\xC3\xA4\"") == 0);
    buf_reset(&b);
    CHECK(b.len == 0 && !b.failed);
    buf_printf(&b, "%0300d", 7);        /* longer than buf_printf's small buffer */
    CHECK(b.len == 300 && b.p[299] == '7');
    buf_free(&b);
}

TEST(serve_metrics_page)
{
    Metrics *m = NULL;
    CHECK(metrics_new(&m, NULL) == TFM_OK);
    metrics_request(m, 200, 0.003);
    metrics_request(m, 200, 0.2);
    metrics_request(m, 418, 1);
    metrics_batch(m, 3, 30, 40);
    metrics_batch(m, 40, 10, 20);
    Buf b = {0};
    metrics_render(m, &b, 5);
    CHECK(strstr(b.p, "tfm_requests_total{code=\"200\"} 2\n") != NULL);
    CHECK(strstr(b.p, "tfm_requests_total{code=\"other\"} 1\n") != NULL);
    CHECK(strstr(b.p, "tfm_sentences_total 43\n") != NULL);
    CHECK(strstr(b.p, "tfm_source_tokens_total 40\n") != NULL);
    CHECK(strstr(b.p, "tfm_queue_sentences 5\n") != NULL);
    CHECK(strstr(b.p, "tfm_batch_sentences_bucket{le=\"4\"} 1\n") != NULL);
    CHECK(strstr(b.p, "tfm_batch_sentences_bucket{le=\"64\"} 2\n") != NULL);
    CHECK(strstr(b.p, "tfm_request_seconds_bucket{le=\"0.005\"} 1\n") != NULL);
    CHECK(strstr(b.p, "tfm_request_seconds_bucket{le=\"0.25\"} 2\n") != NULL);
    CHECK(strstr(b.p, "tfm_request_seconds_count 3\n") != NULL);
    buf_free(&b);
    metrics_free(m);
}
