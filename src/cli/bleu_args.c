/* bleu_args: the command line of `tfm bleu` (see bleu_args.h). getopt_long
 * reads the options after rewrite_args has turned sacreBLEU's forms into
 * long ones. */
#include "cli/bleu_args.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm bleu HYP REF [REF ...] [-m bleu|chrf|ter ...] [options]\n"
    "       tfm bleu REF [REF ...] -i HYP [options]       (sacreBLEU's order)\n"
    "\n"
    "Corpus BLEU, chrF and/or TER of HYP against one or more references, identical\n"
    "to sacreBLEU 2.x (files read as UTF-8, split on \"\\n\", trailing whitespace\n"
    "stripped). HYP may be \"-\" for stdin. Prints one line a metric on stdout\n"
    "(`BLEU = ...`, `chrF2 = 57.12`, `TER = 45.30`) and their sacreBLEU-style\n"
    "signatures, one a line in the same order, on stderr.\n"
    "The files are read in step, a line at a time (pipes and FIFOs work, memory stays\n"
    "small; the significance tests keep each line's statistics). Files of different\n"
    "lengths are an error, found before any output for regular files and when the\n"
    "shorter one ends for pipes. Invalid UTF-8 is an error, as in sacreBLEU.\n"
    "\n"
    "options:\n"
    "  -i, --input HYP             the hypothesis, as sacreBLEU takes it; every other\n"
    "                              file is then a reference. A file right after\n"
    "                              -i HYP is refused (sacreBLEU would read a second\n"
    "                              system): put the references before -i\n"
    "  -m, --metrics M [M ...]     metrics: bleu (default), chrf, ter; several as\n"
    "                              -m chrf ter, -m chrf -m ter or -m chrf,ter.\n"
    "                              Printed in the order bleu, chrf, ter (as\n"
    "                              sacreBLEU). A file named like a metric right\n"
    "                              after -m must be written ./ter\n"
    "  -lc, --lowercase            case-insensitive BLEU (Python's str.lower); as in\n"
    "                              sacreBLEU it does not apply to chrF or TER\n"
    "  --tokenize 13a|intl|zh|char|none\n"
    "                              tokenizer (default 13a, as mteval-v13a; zh\n"
    "                              splits off each Chinese character, then applies\n"
    "                              13a's punctuation rules)\n"
    "  --smooth exp|floor|add-k|none\n"
    "                              smoothing of zero n-gram counts (default exp)\n"
    "  --smooth-value V            value for floor (default 0.1) or add-k (default 1)\n"
    "  --chrf-char-order N         chrF character n-gram order (default 6)\n"
    "  --chrf-word-order N         chrF word n-gram order (default 0; 2 is chrF++)\n"
    "  --chrf-beta N               chrF recall weight (default 2: chrF2)\n"
    "  --chrf-lowercase            case-insensitive chrF\n"
    "  --chrf-whitespace           keep whitespace in chrF's character n-grams\n"
    "  --chrf-eps-smoothing        chrF++.py's eps smoothing instead of sacreBLEU's\n"
    "                              default effective order\n"
    "  --ter-case-sensitive        case-sensitive TER (TER lowercases by default)\n"
    "  --ter-no-punct              TER without the punctuation . , ? : ; ! \" ( )\n"
    "  --ter-normalized            TER with tercom's normalization (punctuation split\n"
    "                              off, XML entities decoded)\n"
    "  --ter-asian-support         TER: CJK characters apart (with --ter-normalized),\n"
    "                              CJK punctuation dropped (with --ter-no-punct)\n"
    "  --sentence                  one sentence score a line, for one metric (BLEU\n"
    "                              with effective order, as sacreBLEU\n"
    "                              --sentence-level)\n"
    "  --json                      print a JSON object a metric, one a line (one a\n"
    "                              sentence with --sentence); no signature on stderr\n"
    "  -b, --score-only            print the scores alone, a line each (with -ci,\n"
    "                              its interval too), even with --json; no\n"
    "                              signature on stderr. The paired tests' table\n"
    "                              stays as it is\n"
    "  -w, --width N               decimals (0-17) of the scores and intervals\n"
    "                              (default 2; sacreBLEU's is 1); --json's score\n"
    "                              keeps full precision\n"
    "\n";

