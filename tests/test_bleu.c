/* test_bleu: tfm's BLEU against sacreBLEU. tests/data/bleu/val_* were scored
 * by sacreBLEU 2.6.0 itself (copied from ../shared/bleu-cases); own_* and
 * tokenize.json by scripts/bleu_oracle.py, a Python re-implementation that
 * reproduces every val_* run (`bleu_oracle.py --check`). */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "text/bleu.h"
#include "base/text.h"
#include "text/unicode.h"

static cJSON *load_json(const char *path)
{
    char *text = test_read_file(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void run_options(const cJSON *opts, BleuOptions *opt, bool *sentence)
{
    bleu_options_default(opt);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, "lowercase");
    opt->lowercase = cJSON_IsTrue(v);
    v = cJSON_GetObjectItemCaseSensitive(opts, "tokenize");
    if (cJSON_IsString(v)) CHECK(bleu_parse_tokenizer(v->valuestring, &opt->tokenize));
    v = cJSON_GetObjectItemCaseSensitive(opts, "smooth");
    if (cJSON_IsString(v)) CHECK(bleu_parse_smooth(v->valuestring, &opt->smooth));
    v = cJSON_GetObjectItemCaseSensitive(opts, "smooth_value");
    if (cJSON_IsNumber(v)) opt->smooth_value = v->valuedouble;
    *sentence = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "sentence_level"));
    opt->effective_order = *sentence;
}

/* Compares one score with an expected.json object; `where` names it on failure. */
static int check_score(const BleuScore *sc, const cJSON *e, const char *where)
{
    int bad = 0;
    /* The same IEEE operations in the same order as sacreBLEU: expect equality
     * to rounding noise, far inside the 0.01 BLEU the spec asks for. */
    if (!(fabs(sc->score - num(e, "score")) <= 1e-6)) bad = 1;
    if (!(fabs(sc->bp - num(e, "bp")) <= 1e-9)) bad = 1;
    if (sc->sys_len != (long long)num(e, "sys_len") || sc->ref_len != (long long)num(e, "ref_len"))
        bad = 1;
    static const char *const arrays[] = {"precisions", "counts", "totals"};
    for (int a = 0; a < 3; a++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, arrays[a]);
        const double *got = a == 0 ? sc->precisions : a == 1 ? sc->counts : sc->totals;
        if (cJSON_GetArraySize(arr) != BLEU_MAX_ORDER) { bad = 1; continue; }
        for (int k = 0; k < BLEU_MAX_ORDER; k++) {
            double want = cJSON_GetArrayItem(arr, k)->valuedouble;
            double tol = a == 0 ? 1e-9 * (1 + fabs(want)) : 0;
            if (!(fabs(got[k] - want) <= tol)) bad = 1;
        }
    }
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(e, "sacrebleu_text");
    if (cJSON_IsString(text)) {
        char line[512];
        bleu_format(sc, 2, line, sizeof line);
        const char *want = strstr(text->valuestring, " = ");
        if (!want || strcmp(strstr(line, " = "), want) != 0) bad = 1;
    }
    if (bad) {
        char line[512];
        bleu_format(sc, 2, line, sizeof line);
        test_fail(__FILE__, __LINE__, "%s: got %s, counts %g/%g/%g/%g totals %g/%g/%g/%g; expected score %.6f",
                  where, line, sc->counts[0], sc->counts[1], sc->counts[2], sc->counts[3],
                  sc->totals[0], sc->totals[1], sc->totals[2], sc->totals[3], num(e, "score"));
    }
    return !bad;
}

/* Scores every run of one case directory; returns the number of runs matched. */
/* A case file's lines, read as tfm bleu reads them (text.c's reader with
 * the UTF-8 check off). */
typedef struct {
    size_t n_lines;
    char **line;
    size_t *len;
} Lines;

static void lines_free(Lines *l)
{
    for (size_t i = 0; i < l->n_lines; i++) free(l->line[i]);
    free(l->line);
    free(l->len);
    memset(l, 0, sizeof *l);
}

