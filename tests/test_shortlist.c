/* Tests for the vocabulary shortlist: the counts on a small corpus against
 * hand-made ones; the file's round trip and its refusals (another
 * vocabulary, damage); the product over a selection of columns and the
 * per-group log-softmax, bit for bit against the full ones; and decoding
 * with a shortlist: every piece equals no shortlist, bit for bit, and a
 * line translates the same alone, in a batch, on 1 or 2 threads, fp32 and
 * int8; a self-ensemble with a shortlist as the model alone with it; the
 * estimate of the mass outside a line's candidates. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "base/rng.h"
#include "decode/decoder.h"
#include "decode/shortlist.h"
#include "decode/shortlist_rest.h"
#include "model/model.h"
#include "nn/blas.h"
#include "nn/layers.h"
#include "nn/packed_linear.h"

/* ---- the mass outside the candidates (shortlist_rest) ---- */

/* The rest's mean and variance are exact: the normalized row equals
 * z - log(Σ_C e^z + n·e^(μ + σ²/2)) with the rest's moments taken from the
 * full product; and with normally distributed logits (random normal
 * weights: x·w_v is normal over v) the estimated mass is the true one to a
 * few percent. In int8 the logits are of quantized inputs and the moments of
 * the float ones: close, not exact. */
static void check_rest(bool int8)
{
    enum { D = 16, OUT = 3000, K = 3, W = 40 };
    static float w[OUT * D], x[K * D], full[K * OUT], y[K * W], gx[K * D];
    Rng rng;
    rng_seed(&rng, 11);
    for (int i = 0; i < OUT * D; i++) w[i] = (float)rng_normal(&rng) * 0.25f + 0.1f;
    for (int i = 0; i < K * D; i++) x[i] = (float)rng_normal(&rng);
    PackedLinear p;
    ShortlistRest r;
    TfmErr err = {0};
    CHECK((int8 ? packed_linear_init_int8 : packed_linear_init)(&p, w, NULL, NULL, D, OUT, &err) ==
          TFM_OK);
    CHECK(shortlist_rest_init(&r, &p, OUT, D, &err) == TFM_OK);
    packed_linear_forward(&p, full, x, K, 0);
    int cols[W];
    unsigned char is_cand[OUT] = {0};
    for (int j = 0; j < W; j++) {
        cols[j] = (int)(j * 71 + 5) % OUT;
        is_cand[cols[j]] = 1;
    }
    for (int i = 0; i < K; i++)
        for (int j = 0; j < W; j++) y[i * W + j] = full[i * OUT + cols[j]];
    shortlist_rest_project(&r, gx, x, K);
    shortlist_rest_normalize(&r, y, W, x, K, gx);
    for (int i = 0; i < K; i++) {
        const float *f = full + i * OUT;
        double m = 0, v = 0, cands = 0, rest = 0;
        for (int c = 0; c < OUT; c++)
            if (!is_cand[c]) m += f[c];
        m /= OUT - W;
        for (int c = 0; c < OUT; c++) {
            if (is_cand[c]) cands += exp(f[c]);
            else {
                v += (f[c] - m) * (f[c] - m);
                rest += exp(f[c]);
            }
        }
        v /= OUT - W;
        const double lse = log(cands + (OUT - W) * exp(m + v / 2));
        for (int j = 0; j < W; j++) CHECK_NEAR(y[i * W + j], f[cols[j]] - lse, (int8 ? 2e-3 : 2e-4) * (1 + fabs(lse)));
        /* the estimate against the true rest */
        CHECK_NEAR(log((OUT - W) * exp(m + v / 2)), log(rest), 0.05);
    }
    shortlist_rest_free(&r);
    packed_linear_free(&p);
}

TEST(test_shortlist_rest_moments)
{
    check_rest(false);
    check_rest(true);
}

/* ---- counting ---- */

static const char *src_text = "cat dog\ncat\ndog sun\ncat cat\n";
static const char *tgt_text = "katze hund\nkatze\nhund sonne\nkatze katze hund\n";

/* A vocabulary in which every word of the corpus is one piece. */
static Bpe *word_vocab(const char *extra)
{
    char text[8192] = "";
    for (int i = 0; i < 30; i++) {
        strcat(text, src_text);
        strcat(text, tgt_text);
        strcat(text, extra);
    }
    const char *paths[] = {test_write_file("vocab_corpus.txt", text)};
    Bpe *b = NULL;
    TfmErr err = {0};
    if (bpe_learn(&b, paths, 1, 340, &err) != TFM_OK) return NULL;
    return b;
}

