/* config: JSON config -> TfmConfig through one schema table. Every key the
 * config knows is a row (JSON path, type, struct offset, range, default); the
 * parser, the defaults, the range checks, the freeing and the JSON writer
 * (config_write.c) all walk that table. It does not know what the keys
 * mean: that is train's and decode's business (docs/config.md). */
#include "model/config.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/path.h"
#include "base/text.h"
#include "model/config_schema.h"
#include "model/json_strict.h"
#include "text/bpe.h"

/* Enum fields are written through an int pointer. */
_Static_assert(sizeof(NormKind) == sizeof(int), "NormKind must be int-sized");
_Static_assert(sizeof(LrSchedule) == sizeof(int), "LrSchedule must be int-sized");

static const char *const norm_names[] = {"post", "pre", NULL};
static const char *const norm_type_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const attention_names[] = {"softmax", "linear", NULL};
static const char *const output_vocab_names[] = {"all", "target", NULL};
static const char *const precision_names[] = {"fp32", "bf16", "auto", NULL};
static const char *const parallel_names[] = {"products", "sentences", "auto", NULL};
static const char *const schedule_names[] = {"noam", "inverse_sqrt", "constant", "linear",
                                             "cosine", NULL};
static const char *const horizon_names[] = {"steps", "time", NULL};
static const char *const wd_scope_names[] = {"all", "matrices", NULL};

#define OFF(field) offsetof(TfmConfig, field)
#define JMAX ((double)CONFIG_MAX_JSON_INT)
#define INT_F(p, f, lo, hi, d, fl) {p, K_INT, OFF(f), lo, hi, false, false, d, NULL, NULL, fl}
#define INT_(p, f, lo, hi, d)   INT_F(p, f, lo, hi, d, 0)
#define LONG_(p, f, lo, d)      {p, K_LONG, OFF(f), lo, JMAX, false, false, d, NULL, NULL, 0}
#define FLT_(p, f, lo, lo_open, hi, hi_open, d) \
    {p, K_FLOAT, OFF(f), lo, hi, lo_open, hi_open, d, NULL, NULL, 0}
#define PROB_(p, f, d)          FLT_(p, f, 0, false, 1, true, d)      /* [0, 1) */
#define PROB_F(p, f, d, fl)     {p, K_FLOAT, OFF(f), 0, 1, false, true, d, NULL, NULL, fl}
#define NONNEG_(p, f, d)        FLT_(p, f, 0, false, FLT_MAX, false, d)
#define POS_(p, f, d)           FLT_(p, f, 0, true, FLT_MAX, false, d)
#define BOOL_F(p, f, d, fl)     {p, K_BOOL, OFF(f), 0, 1, false, false, d, NULL, NULL, fl}
#define BOOL_(p, f, d)          BOOL_F(p, f, d, 0)
#define ENUM_F(p, f, names, d, fl) {p, K_ENUM, OFF(f), 0, 0, false, false, d, NULL, names, fl}
#define ENUM_(p, f, names, d)   ENUM_F(p, f, names, d, 0)
#define STR_(p, f, d, flags)    {p, K_STR, OFF(f), 0, 0, false, false, 0, d, NULL, flags}

/* The schema, in the order config_to_json writes it. The keys, their
 * defaults and meaning: docs/config.md. */
