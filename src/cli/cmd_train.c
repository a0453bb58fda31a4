/* cmd_train: `tfm train CONFIG.json [--threads N] [--seed N] [--restart]
 * [--dry-run] [-q]`. Options and config checks here; the loop is in train.c. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/blas.h"
#include "cli/cmds.h"
#include "model/config.h"
#include "train/train.h"

static const char usage[] =
    "usage: tfm train CONFIG.json [--threads N] [--seed N] [--restart] [--dry-run] [-q]\n"
    "\n"
    "Learns a BPE vocabulary (unless data.vocab names one), trains, validates and\n"
    "writes checkpoints to train.out_dir (last.tfm, best.tfm, ckpt.STEP.tfm) and the\n"
    "best model to train.model. Running the same command again resumes from\n"
    "out_dir/last.tfm. The last line on stdout is the path of the saved model.\n"
    "\n"
    "  --threads N   threads for sgemm and the other loops (0: all cores; default:\n"
    "                train.threads)\n"
    "  --seed N      override train.seed\n"
    "  --restart     start over, ignoring out_dir/last.tfm\n"
    "  --dry-run     print the resolved config as JSON and exit\n"
    "  -q, --quiet   no progress on stderr\n"
    "  -h, --help    this help\n"
    "\n"
    "SIGINT/SIGTERM/SIGHUP finish the current step, save last.tfm and exit\n"
    "130/143/129 (before the first step they exit at once; a second Ctrl-C\n"
    "stops at once, without saving).\n";

/* TrainOptions.after_step for TFM_TEST_SIGNAL_AT_STEP: ctx is the step. */
static void raise_sigterm_at(long step, void *ctx)
{
    if (step == *(const long *)ctx) raise(SIGTERM);
}

TfmStatus cmd_train(int argc, char **argv, TfmErr *err)
{
    enum { OPT_THREADS = 256, OPT_SEED, OPT_RESTART, OPT_DRY_RUN };
    static const struct option longopts[] = {
        {"threads", required_argument, NULL, OPT_THREADS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"restart", no_argument, NULL, OPT_RESTART},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    TrainOptions opt = {0};
    bool dry_run = false, have_threads = false, have_seed = false;
    long threads = 0, seed = 0;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_THREADS:
            if (!cmd_parse_long(optarg, 0, 1024, &threads))
                return err_set(err, TFM_ERR_USAGE, "train: --threads: expected an integer in [0, 1024], got '%s'", optarg);
            have_threads = true;
            break;
        case OPT_SEED:
            if (!cmd_parse_long(optarg, 0, CONFIG_MAX_JSON_INT, &seed))
                return err_set(err, TFM_ERR_USAGE, "train: --seed: expected an integer in [0, %lld], got '%s'",
                               (long long)CONFIG_MAX_JSON_INT, optarg);
            have_seed = true;
            break;
        case OPT_RESTART: opt.restart = true; break;
        case OPT_DRY_RUN: dry_run = true; break;
        case 'q': opt.quiet = true; break;
        case 'h': fputs(usage, stdout); return TFM_OK;
        case ':': return err_set(err, TFM_ERR_USAGE, "train: option '%s' needs a value", argv[optind - 1]);
        default: return err_set(err, TFM_ERR_USAGE, "train: unknown option '%s' (see tfm train --help)", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return err_set(err, TFM_ERR_USAGE, optind == argc ? "train: missing CONFIG.json (see tfm train --help)"
                                                          : "train: expected one CONFIG.json, got %d arguments",
                       argc - optind);
    TfmConfig cfg;
    TfmStatus st = config_load(&cfg, argv[optind], err);
    if (st != TFM_OK) return st;
    if (have_threads) cfg.train.threads = (int)threads;
    if (have_seed) cfg.train.seed = (unsigned long long)seed;
    if ((have_threads || have_seed) && (st = config_check(&cfg, err)) != TFM_OK) {
        err_prefix(err, "%s: ", argv[optind]);
        config_free(&cfg);
        return st;
    }
    if (dry_run) {
        char *json = config_to_json(&cfg);
        if (!json) st = err_set(err, TFM_ERR_NOMEM, "out of memory");
        else fputs(json, stdout);
        free(json);
        config_free(&cfg);
        return st;
    }
    blas_set_threads(cfg.train.threads);
    if ((st = blas_selftest(err)) == TFM_OK) {
        opt.config_path = argv[optind];
        /* Lets tests interrupt a run at an exact step through the real signal path. */
        const char *hook = getenv("TFM_TEST_SIGNAL_AT_STEP");
        long signal_at_step = hook ? atol(hook) : 0;
        if (signal_at_step > 0) {
            opt.after_step = raise_sigterm_at;
            opt.after_step_ctx = &signal_at_step;
        }
        opt.stop = cli_stop_on_signals(!opt.quiet);
        st = train_run(&cfg, &opt, err);
    }
    if (st == TFM_OK) printf("%s\n", cfg.train.model);
    config_free(&cfg);
    return st;
}