static TfmStatus read_lines(const char *path, Lines *out, TfmErr *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(err, TFM_ERR_IO, "%s: cannot open", path);
    LineReader r;
    text_reader_from_file(&r, f, path);
    r.check_utf8 = false;
    char *line;
    size_t len;
    int got;
    while ((got = text_read_line(&r, &line, &len, err)) == 1) {
        out->line = realloc(out->line, (out->n_lines + 1) * sizeof *out->line);
        out->len = realloc(out->len, (out->n_lines + 1) * sizeof *out->len);
        out->line[out->n_lines] = malloc(len + 1);
        memcpy(out->line[out->n_lines], line, len + 1);
        out->len[out->n_lines++] = len;
    }
    text_reader_close(&r);
    fclose(f);
    if (got < 0) lines_free(out);
    return got < 0 ? err->status : TFM_OK;
}

static int check_case(const char *dir, const char *name, int *runs_total)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s/expected.json", dir, name) >= (int)sizeof path) return 0;
    cJSON *exp = load_json(path);
    if (!exp) test_fail(__FILE__, __LINE__, "cannot load %s", path);
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(exp, "refs");
    int n_refs = cJSON_GetArraySize(refs);
    Lines files[8] = {{0}};
    TfmErr err = {0};
    int matched = 0;
    CHECK(n_refs >= 1 && n_refs < 8);
    if (n_refs < 1 || n_refs >= 8) goto done;
    if (snprintf(path, sizeof path, "%s/%s/%s", dir, name,
                 cJSON_GetObjectItemCaseSensitive(exp, "hyp")->valuestring) >= (int)sizeof path)
        goto done;
    CHECK_EQ_INT(read_lines(path, &files[0], &err), TFM_OK);
    for (int r = 0; r < n_refs; r++) {
        if (snprintf(path, sizeof path, "%s/%s/%s", dir, name,
                     cJSON_GetArrayItem(refs, r)->valuestring) >= (int)sizeof path)
            goto done;
        CHECK_EQ_INT(read_lines(path, &files[r + 1], &err), TFM_OK);
        CHECK_EQ_INT(files[r + 1].n_lines, files[0].n_lines);
        if (files[r + 1].n_lines != files[0].n_lines) goto done;
    }
    const cJSON *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(exp, "runs")) {
        BleuOptions opt;
        bool sentence;
        run_options(cJSON_GetObjectItemCaseSensitive(run, "options"), &opt, &sentence);
        BleuScorer *s = NULL;
        CHECK_EQ_INT(bleu_scorer_new(&opt, &s, &err), TFM_OK);
        const cJSON *sents = cJSON_GetObjectItemCaseSensitive(run, "sentences");
        if (sentence) CHECK_EQ_INT(cJSON_GetArraySize(sents), files[0].n_lines);
        BleuStats total = {0}, st;
        BleuScore sc;
        int ok = 1;
        for (size_t i = 0; i < files[0].n_lines; i++) {
            const char *seg[8];
            size_t len[8];
            for (int r = 0; r < n_refs; r++) {
                seg[r] = files[r + 1].line[i];
                len[r] = files[r + 1].len[i];
            }
            CHECK_EQ_INT(bleu_segment_stats(s, files[0].line[i], files[0].len[i], seg, len,
                                            (size_t)n_refs, &st, &err), TFM_OK);
            bleu_stats_add(&total, &st);
            if (sentence && (int)i < cJSON_GetArraySize(sents)) {
                char where[256];
                snprintf(where, sizeof where, "%s/%s line %zu", name, run->string, i + 1);
                bleu_compute(&st, &opt, &sc);
                ok &= check_score(&sc, cJSON_GetArrayItem(sents, (int)i), where);
            }
        }
        if (!sentence) {
            char where[256];
            snprintf(where, sizeof where, "%s/%s", name, run->string);
            bleu_compute(&total, &opt, &sc);
            ok &= check_score(&sc, run, where);
        }
        bleu_scorer_free(s);
        matched += ok;
        (*runs_total)++;
    }