const KeySpec config_schema[] = {
    {"data.train_src", K_PATHS, OFF(data.train_src), 0, 0, false, false, 0, NULL, NULL, F_REQUIRED | F_INPUT | F_MUST_EXIST},
    {"data.train_tgt", K_PATHS, OFF(data.train_tgt), 0, 0, false, false, 0, NULL, NULL, F_REQUIRED | F_INPUT | F_MUST_EXIST},
    {"data.train_weights", K_NUMS, OFF(data.train_weights), 0, 1e9, true, false, 0, NULL, NULL, 0},
    STR_("data.valid_src", data.valid_src, NULL, F_REQUIRED | F_INPUT | F_MUST_EXIST),
    STR_("data.valid_tgt", data.valid_tgt, NULL, F_REQUIRED | F_INPUT | F_MUST_EXIST),
    {"data.vocab", K_STR_NULL, OFF(data.vocab), 0, 0, false, false, 0, NULL, NULL, F_INPUT | F_MUST_EXIST},
    /* the range bpe_learn accepts, so a config that passes trains */
    INT_("data.vocab_size", data.vocab_size, BPE_MIN_VOCAB, BPE_MAX_VOCAB, 8000),
    INT_F("data.max_len", data.max_len, 1, 65536, 128, F_ARCH),     /* the positions */
    PROB_("data.bpe_dropout", data.bpe_dropout, 0.0),
    {"data.shuffle_buffer", K_LONG, OFF(data.shuffle_buffer), 1, JMAX, false, false, 1000000, NULL, NULL, 0},
    {"data.bpe_sample", K_LONG, OFF(data.bpe_sample), 0, JMAX, false, false, 2000000, NULL, NULL, 0},

    /* every model.* key is F_ARCH (test_config.c holds new ones to it) */
    INT_F("model.d_model", model.d_model, 1, 65536, 512, F_ARCH),
    INT_F("model.heads", model.heads, 1, 4096, 8, F_ARCH),
    INT_F("model.enc_layers", model.enc_layers, 1, 1024, 6, F_ARCH),
    INT_F("model.dec_layers", model.dec_layers, 1, 1024, 6, F_ARCH),
    INT_F("model.d_ff", model.d_ff, 1, 1 << 20, 2048, F_ARCH),
    PROB_F("model.dropout", model.dropout, 0.1, F_ARCH),
    PROB_F("model.attn_dropout", model.attn_dropout, 0.0, F_ARCH),
    PROB_F("model.relu_dropout", model.relu_dropout, 0.0, F_ARCH),
    PROB_F("model.word_dropout", model.word_dropout, 0.0, F_ARCH),
    ENUM_F("model.norm", model.norm, norm_names, NORM_POST, F_ARCH),
    ENUM_F("model.norm_type", model.norm_type, norm_type_names, NORM_LAYER, F_ARCH),
    ENUM_F("model.attention", model.attention, attention_names, 0, F_ARCH),
    ENUM_F("model.output_vocab", model.output_vocab, output_vocab_names, OUTPUT_ALL, F_ARCH),
    BOOL_F("model.share_embeddings", model.share_embeddings, 1, F_ARCH),

    {"train.seed", K_U64, OFF(train.seed), 0, JMAX, false, false, 1, NULL, NULL, 0},
    INT_("train.batch_tokens", train.batch_tokens, 1, 1 << 24, 4096),
    LONG_("train.max_steps", train.max_steps, 0, 100000),
    LONG_("train.max_epochs", train.max_epochs, 0, 0),
    {"train.max_time_s", K_DOUBLE, OFF(train.max_time_s), 0, DBL_MAX, false, false, 0, NULL, NULL, 0},
    PROB_("train.label_smoothing", train.label_smoothing, 0.1),
    NONNEG_("train.rdrop", train.rdrop, 0.0),
    LONG_("train.dropout_warmup", train.dropout_warmup, 0, 0),
    NONNEG_("train.clip_norm", train.clip_norm, 0.0),
    NONNEG_("train.weight_decay", train.weight_decay, 0.0),
    ENUM_("train.weight_decay_scope", train.weight_decay_scope, wd_scope_names, WD_SCOPE_ALL),
    ENUM_("train.lr.schedule", train.lr.schedule, schedule_names, LR_NOAM),
    INT_("train.lr.warmup", train.lr.warmup, 1, INT_MAX, 4000),
    POS_("train.lr.factor", train.lr.factor, 1.0),
    POS_("train.lr.peak", train.lr.peak, 0.0005),
    NONNEG_("train.lr.final", train.lr.final, 0.0),
    ENUM_("train.lr.horizon", train.lr.horizon, horizon_names, LR_HORIZON_STEPS),
    PROB_("train.adam.beta1", train.beta1, 0.9),
    PROB_("train.adam.beta2", train.beta2, 0.98),
    POS_("train.adam.eps", train.eps, 1e-9),
    LONG_("train.valid_every", train.valid_every, 1, 1000),
    LONG_("train.save_every", train.save_every, 1, 1000),
    BOOL_("train.valid_bleu", train.valid_bleu, 0),
    INT_("train.patience", train.patience, 0, INT_MAX, 0),
    STR_("train.out_dir", train.out_dir, "checkpoints", 0),
    INT_("train.keep", train.keep, 1, INT_MAX, 5),
    INT_("train.average_last", train.average_last, 0, INT_MAX, 0),
    PROB_("train.ema", train.ema, 0.0),
    LONG_("train.log_every", train.log_every, 0, 0),
    ENUM_("train.precision", train.precision, precision_names, 0),
    STR_("train.model", train.model, "model.tfm", 0),
    {"train.init", K_STR_NULL, OFF(train.init), 0, 0, false, false, 0, NULL, NULL, F_INPUT | F_MUST_EXIST},
    INT_("train.threads", train.threads, 0, 1024, 0),
    ENUM_("train.parallel", train.parallel, parallel_names, PARALLEL_PRODUCTS),

    INT_("decode.beam", decode.beam, 1, DECODE_MAX_BEAM, 4),
    /* a user's config is held to tfm translate's ranges too (check_decode);
     * these looser ones are for configs inside models written before them */
    NONNEG_("decode.alpha", decode.alpha, 0.6),
    NONNEG_("decode.max_len_a", decode.max_len_a, 1.0),
    INT_("decode.max_len_b", decode.max_len_b, 0, INT_MAX, 50),
};
const int config_n_keys = sizeof config_schema / sizeof *config_schema;
enum { N_KEYS = sizeof config_schema / sizeof *config_schema };
_Static_assert((int)N_KEYS <= (int)CONFIG_MAX_KEYS, "raise CONFIG_MAX_KEYS");

