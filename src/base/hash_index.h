/* hash_index: the one hash table of tfm's text code (BPE's pieces, merges
 * and counts, the metrics' words and n-grams). Open addressing with linear
 * probing over a power-of-two array of 4-byte slots, each 0 (empty) or
 * id + 1. The ids are 0, 1, 2, ... in the order keys are added: the caller
 * keeps each key (and its value) in arrays of its own at that id, and says
 * while probing whether an id's key is the one looked for. So the slots stay
 * small (the metrics' inner loop is the table's cache misses) and one table
 * serves strings, integers and n-grams alike. The load stays at most 1/2;
 * reset empties the table in the time of the ids it held.
 *
 * Hashes come from base/fnv.h; the low bits pick the slot.
 *
 * Adding a key:
 *   if (hidx_room(&x, 16, err)) ...;           // room first: slots move
 *   size_t i = hidx_probe(&x, h, same, ctx);
 *   if (!x.slot[i]) { id = hidx_put(&x, i, h); ...store the key at id... } */
#ifndef TFM_HASH_INDEX_H
#define TFM_HASH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    uint32_t *slot;         /* n_slots: id + 1, 0 = empty */
    size_t n_slots;         /* a power of two, or 0 before the first reserve */
    uint32_t n;             /* ids 0..n-1 are held */
    uint32_t *hash;         /* id -> the low 32 bits of its hash (to grow) */
    uint32_t *home;         /* id -> its slot (to reset) */
    size_t cap;             /* of hash and home */
} HashIndex;

/* Whether id's key is the one ctx describes. */
typedef bool HashSame(const void *ctx, uint32_t id);

/* Makes room for n ids at load 1/2 (at least min_slots slots), moving the
 * slots of those held. Errors: TFM_ERR_NOMEM. */
TfmStatus hidx_reserve(HashIndex *x, size_t n, size_t min_slots, TfmErr *err);

/* hidx_reserve for one more id, inline when there is room already (the
 * usual case, on a path that adds keys one by one). */
static inline TfmStatus hidx_room(HashIndex *x, size_t min_slots, TfmErr *err)
{
    if (2 * ((size_t)x->n + 1) <= x->n_slots && x->n < x->cap) return TFM_OK;
    return hidx_reserve(x, (size_t)x->n + 1, min_slots, err);
}

/* The slot of the key with hash h (same(ctx, id) recognizes it), or the
 * empty slot where it belongs. Needs a reserve before the first probe.
 * Inline: with a constant `same` the compiler inlines the comparison. */
static inline size_t hidx_probe(const HashIndex *x, uint64_t h, HashSame *same, const void *ctx)
{
    const size_t mask = x->n_slots - 1;
    size_t i = (size_t)h & mask;
    for (uint32_t s; (s = x->slot[i]) != 0; i = (i + 1) & mask)
        if (same(ctx, s - 1)) break;
    return i;
}

/* The id of the key with hash h, or -1. */
static inline long hidx_find(const HashIndex *x, uint64_t h, HashSame *same, const void *ctx)
{
    if (x->n_slots == 0) return -1;
    return (long)x->slot[hidx_probe(x, h, same, ctx)] - 1;
}

/* Puts the next id (returned) in empty slot i, found by hidx_probe for h
 * after a reserve that made room for it. */
static inline uint32_t hidx_put(HashIndex *x, size_t i, uint64_t h)
{
    const uint32_t id = x->n++;
    x->slot[i] = id + 1;
    x->hash[id] = (uint32_t)h;
    x->home[id] = (uint32_t)i;
    return id;
}

/* Forgets every id (the next is 0 again); the slots stay allocated. */
void hidx_reset(HashIndex *x);

void hidx_free(HashIndex *x);

#endif