static int word_id(const Bpe *b, const char *w)
{
    int *ids = NULL, n = 0, cap = 0;
    TfmErr err = {0};
    if (bpe_encode(b, w, strlen(w), &ids, &n, &cap, &err) != TFM_OK || n != 1) n = -1;
    const int id = n == 1 ? ids[0] : -1;
    free(ids);
    return id;
}

/* s's list in sl, as ids. */
static int list_of(const Shortlist *sl, int s, int *out)
{
    const int n = sl->start[s + 1] - sl->start[s];
    memcpy(out, sl->list + sl->start[s], sizeof(int) * (size_t)n);
    return n;
}

/* Model 1 the plain way, as the reference: dense p(t | s) over the
 * vocabulary, NULL as row 0, EM rounds over the corpus of word lines. */
static void model1_reference(const Bpe *b, const char *src, const char *tgt, int rounds, double *p)
{
    const int V = bpe_vocab_size(b);
    int ids[2][4][4], len[2][4] = {{0}};
    const char *text[2] = {src, tgt};
    for (int side = 0; side < 2; side++) {
        char buf[256];
        strcpy(buf, text[side]);
        int line = 0;
        for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"), line++) {
            char w[64];
            int at = 0, used;
            while (sscanf(l + at, "%63s%n", w, &used) == 1) {
                ids[side][line][len[side][line]++] = word_id(b, w);
                at += used;
            }
        }
    }
    for (int i = 0; i < V * V; i++) p[i] = 1.0;     /* pairs that never meet get no mass */
    double *e = calloc((size_t)V * V, sizeof *e);
    for (int r = 0; r < rounds; r++) {
        memset(e, 0, sizeof(double) * (size_t)V * V);
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < len[1][q]; j++) {
                const int t = ids[1][q][j];
                double z = p[t];
                for (int i = 0; i < len[0][q]; i++) z += p[ids[0][q][i] * V + t];
                e[t] += p[t] / z;
                for (int i = 0; i < len[0][q]; i++) e[ids[0][q][i] * V + t] += p[ids[0][q][i] * V + t] / z;
            }
        for (int s = 0; s < V; s++) {
            double tot = 0;
            for (int t = 0; t < V; t++) tot += e[s * V + t];
            for (int t = 0; t < V; t++) p[s * V + t] = tot > 0 ? e[s * V + t] / tot : 0;
        }
    }
    free(e);
}

TEST(test_shortlist_model1_by_hand)
{
    Bpe *b = word_vocab("");
    CHECK(b != NULL);
    const int cat = word_id(b, "cat"), dog = word_id(b, "dog");
    const int katze = word_id(b, "katze"), hund = word_id(b, "hund");
    /* "cat dog" -> "katze hund", "dog" -> "hund": co-occurrence ties cat
     * with katze and hund (1 each). By hand, round 1: every z of pair 1 is
     * 3 (NULL, cat, dog at p = 1), pair 2's is 2, so p(katze | cat) =
     * p(hund | cat) = 1/2, p(hund | dog) = 5/7, p_NULL(hund) = 5/7; round
     * 2: e(cat, katze) = 0.5 / (2/7 + 1/2 + 2/7) = 0.467 against e(cat,
     * hund) = 0.5 / (5/7 + 1/2 + 5/7) = 0.259: dog explains hund, and cat
     * goes to katze whatever the ids. */
    char src[4096], tgt[4096];
    strcpy(src, test_write_file("m1.src", "cat dog\ndog\n"));
    strcpy(tgt, test_write_file("m1.tgt", "katze hund\nhund\n"));
    Shortlist sl;
    TfmErr err = {0};
    CHECK(shortlist_build(&sl, b, src, tgt, 2, 0, &err) == TFM_OK);
    int l[8];
    CHECK_EQ_INT(list_of(&sl, cat, l), 2);
    CHECK_EQ_INT(l[0], katze);
    CHECK_EQ_INT(l[1], hund);
    CHECK_EQ_INT(list_of(&sl, dog, l), 2);
    CHECK_EQ_INT(l[0], hund);
    shortlist_free(&sl);
    bpe_free(b);
}

