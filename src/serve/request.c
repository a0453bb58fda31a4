/* request: see request.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cjson/cJSON.h>

#include "base/text.h"
#include "serve/request.h"

/* The offset of the first NUL byte, raw or written as the escape \u0000,
 * or -1. Backslashes appear only inside JSON strings, where "\\" is one
 * escaped backslash, so escapes are read two bytes at a time. */
static long find_nul(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\0') return (long)i;
        if (s[i] != '\\' || i + 1 >= n) continue;
        if (s[i + 1] == 'u' && i + 6 <= n && memcmp(s + i + 2, "0000", 4) == 0) return (long)i;
        i++;
    }
    return -1;
}

static bool add_line(Request *r, const char *s, size_t n)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        size_t *offs = xrealloc(r->offs, sizeof *offs * (size_t)cap, NULL);
        if (offs) r->offs = offs;
        size_t *lens = xrealloc(r->lens, sizeof *lens * (size_t)cap, NULL);
        if (lens) r->lens = lens;
        const char **lines = xrealloc(r->lines, sizeof *lines * (size_t)cap, NULL);
        if (lines) r->lines = lines;
        if (!offs || !lens || !lines) return false;
        r->cap = cap;
    }
    r->offs[r->n] = r->text.len;
    r->lens[r->n] = n;
    r->n++;
    buf_put(&r->text, s, n);
    buf_put(&r->text, "", 1);       /* the NUL after each line */
    return !r->text.failed;
}

/* Grows *p (of *cap items of size each) to hold need items. */
static bool grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap) return true;
    int c = *cap ? 2 * *cap : 16;
    while (c < need) c *= 2;
    void *q = xrealloc(*p, size * (size_t)c, NULL);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static bool html_markup(void *ctx, const char *s, size_t n)
{
    Request *r = ctx;
    if (n == 0) return true;
    HtmlPiece *last = r->n_pieces > r->doc_first[r->n_docs] ? &r->pieces[r->n_pieces - 1] : NULL;
    if (last && last->line < 0) {       /* markup after markup: one piece */
        last->len += n;
    } else {
        if (!grow((void **)&r->pieces, &r->piece_cap, r->n_pieces + 1, sizeof *r->pieces))
            return false;
        r->pieces[r->n_pieces++] = (HtmlPiece){.line = -1, .off = r->html.len, .len = n};
    }
    buf_put(&r->html, s, n);
    return !r->html.failed;
}

static bool html_text(void *ctx, const char *s, size_t n)
{
    Request *r = ctx;
    if (r->n >= r->max_lines) {
        r->n++;         /* counted, for the message; nothing more is kept */
        return false;
    }
    if (!grow((void **)&r->pieces, &r->piece_cap, r->n_pieces + 1, sizeof *r->pieces)) return false;
    r->pieces[r->n_pieces++] = (HtmlPiece){.line = r->n};
    return add_line(r, s, n);
}

/* One text of the request: a line, or an HTML document's segments. */
static int add_text(Request *r, const char *s, size_t n, const char *name, char *msg, size_t size)
{
    if (!grow((void **)&r->doc_first, &r->doc_cap, r->n_docs + 2, sizeof *r->doc_first)) return 500;
    r->doc_first[r->n_docs] = r->n_pieces;
    if (!r->is_html) {
        r->n_docs++;
        return add_line(r, s, n) ? 0 : 500;
    }
    const HtmlSink sink = {html_markup, html_text, r};
    if (!html_split(s, n, &r->scratch, &sink)) {
        if (r->n <= r->max_lines) return 500;
        snprintf(msg, size, "'%s' has more than %d text segments, the most a request may hold",
                 name, r->max_lines);
        return 413;
    }
    r->n_docs++;
    r->doc_first[r->n_docs] = r->n_pieces;
    return 0;
}

