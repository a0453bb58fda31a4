/* numpy_rng: numpy's default_rng stream (see numpy_rng.h). The constants are
 * numpy's (bit_generator.pyx, pcg64.h), which are those of O'Neill's
 * seed_seq and PCG papers. */
#include "base/numpy_rng.h"

#include <stddef.h>

enum { POOL = 4 };
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u

static uint32_t hashmix(uint32_t v, uint32_t *hash_const)
{
    v ^= *hash_const;
    *hash_const *= MULT_A;
    v *= *hash_const;
    return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
    return r ^ (r >> 16);
}

/* SeedSequence(seed).generate_state(4, np.uint64) */
static void seed_sequence(uint64_t seed, uint64_t out[4])
{
    /* the seed as little-endian 32-bit words, at least one */
    uint32_t entropy[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const int n_entropy = seed >> 32 ? 2 : 1;
    uint32_t pool[POOL], hash_const = INIT_A;
    for (int i = 0; i < POOL; i++) pool[i] = hashmix(i < n_entropy ? entropy[i] : 0, &hash_const);
    for (int src = 0; src < POOL; src++)
        for (int dst = 0; dst < POOL; dst++)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &hash_const));
    uint32_t words[8], hb = INIT_B;
    for (int i = 0; i < 8; i++) {
        uint32_t v = pool[i % POOL] ^ hb;
        hb *= MULT_B;
        v *= hb;
        words[i] = v ^ (v >> 16);
    }
    for (int i = 0; i < 4; i++) out[i] = words[2 * i] | (uint64_t)words[2 * i + 1] << 32;
}

static void step(NpRng *r)
{
    const NpU128 mult = (NpU128)2549297995355413924ull << 64 | 4865540595714422341ull;
    r->state = r->state * mult + r->inc;
}

void np_rng_seed(NpRng *r, uint64_t seed)
{
    uint64_t s[4];
    seed_sequence(seed, s);
    *r = (NpRng){0};
    r->inc = ((NpU128)s[2] << 64 | s[3]) << 1 | 1;
    step(r);
    r->state += (NpU128)s[0] << 64 | s[1];
    step(r);
}

uint64_t np_rng_next64(NpRng *r)
{
    step(r);
    const uint64_t x = (uint64_t)(r->state >> 64) ^ (uint64_t)r->state;
    const unsigned rot = (unsigned)(r->state >> 122);
    return x >> rot | x << ((64 - rot) & 63);
}

uint32_t np_rng_next32(NpRng *r)
{
    if (r->has_half) {
        r->has_half = false;
        return r->half;
    }
    const uint64_t x = np_rng_next64(r);
    r->half = (uint32_t)(x >> 32);
    r->has_half = true;
    return (uint32_t)x;
}

uint32_t np_rng_below(NpRng *r, uint32_t n)
{
    if (n <= 1) return 0;           /* numpy draws nothing for a range of one */
    uint64_t m = (uint64_t)np_rng_next32(r) * n;
    uint32_t leftover = (uint32_t)m;
    if (leftover < n) {
        const uint32_t threshold = (uint32_t)(0u - n) % n;
        while (leftover < threshold) {
            m = (uint64_t)np_rng_next32(r) * n;
            leftover = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

bool np_rng_bool(NpRng *r)
{
    if (r->bits_left == 0) {
        r->bits = np_rng_next32(r);
        r->bits_left = 31;
    } else {
        r->bits >>= 1;
        r->bits_left--;
    }
    return r->bits & 1;
}
