/* cmd_bleu: `tfm bleu HYP REF [REF ...]`, the command line over bleu.c,
 * chrf.c, ter.c and significance.c: reads the files in step and scores each
 * line; bleu_output.c prints sacreBLEU's line (or JSON) of each metric, or
 * the paired tests' table, on stdout, and the signatures on stderr. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/text.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/significance.h"
#include "text/ter.h"
#include "cli/bleu_output.h"
#include "cli/cmds.h"

static const char usage[] =
    "usage: tfm bleu HYP REF [REF ...] [-m bleu|chrf|ter ...] [options]\n"
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

enum { METRIC_BLEU = 1, METRIC_CHRF = 2, METRIC_TER = 4 };

typedef struct {
    BleuOptions opt;
    ChrfOptions chrf;
    TerOptions ter;
    unsigned metrics;               /* METRIC_* bits; 0 until -m: BLEU */
    bool sentence;
    ScoreFormat fmt;                /* --json, --score-only, --width */
    char **files;
    int n_files;
    bool confidence;                /* -ci: one system's bootstrap interval */
    int confidence_n;
    char paired;                    /* 0, 'b' (--paired-bs) or 'a' (--paired-ar) */
    int paired_bs_n, paired_ar_n;
    char **systems;                 /* the files of --paired-bs/--paired-ar */
    int n_systems;
} BleuArgs;

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
        char name[24];
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

static TfmStatus parse_args(int argc, char **argv, char **copy, BleuArgs *a, TfmErr *err)
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
        case ':':
            return err_set(err, TFM_ERR_USAGE, "bleu: option '%s' needs a value", copy[optind - 1]);
        default:
            if (optopt)
                return err_set(err, TFM_ERR_USAGE, "bleu: unknown option '-%c' (see tfm bleu --help)", optopt);
            return err_set(err, TFM_ERR_USAGE, "bleu: unknown option '%s' (see tfm bleu --help)",
                           copy[optind - 1]);
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

/* sacreBLEU decodes its files as strict UTF-8 and stops at a bad byte. */
static TfmStatus check_utf8(const LineReader *r, const char *line, size_t len, TfmErr *err)
{
    size_t bad;
    if (text_utf8_valid(line, len, &bad)) return TFM_OK;
    return err_set(err, TFM_ERR_FORMAT, "%s: line %ld: invalid UTF-8 at byte %zu", r->name,
                   r->line_no, bad + 1);
}

/* Counts the lines of a regular file and checks their UTF-8, so that a bad
 * file fails before any output (as sacreBLEU, which reads everything first).
 * Leaves the file at its start. */
static TfmStatus count_lines(FILE *f, const char *path, long *lines, TfmErr *err)
{
    LineReader r;
    text_reader_from_file(&r, f, path);
    r.check_utf8 = false;
    char *line;
    size_t len;
    int got;
    while ((got = text_read_line(&r, &line, &len, err)) > 0)
        if (check_utf8(&r, line, len, err)) break;
    *lines = r.line_no;
    text_reader_close(&r);
    if (got != 0) return err->status;
    if (fseek(f, 0, SEEK_SET) != 0)
        return err_set(err, TFM_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
    return TFM_OK;
}

/* Opens path ("-": stdin) to be read line by line as sacreBLEU reads it:
 * split on "\n" only, NUL bytes kept (Python keeps them). A FIFO is fine
 * here (`tfm bleu <(...) ref`): the files are streamed, never held whole.
 * *lines is the line count of a regular file, counted first so that files
 * of different lengths fail before any output; -1 for a stream. */
static TfmStatus open_lines(LineReader *r, const char *path, long *lines, TfmErr *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    text_reader_from_file(r, f, f == stdin ? "stdin" : path);
    r->owns_file = f != stdin;
    r->check_utf8 = false;
    *lines = -1;
    struct stat sb;
    if (f != stdin && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode))
        return count_lines(f, path, lines, err);
    return TFM_OK;
}

static TfmStatus counts_differ(const char *a, long a_lines, const char *b, long b_lines, TfmErr *err)
{
    return err_set(err, TFM_ERR_FORMAT, "line counts differ: %s has %ld lines, %s has %ld",
                   a, a_lines, b, b_lines);
}

enum { M_BLEU, M_CHRF, M_TER, N_METRICS };

/* One system's statistics of one metric, a row of k values a segment, kept
 * for the significance tests. */
