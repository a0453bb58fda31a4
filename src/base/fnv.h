/* fnv: the 64-bit FNV-1a hash, one owner for the checkpoint checksum, the
 * hashes of base/hash_index.h's tables (BPE and the metrics), and the ranks'
 * weight check. Feed it
 * in pieces: fnv1a64(fnv1a64(FNV1A64_START, a, n), b, m) hashes a then b. */
#ifndef TFM_FNV_H
#define TFM_FNV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV1A64_START 0xcbf29ce484222325ULL

static inline uint64_t fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* A byte string's hash for a power-of-two hash table: FNV-1a with its high
 * bits folded down, since the table keeps only the low ones. */
static inline uint64_t fnv_hash_bytes(const void *p, size_t n)
{
    const uint64_t h = fnv1a64(FNV1A64_START, p, n);
    return h ^ (h >> 29);
}

/* All 64 bits mixed into the low ones (MurmurHash3's finalizer): a number
 * key's hash, and the end of fnv_hash_words. */
static inline uint64_t fnv_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* A byte string's hash for a power-of-two table, FNV-1a steps on 8 bytes at
 * a time (the last ones zero-padded, the length in the start), then mixed:
 * an eighth of the steps of bytes, for the keys hashed most (the words BPE
 * counts and encodes: a corpus's every running word). */
static inline uint64_t fnv_hash_bytes8(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = FNV1A64_START ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    if (i < n) {     /* a loop, not a memcpy of a variable length: a libc call per key */
        w = 0;
        for (size_t k = 0; k < n - i; k++) w |= (uint64_t)p[i + k] << (8 * k);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    return fnv_mix64(h);
}

/* The hash of n 32-bit words (an n-gram of ids or code points) for a
 * power-of-two table: FNV-1a a word at a time (a quarter of the steps of
 * bytes), then mixed, since small numbers leave its low bits weak. */
static inline uint64_t fnv_hash_words(const uint32_t *w, size_t n)
{
    uint64_t h = FNV1A64_START;
    for (size_t i = 0; i < n; i++) h = (h ^ w[i]) * 0x100000001b3ULL;
    return fnv_mix64(h);
}

#endif
