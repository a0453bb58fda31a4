/* test_serve: tfm serve's parts that need no model or socket: the request
 * reader (both forms, JSON and form fields, limits, option checks), the
 * HTML splitter on hostile input, the JSON string writer and the metrics
 * page. The server as a whole: tests/cli_serve.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "base/buf.h"
#include "serve/html.h"
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
        {"{\"text\": \"a\", \"source\": \"de\"}", 400, "'source' does not go with 'text'"},
        {"{\"text\": \"a\", \"apiKey\": \"\"}", 400, "unknown key 'apiKey'"},
        {"{\"q\": null, \"source\": \"de\", \"target\": \"en\"}", 400, "missing 'q'"},
        {"{\"q\": \"a\", \"source\": 5, \"target\": \"en\"}", 400, "'source' must be a string"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"\"}", 400, "missing 'target' (LibreTranslate's form needs 'source' and 'target')"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"alternatives\": 4}", 400, "'alternatives' must be at most 3 (the server's beam less one)"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"alternatives\": \"2x\"}", 400, "'alternatives' is not a number"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"alternatives\": []}", 400, "'alternatives' is not a number"},
        {"{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"format\": 1}", 400, "'format' must be a string"},
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

/* LibreTranslate's form as LibreTranslate reads it: unknown keys (and
 * tfm's own) ignored, codes in any case, alternatives as Python's int(). */
TEST(serve_request_libre_lenient)
{
    Request r = {0};
    char msg[256];
    CHECK_EQ_INT(parse(&r, "{\"q\": \"x\", \"source\": \"DE\", \"target\": \"En\", \"apiKey\": "
                           "\"\", \"secret\": 1, \"text\": \"y\", \"beam\": 99, \"api_key\": null, "
                           "\"format\": \"\"}", msg), 0);
    CHECK(r.form == FORM_LIBRE && r.n == 1 && strcmp(r.lines[0], "x") == 0);
    CHECK(!r.has_key && !r.is_html && r.opt.beam == 4 && r.opt.nbest == 1 && !r.detected);
    CHECK_EQ_INT(parse(&r, "{\"q\": \"x\", \"source\": \"AUTO\", \"target\": \"en\", "
                           "\"api_key\": 7}", msg), 0);
    CHECK(r.detected && strcmp(r.detected, "de") == 0 && !r.has_key);
    static const struct { const char *alt; int want; } alts[] = {
        {"2.7", 2}, {"true", 1}, {"false", 0}, {"\" 2 \"", 2}, {"-5", 0}, {"null", 0}, {"\"-1\"", 0},
    };
    for (size_t i = 0; i < sizeof alts / sizeof *alts; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"q\": \"x\", \"source\": \"de\", \"target\": \"en\", "
                 "\"alternatives\": %s}", alts[i].alt);
        int st = parse(&r, body, msg);
        if (st != 0 || r.alternatives != alts[i].want || r.opt.nbest != alts[i].want + 1)
            test_fail(__FILE__, __LINE__, "alternatives %s: status %d, %d alternatives, nbest %d "
                      "(expected %d)", alts[i].alt, st, r.alternatives, r.opt.nbest, alts[i].want);
    }
    /* a /detect body: only q is read, and it may come alone */
    r.detect = true;
    CHECK_EQ_INT(parse(&r, "{\"q\": [\"a\", \"b\"], \"api_key\": \"k\"}", msg), 0);
    CHECK(r.detect && r.form == FORM_LIBRE && r.n == 2 && r.has_key);
    CHECK_EQ_INT(parse(&r, "{\"text\": \"a\"}", msg), 400);
    CHECK(strcmp(msg, "missing 'q'") == 0);
    CHECK_EQ_INT(parse(&r, "{\"q\": 5}", msg), 400);
    CHECK(strcmp(msg, "'q' must be a string or a list of strings") == 0);
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

/* The pieces of an HTML document as "[markup]{text}..." */
static bool show_markup(void *ctx, const char *s, size_t n)
{
    Buf *b = ctx;
    if (b->len > 0 && b->p[b->len - 1] == ']') b->len--;     /* markup in a row: one */
    else buf_puts(b, "[");
    buf_put(b, s, n);
    buf_puts(b, "]");
    return true;
}

static bool show_text(void *ctx, const char *s, size_t n)
{
    Buf *b = ctx;
    buf_puts(b, "{");
    buf_put(b, s, n);
    buf_puts(b, "}");
    return true;
}

static const char *split(Buf *b, const char *doc, size_t n)
{
    Buf scratch = {0};
    buf_reset(b);
    const HtmlSink sink = {show_markup, show_text, b};
    bool ok = html_split(doc, n, &scratch, &sink);
    buf_free(&scratch);
    return ok ? (b->p ? b->p : "") : "(failed)";
}

