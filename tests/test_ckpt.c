/* Tests for ckpt: save -> load -> save gives identical bytes; truncated,
 * bit-flipped, empty and wrong-version files are refused with a clear error. */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include <cJSON.h>

#include "base/fnv.h"
#include "text/bpe.h"
#include "model/ckpt.h"

typedef struct {
    TfmConfig cfg;
    Bpe *bpe;
    Model model;
    Adam adam;
    TrainState ts;
} Fixture;

static int fixture_init(Fixture *f)
{
    memset(f, 0, sizeof *f);
    config_defaults(&f->cfg);
    f->cfg.data.train_src.v = calloc(1, sizeof(char *));
    f->cfg.data.train_tgt.v = calloc(1, sizeof(char *));
    f->cfg.data.train_src.v[0] = strdup("train.de");
    f->cfg.data.train_tgt.v[0] = strdup("train.en");
    f->cfg.data.train_src.n = f->cfg.data.train_tgt.n = 1;
    f->cfg.data.valid_src = strdup("valid.de");
    f->cfg.data.valid_tgt = strdup("valid.en");
    f->cfg.data.max_len = 20;
    ModelConfig *mc = &f->cfg.model;
    mc->d_model = 16;
    mc->heads = 2;
    mc->enc_layers = 1;
    mc->dec_layers = 2;
    mc->d_ff = 24;
    const char *text = test_write_file("ckpt_corpus.txt", "ein kleiner Test\na small test\n");
    const char *paths[1] = {text};
    TfmErr err = {0};
    if (bpe_learn(&f->bpe, paths, 1, 280, &err) != TFM_OK) return 0;
    mc->vocab_size = bpe_vocab_size(f->bpe);
    mc->max_len = f->cfg.data.max_len + 2;
    if (model_init(&f->model, mc, &err) != TFM_OK) return 0;
    Rng rng;
    rng_seed(&rng, 3);
    model_init_weights(&f->model, &rng);
    const AdamConfig ac = config_adam(&f->cfg.train);
    if (adam_init(&f->adam, f->model.n_params, &ac, &err) != TFM_OK) return 0;
    for (size_t i = 0; i < f->adam.n; i++) {
        f->adam.m[i] = (float)i * 1e-3f;
        f->adam.v[i] = (float)i * 1e-6f;
    }
    f->adam.step = 17;
    f->ts.step = 17;
    f->ts.epoch = 2;
    f->ts.batch_in_epoch = 5;
    rng_seed(&f->ts.dropout_rng, 99);
    f->ts.best_metric = 3.25;
    f->ts.has_best = true;
    f->ts.bad_validations = 1;
    f->ts.elapsed_s = 12.5;
    f->ts.validated = true;
    f->ts.log_loss = 40.5;
    f->ts.log_nll = 30.25;
    f->ts.log_step_s = 1.5;
    f->ts.log_tokens = 9;
    f->ts.log_real_tokens = 11;
    f->ts.warmup_end_s = 4.75;
    f->ts.chunk = 2;
    f->ts.init_sum = 0x1234567890abcdefULL;
    return 1;
}

static void fixture_free(Fixture *f)
{
    config_free(&f->cfg);
    bpe_free(f->bpe);
    model_free(&f->model);
    adam_free(&f->adam);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, fp) != (size_t)n) n = 0;
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const char *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp) {
        if (len) fwrite(buf, 1, len, fp);
        fclose(fp);
    }
}

static char path_a[600], path_b[600], path_bad[600];

static void paths_init(void)
{
    snprintf(path_a, sizeof path_a, "%s/a.tfm", test_tmpdir());
    snprintf(path_b, sizeof path_b, "%s/b.tfm", test_tmpdir());
    snprintf(path_bad, sizeof path_bad, "%s/bad.tfm", test_tmpdir());
}