TEST(test_shortlist_counts_by_hand)
{
    Bpe *b = word_vocab("");
    CHECK(b != NULL);
    const int cat = word_id(b, "cat"), dog = word_id(b, "dog"), sun = word_id(b, "sun");
    const int katze = word_id(b, "katze"), hund = word_id(b, "hund"), sonne = word_id(b, "sonne");
    CHECK(cat > 0 && dog > 0 && sun > 0 && katze > 0 && hund > 0 && sonne > 0);
    char src[4096], tgt[4096];
    strcpy(src, test_write_file("sl.src", src_text));
    strcpy(tgt, test_write_file("sl.tgt", tgt_text));
    /* By hand: target occurrences katze 4, hund 3, sonne 1, so the one
     * frequent piece is katze. The lists' order is Model 1's after its 5
     * rounds, from the dense reference: sun never meets katze, cat never
     * sonne, so those are not listed at all. */
    const int V = bpe_vocab_size(b);
    double *p = malloc(sizeof(double) * (size_t)V * V);
    model1_reference(b, src_text, tgt_text, 5, p);
    Shortlist sl;
    TfmErr err = {0};
    CHECK(shortlist_build(&sl, b, src, tgt, 3, 1, &err) == TFM_OK);
    CHECK_EQ_INT(sl.n_frequent, 1);
    CHECK_EQ_INT(sl.frequent[0], katze);
    const int words[3] = {cat, dog, sun}, others[2] = {hund, sonne};
    for (int w = 0; w < 3; w++) {
        int l[8], want[2], m = 0;
        for (int i = 0; i < 2; i++)
            if (p[words[w] * V + others[i]] > 0) want[m++] = others[i];
        if (m == 2 && (p[words[w] * V + want[1]] > p[words[w] * V + want[0]] ||
                       (p[words[w] * V + want[1]] == p[words[w] * V + want[0]] && want[1] < want[0]))) {
            const int x = want[0];
            want[0] = want[1];
            want[1] = x;
        }
        CHECK_EQ_INT(list_of(&sl, words[w], l), m);
        for (int i = 0; i < m; i++) CHECK_EQ_INT(l[i], want[i]);
    }
    CHECK_EQ_INT(list_of(&sl, cat, (int[8]){0}), 1);     /* hund only: cat never meets sonne */
    CHECK_EQ_INT(list_of(&sl, katze, (int[8]){0}), 0);   /* a target word is no source piece here */
    shortlist_free(&sl);
    free(p);

    /* --frequent of the vocabulary's size: every piece but the specials,
     * the counted ones first */
    CHECK(shortlist_build(&sl, b, src, tgt, 5, V, &err) == TFM_OK);
    CHECK_EQ_INT(sl.n_frequent, V - 4);
    CHECK_EQ_INT(sl.frequent[0], katze);
    CHECK_EQ_INT(sl.frequent[1], hund);
    CHECK_EQ_INT(sl.frequent[2], sonne);
    CHECK_EQ_INT(sl.start[V], 0);                /* nothing left to list */
    shortlist_free(&sl);

    /* sides of different lengths */
    const char *short_tgt = test_write_file("sl.short", "katze\n");
    CHECK(shortlist_build(&sl, b, src, short_tgt, 2, 1, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "has 4 lines") && strstr(err.msg, "has 1"));
    bpe_free(b);
}

TEST(test_shortlist_file_round_trip_and_refusals)
{
    Bpe *b = word_vocab(""), *other = word_vocab("zebra\n");
    CHECK(b && other);
    char src[4096], tgt[4096], path[4096];
    strcpy(src, test_write_file("sl.src", src_text));
    strcpy(tgt, test_write_file("sl.tgt", tgt_text));
    snprintf(path, sizeof path, "%s/x.sl", test_tmpdir());
    Shortlist sl, back;
    TfmErr err = {0};
    CHECK(shortlist_build(&sl, b, src, tgt, 2, 1, &err) == TFM_OK);
    CHECK(shortlist_save(&sl, path, &err) == TFM_OK);
    CHECK(shortlist_load(&back, path, b, &err) == TFM_OK);
    CHECK_EQ_INT(back.vocab, sl.vocab);
    CHECK_EQ_INT(back.n_frequent, sl.n_frequent);
    CHECK(memcmp(back.start, sl.start, sizeof(int) * ((size_t)sl.vocab + 1)) == 0);
    CHECK(memcmp(back.list, sl.list, sizeof(int) * (size_t)sl.start[sl.vocab]) == 0);
    CHECK(memcmp(back.frequent, sl.frequent, sizeof(int) * (size_t)sl.n_frequent) == 0);
    shortlist_free(&back);

    /* another vocabulary */
    CHECK(shortlist_load(&back, path, other, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "a shortlist for another vocabulary") != NULL);

    /* every single byte changed is refused, never read past */
    char *raw = test_read_file(path);
    CHECK(raw != NULL);
    const size_t len = 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 * ((size_t)sl.n_frequent + (size_t)sl.vocab +
                                                        (size_t)sl.start[sl.vocab]) + 8;
    for (size_t i = 0; i < len; i += 7) {
        raw[i] ^= 0x20;
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(raw, 1, len, f) == len && fclose(f) == 0);
        CHECK(shortlist_load(&back, path, b, &err) == TFM_ERR_FORMAT);
        CHECK(strstr(err.msg, "not a tfm shortlist") || strstr(err.msg, "damaged") ||
              strstr(err.msg, "version"));
        raw[i] ^= 0x20;
    }
    /* cut short */
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(raw, 1, len / 2, f) == len / 2 && fclose(f) == 0);
    CHECK(shortlist_load(&back, path, b, &err) == TFM_ERR_FORMAT);
    CHECK(strstr(err.msg, "damaged shortlist") != NULL);
    free(raw);
    shortlist_free(&sl);
    bpe_free(b);
    bpe_free(other);
}

