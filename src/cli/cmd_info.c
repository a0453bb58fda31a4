/* cmd_info: `tfm info MODEL` — what a model file holds. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/blas.h"
#include "model/ckpt.h"
#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm info [--vocab] MODEL\n"
    "\n"
    "Prints a model file's parameter count, vocabulary size, training step (not\n"
    "recorded in averaged models), the BLAS kernel this machine would use, and its\n"
    "config as JSON.\n"
    "\n"
    "      --vocab    print only the model's vocabulary, as a vocabulary file\n"
    "                 (docs/vocab-format.md): tfm info --vocab MODEL > vocab.txt;\n"
    "                 a SentencePiece vocabulary prints as its .model file\n"
    "  -h, --help     this help\n";

/* The vocabulary inside a model, as the file tfm bpe learn writes. */
static TfmStatus print_vocab(const ModelFile *mf, TfmErr *err)
{
    size_t len = 0;
    char *data = bpe_serialize(mf->bpe, &len);
    if (!data) return err_set(err, TFM_ERR_NOMEM, "info: out of memory");
    TfmStatus st = TFM_OK;
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
        st = err_set(err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno));
    free(data);
    return st;
}

TfmStatus cmd_info(int argc, char **argv, TfmErr *err)
{
    static const struct option longopts[] = {
        {"vocab", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    CmdGetopt g = cmd_getopt_start("info", argc, argv, "h", longopts, NULL);
    bool vocab = false;
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        if (c == 'V') vocab = true;
        if (c == 'h') {
            fputs(usage, stdout);
            return TFM_OK;
        }
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (optind != argc - 1)
        return err_set(err, TFM_ERR_USAGE, "info: expected one MODEL (see tfm info --help)");
    const char *path = argv[optind];
    ModelFile mf;
    TfmStatus st = ckpt_load(path, &mf, false, err);
    if (st != TFM_OK) return st;
    if (vocab) {
        st = print_vocab(&mf, err);
        ckpt_free(&mf);
        return st;
    }
    const ModelConfig *mc = &mf.model.cfg;
    printf("model:       %s\n", path);
    printf("kind:        %s\n", !mf.has_train_state ? "model"
                                 : mf.has_ema  ? "checkpoint (with optimizer state and the "
                                                 "weights' moving average, train.ema)"
                                               : "checkpoint (with optimizer state)");
    printf("parameters:  %zu\n", mf.model.n_params);
    if (mf.model.out_ids)
        printf("vocabulary:  %d tokens, %d of them outputs (model.output_vocab \"target\")\n",
               mc->vocab_size, mf.model.n_out);
    else
        printf("vocabulary:  %d tokens\n", mc->vocab_size);
    printf("tokenizer:   %s\n", bpe_kind(mf.bpe));
    printf("shape:       d_model %d, heads %d, layers %d+%d, d_ff %d, %s-norm %s, %s "
           "attention, %s embeddings\n",
           mc->d_model, mc->heads, mc->enc_layers, mc->dec_layers, mc->d_ff,
           mc->norm == NORM_PRE ? "pre" : "post", mc->norm_type == NORM_RMS ? "RMSNorm" : "LayerNorm",
           mc->attention == ATTN_LINEAR ? "linear" : "softmax", mc->share_embeddings ? "shared" : "separate");
    if (mf.has_train_state)
        printf("step:        %ld (epoch %ld, %.0f s of training)\n", mf.ts.step, mf.ts.epoch + 1,
               mf.ts.elapsed_s);
    else if (mf.has_step)
        printf("step:        %ld (epoch %ld)\n", mf.ts.step, mf.ts.epoch + 1);
    else
        printf("step:        not recorded (averaged models have none)\n");
    /* the best validation of the run so far (checkpoints) or at this model
     * (best.tfm and its copy train.model) */
    if (mf.has_step && mf.ts.has_best) {
        if (mf.cfg.train.valid_bleu)
            printf("best valid:  BLEU %.2f (greedy, by train.valid_bleu)\n", -mf.ts.best_metric);
        else
            printf("best valid:  nll %.4f, ppl %.2f\n", mf.ts.best_metric, exp(mf.ts.best_metric));
    }
    if (mf.cfg.train.init)
        printf("init:        %s (checksum %016llx; train.init, fine-tuned from it)\n",
               mf.cfg.train.init, mf.has_step ? (unsigned long long)mf.ts.init_sum : 0ULL);
    if (mf.model.int8)
        printf("precision:   int8 (weights quantized by tfm quantize; tfm translate uses int8 "
               "unless --precision)\n");
    else
        printf("precision:   %s (trained with; tfm translate uses it unless --precision)\n",
               mf.cfg.train.precision == PRECISION_BF16 ? "bf16" : "fp32");
    printf("blas kernel: %s (%s)\n", blas_kernel_name(), blas_kernel_source());
    char *json = config_to_json(&mf.cfg);
    if (json) printf("config:\n%s\n", json);
    free(json);
    ckpt_free(&mf);
    return TFM_OK;
}
