/* Tests for decode/batch.h, the one batch path of translate and serve: a
 * line's translations in a batch are those of the line decoded alone (text,
 * scores, how many of its n-best finished), whatever blank and skipped
 * lines stand around it; a blank line gives one empty translation; a
 * skipped line none; sampling seeds each line by its number. */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/batch.h"
#include "model/config.h"
#include "model/model.h"

static const char corpus[] =
    "ein hund läuft durch den schnee\nzwei männer stehen vor einem haus\n"
    "eine frau liest ein buch im park\nkinder spielen am strand mit einem ball\n"
    "ein mann fährt fahrrad auf der straße\n";

enum { CAP = 6, BEAM = 3 };

/* A pipeline over an untrained model (its translations are noise, but
 * deterministic noise) and a vocabulary learnt from corpus. */
static void make_pipeline(Pipeline *p)
{
    memset(p, 0, sizeof *p);
    TfmErr err = {0};
    char path[] = "/tmp/tfm-batch-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, corpus, sizeof corpus - 1) == (ssize_t)(sizeof corpus - 1));
    close(fd);
    const char *paths[] = {path};
    TfmStatus st = bpe_learn(&p->mf.bpe, paths, 1, 300, &err);
    unlink(path);
    CHECK(st == TFM_OK);
    ModelConfig c = {.d_model = 16, .heads = 2, .enc_layers = 1, .dec_layers = 1, .d_ff = 32,
                     .norm = NORM_PRE, .share_embeddings = true,
                     .vocab_size = bpe_vocab_size(p->mf.bpe), .max_len = 12};
    CHECK(model_init(&p->mf.model, &c, &err) == TFM_OK);
    Rng rng;
    rng_seed(&rng, 5);
    model_init_weights(&p->mf.model, &rng);
    p->max_src = config_max_sentence(c.max_len);
    CHECK(decoder_init(&p->dec, &p->mf.model, CAP, BEAM, &err) == TFM_OK);
}

static void free_pipeline(Pipeline *p)
{
    decoder_free(p->dec);
    model_free(&p->mf.model);
    bpe_free(p->mf.bpe);
}

static DecodeOptions beam_options(void)
{
    return (DecodeOptions){.beam = BEAM, .nbest = BEAM, .alpha = 0.6f, .max_len_a = 1.0f,
                           .max_len_b = 4, .top_p = 1.0f, .temperature = 1.0f};
}

/* Line `text` decoded alone: its hypothesis h as text in *out (NULL: none). */
static void alone(Pipeline *p, const char *text, const DecodeOptions *opt, long id, int h,
                  char **out, float *logprob, float *score)
{
    TfmErr err = {0};
    int *ids = NULL, n = 0, cap = 0;
    CHECK(pipeline_encode(p, text, strlen(text), &ids, &n, &cap, NULL, &err) == TFM_OK);
    CHECK(n > 0);
    Hypothesis hyps[BEAM];
    DecodeOptions o = *opt;
    o.sentence_ids = &id;
    const int *sents[] = {ids};
    CHECK(decoder_translate(p->dec, sents, &n, 1, &o, hyps, &err) == TFM_OK);
    *out = NULL;
    if (hyps[h].tokens || h == 0) {
        size_t len = 0, tcap = 0;
        CHECK(pipeline_text(p, &hyps[h], out, &len, &tcap, &err) == TFM_OK);
        *logprob = hyps[h].logprob;
        *score = hyps[h].score;
    }
    free(ids);
}

/* Every hypothesis of line i of b is line `text`'s alone. */
static void check_like_alone(Pipeline *p, const LineBatch *b, int i, const char *text,
                             const DecodeOptions *opt, long id)
{
    for (int h = 0; h < opt->nbest; h++) {
        char *want;
        float lp = 0, sc = 0;
        alone(p, text, opt, id, h, &want, &lp, &sc);
        const BatchResult *r = line_batch_result(b, i, h);
        CHECK((r == NULL) == (want == NULL));
        if (r) {
            CHECK_STR(r->text, want);
            CHECK_EQ_INT(r->len, strlen(want));
            CHECK(r->logprob == lp && r->score == sc);
        }
        free(want);
    }
}

