/* test_config: defaults, round trips through config_to_json, path resolution,
 * and the exact error line and status of each kind of bad config. Fixture
 * files are written to a fresh mkdtemp folder, so the cwd does not matter
 * except for tests/data and configs/base.json. */
#include "test.h"
#include "model/config.h"

#include <cJSON.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A temp folder with four small data files, and an empty sub/vocab.txt. */
static char *make_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tfm-config-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    const char *names[] = {"train.de", "train.en", "val.de", "val.en"};
    for (int i = 0; i < 4; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        FILE *f = fopen(p, "w");
        if (!f) return NULL;
        fputs("ein satz\n", f);
        fclose(f);
    }
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    if (mkdir(sub, 0755) != 0) return NULL;
    snprintf(sub, sizeof sub, "%s/sub/vocab.txt", dir);
    FILE *f = fopen(sub, "w");
    if (!f) return NULL;
    fclose(f);
    return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static void remove_dir(const char *dir)
{
    if (dir) nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) test_fail(__FILE__, __LINE__, "cannot write %s", path);
    fwrite(text, 1, len, f);
    fclose(f);
}

#define DATA_KEYS "\"train_src\": \"train.de\", \"train_tgt\": \"train.en\", " \
                  "\"valid_src\": \"val.de\", \"valid_tgt\": \"val.en\""
#define DATA "\"data\": {" DATA_KEYS "}"
#define DATA_PLUS(x) "\"data\": {" DATA_KEYS ", " x "}"

/* A user's config is held to translate's decode ranges; the config inside a
 * model written before those ranges is read as it is (translate clamps). */
TEST(config_decode_limits_spare_model_configs)
{
    TfmConfig c;
    TfmErr err = {0};
    const char *json = "{" DATA ", \"decode\": {\"alpha\": 20, \"max_len_b\": 2000000}}";
    CHECK_EQ_INT(config_parse(&c, json, NULL, false, &err), TFM_OK);
    CHECK(c.decode.alpha == 20.0f && c.decode.max_len_b == 2000000);
    CHECK_EQ_INT(config_check(&c, &err), TFM_ERR_CONFIG);
    CHECK_STR(err.msg, "decode.alpha: expected a number in [0, 10], got 20");
    config_free(&c);
}

TEST(config_defaults_match_spec)
{
    TfmConfig c;
    config_defaults(&c);
    CHECK(c.data.train_src.n == 0 && c.data.valid_tgt == NULL && c.data.vocab == NULL);
    CHECK_EQ_INT(c.data.vocab_size, 8000);
    CHECK_EQ_INT(c.data.max_len, 128);
    CHECK_EQ_INT(c.model.d_model, 512);
    CHECK_EQ_INT(c.model.heads, 8);
    CHECK_EQ_INT(c.model.enc_layers, 6);
    CHECK_EQ_INT(c.model.dec_layers, 6);
    CHECK_EQ_INT(c.model.d_ff, 2048);
    CHECK(c.model.dropout == 0.1f && c.model.attn_dropout == 0.0f && c.model.relu_dropout == 0.0f);
    CHECK_EQ_INT(c.model.norm, NORM_POST);
    CHECK(c.model.share_embeddings);
    CHECK_EQ_INT(c.model.vocab_size, 0);
    CHECK_EQ_INT(c.model.max_len, 130);
    CHECK_EQ_INT(c.train.seed, 1);
    CHECK_EQ_INT(c.train.batch_tokens, 4096);
    CHECK_EQ_INT(c.train.max_steps, 100000);
    CHECK_EQ_INT(c.train.max_epochs, 0);
    CHECK(c.train.max_time_s == 0.0);
    CHECK(c.train.label_smoothing == 0.1f && c.train.clip_norm == 0.0f && c.train.weight_decay == 0.0f);
    CHECK_EQ_INT(c.train.weight_decay_scope, WD_SCOPE_ALL);
    CHECK_EQ_INT(c.train.dropout_warmup, 0);
    CHECK_EQ_INT(c.train.lr.schedule, LR_NOAM);
    CHECK_EQ_INT(c.train.lr.warmup, 4000);
    CHECK(c.train.lr.factor == 1.0f && c.train.lr.peak == 0.0005f);
    CHECK(c.train.beta1 == 0.9f && c.train.beta2 == 0.98f && c.train.eps == 1e-9f);
    CHECK_EQ_INT(c.train.valid_every, 1000);
    CHECK_EQ_INT(c.train.save_every, 1000);
    CHECK(!c.train.valid_bleu);
    CHECK_EQ_INT(c.train.patience, 0);
    CHECK_STR(c.train.out_dir, "checkpoints");
    CHECK_EQ_INT(c.train.keep, 5);
    CHECK_STR(c.train.model, "model.tfm");
    CHECK_EQ_INT(c.train.threads, 0);
    CHECK_EQ_INT(c.train.parallel, PARALLEL_PRODUCTS);
    CHECK_EQ_INT(c.decode.beam, 4);
    CHECK(c.decode.alpha == 0.6f && c.decode.max_len_a == 1.0f);
    CHECK_EQ_INT(c.decode.max_len_b, 50);
    config_free(&c);
}

