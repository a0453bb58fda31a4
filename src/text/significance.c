/* significance: sacreBLEU's bootstrap and randomization tests (see
 * significance.h; sacreBLEU's significance.py and metrics/base.py). */
#include "text/significance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/numpy_rng.h"

/* Python's int(text) for a non-negative integer below 2^64: surrounding
 * whitespace, an optional '+', digits with single '_' between them. */
static bool parse_python_uint64(const char *v, uint64_t *out)
{
    const char *p = v, *end = v + strlen(v);
    while (p < end && strchr(" \t\n\r\f\v", *p)) p++;
    while (end > p && strchr(" \t\n\r\f\v", end[-1])) end--;
    if (p < end && *p == '+') p++;
    if (p == end || !(*p >= '0' && *p <= '9')) return false;
    uint64_t x = 0;
    for (; p < end; p++) {
        if (*p == '_' && p + 1 < end && p[1] >= '0' && p[1] <= '9' && p[-1] != '_') continue;
        if (!(*p >= '0' && *p <= '9')) return false;
        const uint64_t d = (uint64_t)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

TfmStatus sig_seed_from_env(uint64_t *seed, bool *fixed, TfmErr *err)
{
    const char *v = getenv("SACREBLEU_SEED");
    *seed = 12345;
    *fixed = true;
    if (!v) return TFM_OK;
    if (strcasecmp(v, "none") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *seed = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
        *fixed = false;
        return TFM_OK;
    }
    if (!parse_python_uint64(v, seed))
        return err_set(err, TFM_ERR_USAGE,
                       "bleu: SACREBLEU_SEED: expected a non-negative integer below 2^64 or "
                       "'none', got '%s'", v);
    return TFM_OK;
}

int sig_chrf_k(const ChrfOptions *opt)
{
    return 3 * (opt->char_order + opt->word_order);
}

void sig_bleu_row(const BleuStats *st, double *row)
{
    row[0] = (double)st->sys_len;
    row[1] = (double)st->ref_len;
    for (int j = 0; j < BLEU_MAX_ORDER; j++) {
        row[2 + j] = (double)st->counts[j];
        row[2 + BLEU_MAX_ORDER + j] = (double)st->totals[j];
    }
}

void sig_chrf_row(const ChrfStats *st, const ChrfOptions *opt, double *row)
{
    for (int j = 0; j < sig_chrf_k(opt); j++) row[j] = (double)st->v[j];
}

void sig_ter_row(const TerStats *st, double *row)
{
    row[0] = (double)st->edits;
    row[1] = st->ref_len;
}

/* Sums are whole numbers apart from TER's reference length (float32 sums
 * of whole numbers stay exact below 2^24). */
double sig_bleu_score(const double *sums, const void *bleu_options)
{
    BleuStats st = {.sys_len = (long long)sums[0], .ref_len = (long long)sums[1]};
    for (int j = 0; j < BLEU_MAX_ORDER; j++) {
        st.counts[j] = (long long)sums[2 + j];
        st.totals[j] = (long long)sums[2 + BLEU_MAX_ORDER + j];
    }
    BleuScore sc;
    bleu_compute(&st, bleu_options, &sc);
    return sc.score;
}

double sig_chrf_score(const double *sums, const void *chrf_options)
{
    ChrfStats st = {{0}};
    for (int j = 0; j < sig_chrf_k(chrf_options); j++) st.v[j] = (long long)sums[j];
    return chrf_compute(&st, chrf_options);
}

double sig_ter_score(const double *sums, const void *unused)
{
    (void)unused;
    const TerStats st = {.edits = (long long)sums[0], .ref_len = sums[1]};
    return ter_compute(&st);
}

static void *alloc(size_t n, size_t size, TfmErr *err)
{
    void *p = xcalloc(n ? n : 1, size, NULL);
    if (!p) err_set(err, TFM_ERR_NOMEM, "bleu: out of memory for the significance test");
    return p;
}

/* The score of the corpus: the statistics summed in segment order. */
static double corpus_score(const SigSystem *s, double *sums)
{
    memset(sums, 0, (size_t)s->k * sizeof *sums);
    for (size_t i = 0; i < s->n; i++)
        for (int j = 0; j < s->k; j++) sums[j] += s->stats[i * (size_t)s->k + j];
    return s->score(sums, s->ctx);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sacreBLEU's estimate_ci: the mean of the scores and half the distance
 * between the n//40-th smallest and largest. Sorts scores. */
static void estimate_ci(double *scores, int n, SigResult *out)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += scores[i];
    qsort(scores, (size_t)n, sizeof *scores, cmp_double);
    const int lo = n / 40, hi = n - lo - 1;
    out->mean = sum / n;
    out->ci = 0.5 * (scores[hi] - scores[lo]);
    out->has_ci = true;
}

/* The scores of n_samples resamples of one or two systems (the second may
 * be NULL): resample r takes n segments drawn with replacement, the same
 * segments for both, as numpy's choice(n, (n_samples, n)) draws them. The
 * statistics are summed in float32, as sacreBLEU sums its float32 array. */
static TfmStatus resample(const SigSystem *a, const SigSystem *b, int n_samples, uint64_t seed,
                          double *scores_a, double *scores_b, TfmErr *err)
{
    const int k = a->k;
    if (a->n > UINT32_MAX)      /* numpy's 32-bit draws; 4 billion lines are not a test set */
        return err_set(err, TFM_ERR_USAGE, "bleu: the bootstrap takes at most 2^32-1 lines");
    float *acc = alloc(2 * (size_t)k, sizeof *acc, err);
    double *sums = alloc((size_t)k, sizeof *sums, err);
    if (!acc || !sums) {
        free(acc);
        free(sums);
        return err->status;
    }
    NpRng rng;
    np_rng_seed(&rng, seed);
    for (int r = 0; r < n_samples; r++) {
        memset(acc, 0, 2 * (size_t)k * sizeof *acc);
        for (size_t i = 0; i < a->n; i++) {
            const size_t row = np_rng_below(&rng, (uint32_t)a->n) * (size_t)k;
            for (int j = 0; j < k; j++) acc[j] += (float)a->stats[row + j];
            if (b)
                for (int j = 0; j < k; j++) acc[k + j] += (float)b->stats[row + j];
        }
        for (int j = 0; j < k; j++) sums[j] = acc[j];
        scores_a[r] = a->score(sums, a->ctx);
        if (b) {
            for (int j = 0; j < k; j++) sums[j] = acc[k + j];
            scores_b[r] = b->score(sums, b->ctx);
        }
    }
    free(acc);
    free(sums);
    return TFM_OK;
}

/* multeval's p-value: (1 + the trials whose statistic exceeds the real
 * difference) / (1 + the trials). */
static double p_value(const double *stat, int n, double real_diff)
{
    long c = 0;
    for (int i = 0; i < n; i++) c += stat[i] > real_diff;
    return (double)(c + 1) / (n + 1);
}

TfmStatus sig_score(const SigSystem *sys, SigResult *out, TfmErr *err)
{
    *out = (SigResult){0};
    double *sums = alloc((size_t)sys->k, sizeof *sums, err);
    if (!sums) return err->status;
    out->score = corpus_score(sys, sums);
    free(sums);
    return TFM_OK;
}

TfmStatus sig_bootstrap(const SigSystem *sys, int n_samples, uint64_t seed, SigResult *out,
                        TfmErr *err)
{
    *out = (SigResult){0};
    double *sums = alloc((size_t)sys->k, sizeof *sums, err);
    double *scores = alloc((size_t)n_samples, sizeof *scores, err);
    TfmStatus st = sums && scores ? TFM_OK : err->status;
    if (st == TFM_OK) {
        out->score = corpus_score(sys, sums);
        st = resample(sys, NULL, n_samples, seed, scores, NULL, err);
    }
    if (st == TFM_OK) estimate_ci(scores, n_samples, out);
    free(sums);
    free(scores);
    return st;
}

TfmStatus sig_paired_bs(const SigSystem *base, const SigSystem *sys, int n_samples, uint64_t seed,
                        SigResult *out, TfmErr *err)
{
    *out = (SigResult){0};
    double *sums = alloc((size_t)sys->k, sizeof *sums, err);
    double *bl = alloc((size_t)n_samples, sizeof *bl, err);
    double *sy = alloc((size_t)n_samples, sizeof *sy, err);
    TfmStatus st = sums && bl && sy ? TFM_OK : err->status;
    if (st == TFM_OK) {
        const double base_score = corpus_score(base, sums);
        out->score = corpus_score(sys, sums);
        st = resample(base, sys, n_samples, seed, bl, sy, err);
        if (st == TFM_OK) {
            /* the differences, centred: under the null hypothesis the
             * expected difference is zero */
            double mean = 0;
            for (int r = 0; r < n_samples; r++) {
                bl[r] = fabs(sy[r] - bl[r]);
                mean += bl[r];
            }
            mean /= n_samples;
            for (int r = 0; r < n_samples; r++) bl[r] -= mean;
            out->p = p_value(bl, n_samples, fabs(base_score - out->score));
            out->has_p = true;
            estimate_ci(sy, n_samples, out);
        }
    }
    free(sums);
    free(bl);
    free(sy);
    return st;
}

TfmStatus sig_paired_ar(const SigSystem *base, const SigSystem *sys, int n_trials, uint64_t seed,
                        SigResult *out, TfmErr *err)
{
    *out = (SigResult){0};
    const int k = sys->k;
    double *sums = alloc(2 * (size_t)k, sizeof *sums, err);
    double *diff = alloc((size_t)n_trials, sizeof *diff, err);
    TfmStatus st = sums && diff ? TFM_OK : err->status;
    if (st == TFM_OK) {
        const double base_score = corpus_score(base, sums);
        out->score = corpus_score(sys, sums);
        NpRng rng;
        np_rng_seed(&rng, seed);
        /* trial t: pseudo-system a takes the baseline's segment where the
         * coin says so and the system's elsewhere, b the other way round */
        for (int t = 0; t < n_trials; t++) {
            memset(sums, 0, 2 * (size_t)k * sizeof *sums);
            for (size_t i = 0; i < sys->n; i++) {
                const bool swap = np_rng_bool(&rng);
                const double *x = base->stats + i * (size_t)k, *y = sys->stats + i * (size_t)k;
                double *a = sums + (swap ? 0 : k), *b = sums + (swap ? k : 0);
                for (int j = 0; j < k; j++) {
                    a[j] += x[j];
                    b[j] += y[j];
                }
            }
            diff[t] = fabs(sys->score(sums, sys->ctx) - sys->score(sums + k, sys->ctx));
        }
        out->p = p_value(diff, n_trials, fabs(base_score - out->score));
        out->has_p = true;
    }
    free(sums);
    free(diff);
    return st;
}
