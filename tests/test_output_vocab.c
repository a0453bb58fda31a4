/* test_output_vocab: model.output_vocab "target", the output layer over a
 * subset of the vocabulary. Spelling text in a subset (bpe_subset) keeps it
 * byte for byte; the restricted loss has a correct gradient, equals the
 * unrestricted one bit for bit when the subset is everything, and refuses
 * targets outside it; incremental decoding scores like the forward pass and
 * never writes a piece outside the subset. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "gradcheck.h"
#include "decode/decoder.h"
#include "decode/decoder_internal.h"
#include "model/model.h"
#include "nn/blas.h"
#include "text/bpe_subset.h"
#include "test.h"

/* ---- bpe_subset ---- */

static const char corpus[] =
    "the cat sat on the mat.\n"
    "the dog sat on the log!\n"
    "a cat and a dog, 42 times.\n"
    "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln: \xC3\xBC" "ber 100 B\xC3\xA4ren.\n"
    "the catalogue of the dogs on the mats of K\xC3\xB6ln\n";

static const char *const lines[] = {
    "the cat sat on the mat.", "catalogue dogs K\xC3\xB6ln", "", "  two  spaces ",
    "\xC3\xBC" "ber B\xC3\xA4ren \xE2\x96\x81 marker", "\xE4\xB8\xAD\xE6\x96\x87 \x01\t",
    "the the the thethe catcat",
};
enum { N_LINES = sizeof lines / sizeof *lines };

static Bpe *learn_corpus(void)
{
    char path[] = "/tmp/tfm-ov-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, corpus, sizeof corpus - 1) != (ssize_t)(sizeof corpus - 1)) abort();
    close(fd);
    const char *paths[] = {path};
    Bpe *b = NULL;
    TfmErr err = {0};
    if (bpe_learn(&b, paths, 1, 320, &err) != TFM_OK) fprintf(stderr, "  %s\n", err.msg);
    unlink(path);
    return b;
}

/* Every line spelled in the subset `in`: only its pieces, the same text, and
 * ids the plain encoding had in the subset kept when every piece is in. */
static void check_subset(const Bpe *b, const bool *in, bool all)
{
    TfmErr err = {0};
    BpeSubset *s;
    CHECK(bpe_subset_new(&s, b, in, &err) == TFM_OK);
    int *ids = NULL, n = 0, cap = 0;
    int *plain = NULL, np = 0, pcap = 0;
    char *out = NULL;
    size_t len = 0, ocap = 0;
    for (int i = 0; i < N_LINES; i++) {
        const size_t ln = strlen(lines[i]);
        CHECK(bpe_encode(b, lines[i], ln, &plain, &np, &pcap, &err) == TFM_OK);
        CHECK(bpe_encode(b, lines[i], ln, &ids, &n, &cap, &err) == TFM_OK);
        CHECK(bpe_subset_apply(s, &ids, &n, &cap, &err) == TFM_OK);
        for (int k = 0; k < n; k++) CHECK(bpe_subset_has(s, ids[k]));
        CHECK(n >= np);
        if (all) CHECK(n == np && memcmp(ids, plain, sizeof(int) * (size_t)n) == 0);
        CHECK(bpe_decode(b, ids, n, &out, &len, &ocap, &err) == TFM_OK);
        CHECK(len == ln && memcmp(out, lines[i], ln) == 0);
    }
    free(ids);
    free(plain);
    free(out);
    bpe_subset_free(s);
}