static void *field(TfmConfig *cfg, const KeySpec *k) { return (char *)cfg + k->offset; }
static const void *cfield(const TfmConfig *cfg, const KeySpec *k)
{
    return (const char *)cfg + k->offset;
}

/* ---- small helpers ---- */

/* Shortest "%.Ng" that reads back as the same double (or float); whole
 * numbers as integers ("260", not "2.6e+02"). */
void config_fmt_double(char *buf, size_t n, double v)
{
    if (v == floor(v) && fabs(v) < 1e17) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

void config_fmt_float(char *buf, size_t n, float v)
{
    if (v == floorf(v) && fabsf(v) < 1e9f) {
        snprintf(buf, n, "%.0f", (double)v);
        return;
    }
    /* Parsed back as cJSON does it: strtod, then narrowed to float. */
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)v);
        if ((float)strtod(buf, NULL) == v) return;
    }
}

/* Appends s as a JSON string literal, cut after `limit` bytes ("...") when
 * limit > 0, so that error messages stay one short line. */
static void quote(char *buf, size_t n, const char *s, size_t limit)
{
    size_t o = 0;
    if (n < 8) { if (n) buf[0] = '\0'; return; }
    buf[o++] = '"';
    for (size_t i = 0; s[i]; i++) {
        if (o + 12 >= n || (limit && i >= limit)) {
            /* Cutting inside a UTF-8 sequence: drop its copied part too. */
            if (((unsigned char)s[i] & 0xC0) == 0x80) {
                while (o > 1 && ((unsigned char)buf[o - 1] & 0xC0) == 0x80) o--;
                if (o > 1 && (unsigned char)buf[o - 1] >= 0xC0) o--;
            }
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        char esc[8];
        const int e = json_escape_byte((unsigned char)s[i], esc);
        if (e) {
            memcpy(buf + o, esc, (size_t)e);
            o += (size_t)e;
        } else {
            buf[o++] = s[i];
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
}

/* What the user wrote, for "got ...": 5, 1e+300, "512", null, an object. */
static void describe_value(char *buf, size_t n, const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        if (isfinite(v->valuedouble)) config_fmt_double(buf, n, v->valuedouble);
        else snprintf(buf, n, "a number out of range");
    } else if (cJSON_IsString(v)) quote(buf, n, v->valuestring, 40);
    else if (cJSON_IsTrue(v)) snprintf(buf, n, "true");
    else if (cJSON_IsFalse(v)) snprintf(buf, n, "false");
    else if (cJSON_IsNull(v)) snprintf(buf, n, "null");
    else if (cJSON_IsArray(v)) snprintf(buf, n, "an array");
    else if (cJSON_IsObject(v)) snprintf(buf, n, "an object");
    else snprintf(buf, n, "an invalid value");
}

/* The natural upper bound of a type: ranges that reach it are described as
 * "a positive integer" rather than with the number. */
static double natural_max(KeyType t)
{
    switch (t) {
    case K_INT: return INT_MAX;
    case K_LONG: case K_U64: return JMAX;
    case K_FLOAT: return FLT_MAX;
    default: return DBL_MAX;
    }
}

/* "a positive integer", "a number in [0, 1)", "one of "post", "pre"", ... */
static void describe_key(char *buf, size_t n, const KeySpec *k)
{
    char lo[32], hi[32];
    config_fmt_double(lo, sizeof lo, k->min);
    config_fmt_double(hi, sizeof hi, k->max);
    bool natural = k->max == natural_max(k->type);
    switch (k->type) {
    case K_INT: case K_LONG: case K_U64:
        if (natural && k->min == 1) snprintf(buf, n, "a positive integer");
        else if (natural && k->min == 0) snprintf(buf, n, "a non-negative integer");
        else if (natural) snprintf(buf, n, "an integer >= %s", lo);
        else snprintf(buf, n, "an integer in [%s, %s]", lo, hi);
        break;
    case K_FLOAT: case K_DOUBLE:
        if (natural && k->min == 0) snprintf(buf, n, k->min_open ? "a positive number" : "a non-negative number");
        else snprintf(buf, n, "a number in %c%s, %s%c", k->min_open ? '(' : '[', lo, hi,
                      k->max_open ? ')' : ']');
        break;
    case K_BOOL: snprintf(buf, n, "true or false"); break;
    case K_STR: snprintf(buf, n, "a non-empty string"); break;
    case K_STR_NULL: snprintf(buf, n, "null or a non-empty string"); break;
    case K_PATHS: snprintf(buf, n, "a non-empty string or a list of them"); break;
    case K_NUMS: snprintf(buf, n, "null or a list of positive numbers"); break;
    case K_ENUM: {
        size_t o = (size_t)snprintf(buf, n, "one of ");
        for (int i = 0; k->names[i] && o < n; i++)
            o += (size_t)snprintf(buf + o, n - o, "%s\"%s\"", i ? ", " : "", k->names[i]);
        break;
    }
    }
}

/* Range check of a number already narrowed to the field's type. */
static bool in_range(const KeySpec *k, double v)
{
    if (!isfinite(v)) return false;
    if (k->min_open ? v <= k->min : v < k->min) return false;
    if (k->max_open ? v >= k->max : v > k->max) return false;
    return true;
}

static TfmStatus bad_value(const KeySpec *k, const char *got, bool too_big, TfmErr *err)
{
    char want[96], hi[32];
    describe_key(want, sizeof want, k);
    if (k->type == K_FLOAT) config_fmt_float(hi, sizeof hi, (float)k->max);
    else config_fmt_double(hi, sizeof hi, k->max);
    /* "a positive integer" is no help when the value is too large. */
    bool say_max = too_big && k->max == natural_max(k->type) && k->type != K_DOUBLE;
    return err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS(k->path), "%s: expected %s%s%s, got %s",
                        k->path, want, say_max ? " up to " : "", say_max ? hi : "", got);
}

/* ---- defaults, free ---- */

void config_defaults(TfmConfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < N_KEYS; i++) {
        const KeySpec *k = &config_schema[i];
        void *f = field(cfg, k);
        switch (k->type) {
        case K_INT: case K_ENUM: *(int *)f = (int)k->def; break;
        case K_LONG: *(long *)f = (long)k->def; break;
        case K_U64: *(unsigned long long *)f = (unsigned long long)k->def; break;
        case K_FLOAT: *(float *)f = (float)k->def; break;
        case K_DOUBLE: *(double *)f = k->def; break;
        case K_BOOL: *(bool *)f = k->def != 0; break;
        case K_PATHS: case K_NUMS: break;      /* none (zeroed) */
        case K_STR: case K_STR_NULL: {
            char *s = k->def_str ? xmalloc(strlen(k->def_str) + 1, NULL) : NULL;
            if (s) strcpy(s, k->def_str);
            *(char **)f = s;
            break;
        }
        }
    }
    cfg->model.vocab_size = 0;
    cfg->model.max_len = config_positions(cfg->data.max_len);
}