typedef struct {
    double *v;
    size_t n, cap;              /* values held and allocated */
} Rows;

/* The metrics asked for (-m): their scorers, the baseline's running totals,
 * the signatures, and with a significance test every segment's statistics
 * of every system (rows[sys * N_METRICS + metric], sys 0 the baseline). */
typedef struct {
    bool on[N_METRICS];
    int k[N_METRICS];           /* statistics a segment */
    BleuScorer *bleu_sc;
    ChrfScorer *chrf_sc;
    TerScorer *ter_sc;
    BleuStats bleu_total;
    ChrfStats chrf_total;
    TerStats ter_total;
    char sig[N_METRICS][256];
    int n_sys;                  /* systems whose rows are kept: 0 without a test */
    long n_lines;
    Rows *rows;
} Metrics;

static TfmStatus metrics_open(Metrics *m, const BleuArgs *a, size_t n_refs, TfmErr *err)
{
    m->on[M_BLEU] = a->metrics & METRIC_BLEU;
    m->on[M_CHRF] = a->metrics & METRIC_CHRF;
    m->on[M_TER] = a->metrics & METRIC_TER;
    m->k[M_BLEU] = SIG_BLEU_K;
    m->k[M_CHRF] = sig_chrf_k(&a->chrf);
    m->k[M_TER] = SIG_TER_K;
    bleu_signature(&a->opt, n_refs, m->sig[M_BLEU], sizeof m->sig[M_BLEU]);
    chrf_signature(&a->chrf, n_refs, m->sig[M_CHRF], sizeof m->sig[M_CHRF]);
    ter_signature(&a->ter, n_refs, m->sig[M_TER], sizeof m->sig[M_TER]);
    if ((m->on[M_BLEU] && bleu_scorer_new(&a->opt, &m->bleu_sc, err)) ||
        (m->on[M_CHRF] && chrf_scorer_new(&a->chrf, &m->chrf_sc, err)) ||
        (m->on[M_TER] && ter_scorer_new(&a->ter, &m->ter_sc, err)))
        return err->status;
    if (a->confidence || a->paired) {
        m->n_sys = 1 + a->n_systems;
        m->rows = xcalloc((size_t)m->n_sys * N_METRICS, sizeof *m->rows, err);
        if (!m->rows) return err->status;
    }
    return TFM_OK;
}

static void metrics_free(Metrics *m)
{
    bleu_scorer_free(m->bleu_sc);
    chrf_scorer_free(m->chrf_sc);
    ter_scorer_free(m->ter_sc);
    for (int i = 0; m->rows && i < m->n_sys * N_METRICS; i++) free(m->rows[i].v);
    free(m->rows);
}

/* Appends one segment's k statistics. */
static TfmStatus rows_add(Rows *r, const double *x, int k, TfmErr *err)
{
    if (r->n + (size_t)k > r->cap) {
        const size_t cap = r->cap ? 2 * r->cap : 1024 * (size_t)k;
        double *v = xrealloc(r->v, cap * sizeof *v, err);
        if (!v) return err->status;
        r->v = v;
        r->cap = cap;
    }
    memcpy(r->v + r->n, x, (size_t)k * sizeof *x);
    r->n += (size_t)k;
    return TFM_OK;
}

/* Scores one segment of system sys (0: HYP) with every metric: the
 * baseline's statistics go to the totals (--sentence: its scores are
 * printed), and with a significance test every system's to its rows. */