TEST(bpe_subset_spells_text_in_its_pieces)
{
    Bpe *b = learn_corpus();
    CHECK(b != NULL);
    const int V = bpe_vocab_size(b);
    CHECK(V > BPE_MIN_VOCAB + 20);
    bool *in = malloc(sizeof(bool) * (size_t)V);
    for (int v = 0; v < V; v++) in[v] = true;
    check_subset(b, in, true);                         /* everything: nothing changes */
    for (int v = BPE_MIN_VOCAB; v < V; v++) in[v] = false;
    check_subset(b, in, false);                        /* bytes and the marker only */
    Rng rng;
    rng_seed(&rng, 3);
    for (int trial = 0; trial < 20; trial++) {         /* random subsets */
        for (int v = BPE_MIN_VOCAB; v < V; v++) in[v] = rng_uniform(&rng) < 0.5f;
        check_subset(b, in, false);
    }
    /* a subset that cannot spell every text is refused */
    for (int v = 0; v < V; v++) in[v] = true;
    in[4 + 'a'] = false;
    BpeSubset *s = NULL;
    TfmErr err = {0};
    CHECK(bpe_subset_new(&s, b, in, &err) == TFM_ERR_FORMAT);
    CHECK(s == NULL && strstr(err.msg, "missing") != NULL);
    free(in);
    bpe_free(b);
}

/* ---- the model ---- */

enum { OV_V = 280, OV_D = 16 };

/* ids 0..260 and a few pieces above: the targets below use bytes and </s>. */
static int subset_ids(int *ids)
{
    int n = 0;
    for (int v = 0; v < BPE_MIN_VOCAB; v++) ids[n++] = v;
    const int extra[] = {263, 270, 271, 279};
    for (int i = 0; i < 4; i++) ids[n++] = extra[i];
    return n;
}

static ModelConfig ov_cfg(bool restricted)
{
    return (ModelConfig){
        .d_model = OV_D, .heads = 2, .enc_layers = 2, .dec_layers = 2, .d_ff = 32,
        .norm = NORM_POST, .share_embeddings = true, .vocab_size = OV_V, .max_len = 16,
        .output_vocab = restricted ? OUTPUT_TARGET : OUTPUT_ALL,
    };
}

enum { BN = 3, BS = 6, BT = 5 };
static const int b_src[BN * BS] = {
    265, 6, 7, 8, 9, TOK_EOS,
    10, 275, TOK_EOS, TOK_PAD, TOK_PAD, TOK_PAD,
    12, 13, 14, 15, TOK_EOS, TOK_PAD,
};
static const int b_tgt_in[BN * BT] = {
    TOK_BOS, 16, 270, 18, 19,
    TOK_BOS, 4, TOK_PAD, TOK_PAD, TOK_PAD,
    TOK_BOS, 279, 8, 7, TOK_PAD,
};
static const int b_tgt_out[BN * BT] = {
    16, 270, 18, 19, TOK_EOS,
    4, TOK_EOS, TOK_PAD, TOK_PAD, TOK_PAD,
    279, 8, 7, TOK_EOS, TOK_PAD,
};

static Batch ov_batch(void)
{
    return (Batch){.n = BN, .src_len = BS, .tgt_len = BT, .src = b_src, .tgt_in = b_tgt_in,
                   .tgt_out = b_tgt_out};
}

/* A model of ov_cfg with seeded weights and a training workspace. */
static void ov_model(Model *m, bool restricted, const int *ids, int n)
{
    TfmErr err = {0};
    ModelConfig c = ov_cfg(restricted);
    CHECK(model_init(m, &c, &err) == TFM_OK);
    if (restricted) CHECK(model_set_output_vocab(m, ids, n, &err) == TFM_OK);
    Rng rng;
    rng_seed(&rng, 21);
    model_init_weights(m, &rng);
    CHECK(model_alloc_training(m, 64, 16, &err) == TFM_OK);
}

static double ov_obj(void *p)
{
    Model *m = p;
    Batch b = ov_batch();
    LossStats st;
    TfmErr err;
    if (model_forward(m, &b, 0.1f, NULL, &st, &err) != TFM_OK) return NAN;
    return st.loss / (double)st.n_tokens;
}

/* Tolerances as in test_model.c's model_gradcheck_full. Besides a sample of
 * every tensor, the embedding rows of output pieces (their gradient comes
 * back from the gathered rows) and of other pieces are checked whole. */