/* Every field, compared one by one (not through the schema table under test). */
static void check_same(const TfmConfig *a, const TfmConfig *b)
{
    CHECK_EQ_INT(a->data.train_src.n, b->data.train_src.n);
    CHECK_EQ_INT(a->data.train_tgt.n, b->data.train_tgt.n);
    for (int i = 0; i < a->data.train_src.n && i < b->data.train_src.n; i++)
        CHECK_STR(a->data.train_src.v[i], b->data.train_src.v[i]);
    for (int i = 0; i < a->data.train_tgt.n && i < b->data.train_tgt.n; i++)
        CHECK_STR(a->data.train_tgt.v[i], b->data.train_tgt.v[i]);
    CHECK_EQ_INT(a->data.train_weights.n, b->data.train_weights.n);
    for (int i = 0; i < a->data.train_weights.n && i < b->data.train_weights.n; i++)
        CHECK(a->data.train_weights.v[i] == b->data.train_weights.v[i]);
    CHECK(a->data.shuffle_buffer == b->data.shuffle_buffer && a->data.bpe_sample == b->data.bpe_sample);
    CHECK_STR(a->data.valid_src, b->data.valid_src);
    CHECK_STR(a->data.valid_tgt, b->data.valid_tgt);
    CHECK((a->data.vocab == NULL) == (b->data.vocab == NULL));
    if (a->data.vocab && b->data.vocab) CHECK_STR(a->data.vocab, b->data.vocab);
    CHECK_EQ_INT(a->data.vocab_size, b->data.vocab_size);
    CHECK_EQ_INT(a->data.max_len, b->data.max_len);
    CHECK_EQ_INT(a->model.d_model, b->model.d_model);
    CHECK_EQ_INT(a->model.heads, b->model.heads);
    CHECK_EQ_INT(a->model.enc_layers, b->model.enc_layers);
    CHECK_EQ_INT(a->model.dec_layers, b->model.dec_layers);
    CHECK_EQ_INT(a->model.d_ff, b->model.d_ff);
    CHECK(a->model.dropout == b->model.dropout);
    CHECK(a->model.attn_dropout == b->model.attn_dropout);
    CHECK(a->model.relu_dropout == b->model.relu_dropout);
    CHECK(a->model.word_dropout == b->model.word_dropout);
    CHECK_EQ_INT(a->model.norm, b->model.norm);
    CHECK_EQ_INT(a->model.share_embeddings, b->model.share_embeddings);
    CHECK_EQ_INT(a->model.max_len, b->model.max_len);
    CHECK(a->train.seed == b->train.seed);
    CHECK_EQ_INT(a->train.batch_tokens, b->train.batch_tokens);
    CHECK_EQ_INT(a->train.max_steps, b->train.max_steps);
    CHECK_EQ_INT(a->train.max_epochs, b->train.max_epochs);
    CHECK(a->train.max_time_s == b->train.max_time_s);
    CHECK(a->train.label_smoothing == b->train.label_smoothing);
    CHECK(a->train.clip_norm == b->train.clip_norm);
    CHECK(a->train.weight_decay == b->train.weight_decay);
    CHECK_EQ_INT(a->train.weight_decay_scope, b->train.weight_decay_scope);
    CHECK_EQ_INT(a->train.dropout_warmup, b->train.dropout_warmup);
    CHECK_EQ_INT(a->train.lr.schedule, b->train.lr.schedule);
    CHECK_EQ_INT(a->train.lr.warmup, b->train.lr.warmup);
    CHECK(a->train.lr.factor == b->train.lr.factor);
    CHECK(a->train.lr.peak == b->train.lr.peak);
    CHECK(a->train.beta1 == b->train.beta1);
    CHECK(a->train.beta2 == b->train.beta2);
    CHECK(a->train.eps == b->train.eps);
    CHECK_EQ_INT(a->train.valid_every, b->train.valid_every);
    CHECK_EQ_INT(a->train.save_every, b->train.save_every);
    CHECK_EQ_INT(a->train.valid_bleu, b->train.valid_bleu);
    CHECK_EQ_INT(a->train.patience, b->train.patience);
    CHECK_STR(a->train.out_dir, b->train.out_dir);
    CHECK_EQ_INT(a->train.keep, b->train.keep);
    CHECK_STR(a->train.model, b->train.model);
    CHECK_EQ_INT(a->train.threads, b->train.threads);
    CHECK_EQ_INT(a->train.parallel, b->train.parallel);
    CHECK_EQ_INT(a->decode.beam, b->decode.beam);
    CHECK(a->decode.alpha == b->decode.alpha);
    CHECK(a->decode.max_len_a == b->decode.max_len_a);
    CHECK_EQ_INT(a->decode.max_len_b, b->decode.max_len_b);
}