void config_free(TfmConfig *cfg)
{
    if (!cfg) return;
    for (int i = 0; i < N_KEYS; i++) {
        const KeyType t = config_schema[i].type;
        if (t == K_PATHS) {
            PathList *l = field(cfg, &config_schema[i]);
            for (int j = 0; j < l->n; j++) free(l->v[j]);
            free(l->v);
            *l = (PathList){0};
        } else if (t == K_NUMS) {
            NumList *l = field(cfg, &config_schema[i]);
            free(l->v);
            *l = (NumList){0};
        } else if (t == K_STR || t == K_STR_NULL) {
            char **s = field(cfg, &config_schema[i]);
            free(*s);
            *s = NULL;
        }
    }
}

/* ---- one value ---- */

/* A PathList from a string or a non-empty array of non-empty strings. */
static TfmStatus set_paths(PathList *l, const KeySpec *k, const cJSON *v, const char *got,
                           TfmErr *err)
{
    const bool one = cJSON_IsString(v);
    const int n = one ? 1 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n == 0) return bad_value(k, cJSON_IsArray(v) ? "an empty list" : got, false, err);
    for (int i = 0; i < n; i++) {
        const cJSON *e = one ? v : cJSON_GetArrayItem(v, i);
        if (!cJSON_IsString(e) || !e->valuestring[0]) {
            char what[96];
            describe_value(what, sizeof what, e);
            return err_set(err, TFM_ERR_CONFIG, "%s: expected a non-empty string or a list of "
                           "them, got %s in the list", k->path, what);
        }
    }
    PathList nl = {xcalloc((size_t)n, sizeof(char *), err), n};
    if (!nl.v) return TFM_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        if (!(nl.v[i] = xstrdup((one ? v : cJSON_GetArrayItem(v, i))->valuestring, err))) {
            for (int j = 0; j < i; j++) free(nl.v[j]);
            free(nl.v);
            return TFM_ERR_NOMEM;
        }
    for (int j = 0; j < l->n; j++) free(l->v[j]);
    free(l->v);
    *l = nl;
    return TFM_OK;
}