done:
    for (int r = 0; r < 8; r++) lines_free(&files[r]);
    cJSON_Delete(exp);
    return matched;
}

/* A case is a folder with an expected.json. */
static int is_case(const char *dir, const char *name)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s/expected.json", dir, name);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

TEST(bleu_matches_sacrebleu_cases)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bleu", test_data_dir());
    char **names;
    int n = test_list_dir(dir, is_case, &names);
    CHECK(n > 0);
    int shared = 0, runs = 0, matched = 0;
    for (int i = 0; i < n; i++) {
        shared += strncmp(names[i], "val_", 4) == 0;
        matched += check_case(dir, names[i], &runs);
        free(names[i]);
    }
    free(names);
    /* All five sacreBLEU-scored cases and our own edge cases must be there. */
    CHECK_EQ_INT(shared, 5);
    CHECK(n >= 17);
    CHECK(runs >= 5 * 6 + 12 * 14);
    CHECK_EQ_INT(matched, runs);
    printf("  bleu: %d of %d runs in %d cases match\n", matched, runs, n);
}

TEST(bleu_tokenizers_match_python)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/bleu/tokenize.json", test_data_dir());
    cJSON *j = load_json(path);
    CHECK(j != NULL);
    static const char *const keys[] = {"13a", "13a_lc", "intl", "intl_lc", "char", "char_lc",
                                       "none", "none_lc", "zh", "zh_lc"};
    enum { K = sizeof keys / sizeof *keys };
    BleuScorer *s[K];
    TfmErr err = {0};
    for (int k = 0; k < K; k++) {
        BleuOptions opt;
        bleu_options_default(&opt);
        char name[8];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(keys[k], "_"), keys[k]);
        CHECK(bleu_parse_tokenizer(name, &opt.tokenize));
        opt.lowercase = k % 2;
        CHECK_EQ_INT(bleu_scorer_new(&opt, &s[k], &err), TFM_OK);
    }
    int checked = 0, failures = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "cases")) {
        const char *in = cJSON_GetObjectItemCaseSensitive(c, "input")->valuestring;
        for (int k = 0; k < K; k++) {
            const char *want = cJSON_GetObjectItemCaseSensitive(c, keys[k])->valuestring;
            const char *got = NULL;
            size_t got_len = 0;
            CHECK_EQ_INT(bleu_tokenize(s[k], in, strlen(in), &got, &got_len, &err), TFM_OK);
            checked++;
            if (got && strcmp(got, want) != 0 && failures++ < 5)
                test_fail(__FILE__, __LINE__, "%s of \"%s\": \"%s\", expected \"%s\"", keys[k], in, got, want);
        }
    }
    CHECK(checked >= 780 * K);
    CHECK_EQ_INT(failures, 0);
    for (int k = 0; k < K; k++) bleu_scorer_free(s[k]);
    cJSON_Delete(j);
}

/* Corpus BLEU of in-memory lines with one reference. */
static BleuScore corpus1(const BleuOptions *opt, const char *const *hyp, const char *const *ref, size_t n)
{
    BleuScore sc;
    TfmErr err = {0};
    const char *const *refs[1] = {ref};
    memset(&sc, 0xff, sizeof sc);
    CHECK_EQ_INT(bleu_corpus(opt, hyp, n, refs, 1, &sc, &err), TFM_OK);
    return sc;
}

/* Found by tests/fuzz/fuzz_metrics (UBSan: an offset on a NULL pointer):
 * a fresh scorer whose first segment has no tokens at all, the hypothesis
 * only whitespace and the reference empty. */