/* Every key set to a non-default value, floats that are not exact in binary. */
static const char *full_json =
    "{\"data\": {\"train_src\": \"/abs/tr\\\"ain.de\", \"train_tgt\": \"/abs/train\\n.en\","
    " \"valid_src\": \"rel/val.de\", \"valid_tgt\": \"val.en\", \"vocab\": \"v.txt\","
    " \"vocab_size\": 261, \"max_len\": 77},"
    " \"model\": {\"d_model\": 96, \"heads\": 12, \"enc_layers\": 3, \"dec_layers\": 2, \"d_ff\": 333,"
    " \"dropout\": 0.3, \"attn_dropout\": 0.123456789, \"relu_dropout\": 0.7,"
    " \"norm\": \"pre\", \"share_embeddings\": false},"
    " \"train\": {\"seed\": 9007199254740991, \"batch_tokens\": 1234, \"max_steps\": 4000000000,"
    " \"max_epochs\": 7, \"max_time_s\": 3600.125, \"label_smoothing\": 0.2, \"clip_norm\": 1.1,"
    " \"weight_decay\": 0.01, \"weight_decay_scope\": \"matrices\", \"dropout_warmup\": 3000, \"lr\": {\"schedule\": \"inverse_sqrt\", \"warmup\": 16000,"
    " \"factor\": 2.5, \"peak\": 0.0007}, \"adam\": {\"beta1\": 0.8, \"beta2\": 0.999, \"eps\": 1e-8},"
    " \"valid_every\": 500, \"save_every\": 250, \"valid_bleu\": true, \"patience\": 10,"
    " \"out_dir\": \"out/ckpt\", \"keep\": 2, \"model\": \"m.tfm\", \"threads\": 2,"
    " \"parallel\": \"sentences\"},"
    " \"decode\": {\"beam\": 6, \"alpha\": 1.2, \"max_len_a\": 1.5, \"max_len_b\": 10}}";

TEST(config_full_round_trip)
{
    TfmErr err = {0};
    TfmConfig a, b;
    CHECK_EQ_INT(config_parse(&a, full_json, NULL, false, &err), TFM_OK);
    if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
    CHECK_STR(a.data.train_src.v[0], "/abs/tr\"ain.de");
    CHECK_STR(a.data.train_tgt.v[0], "/abs/train\n.en");
    CHECK_STR(a.data.valid_src, "rel/val.de");
    CHECK_EQ_INT(a.data.vocab_size, 261);
    CHECK_EQ_INT(a.model.max_len, 79);
    CHECK_EQ_INT(a.model.norm, NORM_PRE);
    CHECK(a.model.attn_dropout == 0.123456789f);
    CHECK(a.train.seed == 9007199254740991ULL);
    CHECK_EQ_INT(a.train.max_steps, 4000000000L);
    CHECK(a.train.max_time_s == 3600.125);
    CHECK_EQ_INT(a.train.lr.schedule, LR_INVERSE_SQRT);
    CHECK_EQ_INT(a.train.weight_decay_scope, WD_SCOPE_MATRICES);
    CHECK(a.train.eps == 1e-8f);
    CHECK(a.train.valid_bleu);
    CHECK_STR(a.train.out_dir, "out/ckpt");

    char *json = config_to_json(&a);
    CHECK(json != NULL);
    CHECK_EQ_INT(config_parse(&b, json, NULL, false, &err), TFM_OK);
    check_same(&a, &b);
    char *again = config_to_json(&b);
    CHECK(again && strcmp(json, again) == 0);
    /* Floats are printed shortest-exact, not as 0.300000012. */
    CHECK(strstr(json, "\"dropout\": 0.3,") != NULL);
    CHECK(strstr(json, "\"eps\": 1e-08") != NULL);
    CHECK(strstr(json, "\"vocab\": \"v.txt\"") != NULL);
    free(json);
    free(again);
    config_free(&a);
    config_free(&b);
}

TEST(config_to_json_of_defaults_lists_every_key)
{
    TfmConfig c;
    config_defaults(&c);
    char *json = config_to_json(&c);
    CHECK(json != NULL);
    const char *keys[] = {"train_src", "train_tgt", "valid_src", "valid_tgt", "vocab", "vocab_size",
                          "max_len", "d_model", "heads", "enc_layers", "dec_layers", "d_ff",
                          "dropout", "attn_dropout", "relu_dropout", "word_dropout", "norm", "output_vocab", "share_embeddings",
                          "seed", "batch_tokens", "max_steps", "max_epochs", "max_time_s",
                          "label_smoothing", "rdrop", "dropout_warmup", "clip_norm", "weight_decay", "weight_decay_scope", "lr", "schedule",
                          "warmup", "factor", "peak", "final", "adam", "beta1", "beta2", "eps",
                          "valid_every", "save_every", "valid_bleu", "patience", "out_dir",
                          "keep", "model", "threads", "parallel", "decode", "beam", "alpha", "max_len_a",
                          "max_len_b", "norm_type", "attention", "bpe_dropout", "horizon",
                          "average_last", "ema", "log_every", "precision"};
    for (size_t i = 0; json && i < sizeof keys / sizeof *keys; i++) {
        char k[40];
        snprintf(k, sizeof k, "\"%s\": ", keys[i]);
        if (!strstr(json, k)) test_fail(__FILE__, __LINE__, "key %s missing from to_json", keys[i]);
    }
    CHECK(json && strstr(json, "\"train_src\": null") != NULL);
    CHECK(json && strstr(json, "\"lr\": {\n      \"schedule\": \"noam\",") != NULL);
    free(json);
    config_free(&c);
}

typedef struct {
    const char *json;
    const char *msg;       /* after "<dir>/x.json: "; %s is the temp folder */
    TfmStatus status;
} BadCase;

