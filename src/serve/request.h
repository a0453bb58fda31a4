/* request: a POST /translate or /detect body read and checked, in either
 * form it accepts: tfm's {"text": "line" | ["line", ...], "beam", "alpha",
 * "nbest", "max_len_b"}, strict (an unknown key is an error), or, when "q"
 * is there, LibreTranslate's {"q", "source", "target", "format", "api_key",
 * "alternatives"}, read as LibreTranslate reads it (other keys ignored,
 * language codes in any case, "alternatives" as Python's int() takes it),
 * as JSON or as form fields (LibreTranslate takes both; the HTTP side
 * decodes the form). With "format": "html" each text of "q" is a document
 * whose text segments are the lines (serve/html.h).
 * The lines are copied out of the JSON, so the parse tree is gone when
 * request_parse returns; the Request keeps its memory for the next body. */
#ifndef TFM_SERVE_REQUEST_H
#define TFM_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "decode/decoder.h"
#include "base/buf.h"
#include "serve/html.h"

typedef enum { FORM_TFM, FORM_LIBRE } RequestForm;

typedef struct {
    int max_beam;               /* the server's beam: a request may ask less */
    int max_lines;              /* lines a request may hold (413 beyond) */
    DecodeOptions defaults;     /* the server's decoding options */
    const char *source_lang, *target_lang;     /* NULL: any pair is taken */
} RequestLimits;

/* A piece of an HTML document: a line's translation, or markup. */
typedef struct {
    int line;                   /* >= 0: that line; -1: markup html[off..off+len) */
    size_t off, len;
} HtmlPiece;

typedef struct {
    bool detect;                /* set by the caller: a /detect body (only "q" is read) */
    RequestForm form;
    bool list;                  /* the lines came as a list (else one string) */
    int n;                      /* lines */
    int n_docs;                 /* texts given: lines, or HTML documents */
    bool is_html;               /* "format": "html" */
    const char *detected;       /* "source": "auto": the language to report, else NULL */
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
    Buf html;                   /* the documents' markup */
    Buf scratch;
    HtmlPiece *pieces;
    int n_pieces, piece_cap;
    int *doc_first;             /* (n_docs + 1) a document's first piece */
    int doc_cap, max_lines;
    Buf form_data;              /* form fields: key NUL value NUL ... */
    size_t *fields;             /* (n_fields · 4) key off, key len, value off, value len */
    int n_fields, field_cap;
} Request;

/* Reads body[0..len). Returns 0, or the HTTP status of the error (400, 413)
 * with a one-line message in msg. */
int request_parse(Request *r, const char *body, size_t len, const RequestLimits *lim, char *msg,
                  size_t msg_size);

/* A form body, as its decoder hands the fields over: request_form_start,
 * then request_form_add for each chunk of a field's value (off: where the
 * chunk goes in the value; 0 starts a field), then request_parse_form,
 * which checks the fields as request_parse checks JSON (numbers as text
 * are numbers; "q" given several times is a list). */
void request_form_start(Request *r);
/* key: key_len bytes (a NUL among them is refused by request_parse_form).
 * A failure (out of memory) is remembered: request_parse_form answers 500. */
bool request_form_add(Request *r, const char *key, size_t key_len, const char *data, size_t off,
                      size_t size);
int request_parse_form(Request *r, const RequestLimits *lim, char *msg, size_t msg_size);

void request_free(Request *r);

#endif