/* ---- the kernels ---- */

static void check_select(bool int8)
{
    enum { IN = 37, OUT = 101, N = 9 };
    static float w[OUT * IN], b[OUT], x[N * IN], full[N * OUT], sub[N * OUT];
    Rng rng;
    rng_seed(&rng, 3);
    for (int i = 0; i < OUT * IN; i++) w[i] = rng_uniform(&rng) - 0.5f;
    for (int i = 0; i < OUT; i++) b[i] = rng_uniform(&rng) - 0.5f;
    for (int i = 0; i < N * IN; i++) x[i] = rng_uniform(&rng) - 0.5f;
    PackedLinear p, s;
    TfmErr err = {0};
    CHECK((int8 ? packed_linear_init_int8 : packed_linear_init)(&p, w, NULL, b, IN, OUT, &err) ==
          TFM_OK);
    CHECK(packed_linear_init_like(&s, &p, OUT, &err) == TFM_OK);
    packed_linear_forward(&p, full, x, N, 0);
    /* several selections in turn (each call refills s), down to one column */
    const int sizes[] = {OUT, 40, 33, 1, 65};
    int cols[OUT];
    for (int t = 0; t < 5; t++) {
        const int n = sizes[t];
        for (int j = 0, c = t; j < n; j++, c = (c + 1 + (int)rng_below(&rng, 2)) % OUT) cols[j] = c;
        packed_linear_select(&s, &p, cols, n);
        packed_linear_forward(&s, sub, x, N, 0);
        for (int r = 0; r < N; r++)
            for (int j = 0; j < n; j++)
                CHECK(memcmp(&sub[r * n + j], &full[r * OUT + cols[j]], sizeof(float)) == 0);
    }
    packed_linear_free(&s);
    packed_linear_free(&p);
}

TEST(test_packed_select_same_bits)
{
    check_select(false);
    check_select(true);
}

/* packed_linear_forward_ld: rows ldy apart give the bits of the packed
 * rows, and the gaps between them are left alone (a shortlist writes a
 * sentence's own columns after its shared ones). */
static void check_strided(bool int8)
{
    enum { IN = 37, OUT = 45, N = 7, LD = 60 };
    static float w[OUT * IN], b[OUT], x[N * IN], packed[N * OUT], strided[N * LD];
    Rng rng;
    rng_seed(&rng, 5);
    for (int i = 0; i < OUT * IN; i++) w[i] = rng_uniform(&rng) - 0.5f;
    for (int i = 0; i < OUT; i++) b[i] = rng_uniform(&rng) - 0.5f;
    for (int i = 0; i < N * IN; i++) x[i] = rng_uniform(&rng) - 0.5f;
    PackedLinear p;
    TfmErr err = {0};
    CHECK((int8 ? packed_linear_init_int8 : packed_linear_init)(&p, w, NULL, b, IN, OUT, &err) ==
          TFM_OK);
    packed_linear_forward(&p, packed, x, N, 0);
    for (int i = 0; i < N * LD; i++) strided[i] = 123.0f;
    packed_linear_forward_ld(&p, strided, LD, x, N, 0);
    for (int r = 0; r < N; r++) {
        CHECK(memcmp(&strided[r * LD], &packed[r * OUT], sizeof(float) * OUT) == 0);
        for (int j = OUT; j < LD; j++) CHECK(strided[r * LD + j] == 123.0f);
    }
    packed_linear_free(&p);
}

