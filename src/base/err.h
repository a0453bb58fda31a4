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

/* At most this many keys of at most this many bytes (with the NUL) on an
 * error: a check of keys together names two or three. */
enum { ERR_MAX_KEYS = 4, ERR_KEY_SIZE = 48 };

typedef struct {
    TfmStatus status;
    int signo;           /* for TFM_INTERRUPTED */
    char msg[1024];
    /* The config keys the error is about, full paths ("train.lr.warmup"),
     * the one the message starts with first; none when it names none. A
     * caller that must know (which --set to blame) reads these, never the
     * wording. err_set clears them; err_keys sets them. */
    int n_keys;
    char keys[ERR_MAX_KEYS][ERR_KEY_SIZE];
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

/* Appends a hint ("; use --restart") to the existing message, cut to fit. */
void err_suffix(TfmErr *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* err_set, recording the config keys the error is about (see keys): a
 * NULL-terminated list, the first the one the message starts with, e.g.
 *   err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS("model.heads", "model.d_model"),
 *                "model.heads: %d heads do not divide model.d_model %d", h, d)  */
TfmStatus err_set_keys(TfmErr *err, TfmStatus status, const char *const *keys,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define ERR_KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

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

/* The owners of many arrays free them in one call: free() of each pointer
 * listed, e.g. FREE_ALL(c->tokens, c->src_off, c->tgt_off); NULLs are fine. */
void free_each(void *const *ptrs, size_t n);
#define FREE_ALL(...) free_each((void *const[]){__VA_ARGS__}, \
                                sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* Test hook: the allocation after `n` more successful ones fails; -1 disables. */
void err_fail_alloc_after(long n);

/* *out = a * b; false on overflow. */
bool size_mul_ok(size_t a, size_t b, size_t *out);

#endif
