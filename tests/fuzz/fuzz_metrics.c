/* fuzz_metrics: BLEU, chrF and TER on arbitrary text. The first byte picks
 * the options (BLEU tokenizer and lowercasing, chrF word order, TER's four
 * flags); the rest is "hypothesis\0reference", each split into lines. As
 * tfm bleu does, text that is not valid UTF-8 or holds a NUL is not scored
 * (the CLI refuses it with an error before scoring). Scores must be finite
 * and in range, and so must BLEU's bootstrap figures and p-values
 * (significance.h), run on the segments with few resamples. */
#include <math.h>

#include "fuzz_util.h"
#include "base/text.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/significance.h"
#include "text/ter.h"

enum { MAX_LINES = 64 };

static size_t split_lines(const char *s, size_t n, const char **lines, size_t *lens)
{
    size_t count = 0, start = 0;
    for (size_t i = 0; i <= n && count < MAX_LINES; i++)
        if (i == n || s[i] == '\n') {
            lines[count] = s + start;
            lens[count++] = i - start;
            start = i + 1;
        }
    return count;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1) return 0;
    const unsigned char flags = data[0];
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(text, 0, n);
    if (!nul) return 0;
    const size_t hn = (size_t)(nul - text), rn = n - hn - 1;
    const char *hyp = text, *ref = nul + 1;
    if (memchr(ref, 0, rn) || !text_utf8_valid(hyp, hn, NULL) || !text_utf8_valid(ref, rn, NULL))
        return 0;
    const char *hl[MAX_LINES], *rl[MAX_LINES];
    size_t hlen[MAX_LINES], rlen[MAX_LINES];
    size_t nh = split_lines(hyp, hn, hl, hlen), nr = split_lines(ref, rn, rl, rlen);
    const size_t lines = nh < nr ? nh : nr;
    TfmErr err;

    BleuOptions bo;
    bleu_options_default(&bo);
    bo.tokenize = (BleuTokenizer)(flags % 5);
    bo.lowercase = flags & 8;
    BleuScorer *bs = NULL;
    if (bleu_scorer_new(&bo, &bs, &err) != TFM_OK) abort();
    BleuStats total = {0};
    double rows[MAX_LINES * SIG_BLEU_K];
    for (size_t i = 0; i < lines; i++) {
        BleuStats st;
        const char *r1[1] = {rl[i]};
        if (bleu_segment_stats(bs, hl[i], hlen[i], r1, &rlen[i], 1, &st, &err) != TFM_OK) abort();
        bleu_stats_add(&total, &st);
        sig_bleu_row(&st, rows + i * SIG_BLEU_K);
    }
    if (lines > 0) {
        /* the hypothesis against itself shifted by a line: two systems */
        const SigSystem a = {rows, lines, SIG_BLEU_K, sig_bleu_score, &bo};
        const SigSystem b = {rows + (lines > 1) * SIG_BLEU_K, lines - (lines > 1), SIG_BLEU_K,
                             sig_bleu_score, &bo};
        const SigSystem a2 = {rows, b.n, SIG_BLEU_K, sig_bleu_score, &bo};
        SigResult r[3];
        if (sig_bootstrap(&a, 20, flags, &r[0], &err) != TFM_OK ||
            sig_paired_bs(&a2, &b, 10, flags, &r[1], &err) != TFM_OK ||
            sig_paired_ar(&a2, &b, 40, flags, &r[2], &err) != TFM_OK)
            abort();
        for (int k = 0; k < 3; k++) {
            const SigResult *x = &r[k];
            if (!(x->score >= 0 && x->score <= 100 + 1e-9)) abort();
            if (x->has_ci && !(x->mean >= 0 && x->mean <= 100 + 1e-9 && x->ci >= 0 && x->ci <= 50 + 1e-9))
                abort();
            if (x->has_p && !(x->p > 0 && x->p <= 1)) abort();
        }
    }
    BleuScore sc;
    bleu_compute(&total, &bo, &sc);
    /* 100 at most, up to rounding: identical text scores 100.00000000000004
     * here as in sacreBLEU (exp of a sum of logs) */
    if (!(sc.score >= 0 && sc.score <= 100 + 1e-9)) abort();
    bleu_scorer_free(bs);

    ChrfOptions co;
    chrf_options_default(&co);
    co.word_order = flags & 16 ? 2 : 0;
    ChrfScorer *cs = NULL;
    if (chrf_scorer_new(&co, &cs, &err) != TFM_OK) abort();
    ChrfStats ctot = {0};
    for (size_t i = 0; i < lines; i++) {
        ChrfStats st;
        const char *r1[1] = {rl[i]};
        if (chrf_segment_stats(cs, hl[i], hlen[i], r1, &rlen[i], 1, &st, &err) != TFM_OK) abort();
        chrf_stats_add(&ctot, &st);
    }
    double c = chrf_compute(&ctot, &co);
    if (!(c >= 0 && c <= 100 + 1e-9)) abort();
    chrf_scorer_free(cs);

    TerOptions to = {.case_sensitive = flags & 32, .no_punct = flags & 64,
                     .normalized = flags & 128, .asian_support = flags & 4};
    TerScorer *ts = NULL;
    if (ter_scorer_new(&to, &ts, &err) != TFM_OK) abort();
    TerStats ttot = {0};
    for (size_t i = 0; i < lines; i++) {
        TerStats st;
        const char *r1[1] = {rl[i]};
        if (ter_segment_stats(ts, hl[i], hlen[i], r1, &rlen[i], 1, &st, &err) != TFM_OK) abort();
        ter_stats_add(&ttot, &st);
    }
    double t = ter_compute(&ttot);
    if (!(t >= 0 && isfinite(t))) abort();
    ter_scorer_free(ts);
    return 0;
}
