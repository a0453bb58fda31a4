/* test_ops: dropout masks, positions, embeddings (shared matrix + positions)
 * and the fused label-smoothed loss, with finite-difference checks. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "test.h"

TEST(dropout_mask_rate_scale_and_determinism)
{
    enum { N = 200001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    for (long i = 0; i < N; i++) x[i] = 1.0f + (float)(i % 7);
    const float p = 0.1f, scale = dropout_scale(p);
    CHECK_NEAR(scale, 1.0 / 0.9, 1e-4);
    dropout_apply(y, x, N, p, 42);
    long kept = 0;
    for (long i = 0; i < N; i++) {
        CHECK(y[i] == 0.0f || y[i] == x[i] * scale);
        kept += y[i] != 0.0f;
    }
    /* binomial: sd of the kept fraction is sqrt(0.09/N) = 6.7e-4 */
    CHECK_NEAR((double)kept / N, 0.9, 4e-3);
    /* same seed, one thread: same mask; another seed: a different one */
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    dropout_apply(z, x, N, p, 42);
    omp_set_num_threads(saved);
    CHECK(memcmp(y, z, N * sizeof *y) == 0);
    dropout_apply(z, x, N, p, 43);
    long same = 0;
    for (long i = 0; i < N; i++) same += (y[i] == 0) == (z[i] == 0);
    CHECK(same < N - 1000);
    /* in place, and the op is its own backward: <drop(a), b> == <a, drop(b)> */
    memcpy(z, x, N * sizeof *z);
    dropout_apply(z, z, N, p, 42);
    CHECK(memcmp(y, z, N * sizeof *y) == 0);
    /* residual form: out = x + drop(y) */
    residual_dropout_forward(z, x, x, N, p, 42);
    for (long i = 0; i < N; i++) CHECK(z[i] == x[i] + y[i]);
    /* p = 0 is the identity */
    dropout_apply(z, x, N, 0.0f, 42);
    CHECK(memcmp(x, z, N * sizeof *z) == 0);
    free(x);
    free(y);
    free(z);
}

TEST(positions_sinusoids)
{
    enum { L = 50, D = 16 };
    float pe[L * D];
    positions_init(pe, L, D);
    CHECK(pe[0] == 0.0f && pe[1] == 1.0f);              /* pos 0: sin 0, cos 0 */
    CHECK_NEAR(pe[1 * D + 0], sin(1.0), 1e-6);
    CHECK_NEAR(pe[1 * D + 1], cos(1.0), 1e-6);
    /* PE(pos, 2i) = sin(pos / 10000^(2i/D)), interleaved with cos */
    CHECK_NEAR(pe[37 * D + 6], sin(37 / pow(10000.0, 6.0 / D)), 1e-6);
    CHECK_NEAR(pe[37 * D + 7], cos(37 / pow(10000.0, 6.0 / D)), 1e-6);
}

/* ---- embedding: one matrix serving as source and target table ---- */

enum { EV = 9, ED = 6, EN = 2, EL = 4 };

typedef struct {
    float emb[EV * ED], pe[10 * ED], out[2 * EN * EL * ED], r[2 * EN * EL * ED];
    int src[EN * EL], tgt[EN * EL];
    float p_word;   /* word dropout; the two sides draw from seeds 11 and 12 */
} EmbCtx;

static double emb_obj(void *p)
{
    EmbCtx *c = p;
    const float s = sqrtf((float)ED);
    embed_forward(c->out, c->src, EN, EL, c->emb, c->pe, 0, ED, s, c->p_word, 11);
    embed_forward(c->out + EN * EL * ED, c->tgt, EN, EL, c->emb, c->pe, 0, ED, s, c->p_word, 12);
    return gc_dot(c->out, c->r, 2 * EN * EL * ED);
}

/* Gradient check of one table serving both sides, with word dropout p_word;
 * returns how many of the 2·EN·EL rows lost their token embedding. */
