/* cmd_bleu: `tfm bleu HYP REF [REF ...]` over bleu.c, chrf.c, ter.c and
 * significance.c: reads the files in step and scores each line;
 * bleu_args.c reads the command line, bleu_output.c prints sacreBLEU's line
 * (or JSON) of each metric, or the paired tests' table, on stdout, and the
 * signatures on stderr. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/text.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/significance.h"
#include "text/ter.h"
#include "cli/bleu_args.h"
#include "cli/bleu_output.h"
#include "cli/cmds.h"

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
        bleu_print_help();
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
    if (bleu_parse_args(argc, argv, copy, &a, err)) goto fail;

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
    FREE_ALL(files, lines, seg, seg_len, paths, names, copy);
    return status;
}
