/* numpy_rng: the stream of numpy's `numpy.random.default_rng(seed)`, bit for
 * bit: SeedSequence's hash mixing of the seed, PCG64 (XSL-RR 128/64) seeded
 * from it, Generator.integers' bounded draws (Lemire's method on 32-bit
 * words, each 64-bit output split low half first) and its booleans (one bit
 * of a 32-bit word each). sacreBLEU draws the resamples of its bootstrap and
 * the coin flips of its randomization test from this stream (seed 12345),
 * so drawing them from the same stream gives the same confidence intervals
 * and p-values, not just similar ones. Checked against numpy 1.24 in
 * tests/test_significance.c. */
#ifndef TFM_NUMPY_RNG_H
#define TFM_NUMPY_RNG_H

#include <stdbool.h>
#include <stdint.h>

__extension__ typedef unsigned __int128 NpU128;

typedef struct {
    NpU128 state, inc;
    uint32_t half;          /* the high half of the last 64-bit output */
    bool has_half;
    uint32_t bits;          /* integers(2, dtype=bool): the word being used */
    int bits_left;          /* and how many of its bits are still unused */
} NpRng;

/* numpy.random.default_rng(seed) for a non-negative seed below 2^64. */
void np_rng_seed(NpRng *r, uint64_t seed);
/* PCG64.random_raw(): the next 64-bit output. */
uint64_t np_rng_next64(NpRng *r);
/* The next 32 bits as numpy's bounded draws take them. */
uint32_t np_rng_next32(NpRng *r);
/* One element of Generator.integers(0, n) or choice(n, replace=True),
 * 1 <= n <= 2^32 - 1; consecutive calls are the elements of one array. */
uint32_t np_rng_below(NpRng *r, uint32_t n);
/* One element of Generator.integers(2, dtype=bool); consecutive calls are
 * the elements of one array (numpy uses a 32-bit word for 32 of them). */
bool np_rng_bool(NpRng *r);

#endif
