/* cmd_quantize: `tfm quantize -o OUT.tfm MODEL` — an int8 model file for
 * translation: every matrix as int8 with a scale per row (about a quarter
 * of the float32 file), translated in int8 by default. */
#include <getopt.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/atomic_file.h"
#include "model/ckpt.h"
#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm quantize -o OUT.tfm MODEL\n"
    "\n"
    "Writes to OUT an int8 copy of MODEL for translation: every weight matrix\n"
    "(projections and embeddings) as int8 with one scale per row, biases and\n"
    "norms as float32. tfm translate uses int8 products for it by default; it\n"
    "is not a training file (no optimizer state). MODEL may be float32, bf16-\n"
    "trained or int8 already.\n"
    "\n"
    "  -o, --output OUT   the int8 model (written atomically)\n"
    "  -h, --help         this help\n";

TfmStatus cmd_quantize(int argc, char **argv, TfmErr *err)
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
        case ':': return err_set(err, TFM_ERR_USAGE, "quantize: option '%s' needs a value", argv[optind - 1]);
        default: return err_set(err, TFM_ERR_USAGE, "quantize: unknown option '%s' (see tfm quantize --help)", argv[optind - 1]);
        }
    }
    if (!out) return err_set(err, TFM_ERR_USAGE, "quantize: missing -o OUT (see tfm quantize --help)");
    if (argc - optind != 1)
        return err_set(err, TFM_ERR_USAGE, "quantize: expected one MODEL (see tfm quantize --help)");
    const char *in = argv[optind];
    if (atomic_same_file(out, in))
        return err_set(err, TFM_ERR_USAGE, "quantize: -o '%s' is also the input model; it would "
                       "be overwritten", out);
    TfmStatus st = ckpt_check_replaceable(out, err);
    if (st != TFM_OK) return st;
    ModelFile mf;
    if ((st = ckpt_load(in, &mf, false, err)) != TFM_OK) return st;
    model_quantize(&mf.model);
    /* the trainer's position stays (tfm info shows the step), not its
     * optimizer */
    st = ckpt_save(out, &mf.cfg, mf.bpe, &mf.model, NULL, NULL, mf.has_step ? &mf.ts : NULL, err);
    ckpt_free(&mf);
    return st;
}
