/* config: the training config (JSON, see SPEC.md) as one typed struct.
 * Parsing checks every key: unknown keys, wrong types and out-of-range values
 * are errors that name the JSON path. Defaults are the paper's base model. */
#ifndef TFM_CONFIG_H
#define TFM_CONFIG_H

#include <stdbool.h>
#include "err.h"

typedef enum { NORM_POST = 0, NORM_PRE = 1 } NormKind;
typedef enum { LR_NOAM = 0, LR_INVERSE_SQRT = 1, LR_CONSTANT = 2 } LrSchedule;

typedef struct {
    char *train_src, *train_tgt, *valid_src, *valid_tgt; /* resolved paths, owned */
    char *vocab;            /* NULL: learn one (saved as out_dir/vocab.txt) */
    int vocab_size;         /* 8000; includes the 4 special tokens */
    int max_len;            /* 128; max BPE tokens per side, longer pairs skipped */
} DataConfig;

typedef struct {
    int d_model, heads, enc_layers, dec_layers, d_ff;
    float dropout, attn_dropout, relu_dropout;
    NormKind norm;
    bool share_embeddings;
    int vocab_size;         /* not a JSON key: set from the vocabulary */
    int max_len;            /* not a JSON key: data.max_len + 2 (bos/eos), for positions */
} ModelConfig;

typedef struct {
    LrSchedule schedule;
    int warmup;
    float factor, peak;
} LrConfig;

typedef struct {
    unsigned long long seed;
    int batch_tokens;
    long max_steps, max_epochs;
    double max_time_s;
    float label_smoothing, clip_norm, weight_decay;
    LrConfig lr;
    float beta1, beta2, eps;
    long valid_every, save_every;
    bool valid_bleu;
    int patience;
    char *out_dir, *model;  /* owned */
    int keep;
    int threads;            /* 0: all cores */
} TrainConfig;

typedef struct {
    int beam;
    float alpha, max_len_a;
    int max_len_b;
} DecodeConfig;

typedef struct {
    DataConfig data;
    ModelConfig model;
    TrainConfig train;
    DecodeConfig decode;
} TfmConfig;

/* Fills every field with its default (strings: out_dir "checkpoints",
 * model "model.tfm", data paths NULL). */
void config_defaults(TfmConfig *cfg);

/* Reads and validates a config file. Data paths are resolved against the
 * file's folder and must be readable files. Errors: TFM_ERR_IO (unreadable),
 * TFM_ERR_CONFIG ("path.json: train.lr.warmup: expected ..."; syntax errors
 * as "path.json: line L column C: ..."). On error *cfg holds nothing to free. */
TfmStatus config_load(TfmConfig *cfg, const char *path, TfmErr *err);

/* Parses JSON text (as written by config_to_json). base_dir resolves relative
 * data paths (NULL: keep as is); check_files: require data files to exist. */
TfmStatus config_parse(TfmConfig *cfg, const char *json, const char *base_dir,
                       bool check_files, TfmErr *err);

/* The full config as pretty JSON, every key present (null for unset paths).
 * Returns a malloc'd string, NULL on allocation failure. */
char *config_to_json(const TfmConfig *cfg);

/* Frees the owned strings; the struct may be reused after config_defaults. */
void config_free(TfmConfig *cfg);

#endif
