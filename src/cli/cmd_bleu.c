/* cmd_bleu: `tfm bleu HYP REF [REF ...]`, the command line over bleu.c.
 * Prints sacreBLEU's line (or JSON) on stdout and the signature on stderr. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "text/bleu.h"
#include "cli/cmds.h"
#include "base/text.h"

static const char usage[] =
    "usage: tfm bleu HYP REF [REF ...] [options]\n"
    "\n"
    "Corpus BLEU of HYP against one or more references, identical to sacreBLEU 2.x\n"
    "(files read as UTF-8, split on \"\\n\", trailing whitespace stripped). HYP may be \"-\"\n"
    "for stdin. Prints `BLEU = ...` on stdout and sacreBLEU's signature on stderr.\n"
    "The files are read in step, a line at a time (pipes and FIFOs work, memory stays\n"
    "small). Files of different lengths are an error, found before any output for\n"
    "regular files and when the shorter one ends for pipes. Invalid UTF-8 is an\n"
    "error, as in sacreBLEU.\n"
    "\n"
    "options:\n"
    "  -lc, --lowercase            case-insensitive BLEU (Python's str.lower)\n"
    "  --tokenize 13a|intl|zh|char|none\n"
    "                              tokenizer (default 13a, as mteval-v13a; zh\n"
    "                              splits off each Chinese character, then applies\n"
    "                              13a's punctuation rules)\n"
    "  --smooth exp|floor|add-k|none\n"
    "                              smoothing of zero n-gram counts (default exp)\n"
    "  --smooth-value V            value for floor (default 0.1) or add-k (default 1)\n"
    "  --sentence                  one sentence BLEU a line (effective order, as\n"
    "                              sacreBLEU --sentence-level)\n"
    "  --json                      print a JSON object (one per line with --sentence)\n"
    "  -h, --help                  show this help\n";

typedef struct {
    BleuOptions opt;
    bool sentence, json;
    char **files;
    int n_files;
} BleuArgs;

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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bleu_options_default(&a->opt);
    /* getopt_long cannot take sacreBLEU's "-lc" as one short option. */
    int n = 0, dashdash = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) dashdash = 1;
        if (i > 0 && !dashdash && strcmp(argv[i], "-lc") == 0) { a->opt.lowercase = true; continue; }
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
        case ':':
            return err_set(err, TFM_ERR_USAGE, "bleu: option '%s' needs a value", copy[optind - 1]);
        default:
            if (optopt)
                return err_set(err, TFM_ERR_USAGE, "bleu: unknown option '-%c' (see tfm bleu --help)", optopt);
            return err_set(err, TFM_ERR_USAGE, "bleu: unknown option '%s' (see tfm bleu --help)",
                           copy[optind - 1]);
        }
    }
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

TfmStatus cmd_bleu(int argc, char **argv, TfmErr *err)
{
    if (cmd_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return TFM_OK;
    }
    TfmStatus status = TFM_OK;
    BleuArgs a = {0};
    BleuStats total = {0}, st;
    BleuScore sc;
    char sig[256];
    LineReader *files = NULL;
    long *lines = NULL;
    BleuScorer *scorer = NULL;
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

    bleu_signature(&a.opt, n_refs, sig, sizeof sig);
    if (bleu_scorer_new(&a.opt, &scorer, err)) goto fail;
    /* One line of every file at a time: memory stays one line per file,
     * however long the input (endless input ends at the first short file). */
    for (;;) {
        char *hyp;
        size_t hyp_len;
        const int more = text_read_line(&files[0], &hyp, &hyp_len, err);
        if (more < 0 || (more && check_utf8(&files[0], hyp, hyp_len, err))) goto fail;
        for (size_t r = 0; r < n_refs; r++) {
            LineReader *ref = &files[r + 1];
            char *line;
            const int got = text_read_line(ref, &line, &seg_len[r], err);
            if (got < 0) goto fail;
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
                goto fail;
            }
            if (check_utf8(ref, line, seg_len[r], err)) goto fail;
            seg[r] = line;
        }
        if (!more) break;
        if (bleu_segment_stats(scorer, hyp, hyp_len, seg, seg_len, n_refs, &st, err)) goto fail;
        if (a.sentence) {
            bleu_compute(&st, &a.opt, &sc);
            if (print_score(&sc, &a, sig, err)) goto fail;
        }
        bleu_stats_add(&total, &st);
    }
    if (!a.sentence) {
        bleu_compute(&total, &a.opt, &sc);
        if (print_score(&sc, &a, sig, err)) goto fail;
    }
    /* the score must be out before the signature: a failed write is then
     * the only line on stderr */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        err_set(err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno ? errno : EIO));
        goto fail;
    }
    if (!a.json) fprintf(stderr, "%s\n", sig);
    goto done;
fail:
    status = err->status;
done:
    bleu_scorer_free(scorer);
    if (files)
        for (int i = 0; i < a.n_files; i++) text_reader_close(&files[i]);
    free(files);
    free(lines);
    free(seg);
    free(seg_len);
    free(copy);
    return status;
}