TEST(test_ckpt_round_trip_identical_bytes)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    TfmErr err = {0};
    CHECK(ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, NULL, &f.ts, &err) == TFM_OK);
    ModelFile mf;
    CHECK(ckpt_load(path_a, &mf, true, &err) == TFM_OK);
    CHECK(mf.has_train_state);
    CHECK_EQ_INT(mf.ts.step, 17);
    CHECK_EQ_INT(mf.ts.epoch, 2);
    CHECK_EQ_INT(mf.ts.batch_in_epoch, 5);
    CHECK(memcmp(&mf.ts.dropout_rng, &f.ts.dropout_rng, sizeof(Rng)) == 0);
    CHECK(mf.ts.has_best && mf.ts.validated && mf.ts.bad_validations == 1);
    CHECK(mf.ts.best_metric == 3.25 && mf.ts.elapsed_s == 12.5);
    CHECK(mf.ts.log_loss == 40.5 && mf.ts.log_nll == 30.25 && mf.ts.log_step_s == 1.5);
    CHECK(mf.ts.log_tokens == 9 && mf.ts.log_real_tokens == 11);
    CHECK(mf.ts.warmup_end_s == 4.75);
    CHECK(mf.ts.chunk == 2 && mf.ts.init_sum == 0x1234567890abcdefULL);
    CHECK_EQ_INT(mf.adam.step, 17);
    CHECK(memcmp(mf.model.params, f.model.params, f.model.n_params * sizeof(float)) == 0);
    CHECK(memcmp(mf.adam.v, f.adam.v, f.adam.n * sizeof(float)) == 0);
    CHECK(ckpt_save(path_b, &mf.cfg, mf.bpe, &mf.model, &mf.adam, NULL, &mf.ts, &err) == TFM_OK);
    size_t la, lb;
    char *a = slurp(path_a, &la), *b = slurp(path_b, &lb);
    CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    ckpt_free(&mf);
    /* a model without training state loads without one */
    CHECK(ckpt_save(path_b, &f.cfg, f.bpe, &f.model, NULL, NULL, NULL, &err) == TFM_OK);
    CHECK(ckpt_load(path_b, &mf, true, &err) == TFM_OK);
    CHECK(!mf.has_train_state);
    ckpt_free(&mf);
    fixture_free(&f);
}

/* train.ema's average travels with the optimizer state (EMAW) */
TEST(test_ckpt_weight_average_round_trip)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    TfmErr err = {0};
    float *ema = malloc(f.model.n_params * sizeof(float));
    for (size_t i = 0; ema && i < f.model.n_params; i++) ema[i] = 0.5f * (float)i - 3.0f;
    CHECK(ema && ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, ema, &f.ts, &err) == TFM_OK);
    ModelFile mf;
    CHECK(ckpt_load(path_a, &mf, true, &err) == TFM_OK);
    CHECK(mf.ema && memcmp(mf.ema, ema, f.model.n_params * sizeof(float)) == 0);
    CHECK(memcmp(mf.model.params, f.model.params, f.model.n_params * sizeof(float)) == 0);
    ckpt_free(&mf);
    /* without the optimizer state asked for, no average either */
    CHECK(ckpt_load(path_a, &mf, false, &err) == TFM_OK);
    CHECK(mf.ema == NULL);
    ckpt_free(&mf);
    /* a file without one loads without one */
    CHECK(ckpt_save(path_b, &f.cfg, f.bpe, &f.model, &f.adam, NULL, &f.ts, &err) == TFM_OK);
    CHECK(ckpt_load(path_b, &mf, true, &err) == TFM_OK);
    CHECK(mf.has_train_state && mf.ema == NULL);
    ckpt_free(&mf);
    free(ema);
    fixture_free(&f);
}

/* f saved to path_a (with optimizer and trainer state when with_state) and
 * read back whole; NULL on failure. */
static char *saved_bytes(Fixture *f, bool with_state, size_t *len)
{
    TfmErr err = {0};
    CHECK(ckpt_save(path_a, &f->cfg, f->bpe, &f->model, with_state ? &f->adam : NULL, NULL,
                    with_state ? &f->ts : NULL, &err) == TFM_OK);
    return slurp(path_a, len);
}