TEST(test_packed_forward_strided_same_bits)
{
    check_strided(false);
    check_strided(true);
}

/* ---- decoding ---- */

enum { V = 40, MAXLEN = 12, NSENT = 7, BEAM = 3 };

static void random_model(Model *m, uint64_t seed)
{
    ModelConfig c = {.d_model = 32, .heads = 4, .enc_layers = 2, .dec_layers = 2, .d_ff = 48,
                     .norm = NORM_PRE, .share_embeddings = true, .vocab_size = V,
                     .max_len = MAXLEN};
    TfmErr err = {0};
    CHECK(model_init(m, &c, &err) == TFM_OK);
    Rng rng;
    rng_seed(&rng, seed);
    model_init_weights(m, &rng);
    /* larger output weights: sharper, varied distributions */
    float *e = m->params + (m->emb_tgt - m->params);
    for (long i = 0; i < (long)V * c.d_model; i++) e[i] *= 6.0f;
}

static int sources(int *src, int *lens)
{
    Rng rng;
    rng_seed(&rng, 21);
    int S = 0;
    for (int b = 0; b < NSENT; b++) {
        lens[b] = 1 + (int)rng_below(&rng, 6);
        if (lens[b] + 1 > S) S = lens[b] + 1;
    }
    memset(src, 0, sizeof(int) * NSENT * S);
    for (int b = 0; b < NSENT; b++) {
        for (int i = 0; i < lens[b]; i++) src[b * S + i] = 4 + (int)rng_below(&rng, V - 4);
        src[b * S + lens[b]] = TOK_EOS;
    }
    return S;
}

/* A shortlist of V pieces: frequent the first n_freq after the specials;
 * source piece s lists k pieces from a fixed pattern. */
static void make_shortlist(Shortlist *sl, int n_freq, int k)
{
    sl->vocab = V;
    sl->top_k = k;
    sl->n_frequent = n_freq;
    sl->frequent = malloc(sizeof(int) * (size_t)(n_freq + 1));
    sl->start = malloc(sizeof(int) * (V + 1));
    sl->list = malloc(sizeof(int) * (size_t)(V * k + 1));
    for (int i = 0; i < n_freq; i++) sl->frequent[i] = 4 + i;
    int at = 0;
    for (int s = 0; s < V; s++) {
        sl->start[s] = at;
        for (int j = 0; s >= 4 && j < k; j++) sl->list[at++] = 4 + (s * 7 + j * 5) % (V - 4);
    }
    sl->start[V] = at;
}

typedef struct {
    int tok[NSENT * BEAM][MAXLEN + 1], len[NSENT * BEAM];
    float score[NSENT * BEAM], lp[NSENT * BEAM];
} Out;

/* Sentences [b0, b0 + n) of src decoded together into o (their slots). */
static void run(Decoder *d, const int *src, int S, int b0, int n, int beam, int nbest, Out *o)
{
    DecodeOptions opt = {.beam = beam, .alpha = 0.6f, .max_len_a = 1.5f, .max_len_b = 3,
                         .nbest = nbest, .top_p = 1, .temperature = 1};
    Hypothesis h[NSENT * BEAM];
    TfmErr err = {0};
    CHECK(decoder_run(d, src + (size_t)b0 * S, n, S, &opt, h, &err) == TFM_OK);
    for (int i = 0; i < n * nbest; i++) {
        const int slot = b0 * nbest + i;
        o->len[slot] = h[i].len;
        memcpy(o->tok[slot], h[i].tokens, sizeof(int) * (size_t)h[i].len);
        o->score[slot] = h[i].score;
        o->lp[slot] = h[i].logprob;
    }
}

static void check_same(const Out *a, const Out *b, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(a->len[i], b->len[i]);
        CHECK(memcmp(a->tok[i], b->tok[i], sizeof(int) * (size_t)a->len[i]) == 0);
        CHECK(memcmp(&a->score[i], &b->score[i], sizeof(float)) == 0);
        CHECK(memcmp(&a->lp[i], &b->lp[i], sizeof(float)) == 0);
    }
}