static TfmStatus metrics_segment(Metrics *m, const BleuArgs *a, int sys, const char *hyp,
                                 size_t hyp_len, const char **seg, const size_t *seg_len,
                                 size_t n_refs, TfmErr *err)
{
    double x[3 * CHRF_MAX_ORDERS];
    Rows *rows = m->rows ? m->rows + (size_t)sys * N_METRICS : NULL;
    if (sys == 0) m->n_lines++;
    if (m->on[M_BLEU]) {
        BleuStats st;
        if (bleu_segment_stats(m->bleu_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err))
            return err->status;
        if (a->sentence) {
            BleuScore sc;
            bleu_compute(&st, &a->opt, &sc);
            if (bleu_print_bleu(&sc, &a->fmt, m->sig[M_BLEU], NULL, err)) return err->status;
        }
        if (sys == 0) bleu_stats_add(&m->bleu_total, &st);
        sig_bleu_row(&st, x);
        if (rows && rows_add(&rows[M_BLEU], x, m->k[M_BLEU], err)) return err->status;
    }
    if (m->on[M_CHRF]) {
        ChrfStats st;
        if (chrf_segment_stats(m->chrf_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err) ||
            (a->sentence && bleu_print_chrf(&st, &a->chrf, &a->fmt, m->sig[M_CHRF], NULL, err)))
            return err->status;
        if (sys == 0) chrf_stats_add(&m->chrf_total, &st);
        sig_chrf_row(&st, &a->chrf, x);
        if (rows && rows_add(&rows[M_CHRF], x, m->k[M_CHRF], err)) return err->status;
    }
    if (m->on[M_TER]) {
        TerStats st;
        if (ter_segment_stats(m->ter_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err) ||
            (a->sentence && bleu_print_ter(&st, &a->fmt, m->sig[M_TER], NULL, err)))
            return err->status;
        if (sys == 0) ter_stats_add(&m->ter_total, &st);
        sig_ter_row(&st, x);
        if (rows && rows_add(&rows[M_TER], x, m->k[M_TER], err)) return err->status;
    }
    return TFM_OK;
}

static SigSystem sig_system(const Metrics *m, const BleuArgs *a, int sys, int metric)
{
    static const SigScoreFn score[N_METRICS] = {sig_bleu_score, sig_chrf_score, sig_ter_score};
    const void *ctx[N_METRICS] = {&a->opt, &a->chrf, NULL};
    const Rows *r = &m->rows[(size_t)sys * N_METRICS + metric];
    return (SigSystem){r->v, r->n / (size_t)m->k[metric], m->k[metric], score[metric], ctx[metric]};
}

static void metric_name(int metric, const BleuArgs *a, char *buf, size_t size)
{
    if (metric == M_CHRF) chrf_name(&a->chrf, buf, size);
    else snprintf(buf, size, "%s", metric == M_BLEU ? "BLEU" : "TER");
}

/* --paired-bs / --paired-ar: every system against the baseline, a column a
 * metric. names: the baseline's and the systems' file names. */
static TfmStatus paired_tests(Metrics *m, const BleuArgs *a, const char *const *names,
                              uint64_t seed, TfmErr *err)
{
    PairedColumn cols[N_METRICS];
    memset(cols, 0, sizeof cols);
    int n_cols = 0;
    TfmStatus st = TFM_OK;
    const int n = a->paired == 'b' ? a->paired_bs_n : a->paired_ar_n;
    for (int k = 0; k < N_METRICS && st == TFM_OK; k++) {
        if (!m->on[k]) continue;
        PairedColumn *c = &cols[n_cols++];
        metric_name(k, a, c->name, sizeof c->name);
        if (!(c->res = xcalloc((size_t)m->n_sys, sizeof *c->res, err))) { st = err->status; break; }
        const SigSystem base = sig_system(m, a, 0, k);
        /* the baseline: its interval from the same resamples (bs), or its
         * score alone (ar, as sacreBLEU's default) */
        st = a->paired == 'b' ? sig_bootstrap(&base, n, seed, &c->res[0], err)
                              : sig_score(&base, &c->res[0], err);
        for (int s = 1; s < m->n_sys && st == TFM_OK; s++) {
            const SigSystem sys = sig_system(m, a, s, k);
            st = a->paired == 'b' ? sig_paired_bs(&base, &sys, n, seed, &c->res[s], err)
                                  : sig_paired_ar(&base, &sys, n, seed, &c->res[s], err);
        }
    }
    if (st == TFM_OK) st = bleu_print_paired(names, m->n_sys, cols, n_cols, &a->fmt, err);
    for (int c = 0; c < n_cols; c++) free(cols[c].res);
    return st;
}

/* The corpus scores (unless --sentence printed them per line), with the
 * asked-for test, then the signatures on stderr. */