TEST(test_batch_lines_translate_as_alone)
{
    Pipeline p;
    make_pipeline(&p);
    TfmErr err = {0};
    LineBatch b;
    CHECK(line_batch_init(&b, &p, CAP, BEAM, &err) == TFM_OK);
    const char *lines[CAP] = {"ein hund läuft", "", "zwei männer stehen vor einem haus", " \t",
                              "eine frau", "kinder spielen"};
    const DecodeOptions opt = beam_options();
    for (int round = 0; round < 2; round++) {   /* the second reuses every buffer */
        for (int i = 0; i < CAP; i++)
            CHECK(line_batch_set(&b, i, lines[i], strlen(lines[i]), &err) == TFM_OK);
        if (round == 1) line_batch_skip(&b, 4);
        CHECK(line_batch_translate(&b, CAP, &opt, 0, &err) == TFM_OK);
        long long src = 0, out = 0;
        for (int i = 0; i < CAP; i++) {
            const bool blank = i == 1 || i == 3, skipped = round == 1 && i == 4;
            CHECK(line_batch_blank(&b, i) == blank);
            if (blank) {
                const BatchResult *r = line_batch_result(&b, i, 0);
                CHECK(r && r->len == 0 && r->text[0] == '\0' && r->logprob == 0 && r->score == 0);
                CHECK(line_batch_result(&b, i, 1) == NULL);
            } else if (skipped) {
                for (int h = 0; h < BEAM; h++) CHECK(line_batch_result(&b, i, h) == NULL);
            } else {
                check_like_alone(&p, &b, i, lines[i], &opt, i);
                src += b.lines[i].n;
                out += line_batch_result(&b, i, 0)->tokens;
            }
        }
        CHECK_EQ_INT(b.src_tokens, src);
        CHECK_EQ_INT(b.out_tokens, out);
    }
    /* a batch of blank lines decodes nothing */
    CHECK(line_batch_set(&b, 0, "", 0, &err) == TFM_OK);
    CHECK(line_batch_translate(&b, 1, &opt, 0, &err) == TFM_OK);
    CHECK(line_batch_blank(&b, 0) && b.src_tokens == 0);
    /* more hypotheses than it was made for, or more lines, are refused */
    DecodeOptions big = opt;
    big.nbest = big.beam = BEAM + 1;
    CHECK(line_batch_translate(&b, 1, &big, 0, &err) == TFM_ERR_USAGE);
    CHECK(line_batch_translate(&b, CAP + 1, &opt, 0, &err) == TFM_ERR_USAGE);
    CHECK(line_batch_result(&b, 0, 0) == NULL);
    line_batch_free(&b);
    free_pipeline(&p);
}

TEST(test_batch_sampling_seeds_by_line_number)
{
    Pipeline p;
    make_pipeline(&p);
    TfmErr err = {0};
    LineBatch b;
    CHECK(line_batch_init(&b, &p, CAP, 1, &err) == TFM_OK);
    DecodeOptions opt = beam_options();
    opt.beam = opt.nbest = 1;
    opt.sample = true;
    opt.seed = 3;
    const char *lines[] = {"ein hund", "", "ein hund", "eine frau liest"};
    for (int i = 0; i < 4; i++)
        CHECK(line_batch_set(&b, i, lines[i], strlen(lines[i]), &err) == TFM_OK);
    CHECK(line_batch_translate(&b, 4, &opt, 100, &err) == TFM_OK);
    for (int i = 0; i < 4; i++)
        if (i != 1) check_like_alone(&p, &b, i, lines[i], &opt, 100 + i);
    line_batch_free(&b);
    free_pipeline(&p);
}