static void expect_refused(const char *buf, size_t len, const char *want_suffix)
{
    spit(path_bad, buf, len);
    ModelFile mf;
    TfmErr err = {0};
    TfmStatus st = ckpt_load(path_bad, &mf, true, &err);
    CHECK(st == TFM_ERR_FORMAT);
    char want[800];
    snprintf(want, sizeof want, "%s: %s", path_bad, want_suffix);
    CHECK_STR(err.msg, want);
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Rewrites the END section's checksum (FNV-1a-64 of every byte before it). */
static void rechecksum(char *buf, size_t len)
{
    size_t end = len - 20;
    uint64_t h = fnv1a64(FNV1A64_START, buf, end);
    for (int i = 0; i < 8; i++) buf[end + 12 + i] = (char)(h >> (8 * i));
}

/* A copy of the file with its section `tag` written twice, and a valid
 * checksum (FNV-1a-64 of everything before END, docs/model-format.md). */
static char *duplicate_section(const char *buf, size_t len, const char *tag, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)buf;
    size_t pos = 16, sec = 0, sec_len = 0, end = 0;
    while (pos + 12 <= len) {
        uint64_t n = get_le64(u + pos + 4);
        if (memcmp(u + pos, tag, 4) == 0) { sec = pos; sec_len = 12 + (size_t)n; }
        if (memcmp(u + pos, "END ", 4) == 0) { end = pos; break; }
        pos += 12 + (size_t)n;
    }
    if (!sec || !end) return NULL;
    char *out = malloc(len + sec_len);
    memcpy(out, buf, end);
    memcpy(out + end, buf + sec, sec_len);
    memcpy(out + end + sec_len, buf + end, len - end);
    *out_len = len + sec_len;
    rechecksum(out, *out_len);
    return out;
}

/* The offset of section `tag`'s payload, or 0. */
static size_t find_section(const char *buf, size_t len, const char *tag)
{
    const unsigned char *u = (const unsigned char *)buf;
    for (size_t pos = 16; pos + 12 <= len; pos += 12 + (size_t)get_le64(u + pos + 4))
        if (memcmp(u + pos, tag, 4) == 0) return pos + 12;
    return 0;
}

/* A copy with `extra` zero bytes appended inside section `tag`, its length
 * and the checksum updated: the layout is valid, the payload is not. */
static char *grow_section(const char *buf, size_t len, const char *tag, size_t extra, size_t *out_len)
{
    size_t at = find_section(buf, len, tag);
    if (!at) return NULL;
    size_t n = (size_t)get_le64((const unsigned char *)buf + at - 8);
    char *out = calloc(len + extra, 1);
    memcpy(out, buf, at + n);
    memcpy(out + at + n + extra, buf + at + n, len - at - n);
    for (int i = 0; i < 8; i++) out[at - 8 + i] = (char)((n + extra) >> (8 * i));
    *out_len = len + extra;
    rechecksum(out, *out_len);
    return out;
}

/* A section may appear once: a second TENS (or CONF, ...) is an error, not
 * silently the one that wins. */
TEST(test_ckpt_refuses_duplicate_sections)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    size_t len, dup_len;
    char *buf = saved_bytes(&f, true, &len);
    const char *tags[] = {"TENS", "CONF", "VOCB", "ADAM", "TRST"};
    for (int i = 0; i < 5; i++) {
        char *dup = duplicate_section(buf, len, tags[i], &dup_len);
        CHECK(dup != NULL);
        char want[64];
        snprintf(want, sizeof want, "duplicate %s section", tags[i]);
        expect_refused(dup, dup_len, want);
        free(dup);
    }
    free(buf);
    fixture_free(&f);
}

