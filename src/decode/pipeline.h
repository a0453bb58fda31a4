/* pipeline: a model (or an ensemble) made ready to translate text, the one
 * way `tfm translate` and `tfm serve` do it, so that a line comes out the
 * same from both: loading and the precision, the decoding options resolved
 * from the model's decode section and the command's overrides, the ensemble
 * members, and the two ends of a line (raw text to the ids the decoder
 * takes, a hypothesis back to one line of valid UTF-8). */
#ifndef TFM_PIPELINE_H
#define TFM_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "model/ckpt.h"
#include "decode/decoder.h"
#include "decode/lanes.h"
#include "decode/shortlist.h"

enum { PIPELINE_MAX_MODELS = 16 };

/* What a command asks for. have_*: the option was given (else the model's
 * decode.* value). */
typedef struct {
    const char *who;        /* the command, for messages: "translate" */
    const char *models[PIPELINE_MAX_MODELS];
    int n_models;           /* >= 1; more makes an ensemble */
    const char *weights;    /* "w1,w2,..." (one a model) or NULL: equal */
    const char *precision;  /* "fp32", "bf16", "int8", or NULL: the model's (int8 for an
                               int8 model file, else its train.precision) */
    int beam, max_len_b, nbest, no_repeat;
    float alpha, max_len_a;
    bool have_beam, have_alpha, have_a, have_b;
    const char *shortlist;  /* --shortlist FILE, or NULL: off */
} PipelineSpec;

typedef struct {
    ModelFile mf;           /* the first model: its vocabulary is the ensemble's */
    Decoder *dec;           /* NULL until pipeline_start */
    ModelFile *extra_mf;    /* the other models of an ensemble */
    Decoder **extra_dec;
    int n_extra;
    DecodeOptions dopt;     /* the resolved defaults (nbest at least 1) */
    float weights[PIPELINE_MAX_MODELS];
    bool have_weights;
    int max_src;            /* tokens a source line keeps (room for </s>) */
    bool bf16_fallback;     /* a bf16 model on a CPU without a bf16 unit: fp32
                               (the command says so, unless quiet) */
    Shortlist sl;           /* spec->shortlist's (vocab 0: none) */
    DecodeLanes *lanes;     /* one model on 2+ threads: batches split between two
                               decoders (lanes.h), else NULL */
} Pipeline;

/* Loads spec's first model, turns bf16 on or quantizes the weights to int8
 * (model_quantize) as --precision or the model asks,
 * and resolves p->dopt. Before any decoder exists: weights are packed in
 * the precision on when a decoder is made. A missing model file gets a hint
 * to name one with -m or $TFM_MODEL. */
TfmStatus pipeline_load(Pipeline *p, const PipelineSpec *spec, TfmErr *err);

/* Makes the decoder for max_sents sentences with beams up to max_beam and,
 * with several models, loads and checks the others (one vocabulary, one
 * max_len) and makes them its ensemble; with spec->shortlist, loads it
 * (refused for another vocabulary, or with an ensemble) and turns it on; with one
 * model that lanes_fit, 2 threads and max_sents >= LANES_MIN_SENTS, the second lane. Then releases the models' product
 * weights (model_release_matrices): the decoders hold them packed. */
TfmStatus pipeline_start(Pipeline *p, const PipelineSpec *spec, int max_sents, int max_beam,
                         TfmErr *err);

/* The weights of "w1,w2,...": n values, each in [0, 1e6]. */
TfmStatus pipeline_parse_weights(const char *who, const char *arg, int n, float *w, TfmErr *err);

/* Encodes a raw line into *ids (grown as bpe_encode does). A blank line
 * (spaces and tabs only) gives no ids: it translates to an empty line. A
 * line longer than p->max_src is cut to it; *full_len (if not NULL) gets
 * the length before the cut. */
TfmStatus pipeline_encode(const Pipeline *p, const char *line, size_t len, int **ids, int *n,
                          int *cap, int *full_len, TfmErr *err);

/* A hypothesis as one line of text in *text (grown like bpe_decode's
 * buffer, NUL-terminated): invalid UTF-8 bytes become U+FFFD, line breaks
 * and NUL become spaces (a model can emit byte pieces that do not form
 * whole characters, or the bytes of "\n"). */
TfmStatus pipeline_text(const Pipeline *p, const Hypothesis *h, char **text, size_t *len,
                        size_t *cap, TfmErr *err);

/* The lines a shortlist's guard gave the whole output
 * (decoder_lines_guarded), over every decoder of p. */
long pipeline_lines_guarded(const Pipeline *p);

void pipeline_free(Pipeline *p);

#endif