/* A NumList from null or a non-empty array of numbers in k's range. */
static TfmStatus set_nums(NumList *l, const KeySpec *k, const cJSON *v, const char *got,
                          TfmErr *err)
{
    if (cJSON_IsNull(v)) {
        free(l->v);
        *l = (NumList){0};
        return TFM_OK;
    }
    const int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n == 0) return bad_value(k, cJSON_IsArray(v) ? "an empty list" : got, false, err);
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(e) || !in_range(k, e->valuedouble)) {
            char what[96];
            describe_value(what, sizeof what, e);
            return err_set(err, TFM_ERR_CONFIG, "%s: expected null or a list of positive "
                           "numbers, got %s in the list", k->path, what);
        }
    }
    double *nv = xmalloc(sizeof(double) * (size_t)n, err);
    if (!nv) return TFM_ERR_NOMEM;
    for (int i = 0; i < n; i++) nv[i] = cJSON_GetArrayItem(v, i)->valuedouble;
    free(l->v);
    *l = (NumList){nv, n};
    return TFM_OK;
}

/* Stores JSON value v into the field of k, after checking type and range. */
TfmStatus config_set_value(TfmConfig *cfg, const KeySpec *k, const cJSON *v, TfmErr *err)
{
    char got[96];
    describe_value(got, sizeof got, v);
    void *f = field(cfg, k);
    switch (k->type) {
    case K_INT: case K_LONG: case K_U64: {
        if (!cJSON_IsNumber(v)) return bad_value(k, got, false, err);
        double d = v->valuedouble;
        if (!isfinite(d) || d != floor(d) || !in_range(k, d))
            return bad_value(k, got, d > k->max, err);
        if (k->type == K_INT) *(int *)f = (int)d;
        else if (k->type == K_LONG) *(long *)f = (long)d;
        else *(unsigned long long *)f = (unsigned long long)d;
        return TFM_OK;
    }
    case K_FLOAT: case K_DOUBLE: {
        if (!cJSON_IsNumber(v)) return bad_value(k, got, false, err);
        double d = v->valuedouble;
        /* Check what will be stored: 0.99999999999 becomes 1.0f, 1e-50 becomes 0. */
        double stored = k->type == K_FLOAT && fabs(d) <= FLT_MAX ? (double)(float)d : d;
        if (!in_range(k, stored)) return bad_value(k, got, d > k->max, err);
        if (k->type == K_FLOAT) *(float *)f = (float)stored;
        else *(double *)f = stored;
        return TFM_OK;
    }
    case K_BOOL:
        if (!cJSON_IsBool(v)) return bad_value(k, got, false, err);
        *(bool *)f = cJSON_IsTrue(v);
        return TFM_OK;
    case K_ENUM:
        if (cJSON_IsString(v))
            for (int i = 0; k->names[i]; i++)
                if (strcmp(v->valuestring, k->names[i]) == 0) {
                    *(int *)f = i;
                    return TFM_OK;
                }
        return bad_value(k, got, false, err);
    case K_PATHS: return set_paths(f, k, v, got, err);
    case K_NUMS: return set_nums(f, k, v, got, err);
    case K_STR: case K_STR_NULL: {
        char **s = f;
        if (k->type == K_STR_NULL && cJSON_IsNull(v)) {
            free(*s);
            *s = NULL;
            return TFM_OK;
        }
        if (!cJSON_IsString(v) || v->valuestring[0] == '\0') return bad_value(k, got, false, err);
        char *copy = xmalloc(strlen(v->valuestring) + 1, err);
        if (!copy) return TFM_ERR_NOMEM;
        strcpy(copy, v->valuestring);
        free(*s);
        *s = copy;
        return TFM_OK;
    }
    }
    return TFM_OK;
}

/* ---- "did you mean" ---- */

const char *config_suggest_key(const char *path)
{
    const char *leaf = strrchr(path, '.');
    leaf = leaf ? leaf + 1 : path;
    TextNearest near;     /* a typo or two in the leaf's length */
    text_nearest_start(&near, path, strlen(path), text_typo_edits(strlen(leaf)));
    for (int i = 0; i < N_KEYS; i++) {
        const char *kl = strrchr(config_schema[i].path, '.');
        kl = kl ? kl + 1 : config_schema[i].path;
        if (strcmp(kl, leaf) == 0) return config_schema[i].path;   /* the right key, another section */
        text_nearest_offer(&near, config_schema[i].path, strlen(config_schema[i].path));
    }
    return near.best;
}

TfmStatus config_unknown_key(const char *shown, const char *path, TfmErr *err)
{
    const char *hint = config_suggest_key(path);
    size_t len = hint ? strlen(hint) : 0;
    if (!hint) {    /* a section's name mistyped ("decoder"): the sections are the keys' prefixes */
        const char *leaf = strrchr(path, '.');
        TextNearest near;
        text_nearest_start(&near, path, strlen(path), text_typo_edits(strlen(leaf ? leaf + 1 : path)));
        for (int i = 0; i < N_KEYS; i++)
            for (const char *dot = config_schema[i].path; (dot = strchr(dot, '.')); dot++) {
                size_t n = (size_t)(dot - config_schema[i].path);
                if (n != near.word_len || memcmp(path, config_schema[i].path, n) != 0)
                    text_nearest_offer(&near, config_schema[i].path, n);
            }
        hint = near.best;
        len = near.best_len;
    }
    if (hint)
        return err_set(err, TFM_ERR_CONFIG, "%s: unknown key (did you mean %.*s?)", shown, (int)len,
                       hint);
    return err_set(err, TFM_ERR_CONFIG, "%s: unknown key", shown);
}

