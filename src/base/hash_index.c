/* hash_index: growth and reset of the one hash table (see the header). */
#include "base/hash_index.h"

#include <stdlib.h>

TfmStatus hidx_reserve(HashIndex *x, size_t n, size_t min_slots, TfmErr *err)
{
    if (n > UINT32_MAX - 1) return err_set(err, TFM_ERR_NOMEM, "hash table: too many keys");
    if (n > x->cap) {
        size_t cap = x->cap ? x->cap : 64;
        while (cap < n) cap *= 2;
        uint32_t *hash = xrealloc(x->hash, cap * sizeof *hash, err);
        if (!hash) return err->status;
        x->hash = hash;
        uint32_t *home = xrealloc(x->home, cap * sizeof *home, err);
        if (!home) return err->status;
        x->home = home;
        x->cap = cap;
    }
    size_t want = x->n_slots ? x->n_slots : 16;
    while (want < min_slots || want < 2 * n) want *= 2;
    if (want == x->n_slots) return TFM_OK;
    uint32_t *slot = xcalloc(want, sizeof *slot, err);
    if (!slot) return err->status;
    /* the hashes held are 32 bits: enough for any table of 2^32 slots */
    const size_t mask = want - 1;
    for (uint32_t id = 0; id < x->n; id++) {
        size_t i = x->hash[id] & mask;
        while (slot[i]) i = (i + 1) & mask;
        slot[i] = id + 1;
        x->home[id] = (uint32_t)i;
    }
    free(x->slot);
    x->slot = slot;
    x->n_slots = want;
    return TFM_OK;
}

void hidx_reset(HashIndex *x)
{
    for (uint32_t id = 0; id < x->n; id++) x->slot[x->home[id]] = 0;
    x->n = 0;
}

void hidx_free(HashIndex *x)
{
    free(x->slot);
    free(x->hash);
    free(x->home);
    *x = (HashIndex){0};
}
