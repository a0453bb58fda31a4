/* sublayer: the one place that wires a sublayer F (attention or FFN) for
 * pre-norm or post-norm, forward, shared by training (model.c) and the
 * incremental decoder (decode/step.c):
 *     post-norm: out = LN(x + drop(F(x)))
 *     pre-norm:  out = x + drop(F(LN(x)))
 * The caller computes r = x + drop(y) itself (training keeps r for backward,
 * the decoder adds in place). model.c holds the backward of this wiring. */
#ifndef TFM_SUBLAYER_H
#define TFM_SUBLAYER_H

#include "model/config.h"
#include "nn/layers.h"

/* F's input: pre-norm LN(x) written to ln (n, d) (mean, rstd (n) kept for
 * backward unless NULL); post-norm x itself. */
static inline const float *sublayer_input(NormKind norm, NormType nt, float *ln, float *mean,
                                          float *rstd, const float *x, const float *g,
                                          const float *b, int n, int d)
{
    if (norm == NORM_POST) return x;
    norm_forward(nt, ln, mean, rstd, x, g, b, n, d);
    return ln;
}

/* The sublayer's output from r = x + drop(y): pre-norm r itself; post-norm
 * LN(r) written to ln (mean, rstd as above). */
static inline const float *sublayer_output(NormKind norm, NormType nt, float *ln, float *mean,
                                           float *rstd, const float *r, const float *g,
                                           const float *b, int n, int d)
{
    if (norm == NORM_PRE) return r;
    norm_forward(nt, ln, mean, rstd, r, g, b, n, d);
    return ln;
}

#endif