/* ---- walking the JSON tree ---- */

int config_spec_find(const char *path)
{
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(config_schema[i].path, path) == 0) return i;
    return -1;
}

/* A section is a path that prefixes some key: "train", "train.lr". */
bool config_is_section(const char *path)
{
    size_t n = strlen(path);
    for (int i = 0; i < N_KEYS; i++)
        if (strncmp(config_schema[i].path, path, n) == 0 && config_schema[i].path[n] == '.') return true;
    return false;
}

/* Keys are shown bare when they are plain words, else as JSON strings, so a
 * key with a newline or a dot cannot break or fake the error line. */
bool config_plain_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!(key[i] == '_' || (key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
              (key[i] >= '0' && key[i] <= '9')))
            return false;
    return true;
}

static void child_path(char *buf, size_t n, const char *prefix, const char *key)
{
    char shown[96];
    if (config_plain_key(key)) snprintf(shown, sizeof shown, "%s", key);
    else quote(shown, sizeof shown, key, 40);
    snprintf(buf, n, "%s%s%s", prefix, prefix[0] ? "." : "", shown);
}

static TfmStatus walk(TfmConfig *cfg, const cJSON *obj, const char *prefix, bool *seen, TfmErr *err)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        char path[192];
        child_path(path, sizeof path, prefix, c->string);
        for (const cJSON *p = obj->child; p != c; p = p->next)
            if (strcmp(p->string, c->string) == 0)
                return err_set(err, TFM_ERR_CONFIG, "%s: duplicate key", path);
        /* Non-plain keys can never match the schema (no key has a dot). */
        int i = config_plain_key(c->string) ? config_spec_find(path) : -1;
        if (i >= 0) {
            TfmStatus st = config_set_value(cfg, &config_schema[i], c, err);
            if (st != TFM_OK) return st;
            seen[i] = true;
        } else if (config_plain_key(c->string) && config_is_section(path)) {
            if (!cJSON_IsObject(c)) {
                char got[96];
                describe_value(got, sizeof got, c);
                return err_set(err, TFM_ERR_CONFIG, "%s: expected an object, got %s", path, got);
            }
            TfmStatus st = walk(cfg, c, path, seen, err);
            if (st != TFM_OK) return st;
        } else if (config_plain_key(c->string)) {
            return config_unknown_key(path, path, err);
        } else {
            return err_set(err, TFM_ERR_CONFIG, "%s: unknown key", path);
        }
    }
    return TFM_OK;
}

/* ---- paths ---- */

/* A readable regular file (not waiting on a FIFO). */
static TfmStatus check_input(const KeySpec *k, const char *path, TfmErr *err)
{
    bool regular;
    int fd = text_open_nonblocking(path, &regular);
    if (fd < 0)
        return err_set_keys(err, TFM_ERR_IO, ERR_KEYS(k->path), "%s: cannot open %s: %s", k->path,
                            path, strerror(errno));
    close(fd);
    if (!regular)
        return err_set_keys(err, TFM_ERR_IO, ERR_KEYS(k->path), "%s: %s: %s", k->path, path,
                            text_not_regular(path));
    return TFM_OK;
}

/* ---- parse, load, check ---- */

/* The rules between keys. Each error names its keys (ERR_KEYS, the one it
 * starts with first), so that config_load_overrides can blame a --set. */
