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

/* The LayerNorm around a sublayer F, which pre-norm applies to F's input x
 * (side NORM_PRE) and post-norm to its output r = x + drop(y) (side
 * NORM_POST): on norm's side LN(x) written to ln (n, d) (mean, rstd (n)
 * kept for backward unless NULL), on the other x itself. */
static inline const float *sublayer_norm(NormKind norm, NormKind side, NormType nt, float *ln,
                                         float *mean, float *rstd, const float *x,
                                         const float *g, const float *b, int n, int d)
{
    if (norm != side) return x;
    norm_forward(nt, ln, mean, rstd, x, g, b, n, d);
    return ln;
}

#endif
