/* cmd_average: `tfm average -o OUT MODEL MODEL [MODEL ...]` — the mean of the
 * parameters of checkpoints of one run (the paper averages the last 5 or 20).
 * The output is a model file with the first input's config and vocabulary. */
#include <stdio.h>

#include "model/average.h"
#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm average -o OUT MODEL MODEL [MODEL ...]\n"
    "\n"
    "Writes to OUT the element-wise mean of the parameters of the given models,\n"
    "which must share shape and vocabulary (checkpoints of one training run).\n"
    "\n"
    "  -o, --output OUT   the averaged model (written atomically)\n"
    "  -h, --help         this help\n";

TfmStatus cmd_average(int argc, char **argv, TfmErr *err)
{
    const char *out;
    int first, n;
    bool help;
    TfmStatus st = cmd_model_writer_args("average", argc, argv, 2, &out, &first, &n, &help, err);
    if (st != TFM_OK || help) {
        if (help) fputs(usage, stdout);
        return st;
    }
    ModelFile avg;
    if ((st = average_models((const char *const *)argv + first, n, &avg, err)) != TFM_OK)
        return st;
    st = ckpt_save(out, &avg.cfg, avg.bpe, &avg.model, NULL, NULL, NULL, err);
    ckpt_free(&avg);
    return st;
}
