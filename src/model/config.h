/* config: the training config (JSON, docs/config.md) as one typed struct.
 * Parsing checks every key: unknown keys, wrong types and out-of-range values
 * are errors that name the JSON path. Defaults are the paper's base model. */
#ifndef TFM_CONFIG_H
#define TFM_CONFIG_H

#include <stdbool.h>
#include "base/err.h"
#include "nn/layers.h"
#include "nn/optim.h"

/* Largest integer a JSON number (an IEEE double) holds exactly: the upper
 * bound of train.seed and the step counts, so that they survive to_json. */
#define CONFIG_MAX_JSON_INT 9007199254740991LL

typedef enum { NORM_POST = 0, NORM_PRE = 1 } NormKind;
/* model.attention: softmax, or linear (the φ(q)·φ(k) kernel) */
typedef enum { ATTN_SOFTMAX = 0, ATTN_LINEAR = 1 } AttnKind;
/* model.output_vocab: the output layer scores every piece, or only the
 * pieces the training targets use (model.h model_set_output_vocab) */
typedef enum { OUTPUT_ALL = 0, OUTPUT_TARGET = 1 } OutputVocab;
/* train.precision, and tfm translate --precision; "auto" (training only)
 * becomes one of the other two at the start of a run */
typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1, PRECISION_AUTO = 2 } Precision;
/* train.parallel: how a step shares the threads. PRODUCTS: each product's
 * rows are split among them; SENTENCES: each thread runs the whole model on
 * its share of the batch's sentences (one replica each, gradients summed);
 * "auto" becomes one of the two at the start of a run */
typedef enum { PARALLEL_PRODUCTS = 0, PARALLEL_SENTENCES = 1, PARALLEL_AUTO = 2 } Parallel;

/* data.train_src / train_tgt: one path or a list of them (owned). */
typedef struct { char **v; int n; } PathList;
/* data.train_weights: NULL (n 0) or a number per training corpus. */
typedef struct { double *v; int n; } NumList;

typedef struct {
    PathList train_src, train_tgt;   /* resolved paths; pairs by position */
    NumList train_weights;  /* sampling weights of the corpora, or none (n 0) */
    char *valid_src, *valid_tgt;     /* resolved paths, owned */
    long shuffle_buffer;    /* pairs read, shuffled and batched at a time */
    long bpe_sample;        /* lines BPE learning reads (chosen from all files) */
    char *vocab;            /* NULL: learn one (saved as out_dir/vocab.txt); else an existing file */
    int vocab_size;         /* 8000; includes the 4 special tokens */
    int max_len;            /* 128; max BPE tokens per side, longer pairs skipped */
    float bpe_dropout;      /* 0; BPE-dropout probability for the training data */
} DataConfig;

typedef struct {
    int d_model, heads, enc_layers, dec_layers, d_ff;
    float dropout, attn_dropout, relu_dropout;
    float word_dropout;     /* 0; whole token embeddings dropped (layers.h word_keep) */
    NormKind norm;
    NormType norm_type;     /* LayerNorm or RMSNorm (model.norm_type) */
    AttnKind attention;     /* model.attention: softmax or linear (φ(q)·φ(k) kernel) */
    OutputVocab output_vocab; /* model.output_vocab: all pieces, or the targets' */
    bool share_embeddings;
    int vocab_size;         /* not a JSON key: 0 until set from the vocabulary */
    int max_len;            /* not a JSON key: data.max_len + 2 (bos/eos), for positions */
} ModelConfig;

/* The one place that counts positions: a sentence of up to data.max_len
 * tokens takes a row of config_row_len ids in a batch (its tokens and one
 * special: </s> ending a source or target-output row, <s> starting a
 * target-input row), and a model has config_positions of them
 * (ModelConfig.max_len: the tokens, <s> and </s>). */
static inline int config_row_len(int data_max_len) { return data_max_len + 1; }
static inline int config_positions(int data_max_len) { return data_max_len + 2; }
/* Back from a model's positions: the data.max_len it was trained with, and
 * the longest sentence it reads or scores (its tokens and one special). */
static inline int config_data_max_len(int positions) { return positions - 2; }
static inline int config_max_sentence(int positions) { return positions - 1; }

typedef struct {
    unsigned long long seed;
    int batch_tokens;
    long max_steps, max_epochs;
    double max_time_s;
    float label_smoothing, clip_norm, weight_decay;
    int weight_decay_scope; /* train.weight_decay_scope: a WeightDecayScope */
    long dropout_warmup;    /* steps over which the dropouts rise from 0; 0: none */
    float rdrop;            /* R-Drop weight: each sentence trained twice; 0: off */
    LrConfig lr;
    float beta1, beta2, eps;
    long valid_every, save_every;
    bool valid_bleu;
    int patience;
    char *out_dir, *model;  /* owned */
    char *init;             /* train.init: a model to start from (fine-tuning), or NULL */
    int keep;
    int average_last;       /* 0: train.model is ema.tfm with train.ema, else best.tfm */
    float ema;              /* decay of the weights' moving average; 0: none */
    long log_every;         /* steps between progress lines and log rows; 0: ~20 s */
    int precision;          /* train.precision: PRECISION_FP32 or PRECISION_BF16 */
    int threads;            /* 0: all cores */
    int parallel;           /* train.parallel: a Parallel */
} TrainConfig;