TEST(bleu_first_segment_without_tokens)
{
    BleuOptions o;
    bleu_options_default(&o);
    BleuScorer *s = NULL;
    TfmErr err;
    CHECK(bleu_scorer_new(&o, &s, &err) == TFM_OK);
    const char *ref[1] = {""};
    const size_t ref_len[1] = {0};
    BleuStats st;
    CHECK(bleu_segment_stats(s, "\f", 1, ref, ref_len, 1, &st, &err) == TFM_OK);
    CHECK_EQ_INT(st.sys_len, 0);
    CHECK_EQ_INT(st.ref_len, 0);
    bleu_scorer_free(s);
}

TEST(bleu_edges_by_hand)
{
    BleuOptions opt;
    bleu_options_default(&opt);
    /* Empty corpus: score 0, no division by zero. */
    BleuScore sc = corpus1(&opt, NULL, NULL, 0);
    CHECK_NEAR(sc.score, 0, 0);
    CHECK_NEAR(sc.bp, 1, 0);
    CHECK_NEAR(sc.ratio, 0, 0);
    char line[512];
    bleu_format(&sc, 2, line, sizeof line);
    CHECK_STR(line, "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)");

    /* Identical 4+ token lines: every precision 100, BP 1. */
    const char *same[] = {"the cat sat on the mat ."};
    sc = corpus1(&opt, same, same, 1);
    CHECK_NEAR(sc.score, 100, 1e-9);

    /* "a b c d e" vs "a b c x e": p = 4/5, 2/4, 1/3 ("a b c"), 0/2 -> exp
     * smoothing 1/(2*2). BLEU = (0.8 * 0.5 * 1/3 * 1/4)^(1/4). */
    const char *h1[] = {"a b c d e"}, *r1[] = {"a b c x e"};
    sc = corpus1(&opt, h1, r1, 1);
    CHECK_NEAR(sc.score, 100 * pow(0.8 * 0.5 / 3 / 4, 0.25), 1e-9);
    opt.smooth = BLEU_SMOOTH_FLOOR;             /* zero counts become 0.1/total */
    sc = corpus1(&opt, h1, r1, 1);
    CHECK_NEAR(sc.score, 100 * pow(0.8 * 0.5 / 3 * (0.1 / 2), 0.25), 1e-9);
    opt.smooth = BLEU_SMOOTH_ADD_K;             /* k=1 added to orders 2..4 */
    sc = corpus1(&opt, h1, r1, 1);
    CHECK_NEAR(sc.score, 100 * pow(0.8 * (3.0 / 5) * (2.0 / 4) * (1.0 / 3), 0.25), 1e-9);
    CHECK_NEAR(sc.counts[1], 3, 0);
    opt.smooth = BLEU_SMOOTH_NONE;              /* a zero precision gives 0 */
    sc = corpus1(&opt, h1, r1, 1);
    CHECK_NEAR(sc.score, 0, 1e-12);
    bleu_options_default(&opt);

    /* Clipping: "the the the" vs "the cat": 1 of 3 unigrams; 2-grams 0/2. */
    const char *h2[] = {"the the the"}, *r2[] = {"the cat"};
    sc = corpus1(&opt, h2, r2, 1);
    CHECK_NEAR(sc.counts[0], 1, 0);
    CHECK_NEAR(sc.totals[0], 3, 0);
    CHECK_NEAR(sc.counts[1], 0, 0);

    /* Brevity penalty: 2 hyp tokens against 4 ref tokens: exp(1 - 4/2). */
    const char *h3[] = {"a b"}, *r3[] = {"a b c d"};
    sc = corpus1(&opt, h3, r3, 1);
    CHECK_NEAR(sc.bp, exp(-1.0), 1e-15);

    /* Closest reference length, ties to the shorter: hyp 3 tokens, refs 2 and 4. */
    BleuScorer *s = NULL;
    TfmErr err = {0};
    BleuStats st;
    CHECK_EQ_INT(bleu_scorer_new(&opt, &s, &err), TFM_OK);
    const char *refs[] = {"x y z w", "x y"};
    size_t lens[] = {7, 3};
    CHECK_EQ_INT(bleu_segment_stats(s, "x y z", 5, refs, lens, 2, &st, &err), TFM_OK);
    CHECK_EQ_INT(st.ref_len, 2);
    CHECK_EQ_INT(st.counts[2], 1);          /* "x y z" clipped by the max over refs */

    /* Invalid UTF-8 and NUL bytes: tokens of opaque bytes, no crash. */
    const char bad[] = "caf\xc3 \xff\xfe na\xc3\xafve \xed\xa0\x80 x\0y \xf0\x9f";
    CHECK_EQ_INT(bleu_segment_stats(s, bad, sizeof bad - 1, (const char *[]){bad},
                                    (size_t[]){sizeof bad - 1}, 1, &st, &err), TFM_OK);
    CHECK_EQ_INT(st.sys_len, 6);
    CHECK_EQ_INT(st.counts[0], 6);
    bleu_scorer_free(s);
    for (int t = 0; t < 4; t++) {
        opt.tokenize = (BleuTokenizer)t;
        opt.lowercase = t % 2;
        CHECK_EQ_INT(bleu_scorer_new(&opt, &s, &err), TFM_OK);
        CHECK_EQ_INT(bleu_segment_stats(s, bad, sizeof bad - 1, (const char *[]){"x"},
                                        (size_t[]){1}, 1, &st, &err), TFM_OK);
        CHECK(st.sys_len > 0);
        bleu_scorer_free(s);
    }
}