static const BadCase bad_cases[] = {
    {"{" DATA ", \"train\": {\"lr\": {\"warmup\": -5}}}",
     "train.lr.warmup: expected a positive integer, got -5", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"foo\": 1}}", "model.foo: unknown key", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"max_steps\": 0, \"lr\": {\"schedule\": \"linear\"}}}",
     "train.lr.schedule: \"linear\" decays to lr.final at train.max_steps, which must be above "
     "lr.warmup (4000), got 0", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"max_steps\": 0, \"lr\": {\"schedule\": \"linear\", \"horizon\": \"time\"}}}",
     "train.lr.horizon: \"time\" decays to lr.final at train.max_time_s, which is not set (give it "
     "in seconds, or use \"steps\")", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"max_steps\": 50, \"max_time_s\": 60, \"lr\": {\"schedule\": "
     "\"cosine\", \"horizon\": \"time\"}}}",
     "train.lr.schedule: \"cosine\" needs train.max_steps above lr.warmup (4000) or 0 (no step "
     "limit), got 50", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"ema\": 1}}",
     "train.ema: expected a number in [0, 1), got 1", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"ema\": -0.5}}",
     "train.ema: expected a number in [0, 1), got -0.5", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"lr\": {\"horizon\": \"clock\"}}}",
     "train.lr.horizon: expected one of \"steps\", \"time\", got \"clock\"", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"lr\": {\"schedule\": \"cosine\", \"peak\": 0.001, \"final\": 0.01}}}",
     "train.lr.final: 0.01 is above train.lr.peak 0.001", TFM_ERR_CONFIG},
    {"{\"Model\": {}, " DATA "}", "Model: unknown key (did you mean model?)", TFM_ERR_CONFIG},
    {"{\"decoder\": {}, " DATA "}", "decoder: unknown key (did you mean decode?)", TFM_ERR_CONFIG},
    {"{\"train.lr\": {}, " DATA "}", "\"train.lr\": unknown key", TFM_ERR_CONFIG},
    {"{\"a\\nb\": 1}", "\"a\\nb\": unknown key", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"d_model\": 500}}",
     "model.heads: 8 heads do not divide model.d_model 500", TFM_ERR_CONFIG},
    {"{\n  " DATA ",\n}", "line 3 column 1: invalid JSON near '}'", TFM_ERR_CONFIG},
    {"{\n  " DATA ",\n}\n", "line 3 column 1: invalid JSON near '}'", TFM_ERR_CONFIG},
    {"{\"data\": {train_src: 1}}", "line 1 column 11: invalid JSON near 'train_src: 1'", TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\" 1}}", "line 1 column 23: invalid JSON near '1}}'", TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": 1 \"x\": 2}}", "line 1 column 26: invalid JSON near '\"x\": 2}}'", TFM_ERR_CONFIG},
    {"{\"data\": [1, ]}", "line 1 column 14: invalid JSON near ']}'", TFM_ERR_CONFIG},
    {"{\"data\": -}", "line 1 column 10: invalid JSON near '-}'", TFM_ERR_CONFIG},
    {"{\n  \"model\": {\"d_model\": tru}}", "line 2 column 24: invalid JSON near 'tru}}'", TFM_ERR_CONFIG},
    {"{\n  \"model\": {\"d_model\": 512", "line 2 column 27: unexpected end of file", TFM_ERR_CONFIG},
    {"{\"data\": \"train.d", "line 1 column 10: unterminated string", TFM_ERR_CONFIG},
    {"{\n  \"data\": {\n\"x\": [1,\n", "line 4 column 1: unexpected end of file", TFM_ERR_CONFIG},
    {"", "empty file (expected a JSON object)", TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": \"a\\\\u0000\", \"train_tgt\": \"a\\u0000b\"}}",
     "line 1 column 51: \\u0000 in a string is not supported", TFM_ERR_CONFIG},
    /* RFC 8259: control characters in strings must be escaped (cJSON takes them) */
    {"{\"train\": {\"out_dir\": \"c\nk\"}}", "line 1 column 25: raw control character 0x0A in a "
     "string (JSON needs it escaped, e.g. \\n)", TFM_ERR_CONFIG},
    {"{\"data\":\f{}}", "line 1 column 9: control character 0x0C outside a string (not JSON "
     "whitespace)", TFM_ERR_CONFIG},
    {"{\n\"data\": {\"train_src\": \"a\tb\"}}", "line 2 column 25: raw control character 0x09 in a "
     "string (JSON needs it escaped, e.g. \\n)", TFM_ERR_CONFIG},
    {"{\"model\": {\"norm\": \"\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4"
     "\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\"}}",
     "model.norm: expected one of \"post\", \"pre\", got \"\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4"
     "\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4...\"",
     TFM_ERR_CONFIG},
    {" \n\t ", "empty file (expected a JSON object)", TFM_ERR_CONFIG},
    {"{} x", "line 1 column 4: unexpected text after the JSON object", TFM_ERR_CONFIG},
    {"[1, 2]", "expected a JSON object at the top level, got an array", TFM_ERR_CONFIG},
    {"\"hello\"", "expected a JSON object at the top level, got \"hello\"", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": 5}", "model: expected an object, got 5", TFM_ERR_CONFIG},
    {"{\"data\": null}", "data: expected an object, got null", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"lr\": 5}}", "train.lr: expected an object, got 5", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"heads\": 8, \"heads\": 4}}", "model.heads: duplicate key", TFM_ERR_CONFIG},
    {"{" DATA ", " DATA "}", "data: duplicate key", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"dropout\": 1}}", "model.dropout: expected a number in [0, 1), got 1",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"dropout\": 0.99999999999}}",
     "model.dropout: expected a number in [0, 1), got 0.99999999999", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"d_model\": 5.5}}",
     "model.d_model: expected an integer in [1, 65536], got 5.5", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"d_model\": \"512\"}}",
     "model.d_model: expected an integer in [1, 65536], got \"512\"", TFM_ERR_CONFIG},
    {"{" DATA_PLUS("\"vocab_size\": 260") "}",
     "data.vocab_size: expected an integer in [261, 1048576], got 260", TFM_ERR_CONFIG},
    {"{" DATA_PLUS("\"max_len\": 0") "}", "data.max_len: expected an integer in [1, 65536], got 0",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"seed\": 1e300}}",
     "train.seed: expected a non-negative integer up to 9007199254740991, got 1e+300", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"seed\": -1}}", "train.seed: expected a non-negative integer, got -1",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"max_steps\": 1e400}}",
     "train.max_steps: expected a non-negative integer up to 9007199254740991, got a number out of range",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"batch_tokens\": 2147483648}}",
     "train.batch_tokens: expected an integer in [1, 16777216], got 2147483648", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"patience\": 2147483648}}",
     "train.patience: expected a non-negative integer up to 2147483647, got 2147483648", TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"norm\": \"Post\"}}",
     "model.norm: expected one of \"post\", \"pre\", got \"Post\"", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"lr\": {\"schedule\": \"exponential\"}}}",
     "train.lr.schedule: expected one of \"noam\", \"inverse_sqrt\", \"constant\", \"linear\", \"cosine\", got \"exponential\"",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"adam\": {\"eps\": 0}}}", "train.adam.eps: expected a positive number, got 0",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"adam\": {\"eps\": 1e-50}}}",
     "train.adam.eps: expected a positive number, got 1e-50", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"adam\": {\"beta1\": 1}}}",
     "train.adam.beta1: expected a number in [0, 1), got 1", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"label_smoothing\": -0.1}}",
     "train.label_smoothing: expected a number in [0, 1), got -0.1", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"dropout_warmup\": -1}}",
     "train.dropout_warmup: expected a non-negative integer, got -1", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"weight_decay_scope\": \"weights\"}}",
     "train.weight_decay_scope: expected one of \"all\", \"matrices\", got \"weights\"",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"parallel\": \"threads\"}}",
     "train.parallel: expected one of \"products\", \"sentences\", \"auto\", got \"threads\"",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"parallel\": \"sentences\", \"precision\": \"bf16\"}}",
     "train.parallel: \"sentences\" runs float32 products and cannot be combined with "
     "train.precision \"bf16\" (use \"products\" or \"auto\")", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"dropout_warmup\": 1.5}}",
     "train.dropout_warmup: expected a non-negative integer, got 1.5", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"clip_norm\": 1e39}}",
     "train.clip_norm: expected a non-negative number up to 3.4028235e+38, got 1e+39", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"max_time_s\": -1}}",
     "train.max_time_s: expected a non-negative number, got -1", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"threads\": -1}}", "train.threads: expected an integer in [0, 1024], got -1",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"keep\": 0}}", "train.keep: expected a positive integer, got 0", TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"out_dir\": \"\"}}", "train.out_dir: expected a non-empty string, got \"\"",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"train\": {\"model\": null}}", "train.model: expected a non-empty string, got null",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"model\": {\"share_embeddings\": 1}}",
     "model.share_embeddings: expected true or false, got 1", TFM_ERR_CONFIG},
    {"{" DATA ", \"decode\": {\"beam\": [4]}}", "decode.beam: expected an integer in [1, 1024], got an array",
     TFM_ERR_CONFIG},
    {"{" DATA_PLUS("\"vocab\": 5") "}", "data.vocab: expected null or a non-empty string, got 5",
     TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": null}}", "data.train_src: expected a non-empty string or a list of them, got null",
     TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\", \"train_src\": 1}}",
     "data.train_src: duplicate key", TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": {\"x\": 1}}}", "data.train_src: expected a non-empty string or a list of them, got an object",
     TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": \"a\", \"train_tgt\": \"b\", \"valid_src\": \"c\"}}",
     "data.valid_tgt: required key missing", TFM_ERR_CONFIG},
    {"{}", "data.train_src: required key missing", TFM_ERR_CONFIG},
    {"{\"data\": {\"max_len\": 040}}", "line 1 column 22: '040' is not a JSON number",
     TFM_ERR_CONFIG},
    {"{\"data\": {\"x\": \"64. \\\" 1.\", \"max_len\": 64.}}",
     "line 1 column 40: '64.' is not a JSON number", TFM_ERR_CONFIG},
    {"{" DATA ", \"decode\": {\"alpha\": 11}}", "decode.alpha: expected a number in [0, 10], got 11",
     TFM_ERR_CONFIG},
    {"{" DATA ", \"decode\": {\"max_len_b\": 2147483647}}",
     "decode.max_len_b: expected an integer in [0, 1000000], got 2147483647", TFM_ERR_CONFIG},
    {"{\"decode\": {\"alpha\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",
     "decode.alpha: expected a non-negative number, got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\"",
     TFM_ERR_CONFIG},
    {"{\"data\": {\"train_src\": \"nope.de\", \"train_tgt\": \"train.en\", \"valid_src\": \"val.de\","
     " \"valid_tgt\": \"val.en\"}}",
     "data.train_src: cannot open %s/nope.de: No such file or directory", TFM_ERR_IO},
    {"{\"data\": {\"train_src\": \"train.de\", \"train_tgt\": \"train.en\", \"valid_src\": \"val.de\","
     " \"valid_tgt\": \"sub\"}}",
     "data.valid_tgt: %s/sub: is a folder, not a file", TFM_ERR_IO},
    {"{" DATA_PLUS("\"vocab\": \"sub\"") "}", "data.vocab: %s/sub: is a folder, not a file", TFM_ERR_IO},
    {"{" DATA_PLUS("\"vocab\": \"vocab.txt\"") "}",
     "data.vocab: cannot open %s/vocab.txt: No such file or directory", TFM_ERR_IO},
};