static int embedding_gradcheck(float p_word)
{
    EmbCtx c;
    Rng rng;
    rng_seed(&rng, 5);
    const int src[EN * EL] = {4, 5, 3, 0, 7, 4, 4, 3}, tgt[EN * EL] = {2, 4, 8, 0, 2, 7, 3, 0};
    memcpy(c.src, src, sizeof src);
    memcpy(c.tgt, tgt, sizeof tgt);
    c.p_word = p_word;
    gc_fill(c.emb, EV * ED, &rng, -1, 1);
    gc_fill(c.r, 2 * EN * EL * ED, &rng, -1, 1);
    positions_init(c.pe, 10, ED);
    emb_obj(&c);
    int dropped = 0;
    for (int r = 0; r < 2 * EN * EL; r++) {
        const int tok = r < EN * EL ? c.src[r] : c.tgt[r - EN * EL];
        const float keep = word_keep(r % (EN * EL), p_word, r < EN * EL ? 11 : 12);
        dropped += keep == 0.0f;
        for (int j = 0; j < ED; j++)
            CHECK_NEAR(c.out[r * ED + j],
                       c.emb[tok * ED + j] * sqrt(ED) * keep + c.pe[(r % EL) * ED + j], 1e-5);
    }
    float demb[EV * ED] = {0};
    embed_backward(demb, c.r, c.src, EN * EL, ED, sqrtf((float)ED), p_word, 11);
    embed_backward(demb, c.r + EN * EL * ED, c.tgt, EN * EL, ED, sqrtf((float)ED), p_word, 12);
    GcReport rep = {0};
    gc_check(&rep, "demb", c.emb, demb, EV * ED, emb_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    /* one decoding step at position 2 matches column 2 of the full pass */
    if (p_word == 0) {
        float step[ED];
        embed_forward(step, &c.tgt[EL + 2], 1, 1, c.emb, c.pe, 2, ED, sqrtf((float)ED), 0, 0);
        for (int j = 0; j < ED; j++) CHECK(step[j] == c.out[(EN * EL + EL + 2) * ED + j]);
    }
    return dropped;
}

TEST(embedding_shared_gradcheck) { CHECK_EQ_INT(embedding_gradcheck(0), 0); }

/* With word dropout some rows keep only their position (16 rows at p = 0.4:
 * none dropped has probability 0.6^16 ≈ 3e-4, and the masks are fixed by the
 * seeds, so the count is too), and backward skips exactly those. */
TEST(embedding_word_dropout_gradcheck)
{
    const int dropped = embedding_gradcheck(0.4f);
    CHECK(dropped > 0 && dropped < 2 * EN * EL);
}

/* word_keep: kept rows are scaled by 1/(1 - p) (so the expectation is the
 * embedding itself), the kept share is 1 - p, the mask is a function of
 * (seed, row) and differs between seeds; p 0 keeps everything unscaled. */
TEST(word_keep_rate_and_scale)
{
    const float p = 0.1f;
    const long n = 200000;
    long kept = 0, same = 0;
    for (long r = 0; r < n; r++) {
        const float k = word_keep(r, p, 42);
        CHECK(k == 0.0f || fabsf(k - 1.0f / (1.0f - p)) < 1e-4f);
        kept += k != 0.0f;
        same += (k != 0.0f) == (word_keep(r, p, 43) != 0.0f);
        CHECK(word_keep(r, p, 42) == k);
    }
    /* binomial sd of the share: sqrt(0.09 / 2e5) ≈ 6.7e-4; 5 sd */
    CHECK_NEAR((double)kept / n, 1.0 - p, 3.4e-3);
    /* two seeds agree on a row with probability 0.9² + 0.1² = 0.82 */
    CHECK_NEAR((double)same / n, 0.82, 5e-3);
    CHECK(word_keep(7, 0.0f, 42) == 1.0f);
}

/* ---- loss ---- */

enum { XM = 4, XV = 7 };

typedef struct {
    float z[XM * XV], tmp[XM * XV];
    int tgt[XM];
    float eps;
    double rows[3 * XM];
} LossCtx;

static double loss_obj(void *p)
{
    LossCtx *c = p;
    double l, n;
    memcpy(c->tmp, c->z, sizeof c->z);
    loss_xent_smoothed(c->tmp, c->tgt, XM, XV, c->eps, 0.0f, c->rows, &l, &n, NULL);
    return l;
}

TEST(loss_label_smoothed_value_and_gradcheck)
{
    LossCtx c;
    Rng rng;
    rng_seed(&rng, 6);
    gc_fill(c.z, XM * XV, &rng, -3, 3);
    const int tgt[XM] = {0, 3, 6, 3};
    memcpy(c.tgt, tgt, sizeof tgt);
    c.eps = 0.1f;
    /* reference in double: -Σ_c q_c log p_c with q = (1-eps) onehot + eps/V */
    double want = 0, want_nll = 0;
    for (int r = 0; r < XM; r++) {
        double mx = -1e30, se = 0;
        for (int k = 0; k < XV; k++) mx = fmax(mx, c.z[r * XV + k]);
        for (int k = 0; k < XV; k++) se += exp(c.z[r * XV + k] - mx);
        for (int k = 0; k < XV; k++) {
            double lp = c.z[r * XV + k] - mx - log(se);
            double q = (k == tgt[r] ? 1.0 - c.eps : 0.0) + c.eps / XV;
            want -= q * lp;
            if (k == tgt[r]) want_nll -= lp;
        }
    }
    double l, n;
    memcpy(c.tmp, c.z, sizeof c.z);
    long correct;
    loss_xent_smoothed(c.tmp, c.tgt, XM, XV, c.eps, 0.5f, c.rows, &l, &n, &correct);
    long want_correct = 0;
    for (int r = 0; r < XM; r++) {
        int arg = 0;
        for (int k = 1; k < XV; k++)
            if (c.z[r * XV + k] > c.z[r * XV + arg]) arg = k;
        want_correct += arg == tgt[r];
    }
    CHECK_EQ_INT(correct, want_correct);
    CHECK_NEAR(l, want, 1e-5);
    CHECK_NEAR(n, want_nll, 1e-5);
    /* the gradient was written with scale 0.5; rows of p - q sum to 0 */
    float g[XM * XV];
    for (int i = 0; i < XM * XV; i++) g[i] = c.tmp[i] * 2.0f;
    for (int r = 0; r < XM; r++) {
        double s = 0;
        for (int k = 0; k < XV; k++) s += g[r * XV + k];
        CHECK_NEAR(s, 0.0, 1e-6);
    }
    GcReport rep = {0};
    gc_check(&rep, "dlogits", c.z, g, XM * XV, loss_obj, &c, 1e-2f, 1e-3, 2e-2, 1000, &rng);
    CHECK_EQ_INT(rep.failed, 0);
    /* eps = 0 is plain cross-entropy */
    c.eps = 0;
    memcpy(c.tmp, c.z, sizeof c.z);
    loss_xent_smoothed(c.tmp, c.tgt, XM, XV, 0.0f, 0.0f, c.rows, &l, &n, NULL);
    CHECK_NEAR(l, want_nll, 1e-5);
}

TEST(exp_fast_accuracy)
{
    double worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.001237f) {
        double want = exp((double)x), got = exp_fast(x);
        double rel = fabs(got - want) / want;
        if (rel > worst) worst = rel;
    }
    CHECK(worst < 3e-7);
    CHECK(exp_fast(0.0f) == 1.0f);
    CHECK(exp_fast(-INFINITY) == 0.0f);
    CHECK(exp_fast(-100.0f) == 0.0f);
    CHECK(exp_fast(-87.3f) > 0.0f);
}

