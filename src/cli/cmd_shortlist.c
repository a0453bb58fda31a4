/* cmd_shortlist: `tfm shortlist -m MODEL -o OUT SRC TGT` — a vocabulary
 * shortlist for MODEL learned from a parallel corpus (decode/shortlist.h),
 * for tfm translate --shortlist and tfm serve --shortlist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "model/ckpt.h"
#include "decode/shortlist.h"
#include "cli/cmds.h"
#include "cli/decode_args.h"

static const char usage[] =
    "usage: tfm shortlist -m MODEL -o OUT [--top-k K] [--frequent N] [-q] SRC TGT\n"
    "\n"
    "Writes to OUT a vocabulary shortlist for MODEL, learned from the parallel corpus\n"
    "SRC/TGT (one sentence a line, as many lines each; plain or gzip), for tfm\n"
    "translate --shortlist and tfm serve --shortlist. Both sides are encoded with\n"
    "MODEL's vocabulary; IBM Model 1 (5 rounds of EM) gives p(t | s), how likely\n"
    "source piece s translates as target piece t. A line translated with it may use\n"
    "</s>, <unk>, the N most frequent target pieces and, for each of its source\n"
    "pieces s, the K other pieces t of highest p(t | s).\n"
    "\n"
    "  -m, --model MODEL  the model whose vocabulary it is for (default: $TFM_MODEL,\n"
    "                     else model.tfm)\n"
    "  -o, --output OUT   the shortlist (written atomically)\n"
    "      --top-k K      target pieces kept per source piece (default 50)\n"
    "      --frequent N   most frequent target pieces every line gets (default 100;\n"
    "                     at least twice the beam; the vocabulary's size: every piece)\n"
    "  -q, --quiet        no summary line\n"
    "  -h, --help         this help\n";

enum { OPT_TOP_K = 1000, OPT_FREQUENT };

TfmStatus cmd_shortlist(int argc, char **argv, TfmErr *err)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"output", required_argument, NULL, 'o'},
        {"top-k", required_argument, NULL, OPT_TOP_K},
        {"frequent", required_argument, NULL, OPT_FREQUENT},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *out = NULL;
    int top_k = 50, frequent = 100, c;
    bool quiet = false;
    TfmStatus st = TFM_OK;
    CmdGetopt g = cmd_getopt_start("shortlist", argc, argv, ":m:o:qh", longopts, NULL);
    const char *opt = g.opt;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'o': out = optarg; break;
        case OPT_TOP_K:
            st = cmd_option_int("shortlist", opt, optarg, 1, SHORTLIST_MAX_K, &top_k, err);
            break;
        case OPT_FREQUENT:
            st = cmd_option_int("shortlist", opt, optarg, 0, 1 << 24, &frequent, err);
            break;
        case 'q': quiet = true; break;
        case 'h': fputs(usage, stdout); return TFM_OK;
        }
        if (st != TFM_OK) return st;
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (!out) return err_set(err, TFM_ERR_USAGE, "shortlist: missing -o OUT (see tfm shortlist --help)");
    if (argc - optind != 2)
        return err_set(err, TFM_ERR_USAGE, "shortlist: expected SRC and TGT, the two sides of a "
                       "parallel corpus (%d given)", argc - optind);
    if (!model) {
        const char *env = getenv("TFM_MODEL");
        model = env && *env ? env : "model.tfm";
    }
    const char *src = argv[optind], *tgt = argv[optind + 1];
    const char *reads[] = {model, src, tgt};
    for (int i = 0; i < 3; i++)
        if (atomic_same_file(out, reads[i]))
            return err_set(err, TFM_ERR_USAGE, "shortlist: -o '%s' is also an input; it would be "
                           "overwritten", out);
    if ((st = atomic_check_own_kind(out, SHORTLIST_MAGIC, "tfm shortlist", err)) != TFM_OK)
        return st;
    ModelFile mf;
    if ((st = ckpt_load(model, &mf, false, err)) != TFM_OK) return st;
    Shortlist sl;
    st = shortlist_build(&sl, mf.bpe, src, tgt, top_k, frequent, err);
    if (st == TFM_OK) st = shortlist_save(&sl, out, err);
    if (st == TFM_OK && !quiet)
        fprintf(stderr, "tfm: shortlist: %d frequent pieces, up to %d more per source piece "
                "(%d in all): %s\n", sl.n_frequent, top_k, sl.start[sl.vocab], out);
    shortlist_free(&sl);
    ckpt_free(&mf);
    return st;
}