TEST(config_bad_configs_give_exact_errors)
{
    char *dir = make_dir();
    CHECK(dir != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/x.json", dir);
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const BadCase *bc = &bad_cases[i];
        write_file(path, bc->json, strlen(bc->json));
        char want[1200], tail[1024];
        snprintf(tail, sizeof tail, bc->msg, dir);
        snprintf(want, sizeof want, "%s: %s", path, tail);
        TfmErr err = {0};
        TfmConfig c;
        TfmStatus st = config_load(&c, path, &err);
        if (st != bc->status || strcmp(err.msg, want) != 0)
            test_fail(__FILE__, __LINE__, "case %zu %s\n    got    [%d] %s\n    wanted [%d] %s", i,
                      bc->json, st, err.msg, bc->status, want);
        config_free(&c);    /* harmless after an error */
    }
    remove_dir(dir);
}

/* Files that are not text JSON at all. */
TEST(config_load_odd_files)
{
    char *dir = make_dir();
    CHECK(dir != NULL);
    char path[128], want[256];
    TfmErr err = {0};
    TfmConfig c;

    snprintf(path, sizeof path, "%s/none.json", dir);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    CHECK_STR(err.msg, want);

    /* a config is a regular file, as every named input is (no wait on a FIFO) */
    snprintf(path, sizeof path, "%s/sub", dir);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_IO);
    snprintf(want, sizeof want, "%s: is a folder, not a file", path);
    CHECK_STR(err.msg, want);

    snprintf(path, sizeof path, "%s/nul.json", dir);
    write_file(path, "{\n \"data\":\0}", 12);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_CONFIG);
    snprintf(want, sizeof want, "%s: line 2 column 9: NUL byte in file", path);
    CHECK_STR(err.msg, want);

    snprintf(path, sizeof path, "%s/empty.json", dir);
    write_file(path, "", 0);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_CONFIG);
    snprintf(want, sizeof want, "%s: empty file (expected a JSON object)", path);
    CHECK_STR(err.msg, want);

    /* Deep nesting is cJSON's limit, an error, not a stack overflow. */
    snprintf(path, sizeof path, "%s/deep.json", dir);
    static char deep[20002];
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    write_file(path, deep, 20000);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_CONFIG);
    CHECK(strstr(err.msg, "invalid JSON") != NULL);

    /* Over 1 MiB: refused before parsing. */
    snprintf(path, sizeof path, "%s/big.json", dir);
    static char big[(1 << 20) + 100];
    memset(big, ' ', sizeof big);
    write_file(path, big, sizeof big);
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_FORMAT);
    snprintf(want, sizeof want, "%s: file too large (a config is at most 1048576 bytes)", path);
    CHECK_STR(err.msg, want);

    /* A UTF-8 byte order mark is accepted; columns count from after it. */
    snprintf(path, sizeof path, "%s/bom.json", dir);
    const char *bom = "\xEF\xBB\xBF{" DATA "}";
    write_file(path, bom, strlen(bom));
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_OK);
    config_free(&c);
    const char *bom_bad = "\xEF\xBB\xBF{,}";
    write_file(path, bom_bad, strlen(bom_bad));
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_ERR_CONFIG);
    snprintf(want, sizeof want, "%s: line 1 column 2: invalid JSON near ',}'", path);
    CHECK_STR(err.msg, want);
    remove_dir(dir);
}