TEST(logsoftmax_rows_normalised)
{
    float x[2 * 5] = {1, 2, 3, 4, 5, -100, 0, 100, 3, 3};
    logsoftmax_rows(x, 2, 5);
    for (int r = 0; r < 2; r++) {
        double s = 0;
        for (int j = 0; j < 5; j++) s += exp(x[r * 5 + j]);
        CHECK_NEAR(s, 1.0, 1e-5);
    }
    CHECK_NEAR(x[7], 0.0, 1e-5);
}

/* row_sum and row_centered_sq_sum against double sums, over lengths that
 * exercise the tail (whose missing lanes must add nothing, even with a
 * mean to subtract). */
TEST(row_sums_match_double)
{
    enum { N = 300 };
    float x[N + 16];
    uint64_t s = 777;
    for (int i = 0; i < N + 16; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) % 20000) / 1000.0f - 3.0f;
    }
    for (int n = 0; n <= N; n += n < 40 ? 1 : 37) {
        double sum = 0, sq = 0;
        for (int i = 0; i < n; i++) sum += x[i];
        const float mu = n ? (float)(sum / n) : 0.0f;
        for (int i = 0; i < n; i++) sq += ((double)x[i] - mu) * ((double)x[i] - mu);
        CHECK_NEAR(row_sum(x, n), sum, 1e-5 * (fabs(sum) + n + 1));
        CHECK_NEAR(row_centered_sq_sum(x, n, mu), sq, 1e-5 * (sq + 1));
    }
}

