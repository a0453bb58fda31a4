/* err: error buffer helpers and the checked allocators. */
#include "base/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_msg(TfmErr *err, TfmStatus status, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->status = status;
    err->n_keys = 0;
}

TfmStatus err_set(TfmErr *err, TfmStatus status, const char *fmt, ...)
{
    if (!err) return status;
    va_list ap;
    va_start(ap, fmt);
    set_msg(err, status, fmt, ap);
    va_end(ap);
    return status;
}

TfmStatus err_set_keys(TfmErr *err, TfmStatus status, const char *const *keys,
                       const char *fmt, ...)
{
    if (!err) return status;
    va_list ap;
    va_start(ap, fmt);
    set_msg(err, status, fmt, ap);
    va_end(ap);
    for (; *keys && err->n_keys < ERR_MAX_KEYS; keys++)
        snprintf(err->keys[err->n_keys++], ERR_KEY_SIZE, "%s", *keys);
    return status;
}

void err_suffix(TfmErr *err, const char *fmt, ...)
{
    if (!err) return;
    size_t n = strnlen(err->msg, sizeof err->msg - 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - n, fmt, ap);
    va_end(ap);
}

void err_prefix(TfmErr *err, const char *fmt, ...)
{
    if (!err) return;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t hlen = (size_t)n < sizeof head ? (size_t)n : sizeof head - 1;
    size_t cap = sizeof err->msg - 1;
    if (hlen > cap) hlen = cap;
    size_t old = strnlen(err->msg, cap);
    if (old > cap - hlen) old = cap - hlen;
    memmove(err->msg + hlen, err->msg, old);   /* keep the tail that fits */
    memcpy(err->msg, head, hlen);
    err->msg[hlen + old] = '\0';
}

/* Fault injection for tests: a countdown; -1 means never fail. Only tests set it. */
static long alloc_countdown = -1;

void free_each(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++) free(ptrs[i]);
}

void err_fail_alloc_after(long n) { alloc_countdown = n; }

static bool injected_failure(void)
{
    if (alloc_countdown < 0) return false;
    if (alloc_countdown == 0) { alloc_countdown = -1; return true; }
    alloc_countdown--;
    return false;
}

void *xmalloc(size_t n, TfmErr *err)
{
    void *p = injected_failure() ? NULL : malloc(n ? n : 1);
    if (!p) err_set(err, TFM_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *xcalloc(size_t count, size_t size, TfmErr *err)
{
    size_t n;
    if (!size_mul_ok(count, size, &n)) {
        err_set(err, TFM_ERR_NOMEM, "allocation size overflows (%zu x %zu)", count, size);
        return NULL;
    }
    void *p = injected_failure() ? NULL : calloc(n ? count : 1, n ? size : 1);
    if (!p) err_set(err, TFM_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *xrealloc(void *old, size_t n, TfmErr *err)
{
    void *p = injected_failure() ? NULL : realloc(old, n ? n : 1);
    if (!p) err_set(err, TFM_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

char *xstrdup(const char *s, TfmErr *err)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n, err);
    if (p) memcpy(p, s, n);
    return p;
}

TfmStatus xgrow(void **p, size_t *cap, size_t need, size_t elem, TfmErr *err)
{
    if (need <= *cap) return TFM_OK;
    size_t c = *cap ? *cap : 16, bytes;
    while (c < need) {
        if (c > SIZE_MAX / 2) return err_set(err, TFM_ERR_NOMEM, "allocation size overflows");
        c *= 2;
    }
    if (!size_mul_ok(c, elem, &bytes))
        return err_set(err, TFM_ERR_NOMEM, "allocation size overflows (%zu x %zu)", c, elem);
    void *q = xrealloc(*p, bytes, err);
    if (!q) return TFM_ERR_NOMEM;
    *p = q;
    *cap = c;
    return TFM_OK;
}

bool size_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}
