/* rng: xoshiro256** (Blackman & Vigna) with splitmix64 seeding. */
#include "base/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float rng_uniform(Rng *r) { return (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

uint64_t rng_below(Rng *r, uint64_t n)
{
    /* Reject the top partial block so every value is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng_u64(r); while (x >= limit);
    return x % n;
}

double rng_normal(Rng *r)
{
    double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rng_shuffle(Rng *r, int *a, long n)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)rng_below(r, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

void rng_fork(Rng *r, uint64_t tag, Rng *out)
{
    rng_seed(out, rng_u64(r) ^ (tag * 0x9e3779b97f4a7c15ULL));
}