/* key's value as an integer in [lo, hi]; false (with msg) otherwise */
static bool get_int(const cJSON *v, int lo, int hi, int *out, char *msg, size_t size)
{
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi) {
        snprintf(msg, size, "'%s' must be an integer in [%d, %d]", v->string, lo, hi);
        return false;
    }
    *out = (int)v->valuedouble;
    return true;
}

static bool get_number(const cJSON *v, double lo, double hi, float *out, char *msg, size_t size)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(msg, size, "'%s' must be a number in [%g, %g]", v->string, lo, hi);
        return false;
    }
    *out = (float)v->valuedouble;
    return true;
}

/* "text" or "q": a string, or a list of strings */
static int get_lines(Request *r, const cJSON *v, const RequestLimits *lim, char *msg, size_t size)
{
    const char *name = v->string;
    r->max_lines = lim->max_lines;
    if (cJSON_IsString(v)) {
        r->list = false;
        return add_text(r, v->valuestring, strlen(v->valuestring), name, msg, size);
    }
    if (!cJSON_IsArray(v)) {
        snprintf(msg, size, "'%s' must be a string or a list of strings", name);
        return 400;
    }
    r->list = true;
    int count = cJSON_GetArraySize(v);
    if (count > lim->max_lines) {
        snprintf(msg, size, "'%s' has %d lines, more than the %d a request may hold", name, count,
                 lim->max_lines);
        return 413;
    }
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) {
            snprintf(msg, size, "'%s'[%d] must be a string", name, i);
            return 400;
        }
        int st = add_text(r, e->valuestring, strlen(e->valuestring), name, msg, size);
        if (st) return st;
    }
    return 0;
}

static bool get_string(const cJSON *v, const char **out, char *msg, size_t size)
{
    if (!cJSON_IsString(v)) {
        snprintf(msg, size, "'%s' must be a string", v->string);
        return false;
    }
    *out = v->valuestring;
    return true;
}

/* tfm's form, strict: its keys only, each checked. */
static int read_tfm(Request *r, const cJSON *o, const RequestLimits *lim, char *msg, size_t size)
{
    static const char *const libre_only[] = {"source", "target", "format", "api_key",
                                             "alternatives"};
    const cJSON *lines = NULL;
    bool have_beam = false, have_nbest = false;
    r->form = FORM_TFM;
    for (const cJSON *v = o->child; v; v = v->next) {
        const char *k = v->string;
        bool ok = true;
        if (strcmp(k, "text") == 0) {
            if (lines) {
                snprintf(msg, size, "'text' given twice: one list of lines a request");
                return 400;
            }
            lines = v;
        } else if (strcmp(k, "beam") == 0) {
            ok = get_int(v, 1, lim->max_beam, &r->opt.beam, msg, size);
            have_beam = true;
        } else if (strcmp(k, "alpha") == 0) {
            ok = get_number(v, 0, DECODE_MAX_ALPHA, &r->opt.alpha, msg, size);
        } else if (strcmp(k, "nbest") == 0) {
            ok = get_int(v, 1, lim->max_beam, &r->opt.nbest, msg, size);
            have_nbest = r->want_nbest = true;
        } else if (strcmp(k, "max_len_b") == 0) {
            ok = get_int(v, 0, DECODE_MAX_LEN_B, &r->opt.max_len_b, msg, size);
        } else {
            for (size_t i = 0; i < sizeof libre_only / sizeof *libre_only; i++)
                if (strcmp(k, libre_only[i]) == 0) {
                    snprintf(msg, size, "'%s' does not go with 'text'", k);
                    return 400;
                }
            snprintf(msg, size, "unknown key '%.64s'", k);
            return 400;
        }
        if (!ok) return 400;
    }
    if (!lines) {
        snprintf(msg, size, "missing 'text' (or LibreTranslate's 'q')");
        return 400;
    }
    if (have_nbest && r->opt.nbest > r->opt.beam) {
        snprintf(msg, size, "'nbest' %d is larger than the beam (%d)%s", r->opt.nbest, r->opt.beam,
                 have_beam ? "" : ": give 'beam' too");
        return 400;
    }
    if (!have_nbest) r->opt.nbest = 1;
    return get_lines(r, lines, lim, msg, size);
}

