/* test_metrics: chrF, chrF++ and TER against sacreBLEU 2.6.0 itself.
 * tests/data/metrics/<case>.json hold sacreBLEU's results (written by
 * scripts/gen_metric_cases.py with the real sacreBLEU on PYTHONPATH) for the
 * BLEU cases in tests/data/bleu and tfm's own metric cases: for each run
 * every segment's statistics must be equal, the corpus statistics equal,
 * the scores equal to 1e-9 and the printed line identical. */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "text/chrf.h"
#include "text/ter.h"
#include "base/text.h"

typedef struct {
    size_t n;
    char **line;
    size_t *len;
} Lines;

static void lines_free(Lines *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->line[i]);
    free(l->line);
    free(l->len);
    memset(l, 0, sizeof *l);
}

/* Reads a case file as tfm bleu does; path is relative to the repository
 * ("tests/data/..."), resolved against test_data_dir(). */
static bool read_lines(const char *rel, Lines *out)
{
    char path[4096];
    const char *prefix = "tests/data/";
    if (strncmp(rel, prefix, strlen(prefix)) == 0) rel += strlen(prefix);
    snprintf(path, sizeof path, "%s/%s", test_data_dir(), rel);
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    LineReader r;
    TfmErr err = {0};
    text_reader_from_file(&r, f, path);
    r.check_utf8 = false;
    char *line;
    size_t len;
    int got;
    while ((got = text_read_line(&r, &line, &len, &err)) == 1) {
        out->line = realloc(out->line, (out->n + 1) * sizeof *out->line);
        out->len = realloc(out->len, (out->n + 1) * sizeof *out->len);
        out->line[out->n] = malloc(len + 1);
        memcpy(out->line[out->n], line, len + 1);
        out->len[out->n++] = len;
    }
    text_reader_close(&r);
    fclose(f);
    return got == 0;
}

static bool has_opt(const cJSON *opts, const char *name, const char **value)
{
    int n = cJSON_GetArraySize(opts);
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(opts, i);
        if (cJSON_IsString(o) && strcmp(o->valuestring, name) == 0) {
            if (value) {
                const cJSON *v = cJSON_GetArrayItem(opts, i + 1);
                *value = cJSON_IsString(v) ? v->valuestring : "";
            }
            return true;
        }
    }
    return false;
}

