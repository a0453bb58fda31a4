/* html: see html.h. One pass over the bytes; nothing is read past n. */
#include <string.h>

#include "serve/html.h"

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static bool is_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

static bool is_alnum(unsigned char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

/* Does s[i..n) begin with word (lower case), in any case? */
static bool has_word(const char *s, size_t n, size_t i, const char *word)
{
    size_t k = strlen(word);
    if (n - i < k) return false;
    for (size_t j = 0; j < k; j++)
        if ((s[i + j] | 0x20) != word[j]) return false;
    return true;
}

/* Does the '<' at i open markup (a tag, an end tag, a comment, <!...>,
 * <?...>)? Otherwise it is text, as a browser reads "a < b". */
static bool opens_markup(const char *s, size_t n, size_t i)
{
    if (i + 1 >= n) return false;
    unsigned char c = (unsigned char)s[i + 1];
    if (is_alpha(c) || c == '!' || c == '?') return true;
    return c == '/' && i + 2 < n && is_alpha((unsigned char)s[i + 2]);
}

/* Where the tag at i ends (after its '>'), or n. A quote opens an
 * attribute value only after '=', so "<p don't>" ends at its '>'. */
static size_t tag_end(const char *s, size_t n, size_t i)
{
    char quote = 0, last = 0;
    for (size_t j = i + 1; j < n; j++) {
        char c = s[j];
        if (quote) {
            if (c == quote) quote = 0;
            continue;
        }
        if (c == '>') return j + 1;
        if ((c == '"' || c == '\'') && last == '=') quote = c;
        if (!is_space((unsigned char)c)) last = c;
    }
    return n;
}

/* The position of needle (lower case) in s[from..n), any case, or n. */
static size_t find_ci(const char *s, size_t n, size_t from, const char *needle)
{
    for (size_t j = from; j < n; j++)
        if (has_word(s, n, j, needle)) return j;
    return n;
}

/* Appends code point cp as UTF-8; false for none (0, surrogates, too big). */
static bool put_code_point(Buf *b, unsigned long cp)
{
    char u[4];
    size_t k;
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    if (cp < 0x80) {
        u[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    buf_put(b, u, k);
    return true;
}

/* The entity at s[i] == '&' (ending in ';'), decoded onto b: the bytes it
 * took, or 0 when it is none we know (then '&' is a character). A no-break
 * space becomes a space: the segment is a sentence to translate. */
static size_t decode_entity(const char *s, size_t n, size_t i, Buf *b)
{
    static const struct { const char *name; char c; } named[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''},
        {"nbsp;", ' '},
    };
    if (i + 1 < n && s[i + 1] == '#') {
        size_t j = i + 2;
        const bool hex = j < n && (s[j] | 0x20) == 'x';
        if (hex) j++;
        unsigned long cp = 0;
        size_t digits = 0;
        for (; j < n && digits < 8; j++, digits++) {
            unsigned char c = (unsigned char)s[j];
            int d = c >= '0' && c <= '9' ? c - '0'
                    : hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
            if (d < 0) break;
            cp = cp * (hex ? 16 : 10) + (unsigned long)d;
        }
        if (digits == 0 || j >= n || s[j] != ';') return 0;
        if (cp == 0xA0) cp = ' ';
        return put_code_point(b, cp) ? j + 1 - i : 0;
    }
    for (size_t k = 0; k < sizeof named / sizeof *named; k++)
        if (has_word(s, n, i + 1, named[k].name)) {
            buf_put(b, &named[k].c, 1);
            return 1 + strlen(named[k].name);
        }
    return 0;
}

/* The text run s[a..b): whitespace around it is markup, the rest a
 * segment (or markup too, when nothing but spaces is left of it). */
static bool text_run(const char *s, size_t a, size_t b, Buf *scratch, const HtmlSink *sink)
{
    size_t p = a, q = b;
    while (p < q && is_space((unsigned char)s[p])) p++;
    while (q > p && is_space((unsigned char)s[q - 1])) q--;
    if (p == q) return sink->markup(sink->ctx, s + a, b - a);
    if (p > a && !sink->markup(sink->ctx, s + a, p - a)) return false;
    buf_reset(scratch);
    for (size_t i = p; i < q;) {
        size_t took = s[i] == '&' ? decode_entity(s, q, i, scratch) : 0;
        if (took) {
            i += took;
        } else if (is_space((unsigned char)s[i])) {
            buf_put(scratch, " ", 1);
            while (i < q && is_space((unsigned char)s[i])) i++;
        } else {
            buf_put(scratch, s + i, 1);
            i++;
        }
    }
    if (scratch->failed) return false;
    /* decoding may leave spaces at the ends (&nbsp;) or runs of them */
    size_t w = 0;
    for (size_t r = 0; r < scratch->len; r++)
        if (scratch->p[r] != ' ' || (w > 0 && scratch->p[w - 1] != ' ')) scratch->p[w++] = scratch->p[r];
    while (w > 0 && scratch->p[w - 1] == ' ') w--;
    scratch->len = w;
    /* a segment of only ASCII signs ("@" before a mention's name) is kept:
     * a model asked to translate it makes up a sentence */
    bool words = false;
    for (size_t k = 0; k < w && !words; k++)
        words = is_alnum((unsigned char)scratch->p[k]) || (unsigned char)scratch->p[k] >= 0x80;
    bool ok = words ? sink->text(sink->ctx, scratch->p, w)
                    : sink->markup(sink->ctx, s + p, q - p);
    return ok && (q == b || sink->markup(sink->ctx, s + q, b - q));
}

bool html_split(const char *s, size_t n, Buf *scratch, const HtmlSink *sink)
{
    static const char *const raw[] = {"script", "style"};       /* content is no HTML */
    static const char *const kept[] = {"code", "pre"};          /* content not translated */
    size_t i = 0, text = 0;
    int kept_depth = 0;
    while (i < n) {
        if (s[i] != '<' || !opens_markup(s, n, i)) {
            i++;
            continue;
        }
        if (i > text) {
            bool ok = kept_depth > 0 ? sink->markup(sink->ctx, s + text, i - text)
                                     : text_run(s, text, i, scratch, sink);
            if (!ok) return false;
        }
        size_t end;
        if (has_word(s, n, i, "<!--")) {
            end = find_ci(s, n, i + 4, "-->");
            end = end < n ? end + 3 : n;
        } else if (s[i + 1] == '!' || s[i + 1] == '?') {
            end = i + 1;
            while (end < n && s[end] != '>') end++;
            end = end < n ? end + 1 : n;
        } else {
            end = tag_end(s, n, i);
            const bool closing = s[i + 1] == '/';
            const size_t name = i + 1 + closing;
            size_t name_len = 0;
            while (name + name_len < end && is_alnum((unsigned char)s[name + name_len])) name_len++;
            const bool self_closing = end - i >= 2 && s[end - 1] == '>' && s[end - 2] == '/';
            for (int k = 0; k < 2; k++) {
                if (name_len != strlen(raw[k]) || !has_word(s, n, name, raw[k])) continue;
                if (!closing && !self_closing) {
                    /* through to its end tag, which is read next as a tag */
                    char close[9] = "</";
                    strcat(close, raw[k]);
                    end = find_ci(s, n, end, close);
                }
            }
            for (int k = 0; k < 2; k++) {
                if (name_len != strlen(kept[k]) || !has_word(s, n, name, kept[k])) continue;
                if (closing && kept_depth > 0) kept_depth--;
                else if (!closing && !self_closing) kept_depth++;
            }
        }
        if (!sink->markup(sink->ctx, s + i, end - i)) return false;
        i = text = end;
    }
    if (n > text) {
        bool ok = kept_depth > 0 ? sink->markup(sink->ctx, s + text, n - text)
                                 : text_run(s, text, n, scratch, sink);
        if (!ok) return false;
    }
    return true;
}

void html_put_escaped_json(Buf *out, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : NULL;
        if (!e) continue;
        buf_json_chars(out, s + run, i - run);
        buf_puts(out, e);
        run = i + 1;
    }
    buf_json_chars(out, s + run, n - run);
}
