/* bleu_args: the command line of `tfm bleu`: its help, its options (getopt
 * long options plus sacreBLEU's single-dash names and its multi-word -m),
 * and the checks of what they ask for together. */
#ifndef TFM_BLEU_ARGS_H
#define TFM_BLEU_ARGS_H

#include <stdbool.h>

#include "base/err.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/ter.h"
#include "cli/bleu_output.h"

enum { METRIC_BLEU = 1, METRIC_CHRF = 2, METRIC_TER = 4 };

typedef struct {
    BleuOptions opt;
    ChrfOptions chrf;
    TerOptions ter;
    unsigned metrics;               /* METRIC_* bits; 0 until -m: BLEU */
    bool sentence;
    ScoreFormat fmt;                /* --json, --score-only, --width */
    char *input;                    /* -i HYP, or NULL: HYP is the first file */
    char **files;                   /* HYP, then the references */
    int n_files;
    bool confidence;                /* -ci: one system's bootstrap interval */
    int confidence_n;
    char paired;                    /* 0, 'b' (--paired-bs) or 'a' (--paired-ar) */
    int paired_bs_n, paired_ar_n;
    char **systems;                 /* the files of --paired-bs/--paired-ar */
    int n_systems;
} BleuArgs;

/* Prints `tfm bleu --help` on stdout. */
void bleu_print_help(void);

/* Parses argv into *a (defaults first). copy: 3·argc + 1 pointers the
 * caller frees after use (a->files and a->systems point into it). Usage
 * errors are TFM_ERR_USAGE with a one-line message. */
TfmStatus bleu_parse_args(int argc, char **argv, char **copy, BleuArgs *a, TfmErr *err);

#endif