TEST(config_paths_resolve_against_config_folder)
{
    char *dir = make_dir();
    CHECK(dir != NULL);
    char path[128], want[256], abs_src[128];
    snprintf(path, sizeof path, "%s/sub/c.json", dir);
    snprintf(abs_src, sizeof abs_src, "%s/train.de", dir);
    char json[1024];
    snprintf(json, sizeof json,
             "{\"data\": {\"train_src\": \"%s\", \"train_tgt\": \"../train.en\", \"valid_src\": \"../val.de\","
             " \"valid_tgt\": \"./../val.en\", \"vocab\": \"vocab.txt\"},"
             " \"train\": {\"out_dir\": \"out/x\", \"model\": \"m.tfm\"}}", abs_src);
    write_file(path, json, strlen(json));
    TfmErr err = {0};
    TfmConfig c;
    CHECK_EQ_INT(config_load(&c, path, &err), TFM_OK);
    if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
    CHECK_STR(c.data.train_src.v[0], abs_src);                /* absolute: kept */
    snprintf(want, sizeof want, "%s/sub/../train.en", dir);
    CHECK_STR(c.data.train_tgt.v[0], want);
    snprintf(want, sizeof want, "%s/sub/./../val.en", dir);
    CHECK_STR(c.data.valid_tgt, want);
    snprintf(want, sizeof want, "%s/sub/vocab.txt", dir);
    CHECK_STR(c.data.vocab, want);
    CHECK_STR(c.train.out_dir, "out/x");                 /* outputs: relative to the cwd */
    CHECK_STR(c.train.model, "m.tfm");

    /* to_json of a resolved config parses again with no base and no file checks. */
    char *out = config_to_json(&c);
    TfmConfig d;
    CHECK(out != NULL);
    CHECK_EQ_INT(config_parse(&d, out, NULL, false, &err), TFM_OK);
    check_same(&c, &d);
    config_free(&d);
    free(out);
    config_free(&c);

    /* A base folder of "/" and one with a trailing slash. */
    const char *rel = "{\"data\": {\"train_src\": \"a\", \"train_tgt\": \"b\", \"valid_src\": \"c\", \"valid_tgt\": \"d\"}}";
    CHECK_EQ_INT(config_parse(&c, rel, "/", false, &err), TFM_OK);
    CHECK_STR(c.data.train_src.v[0], "/a");
    config_free(&c);
    CHECK_EQ_INT(config_parse(&c, rel, "x/y/", false, &err), TFM_OK);
    CHECK_STR(c.data.valid_tgt, "x/y/d");
    config_free(&c);
    remove_dir(dir);
}