TEST(serve_html_split)
{
    static const struct { const char *doc, *want; } cases[] = {
        {"<p>Hallo <a href=\"https://x.example/@x\" class=\"mention\">@<span>x</span></a> Welt</p>",
         "[<p>]{Hallo}[ <a href=\"https://x.example/@x\" class=\"mention\">@<span>]{x}"
         "[</span></a> ]{Welt}[</p>]"},
        {"a < b, 1<2 </ 3", "{a < b, 1<2 </ 3}"},
        {"Fish &amp; chips &lt;3 &#228;&#xE4;&#Xe4; &bogus; &#0; &#xD800; &#99999999; &amp &",
         "{Fish & chips <3 \xC3\xA4\xC3\xA4\xC3\xA4 &bogus; &#0; &#xD800; &#99999999; &amp &}"},
        {"  Ein\n  Hund \t", "[  ]{Ein Hund}[ \t]"},
        {"&nbsp;Ein&nbsp;&nbsp;Hund&nbsp;", "{Ein Hund}"},
        {"<p>  </p><p>@</p><p>&nbsp;</p><p> #!&amp; </p>", "[<p>  </p><p>@</p><p>&nbsp;</p><p> #!&amp; </p>]"},
        {"<script>if (a<b) x=\"</p>\";</script>Text", "[<script>if (a<b) x=\"</p>\";</script>]{Text}"},
        {"<script><script>x</script></script>y", "[<script><script>x</script></script>]{y}"},
        {"<SCRIPT type=x>a</ScRiPt >b<style>p{}</style>", "[<SCRIPT type=x>a</ScRiPt >]{b}[<style>p{}</style>]"},
        {"<script>alert(1) and more", "[<script>alert(1) and more]"},
        {"<scripts>Hund</scripts>", "[<scripts>]{Hund}[</scripts>]"},
        {"<pre>Ein <b>Hund</b></pre> Katze <code/>Maus <code>a<code>b</code>c</code>d",
         "[<pre>Ein <b>Hund</b></pre> ]{Katze}[ <code/>]{Maus}[ <code>a<code>b</code>c</code>]{d}"},
        {"</code></pre>Hund", "[</code></pre>]{Hund}"},
        {"Hund <p class=\"a", "{Hund}[ <p class=\"a]"},
        {"Hund <p", "{Hund}[ <p]"},
        {"a<!-- <p>b</p> -->c<!-- open", "{a}[<!-- <p>b</p> -->]{c}[<!-- open]"},
        {"<!DOCTYPE html><?xml x?>Hund<!>x", "[<!DOCTYPE html><?xml x?>]{Hund}[<!>]{x}"},
        {"<p title=\"a>b\" data-x='c>d'>x</p><p don't>y", "[<p title=\"a>b\" data-x='c>d'>]{x}[</p><p don't>]{y}"},
        {"\xFF<b>\xC3</b>\xE2\x82", "{\xFF}[<b>]{\xC3}[</b>]{\xE2\x82}"},
        {"<", "[<]"},
        {"&", "[&]"},
        {"", ""},
    };
    Buf b = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = split(&b, cases[i].doc, strlen(cases[i].doc));
        if (strcmp(got, cases[i].want) != 0)
            test_fail(__FILE__, __LINE__, "'%s': '%s', expected '%s'", cases[i].doc, got,
                      cases[i].want);
    }
    /* a huge attribute, and NUL bytes in the document: read to the end */
    size_t n = (size_t)4 << 20;
    char *doc = malloc(n + 32);
    CHECK(doc != NULL);
    memcpy(doc, "<a title=\"", 10);
    memset(doc + 10, 'x', n);
    memcpy(doc + 10 + n, "\">Hund</a>", 10);
    split(&b, doc, n + 20);
    CHECK(b.len == n + 26 && strcmp(b.p + b.len - 13, "]{Hund}[</a>]") == 0);
    split(&b, "a\0<b>\0", 6);
    CHECK(b.len == 10 && memcmp(b.p, "{a\0}[<b>\0]", 10) == 0);
    free(doc);
    buf_reset(&b);
    html_put_escaped_json(&b, "a<b & \"c\"> \xC3\xA4", 13);
    CHECK(strcmp(b.p, "a&lt;b &amp; \\\"c\\\"&gt; \xC3\xA4") == 0);
    buf_free(&b);
}

