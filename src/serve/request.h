/* request: a POST /translate body read and checked, in either form it
 * accepts: tfm's {"text": "line" | ["line", ...], "beam", "alpha", "nbest",
 * "max_len_b"} or LibreTranslate's {"q", "source", "target", "format",
 * "api_key", "alternatives"}. The lines are copied out of the JSON, so the
 * parse tree is gone when request_parse returns; the Request keeps its
 * memory for the next body. */
#ifndef TFM_SERVE_REQUEST_H
#define TFM_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "model/decode.h"
#include "serve/buf.h"

typedef enum { FORM_TFM, FORM_LIBRE } RequestForm;

typedef struct {
    int max_beam;               /* the server's beam: a request may ask less */
    int max_lines;              /* lines a request may hold (413 beyond) */
    DecodeOptions defaults;     /* the server's decoding options */
    const char *source_lang, *target_lang;     /* NULL: any pair is taken */
} RequestLimits;

typedef struct {
    RequestForm form;
    bool list;                  /* the lines came as a list (else one string) */
    int n;                      /* lines */
    const char **lines;         /* (n) NUL-terminated, into text */
    size_t *lens;               /* (n) */
    DecodeOptions opt;          /* the defaults with the request's changes */
    bool want_nbest;            /* "nbest" given: the answer lists them */
    int alternatives;           /* LibreTranslate's extra translations a line */
    bool has_key;               /* LibreTranslate's "api_key" was given */
    Buf key;                    /* ... this one */
    /* storage */
    Buf text;
    size_t *offs;
    int cap;
} Request;

/* Reads body[0..len). Returns 0, or the HTTP status of the error (400, 413)
 * with a one-line message in msg. */
int request_parse(Request *r, const char *body, size_t len, const RequestLimits *lim, char *msg,
                  size_t msg_size);
void request_free(Request *r);

#endif