/* (two strings: C11 promises string literals of 4095 characters only) */
static const char usage_significance[] =
    "significance (sacreBLEU's tests on its own resamples, so its figures;\n"
    "SACREBLEU_SEED sets the seed, default 12345, 'none' for a random one):\n"
    "  -ci, --confidence           the bootstrap mean and 95% confidence interval\n"
    "                              of each score: BLEU = 39.22 (μ = 39.21 ± 0.95)\n"
    "  --confidence-n N            bootstrap resamples (default 1000; 0 or 1: none,\n"
    "                              as sacreBLEU)\n"
    "  --paired-bs SYS             paired bootstrap resampling test of SYS against\n"
    "                              HYP (the baseline); repeat for more systems.\n"
    "                              Prints a table: each score with its bootstrap\n"
    "                              mean ± 95% interval, and the p-value against the\n"
    "                              baseline (* where p <= 0.05)\n"
    "  --paired-ar SYS             the same with paired approximate randomization\n"
    "  --paired-bs-n N             resamples of --paired-bs (default, or 0: 1000)\n"
    "  --paired-ar-n N             trials of --paired-ar (default, or 0: 10000)\n"
    "  -h, --help                  show this help\n"
    "\n"
    "sacreBLEU's short names work too: -tok, -s (and --smooth-method), -sv, -sl,\n"
    "-cc, -cw, -cin, -pbs, -par, -pbsn, -parn. Unlike sacreBLEU's flags, -pbs and\n"
    "-par take the system to test (sacreBLEU reads the systems from -i).\n";

void bleu_print_help(void)
{
    fputs(usage, stdout);
    fputs(usage_significance, stdout);
}

/* One metric name, or a comma-separated list of them, added to *bits. */
static bool parse_metrics(const char *v, unsigned *bits)
{
    static const char *const names[] = {"bleu", "chrf", "ter"};
    for (const char *p = v;; p++) {
        const size_t n = strcspn(p, ",");
        size_t k = 0;
        while (k < 3 && !(strlen(names[k]) == n && strncmp(p, names[k], n) == 0)) k++;
        if (k == 3) return false;
        *bits |= 1u << k;
        p += n;
        if (!*p) return true;
    }
}

static bool is_metric_name(const char *v)
{
    return strcmp(v, "bleu") == 0 || strcmp(v, "chrf") == 0 || strcmp(v, "ter") == 0;
}

/* Parses an int option value in [lo, hi] or sets a usage error. */
static TfmStatus int_option(const char *name, const char *v, long lo, long hi, int *out, TfmErr *err)
{
    long x;
    if (!cmd_parse_long(v, lo, hi, &x))
        return err_set(err, TFM_ERR_USAGE, "bleu: --%s: expected an integer from %ld to %ld, got '%s'",
                       name, lo, hi, v);
    *out = (int)x;
    return TFM_OK;
}

/* sacreBLEU's `-m` takes several words (`-m bleu chrf ter`), which getopt
 * cannot: every -m/--metrics and the metric names after its value are taken
 * out of argv here (rewrite_args). */
static TfmStatus take_metrics(int argc, char **argv, int *i, BleuArgs *a, TfmErr *err)
{
    const char *arg = argv[*i], *v;
    if (strcmp(arg, "-m") == 0 || strcmp(arg, "--metrics") == 0) {
        if (*i + 1 >= argc) return err_set(err, TFM_ERR_USAGE, "bleu: option '%s' needs a value", arg);
        v = argv[++*i];
    } else {
        v = strncmp(arg, "--metrics=", 10) == 0 ? arg + 10 : arg + 2;
    }
    if (!parse_metrics(v, &a->metrics))
        return err_set(err, TFM_ERR_USAGE, "bleu: -m: expected bleu, chrf or ter, got '%s'", v);
    while (*i + 1 < argc && is_metric_name(argv[*i + 1])) parse_metrics(argv[++*i], &a->metrics);
    return TFM_OK;
}

/* sacreBLEU's single-dash names of the options (argparse takes them; getopt
 * would read "-tok" as -t -o -k): each is replaced by tfm's long option
 * before getopt runs. "-lc" and "-ci" are here too. */
