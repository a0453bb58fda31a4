/* bleu_tokenize: sacreBLEU's line preprocessing (lowercase, rstrip, 13a /
 * intl / zh / char / none tokenizer) for bleu.c. Private to bleu.c; the public
 * API is bleu.h. */
#ifndef TFM_BLEU_TOKENIZE_H
#define TFM_BLEU_TOKENIZE_H

#include <stddef.h>

#include "text/bleu.h"
#include "base/err.h"

typedef struct { unsigned char *p; size_t n, cap; } BleuBuf;
typedef struct { size_t off, len; } BleuSpan;

/* The tokenizer's scratch space, reused for every line. Zero-initialize;
 * free with bleu_tok_free. */
typedef struct {
    BleuBuf a, b;                   /* ping-pong buffers of the tokenizer passes */
    BleuSpan *spans;                /* tokens of the last preprocessed line */
    size_t n_spans, cap_spans;
} BleuTok;

/* Preprocesses line[0..n) per opt: t->spans gets its tokens, *text the bytes they point into. */
TfmStatus bleu_tok_line(BleuTok *t, const BleuOptions *opt, const unsigned char *line,
                        size_t n, const unsigned char **text, TfmErr *err);

/* Preprocesses line and returns its tokens joined by single spaces, NUL-terminated, in t. */
TfmStatus bleu_tok_join(BleuTok *t, const BleuOptions *opt, const char *line, size_t len,
                        const char **out, size_t *out_len, TfmErr *err);

/* Frees t's buffers (not t itself). */
void bleu_tok_free(BleuTok *t);

#endif
