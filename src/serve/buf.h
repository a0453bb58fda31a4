/* buf: a growable byte buffer that is reused from request to request (it
 * keeps its memory), with the appends the server's answers need: bytes,
 * printf, and a JSON string literal. Appends fail only for want of memory. */
#ifndef TFM_SERVE_BUF_H
#define TFM_SERVE_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *p;
    size_t len, cap;
    bool failed;        /* an append ran out of memory: the content is cut */
} Buf;

void buf_reset(Buf *b);                 /* empty, memory kept */
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s[0..n) as a JSON string, quotes included (s is valid UTF-8) */
void buf_json_string(Buf *b, const char *s, size_t n);
void buf_json_chars(Buf *b, const char *s, size_t n);      /* ... without the quotes */
void buf_free(Buf *b);

#endif