/* The number of leaves of `all` (an object tree) missing from `some`; names
 * each on stderr. */
static int missing_leaves(const cJSON *all, const cJSON *some, const char *path)
{
    int missing = 0;
    for (const cJSON *k = all->child; k; k = k->next) {
        char p[256];
        snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", k->string);
        const cJSON *v = some ? cJSON_GetObjectItemCaseSensitive(some, k->string) : NULL;
        if (cJSON_IsObject(k)) missing += missing_leaves(k, cJSON_IsObject(v) ? v : NULL, p);
        else if (!v) {
            fprintf(stderr, "  configs/base.json lacks %s\n", p);
            missing++;
        }
    }
    return missing;
}

/* configs/base.json is the paper's base model on Multi30k, and spells out
 * every key (README and docs/config.md say so). */
TEST(config_base_json_is_the_paper_model)
{
    FILE *f = fopen("configs/base.json", "rb");
    CHECK(f != NULL);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    TfmErr err = {0};
    TfmConfig c, d;
    CHECK_EQ_INT(config_parse(&c, text, "configs", false, &err), TFM_OK);
    if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
    CHECK_STR(c.data.train_src.v[0], "configs/../data/train.de.gz");
    CHECK_STR(c.data.train_tgt.v[0], "configs/../data/train.en.gz");
    CHECK_STR(c.data.valid_src, "configs/../data/val.de.gz");
    CHECK_STR(c.data.valid_tgt, "configs/../data/val.en.gz");
    /* Everything but the data paths is the SPEC default. */
    config_defaults(&d);
    d.data.train_src = (PathList){calloc(1, sizeof(char *)), 1};
    d.data.train_tgt = (PathList){calloc(1, sizeof(char *)), 1};
    d.data.train_src.v[0] = strdup(c.data.train_src.v[0]);
    d.data.train_tgt.v[0] = strdup(c.data.train_tgt.v[0]);
    d.data.valid_src = strdup(c.data.valid_src);
    d.data.valid_tgt = strdup(c.data.valid_tgt);
    check_same(&c, &d);
    char *written = config_to_json(&c);
    cJSON *all = cJSON_Parse(written), *file = cJSON_Parse(text);
    CHECK(all != NULL && file != NULL);
    if (all && file) CHECK_EQ_INT(missing_leaves(all, file, ""), 0);
    cJSON_Delete(all);
    cJSON_Delete(file);
    free(written);
    config_free(&c);
    config_free(&d);
}

TEST(config_check_catches_overrides)
{
    TfmErr err = {0};
    TfmConfig c;
    CHECK_EQ_INT(config_parse(&c, full_json, NULL, false, &err), TFM_OK);
    CHECK_EQ_INT(config_check(&c, &err), TFM_OK);
    c.train.threads = -2;
    CHECK_EQ_INT(config_check(&c, &err), TFM_ERR_CONFIG);
    CHECK_STR(err.msg, "train.threads: expected an integer in [0, 1024], got -2");
    c.train.threads = 0;
    c.train.seed = 9007199254740992ULL;
    CHECK_EQ_INT(config_check(&c, &err), TFM_ERR_CONFIG);
    CHECK_STR(err.msg, "train.seed: expected a non-negative integer up to 9007199254740991, got 9007199254740992");
    c.train.seed = 3;
    c.model.heads = 7;
    CHECK_EQ_INT(config_check(&c, &err), TFM_ERR_CONFIG);
    CHECK_STR(err.msg, "model.heads: 7 heads do not divide model.d_model 96");
    c.model.heads = 8;
    c.model.dropout = 1.0f;
    CHECK_EQ_INT(config_check(&c, &err), TFM_ERR_CONFIG);
    CHECK_STR(err.msg, "model.dropout: expected a number in [0, 1), got 1");
    config_free(&c);
}

/* Every allocation in config_load may fail: the result is NOMEM or OK, never
 * a crash or a leak (the asan build checks the leaks). */
