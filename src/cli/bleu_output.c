/* bleu_output: the lines, JSON objects and tables `tfm bleu` prints (see
 * bleu_output.h), in sacreBLEU's forms (metrics/base.py Score.format,
 * utils.py's results table). */
#include "cli/bleu_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

static bool shows_ci(const SigResult *ci)
{
    return ci && ci->has_ci && ci->mean > 0;
}

/* " (μ = 39.21 ± 0.95)" or "" */
static void ci_text(const SigResult *ci, int width, char *buf, size_t size)
{
    if (shows_ci(ci)) snprintf(buf, size, " (μ = %.*f ± %.*f)", width, ci->mean, width, ci->ci);
    else buf[0] = '\0';
}

/* --score-only: "39.22", or "39.22 (μ = 39.21 ± 0.95)" with -ci */
static void print_score_only(double score, const SigResult *ci, int width)
{
    char cit[96];
    ci_text(ci, width, cit, sizeof cit);
    printf("%.*f%s\n", width, score, cit);
}

/* sacreBLEU's JSON keys for the interval, rounded to the width as it
 * rounds them. */
static int add_ci_json(cJSON *o, const SigResult *ci, int width)
{
    if (!shows_ci(ci)) return 1;
    char m[64], v[64], text[160];
    snprintf(m, sizeof m, "%.*f", width, ci->mean);
    snprintf(v, sizeof v, "%.*f", width, ci->ci);
    snprintf(text, sizeof text, "μ = %s ± %s", m, v);
    return cJSON_AddNumberToObject(o, "confidence_mean", atof(m)) &&
           cJSON_AddNumberToObject(o, "confidence_var", atof(v)) &&
           cJSON_AddStringToObject(o, "confidence", text) != NULL;
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

TfmStatus bleu_print_bleu(const BleuScore *sc, const ScoreFormat *fmt, const char *sig,
                          const SigResult *ci, TfmErr *err)
{
    if (fmt->score_only) {
        print_score_only(sc->score, ci, fmt->width);
        return TFM_OK;
    }
    char line[512], cit[96];
    bleu_format(sc, fmt->width, line, sizeof line);
    /* "BLEU = 35.12 65.1/41.3/..." : the interval goes after the score */
    const char *score = line + strlen("BLEU = ");
    const char *verbose = strchr(score, ' ');
    verbose = verbose ? verbose + 1 : "";
    ci_text(ci, fmt->width, cit, sizeof cit);
    if (!fmt->json) {
        printf("BLEU = %.*s%s %s\n", (int)(verbose - 1 - score), score, cit, verbose);
        return TFM_OK;
    }
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", "BLEU") &&
             cJSON_AddNumberToObject(o, "score", sc->score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddStringToObject(o, "verbose_score", verbose) &&
             cJSON_AddItemToObject(o, "precisions", cJSON_CreateDoubleArray(sc->precisions, BLEU_MAX_ORDER)) &&
             cJSON_AddItemToObject(o, "counts", cJSON_CreateDoubleArray(sc->counts, BLEU_MAX_ORDER)) &&
             cJSON_AddItemToObject(o, "totals", cJSON_CreateDoubleArray(sc->totals, BLEU_MAX_ORDER)) &&
             cJSON_AddNumberToObject(o, "bp", sc->bp) &&
             cJSON_AddNumberToObject(o, "ratio", sc->ratio) &&
             cJSON_AddNumberToObject(o, "sys_len", (double)sc->sys_len) &&
             cJSON_AddNumberToObject(o, "ref_len", (double)sc->ref_len) && add_ci_json(o, ci, fmt->width);
    return print_json(o, ok, err);
}

/* chrF's line, "chrF2 = 57.12" (sacreBLEU's Score.format, width 2), or JSON
 * with the statistics: [hyp, ref, match] for each order, chars first. */
TfmStatus bleu_print_chrf(const ChrfStats *st, const ChrfOptions *opt, const ScoreFormat *fmt,
                          const char *sig, const SigResult *ci, TfmErr *err)
{
    char name[64], cit[96];
    chrf_name(opt, name, sizeof name);
    const double score = chrf_compute(st, opt);
    if (fmt->score_only) {
        print_score_only(score, ci, fmt->width);
        return TFM_OK;
    }
    ci_text(ci, fmt->width, cit, sizeof cit);
    if (!fmt->json) {
        printf("%s = %.*f%s\n", name, fmt->width, score, cit);
        return TFM_OK;
    }
    const int n = 3 * (opt->char_order + opt->word_order);
    double v[3 * CHRF_MAX_ORDERS];
    for (int i = 0; i < n; i++) v[i] = (double)st->v[i];
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", name) &&
             cJSON_AddNumberToObject(o, "score", score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddNumberToObject(o, "char_order", opt->char_order) &&
             cJSON_AddNumberToObject(o, "word_order", opt->word_order) &&
             cJSON_AddNumberToObject(o, "beta", opt->beta) &&
             cJSON_AddItemToObject(o, "stats", cJSON_CreateDoubleArray(v, n)) && add_ci_json(o, ci, fmt->width);
    return print_json(o, ok, err);
}

/* TER's line, "TER = 45.30", or JSON with the edits and reference length. */
TfmStatus bleu_print_ter(const TerStats *st, const ScoreFormat *fmt, const char *sig,
                         const SigResult *ci, TfmErr *err)
{
    char cit[96];
    const double score = ter_compute(st);
    if (fmt->score_only) {
        print_score_only(score, ci, fmt->width);
        return TFM_OK;
    }
    ci_text(ci, fmt->width, cit, sizeof cit);
    if (!fmt->json) {
        printf("TER = %.*f%s\n", fmt->width, score, cit);
        return TFM_OK;
    }
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", "TER") &&
             cJSON_AddNumberToObject(o, "score", score) &&
             cJSON_AddStringToObject(o, "signature", sig) &&
             cJSON_AddNumberToObject(o, "num_edits", (double)st->edits) &&
             cJSON_AddNumberToObject(o, "ref_length", st->ref_len) && add_ci_json(o, ci, fmt->width);
    return print_json(o, ok, err);
}

/* One cell of the table: "39.83 (39.84 ± 0.97) (p = 0.0420)*". */
static void cell_text(const SigResult *r, int width, char *buf, size_t size)
{
    char score[64], ci[160] = "", p[48] = "";
    /* pieces of known size, then one bounded print: a huge score (BLEU
     * with a huge --smooth-value) is cut, never written past buf */
    snprintf(score, sizeof score, "%.*f", width, r->score);
    if (r->has_ci) snprintf(ci, sizeof ci, " (%.*f ± %.*f)", width, r->mean, width, r->ci);
    if (r->has_p) snprintf(p, sizeof p, " (p = %.4f)%s", r->p, r->p <= 0.05 ? "*" : "");
    snprintf(buf, size, "%s%s%s", score, ci, p);
}

/* Display width of UTF-8 text: code points (μ and ± are one column each). */
static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void print_padded(const char *s, int width, bool last)
{
    fputs(s, stdout);
    if (!last)
        for (int i = columns(s); i < width + 2; i++) putchar(' ');
}

static TfmStatus print_paired_json(const char *const *names, int n_systems,
                                   const PairedColumn *cols, int n_cols, TfmErr *err)
{
    for (int s = 0; s < n_systems; s++) {
        cJSON *o = cJSON_CreateObject();
        int ok = o && cJSON_AddStringToObject(o, "system", names[s]) != NULL;
        for (int c = 0; ok && c < n_cols; c++) {
            const SigResult *r = &cols[c].res[s];
            cJSON *m = cJSON_AddObjectToObject(o, cols[c].name);
            ok = m && cJSON_AddNumberToObject(m, "score", r->score) &&
                 (r->has_p ? cJSON_AddNumberToObject(m, "p_value", r->p)
                           : cJSON_AddNullToObject(m, "p_value")) &&
                 (r->has_ci ? cJSON_AddNumberToObject(m, "mean", r->mean)
                            : cJSON_AddNullToObject(m, "mean")) &&
                 (r->has_ci ? cJSON_AddNumberToObject(m, "ci", r->ci)
                            : cJSON_AddNullToObject(m, "ci"));
        }
        if (print_json(o, ok, err)) return err->status;
    }
    return TFM_OK;
}

TfmStatus bleu_print_paired(const char *const *names, int n_systems, const PairedColumn *cols,
                            int n_cols, const ScoreFormat *fmt, TfmErr *err)
{
    if (fmt->json) return print_paired_json(names, n_systems, cols, n_cols, err);
    /* widths: the widest cell of each column, header included */
    char cell[160];
    int wname = columns("System");
    for (int s = 0; s < n_systems; s++)
        if (columns(names[s]) > wname) wname = columns(names[s]);
    int width[8] = {0};
    char heads[8][96];
    for (int c = 0; c < n_cols && c < 8; c++) {
        snprintf(heads[c], sizeof heads[c], "%s%s", cols[c].name,
                 cols[c].res[0].has_ci ? " (μ ± 95% CI)" : "");
        width[c] = columns(heads[c]);
        for (int s = 0; s < n_systems; s++) {
            cell_text(&cols[c].res[s], fmt->width, cell, sizeof cell);
            if (columns(cell) > width[c]) width[c] = columns(cell);
        }
    }
    print_padded("System", wname, false);
    for (int c = 0; c < n_cols; c++) print_padded(heads[c], width[c], c == n_cols - 1);
    putchar('\n');
    for (int s = 0; s < n_systems; s++) {
        print_padded(names[s], wname, false);
        for (int c = 0; c < n_cols; c++) {
            cell_text(&cols[c].res[s], fmt->width, cell, sizeof cell);
            print_padded(cell, width[c], c == n_cols - 1);
        }
        putchar('\n');
    }
    return TFM_OK;
}

void bleu_sig_with_test(const char *sig, const char *test, char *buf, size_t size)
{
    const char *bar = strchr(sig, '|');
    const int head = bar ? (int)(bar + 1 - sig) : 0;
    snprintf(buf, size, "%.*s%s%s", head, sig, test, sig + head);
}