static TfmStatus check_cross(const TfmConfig *cfg, TfmErr *err)
{
    const TfmStatus bad = TFM_ERR_CONFIG;
    const DataConfig *d = &cfg->data;
    if (d->train_src.n != d->train_tgt.n)
        return err_set_keys(err, bad, ERR_KEYS("data.train_tgt", "data.train_src"),
                            "data.train_tgt: %d file%s for the %d of data.train_src (pairs are "
                            "by position)", d->train_tgt.n, d->train_tgt.n == 1 ? "" : "s",
                            d->train_src.n);
    if (d->train_weights.n > 0 && d->train_weights.n != d->train_src.n)
        return err_set_keys(err, bad, ERR_KEYS("data.train_weights", "data.train_src"),
                            "data.train_weights: %d weight%s for %d training corpus%s (one "
                            "each)", d->train_weights.n, d->train_weights.n == 1 ? "" : "s",
                            d->train_src.n, d->train_src.n == 1 ? "" : "es");
    if (cfg->model.d_model % cfg->model.heads != 0)
        return err_set_keys(err, bad, ERR_KEYS("model.heads", "model.d_model"),
                            "model.heads: %d heads do not divide model.d_model %d",
                            cfg->model.heads, cfg->model.d_model);
    /* linear attention has no probability matrix to drop out of */
    if (cfg->model.attention == ATTN_LINEAR && cfg->model.attn_dropout > 0)
        return err_set_keys(err, bad, ERR_KEYS("model.attn_dropout", "model.attention"),
                            "model.attn_dropout: %g needs model.attention \"softmax\" (linear "
                            "attention has no attention weights to drop); use 0",
                            cfg->model.attn_dropout);
    const LrConfig *lr = &cfg->train.lr;
    bool decays = lr->schedule == LR_LINEAR || lr->schedule == LR_COSINE;
    const char *decay_name = lr->schedule == LR_LINEAR ? "linear" : "cosine";
    if (decays && lr->horizon == LR_HORIZON_STEPS && cfg->train.max_steps <= lr->warmup)
        return err_set_keys(err, bad, ERR_KEYS("train.lr.schedule", "train.max_steps",
                                               "train.lr.warmup", "train.lr.horizon"),
                            "train.lr.schedule: \"%s\" decays to lr.final at train.max_steps, "
                            "which must be above lr.warmup (%d), got %ld",
                            decay_name, lr->warmup, cfg->train.max_steps);
    if (decays && lr->horizon == LR_HORIZON_TIME && cfg->train.max_time_s <= 0)
        return err_set_keys(err, bad, ERR_KEYS("train.lr.horizon", "train.max_time_s",
                                               "train.lr.schedule"),
                            "train.lr.horizon: \"time\" decays to lr.final at train.max_time_s, "
                            "which is not set (give it in seconds, or use \"steps\")");
    if (decays && lr->horizon == LR_HORIZON_TIME && cfg->train.max_steps > 0 &&
        cfg->train.max_steps <= lr->warmup)
        return err_set_keys(err, bad, ERR_KEYS("train.lr.schedule", "train.max_steps",
                                               "train.lr.warmup", "train.lr.horizon"),
                            "train.lr.schedule: \"%s\" needs train.max_steps above lr.warmup "
                            "(%d) or 0 (no step limit), got %ld",
                            decay_name, lr->warmup, cfg->train.max_steps);
    if ((lr->schedule == LR_LINEAR || lr->schedule == LR_COSINE) && lr->final > lr->peak)
        return err_set_keys(err, bad, ERR_KEYS("train.lr.final", "train.lr.peak",
                                               "train.lr.schedule"),
                            "train.lr.final: %g is above train.lr.peak %g", lr->final, lr->peak);
    if (cfg->train.parallel == PARALLEL_SENTENCES && cfg->train.precision == PRECISION_BF16)
        return err_set_keys(err, bad, ERR_KEYS("train.parallel", "train.precision"),
                            "train.parallel: \"sentences\" runs float32 products and cannot be "
                            "combined with train.precision \"bf16\" (use \"products\" or "
                            "\"auto\")");
    /* pruning would delete the checkpoints the average needs */
    if (cfg->train.average_last > cfg->train.keep)
        return err_set_keys(err, bad, ERR_KEYS("train.average_last", "train.keep"),
                            "train.average_last: %d checkpoints to average need train.keep >= "
                            "%d, got %d", cfg->train.average_last, cfg->train.average_last,
                            cfg->train.keep);
    return TFM_OK;
}

/* A user's decode.* within tfm translate's option ranges: beyond alpha 10
 * every score rounds to zero and n-best lists lose their order. Not asked of
 * the config inside a model (older models may hold more; translate clamps).
 * (config_schema.h) */
TfmStatus config_check_decode(const TfmConfig *cfg, TfmErr *err)
{
    const DecodeConfig *d = &cfg->decode;
    char got[32];
    if (d->alpha > DECODE_MAX_ALPHA || d->max_len_a > DECODE_MAX_LEN_A) {
        bool alpha = d->alpha > DECODE_MAX_ALPHA;
        const char *key = alpha ? "decode.alpha" : "decode.max_len_a";
        config_fmt_float(got, sizeof got, alpha ? d->alpha : d->max_len_a);
        return err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS(key), "%s: expected a number in "
                            "[0, %g], got %s", key, alpha ? DECODE_MAX_ALPHA : DECODE_MAX_LEN_A,
                            got);
    }
    if (d->max_len_b > DECODE_MAX_LEN_B)
        return err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS("decode.max_len_b"),
                            "decode.max_len_b: expected an integer in [0, %d], got %d",
                            DECODE_MAX_LEN_B, d->max_len_b);
    return TFM_OK;
}

