/* config_write: TfmConfig -> text. JSON, every key of the schema in its
 * order, numbers in the shortest form that reads back the same: model
 * files keep their training config this way (CONF); `tfm train --dry-run`
 * and `tfm info` print it. And the architecture keys where two configs
 * differ, for the errors of a resume. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/config.h"
#include "model/config_schema.h"

/* s as a JSON string literal. */
static void buf_string(Buf *b, const char *s) { buf_json_string(b, s, strlen(s)); }

static const void *cfield(const TfmConfig *cfg, const KeySpec *k)
{
    return (const char *)cfg + k->offset;
}

static const char *enum_name(const KeySpec *k, int e)
{
    int n = 0;
    while (k->names[n]) n++;
    return e >= 0 && e < n ? k->names[e] : "?";
}

void config_value_text(char *buf, size_t n, const TfmConfig *cfg, const KeySpec *k)
{
    const void *f = cfield(cfg, k);
    switch (k->type) {
    case K_INT: snprintf(buf, n, "%d", *(const int *)f); break;
    case K_LONG: snprintf(buf, n, "%ld", *(const long *)f); break;
    case K_U64: snprintf(buf, n, "%llu", *(const unsigned long long *)f); break;
    case K_FLOAT: config_fmt_float(buf, n, *(const float *)f); break;
    case K_DOUBLE: config_fmt_double(buf, n, *(const double *)f); break;
    case K_BOOL: snprintf(buf, n, "%s", *(const bool *)f ? "true" : "false"); break;
    case K_ENUM: snprintf(buf, n, "%s", enum_name(k, *(const int *)f)); break;
    case K_STR: case K_STR_NULL: {
        const char *s = *(char *const *)f;
        snprintf(buf, n, "%s", s ? s : "null");
        break;
    }
    case K_PATHS: {     /* the first path, and how many more */
        const PathList *l = f;
        if (l->n <= 1) snprintf(buf, n, "%s", l->n ? l->v[0] : "null");
        else snprintf(buf, n, "%s and %d more", l->v[0], l->n - 1);
        break;
    }
    case K_NUMS: {
        const NumList *l = f;
        size_t o = 0;
        buf[0] = '\0';
        for (int i = 0; i < l->n && o < n; i++) {
            char num[40];
            config_fmt_double(num, sizeof num, l->v[i]);
            o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? "," : "", num);
        }
        if (l->n == 0) snprintf(buf, n, "null");
        break;
    }
    }
}