TEST(bleu_signature_and_names)
{
    BleuOptions opt;
    char sig[256];
    bleu_options_default(&opt);
    bleu_signature(&opt, 1, sig, sizeof sig);
    const char *want1 = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-";
    CHECK(strncmp(sig, want1, strlen(want1)) == 0);
    opt.lowercase = true;
    opt.tokenize = BLEU_TOK_INTL;
    opt.smooth = BLEU_SMOOTH_FLOOR;
    opt.effective_order = true;
    bleu_signature(&opt, 4, sig, sizeof sig);
    const char *want4 = "nrefs:4|case:lc|eff:yes|tok:intl|smooth:floor[0.10]|version:";
    CHECK(strncmp(sig, want4, strlen(want4)) == 0);
    opt.smooth = BLEU_SMOOTH_ADD_K;
    opt.smooth_value = 0.5;
    bleu_signature(&opt, 2, sig, sizeof sig);
    CHECK(strstr(sig, "|smooth:add-k[0.50]|") != NULL);
    BleuTokenizer t;
    CHECK(bleu_parse_tokenizer("zh", &t) && t == BLEU_TOK_ZH);
    CHECK(strcmp(bleu_tokenizer_name(BLEU_TOK_ZH), "zh") == 0);
    CHECK(!bleu_parse_tokenizer("ja-mecab", &t));
    CHECK(!bleu_parse_tokenizer("13A", &t));
}

TEST(bleu_lines_like_python)
{
    /* split on "\n" only, a last line without one kept; a "\r" before the
     * "\n" goes (rstrip would remove it anyway), one inside a line stays */
    char path[] = "/tmp/tfm-bleu-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fputs("a\r\n\nb\rc\nlast", f);
    fclose(f);
    Lines l;
    TfmErr err = {0};
    CHECK_EQ_INT(read_lines(path, &l, &err), TFM_OK);
    CHECK_EQ_INT(l.n_lines, 4);
    if (l.n_lines == 4) {
        CHECK_EQ_INT(l.len[0], 1);
        CHECK_EQ_INT(l.len[1], 0);
        CHECK_EQ_INT(l.len[2], 3);
        CHECK_EQ_INT(l.len[3], 4);
    }
    lines_free(&l);
    f = fopen(path, "wb");
    fclose(f);
    CHECK_EQ_INT(read_lines(path, &l, &err), TFM_OK);
    CHECK_EQ_INT(l.n_lines, 0);
    lines_free(&l);
    remove(path);
}