/* Compares one run; returns the number of failures. */
static int check_run(const char *cname, const char *rname, const cJSON *run, const Lines *hyp,
                     const Lines *refs, size_t n_refs)
{
    int fails = 0;
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(run, "tfm_options");
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(run, "segments");
    const cJSON *sent = cJSON_GetObjectItemCaseSensitive(run, "sentence_scores");
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(run, "stats");
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(run, "line");
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(run, "score");
    const bool is_ter = has_opt(opts, "ter", NULL);
    const char *v;
    ChrfOptions co;
    TerOptions to;
    chrf_options_default(&co);
    ter_options_default(&to);
    if (has_opt(opts, "--chrf-word-order", &v)) co.word_order = atoi(v);
    if (has_opt(opts, "--chrf-char-order", &v)) co.char_order = atoi(v);
    if (has_opt(opts, "--chrf-beta", &v)) co.beta = atoi(v);
    co.lowercase = has_opt(opts, "--chrf-lowercase", NULL);
    co.whitespace = has_opt(opts, "--chrf-whitespace", NULL);
    co.eps_smoothing = has_opt(opts, "--chrf-eps-smoothing", NULL);
    to.case_sensitive = has_opt(opts, "--ter-case-sensitive", NULL);
    to.no_punct = has_opt(opts, "--ter-no-punct", NULL);
    to.normalized = has_opt(opts, "--ter-normalized", NULL);
    to.asian_support = has_opt(opts, "--ter-asian-support", NULL);

    ChrfScorer *cs = NULL;
    TerScorer *ts = NULL;
    TfmErr err = {0};
    if ((is_ter ? ter_scorer_new(&to, &ts, &err) : chrf_scorer_new(&co, &cs, &err)) != TFM_OK) {
        test_fail(__FILE__, __LINE__, "%s/%s: cannot create scorer: %s", cname, rname, err.msg);
        return 1;
    }
    if ((size_t)cJSON_GetArraySize(segs) != hyp->n) {
        test_fail(__FILE__, __LINE__, "%s/%s: %d segments expected, %zu lines", cname, rname,
                  cJSON_GetArraySize(segs), hyp->n);
        fails++;
        goto done;
    }
    const int n_stats = is_ter ? 2 : 3 * (co.char_order + co.word_order);
    ChrfStats ctot = {0};
    TerStats ttot = {0};
    const char **rl = malloc(n_refs * sizeof *rl);
    size_t *rlen = malloc(n_refs * sizeof *rlen);
    for (size_t i = 0; i < hyp->n && fails < 5; i++) {
        for (size_t r = 0; r < n_refs; r++) {
            rl[r] = refs[r].line[i];
            rlen[r] = refs[r].len[i];
        }
        const cJSON *es = cJSON_GetArrayItem(segs, (int)i);
        double got[3 * CHRF_MAX_ORDERS], sc;
        if (is_ter) {
            TerStats st;
            if (ter_segment_stats(ts, hyp->line[i], hyp->len[i], rl, rlen, n_refs, &st, &err)) {
                test_fail(__FILE__, __LINE__, "%s/%s line %zu: %s", cname, rname, i + 1, err.msg);
                fails++;
                continue;
            }
            got[0] = (double)st.edits;
            got[1] = st.ref_len;
            sc = ter_compute(&st);
            ter_stats_add(&ttot, &st);
        } else {
            ChrfStats st;
            if (chrf_segment_stats(cs, hyp->line[i], hyp->len[i], rl, rlen, n_refs, &st, &err)) {
                test_fail(__FILE__, __LINE__, "%s/%s line %zu: %s", cname, rname, i + 1, err.msg);
                fails++;
                continue;
            }
            for (int k = 0; k < n_stats; k++) got[k] = (double)st.v[k];
            sc = chrf_compute(&st, &co);
            chrf_stats_add(&ctot, &st);
        }
        bool same = cJSON_GetArraySize(es) == n_stats;
        for (int k = 0; same && k < n_stats; k++) same = cJSON_GetArrayItem(es, k)->valuedouble == got[k];
        const double want = cJSON_GetArrayItem(sent, (int)i)->valuedouble;
        if (!same || !(fabs(sc - want) <= 1e-9)) {
            char *e = cJSON_PrintUnformatted(es);
            test_fail(__FILE__, __LINE__, "%s/%s line %zu: stats %s / sentence score %.12g, "
                      "got [%g, %g, %g ...] / %.12g", cname, rname, i + 1, e, want, got[0],
                      got[1], n_stats > 2 ? got[2] : 0.0, sc);
            free(e);
            fails++;
        }
    }
    free(rl);
    free(rlen);
    if (fails) goto done;
    /* corpus: statistics, score, printed line */
    double total[3 * CHRF_MAX_ORDERS], sc;
    char printed[128], name[64];
    if (is_ter) {
        total[0] = (double)ttot.edits;
        total[1] = ttot.ref_len;
        sc = ter_compute(&ttot);
        snprintf(printed, sizeof printed, "TER = %.2f", sc);
    } else {
        for (int k = 0; k < n_stats; k++) total[k] = (double)ctot.v[k];
        sc = chrf_compute(&ctot, &co);
        chrf_name(&co, name, sizeof name);
        snprintf(printed, sizeof printed, "%s = %.2f", name, sc);
    }
    if (hyp->n == 0) goto done;
    for (int k = 0; k < n_stats; k++)
        if (cJSON_GetArrayItem(stats, k)->valuedouble != total[k]) {
            test_fail(__FILE__, __LINE__, "%s/%s: corpus stat %d = %.17g, expected %.17g", cname,
                      rname, k, total[k], cJSON_GetArrayItem(stats, k)->valuedouble);
            fails++;
        }
    if (!(fabs(sc - score->valuedouble) <= 1e-9) || strcmp(printed, line->valuestring) != 0) {
        test_fail(__FILE__, __LINE__, "%s/%s: '%s' (%.15g), sacreBLEU '%s' (%.15g)", cname, rname,
                  printed, sc, line->valuestring, score->valuedouble);
        fails++;
    }
done:
    chrf_scorer_free(cs);
    ter_scorer_free(ts);
    return fails;
}

static int is_json(const char *dir, const char *name)
{
    (void)dir;
    size_t len = strlen(name);
    return len > 5 && strcmp(name + len - 5, ".json") == 0;
}

