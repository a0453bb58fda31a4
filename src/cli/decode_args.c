/* decode_args: see decode_args.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sysload.h"
#include "nn/blas.h"
#include "cli/cmds.h"
#include "cli/decode_args.h"
#include "decode/decoder.h"

TfmStatus cmd_option_int(const char *cmd, const char *opt, const char *value, long lo, long hi,
                         int *out, TfmErr *err)
{
    long v;
    if (!cmd_parse_long(value, lo, hi, &v))
        return err_set(err, TFM_ERR_USAGE, "%s: %s: expected an integer in [%ld, %ld], got '%s'",
                       cmd, opt, lo, hi, value);
    *out = (int)v;
    return TFM_OK;
}

TfmStatus cmd_option_number(const char *cmd, const char *opt, const char *value, double lo,
                            double hi, float *out, TfmErr *err)
{
    double d;
    if (!cmd_parse_double(value, lo, hi, &d))
        return err_set(err, TFM_ERR_USAGE, "%s: %s: expected a number in [%g, %g], got '%s'", cmd,
                       opt, lo, hi, value);
    *out = (float)d;
    return TFM_OK;
}

TfmStatus decode_args_take(DecodeArgs *a, const char *cmd, int c, const char *opt,
                           const char *value, bool *taken, TfmErr *err)
{
    PipelineSpec *s = &a->spec;
    *taken = true;
    switch (c) {
    case 'm':
        if (s->n_models == PIPELINE_MAX_MODELS)
            return err_set(err, TFM_ERR_USAGE, "%s: at most %d models (-m)", cmd,
                           PIPELINE_MAX_MODELS);
        s->models[s->n_models++] = value;
        return TFM_OK;
    case DA_WEIGHTS:
        s->weights = value;
        return TFM_OK;
    case DA_PRECISION:
        if (strcmp(value, "fp32") != 0 && strcmp(value, "bf16") != 0 && strcmp(value, "int8") != 0)
            return err_set(err, TFM_ERR_USAGE, "%s: --precision must be fp32, bf16 or int8, got "
                           "'%s'", cmd, value);
        s->precision = value;
        return TFM_OK;
    case 'b':
        s->have_beam = true;
        return cmd_option_int(cmd, opt, value, 1, DECODE_MAX_BEAM, &s->beam, err);
    case DA_ALPHA:
        s->have_alpha = true;
        return cmd_option_number(cmd, opt, value, 0, DECODE_MAX_ALPHA, &s->alpha, err);
    case DA_LEN_A:
        s->have_a = true;
        return cmd_option_number(cmd, opt, value, 0, DECODE_MAX_LEN_A, &s->max_len_a, err);
    case DA_LEN_B:
        s->have_b = true;
        return cmd_option_int(cmd, opt, value, 0, DECODE_MAX_LEN_B, &s->max_len_b, err);
    case DA_NO_REPEAT:
        return cmd_option_int(cmd, opt, value, 0, 64, &s->no_repeat, err);
    case DA_SHORTLIST:
        s->shortlist = value;
        return TFM_OK;
    case DA_THREADS:
        return cmd_option_int(cmd, opt, value, 0, 1024, &a->threads, err);
    default:
        *taken = false;
        return TFM_OK;
    }
}

TfmStatus decode_args_start(DecodeArgs *a, TfmErr *err)
{
    PipelineSpec *spec = &a->spec;
    if (spec->n_models == 0) {
        const char *env = getenv("TFM_MODEL");
        spec->models[0] = env && *env ? env : "model.tfm";
        spec->n_models = 1;
    }
    /* a line's translation does not depend on the thread count, only its
     * speed does: by default, leave the cores that other programs keep busy */
    if (a->threads == 0) a->threads = sysload_free_cores();
    blas_set_threads(a->threads);
    return blas_selftest(err);
}
