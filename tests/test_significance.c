/* test_significance: numpy's default_rng stream (base/numpy_rng) and
 * sacreBLEU's significance tests (text/significance) against numpy 1.24 and
 * sacreBLEU 2.6.0 themselves: tests/data/significance/expected.json is
 * written by scripts/gen_significance_cases.py from the case's files (300
 * lines of Multi30k val, three en-de models' outputs). The stream must be
 * equal bit for bit and the p-values equal (they count resamples); scores
 * to 1e-9; the bootstrap means and intervals to 1e-5 (sacreBLEU computes
 * chrF and TER from float32 sums in float32). */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "base/numpy_rng.h"
#include "base/text.h"
#include "text/significance.h"

static cJSON *expected(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/significance/expected.json", test_data_dir());
    char *text = test_read_file(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) test_fail(__FILE__, __LINE__, "cannot read %s", path);
    return j;
}

static const cJSON *at(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

TEST(test_numpy_rng_raw_outputs_are_numpys)
{
    cJSON *j = expected();
    if (!j) return;
    const cJSON *raw = at(at(j, "stream"), "raw"), *seed;
    CHECK(cJSON_GetArraySize(raw) == 3);
    cJSON_ArrayForEach(seed, raw) {
        NpRng r;
        np_rng_seed(&r, strtoull(seed->string, NULL, 10));
        const cJSON *v;
        cJSON_ArrayForEach(v, seed) CHECK_EQ_INT(np_rng_next64(&r) == strtoull(v->valuestring, NULL, 10), 1);
    }
    cJSON_Delete(j);
}

TEST(test_numpy_rng_choice_and_bool_are_numpys)
{
    cJSON *j = expected();
    if (!j) return;
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, at(at(j, "stream"), "choice")) {
        NpRng r;
        np_rng_seed(&r, (uint64_t)at(c, "seed")->valuedouble);
        const uint32_t n = (uint32_t)at(c, "n")->valueint;
        const cJSON *v;
        int bad = 0;
        cJSON_ArrayForEach(v, at(c, "values")) bad += np_rng_below(&r, n) != (uint32_t)v->valueint;
        CHECK_EQ_INT(bad, 0);
        cases++;
    }
    CHECK_EQ_INT(cases, 4);
    cJSON_ArrayForEach(c, at(at(j, "stream"), "bool")) {
        NpRng r;
        np_rng_seed(&r, (uint64_t)at(c, "seed")->valuedouble);
        const cJSON *v;
        int bad = 0, n = 0;
        cJSON_ArrayForEach(v, at(c, "values")) {
            bad += np_rng_bool(&r) != (v->valueint != 0);
            n++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(n > 64);      /* more than two 32-bit words */
    }
    cJSON_Delete(j);
}

/* One system's rows of the three metrics, from the case's files. */
typedef struct {
    double *rows[3];
    size_t n;
} CaseRows;

static bool read_lines(const char *name, char ***lines, size_t **lens, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/significance/%s", test_data_dir(), name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    LineReader r;
    TfmErr err = {0};
    text_reader_from_file(&r, f, path);
    char *line;
    size_t len;
    *n = 0;
    *lines = NULL;
    *lens = NULL;
    while (text_read_line(&r, &line, &len, &err) == 1) {
        *lines = realloc(*lines, (*n + 1) * sizeof **lines);
        *lens = realloc(*lens, (*n + 1) * sizeof **lens);
        (*lines)[*n] = strndup(line, len);
        (*lens)[(*n)++] = len;
    }
    text_reader_close(&r);
    fclose(f);
    return *n > 0;
}

static void free_lines(char **lines, size_t *lens, size_t n)
{
    for (size_t i = 0; i < n; i++) free(lines[i]);
    free(lines);
    free(lens);
}

static const BleuOptions *bleu_opt(void)
{
    static BleuOptions o;
    bleu_options_default(&o);
    return &o;
}

static const ChrfOptions *chrf_opt(void)
{
    static ChrfOptions o;
    chrf_options_default(&o);
    return &o;
}

static bool case_rows(const char *name, CaseRows *out)
{
    char **hyp, **ref;
    size_t *hl, *rl, n, nr;
    memset(out, 0, sizeof *out);
    if (!read_lines(name, &hyp, &hl, &n) || !read_lines("ref.txt", &ref, &rl, &nr) || n != nr)
        return false;
    BleuScorer *bs;
    ChrfScorer *cs;
    TerScorer *ts;
    TerOptions to;
    ter_options_default(&to);
    TfmErr err = {0};
    bool ok = !bleu_scorer_new(bleu_opt(), &bs, &err) && !chrf_scorer_new(chrf_opt(), &cs, &err) &&
              !ter_scorer_new(&to, &ts, &err);
    const int kc = sig_chrf_k(chrf_opt());
    for (int m = 0; m < 3; m++) out->rows[m] = calloc(n * (size_t)(m == 1 ? kc : SIG_BLEU_K), sizeof(double));
    for (size_t i = 0; ok && i < n; i++) {
        const char *r1[1] = {ref[i]};
        BleuStats b;
        ChrfStats c;
        TerStats t;
        ok = !bleu_segment_stats(bs, hyp[i], hl[i], r1, &rl[i], 1, &b, &err) &&
             !chrf_segment_stats(cs, hyp[i], hl[i], r1, &rl[i], 1, &c, &err) &&
             !ter_segment_stats(ts, hyp[i], hl[i], r1, &rl[i], 1, &t, &err);
        sig_bleu_row(&b, out->rows[0] + i * SIG_BLEU_K);
        sig_chrf_row(&c, chrf_opt(), out->rows[1] + i * (size_t)kc);
        sig_ter_row(&t, out->rows[2] + i * SIG_TER_K);
    }
    out->n = n;
    bleu_scorer_free(bs);
    chrf_scorer_free(cs);
    ter_scorer_free(ts);
    free_lines(hyp, hl, n);
    free_lines(ref, rl, nr);
    return ok;
}

static void case_rows_free(CaseRows *c)
{
    for (int m = 0; m < 3; m++) free(c->rows[m]);
}

static const char *const METRIC[3] = {"BLEU", "chrF2", "TER"};

static SigSystem system_of(const CaseRows *c, int m)
{
    static const SigScoreFn fn[3] = {sig_bleu_score, sig_chrf_score, sig_ter_score};
    const void *ctx[3] = {bleu_opt(), chrf_opt(), NULL};
    const int k = m == 0 ? SIG_BLEU_K : m == 1 ? sig_chrf_k(chrf_opt()) : SIG_TER_K;
    return (SigSystem){c->rows[m], c->n, k, fn[m], ctx[m]};
}

static void check_result(const char *what, const SigResult *got, const cJSON *want)
{
    CHECK_NEAR(got->score, at(want, "score")->valuedouble, 1e-9);
    const cJSON *mean = at(want, "mean"), *p = at(want, "p_value");
    CHECK_EQ_INT(got->has_ci, cJSON_IsNumber(mean));
    if (got->has_ci && cJSON_IsNumber(mean)) {
        CHECK_NEAR(got->mean, mean->valuedouble, 1e-5);
        CHECK_NEAR(got->ci, at(want, "ci")->valuedouble, 1e-5);
    }
    CHECK_EQ_INT(got->has_p, cJSON_IsNumber(p));
    if (got->has_p && cJSON_IsNumber(p)) CHECK_NEAR(got->p, p->valuedouble, 1e-12);
    (void)what;
}

TEST(test_bootstrap_confidence_is_sacrebleus)
{
    cJSON *j = expected();
    if (!j) return;
    const char *runs[2] = {"confidence", "confidence_200"};
    int checked = 0;
    for (int r = 0; r < 2; r++) {
        const cJSON *run = at(j, runs[r]), *sys;
        const int n = at(run, "n")->valueint;
        cJSON_ArrayForEach(sys, at(run, "systems")) {
            CaseRows c;
            CHECK(case_rows(sys->string, &c));
            for (int m = 0; m < 3; m++) {
                const SigSystem s = system_of(&c, m);
                SigResult got;
                TfmErr err = {0};
                CHECK(sig_bootstrap(&s, n, 12345, &got, &err) == TFM_OK);
                check_result(METRIC[m], &got, at(sys, METRIC[m]));
                checked++;
            }
            case_rows_free(&c);
        }
    }
    CHECK_EQ_INT(checked, 12);
    cJSON_Delete(j);
}

TEST(test_paired_tests_are_sacrebleus)
{
    cJSON *j = expected();
    if (!j) return;
    const char *runs[2] = {"paired_bs", "paired_ar"};
    CaseRows base;
    CHECK(case_rows("base.txt", &base));
    int checked = 0;
    for (int r = 0; r < 2; r++) {
        const cJSON *run = at(j, runs[r]), *row;
        const int n = at(run, "n")->valueint;
        cJSON_ArrayForEach(row, at(run, "rows")) {
            const char *name = at(row, "system")->valuestring;
            const bool is_base = strncmp(name, "Baseline: ", 10) == 0;
            CaseRows c;
            CHECK(case_rows(is_base ? name + 10 : name, &c));
            for (int m = 0; m < 3; m++) {
                const SigSystem b = system_of(&base, m), s = system_of(&c, m);
                SigResult got = {0};
                TfmErr err = {0};
                if (is_base && r == 0) CHECK(sig_bootstrap(&b, n, 12345, &got, &err) == TFM_OK);
                else if (is_base) got.score = at(at(row, METRIC[m]), "score")->valuedouble;
                else if (r == 0) CHECK(sig_paired_bs(&b, &s, n, 12345, &got, &err) == TFM_OK);
                else CHECK(sig_paired_ar(&b, &s, n, 12345, &got, &err) == TFM_OK);
                check_result(METRIC[m], &got, at(row, METRIC[m]));
                checked++;
            }
            case_rows_free(&c);
        }
    }
    CHECK_EQ_INT(checked, 18);
    case_rows_free(&base);
    cJSON_Delete(j);
}

/* A system against itself: no difference, so no resample can exceed it. */
TEST(test_paired_test_of_a_system_with_itself)
{
    CaseRows c;
    CHECK(case_rows("ema.txt", &c));
    const SigSystem s = system_of(&c, 0);
    SigResult bs, ar;
    TfmErr err = {0};
    CHECK(sig_paired_bs(&s, &s, 300, 12345, &bs, &err) == TFM_OK);
    CHECK(sig_paired_ar(&s, &s, 300, 12345, &ar, &err) == TFM_OK);
    /* bs: the centred differences are all 0, none > 0; ar: every trial ties */
    CHECK_NEAR(bs.p, 1.0 / 301, 1e-15);
    CHECK_NEAR(ar.p, 1.0 / 301, 1e-15);
    case_rows_free(&c);
}

TEST(test_seed_from_environment)
{
    uint64_t seed;
    bool fixed;
    TfmErr err = {0};
    unsetenv("SACREBLEU_SEED");
    CHECK(sig_seed_from_env(&seed, &fixed, &err) == TFM_OK && seed == 12345 && fixed);
    setenv("SACREBLEU_SEED", "18446744073709551615", 1);
    CHECK(sig_seed_from_env(&seed, &fixed, &err) == TFM_OK && seed == UINT64_MAX && fixed);
    setenv("SACREBLEU_SEED", "None", 1);
    CHECK(sig_seed_from_env(&seed, &fixed, &err) == TFM_OK && !fixed);
    /* as Python's int(): whitespace, '+' and digit-separating '_' */
    const char *good[] = {" 7 ", "+7", "0_0_7", "\t7\n", "007"};
    for (int i = 0; i < 5; i++) {
        setenv("SACREBLEU_SEED", good[i], 1);
        CHECK(sig_seed_from_env(&seed, &fixed, &err) == TFM_OK && seed == 7 && fixed);
    }
    const char *bad[] = {"-1", "", "12x", "18446744073709551616", " -3", "\t-1", "1__0", "_1",
                         "1_", "+", "none "};
    for (int i = 0; i < 11; i++) {
        setenv("SACREBLEU_SEED", bad[i], 1);
        err = (TfmErr){0};
        CHECK(sig_seed_from_env(&seed, &fixed, &err) == TFM_ERR_USAGE);
        CHECK(strstr(err.msg, "SACREBLEU_SEED") != NULL);
    }
    unsetenv("SACREBLEU_SEED");
}
