/* fuzz_serve: tfm serve's request reader, on what any client may send. The
 * first byte picks the path: 0 a JSON body (request_parse), 1 form fields
 * (the rest is key\0value\0..., each value handed over in two parts as a
 * form decoder may), 2 an HTML document alone (html_split), modulo 3; with
 * its top bit set, a JSON or form body is POST /detect's. A request that
 * is read is answered as if each line translated to itself, through the
 * reply writer (/detect's answer for /detect): the answer must be valid JSON. The HTML splitter's pieces
 * must lie in the document, in order, and its segments be trimmed and
 * non-empty. */
#include <cjson/cJSON.h>

#include "fuzz_util.h"
#include "serve/html.h"
#include "serve/reply.h"
#include "serve/request.h"

typedef struct {
    const char *doc, *end, *at;     /* at: where the last markup piece ended */
} Walk;

static bool on_markup(void *ctx, const char *s, size_t n)
{
    Walk *w = ctx;
    if (s < w->at || s + n > w->end || n == 0) abort();
    w->at = s + n;
    return true;
}

static bool on_text(void *ctx, const char *s, size_t n)
{
    (void)ctx;
    if (n == 0 || s[0] == ' ' || s[n - 1] == ' ' || memmem(s, n, "  ", 2)) abort();
    return true;
}

/* The answer with each line as its own translation must parse. */
static void answer(const Request *r)
{
    ServeJob job = {0};
    job.n = r->n;
    job.opt = r->opt;
    if (!job_reserve(&job, r->n, r->opt.nbest)) abort();
    for (int i = 0; i < r->n; i++) {
        job.full_tokens[i] = job.src_tokens[i] = 1;
        for (int h = 0; h < r->opt.nbest; h++) {
            job.hyps[(size_t)i * r->opt.nbest + h] =
                (JobHyp){.off = (int)job.out.len, .len = (int)r->lens[i]};
            buf_put(&job.out, r->lines[i], r->lens[i]);
        }
    }
    Buf o = {0};
    if (r->detect) reply_detect(&o, "de");
    else reply_translations(&o, r, &job);
    if (o.failed) abort();
    cJSON *root = cJSON_Parse(o.p);
    if (!root) abort();
    cJSON_Delete(root);
    buf_free(&o);
    job_free(&job);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1) return 0;
    const int mode = data[0] % 3;
    const char *s = (const char *)data + 1;
    const size_t n = size - 1;
    RequestLimits lim = {.max_beam = 4, .max_lines = 64, .source_lang = "de", .target_lang = "en"};
    lim.defaults.beam = 4;
    lim.defaults.nbest = 1;
    lim.defaults.alpha = 0.6f;
    static Request r;       /* kept from input to input, as the server keeps it */
    char msg[256];
    r.detect = (data[0] & 0x80) != 0;
    if (mode == 0) {
        if (request_parse(&r, s, n, &lim, msg, sizeof msg) == 0) answer(&r);
    } else if (mode == 1) {
        request_form_start(&r);
        size_t i = 0;
        while (i < n) {
            const char *key = s + i;
            const char *kend = memchr(key, 0, n - i);
            if (!kend) break;
            i = (size_t)(kend - s) + 1;
            const char *value = s + i;
            const char *vend = memchr(value, 0, n - i);
            const size_t len = vend ? (size_t)(vend - value) : n - i;
            const size_t half = len / 2;
            const size_t key_len = (size_t)(kend - key);
            if (!request_form_add(&r, key, key_len, value, 0, half) ||
                !request_form_add(&r, key, key_len, value + half, half, len - half))
                abort();
            i += len + 1;
        }
        if (request_parse_form(&r, &lim, msg, sizeof msg) == 0) answer(&r);
    } else {
        Buf scratch = {0};
        Walk w = {s, s + n, s};
        const HtmlSink sink = {on_markup, on_text, &w};
        if (!html_split(s, n, &scratch, &sink)) abort();
        buf_free(&scratch);
    }
    return 0;
}
