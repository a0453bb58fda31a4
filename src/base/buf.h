/* buf: the one growable string buffer, reused from use to use (it keeps its
 * memory: the server's answers, a config written as JSON), with bytes,
 * printf and JSON string literals; and the one JSON escaper, a byte at a
 * time, for writers without a Buf (the log, error messages). Appends fail
 * only for want of memory (through xgrow: the tests' failing allocator
 * reaches them). */
#ifndef TFM_BASE_BUF_H
#define TFM_BASE_BUF_H

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

/* How byte c stands in a JSON string: 0 when as it is, else the length of
 * its escape written to esc (\" \\ \n \r \t, or \u00XX for the other
 * control characters and DEL). */
int json_escape_byte(unsigned char c, char esc[8]);

#endif