TEST(test_ckpt_refuses_damaged_files)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    size_t len;
    char *buf = saved_bytes(&f, true, &len);
    expect_refused(buf, 0, "not a tfm model file (bad magic)");
    expect_refused(buf, 10, "truncated file");   /* the magic intact, the header cut */
    expect_refused(buf, len / 2, "truncated file");
    expect_refused(buf, len - 1, "truncated file");
    for (size_t pos = 100; pos < len - 16; pos += len / 7) {   /* bit flips anywhere */
        buf[pos] ^= 0x10;
        expect_refused(buf, len, "checksum mismatch (corrupted file)");
        buf[pos] ^= 0x10;
    }
    buf[8] = 9;                                                /* version 9 */
    expect_refused(buf, len, "unsupported model format version 9 (this tfm reads 1 and 2)");
    buf[8] = 1;
    memcpy(buf, "GGUF", 4);
    expect_refused(buf, len, "not a tfm model file (bad magic)");
    /* a config that asks for more parameters than the file holds (valid
     * checksum): refused before any allocation of that size. ckpt_save
     * writes the model's own architecture, so the lie is patched in. */
    TfmErr err = {0};
    TfmConfig big = f.cfg;
    big.model.d_ff = 16384;
    CHECK(ckpt_save(path_bad, &big, f.bpe, &f.model, NULL, NULL, NULL, &err) == TFM_OK);
    free(buf);
    buf = slurp(path_bad, &len);
    char *d_ff = buf ? memmem(buf, len, "\"d_ff\": 24,", 11) : NULL;
    CHECK(d_ff != NULL);   /* the model's 24, not the caller's 16384 */
    memcpy(d_ff, "\"d_ff\": 99,", 11);
    rechecksum(buf, len);
    spit(path_bad, buf, len);
    ModelFile lie;
    CHECK(ckpt_load(path_bad, &lie, false, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "parameters, the file holds fewer") != NULL);
    free(buf);
    /* a missing file is an I/O error */
    ModelFile mf;
    CHECK(ckpt_load("/nonexistent/x.tfm", &mf, false, &err) == TFM_ERR_IO);
    fixture_free(&f);
}

/* A file with a valid layout but bytes no reader expects, or a trainer state
 * with an impossible elapsed time: refused, not half-read. */
/* buf with n bytes at `at` replaced (checksum redone) is refused for its
 * trainer state. */
static void expect_trst_refused(const char *buf, size_t len, size_t at, const void *bytes, size_t n)
{
    char *copy = malloc(len);
    memcpy(copy, buf, len);
    memcpy(copy + at, bytes, n);
    rechecksum(copy, len);
    expect_refused(copy, len, "malformed trainer state");
    free(copy);
}

TEST(test_ckpt_refuses_extra_payload)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    size_t len, n;
    char *buf = saved_bytes(&f, true, &len);
    char *bad = grow_section(buf, len, "TENS", 4, &n);
    CHECK(bad != NULL);
    if (bad) expect_refused(bad, n, "unexpected data after the last tensor");
    free(bad);
    bad = grow_section(buf, len, "TRST", 1, &n);
    CHECK(bad != NULL);
    if (bad) expect_refused(bad, n, "malformed trainer state");
    free(bad);
    /* docs/model-format.md: elapsed seconds at byte 72 of TRST, then the log
     * sums (f64 loss, nll, seconds, u64 tokens, real tokens) to byte 120,
     * then the warm-up's end to byte 128, the chunk and train.init's
     * checksum to byte 144 */
    size_t trst = find_section(buf, len, "TRST");
    size_t trst_len = trst ? (size_t)get_le64((unsigned char *)buf + trst - 8) : 0;
    CHECK_EQ_INT(trst_len, 144);
    const double bad_f64[] = {NAN, -1.0, INFINITY};
    const size_t f64_at[] = {72, 96, 120};  /* elapsed, the log's seconds, warm-up end */
    for (int k = 0; trst_len == 144 && k < 3; k++)
        for (int i = 0; i < 3; i++)
            expect_trst_refused(buf, len, trst + f64_at[k], &bad_f64[i], 8);
    /* flags other than has-best (1) and validated (2), a dropout rng of all
     * zeros (xoshiro would never leave it), a negative token count */
    const unsigned char flag4[1] = {4}, zeros[32] = {0}, sign[1] = {0x80};
    if (trst_len == 128) {
        expect_trst_refused(buf, len, trst + 64, flag4, 1);
        expect_trst_refused(buf, len, trst + 24, zeros, 32);
        expect_trst_refused(buf, len, trst + 119, sign, 1);
    }
    free(buf);
    fixture_free(&f);
}