TEST(output_vocab_gradcheck)
{
    const int threads = omp_get_max_threads();
    blas_set_threads(1);
    int ids[OV_V];
    const int n = subset_ids(ids);
    Model m;
    ov_model(&m, true, ids, n);
    /* FFN biases clear of the ReLU kink, as in test_model.c */
    Rng rng;
    rng_seed(&rng, 5);
    for (int t = 0; t < m.n_tensors; t++) {
        const TensorInfo *ti = &m.tensors[t];
        if (strstr(ti->name, "ffn.b1"))
            for (int j = 0; j < ti->cols; j++)
                m.params[ti->offset + j] = rng_uniform(&rng) < 0.5f ? -4.0f : 4.0f;
    }
    CHECK(isfinite(ov_obj(&m)));
    model_backward(&m);
    float *grads = malloc(sizeof(float) * m.n_params);
    memcpy(grads, m.grads, sizeof(float) * m.n_params);
    GcReport rep = {0};
    for (int t = 0; t < m.n_tensors; t++) {
        const TensorInfo *ti = &m.tensors[t];
        gc_check(&rep, ti->name, m.params + ti->offset, grads + ti->offset,
                 (long)ti->rows * ti->cols, ov_obj, &m, 1e-2f, 1e-4, 2e-2, 48, &rng);
    }
    const TensorInfo *emb = model_tensor(&m, "emb.shared");
    const int rows[] = {270, 279, 16, 263, 265, 275, 272};   /* outputs; inputs only; neither */
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
        const size_t off = emb->offset + (size_t)rows[k] * OV_D;
        gc_check(&rep, "emb row", m.params + off, grads + off, OV_D, ov_obj, &m, 1e-2f, 1e-4,
                 2e-2, OV_D, &rng);
    }
    CHECK_EQ_INT(rep.failed, 0);
    CHECK(rep.checked > 500);
    /* a piece that is neither an output nor an input gets no gradient */
    for (int j = 0; j < OV_D; j++) CHECK(grads[emb->offset + (size_t)272 * OV_D + j] == 0.0f);
    printf("  output vocabulary of %d of %d: %ld checked, max |num - ana| %.2g\n", n, OV_V,
           rep.checked, rep.max_abs);
    free(grads);
    model_free(&m);
    blas_set_threads(threads);
}

/* Every piece an output, through the gathered path: the same loss and
 * gradients, bit for bit, as the plain output layer. */
TEST(output_vocab_all_pieces_equals_unrestricted)
{
    int ids[OV_V];
    for (int v = 0; v < OV_V; v++) ids[v] = v;
    Model a, r;
    ov_model(&a, false, NULL, 0);
    ov_model(&r, true, ids, OV_V);
    CHECK(memcmp(a.params, r.params, sizeof(float) * a.n_params) == 0);
    Batch b = ov_batch();
    LossStats sa, sr;
    TfmErr err = {0};
    CHECK(model_forward(&a, &b, 0.1f, NULL, &sa, &err) == TFM_OK);
    CHECK(model_forward(&r, &b, 0.1f, NULL, &sr, &err) == TFM_OK);
    CHECK(sa.loss == sr.loss && sa.nll == sr.nll && sa.n_correct == sr.n_correct);
    model_backward(&a);
    model_backward(&r);
    CHECK(memcmp(a.grads, r.grads, sizeof(float) * a.n_params) == 0);
    model_free(&a);
    model_free(&r);
}