static const char *sacrebleu_alias(const char *arg)
{
    static const char *const alias[][2] = {
        {"-lc", "--lowercase"},          {"-tok", "--tokenize"},
        {"-s", "--smooth"},              {"-sv", "--smooth-value"},
        {"-sl", "--sentence"},           {"-cc", "--chrf-char-order"},
        {"-cw", "--chrf-word-order"},    {"-ci", "--confidence"},
        {"-cin", "--confidence-n"},      {"-pbs", "--paired-bs"},
        {"-par", "--paired-ar"},         {"-pbsn", "--paired-bs-n"},
        {"-parn", "--paired-ar-n"},      {"--smooth-method", "--smooth"},
        {"-b", "--score-only"},          {"-w", "--width"},
        {"-i", "--input"},
    };
    for (size_t k = 0; k < sizeof alias / sizeof alias[0]; k++)
        if (strcmp(arg, alias[k][0]) == 0) return alias[k][1];
    return NULL;
}

static const struct option longopts[] = {
    {"lowercase", no_argument, NULL, 'l'},
    {"tokenize", required_argument, NULL, 't'},
    {"smooth", required_argument, NULL, 's'},
    {"smooth-value", required_argument, NULL, 'v'},
    {"sentence", no_argument, NULL, 'S'},
    {"sentence-level", no_argument, NULL, 'S'},
    {"json", no_argument, NULL, 'j'},
    {"score-only", no_argument, NULL, 'o'},
    {"width", required_argument, NULL, 'w'},
    {"chrf-char-order", required_argument, NULL, 'C'},
    {"chrf-word-order", required_argument, NULL, 'W'},
    {"chrf-beta", required_argument, NULL, 'B'},
    {"chrf-lowercase", no_argument, NULL, 'L'},
    {"chrf-whitespace", no_argument, NULL, 'P'},
    {"chrf-eps-smoothing", no_argument, NULL, 'E'},
    {"ter-case-sensitive", no_argument, NULL, 'T'},
    {"ter-no-punct", no_argument, NULL, 'N'},
    {"ter-normalized", no_argument, NULL, 'Z'},
    {"ter-asian-support", no_argument, NULL, 'A'},
    {"confidence", no_argument, NULL, 'c'},
    {"confidence-n", required_argument, NULL, 'n'},
    {"paired-bs", required_argument, NULL, 'b'},
    {"paired-ar", required_argument, NULL, 'a'},
    {"paired-bs-n", required_argument, NULL, 'p'},
    {"paired-ar-n", required_argument, NULL, 'r'},
    {"input", required_argument, NULL, 'i'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Does the long option arg ("--name", no "=value"; getopt_long takes any
 * unambiguous prefix) take its value from the next argument? */
static bool takes_next_value(const char *arg)
{
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '=')) return false;
    const size_t len = strlen(arg + 2);
    int matches = 0, with_value = 0;
    for (const struct option *o = longopts; len && o->name; o++) {
        if (strncmp(o->name, arg + 2, len) != 0) continue;
        if (strlen(o->name) == len) return o->has_arg == required_argument;
        matches++;
        with_value += o->has_arg == required_argument;
    }
    return matches > 0 && with_value == matches;
}

/* Copies argv to copy for getopt_long, with sacreBLEU's forms rewritten:
 * its single-dash names ("-tok 13a", "-tok=13a", "-w2") become the long
 * options, and -m's metrics are taken out (take_metrics). argv[0], an
 * option's separate value and everything after "--" are copied as they are.
 * Returns the number of entries (at most 2 an argument), copy[n] = NULL. */
