/* reply: see reply.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "serve/reply.h"

void reply_error(Buf *o, const char *msg)
{
    buf_reset(o);
    buf_puts(o, "{\"error\":");
    buf_json_string(o, msg, strlen(msg));
    buf_puts(o, "}\n");
}

static void put_text(Buf *o, const ServeJob *job, const JobHyp *h)
{
    buf_json_string(o, job->out.p ? job->out.p + h->off : "", h->len > 0 ? (size_t)h->len : 0);
}

static void put_number(Buf *o, float x)
{
    if (isfinite(x)) buf_printf(o, "%.8g", x);
    else buf_puts(o, "null");
}

/* HTML document d: its markup as it came, its segments' translations
 * escaped in their places. */
static void put_html(Buf *o, const Request *r, const ServeJob *job, int d)
{
    buf_puts(o, "\"");
    for (int k = r->doc_first[d]; k < r->doc_first[d + 1]; k++) {
        const HtmlPiece *pc = &r->pieces[k];
        if (pc->line < 0) {
            buf_json_chars(o, r->html.p + pc->off, pc->len);
            continue;
        }
        const JobHyp *h = &job->hyps[(size_t)pc->line * job->opt.nbest];
        if (h->len > 0) html_put_escaped_json(o, job->out.p + h->off, (size_t)h->len);
    }
    buf_puts(o, "\"");
}

/* The best translation of each text: a list, or the one string. */
static void put_best(Buf *o, const Request *r, const ServeJob *job, bool list)
{
    const int nbest = job->opt.nbest;
    if (list) buf_puts(o, "[");
    for (int i = 0; i < r->n_docs; i++) {
        if (i) buf_puts(o, ",");
        if (r->is_html) put_html(o, r, job, i);
        else put_text(o, job, &job->hyps[(size_t)i * nbest]);
    }
    if (list) buf_puts(o, "]");
}

/* LibreTranslate's {"confidence", "language"} for lang: nothing is
 * detected, so the server's source language at 100 ("und": 0). Written as
 * LibreTranslate writes them (Python floats). */
static void put_guess(Buf *o, const char *lang)
{
    buf_puts(o, "{\"confidence\":");
    buf_puts(o, strcmp(lang, "und") == 0 ? "0.0" : "100.0");
    buf_puts(o, ",\"language\":");
    buf_json_string(o, lang, strlen(lang));
    buf_puts(o, "}");
}

/* LibreTranslate's answer to "source": "auto": the language, for each text. */
static void put_detected(Buf *o, const Request *r)
{
    buf_puts(o, ",\"detectedLanguage\":");
    if (r->list) buf_puts(o, "[");
    for (int i = 0; i < (r->list ? r->n_docs : 1); i++) {
        if (i) buf_puts(o, ",");
        put_guess(o, r->detected);
    }
    if (r->list) buf_puts(o, "]");
}

static void put_nbest(Buf *o, const ServeJob *job)
{
    const int nbest = job->opt.nbest;
    buf_puts(o, "[");
    for (int i = 0; i < job->n; i++) {
        buf_puts(o, i ? ",[" : "[");
        for (int h = 0, k = 0; h < nbest; h++) {
            const JobHyp *hy = &job->hyps[(size_t)i * nbest + h];
            if (hy->len < 0) continue;
            buf_puts(o, k++ ? ",{\"text\":" : "{\"text\":");
            put_text(o, job, hy);
            buf_puts(o, ",\"logprob\":");
            put_number(o, hy->logprob);
            buf_puts(o, ",\"score\":");
            put_number(o, hy->score);
            buf_puts(o, "}");
        }
        buf_puts(o, "]");
    }
    buf_puts(o, "]");
}

/* LibreTranslate's alternatives: the 2nd to nbest-th translations (none
 * for HTML, where LibreTranslate has none either). */
static void put_alternatives(Buf *o, const Request *r, const ServeJob *job)
{
    const int nbest = job->opt.nbest;
    if (r->list) buf_puts(o, "[");
    for (int i = 0; i < (r->list ? r->n_docs : 1); i++) {
        buf_puts(o, i ? ",[" : "[");
        for (int h = 1, k = 0; !r->is_html && h < nbest; h++) {
            const JobHyp *hy = &job->hyps[(size_t)i * nbest + h];
            if (hy->len < 0) continue;
            if (k++) buf_puts(o, ",");
            put_text(o, job, hy);
        }
        buf_puts(o, "]");
    }
    if (r->list) buf_puts(o, "]");
}

static void put_warnings(Buf *o, const ServeJob *job)
{
    int k = 0;
    for (int i = 0; i < job->n; i++) {
        if (job->full_tokens[i] <= job->src_tokens[i]) continue;
        buf_puts(o, k++ ? "," : ",\"warnings\":[");
        char msg[128];
        int n = snprintf(msg, sizeof msg, "line %d: %d tokens, truncated to the model's limit of %d",
                         i + 1, job->full_tokens[i], job->src_tokens[i]);
        buf_json_string(o, msg, (size_t)n);
    }
    if (k) buf_puts(o, "]");
}

void reply_translations(Buf *o, const Request *r, const ServeJob *job)
{
    buf_reset(o);
    if (r->form == FORM_LIBRE) {
        buf_puts(o, "{\"translatedText\":");
        put_best(o, r, job, r->list);
        if (r->alternatives > 0) {
            buf_puts(o, ",\"alternatives\":");
            put_alternatives(o, r, job);
        }
        if (r->detected) put_detected(o, r);
    } else {
        buf_puts(o, "{\"translations\":");
        put_best(o, r, job, true);
        if (r->want_nbest) {
            buf_puts(o, ",\"nbest\":");
            put_nbest(o, job);
        }
    }
    put_warnings(o, job);
    buf_puts(o, "}\n");
}

static const char *language_name(const char *code)
{
    static const char *const names[][2] = {
        {"ar", "Arabic"}, {"cs", "Czech"}, {"de", "German"}, {"en", "English"},
        {"es", "Spanish"}, {"fr", "French"}, {"it", "Italian"}, {"ja", "Japanese"},
        {"nl", "Dutch"}, {"pl", "Polish"}, {"pt", "Portuguese"}, {"ru", "Russian"},
        {"tr", "Turkish"}, {"uk", "Ukrainian"}, {"zh", "Chinese"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i][0], code) == 0) return names[i][1];
    return code;
}

static void put_language(Buf *o, const char *code, const char *target)
{
    buf_puts(o, "{\"code\":");
    buf_json_string(o, code, strlen(code));
    buf_puts(o, ",\"name\":");
    const char *name = language_name(code);
    buf_json_string(o, name, strlen(name));
    buf_puts(o, ",\"targets\":[");
    if (target) buf_json_string(o, target, strlen(target));
    buf_puts(o, "]}");
}

void reply_detect(Buf *o, const char *source)
{
    buf_reset(o);
    buf_puts(o, "[");
    put_guess(o, source ? source : "und");
    buf_puts(o, "]\n");
}

void reply_languages(Buf *o, const char *source, const char *target)
{
    buf_reset(o);
    buf_puts(o, "[");
    if (source) put_language(o, source, target);
    if (target) {
        if (source) buf_puts(o, ",");
        put_language(o, target, NULL);
    }
    buf_puts(o, "]\n");
}