TEST(config_load_survives_allocation_failures)
{
    char *dir = make_dir();
    CHECK(dir != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/x.json", dir);
    const char *json = "{" DATA_PLUS("\"vocab\": \"sub/vocab.txt\"") ", \"train\": {\"out_dir\": \"o\"}}";
    write_file(path, json, strlen(json));
    int ok = 0;
    for (long n = 0; n < 40; n++) {
        TfmErr err = {0};
        TfmConfig c;
        err_fail_alloc_after(n);
        TfmStatus st = config_load(&c, path, &err);
        err_fail_alloc_after(-1);
        CHECK(st == TFM_OK || st == TFM_ERR_NOMEM);
        if (st == TFM_OK) ok++;
        config_free(&c);
        char *s = NULL;
        err_fail_alloc_after(n);
        s = config_to_json(&c);
        err_fail_alloc_after(-1);
        free(s);
    }
    CHECK(ok > 0);
    remove_dir(dir);
}

/* Byte mutations of a valid config (flip, delete, insert JSON punctuation):
 * every result is OK or one clean TFM_ERR_CONFIG line, never a crash. */
TEST(config_mutated_text_never_crashes)
{
    size_t n = strlen(full_json);
    char *buf = malloc(n + 2);
    CHECK(buf != NULL);
    static const char punct[] = "{}[]\",:\\-.e0 \n";
    unsigned long long x = 88172645463325252ULL;     /* xorshift64, fixed seed */
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        size_t at = (size_t)(x % n);
        memcpy(buf, full_json, n + 1);
        switch ((x >> 32) % 3) {
        case 0: buf[at] = punct[(x >> 40) % (sizeof punct - 1)]; break;
        case 1: memmove(buf + at, buf + at + 1, n - at); break;
        default:
            memmove(buf + at + 1, buf + at, n - at + 1);
            buf[at] = punct[(x >> 40) % (sizeof punct - 1)];
        }
        TfmErr err = {0};
        TfmConfig c;
        TfmStatus st = config_parse(&c, buf, NULL, false, &err);
        if (st == TFM_OK) { ok++; config_free(&c); continue; }
        bad++;
        if (st != TFM_ERR_CONFIG || !err.msg[0] || strchr(err.msg, '\n'))
            test_fail(__FILE__, __LINE__, "mutation %d: status %d, message '%s'", iter, st, err.msg);
    }
    CHECK(ok > 0 && bad > 0);
    free(buf);
}

/* The architecture keys come from the schema's F_ARCH: every model.* key
 * carries it (so a key added later is checked on resume without a list to
 * update), and config_arch_diff names each such key that differs with both
 * values, and no other key. */
#include "model/config_schema.h"

/* Puts another valid value into k's field (numbers and enums, bools). */
static bool change_value(TfmConfig *cfg, const KeySpec *k)
{
    void *f = (char *)cfg + k->offset;
    switch (k->type) {
    case K_INT: *(int *)f = *(int *)f > (int)k->min ? (int)k->min : (int)k->min + 1; return true;
    case K_LONG: *(long *)f += 1; return true;
    case K_U64: *(unsigned long long *)f += 1; return true;
    case K_FLOAT: *(float *)f = *(float *)f != 0.25f ? 0.25f : 0.5f; return true;
    case K_DOUBLE: *(double *)f += 1; return true;
    case K_BOOL: *(bool *)f = !*(bool *)f; return true;
    case K_ENUM: *(int *)f = *(int *)f == 0 ? 1 : 0; return true;
    default: return false;
    }
}

TEST(test_config_arch_keys_from_schema)
{
    int n_arch = 0;
    for (int i = 0; i < config_n_keys; i++) {
        const KeySpec *k = &config_schema[i];
        const bool arch = (k->flags & F_ARCH) != 0;
        if (strncmp(k->path, "model.", 6) == 0 && !arch)
            test_fail(__FILE__, __LINE__, "%s: a model key without F_ARCH", k->path);
        n_arch += arch;
        TfmConfig a, b;
        config_defaults(&a);
        config_defaults(&b);
        if (!change_value(&b, k)) {
            config_free(&a);
            config_free(&b);
            continue;
        }
        char diff[256], va[64], vb[64], want[256];
        int n = config_arch_diff(&a, &b, diff, sizeof diff);
        if (arch) {
            config_value_text(va, sizeof va, &a, k);
            config_value_text(vb, sizeof vb, &b, k);
            snprintf(want, sizeof want, "%s %s -> %s", k->path, va, vb);
            CHECK_EQ_INT(n, 1);
            CHECK_STR(diff, want);
            CHECK(strcmp(va, vb) != 0);
        } else {
            if (n != 0) test_fail(__FILE__, __LINE__, "%s is no architecture key: %s", k->path, diff);
        }
        config_free(&a);
        config_free(&b);
    }
    CHECK(n_arch >= 15);   /* the 14 model.* keys and data.max_len */
    /* two at once, in schema order; the text is cut, the count is not */
    TfmConfig a, b;
    config_defaults(&a);
    config_defaults(&b);
    b.model.attention = ATTN_LINEAR;
    b.model.d_model = 256;
    char diff[256], small[12];
    CHECK_EQ_INT(config_arch_diff(&a, &b, diff, sizeof diff), 2);
    CHECK_STR(diff, "model.d_model 512 -> 256, model.attention softmax -> linear");
    CHECK_EQ_INT(config_arch_diff(&a, &b, small, sizeof small), 2);
    CHECK(strlen(small) == sizeof small - 1);
    config_free(&a);
    config_free(&b);
}