static TfmStatus rewrite_args(int argc, char **argv, char **copy, int *n_out, BleuArgs *a,
                              TfmErr *err)
{
    int n = 0;
    bool dashdash = false, value_next = false;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (i == 0 || dashdash || value_next || arg[0] != '-') {
            copy[n++] = arg;
            value_next = false;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            dashdash = true;
            copy[n++] = arg;
            continue;
        }
        if (strncmp(arg, "-m", 2) == 0 || strcmp(arg, "--metrics") == 0 ||
            strncmp(arg, "--metrics=", 10) == 0) {
            if (take_metrics(argc, argv, &i, a, err)) return err->status;
            continue;
        }
        /* "-tok=13a": the alias of the part before "=" */
        const char *eq = strchr(arg, '=');
        char name[24] = "";
        const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const char *alias = NULL;
        if (len < sizeof name) {
            memcpy(name, arg, len);
            name[len] = '\0';
            alias = sacrebleu_alias(name);
        }
        if (!alias && strncmp(arg, "-w", 2) == 0) {
            /* argparse's "-w2" */
            copy[n++] = "--width";
            copy[n++] = arg + 2;
            continue;
        }
        /* sacreBLEU's -i takes several systems ("-i a b", "-i a -"); here
         * it takes HYP alone, so a file right after its value is refused, not
         * made a reference. "-i=a b" gives -i one value in argparse too. */
        const char *opt = alias ? alias : name;
        const size_t opt_len = strlen(opt);
        const bool is_input = opt_len >= 3 && strncmp(opt, "--input", opt_len) == 0;  /* getopt's --inp */
        if (is_input && !eq && i + 2 < argc &&
            (argv[i + 2][0] != '-' || strcmp(argv[i + 2], "-") == 0))
            return err_set(err, TFM_ERR_USAGE, "bleu: -i takes one file, HYP (%s); the references "
                           "go before it, other systems after --paired-bs (see tfm bleu --help)",
                           argv[i + 1]);
        if (!alias) {
            copy[n++] = arg;
            value_next = takes_next_value(arg);
            continue;
        }
        const bool with_value = takes_next_value(alias);
        if (eq && !with_value)
            return err_set(err, TFM_ERR_USAGE, "bleu: option '%s' takes no value", name);
        copy[n++] = (char *)alias;
        if (eq) copy[n++] = (char *)eq + 1;
        else value_next = with_value;
    }
    copy[n] = NULL;
    *n_out = n;
    return TFM_OK;
}

