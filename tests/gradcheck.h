/* gradcheck.h: finite-difference gradient checks shared by test_ops.c,
 * test_layers.c and test_model.c.
 *
 * The objective is a scalar accumulated in double (outputs reduced with a
 * fixed random projection R, so every output element matters with a
 * different weight and errors cannot cancel by symmetry); the analytic side
 * is the backward pass seeded with dout = R. Central differences:
 *     num = (f(x + h) - f(x - h)) / (x+h - (x-h))   (the float32 step actually taken)
 * Error budget, float32 forward: each output carries a relative rounding
 * error ~1e-7·|terms|, so f has noise ~1e-6 for O(1)-sized sums, which the
 * difference turns into ~1e-6 / (2h) = 5e-5 at h = 1e-2; truncation error is
 * h²·f'''/6 ~ 2e-5 for O(1) third derivatives. A wrong gradient (a missing
 * term, a transposed product, a wrong scale) is off by O(|g|), so
 *     |num - ana| <= atol + rtol · max(|num|, |ana|)
 * with rtol 2e-2 and atol ~1e-3 (per op, scaled to its gradient size) passes
 * correct code and fails broken code by orders of magnitude. */
#ifndef TFM_GRADCHECK_H
#define TFM_GRADCHECK_H

#include <math.h>
#include <stdio.h>

#include "base/rng.h"
#include "test.h"

typedef double (*GcObjective)(void *ctx);

typedef struct {
    double max_abs, max_rel;    /* worst |num - ana| and its relative size */
    long checked, failed;
} GcReport;

/* Checks g (the analytic gradient of f at x) at `count` indices of x: all of
 * them when count >= n, else a random sample drawn from rng. x is restored. */
static inline void gc_check(GcReport *rep, const char *what, float *x, const float *g, long n,
                            GcObjective f, void *ctx, float h, double atol, double rtol,
                            long count, Rng *rng)
{
    long todo = count >= n ? n : count;
    for (long k = 0; k < todo; k++) {
        long i = count >= n ? k : (long)rng_below(rng, (uint64_t)n);
        const float x0 = x[i];
        x[i] = x0 + h;
        const float xp = x[i];
        const double fp = f(ctx);
        x[i] = x0 - h;
        const float xm = x[i];
        const double fm = f(ctx);
        x[i] = x0;
        const double num = (fp - fm) / ((double)xp - (double)xm);
        const double ana = g[i];
        const double diff = fabs(num - ana);
        const double big = fmax(fabs(num), fabs(ana));
        rep->checked++;
        if (diff > rep->max_abs) rep->max_abs = diff;
        if (big > 0 && diff / big > rep->max_rel && diff > atol) rep->max_rel = diff / big;
        if (!(diff <= atol + rtol * big)) {
            if (rep->failed < 5)
                test_fail(__FILE__, __LINE__, "%s[%ld]: numeric %.6g vs analytic %.6g", what, i,
                          num, ana);
            rep->failed++;
        }
    }
}

/* Σ_i out[i]·r[i] in double. */
static inline double gc_dot(const float *out, const float *r, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)out[i] * r[i];
    return s;
}

static inline void gc_fill(float *x, long n, Rng *rng, float lo, float hi)
{
    for (long i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
}

#endif
