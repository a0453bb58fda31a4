/* rng: a small explicit-state PRNG (xoshiro256**, seeded by splitmix64).
 * No hidden global state: every consumer owns an Rng, and its 32 bytes of
 * state are saved in checkpoints so a resumed run draws the same numbers. */
#ifndef TFM_RNG_H
#define TFM_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float rng_uniform(Rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(Rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
double rng_normal(Rng *r);
/* Fisher-Yates shuffle of n ints. */
void rng_shuffle(Rng *r, int *a, long n);
/* An independent stream: seeds a new Rng from r's next output and a tag. */
void rng_fork(Rng *r, uint64_t tag, Rng *out);

#endif
