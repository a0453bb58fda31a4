/* cmd_train: `tfm train CONFIG.json [--threads N] [--seed N] [--restart]
 * [--dry-run] [-q]`. Options and config checks here; the loop is in train.c. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "dist/dist.h"
#include "cli/cmds.h"
#include "model/ckpt.h"
#include "model/config.h"
#include "train/train.h"

static const char usage[] =
    "usage: tfm train CONFIG.json [--set KEY=VALUE ...] [--threads N] [--seed N]\n"
    "                 [--restart] [--dry-run] [-q]\n"
    "\n"
    "Learns a BPE vocabulary (unless data.vocab names one), trains, validates and\n"
    "writes checkpoints to train.out_dir (last.tfm, best.tfm, ckpt.STEP.tfm) and the\n"
    "best model to train.model. Running the same command again resumes from\n"
    "out_dir/last.tfm. The last line on stdout is the path of the saved model.\n"
    "\n"
    "  --set KEY=VALUE  override a config key, e.g. --set train.max_steps=500\n"
    "                --set model.dropout=0.3 (repeatable; checked like the file;\n"
    "                VALUE is JSON or a bare string; data paths are relative to\n"
    "                the current folder)\n"
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

/* Marian's, fairseq's and OpenNMT's names for what tfm train sets in the
 * config (their own names of config keys, such as --max-steps, are found
 * by unknown_option). */
static const OptionAlias aliases[] = {
    {"model", "--set train.model=FILE"},             /* Marian */
    {"config", "tfm train CONFIG.json"},   /* Marian, OpenNMT */
    {"train-sets", "the config's data.train_src and data.train_tgt"},  /* Marian */
    {"valid-sets", "the config's data.valid_src and data.valid_tgt"},  /* Marian */
    {"vocabs", "--set data.vocab=FILE"},             /* Marian */
    {"save-dir", "--set train.out_dir=DIR"},         /* fairseq */
    {"save-model", "--set train.out_dir=DIR"},       /* OpenNMT */
    {"mini-batch", "--set train.batch_tokens=N"},    /* Marian */
    {"mini-batch-words", "--set train.batch_tokens=N"},
    {"max-tokens", "--set train.batch_tokens=N"},    /* fairseq */
    {"batch-size", "--set train.batch_tokens=N"},    /* OpenNMT */
    {"max-length", "--set data.max_len=N"},          /* Marian */
    {"after-batches", "--set train.max_steps=N"},    /* Marian */
    {"max-update", "--set train.max_steps=N"},       /* fairseq */
    {"train-steps", "--set train.max_steps=N"},      /* OpenNMT */
    {"after-epochs", "--set train.max_epochs=N"},    /* Marian */
    {"max-epoch", "--set train.max_epochs=N"},       /* fairseq */
    {"valid-freq", "--set train.valid_every=N"},     /* Marian */
    {"valid-steps", "--set train.valid_every=N"},    /* OpenNMT */
    {"save-freq", "--set train.save_every=N"},       /* Marian */
    {"save-checkpoint-steps", "--set train.save_every=N"},   /* OpenNMT */
    {"learn-rate", "--set train.lr.peak=X"},         /* Marian */
    {"lr", "--set train.lr.peak=X"},                 /* fairseq */
    {"learning-rate", "--set train.lr.peak=X"},      /* OpenNMT */
    {"warmup-updates", "--set train.lr.warmup=N"},   /* fairseq */
    {"warmup-steps", "--set train.lr.warmup=N"},     /* OpenNMT */
    {"lr-warmup", "--set train.lr.warmup=N"},        /* Marian */
    {"early-stopping", "--set train.patience=N"},    /* Marian */
    {"cpu-threads", "--threads"},                    /* Marian */
    {NULL, NULL},
};

/* "unknown option" with a hint: `--max-steps 500` names the config key to
 * --set; other toolkits' names and near misses name the option. */
static TfmStatus unknown_option(const char *arg, const struct option *longopts, TfmErr *err)
{
    if (strncmp(arg, "--", 2) == 0 && arg[2]) {
        char name[64];
        size_t n = strcspn(arg + 2, "=");
        if (n < sizeof name) {
            memcpy(name, arg + 2, n);
            name[n] = '\0';
            for (char *p = name; *p; p++)
                if (*p == '-') *p = '_';
            const char *key = config_suggest_key(name);
            if (key && strcmp(strrchr(key, '.') ? strrchr(key, '.') + 1 : key, name) == 0)
                return err_set(err, TFM_ERR_USAGE, "train: unknown option '%s' (did you mean "
                               "--set %s=...?)", arg, key);
        }
    }
    return cmd_unknown_option("train", arg, longopts, aliases, err);
}