static TfmStatus metrics_finish(Metrics *m, const BleuArgs *a, const char *const *names,
                                TfmErr *err)
{
    uint64_t seed = 0;
    bool fixed = true;
    char test[96] = "";
    /* sacreBLEU bootstraps only for more than one resample */
    const bool ci = a->confidence && a->confidence_n > 1;
    if ((ci || a->paired) && m->n_lines == 0)
        return err_set(err, TFM_ERR_FORMAT, "bleu: the significance tests need at least one line "
                       "(the files are empty)");
    if (ci || a->paired) {
        if (sig_seed_from_env(&seed, &fixed, err)) return err->status;
        /* the signature's seed as sacreBLEU writes it: -ci the variable's
         * text lowercased, the paired tests the number */
        char seed_text[64] = "none";
        const char *env = getenv("SACREBLEU_SEED");
        if (fixed && env && !a->paired) {
            snprintf(seed_text, sizeof seed_text, "%s", env);
            for (char *c = seed_text; *c; c++) *c = (char)tolower((unsigned char)*c);
        } else if (fixed) {
            snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
        }
        const int n = a->paired == 'a' ? a->paired_ar_n : a->paired ? a->paired_bs_n : a->confidence_n;
        snprintf(test, sizeof test, "%s:%d|seed:%s|", a->paired == 'a' ? "ar" : "bs", n, seed_text);
    }
    char sig[N_METRICS][384];
    for (int k = 0; k < N_METRICS; k++) bleu_sig_with_test(m->sig[k], test, sig[k], sizeof sig[k]);
    if (a->paired) {
        if (paired_tests(m, a, names, seed, err)) return err->status;
    } else if (!a->sentence) {
        SigResult r[N_METRICS] = {{0}};
        for (int k = 0; ci && k < N_METRICS; k++) {
            if (!m->on[k]) continue;
            const SigSystem sys = sig_system(m, a, 0, k);
            if (sig_bootstrap(&sys, a->confidence_n, seed, &r[k], err)) return err->status;
        }
        if (m->on[M_BLEU]) {
            BleuScore sc;
            bleu_compute(&m->bleu_total, &a->opt, &sc);
            if (bleu_print_bleu(&sc, &a->fmt, sig[M_BLEU], ci ? &r[M_BLEU] : NULL, err))
                return err->status;
        }
        if ((m->on[M_CHRF] && bleu_print_chrf(&m->chrf_total, &a->chrf, &a->fmt, sig[M_CHRF],
                                              ci ? &r[M_CHRF] : NULL, err)) ||
            (m->on[M_TER] && bleu_print_ter(&m->ter_total, &a->fmt, sig[M_TER],
                                            ci ? &r[M_TER] : NULL, err)))
            return err->status;
    }
    /* the score must be out before the signature: a failed write is then
     * the only line on stderr */
    if (fflush(stdout) != 0 || ferror(stdout))
        return err_set(err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno ? errno : EIO));
    /* --score-only: the scores alone, as sacreBLEU's -b (the paired table
     * keeps its notes) */
    if (a->fmt.json || (a->fmt.score_only && !a->paired)) return TFM_OK;
    if (a->paired && a->n_files > 2)    /* sacreBLEU's -i SYS1 SYS2 habit: is one a reference? */
        fprintf(stderr, "tfm: note: %d references, the last %s; a system to compare needs its "
                "own --paired-%s\n", a->n_files - 1, a->files[a->n_files - 1],
                a->paired == 'b' ? "bs" : "ar");
    if (a->paired)
        fprintf(stderr, "paired %s test with %d %s: each system against the baseline; "
                "* marks p <= 0.05\n", a->paired == 'b' ? "bootstrap resampling" : "approximate randomization",
                a->paired == 'b' ? a->paired_bs_n : a->paired_ar_n,
                a->paired == 'b' ? "resamples" : "trials");
    for (int k = 0; k < N_METRICS; k++)
        if (m->on[k]) fprintf(stderr, "%s\n", sig[k]);
    return TFM_OK;
}

/* Reads the next line of the hypothesis file (files[0]) into *hyp and the
 * same line of every other file (the references, then the systems of a
 * paired test) into seg: 1, or 0 at the end of all of them together; a file
 * that ends before the others is an error. lines: the files' line counts
 * where known in advance (-1 for a stream). */
static int read_segment(LineReader *files, const long *lines, size_t n_other, char **hyp,
                        size_t *hyp_len, const char **seg, size_t *seg_len, TfmErr *err)
{
    const int more = text_read_line(&files[0], hyp, hyp_len, err);
    if (more < 0 || (more && check_utf8(&files[0], *hyp, *hyp_len, err))) return -1;
    for (size_t r = 0; r < n_other; r++) {
        LineReader *ref = &files[r + 1];
        char *line;
        const int got = text_read_line(ref, &line, &seg_len[r], err);
        if (got < 0) return -1;
        if (got != more) {
            /* a stream is involved: it may be endless, so when it is the
             * longer one, its count is only known to be larger */
            const int li = got ? (int)r + 1 : 0;
            const LineReader *shorter = got ? &files[0] : ref, *longer = &files[li];
            if (lines[li] >= 0)
                counts_differ(longer->name, lines[li], shorter->name, shorter->line_no, err);
            else
                err_set(err, TFM_ERR_FORMAT, "line counts differ: %s has more than %ld lines, "
                        "%s has %ld", longer->name, shorter->line_no, shorter->name,
                        shorter->line_no);
            return -1;
        }
        if (!got) continue;     /* the end of every file: no line to look at */
        if (check_utf8(ref, line, seg_len[r], err)) return -1;
        seg[r] = line;
    }
    return more;
}