/* An EMAW section of another size than the model's parameters is refused. */
TEST(test_ckpt_refuses_mis_sized_weight_average)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    TfmErr err = {0};
    float *ema = calloc(f.model.n_params, sizeof(float));
    CHECK(ema && ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, ema, &f.ts, &err) == TFM_OK);
    size_t len, n;
    char *buf = slurp(path_a, &len);
    char *bad = buf ? grow_section(buf, len, "EMAW", 4, &n) : NULL;
    CHECK(bad != NULL);
    if (bad) expect_refused(bad, n, "weight average does not match the model");
    free(bad);
    free(buf);
    free(ema);
    fixture_free(&f);
}

/* NaN, Inf or a negative second moment in the optimizer state, and NaN or
 * Inf in the weight average, are refused: a resumed run would train on them. */
TEST(test_ckpt_refuses_non_finite_training_state)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    TfmErr err = {0};
    ModelFile mf;
    float *ema = calloc(f.model.n_params, sizeof(float));
    const float bad[] = {NAN, INFINITY};
    for (int k = 0; ema && k < 2; k++) {
        ema[3] = bad[k];
        CHECK(ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, ema, &f.ts, &err) == TFM_OK);
        CHECK_EQ_INT(ckpt_load(path_a, &mf, true, &err), TFM_ERR_FORMAT);
        CHECK(strstr(err.msg, "weight average holds NaN or Inf") != NULL);
        memset(&err, 0, sizeof err);
    }
    free(ema);
    float *moment[] = {f.adam.m, f.adam.v, f.adam.v};
    const float value[] = {NAN, INFINITY, -1.0f};
    for (int k = 0; k < 3; k++) {
        float keep = moment[k][1];
        moment[k][1] = value[k];
        CHECK(ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, NULL, &f.ts, &err) == TFM_OK);
        CHECK_EQ_INT(ckpt_load(path_a, &mf, true, &err), TFM_ERR_FORMAT);
        CHECK(strstr(err.msg, "optimizer state holds NaN, Inf or a negative second moment") != NULL);
        memset(&err, 0, sizeof err);
        moment[k][1] = keep;
    }
    /* as a model (no training state asked for) the file still loads */
    f.adam.v[1] = -1.0f;
    CHECK(ckpt_save(path_a, &f.cfg, f.bpe, &f.model, &f.adam, NULL, &f.ts, &err) == TFM_OK);
    CHECK_EQ_INT(ckpt_load(path_a, &mf, false, &err), TFM_OK);
    ckpt_free(&mf);
    fixture_free(&f);
}

/* Files written before the log sums joined TRST (80 bytes), before the
 * warm-up's end did (120 bytes), and before the chunk and train.init's
 * checksum did (128 bytes), still load, with what they lack at zero. */
TEST(test_ckpt_reads_older_trainer_states)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    const size_t old_sizes[] = {80, 120, 128};
    for (int k = 0; k < 3; k++) {
        size_t len, keep = old_sizes[k], cut = 144 - keep;
        char *buf = saved_bytes(&f, true, &len);
        size_t at = buf ? find_section(buf, len, "TRST") : 0;
        CHECK(at && get_le64((unsigned char *)buf + at - 8) == 144);
        /* cut the end of TRST's payload, as the old writer did */
        memmove(buf + at + keep, buf + at + 144, len - at - 144);
        len -= cut;
        for (int i = 0; i < 8; i++) buf[at - 8 + i] = (char)((uint64_t)keep >> (8 * i));
        rechecksum(buf, len);
        spit(path_bad, buf, len);
        ModelFile mf;
        TfmErr err = {0};
        CHECK(ckpt_load(path_bad, &mf, true, &err) == TFM_OK);
        CHECK(mf.has_train_state && mf.ts.step == 17 && mf.ts.elapsed_s == 12.5);
        CHECK(mf.ts.has_best && mf.ts.validated);
        if (keep == 80) CHECK(mf.ts.log_loss == 0 && mf.ts.log_tokens == 0 && mf.ts.log_step_s == 0);
        else CHECK(mf.ts.log_loss == 40.5 && mf.ts.log_real_tokens == 11);
        CHECK(keep == 128 ? mf.ts.warmup_end_s == f.ts.warmup_end_s : mf.ts.warmup_end_s == 0);
        CHECK(mf.ts.chunk == 0 && mf.ts.init_sum == 0);
        ckpt_free(&mf);
        free(buf);
    }
    fixture_free(&f);
}