/* row_max_abs against a scalar loop at every tail length, with the
 * largest |x| placed in each lane in turn, and its NaN/Inf flag for a bad
 * value anywhere in the row (and nowhere past it). */
TEST(row_max_abs_matches_scalar)
{
    enum { N = 80 };
    float x[N + 16];
    uint64_t s = 4242;
    for (int i = 0; i < N + 16; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) % 20000) / 1000.0f - 10.0f;
    }
    for (int n = 0; n <= N; n++) {
        for (int at = -1; at < n; at++) {
            float y[N + 16];
            memcpy(y, x, sizeof y);
            if (at >= 0) y[at] = at % 2 ? -50.0f : 50.0f;
            y[n] = 1e30f;                       /* past the row: never read */
            float want = 0;
            for (int i = 0; i < n; i++) want = fabsf(y[i]) > want ? fabsf(y[i]) : want;
            bool bad = true;
            CHECK(row_max_abs(y, n, &bad) == want);
            CHECK(!bad);
        }
        for (int at = 0; at < n; at += 7) {
            float y[N + 16];
            memcpy(y, x, sizeof y);
            y[at] = at % 2 ? NAN : -INFINITY;
            bool bad = false;
            (void)row_max_abs(y, n, &bad);
            CHECK(bad);
        }
        float y[N + 16];
        memcpy(y, x, sizeof y);
        y[n] = NAN;
        bool bad = true;
        (void)row_max_abs(y, n, &bad);
        CHECK(!bad);
    }
}

/* The 16-lane row kernels: each element's exp is exp_fast's bit for bit,
 * across lengths that exercise the tail, and special values behave as the
 * scalar form does (-inf -> 0, underflow -> 0, NaN -> not finite sums);
 * row_softmax_inplace is row_exp_inplace then a multiply by 1/Σ; nothing
 * past a row is written. */
TEST(row_kernels_match_scalar_exp_fast)
{
    enum { N = 1003 };
    float x[N], y[N];
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) % 20000) / 100.0f - 150.0f;  /* [-150, 50) */
    }
    x[5] = -INFINITY;
    x[17] = 49.99f;
    for (int n = 0; n <= N; n += n < 40 ? 1 : 97) {
        float mx = -INFINITY;
        double want = 0, want_x = 0;
        for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        CHECK(row_max(x, n) == mx);
        for (int i = 0; i < n; i++) want += exp_fast(x[i] - mx);
        float sum_x, got = row_exp_sum(x, n, mx, &sum_x);
        CHECK_NEAR(got, want, 1e-5 * (want + 1));
        memcpy(y, x, sizeof x);
        float sum_x2, got2 = row_exp_inplace(y, n, mx, &sum_x2);
        CHECK(got2 == got);
        float z[N];
        memcpy(z, x, sizeof x);
        CHECK(row_softmax_inplace(z, n, mx) == got);
        for (int i = 0; i < N; i++) {   /* row_exp_inplace then · 1/Σ, bit for bit */
            const float want_z = i < n ? y[i] * (1.0f / got) : x[i];
            if (memcmp(&z[i], &want_z, sizeof want_z) != 0) {
                test_fail(__FILE__, __LINE__, "softmax, n %d: element %d: %g, want %g", n, i,
                          (double)z[i], (double)want_z);
                break;
            }
        }
        for (int i = n; i < N; i++) {     /* the tail's store stops at n */
            if (y[i] != x[i]) {
                test_fail(__FILE__, __LINE__, "n %d: element %d past the row written", n, i);
                break;
            }
        }
        for (int i = 0; i < n; i++) {
            if (i != 5) want_x += x[i];
            if (y[i] != exp_fast(x[i] - mx)) {
                test_fail(__FILE__, __LINE__, "n %d: element %d: %g, scalar %g", n, i,
                          (double)y[i], (double)exp_fast(x[i] - mx));
                break;
            }
        }
        if (n <= 5) CHECK_NEAR(sum_x, want_x, 1e-3 * (fabs(want_x) + 1));
        else CHECK(sum_x == -INFINITY && sum_x2 == -INFINITY);
    }
    float nan_row[9] = {0, 1, 2, NAN, 4, 5, 6, 7, 8};
    float sx;
    CHECK(!isfinite(row_exp_sum(nan_row, 9, 8.0f, &sx)) || !isfinite(sx));
}
