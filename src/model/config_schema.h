/* config_schema: what the config parser (config.c) shares with its
 * loader (config_override.c: the file and `tfm train --set`) and its writer
 * (config_write.c): the schema table, its one-value setter, the parse of a
 * JSON tree and the number format. Private to model/config*.c (and tests). */
#ifndef TFM_CONFIG_SCHEMA_H
#define TFM_CONFIG_SCHEMA_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

/* K_PATHS: a PathList, one string or an array of them; K_NUMS: a NumList,
 * null or an array of positive numbers */
typedef enum { K_INT, K_LONG, K_U64, K_FLOAT, K_DOUBLE, K_BOOL, K_STR, K_STR_NULL, K_ENUM,
               K_PATHS, K_NUMS } KeyType;

enum {
    F_REQUIRED = 1,      /* missing key is an error */
    F_INPUT = 2,         /* a path relative to the config's folder */
    F_MUST_EXIST = 4,    /* with check_files: a readable regular file (unless null) */
    /* architecture: what a model's weights were trained as, which a model
     * file carries (every model.* key, dropouts included, since training
     * reads them from the Model; data.max_len, for the positions). A resume
     * takes them from the checkpoint and refuses a config that differs:
     * config_arch_diff walks this flag, so a key marked here is checked
     * without anyone listing it again. */
    F_ARCH = 8,
};

typedef struct {
    const char *path;            /* JSON path, e.g. "train.lr.warmup" */
    KeyType type;
    size_t offset;               /* of the field in TfmConfig */
    double min, max;             /* numbers: the allowed range */
    bool min_open, max_open;     /* exclusive bounds */
    double def;                  /* numbers, bools, enums (index into names) */
    const char *def_str;         /* strings; NULL for none */
    const char *const *names;    /* enums: NULL-terminated, index = value */
    unsigned flags;
} KeySpec;

/* Every key: path, type, offset, range, default (config.c). */
extern const KeySpec config_schema[];
extern const int config_n_keys;

/* The schema index of a full key path, or -1. */
int config_spec_find(const char *path);
/* A path that prefixes some key ("train", "train.lr"). */
bool config_is_section(const char *path);
/* A plain JSON key: letters, digits, '_' (at most 64). */
bool config_plain_key(const char *key);
/* Stores JSON value v into k's field of cfg after the type and range checks. */
TfmStatus config_set_value(TfmConfig *cfg, const KeySpec *k, const cJSON *v, TfmErr *err);

/* The value of k's field as a user writes it in --set: 512, 0.1, linear,
 * true, a path; "null" for no string. */
void config_value_text(char *buf, size_t n, const TfmConfig *cfg, const KeySpec *k);

/* The shortest "%.Ng" that reads back as the same double (or, through
 * strtod and a narrowing, the same float); whole numbers as integers. */
void config_fmt_double(char *buf, size_t n, double v);
void config_fmt_float(char *buf, size_t n, float v);

/* "SHOWN: unknown key", with " (did you mean K?)" when a key is close. */
TfmStatus config_unknown_key(const char *shown, const char *path, TfmErr *err);

/* config_parse on a JSON tree already parsed (and changed by --set). Every
 * error that is about keys names them in err->keys. */
TfmStatus config_parse_tree(TfmConfig *cfg, const cJSON *root, const char *base_dir,
                            bool check_files, TfmErr *err);
/* decode.* within tfm translate's ranges, asked of a user's config only. */
TfmStatus config_check_decode(const TfmConfig *cfg, TfmErr *err);

#endif