TEST(output_vocab_refuses_bad_lists_and_targets)
{
    int ids[OV_V];
    const int n = subset_ids(ids);
    Model m;
    TfmErr err = {0};
    ModelConfig all = ov_cfg(false), tgt = ov_cfg(true);
    CHECK(model_init(&m, &all, &err) == TFM_OK);
    CHECK(model_set_output_vocab(&m, ids, n, &err) == TFM_ERR_FORMAT);   /* "all" */
    model_free(&m);
    CHECK(model_init(&m, &tgt, &err) == TFM_OK);
    int bad[OV_V];
    memcpy(bad, ids, sizeof(int) * (size_t)n);
    bad[n - 1] = bad[n - 2];                                             /* repeated */
    CHECK(model_set_output_vocab(&m, bad, n, &err) == TFM_ERR_FORMAT);
    memcpy(bad, ids, sizeof(int) * (size_t)n);
    bad[n - 1] = OV_V;                                                   /* out of range */
    CHECK(model_set_output_vocab(&m, bad, n, &err) == TFM_ERR_FORMAT);
    CHECK(model_set_output_vocab(&m, ids + 1, n - 1, &err) == TFM_ERR_FORMAT);  /* no <pad> */
    CHECK(model_set_output_vocab(&m, ids, 3, &err) == TFM_ERR_FORMAT);   /* no </s> */
    CHECK(m.out_ids == NULL);
    /* a target outside the output vocabulary */
    CHECK(model_set_output_vocab(&m, ids, n - 1, &err) == TFM_OK);       /* without 279 */
    CHECK(model_alloc_training(&m, 64, 16, &err) == TFM_OK);
    Batch b = ov_batch();
    LossStats st;
    CHECK(model_forward(&m, &b, 0.1f, NULL, &st, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "279") != NULL);
    model_free(&m);
}

/* Incremental decoding over the output pieces: its log-probabilities of
 * the targets equal the forward pass's NLL, every other piece has -inf, and
 * beam search writes output pieces only. */
TEST(output_vocab_decoding)
{
    int ids[OV_V];
    const int n = subset_ids(ids);
    Model m;
    ov_model(&m, true, ids, n);
    Batch b = ov_batch();
    LossStats ls;
    TfmErr err = {0};
    CHECK(model_forward(&m, &b, 0.0f, NULL, &ls, &err) == TFM_OK);
    Decoder *d;
    CHECK(decoder_init(&d, &m, BN, 4, &err) == TFM_OK);
    CHECK(decoder_begin(d, b_src, BN, BS, 1, &err) == TFM_OK);
    double nll = 0;
    int prev[BN];
    for (int t = 0; t < BT; t++) {
        for (int s = 0; s < BN; s++) prev[s] = b_tgt_in[s * BT + t];
        const float *lp = decoder_step(d, prev, NULL, t);
        for (int s = 0; s < BN; s++) {
            if (b_tgt_out[s * BT + t] != TOK_PAD) nll -= lp[s * OV_V + b_tgt_out[s * BT + t]];
            CHECK(isinf(lp[s * OV_V + 272]) && lp[s * OV_V + 272] < 0);
            CHECK(isfinite(lp[s * OV_V + 271]));
        }
    }
    CHECK_NEAR(nll, ls.nll, 1e-5 * ls.nll);
    DecodeOptions opt = {.beam = 4, .alpha = 0.6f, .max_len_a = 1.0f, .max_len_b = 6, .nbest = 4};
    Hypothesis hyp[BN * 4];
    CHECK(decoder_run(d, b_src, BN, BS, &opt, hyp, &err) == TFM_OK);
    for (int h = 0; h < BN * 4; h++)
        for (int k = 0; k < hyp[h].len; k++) CHECK(m.out_pos[hyp[h].tokens[k]] >= 0);
    decoder_free(d);
    model_free(&m);
}

/* The search reads a restricted model's output columns (decode/decoder.c); through
 * an ensemble (here: the model with a member of weight 0) it reads them
 * spread over the vocabulary with -inf for the other pieces. Both give
 * the same hypotheses bit for bit, for beam search with its processors and
 * for sampling. */
static bool same_hyps(const Hypothesis *a, const Hypothesis *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].len != b[i].len || memcmp(&a[i].score, &b[i].score, sizeof(float)) != 0 ||
            memcmp(&a[i].logprob, &b[i].logprob, sizeof(float)) != 0 ||
            (a[i].len && memcmp(a[i].tokens, b[i].tokens, sizeof(int) * (size_t)a[i].len)))
            return false;
    return true;
}