/* LibreTranslate's "alternatives" as it reads it (Python's int() of the
 * value, then at least 0): a number, cut to an integer; true or false; a
 * string of an integer; null (LibreTranslate fails on it) is taken as 0. */
static bool get_alternatives(const cJSON *v, int max, int *out, char *msg, size_t size)
{
    double d = 0;
    if (cJSON_IsNumber(v)) {
        d = trunc(v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        d = cJSON_IsTrue(v);
    } else if (cJSON_IsString(v)) {
        char *end;
        const char *s = v->valuestring;
        while (*s && strchr(" \t\r\n", *s)) s++;
        long n = strtol(s, &end, 10);
        while (*end && strchr(" \t\r\n", *end)) end++;
        if (end == s || *end) {
            snprintf(msg, size, "'alternatives' is not a number");
            return false;
        }
        d = (double)n;
    } else if (!cJSON_IsNull(v)) {
        snprintf(msg, size, "'alternatives' is not a number");
        return false;
    }
    if (d > max) {
        snprintf(msg, size, "'alternatives' must be at most %d (the server's beam less one)", max);
        return false;
    }
    *out = d > 0 ? (int)d : 0;
    return true;
}

/* A language code as LibreTranslate takes it: a string, any case; NULL
 * when missing, null or empty ("missing" to LibreTranslate). */
static bool get_lang(const cJSON *v, const char **out, char *msg, size_t size)
{
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return true;
    if (!get_string(v, out, msg, size)) return false;
    if (!**out) *out = NULL;
    return true;
}

/* LibreTranslate's form, read as LibreTranslate reads it: its own keys
 * (the last of a key given twice, as Python's json keeps it), every other
 * key ignored: clients send "apiKey", "secret", ... and tfm's "text" or
 * "beam" beside "q" are LibreTranslate's unknown keys too. A /detect body
 * (r->detect) needs only "q". */
static int read_libre(Request *r, const cJSON *o, const RequestLimits *lim, char *msg, size_t size)
{
    const cJSON *q = NULL, *src = NULL, *tgt = NULL, *fmt = NULL, *alt = NULL, *key = NULL;
    r->form = FORM_LIBRE;
    for (const cJSON *v = o->child; v; v = v->next) {
        const char *k = v->string;
        if (strcmp(k, "q") == 0) q = v;
        else if (strcmp(k, "source") == 0) src = v;
        else if (strcmp(k, "target") == 0) tgt = v;
        else if (strcmp(k, "format") == 0) fmt = v;
        else if (strcmp(k, "alternatives") == 0) alt = v;
        else if (strcmp(k, "api_key") == 0) key = v;
    }
    if (key && cJSON_IsString(key)) {       /* null (Mastodon without a key) or another type: none */
        buf_reset(&r->key);
        buf_puts(&r->key, key->valuestring);
        r->has_key = true;
    }
    if (!q || cJSON_IsNull(q)) {
        snprintf(msg, size, "missing 'q'");
        return 400;
    }
    if (r->detect) return get_lines(r, q, lim, msg, size);
    const char *source, *target, *format = NULL;
    if (!get_lang(src, &source, msg, size) || !get_lang(tgt, &target, msg, size)) return 400;
    if (!source || !target) {
        snprintf(msg, size, "missing '%s' (LibreTranslate's form needs 'source' and 'target')",
                 source ? "target" : "source");
        return 400;
    }
    if (fmt && !cJSON_IsNull(fmt) && !get_string(fmt, &format, msg, size)) return 400;
    r->is_html = format && strcmp(format, "html") == 0;
    if (format && *format && !r->is_html && strcmp(format, "text") != 0) {
        snprintf(msg, size, "format '%.32s' is not supported (only 'text' or 'html')", format);
        return 400;
    }
    if (alt && !get_alternatives(alt, lim->max_beam - 1, &r->alternatives, msg, size)) return 400;
    /* no detection: the model translates from one language */
    const bool auto_source = strcasecmp(source, "auto") == 0;
    if (auto_source) r->detected = lim->source_lang ? lim->source_lang : "und";
    if (lim->source_lang && !auto_source && strcasecmp(source, lim->source_lang) != 0) {
        snprintf(msg, size, "%.32s is not supported", source);
        return 400;
    }
    if (lim->target_lang && strcasecmp(target, lim->target_lang) != 0) {
        snprintf(msg, size, "%.32s is not supported", target);
        return 400;
    }
    /* HTML has no alternatives in LibreTranslate: it answers empty lists */
    if (r->alternatives > 0 && !r->is_html) {
        r->opt.nbest = r->alternatives + 1;
        if (r->opt.beam < r->opt.nbest) r->opt.beam = r->opt.nbest;
    }
    return get_lines(r, q, lim, msg, size);
}

/* The fields of the object o: "q" (or a /detect body) is LibreTranslate's
 * form, anything else tfm's. */
static int read_fields(Request *r, const cJSON *o, const RequestLimits *lim, char *msg, size_t size)
{
    if (r->detect || cJSON_GetObjectItemCaseSensitive(o, "q")) return read_libre(r, o, lim, msg, size);
    return read_tfm(r, o, lim, msg, size);
}

static void reset(Request *r, const RequestLimits *lim)
{
    r->n = r->n_docs = r->n_pieces = 0;
    r->list = r->want_nbest = r->has_key = r->is_html = false;
    r->detected = NULL;
    r->alternatives = 0;
    r->form = FORM_TFM;
    r->opt = lim->defaults;
    r->max_lines = lim->max_lines;
    buf_reset(&r->text);
    buf_reset(&r->key);
    buf_reset(&r->html);
}

/* The checked object root (NULL: malformed, already said) read into r. */
static int read_root(Request *r, cJSON *root, const RequestLimits *lim, char *msg, size_t size)
{
    int status;
    if (!cJSON_IsObject(root)) {
        snprintf(msg, size, "the body must be a JSON object");
        status = 400;
    } else {
        status = read_fields(r, root, lim, msg, size);
    }
    cJSON_Delete(root);
    if (status == 500) snprintf(msg, size, "out of memory");
    if (status) return status;
    for (int i = 0; i < r->n; i++) r->lines[i] = r->text.p + r->offs[i];
    return 0;
}

int request_parse(Request *r, const char *body, size_t len, const RequestLimits *lim, char *msg,
                  size_t size)
{
    reset(r, lim);
    size_t bad;
    if (!text_utf8_valid(body, len, &bad)) {
        snprintf(msg, size, "invalid UTF-8 at byte %zu", bad + 1);
        return 400;
    }
    long nul = find_nul(body, len);
    if (nul >= 0) {
        snprintf(msg, size, "contains a NUL byte at byte %ld", nul + 1);
        return 400;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (root && end) {
        while (end < body + len && strchr(" \t\r\n", *end)) end++;
        if (end < body + len) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        if (end && end >= body && end <= body + len) at = end;
        long pos = at && at >= body && at <= body + len ? (long)(at - body) + 1 : 1;
        snprintf(msg, size, "malformed JSON at byte %ld", pos);
        return 400;
    }
    return read_root(r, root, lim, msg, size);
}

void request_form_start(Request *r)
{
    buf_reset(&r->form_data);
    r->n_fields = 0;
}

bool request_form_add(Request *r, const char *key, size_t key_len, const char *data, size_t off,
                      size_t size)
{
    Buf *f = &r->form_data;
    if (off == 0 || r->n_fields == 0) {
        if (!grow((void **)&r->fields, &r->field_cap, 4 * (r->n_fields + 1), sizeof *r->fields)) {
            f->failed = true;       /* request_parse_form says out of memory */
            return false;
        }
        if (r->n_fields > 0) buf_put(f, "", 1);        /* the last value's NUL */
        size_t *fd = &r->fields[4 * r->n_fields++];
        fd[0] = f->len;
        fd[1] = key ? key_len : 0;
        buf_put(f, key ? key : "", fd[1]);
        buf_put(f, "", 1);
        fd[2] = f->len;
        fd[3] = 0;
    }
    buf_put(f, data ? data : "", size);
    r->fields[4 * (r->n_fields - 1) + 3] += size;
    return !f->failed;
}

/* Is the form value s (NUL-terminated) a whole number, as JSON would give it? */
static bool form_number(const char *s, double *out)
{
    char *end;
    if (!*s || strchr(" \t\r\n", *s)) return false;
    *out = strtod(s, &end);
    return *end == '\0' && isfinite(*out);
}

int request_parse_form(Request *r, const RequestLimits *lim, char *msg, size_t size)
{
    static const char *const numbers[] = {"beam", "alpha", "nbest", "max_len_b", "alternatives"};
    reset(r, lim);
    if (r->n_fields > 0) buf_put(&r->form_data, "", 1);
    if (r->form_data.failed) {
        snprintf(msg, size, "out of memory");
        return 500;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *lists[2] = {NULL, NULL};     /* "text", "q" given more than once */
    bool ok = root != NULL;
    for (int i = 0; ok && i < r->n_fields; i++) {
        const size_t *fd = &r->fields[4 * i];
        const char *key = r->form_data.p + fd[0], *value = r->form_data.p + fd[2];
        size_t bad;
        if (strlen(key) != fd[1] || strlen(value) != fd[3]) {
            snprintf(msg, size, "form field '%.64s' contains a NUL byte", key);
            cJSON_Delete(root);
            return 400;
        }
        if (!text_utf8_valid(key, fd[1], &bad) || !text_utf8_valid(value, fd[3], &bad)) {
            snprintf(msg, size, "form field %d: invalid UTF-8", i + 1);
            cJSON_Delete(root);
            return 400;
        }
        const int l = strcmp(key, "text") == 0 ? 0 : strcmp(key, "q") == 0 ? 1 : -1;
        cJSON *v = NULL;
        double d;
        for (size_t k = 0; k < sizeof numbers / sizeof *numbers && !v; k++)
            if (strcmp(key, numbers[k]) == 0 && form_number(value, &d)) v = cJSON_CreateNumber(d);
        if (!v) v = cJSON_CreateString(value);
        if (!v) {
            ok = false;
        } else if (l >= 0 && lists[l]) {
            cJSON_AddItemToArray(lists[l], v);
        } else if (l >= 0 && cJSON_GetObjectItemCaseSensitive(root, key)) {
            /* the second of this key: the first becomes a list's first */
            cJSON *first = cJSON_DetachItemFromObjectCaseSensitive(root, key);
            lists[l] = cJSON_AddArrayToObject(root, key);
            ok = lists[l] != NULL;
            if (ok) {
                cJSON_AddItemToArray(lists[l], first);
                cJSON_AddItemToArray(lists[l], v);
            } else {
                cJSON_Delete(first);
                cJSON_Delete(v);
            }
        } else {
            cJSON_AddItemToObject(root, key, v);
        }
    }
    if (!ok) {
        cJSON_Delete(root);
        snprintf(msg, size, "out of memory");
        return 500;
    }
    return read_root(r, root, lim, msg, size);
}

void request_free(Request *r)
{
    buf_free(&r->text);
    buf_free(&r->key);
    buf_free(&r->html);
    buf_free(&r->scratch);
    buf_free(&r->form_data);
    FREE_ALL(r->offs, r->lens, r->lines, r->pieces, r->doc_first, r->fields);
    memset(r, 0, sizeof *r);
}