/* Whether piece t is one of the candidates of the line src (len pieces). */
static bool is_candidate(const Shortlist *sl, const int *src, int len, int t)
{
    if (t < 4 + sl->n_frequent) return true;
    for (int j = 0; j < len; j++)
        for (int e = sl->start[src[j]]; e < sl->start[src[j] + 1]; e++)
            if (sl->list[e] == t) return true;
    return false;
}

static void check_decoding(bool int8)
{
    Model m;
    random_model(&m, 5);
    if (int8) model_quantize(&m);
    int src[NSENT * MAXLEN], lens[NSENT];
    const int S = sources(src, lens);
    Decoder *plain, *full, *some;
    TfmErr err = {0};
    CHECK(decoder_init(&plain, &m, NSENT, BEAM, &err) == TFM_OK);
    CHECK(decoder_init(&full, &m, NSENT, BEAM, &err) == TFM_OK);
    CHECK(decoder_init(&some, &m, NSENT, BEAM, &err) == TFM_OK);
    Shortlist all, few;
    make_shortlist(&all, V - 4, 1);     /* every piece */
    make_shortlist(&few, 20, 3);
    CHECK(decoder_set_shortlist(full, &all, &err) == TFM_OK);
    CHECK(decoder_set_shortlist(some, &few, &err) == TFM_OK);
    static Out a, b, c;
    for (int beam = 1; beam <= BEAM; beam += BEAM - 1) {
        const int nbest = beam;
        /* every piece: the same bits as no shortlist */
        run(plain, src, S, 0, NSENT, beam, nbest, &a);
        run(full, src, S, 0, NSENT, beam, nbest, &b);
        check_same(&a, &b, NSENT * nbest);
        /* a real shortlist: alone = in the batch = on two threads */
        run(some, src, S, 0, NSENT, beam, nbest, &b);
        for (int i = 0; i < NSENT; i++) run(some, src, S, i, 1, beam, nbest, &c);
        check_same(&b, &c, NSENT * nbest);
        const int threads = omp_get_max_threads();
        blas_set_threads(threads == 1 ? 2 : 1);
        run(some, src, S, 0, NSENT, beam, nbest, &c);
        blas_set_threads(threads);
        check_same(&b, &c, NSENT * nbest);
        /* the guard: greedy's tokens are always the plain ones; a line
         * outside its candidates is one the guard gave the whole output */
        const long was = decoder_lines_guarded(some);
        run(some, src, S, 0, NSENT, beam, nbest, &b);
        const long guarded = decoder_lines_guarded(some) - was;
        int outside = 0;
        for (int s = 0; s < NSENT; s++) {
            for (int i = 0; i < b.len[s * nbest]; i++)
                if (!is_candidate(&few, src + s * S, lens[s], b.tok[s * nbest][i])) {
                    outside++;
                    break;
                }
            if (beam == 1) {
                CHECK_EQ_INT(a.len[s], b.len[s]);
                CHECK(memcmp(a.tok[s], b.tok[s], sizeof(int) * (size_t)a.len[s]) == 0);
            }
        }
        CHECK(guarded > 0 && guarded < NSENT);
        CHECK(outside <= guarded);
    }
    /* an ensemble of the model with itself, with the shortlist: as alone */
    Decoder *ens, *member;
    CHECK(decoder_init(&ens, &m, NSENT, BEAM, &err) == TFM_OK);
    CHECK(decoder_init(&member, &m, NSENT, BEAM, &err) == TFM_OK);
    CHECK(decoder_set_ensemble(ens, &member, 1, NULL, &err) == TFM_OK);
    CHECK(decoder_set_shortlist(ens, &few, &err) == TFM_OK);
    run(some, src, S, 0, NSENT, BEAM, BEAM, &b);
    run(ens, src, S, 0, NSENT, BEAM, BEAM, &c);
    check_same(&b, &c, NSENT * BEAM);
    decoder_free(ens);
    decoder_free(member);
    /* too few candidates for the beam: refused */
    Shortlist tiny;
    make_shortlist(&tiny, 1, 1);
    CHECK(decoder_set_shortlist(some, &tiny, &err) == TFM_ERR_USAGE);
    CHECK(strstr(err.msg, "too few for beam 3") != NULL);
    shortlist_free(&tiny);
    shortlist_free(&all);
    shortlist_free(&few);
    decoder_free(plain);
    decoder_free(full);
    decoder_free(some);
    model_free(&m);
}

TEST(test_shortlist_decoding_fp32)
{
    check_decoding(false);
}

TEST(test_shortlist_decoding_int8)
{
    check_decoding(true);
}