TfmStatus bleu_parse_args(int argc, char **argv, char **copy, BleuArgs *a, TfmErr *err)
{
    bleu_options_default(&a->opt);
    chrf_options_default(&a->chrf);
    ter_options_default(&a->ter);
    a->fmt.width = 2;               /* the SPEC's line; sacreBLEU's default is 1 */
    a->confidence_n = 1000;
    a->paired_bs_n = 1000;
    a->paired_ar_n = 10000;
    /* copy: argv rewritten (up to 2 entries an argument: "-w2" becomes
     * "--width" "2"), then the systems of the paired tests */
    a->systems = copy + 2 * (size_t)argc + 1;
    int n = 0;
    if (rewrite_args(argc, argv, copy, &n, a, err)) return err->status;
    optind = 0;                     /* glibc: full re-initialisation */
    opterr = 0;
    int c;
    while ((c = getopt_long(n, copy, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': a->opt.lowercase = true; break;
        case 't':
            if (!bleu_parse_tokenizer(optarg, &a->opt.tokenize))
                return err_set(err, TFM_ERR_USAGE,
                               "bleu: --tokenize: expected 13a, intl, zh, char or none, got '%s'", optarg);
            break;
        case 's':
            if (!bleu_parse_smooth(optarg, &a->opt.smooth))
                return err_set(err, TFM_ERR_USAGE,
                               "bleu: --smooth: expected exp, floor, add-k or none, got '%s'", optarg);
            break;
        case 'v': {
            double v;
            if (!cmd_parse_double(optarg, 0, HUGE_VAL, &v))
                return err_set(err, TFM_ERR_USAGE,
                               "bleu: --smooth-value: expected a non-negative number, got '%s'", optarg);
            a->opt.smooth_value = v;
            break;
        }
        case 'S': a->sentence = true; break;
        case 'j': a->fmt.json = true; break;
        case 'o': a->fmt.score_only = true; break;
        case 'w':
            if (int_option("width", optarg, 0, 17, &a->fmt.width, err)) return err->status;
            break;
        case 'C':
            if (int_option("chrf-char-order", optarg, 1, CHRF_MAX_CHAR_ORDER, &a->chrf.char_order, err))
                return err->status;
            break;
        case 'W':
            if (int_option("chrf-word-order", optarg, 0, CHRF_MAX_WORD_ORDER, &a->chrf.word_order, err))
                return err->status;
            break;
        case 'B':
            if (int_option("chrf-beta", optarg, 0, 1000, &a->chrf.beta, err)) return err->status;
            break;
        case 'L': a->chrf.lowercase = true; break;
        case 'P': a->chrf.whitespace = true; break;
        case 'E': a->chrf.eps_smoothing = true; break;
        case 'T': a->ter.case_sensitive = true; break;
        case 'N': a->ter.no_punct = true; break;
        case 'Z': a->ter.normalized = true; break;
        case 'A': a->ter.asian_support = true; break;
        case 'c': a->confidence = true; break;
        case 'n':
            if (int_option("confidence-n", optarg, 0, 10000000, &a->confidence_n, err)) return err->status;
            break;
        case 'p':
            if (int_option("paired-bs-n", optarg, 0, 10000000, &a->paired_bs_n, err)) return err->status;
            if (a->paired_bs_n == 0) a->paired_bs_n = 1000;     /* sacreBLEU: 0 is the default */
            break;
        case 'r':
            if (int_option("paired-ar-n", optarg, 0, 10000000, &a->paired_ar_n, err)) return err->status;
            if (a->paired_ar_n == 0) a->paired_ar_n = 10000;
            break;
        case 'b':
        case 'a':
            if (a->paired && a->paired != c)
                return err_set(err, TFM_ERR_USAGE, "bleu: --paired-bs and --paired-ar are two tests: "
                               "choose one (as sacreBLEU)");
            a->paired = (char)c;
            a->systems[a->n_systems++] = optarg;
            break;
        case 'i':
            if (a->input)
                return err_set(err, TFM_ERR_USAGE, "bleu: -i/--input given twice: it takes one "
                               "hypothesis (compare systems with --paired-bs SYS)");
            a->input = optarg;
            break;
        case ':':
            return err_set(err, TFM_ERR_USAGE, "bleu: option '%s' needs a value", copy[optind - 1]);
        default:
            if (optopt)
                return err_set(err, TFM_ERR_USAGE, "bleu: unknown option '-%c' (see tfm bleu --help)", optopt);
            return cmd_unknown_option("bleu", copy[optind - 1], longopts, NULL, err);
        }
    }
    if (!a->metrics) a->metrics = METRIC_BLEU;
    if (a->sentence && (a->metrics & (a->metrics - 1)))
        return err_set(err, TFM_ERR_USAGE, "bleu: --sentence takes one metric (as sacreBLEU)");
    if (a->sentence && (a->confidence || a->paired))
        return err_set(err, TFM_ERR_USAGE, "bleu: --sentence has no significance tests (as sacreBLEU)");
    if (a->confidence && a->paired)
        return err_set(err, TFM_ERR_USAGE, "bleu: --confidence is for one system; the paired tests "
                       "give each system's interval themselves");
    if (a->sentence) a->opt.effective_order = true;
    a->files = copy + optind;
    a->n_files = n - optind;
    if (a->input) {
        /* HYP goes first, into the entry before the files: an option
         * getopt has consumed (-i HYP took at least one) */
        *--a->files = a->input;
        a->n_files++;
        if (a->n_files < 2)
            return err_set(err, TFM_ERR_USAGE, "bleu: expected REF [REF ...] with -i HYP (see tfm bleu --help)");
    }
    if (a->n_files < 2)
        return err_set(err, TFM_ERR_USAGE, "bleu: expected HYP REF [REF ...] (see tfm bleu --help)");
    /* as sacreBLEU: a system is named by its file, once, and is not the
     * baseline (a system against itself is always "significant") */
    for (int i = 0; i < a->n_systems; i++) {
        if (strcmp(a->systems[i], a->files[0]) == 0)
            return err_set(err, TFM_ERR_USAGE, "bleu: --paired-%s %s: that is HYP, the baseline",
                           a->paired == 'b' ? "bs" : "ar", a->systems[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(a->systems[i], a->systems[j]) == 0)
                return err_set(err, TFM_ERR_USAGE, "bleu: --paired-%s %s: given twice",
                               a->paired == 'b' ? "bs" : "ar", a->systems[i]);
    }
    return TFM_OK;
}
