/* vec_width: how many floats one vector register of the target ISA holds,
 * for kernels written with GCC/Clang vector extensions. GCC 12 keeps a
 * vector type wider than the ISA's in memory and lowers its compares to
 * one scalar compare per lane, so such kernels use this width, not a fixed
 * 16 (on AVX2 a 16-float type sent every loop step through the stack). */
#ifndef TFM_NN_VEC_WIDTH_H
#define TFM_NN_VEC_WIDTH_H

#if defined(__AVX512F__)
#define VEC_FLOATS 16
#elif defined(__AVX__)
#define VEC_FLOATS 8
#else
#define VEC_FLOATS 4
#endif

#endif
