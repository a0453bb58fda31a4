/* cmd_quantize: `tfm quantize -o OUT.tfm MODEL` — an int8 model file for
 * translation: every matrix as int8 with a scale per row (about a quarter
 * of the float32 file), translated in int8 by default. */
#include <stdio.h>

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
    const char *out;
    int first, n;
    bool help;
    TfmStatus st = cmd_model_writer_args("quantize", argc, argv, 1, &out, &first, &n, &help, err);
    if (st != TFM_OK || help) {
        if (help) fputs(usage, stdout);
        return st;
    }
    ModelFile mf;
    if ((st = ckpt_load(argv[first], &mf, false, err)) != TFM_OK) return st;
    model_quantize(&mf.model);
    /* the trainer's position stays (tfm info shows the step), not its
     * optimizer */
    st = ckpt_save(out, &mf.cfg, mf.bpe, &mf.model, NULL, NULL, mf.has_step ? &mf.ts : NULL, err);
    ckpt_free(&mf);
    return st;
}