/* TrainOptions.after_step for TFM_TEST_SIGNAL_AT_STEP: ctx is the step. */
static void raise_sigterm_at(long step, void *ctx)
{
    if (step == *(const long *)ctx) raise(SIGTERM);
}

TfmStatus cmd_train(int argc, char **argv, TfmErr *err)
{
    enum { OPT_THREADS = 256, OPT_SEED, OPT_RESTART, OPT_DRY_RUN, OPT_SET };
    static const struct option longopts[] = {
        {"threads", required_argument, NULL, OPT_THREADS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"restart", no_argument, NULL, OPT_RESTART},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"set", required_argument, NULL, OPT_SET},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    TrainOptions opt = {0};
    bool dry_run = false, have_threads = false, have_seed = false, deterministic = true;
    long threads = 0, seed = 0;
    /* --set values, in order (a later one wins); at most one per argument */
    const char **sets = xcalloc((size_t)argc + 1, sizeof *sets, err);
    int n_sets = 0;
    if (!sets) return TFM_ERR_NOMEM;
    static const char optstring[] = ":qh";
    TfmStatus st = cmd_check_single_dash("train", argc, argv, optstring, longopts, aliases, err);
    if (st != TFM_OK) goto done;
    CmdGetopt g = cmd_getopt_start("train", argc, argv, optstring, longopts, aliases);
    g.unknown = unknown_option;
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        switch (c) {
        case OPT_THREADS:
            if (!cmd_parse_long(optarg, 0, 1024, &threads)) {
                st = err_set(err, TFM_ERR_USAGE, "train: --threads: expected an integer in [0, 1024], got '%s'", optarg);
                goto done;
            }
            have_threads = true;
            break;
        case OPT_SEED:
            if (!cmd_parse_long(optarg, 0, CONFIG_MAX_JSON_INT, &seed)) {
                st = err_set(err, TFM_ERR_USAGE, "train: --seed: expected an integer in [0, %lld], got '%s'",
                             (long long)CONFIG_MAX_JSON_INT, optarg);
                goto done;
            }
            have_seed = true;
            break;
        case OPT_RESTART: opt.restart = true; break;
        case OPT_DRY_RUN: dry_run = true; break;
        case OPT_SET: sets[n_sets++] = optarg; break;
        case 'q': opt.quiet = true; break;
        case 'h': fputs(usage, stdout); goto done;
        }
    }
    if (c == CMD_GETOPT_ERROR) {
        st = err->status;
        goto done;
    }
    if (optind != argc - 1) {
        st = err_set(err, TFM_ERR_USAGE, optind == argc ? "train: missing CONFIG.json (see tfm train --help)"
                                                        : "train: expected one CONFIG.json, got %d arguments",
                     argc - optind);
        goto done;
    }
    TfmConfig cfg;
    if ((st = config_load_overrides(&cfg, argv[optind], sets, n_sets, err)) != TFM_OK) {
        if (st == TFM_ERR_CONFIG && ckpt_file_is_model(argv[optind]))
            st = err_set(err, TFM_ERR_CONFIG, "%s: a tfm model, not a JSON config (to start "
                         "from it: a config and --set train.init=%s)", argv[optind], argv[optind]);
        goto done;
    }
    if (have_threads) cfg.train.threads = (int)threads;
    if (have_seed) cfg.train.seed = (unsigned long long)seed;
    if ((have_threads || have_seed) && (st = config_check(&cfg, err)) != TFM_OK) {
        err_prefix(err, "%s: ", argv[optind]);
        config_free(&cfg);
        goto done;
    }
    if ((st = train_adopt_init(&cfg, err)) != TFM_OK) {
        err_prefix(err, "%s: ", argv[optind]);
        config_free(&cfg);
        goto done;
    }
    if (dry_run) {
        char *json = config_to_json(&cfg);
        if (!json) st = err_set(err, TFM_ERR_NOMEM, "out of memory");
        else fputs(json, stdout);
        free(json);
        config_free(&cfg);
        goto done;
    }
    /* an error so far is every rank's (the same arguments and config), so
     * rank 0 alone reports it; from here on a rank may fail alone */
    deterministic = false;
    {
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
    if (st == TFM_OK && dist_rank() == 0) printf("%s\n", cfg.train.model);
    config_free(&cfg);
done:
    free(sets);
    if (st != TFM_OK && deterministic) {
        err->collective = true;
        err->quiet = dist_rank() > 0;
    }
    return st;
}
