/* buf: see buf.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#include "base/err.h"

void buf_reset(Buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->p) b->p[0] = '\0';
}

static bool reserve(Buf *b, size_t extra)
{
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    void *p = b->p;
    if (xgrow(&p, &b->cap, b->len + extra + 1, 1, NULL) != TFM_OK) {
        b->failed = true;
        return false;
    }
    b->p = p;
    return true;
}

void buf_put(Buf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        buf_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

int json_escape_byte(unsigned char c, char esc[8])
{
    static const char hex[] = "0123456789abcdef";
    if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) return 0;
    esc[0] = '\\';
    switch (c) {
    case '"': esc[1] = '"'; return 2;
    case '\\': esc[1] = '\\'; return 2;
    case '\n': esc[1] = 'n'; return 2;
    case '\r': esc[1] = 'r'; return 2;
    case '\t': esc[1] = 't'; return 2;
    default:
        memcpy(esc + 1, "u00", 3);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

void buf_json_chars(Buf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    size_t run = 0;     /* bytes copied as they are, in one go */
    for (size_t i = 0; i < n; i++) {
        char esc[8];
        const int e = json_escape_byte((unsigned char)s[i], esc);
        if (!e) continue;
        buf_put(b, s + run, i - run);
        buf_put(b, esc, (size_t)e);
        run = i + 1;
    }
    buf_put(b, s + run, n - run);
}

void buf_json_string(Buf *b, const char *s, size_t n)
{
    if (!reserve(b, n + 2)) return;
    buf_put(b, "\"", 1);
    buf_json_chars(b, s, n);
    buf_put(b, "\"", 1);
}

void buf_free(Buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
