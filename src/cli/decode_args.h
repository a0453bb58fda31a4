/* decode_args: the decoding options tfm translate and tfm serve share, one
 * parser for both: -m MODEL (several: an ensemble), --weights, -b/--beam,
 * --alpha, --max-len-a, --max-len-b, --no-repeat-ngram, --precision,
 * --shortlist and --threads, each checked with the same ranges and the same messages
 * ("CMD: --beam: expected an integer in [1, 16], got 'x'"). A command lists
 * DECODE_ARGS_LONGOPTS among its long options, "m:b:" in its optstring, and
 * hands each option to decode_args_take first. */
#ifndef TFM_CLI_DECODE_ARGS_H
#define TFM_CLI_DECODE_ARGS_H

#include <getopt.h>
#include <stdbool.h>

#include "base/err.h"
#include "decode/pipeline.h"

enum { DA_WEIGHTS = 1000, DA_ALPHA, DA_LEN_A, DA_LEN_B, DA_NO_REPEAT, DA_PRECISION, DA_THREADS, DA_SHORTLIST };

#define DECODE_ARGS_LONGOPTS                                            \
    {"model", required_argument, NULL, 'm'},                            \
    {"weights", required_argument, NULL, DA_WEIGHTS},                   \
    {"beam", required_argument, NULL, 'b'},                             \
    {"alpha", required_argument, NULL, DA_ALPHA},                       \
    {"max-len-a", required_argument, NULL, DA_LEN_A},                   \
    {"max-len-b", required_argument, NULL, DA_LEN_B},                   \
    {"no-repeat-ngram", required_argument, NULL, DA_NO_REPEAT},         \
    {"precision", required_argument, NULL, DA_PRECISION},               \
    {"threads", required_argument, NULL, DA_THREADS},                   \
    {"shortlist", required_argument, NULL, DA_SHORTLIST}

typedef struct {
    PipelineSpec spec;      /* models (n_models 0: none given), weights, precision, beam,
                               alpha, lengths, no_repeat, and which were given */
    int threads;            /* 0: the cores other programs leave free (decode_args_start) */
} DecodeArgs;

/* Option c (getopt's return; opt its name as written, "--beam" or "-b")
 * with value into a, when it is one of these: *taken says so. A bad value
 * is a usage error "CMD: ...". */
TfmStatus decode_args_take(DecodeArgs *a, const char *cmd, int c, const char *opt,
                           const char *value, bool *taken, TfmErr *err);

/* What both commands do once the options are read: the model defaults to
 * $TFM_MODEL, else model.tfm; threads 0 becomes the cores other programs
 * leave free right now; the threads are set and sgemm is checked. */
TfmStatus decode_args_start(DecodeArgs *a, TfmErr *err);

/* value as an integer in [lo, hi] / a number in [lo, hi] into *out; else
 * the usage error "CMD: OPT: expected an integer in [lo, hi], got 'v'". */
TfmStatus cmd_option_int(const char *cmd, const char *opt, const char *value, long lo, long hi,
                         int *out, TfmErr *err);
TfmStatus cmd_option_number(const char *cmd, const char *opt, const char *value, double lo,
                            double hi, float *out, TfmErr *err);

#endif