TEST(serve_request_html_and_form)
{
    Request r = {0};
    char msg[256];
    CHECK_EQ_INT(parse(&r, "{\"q\": [\"<p>Ein <b>Hund</b></p>\", \"Katze\"], \"source\": \"auto\", "
                           "\"target\": \"en\", \"format\": \"html\"}", msg), 0);
    CHECK(r.is_html && r.list && r.n_docs == 2 && r.n == 3);
    CHECK(strcmp(r.lines[0], "Ein") == 0 && strcmp(r.lines[1], "Hund") == 0);
    CHECK(strcmp(r.lines[2], "Katze") == 0);
    CHECK(r.detected && strcmp(r.detected, "de") == 0);
    CHECK(r.doc_first[0] == 0 && r.doc_first[2] == r.n_pieces);
    /* the segments count against the lines a request may hold (3) */
    CHECK_EQ_INT(parse(&r, "{\"q\": \"a<b>b</b>c<i>d</i>\", \"source\": \"de\", \"target\": "
                           "\"en\", \"format\": \"html\"}", msg), 413);
    CHECK(strcmp(msg, "'q' has more than 3 text segments, the most a request may hold") == 0);
    /* alternatives with HTML: none, as in LibreTranslate (one translation decoded) */
    CHECK_EQ_INT(parse(&r, "{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"format\": "
                           "\"html\", \"alternatives\": 1}", msg), 0);
    CHECK(r.is_html && r.alternatives == 1 && r.opt.nbest == 1);
    CHECK_EQ_INT(parse(&r, "{\"q\": \"a\", \"source\": \"de\", \"target\": \"en\", \"format\": "
                           "\"xml\"}", msg), 400);
    CHECK(strcmp(msg, "format 'xml' is not supported (only 'text' or 'html')") == 0);

    RequestLimits l = limits();
    request_form_start(&r);
    CHECK(request_form_add(&r, "q", 1, "Ein ", 0, 4));
    CHECK(request_form_add(&r, "q", 1, "Hund", 4, 4));       /* the value's second part */
    CHECK(request_form_add(&r, "q", 1, "Katze", 0, 5));      /* q again: a list */
    CHECK(request_form_add(&r, "source", 6, "de", 0, 2));
    CHECK(request_form_add(&r, "target", 6, "en", 0, 2));
    CHECK(request_form_add(&r, "alternatives", 12, "1", 0, 1));
    CHECK(request_form_add(&r, "api_key", 7, "k", 0, 1));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 0);
    CHECK(r.form == FORM_LIBRE && r.list && r.n == 2 && r.alternatives == 1 && r.has_key);
    CHECK(strcmp(r.lines[0], "Ein Hund") == 0 && strcmp(r.lines[1], "Katze") == 0);
    request_form_start(&r);
    CHECK(request_form_add(&r, "q", 1, "x", 0, 1));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "missing 'source' (LibreTranslate's form needs 'source' and 'target')") == 0);
    request_form_start(&r);
    CHECK(request_form_add(&r, "text", 4, "a\0b", 0, 3));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "form field 'text' contains a NUL byte") == 0);
    request_form_start(&r);                 /* a NUL in the key (a URL's "q%00=") */
    CHECK(request_form_add(&r, "q\0x", 3, "hallo", 0, 5));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "form field 'q' contains a NUL byte") == 0);
    request_form_start(&r);
    CHECK(request_form_add(&r, "text", 4, "a\xFF", 0, 2));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "form field 1: invalid UTF-8") == 0);
    request_form_start(&r);
    CHECK(request_form_add(&r, "text", 4, "a", 0, 1));
    CHECK(request_form_add(&r, "beam", 4, "2x", 0, 2));
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "'beam' must be an integer in [1, 4]") == 0);
    request_form_start(&r);
    CHECK_EQ_INT(request_parse_form(&r, &l, msg, sizeof msg), 400);
    CHECK(strcmp(msg, "missing 'text' (or LibreTranslate's 'q')") == 0);
    request_free(&r);
}

/* Out of memory at every allocation a request's parse makes (the failing
 * allocator of base/err.h reaches serve's buffers and arrays): each failure
 * is a 500 "out of memory", never a crash, and the same Request then parses
 * the body whole. */
TEST(serve_request_out_of_memory)
{
    char body[4096], *p = body;
    p += sprintf(p, "{\"q\": [");
    for (int i = 0; i < 3; i++) p += sprintf(p, "%s\"Zeile %d\"", i ? ", " : "", i);
    sprintf(p, "], \"source\": \"de\", \"target\": \"en\", \"format\": \"text\", \"apiKey\": \"\"}");
    int failed = 0;
    for (long k = 0; k < 200; k++) {
        Request r = {0};
        char msg[256];
        err_fail_alloc_after(k);
        const int st = parse(&r, body, msg);
        err_fail_alloc_after(-1);
        if (st == 0) {
            CHECK(r.n > 0);
            request_free(&r);
            break;
        }
        CHECK_EQ_INT(st, 500);
        CHECK(strcmp(msg, "out of memory") == 0);
        failed++;
        CHECK_EQ_INT(parse(&r, body, msg), 0);
        request_free(&r);
    }
    CHECK(failed > 3);
}