/* A huge file that is not a model, or a model with a huge tail, is refused
 * from its first bytes: the old reader asked for the whole file in memory
 * first (64 GiB here, a sparse file) and failed with "out of memory". */
TEST(test_ckpt_refuses_huge_files_early)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    size_t len;
    char *buf = saved_bytes(&f, false, &len);
    const off_t huge = (off_t)64 << 30;
    struct { size_t keep; const char *want; } cases[] = {
        {0, "not a tfm model file (bad magic)"},        /* all zeros */
        {16, "more than 64 sections (damaged file)"},   /* a header, then empty sections */
        {len, "unexpected data after the end"},         /* a whole model, then 64 GiB */
    };
    for (int i = 0; i < 3; i++) {
        spit(path_bad, buf, cases[i].keep);
        if (truncate(path_bad, huge) != 0) { CHECK(!"truncate"); continue; }
        ModelFile mf;
        TfmErr err = {0};
        TfmStatus st = ckpt_load(path_bad, &mf, false, &err);
        CHECK(st == TFM_ERR_FORMAT);
        char want[800];
        snprintf(want, sizeof want, "%s: %s", path_bad, cases[i].want);
        CHECK_STR(err.msg, want);
    }
    remove(path_bad);
    free(buf);
    fixture_free(&f);
}

/* Files written before model.norm_type and model.attention existed (their
 * embedded config has neither key) load as LayerNorm with softmax
 * attention, weights unchanged. */
TEST(test_ckpt_old_config_loads_as_layernorm_softmax)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    size_t len;
    char *buf = saved_bytes(&f, false, &len);
    size_t at = buf ? find_section(buf, len, "CONF") : 0;
    CHECK(at > 0);
    const size_t n = (size_t)get_le64((unsigned char *)buf + at - 8);
    char *json = strndup(buf + at, n);
    cJSON *root = cJSON_Parse(json);
    cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    CHECK(cJSON_GetObjectItemCaseSensitive(model, "attention") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(model, "norm_type") != NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(model, "attention");
    cJSON_DeleteItemFromObjectCaseSensitive(model, "norm_type");
    char *old = cJSON_PrintUnformatted(root);
    const size_t m = strlen(old), out_len = len - n + m;
    char *out = malloc(out_len);
    memcpy(out, buf, at - 8);
    for (int i = 0; i < 8; i++) out[at - 8 + i] = (char)((uint64_t)m >> (8 * i));
    memcpy(out + at, old, m);
    memcpy(out + at + m, buf + at + n, len - at - n);
    rechecksum(out, out_len);
    spit(path_bad, out, out_len);
    ModelFile mf;
    TfmErr err = {0};
    CHECK(ckpt_load(path_bad, &mf, false, &err) == TFM_OK);
    if (err.status == TFM_OK) {
        CHECK(mf.cfg.model.attention == ATTN_SOFTMAX);
        CHECK(mf.cfg.model.norm_type == NORM_LAYER);
        CHECK(mf.model.n_params == f.model.n_params &&
              memcmp(mf.model.params, f.model.params, f.model.n_params * sizeof(float)) == 0);
        ckpt_free(&mf);
    }
    free(out);
    free(old);
    cJSON_Delete(root);
    free(json);
    free(buf);
    fixture_free(&f);
}

/* An int8 model (tfm quantize): the matrices as int8 with a scale a row
 * (QTEN), the rest float32; loading gives back the quantized weights
 * exactly, and saving again the same bytes. A row of zeros stays zeros. */