TfmStatus cmd_bleu(int argc, char **argv, TfmErr *err)
{
    if (cmd_wants_help(argc, argv)) {
        fputs(usage, stdout);
        fputs(usage_significance, stdout);
        return TFM_OK;
    }
    TfmStatus status = TFM_OK;
    BleuArgs a = {0};
    Metrics met = {0};
    LineReader *files = NULL;
    long *lines = NULL;
    const char **seg = NULL;
    size_t *seg_len = NULL;
    const char **paths = NULL, **names = NULL;
    char **copy = xcalloc(3 * (size_t)argc + 1, sizeof *copy, err);
    if (!copy) return err->status;
    if (parse_args(argc, argv, copy, &a, err)) goto fail;

    /* the files in reading order: HYP, the references, the paired systems */
    const size_t n_refs = (size_t)a.n_files - 1;
    const int n_all = a.n_files + a.n_systems;
    if (!(paths = xcalloc((size_t)n_all, sizeof *paths, err))) goto fail;
    for (int i = 0; i < n_all; i++) paths[i] = i < a.n_files ? a.files[i] : a.systems[i - a.n_files];
    for (int i = 0; i < n_all; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(paths[i], "-") == 0 && strcmp(paths[j], "-") == 0) {
                err_set(err, TFM_ERR_USAGE, "bleu: stdin ('-') can be only one of the files");
                goto fail;
            }
    files = xcalloc((size_t)n_all, sizeof *files, err);
    lines = xcalloc((size_t)n_all, sizeof *lines, err);
    seg = xcalloc((size_t)n_all, sizeof *seg, err);
    seg_len = xcalloc((size_t)n_all, sizeof *seg_len, err);
    names = xcalloc((size_t)n_all, sizeof *names, err);
    if (!files || !lines || !seg || !seg_len || !names) goto fail;
    for (int i = 0; i < n_all; i++)
        if (open_lines(&files[i], paths[i], &lines[i], err)) goto fail;
    for (int i = 1; i < n_all; i++)
        if (lines[0] >= 0 && lines[i] >= 0 && lines[i] != lines[0]) {
            counts_differ(files[0].name, lines[0], files[i].name, lines[i], err);
            goto fail;
        }
    if (metrics_open(&met, &a, n_refs, err)) goto fail;
    /* One line of every file at a time: memory stays one line per file,
     * however long the input (endless input ends at the first short file). */
    for (;;) {
        char *hyp;
        size_t hyp_len;
        const int more = read_segment(files, lines, (size_t)n_all - 1, &hyp, &hyp_len, seg,
                                      seg_len, err);
        if (more < 0) goto fail;
        if (!more) break;
        if (metrics_segment(&met, &a, 0, hyp, hyp_len, seg, seg_len, n_refs, err)) goto fail;
        for (int s = 0; s < a.n_systems; s++)
            if (metrics_segment(&met, &a, 1 + s, seg[n_refs + s], seg_len[n_refs + s], seg,
                                seg_len, n_refs, err))
                goto fail;
    }
    /* the paired test's rows: the baseline first, then the systems */
    for (int i = 0; i < 1 + a.n_systems; i++) names[i] = files[i ? (int)n_refs + i : 0].name;
    char baseline[4200];
    snprintf(baseline, sizeof baseline, "Baseline: %s", names[0]);
    names[0] = baseline;
    if (metrics_finish(&met, &a, names, err)) goto fail;
    goto done;
fail:
    status = err->status;
done:
    metrics_free(&met);
    if (files)
        for (int i = 0; i < a.n_files + a.n_systems; i++) text_reader_close(&files[i]);
    free(files);
    free(lines);
    free(seg);
    free(seg_len);
    free(paths);
    free(names);
    free(copy);
    return status;
}
