/* cmd_average: `tfm average -o OUT MODEL MODEL [MODEL ...]` — the mean of the
 * parameters of checkpoints of one run (the paper averages the last 5 or 20).
 * The output is a model file with the first input's config and vocabulary. */
#include <getopt.h>
#include <stdio.h>

#include "base/atomic_file.h"
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
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return TFM_OK;
        case ':': return err_set(err, TFM_ERR_USAGE, "average: option '%s' needs a value", argv[optind - 1]);
        default: return cmd_unknown_option("average", argv[optind - 1], longopts, NULL, err);
        }
    }
    if (!out) return err_set(err, TFM_ERR_USAGE, "average: missing -o OUT (see tfm average --help)");
    int n = argc - optind;
    if (n < 2) return err_set(err, TFM_ERR_USAGE, "average: expected at least 2 models, got %d", n);

    for (int k = 0; k < n; k++)
        if (atomic_same_file(out, argv[optind + k]))
            return err_set(err, TFM_ERR_USAGE, "average: -o '%s' is also an input model; it would "
                           "be overwritten", out);
    TfmStatus st = ckpt_check_replaceable(out, err);
    if (st != TFM_OK) return st;
    ModelFile avg;
    if ((st = average_models((const char *const *)argv + optind, n, &avg, err)) != TFM_OK)
        return st;
    st = ckpt_save(out, &avg.cfg, avg.bpe, &avg.model, NULL, NULL, NULL, err);
    ckpt_free(&avg);
    return st;
}