static void write_value(Buf *b, const TfmConfig *cfg, const KeySpec *k)
{
    const void *f = cfield(cfg, k);
    char num[40];
    switch (k->type) {
    case K_INT: case K_LONG: case K_U64: case K_BOOL:
        config_value_text(num, sizeof num, cfg, k);
        buf_printf(b, "%s", num);
        break;
    case K_FLOAT: case K_DOUBLE:
        config_value_text(num, sizeof num, cfg, k);
        /* "1.0", not "1": the key holds a real number. */
        buf_printf(b, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");
        break;
    case K_ENUM: buf_string(b, enum_name(k, *(const int *)f)); break;
    case K_STR: case K_STR_NULL: {
        const char *s = *(char *const *)f;
        if (s) buf_string(b, s);
        else buf_printf(b, "null");
        break;
    }
    case K_PATHS: {     /* one file stays a string */
        const PathList *l = f;
        if (l->n == 0) buf_printf(b, "null");
        else if (l->n == 1) buf_string(b, l->v[0]);
        else {
            buf_printf(b, "[");
            for (int i = 0; i < l->n; i++) {
                buf_printf(b, "%s", i ? ", " : "");
                buf_string(b, l->v[i]);
            }
            buf_printf(b, "]");
        }
        break;
    }
    case K_NUMS: {
        const NumList *l = f;
        if (l->n == 0) {
            buf_printf(b, "null");
            break;
        }
        buf_printf(b, "[");
        for (int i = 0; i < l->n; i++) {
            config_fmt_double(num, sizeof num, l->v[i]);
            buf_printf(b, "%s%s", i ? ", " : "", num);
        }
        buf_printf(b, "]");
        break;
    }
    }
}

/* Whether k's field holds the same value in a and b. */
static bool same_value(const TfmConfig *a, const TfmConfig *b, const KeySpec *k)
{
    const void *x = cfield(a, k), *y = cfield(b, k);
    switch (k->type) {
    case K_INT: case K_ENUM: return *(const int *)x == *(const int *)y;
    case K_LONG: return *(const long *)x == *(const long *)y;
    case K_U64: return *(const unsigned long long *)x == *(const unsigned long long *)y;
    case K_FLOAT: return *(const float *)x == *(const float *)y;
    case K_DOUBLE: return *(const double *)x == *(const double *)y;
    case K_BOOL: return *(const bool *)x == *(const bool *)y;
    case K_STR: case K_STR_NULL: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return s == t || (s && t && strcmp(s, t) == 0);
    }
    case K_PATHS: {
        const PathList *p = x, *q = y;
        if (p->n != q->n) return false;
        for (int i = 0; i < p->n; i++)
            if (strcmp(p->v[i], q->v[i]) != 0) return false;
        return true;
    }
    case K_NUMS: {
        const NumList *p = x, *q = y;
        return p->n == q->n && (p->n == 0 || memcmp(p->v, q->v, sizeof(double) * (size_t)p->n) == 0);
    }
    }
    return true;
}

int config_arch_diff(const TfmConfig *a, const TfmConfig *b, char *buf, size_t n)
{
    int count = 0;
    size_t o = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < config_n_keys; i++) {
        const KeySpec *k = &config_schema[i];
        if (!(k->flags & F_ARCH) || same_value(a, b, k)) continue;
        char va[64], vb[64];
        config_value_text(va, sizeof va, a, k);
        config_value_text(vb, sizeof vb, b, k);
        if (o < n) o += (size_t)snprintf(buf + o, n - o, "%s%s %s -> %s", count ? ", " : "",
                                         k->path, va, vb);
        count++;
    }
    return count;
}

/* Splits "train.lr.warmup" into at most 4 components of at most 31 chars. */
static int split_path(const char *path, char comp[4][32])
{
    int n = 0;
    while (n < 4) {
        size_t l = strcspn(path, ".");
        snprintf(comp[n++], 32, "%.*s", (int)l, path);
        if (!path[l]) break;
        path += l + 1;
    }
    return n;
}

char *config_to_json(const TfmConfig *cfg)
{
    Buf b = {0};
    char open_[4][32] = {{0}};   /* the objects currently open, below the root */
    int depth = 0;
    bool comma[5] = {false};     /* does level d already hold a member? */
    buf_printf(&b, "{");
    for (int i = 0; i < config_n_keys; i++) {
        char comp[4][32];
        int n = split_path(config_schema[i].path, comp), parents = n - 1;
        int common = 0;
        while (common < depth && common < parents && strcmp(open_[common], comp[common]) == 0)
            common++;
        for (; depth > common; depth--)
            buf_printf(&b, "\n%*s}", 2 * depth, "");
        for (; depth < parents; depth++) {
            buf_printf(&b, "%s\n%*s\"%s\": {", comma[depth] ? "," : "", 2 * (depth + 1), "", comp[depth]);
            comma[depth] = true;
            comma[depth + 1] = false;
            memcpy(open_[depth], comp[depth], 32);
        }
        buf_printf(&b, "%s\n%*s\"%s\": ", comma[depth] ? "," : "", 2 * (depth + 1), "", comp[n - 1]);
        write_value(&b, cfg, &config_schema[i]);
        comma[depth] = true;
    }
    for (; depth > 0; depth--)
        buf_printf(&b, "\n%*s}", 2 * depth, "");
    buf_printf(&b, "\n}\n");
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return b.p;             /* the caller frees it */
}
