/* packed_linear: y = x·wᵀ + b for the few rows of a decoder step.
 *
 * Why not sgemm: a decoder step multiplies 1-256 rows by each weight
 * matrix, and OpenBLAS repacks the whole matrix on every call, which costs
 * more than the product at batch 1. Here each weight matrix is packed once
 * (panels of a few vector widths of output columns, the input dimension
 * contiguous), and a register-blocked kernel streams each panel once per step.
 *
 * Every output element is one multiply-add chain over the inputs in order
 * (fused where the build has FMA), starting from the bias, whatever the
 * number of rows or threads, so a row's result does not depend on the other
 * rows: a sentence translates the same alone or in a batch (tested bit for
 * bit). */
#ifndef TFM_PACKED_LINEAR_H
#define TFM_PACKED_LINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nn/packed_int8.h"

/* The inputs of a bf16 product, rounded to bf16 pairs (grown as needed). */
typedef struct {
    uint32_t *x;
    size_t cap;
} PackedScratch;

typedef struct {
    int in, out, panels;
    const int *rows;    /* output j is row rows[j] of the caller's matrix, or NULL
                           (row j); the caller's array, read again by updates */
    const float *w_src; /* float paths: the caller's w as last packed, which
                           packed_linear_select reads columns from: it must
                           outlive p while p is selected from */
    float *w;           /* panels × in × panel width, zero-padded past out */
    float *b;           /* out, or NULL */
    /* bf16 (packed while blas_bf16() is on, as in tfm translate --precision
     * bf16): panels × ceil(in/2) × panel width × 2, each column's pair of
     * consecutive inputs side by side, as vdpbf16ps reads them; w is then
     * not used. */
    uint16_t *wh;
    PackedScratch *scratch;
    /* int8 (packed_linear_init_int8): the product runs there; w and wh
     * are then not used. */
    PackedInt8 *i8;
    size_t bytes;       /* what the packing allocated for the weights and bias */
} PackedLinear;

/* Packs w (row-major, in floats a row; output j is row rows[j], or row j
 * when rows is NULL: a product over some rows of a matrix, such as the
 * output pieces' rows of the output projection, needs no gathered copy)
 * and copies b (out, or NULL); in bf16 when blas_bf16() is on (the CPU has
 * AVX512-BF16 then: blas_use_bf16 checked). In bf16 each output element is
 * still one chain in a fixed order, with the inputs and weights rounded to
 * bf16 and float32 sums. rows must outlive p (updates read it). */
TfmStatus packed_linear_init(PackedLinear *p, const float *w, const int *rows, const float *b,
                             int in, int out, TfmErr *err);
/* The same product in int8 (packed_int8.h): weights quantized per output
 * row, inputs per row as they come. Errors as packed_int8_init. */
TfmStatus packed_linear_init_int8(PackedLinear *p, const float *w, const int *rows,
                                  const float *b, int in, int out, TfmErr *err);
/* The bytes packed_linear_init (or, int8, packed_linear_init_int8) would
 * allocate for an (in, out) product now (its p->bytes then): in bf16 while
 * blas_bf16() is on, as init packs. For a memory check before packing. */
size_t packed_linear_bytes(int in, int out, bool int8);
/* Repacks after the weights changed (same shape and rows), e.g. during
 * training. */
void packed_linear_update(PackedLinear *p, const float *w, const float *b);
/* y (n, out) = x (n, in) · wᵀ + b, then max(0, ·) if relu. Called from a
 * parallel region it runs on the calling thread. */
void packed_linear_forward(const PackedLinear *p, float *y, const float *x, int n, int relu);
/* The same with y's rows ldy floats apart (ldy >= out). */
void packed_linear_forward_ld(const PackedLinear *p, float *y, int ldy, const float *x, int n,
                              int relu);
void packed_linear_free(PackedLinear *p);
/* A product with room for a selection of up to cap of src's output
 * columns, in src's precision; packed_linear_select fills it. int8: it has
 * its own buffer of quantized inputs (packed_int8_init_like), so products
 * made so may run at the same time. */
TfmStatus packed_linear_init_like(PackedLinear *p, const PackedLinear *src, int cap, TfmErr *err);
/* p (from packed_linear_init_like src) becomes the product over src's
 * output columns cols[0..n) (n <= its cap); src is packed_linear_init's or
 * packed_linear_init_int8's. Float products pack the columns from src's
 * w_src (its caller's matrix), int8 copies them from src's packing. p's column j gives exactly src's column cols[j]:
 * in every precision an output element is one chain over the inputs, its
 * column's lane of a panel never meeting the others' (the last, partial
 * panel only stores fewer), so which columns are computed with it changes
 * none of its bits. A vocabulary shortlist relies on this. */
void packed_linear_select(PackedLinear *p, const PackedLinear *src, const int *cols, int n);
/* int8 products (both p and owner): p uses owner's buffer of quantized
 * inputs (packed_int8_share_scratch); nothing otherwise. */
void packed_linear_share_scratch(PackedLinear *p, const PackedLinear *owner);

/* The instruction set of the kernel, for `tfm --version`. */
const char *packed_linear_isa(void);

#endif
