/* cmds: the subcommands. Each parses its own options (getopt_long), returns
 * TFM_OK, a TFM_ERR_* with err->msg set (TFM_ERR_USAGE exits 2), or
 * TFM_INTERRUPTED with err->signo. Only main.c prints errors and exits. */
#ifndef TFM_CMDS_H
#define TFM_CMDS_H

#include <getopt.h>
#include <stdbool.h>

#include "base/err.h"
#include "train/train.h"

TfmStatus cmd_train(int argc, char **argv, TfmErr *err);
TfmStatus cmd_translate(int argc, char **argv, TfmErr *err);
TfmStatus cmd_serve(int argc, char **argv, TfmErr *err);
TfmStatus cmd_bleu(int argc, char **argv, TfmErr *err);
TfmStatus cmd_bpe(int argc, char **argv, TfmErr *err);
TfmStatus cmd_average(int argc, char **argv, TfmErr *err);
TfmStatus cmd_info(int argc, char **argv, TfmErr *err);
TfmStatus cmd_quantize(int argc, char **argv, TfmErr *err);
TfmStatus cmd_shortlist(int argc, char **argv, TfmErr *err);

/* Installs SIGINT/SIGTERM/SIGHUP handlers (main.c) that ask a training run
 * to stop after the current step through the returned flags (with announce
 * they also say so on stderr at once). Before the run's first step a signal
 * exits at once (nothing to save); a second SIGINT exits at once too.
 * SIGPIPE is ignored. */
TrainStop *cli_stop_on_signals(bool announce);

/* While a command writes its output to the temporary file tmp (an
 * AtomicFile's) for output: SIGINT, SIGTERM and SIGHUP remove tmp, say
 * "tfm: interrupted: OUTPUT was not written" and exit 128+signal (main.c).
 * Once the file is committed, cli_output_written() restores the default
 * actions. A serving loop or any command that writes through a temporary
 * file uses the same pair. */
void cli_remove_on_signals(const char *tmp, const char *output);
void cli_output_written(void);

/* Scans argv for -h/--help before "--"; commands use it to print help
 * even when other arguments are wrong. */
int cmd_wants_help(int argc, char **argv);

/* Another toolkit's name for one of ours: Marian's --beam-size, fairseq's
 * --lenpen, OpenNMT's -n_best (written with '-' for '_', no leading dashes),
 * and what to say instead ("--beam", "--set train.max_steps=N"). */
typedef struct {
    const char *theirs, *ours;
} OptionAlias;

/* The usage error for an unknown option arg of command cmd ("translate",
 * "bpe learn"): "CMD: unknown option 'ARG' (did you mean --X?)" when an
 * alias (aliases: NULL or ending in {NULL, NULL}) or a near miss of a
 * long option says what was meant, else "(see tfm CMD --help)". */
TfmStatus cmd_unknown_option(const char *cmd, const char *arg, const struct option *longopts,
                             const OptionAlias *aliases, TfmErr *err);

/* getopt takes a single-dash word as a cluster of short options (OpenNMT's
 * -beam_size would be -b "eam_size"): refuses, with cmd_unknown_option's
 * hint, each such word before getopt sees it, where its letter after the
 * dash is no short option of optstring or its name is a long option or an
 * alias of ours. Words that are the value of the option before them pass. */
TfmStatus cmd_check_single_dash(const char *cmd, int argc, char **argv, const char *optstring,
                                const struct option *longopts, const OptionAlias *aliases,
                                TfmErr *err);

/* A command's getopt_long loop, with the errors every command words alike:
 *   CmdGetopt g = cmd_getopt_start("serve", argc, argv, ":m:b:qh", longopts, NULL);
 *   while ((c = cmd_getopt_next(&g, err)) >= 0) switch (c) { ... }
 *   if (c == CMD_GETOPT_ERROR) return err->status;
 * cmd_getopt_next returns the next option's code, CMD_GETOPT_END after the
 * last (optind is then the first operand), or CMD_GETOPT_ERROR with the
 * usage error set: "CMD: option 'ARG' needs a value", or an unknown option
 * (g.unknown when set, else cmd_unknown_option with g.aliases). g.opt is
 * the option as written, "--beam" or "-b", for messages about its value. */
enum { CMD_GETOPT_END = -1, CMD_GETOPT_ERROR = -2 };
typedef struct {
    const char *cmd;                    /* "translate", "bpe learn" */
    int argc;
    char **argv;
    const char *optstring;
    const struct option *longopts;
    const OptionAlias *aliases;         /* NULL or ending in {NULL, NULL} */
    TfmStatus (*unknown)(const char *arg, const struct option *longopts, TfmErr *err);
    char opt[64];
} CmdGetopt;
CmdGetopt cmd_getopt_start(const char *cmd, int argc, char **argv, const char *optstring,
                           const struct option *longopts, const OptionAlias *aliases);
int cmd_getopt_next(CmdGetopt *g, TfmErr *err);

/* Parses a whole option value as a decimal integer / finite number within
 * [lo, hi]; false on junk, trailing characters, overflow or out of range. */
bool cmd_parse_long(const char *s, long lo, long hi, long *out);
bool cmd_parse_double(const char *s, double lo, double hi, double *out);

/* The arguments of a command that writes one model file from models (tfm
 * average, tfm quantize): "-o OUT", -h, and at least min_models models (or
 * exactly one when min_models is 1), argv[*first .. *first + *n). Refuses an
 * OUT that is one of the models or not a model file to replace
 * (ckpt_check_replaceable). *help: -h was given (nothing else checked). */
TfmStatus cmd_model_writer_args(const char *cmd, int argc, char **argv, int min_models,
                                const char **out, int *first, int *n, bool *help, TfmErr *err);

#endif
