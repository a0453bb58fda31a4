/* packed_int8: y = x·wᵀ + b with int8 weights and int8 activations, for
 * translation (tfm translate --precision int8, int8 model files).
 *
 * Weights: symmetric int8, one scale per output row (int8_quantize_row).
 * Activations: quantized as they come, one scale per input row (token):
 * s = max|x|/127, q = round(x/s). Each output element is the exact int32
 * sum of q_x·q_w over the inputs (integer sums do not depend on their
 * order), then one fixed float32 step: y = (float)sum · (s_x·s_w) + b.
 * So every kernel (AVX-512 VNNI, AVX-VNNI, AVX2, portable C) gives the
 * same bits, and a row's result never depends on the other rows, the
 * batch or the thread count.
 *
 * The kernel is chosen at run time from the CPU's flags, or forced with
 * the environment variable TFM_INT8_KERNEL=portable|avx2|avxvnni|avx512vnni
 * (read when the first int8 product is packed), or int8_kernel_select. */
#ifndef TFM_PACKED_INT8_H
#define TFM_PACKED_INT8_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

typedef struct Int8Scratch Int8Scratch;

typedef struct {
    int in, out, panels, groups;    /* groups: the inputs in fours, ceil(in/4) */
    int8_t *w;          /* panels × groups × 32 columns × 4 inputs, zero-padded */
    int32_t *corr;      /* panels × 32: 128 · Σ_k w[j][k] (the VNNI kernels' u8 shift) */
    float *scale;       /* panels × 32: each output row's weight scale, 0 past out */
    float *b;           /* panels × 32: bias, 0 when none */
    Int8Scratch *scratch;   /* the quantized inputs of a call (grown as needed) */
    bool own_scratch;       /* false: another product's (packed_int8_share_scratch) */
    size_t bytes;           /* what the packing allocated (w, corr, scale, b) */
} PackedInt8;

/* Quantizes the rows of w (in floats each) row by row and packs them:
 * output j is row rows[j] of w, or row j when rows is NULL (so a product
 * over some rows of a matrix needs no gathered copy); copies b (out, or
 * NULL). Errors: TFM_ERR_NOMEM; TFM_ERR_CONFIG for a TFM_INT8_KERNEL this
 * CPU cannot run or that does not exist. */
TfmStatus packed_int8_init(PackedInt8 *p, const float *w, const int *rows, const float *b,
                           int in, int out, TfmErr *err);
/* The bytes packed_int8_init allocates for an (in, out) product (its
 * p->bytes then), from the same list of buffers. */
size_t packed_int8_bytes(int in, int out);
/* Requantizes after the weights changed (same shape, rows as at init). */
void packed_int8_update(PackedInt8 *p, const float *w, const int *rows, const float *b);
/* y (n, out) = x (n, in) · wᵀ + b, then max(0, ·) if relu. A row of x
 * holding NaN or ±Inf gives a row of NaN (as float32 would give NaN or
 * Inf); a row of zeros gives the bias. Not reentrant for one p (its
 * scratch). */
void packed_int8_forward(const PackedInt8 *p, float *y, const float *x, int n, int relu);
/* The same with y's rows ldy floats apart (ldy >= out). */
void packed_int8_forward_ld(const PackedInt8 *p, float *y, int ldy, const float *x, int n, int relu);
void packed_int8_free(PackedInt8 *p);
/* A product to hold a selection of up to cap of src's output columns
 * (packed_int8_select fills it), with its own buffer of quantized inputs. */
TfmStatus packed_int8_init_like(PackedInt8 *p, const PackedInt8 *src, int cap, TfmErr *err);
/* p becomes the product over src's output columns cols[0..n) (n <= p's
 * cap): p's column j gives the same bits as src's column cols[j], since an
 * element's int32 sum and its one float step never depend on the other
 * columns of its panel. */
void packed_int8_select(PackedInt8 *p, const PackedInt8 *src, const int *cols, int n);
/* Makes p quantize its inputs into owner's buffer and frees its own: one
 * buffer for the products of a model that are called one after another
 * (each int8 product otherwise keeps a buffer grown to its largest call).
 * owner must outlive p's calls, and they must not run at the same time. */
void packed_int8_share_scratch(PackedInt8 *p, const PackedInt8 *owner);

/* A weight row's symmetric quantization: returns the scale s and sets
 * q[i] = round(w[i]/s) in [-127, 127]. s is max|w|/127 rounded up to 17
 * significant bits, so q[i]·s is exact in float32 and quantizing the row
 * q·s again gives back the same q and s (an int8 model file stores q and s;
 * loading it and packing its weights reproduces them exactly). A row whose
 * largest |w| is below 2^-100 (or zero) gets s = 0 and q = 0. w must be
 * finite. */
float int8_quantize_row(int8_t *q, const float *w, int n);

/* An activation row's quantization: returns s = max|x|/127 and sets q;
 * 0 for a row of zeros, NaN for a row with a NaN or ±Inf (q then 0). */
float int8_quantize_input(int8_t *restrict q, const float *restrict x, int n);

/* The kernels, by name: "avx512vnni", "avxvnni", "avx2", "portable". */
bool int8_kernel_available(const char *name);
/* Forces a kernel (NULL: the best this CPU has, or TFM_INT8_KERNEL when
 * set). Products packed before keep working: all kernels read the same
 * packing. Errors: TFM_ERR_CONFIG naming the kernel. */
TfmStatus int8_kernel_select(const char *name, TfmErr *err);
/* The kernel in use (selected on first use), e.g. "AVX-512 VNNI (vpdpbusd)". */
const char *int8_kernel_name(void);

#endif
