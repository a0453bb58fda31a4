/* gemm_bf16: the large products in bfloat16 on the CPU's bf16 units (AMX or
 * AVX512-BF16), through oneDNN's matmul. The only module that includes
 * <dnnl.h>. Inputs are float32, rounded to bfloat16 (round to nearest even)
 * on the way in; products accumulate and land in float32. */
#ifndef TFM_GEMM_BF16_H
#define TFM_GEMM_BF16_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "nn/blas.h"

/* The bf16 unit oneDNN uses on this CPU: "AMX", "AVX512-BF16", or "none"
 * (then bf16_available is false). */
const char *bf16_isa_name(void);
bool bf16_available(void);

/* oneDNN's version, e.g. "2.6.3". */
const char *bf16_library_version(void);

/* TFM_OK, or TFM_ERR_CONFIG naming what this CPU lacks. `what` begins the
 * message, e.g. "train.precision". */
TfmStatus bf16_require(const char *what, TfmErr *err);

/* Checks a bf16 product against a float32 loop over the same rounded
 * inputs (the sums may differ only by float32 rounding): a wrong kernel is
 * TFM_ERR_NUMERIC. TFM_OK without checking when bf16 is not available. */
TfmStatus bf16_selftest(TfmErr *err);

/* One product of blas.h's GemmArgs, with alpha = 1, beta 0 or 1 and ldc = n (the
 * linear layers' products), run over all threads by oneDNN. Returns false,
 * doing nothing, for other alpha/beta (the caller then uses sgemm) or when
 * oneDNN fails (which it does not for these shapes; then sgemm is right). */
bool bf16_gemm(const GemmArgs *g);

/* Products whose outputs are none of their inputs, as bf16_gemm each
 * (ran[i]: whether product i ran), with a matrix that several of them
 * read rounded to bf16 once. At most four products. */
void bf16_gemm_group(const GemmArgs *g, int count, bool *ran);

/* Lets the products run on fixed-shape primitives, where oneDNN picks its
 * brgemm kernels (the only ones that reach AMX): on AMX hosts, or on any
 * with TFM_BF16_SHAPES=fixed ("runtime": never). A product's rows are then
 * cut into blocks by its row count and each block goes to the kernel made
 * for its size, so a row's result depends on the batch it came in:
 * training allows it; translation, whose lines must not depend on their
 * batch, does not. Off until called. */
void bf16_allow_fixed_shapes(bool allow);

/* The kernels oneDNN runs, as its primitives name them: "gemm:jit,
 * run-time shapes", or "brg:avx512_core_amx_bf16 in training, fixed
 * shapes; gemm:jit in translation"; "none" without a bf16 unit. */
const char *bf16_kernel_name(void);

/* The fixed-shape primitives made so far (for the tests: a bounded number). */
int bf16_fixed_primitives(void);

/* float32 -> bfloat16, round to nearest even (NaN stays NaN). */
uint16_t bf16_from_float(float x);
float bf16_to_float(uint16_t h);
/* dst[i] = bf16_from_float(src[i]) for n floats, vectorized. */
void bf16_from_floats(uint16_t *dst, const float *src, size_t n);

/* Frees the conversion buffers and primitives (at exit, for leak checks). */
void bf16_release(void);

#endif