/* The optimizer's settings of a training config. */
static inline AdamConfig config_adam(const TrainConfig *tc)
{
    return (AdamConfig){tc->beta1, tc->beta2, tc->eps, tc->weight_decay};
}

/* Ranges shared by decode.* and tfm translate's options. */
#define DECODE_MAX_BEAM 1024
#define DECODE_MAX_ALPHA 10.0
#define DECODE_MAX_LEN_A 1000.0
#define DECODE_MAX_LEN_B 1000000

typedef struct {
    int beam;
    float alpha, max_len_a;
    int max_len_b;
} DecodeConfig;

/* More than the schema's keys (config.c checks). */
enum { CONFIG_MAX_KEYS = 96 };

typedef struct {
    DataConfig data;
    ModelConfig model;
    TrainConfig train;
    DecodeConfig decode;
    /* given[i]: schema key i was in the file or a --set (not a default);
     * train.init keeps the model's values of the keys not given */
    bool given[CONFIG_MAX_KEYS];
} TfmConfig;

/* Fills every field with its default (strings: out_dir "checkpoints",
 * model "model.tfm", data paths and vocab NULL; model.vocab_size 0,
 * model.max_len = data.max_len + 2). The strings are malloc'd (free with
 * config_free); they are NULL if that allocation failed. */
void config_defaults(TfmConfig *cfg);

/* Reads and validates a config file (docs/config.md lists the keys). Data
 * paths are resolved against the file's folder; data.train_src, train_tgt,
 * valid_src, valid_tgt and (unless null) data.vocab must be readable regular
 * files.
 * Errors, each prefixed with "path.json: ":
 *   TFM_ERR_IO      "cannot open: ...", "cannot read: ...", a data file that
 *                   is missing or unreadable ("data.train_src: cannot open ...");
 *   TFM_ERR_CONFIG  "train.lr.warmup: expected a positive integer, got -5",
 *                   "model.foo: unknown key", syntax errors as
 *                   "line L column C: invalid JSON near '...'";
 *   TFM_ERR_NOMEM.
 * On error *cfg holds nothing to free (config_free is harmless). */
TfmStatus config_load(TfmConfig *cfg, const char *path, TfmErr *err);

/* config_load with command-line overrides: each of sets is "KEY=VALUE"
 * (`tfm train --set`), KEY a full path such as "train.max_steps", VALUE JSON
 * or a bare string. They replace the file's values before the checks, so
 * they are checked exactly as the file's are. Their errors start "--set KEY: "
 * (no file name); a malformed one is TFM_ERR_USAGE "--set: expected
 * KEY=VALUE, got '...'". Relative data paths given here are relative to the
 * current folder. */
TfmStatus config_load_overrides(TfmConfig *cfg, const char *path, const char *const *sets,
                                int n_sets, TfmErr *err);

/* The schema key closest to an unknown path (the same key name in another
 * section, or one or two typos away), or NULL. */
const char *config_suggest_key(const char *path);

/* Parses JSON text (as written by config_to_json), with the checks of
 * config_load but no file-name prefix. base_dir resolves relative data paths
 * (NULL: keep them as given); check_files: require the data files to exist. */
TfmStatus config_parse(TfmConfig *cfg, const char *json, const char *base_dir,
                       bool check_files, TfmErr *err);

/* Checks the values already in *cfg against the same ranges as the parser
 * (for callers that override fields, e.g. `--threads`, `--seed`) and the
 * cross-key rules (heads divide d_model). Errors: TFM_ERR_CONFIG naming the
 * JSON path, e.g. "train.seed: expected a non-negative integer up to ...". */
TfmStatus config_check(const TfmConfig *cfg, TfmErr *err);

/* The full config as pretty JSON (2-space indent), every key present, null
 * for unset paths; floats printed shortest-exact so that config_parse of the
 * result gives the same struct (model.vocab_size, which is no JSON key, comes
 * back as 0). Returns a malloc'd string, NULL on allocation failure. */
char *config_to_json(const TfmConfig *cfg);

/* The architecture keys (every model.* key and data.max_len: what a model's
 * weights were trained as) where a differs from b, as "model.d_model 256 ->
 * 512, model.attention softmax -> linear" in buf (cut to n bytes); returns
 * how many differ. A resume refuses a config that differs from its
 * checkpoint's in any of them. */
int config_arch_diff(const TfmConfig *a, const TfmConfig *b, char *buf, size_t n);

/* train.init: makes cfg's architecture keys (config_arch_diff's) those of
 * from, the config of the model it starts from, named from_name. One that
 * cfg gives (in the file or a --set) with another value is TFM_ERR_CONFIG
 * "model.d_model: 512, the model of train.init M has 256 (...)". */
TfmStatus config_adopt_model(TfmConfig *cfg, const TfmConfig *from, const char *from_name,
                             TfmErr *err);

/* Frees the owned strings; the struct may be reused after config_defaults. */
void config_free(TfmConfig *cfg);

#endif
