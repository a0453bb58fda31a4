/* cmd_bleu: `tfm bleu HYP REF [REF ...]`, the command line over bleu.c,
 * chrf.c and ter.c. Prints sacreBLEU's line (or JSON) of each metric on
 * stdout and their signatures on stderr. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "base/text.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/ter.h"
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
    "small). Files of different lengths are an error, found before any output for\n"
    "regular files and when the shorter one ends for pipes. Invalid UTF-8 is an\n"
    "error, as in sacreBLEU.\n"
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
    "  -h, --help                  show this help\n";

enum { METRIC_BLEU = 1, METRIC_CHRF = 2, METRIC_TER = 4 };

typedef struct {
    BleuOptions opt;
    ChrfOptions chrf;
    TerOptions ter;
    unsigned metrics;               /* METRIC_* bits; 0 until -m: BLEU */
    bool sentence, json;
    char **files;
    int n_files;
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
 * out of argv here, as is "-lc". */
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

static TfmStatus parse_args(int argc, char **argv, char **copy, BleuArgs *a, TfmErr *err)
{
    static const struct option longopts[] = {
        {"lowercase", no_argument, NULL, 'l'},
        {"tokenize", required_argument, NULL, 't'},
        {"smooth", required_argument, NULL, 's'},
        {"smooth-value", required_argument, NULL, 'v'},
        {"sentence", no_argument, NULL, 'S'},
        {"sentence-level", no_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bleu_options_default(&a->opt);
    chrf_options_default(&a->chrf);
    ter_options_default(&a->ter);
    /* getopt_long cannot take sacreBLEU's "-lc" as one short option. */
    int n = 0, dashdash = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) dashdash = 1;
        if (i > 0 && !dashdash && strcmp(argv[i], "-lc") == 0) { a->opt.lowercase = true; continue; }
        if (i > 0 && !dashdash && (strncmp(argv[i], "-m", 2) == 0 || strcmp(argv[i], "--metrics") == 0 ||
                                   strncmp(argv[i], "--metrics=", 10) == 0)) {
            if (take_metrics(argc, argv, &i, a, err)) return err->status;
            continue;
        }
        copy[n++] = argv[i];
    }
    copy[n] = NULL;
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
        case 'j': a->json = true; break;
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
    if (a->sentence) a->opt.effective_order = true;
    a->files = copy + optind;
    a->n_files = n - optind;
    if (a->n_files < 2)
        return err_set(err, TFM_ERR_USAGE, "bleu: expected HYP REF [REF ...] (see tfm bleu --help)");
    return TFM_OK;
}

