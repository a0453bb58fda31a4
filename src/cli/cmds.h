/* cmds: the subcommands. Each parses its own options (getopt_long), returns
 * TFM_OK, a TFM_ERR_* with err->msg set (TFM_ERR_USAGE exits 2), or
 * TFM_INTERRUPTED with err->signo. Only main.c prints errors and exits. */
#ifndef TFM_CMDS_H
#define TFM_CMDS_H

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

/* Installs SIGINT/SIGTERM/SIGHUP handlers (main.c) that ask a training run
 * to stop after the current step through the returned flags (with announce
 * they also say so on stderr at once). Before the run's first step a signal
 * exits at once (nothing to save); a second SIGINT exits at once too.
 * SIGPIPE is ignored. */
TrainStop *cli_stop_on_signals(bool announce);

/* Scans argv for -h/--help before "--"; commands use it to print help
 * even when other arguments are wrong. */
int cmd_wants_help(int argc, char **argv);

/* Parses a whole option value as a decimal integer / finite number within
 * [lo, hi]; false on junk, trailing characters, overflow or out of range. */
bool cmd_parse_long(const char *s, long lo, long hi, long *out);
bool cmd_parse_double(const char *s, double lo, double hi, double *out);

#endif
