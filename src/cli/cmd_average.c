/* cmd_average: `tfm average -o OUT MODEL MODEL [MODEL ...]` — the mean of the
 * parameters of checkpoints of one run (the paper averages the last 5 or 20).
 * The output is a model file with the first input's config and vocabulary. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "model/ckpt.h"
#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm average -o OUT MODEL MODEL [MODEL ...]\n"
    "\n"
    "Writes to OUT the element-wise mean of the parameters of the given models,\n"
    "which must share shape and vocabulary (checkpoints of one training run).\n"
    "\n"
    "  -o, --output OUT   the averaged model (written atomically)\n"
    "  -h, --help         this help\n";

/* What the tensors' shapes do not show but the model's function depends on:
 * averaging such models gives a model of neither. NULL when they agree. */
static const char *config_difference(const ModelConfig *a, const ModelConfig *b)
{
    if (a->heads != b->heads) return "model.heads";
    if (a->norm != b->norm) return "model.norm";
    if (a->max_len != b->max_len) return "data.max_len";
    return NULL;
}

static bool same_vocab(const Bpe *a, const Bpe *b)
{
    size_t la, lb;
    char *sa = bpe_serialize(a, &la), *sb = bpe_serialize(b, &lb);
    bool same = sa && sb && la == lb && memcmp(sa, sb, la) == 0;
    free(sa);
    free(sb);
    return same;
}

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
        default: return err_set(err, TFM_ERR_USAGE, "average: unknown option '%s' (see tfm average --help)", argv[optind - 1]);
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
    ModelFile first, other;
    st = ckpt_load(argv[optind], &first, false, err);
    if (st != TFM_OK) return st;
    size_t np = first.model.n_params;
    double *sum = xcalloc(np, sizeof(double), err);
    if (!sum) { st = TFM_ERR_NOMEM; goto done; }
    for (size_t i = 0; i < np; i++) sum[i] = first.model.params[i];
    for (int k = 1; k < n; k++) {
        const char *path = argv[optind + k];
        if ((st = ckpt_load(path, &other, false, err)) != TFM_OK) goto done;
        bool ok = other.model.n_params == np && other.model.n_tensors == first.model.n_tensors;
        for (int t = 0; ok && t < first.model.n_tensors; t++)
            ok = strcmp(first.model.tensors[t].name, other.model.tensors[t].name) == 0 &&
                 first.model.tensors[t].rows == other.model.tensors[t].rows &&
                 first.model.tensors[t].cols == other.model.tensors[t].cols;
        const char *differs = !ok ? "model shape"
                              : !same_vocab(first.bpe, other.bpe) ? "vocabulary"
                              : config_difference(&first.cfg.model, &other.cfg.model);
        if (differs) {
            st = err_set(err, TFM_ERR_FORMAT, "%s: %s differs from %s's", path, differs,
                         argv[optind]);
            ckpt_free(&other);
            goto done;
        }
        for (size_t i = 0; i < np; i++) sum[i] += other.model.params[i];
        ckpt_free(&other);
    }
    for (size_t i = 0; i < np; i++) first.model.params[i] = (float)(sum[i] / n);
    st = ckpt_save(out, &first.cfg, first.bpe, &first.model, NULL, NULL, err);
done:
    free(sum);
    ckpt_free(&first);
    return st;
}