TEST(test_metrics_match_sacrebleu)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/metrics", test_data_dir());
    char **names;
    int n_names = test_list_dir(dir, is_json, &names);
    CHECK(n_names > 0);
    int runs = 0, cases = 0;
    for (int c = 0; c < n_names; c++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[c]);
        char *text = test_read_file(path);
        cJSON *j = text ? cJSON_Parse(text) : NULL;
        free(text);
        CHECK(j != NULL);
        const cJSON *refs_j = cJSON_GetObjectItemCaseSensitive(j, "refs");
        size_t n_refs = (size_t)cJSON_GetArraySize(refs_j);
        Lines hyp, refs[8];
        bool ok = n_refs >= 1 && n_refs <= 8 &&
                  read_lines(cJSON_GetObjectItemCaseSensitive(j, "hyp")->valuestring, &hyp);
        for (size_t r = 0; ok && r < n_refs; r++) {
            ok = read_lines(cJSON_GetArrayItem(refs_j, (int)r)->valuestring, &refs[r]) &&
                 refs[r].n == hyp.n;
            if (!ok) while (r-- > 0) lines_free(&refs[r]);
        }
        if (!ok) test_fail(__FILE__, __LINE__, "%s: cannot read its files", names[c]);
        cases++;
        const cJSON *run;
        cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(j, "runs")) {
            check_run(names[c], run->string, run, &hyp, refs, n_refs);
            runs++;
        }
        lines_free(&hyp);
        for (size_t r = 0; r < n_refs; r++) lines_free(&refs[r]);
        cJSON_Delete(j);
    }
    for (int c = 0; c < n_names; c++) free(names[c]);
    free(names);
    /* a lost fixture must not pass silently */
    CHECK(cases >= 20);
    CHECK(runs >= 180);
}

/* Hand-checked edge cases, independent of the fixtures. */
TEST(test_chrf_edges)
{
    ChrfOptions o;
    chrf_options_default(&o);
    ChrfScorer *s;
    TfmErr err = {0};
    CHECK(chrf_scorer_new(&o, &s, &err) == TFM_OK);
    const char *ref[] = {"the cat"};
    size_t rlen[] = {7};
    ChrfStats st;
    /* identical up to whitespace: every order matches in full */
    CHECK(chrf_segment_stats(s, " the  cat ", 10, ref, rlen, 1, &st, &err) == TFM_OK);
    CHECK_NEAR(chrf_compute(&st, &o), 100.0, 1e-12);
    CHECK_EQ_INT(st.v[0], 6);       /* "thecat": 6 unigrams */
    CHECK_EQ_INT(st.v[15], 1);      /* one 6-gram */
    /* empty hypothesis: no hypothesis n-grams, score 0 */
    CHECK(chrf_segment_stats(s, "", 0, ref, rlen, 1, &st, &err) == TFM_OK);
    CHECK_NEAR(chrf_compute(&st, &o), 0.0, 0);
    CHECK(chrf_segment_stats(s, "x", 1, ref, rlen, 0, &st, &err) == TFM_ERR_USAGE);
    char name[16], sig[256];
    o.word_order = 2;
    chrf_name(&o, name, sizeof name);
    CHECK_STR(name, "chrF2++");
    chrf_signature(&o, 1, sig, sizeof sig);
    static const char want[] = "nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:tfm-";
    CHECK(strncmp(sig, want, sizeof want - 1) == 0);
    chrf_scorer_free(s);
}

TEST(test_ter_edges)
{
    TerOptions o;
    ter_options_default(&o);
    TerScorer *s;
    TfmErr err = {0};
    CHECK(ter_scorer_new(&o, &s, &err) == TFM_OK);
    long long e;
    /* a block of two words moved: one shift, no other edit */
    const uint32_t ref[] = {1, 2, 3, 4, 5, 6}, hyp[] = {4, 5, 1, 2, 3, 6};
    CHECK(ter_edits(s, hyp, 6, ref, 6, &e, &err) == TFM_OK);
    CHECK_EQ_INT(e, 1);
    CHECK(ter_edits(s, hyp, 0, ref, 6, &e, &err) == TFM_OK);
    CHECK_EQ_INT(e, 6);             /* empty hypothesis: insert everything */
    CHECK(ter_edits(s, hyp, 6, ref, 0, &e, &err) == TFM_OK);
    CHECK_EQ_INT(e, 6);             /* empty reference: sacreBLEU counts the words */
    TerStats st;
    const char *refs[] = {"The Cat sat", "a dog"};
    size_t rl[] = {11, 5};
    CHECK(ter_segment_stats(s, "the cat sat ", 12, refs, rl, 2, &st, &err) == TFM_OK);
    CHECK_EQ_INT(st.edits, 0);      /* lowercased by default */
    CHECK_NEAR(st.ref_len, 2.5, 0);
    CHECK_NEAR(ter_compute(&st), 0.0, 0);
    st = (TerStats){3, 0.0};
    CHECK_NEAR(ter_compute(&st), 100.0, 0);     /* empty refs, non-empty hypothesis */
    char sig[256];
    ter_signature(&o, 2, sig, sizeof sig);
    static const char want[] = "nrefs:2|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:tfm-";
    CHECK(strncmp(sig, want, sizeof want - 1) == 0);
    ter_scorer_free(s);
}