TEST(test_ckpt_int8_round_trip)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    TfmErr err = {0};
    const TensorInfo *t = model_tensor(&f.model, "dec.1.ffn.w1");
    memset(f.model.params + t->offset, 0, sizeof(float) * t->cols);     /* row 0 zero */
    size_t len_f;
    char *fbytes = saved_bytes(&f, false, &len_f);
    model_quantize(&f.model);
    CHECK(f.model.int8);
    CHECK(ckpt_save(path_a, &f.cfg, f.bpe, &f.model, NULL, NULL, &f.ts, &err) == TFM_OK);
    ModelFile mf;
    CHECK(ckpt_load(path_a, &mf, false, &err) == TFM_OK);
    CHECK(mf.model.int8);
    CHECK(memcmp(mf.model.params, f.model.params, f.model.n_params * sizeof(float)) == 0);
    CHECK(mf.has_step && mf.ts.step == 17);
    CHECK(ckpt_save(path_b, &mf.cfg, mf.bpe, &mf.model, NULL, NULL, &mf.ts, &err) == TFM_OK);
    size_t la, lb;
    char *a = slurp(path_a, &la), *b = slurp(path_b, &lb);
    CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    CHECK(a && a[8] == 2);                                  /* format version 2 */
    /* one byte a weight instead of four */
    CHECK(la < len_f / 2);
    for (int c = 0; c < t->cols; c++) CHECK(mf.model.params[t->offset + c] == 0.0f);
    free(a);
    free(b);
    free(fbytes);
    ckpt_free(&mf);
    fixture_free(&f);
}

/* The first int8 tensor of QTEN: the offset of its first scale, and of its
 * values. */
static void first_qten_tensor(const char *buf, size_t len, size_t *scale, size_t *values)
{
    size_t at = find_section(buf, len, "QTEN");
    const unsigned char *u = (const unsigned char *)buf + at + 4;
    uint32_t name_len = u[0] | u[1] << 8 | u[2] << 16 | (uint32_t)u[3] << 24;
    const unsigned char *dims = u + 4 + name_len;
    uint32_t rows = dims[0] | dims[1] << 8 | dims[2] << 16 | (uint32_t)dims[3] << 24;
    *scale = at + 4 + 4 + name_len + 8;
    *values = *scale + 4 * (size_t)rows;
}

static void expect_int8_refused(const char *buf, size_t len, size_t at, const void *bytes,
                                size_t n, const char *why)
{
    char *copy = malloc(len);
    memcpy(copy, buf, len);
    memcpy(copy + at, bytes, n);
    rechecksum(copy, len);
    expect_refused(copy, len, why);
    free(copy);
}

TEST(test_ckpt_refuses_damaged_int8)
{
    Fixture f;
    paths_init();
    CHECK(fixture_init(&f));
    model_quantize(&f.model);
    size_t len;
    char *buf = saved_bytes(&f, false, &len);
    size_t scale, values;
    first_qten_tensor(buf, len, &scale, &values);
    CHECK(scale > 0);
    const float nan = NAN, neg = -0.5f, inf = INFINITY;
    expect_int8_refused(buf, len, scale, &nan, 4, "int8 tensor 'emb.shared' has a negative, NaN "
                        "or Inf scale");
    expect_int8_refused(buf, len, scale + 4, &neg, 4, "int8 tensor 'emb.shared' has a negative, "
                        "NaN or Inf scale");
    expect_int8_refused(buf, len, scale, &inf, 4, "int8 tensor 'emb.shared' has a negative, NaN "
                        "or Inf scale");
    const int8_t m128 = -128;
    expect_int8_refused(buf, len, values + 3, &m128, 1, "int8 tensor 'emb.shared' holds -128");
    /* a finite scale whose values overflow (a row's largest |value| is 127) */
    const float huge = FLT_MAX;
    expect_int8_refused(buf, len, scale, &huge, 4, "tensor 'emb.shared' holds NaN or Inf");
    const char v1 = 1;
    expect_int8_refused(buf, len, 8, &v1, 1, "int8 tensors (QTEN section) in a version 1 file");
    /* bit flips: the checksum */
    buf[values + 5] ^= 4;
    expect_refused(buf, len, "checksum mismatch (corrupted file)");
    buf[values + 5] ^= 4;
    expect_refused(buf, len - 3, "truncated file");
    free(buf);
    /* a version 2 file without int8 tensors */
    f.model.int8 = false;
    buf = saved_bytes(&f, false, &len);
    const char v2 = 2;
    expect_int8_refused(buf, len, 8, &v2, 1, "a version 2 (int8) file without int8 tensors "
                        "(QTEN section)");
    free(buf);
    fixture_free(&f);
}