/* Prints one score as sacreBLEU's line or as a one-line JSON object. */
static TfmStatus print_score(const BleuScore *sc, const BleuArgs *a, const char *sig, TfmErr *err)
{
    char line[512];
    bleu_format(sc, line, sizeof line);
    if (!a->json) {
        printf("%s\n", line);
        return TFM_OK;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) return err_set(err, TFM_ERR_NOMEM, "bleu: out of memory");
    int ok = cJSON_AddStringToObject(o, "name", "BLEU") &&
             cJSON_AddNumberToObject(o, "score", sc->score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddStringToObject(o, "verbose_score", line + strlen("BLEU = ")) &&
             cJSON_AddItemToObject(o, "precisions", cJSON_CreateDoubleArray(sc->precisions, BLEU_MAX_ORDER)) &&
             cJSON_AddItemToObject(o, "counts", cJSON_CreateDoubleArray(sc->counts, BLEU_MAX_ORDER)) &&
             cJSON_AddItemToObject(o, "totals", cJSON_CreateDoubleArray(sc->totals, BLEU_MAX_ORDER)) &&
             cJSON_AddNumberToObject(o, "bp", sc->bp) &&
             cJSON_AddNumberToObject(o, "ratio", sc->ratio) &&
             cJSON_AddNumberToObject(o, "sys_len", (double)sc->sys_len) &&
             cJSON_AddNumberToObject(o, "ref_len", (double)sc->ref_len);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return err_set(err, TFM_ERR_NOMEM, "bleu: out of memory");
    printf("%s\n", text);
    cJSON_free(text);
    return TFM_OK;
}

/* Prints one JSON object on a line, then frees it (NULL: out of memory). */
static TfmStatus print_json(cJSON *o, int ok, TfmErr *err)
{
    char *text = o && ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return err_set(err, TFM_ERR_NOMEM, "bleu: out of memory");
    printf("%s\n", text);
    cJSON_free(text);
    return TFM_OK;
}

/* chrF's line, "chrF2 = 57.12" (sacreBLEU's Score.format, width 2), or JSON
 * with the statistics: [hyp, ref, match] for each order, chars first. */
static TfmStatus print_chrf(const ChrfStats *st, const BleuArgs *a, const char *sig, TfmErr *err)
{
    char name[64];
    chrf_name(&a->chrf, name, sizeof name);
    const double score = chrf_compute(st, &a->chrf);
    if (!a->json) {
        printf("%s = %.2f\n", name, score);
        return TFM_OK;
    }
    const int n = 3 * (a->chrf.char_order + a->chrf.word_order);
    double v[3 * CHRF_MAX_ORDERS];
    for (int i = 0; i < n; i++) v[i] = (double)st->v[i];
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", name) &&
             cJSON_AddNumberToObject(o, "score", score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddNumberToObject(o, "char_order", a->chrf.char_order) &&
             cJSON_AddNumberToObject(o, "word_order", a->chrf.word_order) &&
             cJSON_AddNumberToObject(o, "beta", a->chrf.beta) &&
             cJSON_AddItemToObject(o, "stats", cJSON_CreateDoubleArray(v, n));
    return print_json(o, ok, err);
}

/* TER's line, "TER = 45.30", or JSON with the edits and reference length. */
static TfmStatus print_ter(const TerStats *st, const BleuArgs *a, const char *sig, TfmErr *err)
{
    const double score = ter_compute(st);
    if (!a->json) {
        printf("TER = %.2f\n", score);
        return TFM_OK;
    }
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", "TER") &&
             cJSON_AddNumberToObject(o, "score", score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddNumberToObject(o, "num_edits", (double)st->edits) &&
             cJSON_AddNumberToObject(o, "ref_length", st->ref_len);
    return print_json(o, ok, err);
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

/* The metrics asked for (-m): their scorers, running totals and signatures. */
typedef struct {
    bool bleu, chrf, ter;
    BleuScorer *bleu_sc;
    ChrfScorer *chrf_sc;
    TerScorer *ter_sc;
    BleuStats bleu_total;
    ChrfStats chrf_total;
    TerStats ter_total;
    char bleu_sig[256], chrf_sig[256], ter_sig[256];
} Metrics;

static TfmStatus metrics_open(Metrics *m, const BleuArgs *a, size_t n_refs, TfmErr *err)
{
    m->bleu = a->metrics & METRIC_BLEU;
    m->chrf = a->metrics & METRIC_CHRF;
    m->ter = a->metrics & METRIC_TER;
    bleu_signature(&a->opt, n_refs, m->bleu_sig, sizeof m->bleu_sig);
    chrf_signature(&a->chrf, n_refs, m->chrf_sig, sizeof m->chrf_sig);
    ter_signature(&a->ter, n_refs, m->ter_sig, sizeof m->ter_sig);
    if ((m->bleu && bleu_scorer_new(&a->opt, &m->bleu_sc, err)) ||
        (m->chrf && chrf_scorer_new(&a->chrf, &m->chrf_sc, err)) ||
        (m->ter && ter_scorer_new(&a->ter, &m->ter_sc, err)))
        return err->status;
    return TFM_OK;
}

static void metrics_free(Metrics *m)
{
    bleu_scorer_free(m->bleu_sc);
    chrf_scorer_free(m->chrf_sc);
    ter_scorer_free(m->ter_sc);
}

/* Adds one segment to every metric's totals (--sentence: prints its scores). */
static TfmStatus metrics_segment(Metrics *m, const BleuArgs *a, const char *hyp, size_t hyp_len,
                                 const char **seg, const size_t *seg_len, size_t n_refs,
                                 TfmErr *err)
{
    if (m->bleu) {
        BleuStats st;
        BleuScore sc;
        if (bleu_segment_stats(m->bleu_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err))
            return err->status;
        if (a->sentence) {
            bleu_compute(&st, &a->opt, &sc);
            if (print_score(&sc, a, m->bleu_sig, err)) return err->status;
        }
        bleu_stats_add(&m->bleu_total, &st);
    }
    if (m->chrf) {
        ChrfStats st;
        if (chrf_segment_stats(m->chrf_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err) ||
            (a->sentence && print_chrf(&st, a, m->chrf_sig, err)))
            return err->status;
        chrf_stats_add(&m->chrf_total, &st);
    }
    if (m->ter) {
        TerStats st;
        if (ter_segment_stats(m->ter_sc, hyp, hyp_len, seg, seg_len, n_refs, &st, err) ||
            (a->sentence && print_ter(&st, a, m->ter_sig, err)))
            return err->status;
        ter_stats_add(&m->ter_total, &st);
    }
    return TFM_OK;
}

/* The corpus scores (unless --sentence printed them per line), then the
 * signatures on stderr. */
static TfmStatus metrics_finish(Metrics *m, const BleuArgs *a, TfmErr *err)
{
    if (!a->sentence) {
        if (m->bleu) {
            BleuScore sc;
            bleu_compute(&m->bleu_total, &a->opt, &sc);
            if (print_score(&sc, a, m->bleu_sig, err)) return err->status;
        }
        if ((m->chrf && print_chrf(&m->chrf_total, a, m->chrf_sig, err)) ||
            (m->ter && print_ter(&m->ter_total, a, m->ter_sig, err)))
            return err->status;
    }
    /* the score must be out before the signature: a failed write is then
     * the only line on stderr */
    if (fflush(stdout) != 0 || ferror(stdout))
        return err_set(err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno ? errno : EIO));
    if (!a->json) {
        if (m->bleu) fprintf(stderr, "%s\n", m->bleu_sig);
        if (m->chrf) fprintf(stderr, "%s\n", m->chrf_sig);
        if (m->ter) fprintf(stderr, "%s\n", m->ter_sig);
    }
    return TFM_OK;
}

/* Reads the next line of the hypothesis file (files[0]) into *hyp and the
 * same line of every reference into seg: 1, or 0 at the end of all of them
 * together; a file that ends before the others is an error. lines: the
 * files' line counts where known in advance (-1 for a stream). */
static int read_segment(LineReader *files, const long *lines, size_t n_refs, char **hyp,
                        size_t *hyp_len, const char **seg, size_t *seg_len, TfmErr *err)
{
    const int more = text_read_line(&files[0], hyp, hyp_len, err);
    if (more < 0 || (more && check_utf8(&files[0], *hyp, *hyp_len, err))) return -1;
    for (size_t r = 0; r < n_refs; r++) {
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
        return TFM_OK;
    }
    TfmStatus status = TFM_OK;
    BleuArgs a = {0};
    Metrics met = {0};
    LineReader *files = NULL;
    long *lines = NULL;
    const char **seg = NULL;
    size_t *seg_len = NULL;
    char **copy = xcalloc((size_t)argc + 1, sizeof *copy, err);
    if (!copy) return err->status;
    if (parse_args(argc, argv, copy, &a, err)) goto fail;

    size_t n_refs = (size_t)a.n_files - 1;
    for (int i = 0; i < a.n_files; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(a.files[i], "-") == 0 && strcmp(a.files[j], "-") == 0) {
                err_set(err, TFM_ERR_USAGE, "bleu: stdin ('-') can be only one of the files");
                goto fail;
            }
    files = xcalloc((size_t)a.n_files, sizeof *files, err);
    lines = xcalloc((size_t)a.n_files, sizeof *lines, err);
    seg = xcalloc(n_refs, sizeof *seg, err);
    seg_len = xcalloc(n_refs, sizeof *seg_len, err);
    if (!files || !lines || !seg || !seg_len) goto fail;
    for (int i = 0; i < a.n_files; i++)
        if (open_lines(&files[i], a.files[i], &lines[i], err)) goto fail;
    for (int i = 1; i < a.n_files; i++)
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
        const int more = read_segment(files, lines, n_refs, &hyp, &hyp_len, seg, seg_len, err);
        if (more < 0) goto fail;
        if (!more) break;
        if (metrics_segment(&met, &a, hyp, hyp_len, seg, seg_len, n_refs, err)) goto fail;
    }
    if (metrics_finish(&met, &a, err)) goto fail;
    goto done;
fail:
    status = err->status;
done:
    metrics_free(&met);
    if (files)
        for (int i = 0; i < a.n_files; i++) text_reader_close(&files[i]);
    free(files);
    free(lines);
    free(seg);
    free(seg_len);
    free(copy);
    return status;
}