TEST(bleu_lowercase_like_python)
{
    /* Python: "ΟΔΟΣ ΣΟΦΟΣ. Σ ΑΣ'Σ İ ẞ".lower() */
    const char *in = "ΟΔΟΣ ΣΟΦΟΣ. Σ ΑΣ'Σ İ ẞ";
    const char *want = "οδος σοφος. σ ασ'ς i̇ ß";
    unsigned char out[128];
    size_t n = unicode_lower_utf8((const unsigned char *)in, strlen(in), out);
    out[n] = '\0';
    CHECK_STR((const char *)out, want);
    CHECK(unicode_props('.') & UNI_PUNCT);
    CHECK(unicode_props(0x20AC) & UNI_SYMBOL);      /* € */
    CHECK(unicode_props(0x3000) & UNI_SPACE);
    CHECK(!(unicode_props(0x200B) & UNI_SPACE));    /* zero-width space is Cf */
    CHECK(unicode_props(0x0663) & UNI_NUMBER);      /* Arabic-Indic three */
}

/* sacreBLEU's intl tokenizer takes categories from the `regex` package, whose
 * Unicode is newer than Debian's Python's 14.0: these code points were
 * unassigned in 14.0 and are categorised in 15.0, 15.1, 16.0 and 17.0. */
TEST(bleu_intl_knows_newer_unicode)
{
    CHECK(unicode_props(0x1FABF) & UNI_SYMBOL);     /* 15.0 goose */
    CHECK(unicode_props(0x2FFC) & UNI_SYMBOL);      /* 15.1 ideographic description character */
    CHECK(unicode_props(0x1CC00) & UNI_SYMBOL);     /* 16.0 legacy computing supplement */
    CHECK(unicode_props(0x20C1) & UNI_SYMBOL);      /* 17.0 Saudi riyal sign */
    CHECK(unicode_props(0x1B4E) & UNI_PUNCT);       /* 16.0 Balinese punctuation */
    CHECK(unicode_props(0x16FF4) & UNI_NUMBER);     /* 17.0 Yangqin sign */
    CHECK(!(unicode_props(0x11DD0) & (UNI_PUNCT | UNI_SYMBOL | UNI_NUMBER)));
    BleuOptions opt;
    bleu_options_default(&opt);
    bleu_parse_tokenizer("intl", &opt.tokenize);
    BleuScorer *s = NULL;
    TfmErr err = {0};
    CHECK_EQ_INT(bleu_scorer_new(&opt, &s, &err), TFM_OK);
    const char *in = "goose\xF0\x9F\xAA\xBF riyal\xE2\x83\x81";
    const char *got = NULL;
    size_t got_len = 0;
    CHECK_EQ_INT(bleu_tokenize(s, in, strlen(in), &got, &got_len, &err), TFM_OK);
    CHECK_STR(got, "goose \xF0\x9F\xAA\xBF riyal \xE2\x83\x81");
    bleu_scorer_free(s);
}

TEST(bleu_survives_allocation_failures)
{
    /* The long line makes the n-gram table grow past its first size. */
    static char long_line[400 * 8];
    size_t o = 0;
    for (int i = 0; i < 400; i++) o += (size_t)sprintf(long_line + o, "w%d ", i);
    const char *hyp[] = {"A man, a plan: Panama!", "ΟΔΟΣ 😀 1,000.5", long_line};
    const char *ref[] = {"a man a plan a canal panama", "οδος 1,000.5", long_line};
    const char *const *refs[1] = {ref};
    BleuOptions opt;
    bleu_options_default(&opt);
    opt.lowercase = true;
    int failed = 0;
    BleuScore sc;
    for (long k = 0; k < 1000; k++) {
        TfmErr err = {0};
        err_fail_alloc_after(k);
        TfmStatus st = bleu_corpus(&opt, hyp, 3, refs, 1, &sc, &err);
        err_fail_alloc_after(-1);
        if (st == TFM_OK) break;
        CHECK_EQ_INT(st, TFM_ERR_NOMEM);
        failed++;
    }
    CHECK(failed > 3);
    CHECK_NEAR(sc.counts[3], 397, 0);       /* only the long line has matching 4-grams */
}