TfmStatus config_parse_tree(TfmConfig *cfg, const cJSON *root, const char *base_dir,
                            bool check_files, TfmErr *err)
{
    TfmStatus st = TFM_OK;
    bool seen[N_KEYS] = {false};
    config_defaults(cfg);
    for (int i = 0; i < N_KEYS; i++)
        if (config_schema[i].def_str && !*(char **)field(cfg, &config_schema[i])) {
            st = err_set(err, TFM_ERR_NOMEM, "out of memory");
            goto fail;
        }
    if (!cJSON_IsObject(root)) {
        char got[96];
        describe_value(got, sizeof got, root);
        st = err_set(err, TFM_ERR_CONFIG, "expected a JSON object at the top level, got %s", got);
        goto fail;
    }
    if ((st = walk(cfg, root, "", seen, err)) != TFM_OK) goto fail;
    memcpy(cfg->given, seen, sizeof seen);
    for (int i = 0; i < N_KEYS; i++)
        if ((config_schema[i].flags & F_REQUIRED) && !seen[i]) {
            st = err_set_keys(err, TFM_ERR_CONFIG, ERR_KEYS(config_schema[i].path),
                              "%s: required key missing", config_schema[i].path);
            goto fail;
        }
    if ((st = check_cross(cfg, err)) != TFM_OK) goto fail;
    cfg->model.max_len = config_positions(cfg->data.max_len);

    for (int i = 0; i < N_KEYS; i++) {
        const KeySpec *k = &config_schema[i];
        if (!(k->flags & F_INPUT)) continue;
        /* a string key is a list of one here */
        PathList one = {field(cfg, k), 1}, *l = k->type == K_PATHS ? field(cfg, k) : &one;
        for (int j = 0; j < l->n; j++) {
            char **s = &l->v[j];
            if (!*s) continue;
            char *resolved = path_join(base_dir, *s, err);
            if (!resolved) { st = TFM_ERR_NOMEM; goto fail; }
            free(*s);
            *s = resolved;
            if (check_files && (k->flags & F_MUST_EXIST) && (st = check_input(k, *s, err)) != TFM_OK)
                goto fail;
        }
    }
    return TFM_OK;
fail:
    config_free(cfg);
    return st;
}

TfmStatus config_parse(TfmConfig *cfg, const char *json, const char *base_dir,
                       bool check_files, TfmErr *err)
{
    cJSON *root = NULL;
    TfmStatus st = json_strict_parse(json, strlen(json), &root, err);
    if (st == TFM_OK) st = config_parse_tree(cfg, root, base_dir, check_files, err);
    else memset(cfg, 0, sizeof *cfg);     /* nothing to free */
    cJSON_Delete(root);
    return st;
}

TfmStatus config_check(const TfmConfig *cfg, TfmErr *err)
{
    for (int i = 0; i < N_KEYS; i++) {
        const KeySpec *k = &config_schema[i];
        const void *f = cfield(cfg, k);
        double v;
        char got[96];
        switch (k->type) {
        case K_INT: v = *(const int *)f; break;
        case K_LONG: v = (double)*(const long *)f; break;
        case K_U64: v = (double)*(const unsigned long long *)f; break;
        case K_FLOAT: v = *(const float *)f; break;
        case K_DOUBLE: v = *(const double *)f; break;
        case K_ENUM: {
            int e = *(const int *)f, n = 0;
            while (k->names[n]) n++;
            if (e < 0 || e >= n) {
                snprintf(got, sizeof got, "enum value %d", e);
                return bad_value(k, got, false, err);
            }
            continue;
        }
        case K_STR: {
            const char *s = *(char *const *)f;
            if ((!s && (k->flags & F_REQUIRED)) || (s && !s[0]) || (!s && k->def_str))
                return bad_value(k, s ? "\"\"" : "null", false, err);
            continue;
        }
        case K_STR_NULL: {
            const char *s = *(char *const *)f;
            if (s && !s[0]) return bad_value(k, "\"\"", false, err);
            continue;
        }
        case K_PATHS: {
            const PathList *l = f;
            if (l->n == 0 && (k->flags & F_REQUIRED)) return bad_value(k, "null", false, err);
            for (int j = 0; j < l->n; j++)
                if (!l->v[j] || !l->v[j][0]) return bad_value(k, "\"\"", false, err);
            continue;
        }
        case K_NUMS: {
            const NumList *l = f;
            for (int j = 0; j < l->n; j++)
                if (!in_range(k, l->v[j])) {
                    config_fmt_double(got, sizeof got, l->v[j]);
                    return bad_value(k, got, false, err);
                }
            continue;
        }
        default: continue;
        }
        /* Exact for every integer up to 2^53; a u64 above that is out of range. */
        if (k->type == K_U64 && *(const unsigned long long *)f > (unsigned long long)CONFIG_MAX_JSON_INT) {
            snprintf(got, sizeof got, "%llu", *(const unsigned long long *)f);
            return bad_value(k, got, true, err);
        }
        if (!in_range(k, v)) {
            if (k->type == K_FLOAT) config_fmt_float(got, sizeof got, (float)v);
            else config_fmt_double(got, sizeof got, v);
            return bad_value(k, got, v > k->max, err);
        }
    }
    TfmStatus st = check_cross(cfg, err);
    return st == TFM_OK ? config_check_decode(cfg, err) : st;
}