TEST(output_vocab_columns_equal_spread)
{
    int ids[OV_V];
    const int n = subset_ids(ids);
    Model m;
    ov_model(&m, true, ids, n);
    /* the pieces above the bytes (their columns are not their ids) made
     * likely, so the outputs use them */
    for (int i = BPE_MIN_VOCAB; i < n; i++)
        for (int j = 0; j < OV_D; j++) ((float *)m.out_proj)[(size_t)ids[i] * OV_D + j] *= 6;
    TfmErr err = {0};
    Decoder *cols, *spread, *zero;
    CHECK(decoder_init(&cols, &m, BN, 4, &err) == TFM_OK);
    CHECK(decoder_init(&spread, &m, BN, 4, &err) == TFM_OK);
    CHECK(decoder_init(&zero, &m, BN, 4, &err) == TFM_OK);
    const float w[2] = {1, 0};
    CHECK(decoder_set_ensemble(spread, &zero, 1, w, &err) == TFM_OK);
    const DecodeOptions opts[] = {
        {.beam = 4, .alpha = 0.6f, .max_len_a = 1.0f, .max_len_b = 6, .nbest = 4},
        {.beam = 3, .max_len_a = 1.0f, .max_len_b = 9, .nbest = 2, .no_repeat_ngram = 1},
        {.beam = 1, .max_len_a = 1.0f, .max_len_b = 8, .nbest = 1, .sample = true,
         .temperature = 1.5f, .top_p = 1.0f, .seed = 5},
        {.beam = 1, .max_len_a = 1.0f, .max_len_b = 8, .nbest = 1, .sample = true,
         .temperature = 0.8f, .top_k = 7, .top_p = 0.9f, .seed = 6},
    };
    int high = 0;
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        Hypothesis a[BN * 4], b[BN * 4];
        CHECK(decoder_run(cols, b_src, BN, BS, &opts[i], a, &err) == TFM_OK);
        CHECK(decoder_run(spread, b_src, BN, BS, &opts[i], b, &err) == TFM_OK);
        CHECK(same_hyps(a, b, BN * opts[i].nbest));
        for (int h = 0; h < BN * opts[i].nbest; h++)
            for (int k = 0; k < a[h].len; k++) high += a[h].tokens[k] >= BPE_MIN_VOCAB;
    }
    CHECK(high > 0);
    decoder_free(spread);
    decoder_free(zero);
    decoder_free(cols);
    model_free(&m);
}

/* The memory check's figure for the packed weights is what packing then
 * allocates, in fp32 and int8, over the whole vocabulary and over the
 * output pieces only: it reads the lists that pack (it once counted int8
 * weights as floats and every piece of the vocabulary). */
TEST(output_vocab_packed_bytes_are_what_packing_holds)
{
    int ids[OV_V];
    const int n = subset_ids(ids);
    size_t figure[2][2];        /* [restricted][int8] */
    for (int restricted = 0; restricted < 2; restricted++)
        for (int int8 = 0; int8 < 2; int8++) {
            /* 600 pieces, 265 of them output ones: the panels differ */
            ModelConfig c = ov_cfg(restricted);
            c.vocab_size = 600;
            Model m;
            TfmErr err = {0};
            CHECK(model_init(&m, &c, &err) == TFM_OK);
            if (restricted) CHECK(model_set_output_vocab(&m, ids, n, &err) == TFM_OK);
            Rng rng;
            rng_seed(&rng, 3);
            model_init_weights(&m, &rng);
            if (int8) model_quantize(&m);
            Decoder *d;
            figure[restricted][int8] = dec_step_packed_bytes(&m);
            CHECK(decoder_init(&d, &m, BN, 4, &err) == TFM_OK);
            CHECK_EQ_INT(dec_step_packed_held(&d->step), figure[restricted][int8]);
            decoder_free(d);
            model_free(&m);
        }
    /* int8 weights take a byte, not four (counted as floats, int8's figure
     * would pass fp32's); not half: at this size the float scales, biases
     * and panel padding are a large share, and int8 came to 0.51 of fp32 on
     * AVX2 (8-wide fp32 panels). Fewer pieces, fewer rows. */
    CHECK(figure[0][1] * 3 < figure[0][0] * 2 && figure[1][1] * 3 < figure[1][0] * 2);
    CHECK(figure[1][0] < figure[0][0] && figure[1][1] < figure[0][1]);
}
