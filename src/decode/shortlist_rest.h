/* shortlist_rest: the probability a row puts outside a line's candidates,
 * estimated without computing those pieces' logits.
 *
 * Normalizing over the candidates alone raises every candidate by the
 * mass left out, which differs from row to row: label smoothing alone
 * teaches a model to spread about a tenth of each row over the whole
 * vocabulary, so the beam then ranks hypotheses by how much of their
 * floor the list cut off. The rest's logits z_v = x·w_v have a mean and a
 * variance that are exact and cheap for any subset given the whole
 * vocabulary's: Σ_v z_v = x·Σ_v w_v and Σ_v (z_v - μ)² = xᵀ Ĝ x, with Ĝ
 * the (d, d) Gram matrix of the centered output rows, made once; the
 * candidates' part is subtracted from their logits. The rest's mass is
 * then taken as that of normally distributed logits, n·exp(μ + σ²/2). */
#ifndef TFM_DECODE_SHORTLIST_REST_H
#define TFM_DECODE_SHORTLIST_REST_H

#include "base/err.h"
#include "nn/packed_linear.h"

typedef struct {
    int d, n_out;
    float *mean;            /* (d) the output rows' mean, w̄ */
    float *gram;            /* (d, d) Ĝ = Σ_v (w_v - w̄)(w_v - w̄)ᵀ */
    PackedLinear gram_p;    /* x·Ĝ as a product */
} ShortlistRest;

/* From the output projection out (n_out columns over inputs of d, no
 * bias), whatever its precision: its weights are read back through it. */
TfmStatus shortlist_rest_init(ShortlistRest *r, const PackedLinear *out, int n_out, int d,
                              TfmErr *err);
/* gx (rows, d) = x·Ĝ for the rows x (rows, d): one product over every row
 * of a step, which shortlist_rest_normalize then reads line by line. */
void shortlist_rest_project(const ShortlistRest *r, float *gx, const float *x, int rows);
/* y (k, W): the raw logits of W < n_out candidate columns for the rows x
 * (k, d), turned into log-probabilities over the whole output with the
 * rest estimated; gx (k, d) is their shortlist_rest_project. */
void shortlist_rest_normalize(const ShortlistRest *r, float *y, int W, const float *x, int k,
                              const float *gx);
void shortlist_rest_free(ShortlistRest *r);

#endif
