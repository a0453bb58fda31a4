/* err: status codes and a caller-owned error message buffer.
 * Library code never prints or exits: it fills a TfmErr and returns its status.
 * Only main.c prints the message (prefixed "tfm: ") and picks the exit code. */
#ifndef TFM_ERR_H
#define TFM_ERR_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    TFM_OK = 0,
    TFM_ERR_USAGE,       /* bad command line: exit 2 */
    TFM_ERR_IO,          /* file missing, unreadable, unwritable */
    TFM_ERR_CONFIG,      /* bad config value or key */
    TFM_ERR_FORMAT,      /* malformed input file (model, vocab, text) */
    TFM_ERR_NOMEM,       /* allocation failed */
    TFM_ERR_NUMERIC,     /* NaN/Inf in training, wrong BLAS kernel */
    TFM_INTERRUPTED      /* stopped by a signal; err->signo says which */
} TfmStatus;

typedef struct {
    TfmStatus status;
    int signo;           /* for TFM_INTERRUPTED */
    char msg[1024];
    /* In an `mpirun` job (dist/dist.h): collective, every rank ends with
     * this status at the same point, so the job need not be aborted; quiet,
     * another rank reports it (rank 0, or the rank that failed). */
    bool collective, quiet;
} TfmErr;

/* Sets status and message (printf-style); returns status so callers can
 * `return err_set(err, TFM_ERR_IO, "...")`. err may be NULL. */
TfmStatus err_set(TfmErr *err, TfmStatus status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends context ("file.json: ") to the existing message. */
void err_prefix(TfmErr *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* malloc/calloc that set TFM_ERR_NOMEM on failure (n == 0 allocates 1 byte).
 * Tests can make the Nth allocation fail with err_fail_alloc_after(). */
void *xmalloc(size_t n, TfmErr *err);
void *xcalloc(size_t count, size_t size, TfmErr *err);
void *xrealloc(void *p, size_t n, TfmErr *err);

/* A malloc'd copy of s (through xmalloc, so tests can make it fail); NULL
 * with TFM_ERR_NOMEM set on failure. */
char *xstrdup(const char *s, TfmErr *err);

/* The one growth helper: makes room for at least `need` elements of `elem`
 * bytes in *p, whose capacity is *cap elements, doubling from 16. On failure
 * (including a size that overflows) *p and *cap are unchanged and
 * TFM_ERR_NOMEM is returned and set. */
TfmStatus xgrow(void **p, size_t *cap, size_t need, size_t elem, TfmErr *err);

/* Test hook: the allocation after `n` more successful ones fails; -1 disables. */
void err_fail_alloc_after(long n);

/* *out = a * b; false on overflow. */
bool size_mul_ok(size_t a, size_t b, size_t *out);

#endif
