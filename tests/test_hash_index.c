/* Tests of base/hash_index.h, the one hash table of the text code, against
 * a plain array searched linearly: keys found at the ids they were given,
 * absent ones not found, through growth, collisions and resets. */
#include "test.h"

#include <stdlib.h>

#include "base/fnv.h"
#include "base/hash_index.h"

typedef struct {
    const uint32_t *keys;
    uint32_t key;
} Key;

static bool same_key(const void *ctx, uint32_t id)
{
    const Key *k = ctx;
    return k->keys[id] == k->key;
}

/* a hash that sends every key to one of 4 homes: long probe runs */
static uint64_t bad_hash(uint32_t key) { return key % 4; }

static uint64_t good_hash(uint32_t key) { return fnv_hash_words(&key, 1); }

static void check_table(uint64_t (*hash)(uint32_t), int n)
{
    HashIndex x = {0};
    TfmErr err;
    uint32_t *keys = malloc(sizeof *keys * (size_t)n);
    for (int round = 0; round < 2; round++) {
        /* keys 7, 14, 21, ...; each added twice, the second time found */
        for (int i = 0; i < 2 * n; i++) {
            const uint32_t key = 7u * (uint32_t)(i % n + 1) + (uint32_t)round;
            CHECK(hidx_room(&x, 16, &err) == TFM_OK);
            const Key k = {keys, key};
            const size_t s = hidx_probe(&x, hash(key), same_key, &k);
            if (i < n) {
                CHECK(x.slot[s] == 0);
                keys[x.n] = key;
                CHECK_EQ_INT(hidx_put(&x, s, hash(key)), i);
            } else {
                CHECK_EQ_INT(x.slot[s], i - n + 1);
            }
        }
        CHECK_EQ_INT(x.n, n);
        CHECK(x.n_slots >= 2 * (size_t)n);
        for (int i = 0; i < n; i++) {
            const Key hit = {keys, 7u * (uint32_t)(i + 1) + (uint32_t)round};
            CHECK_EQ_INT(hidx_find(&x, hash(hit.key), same_key, &hit), i);
            const Key miss = {keys, 7u * (uint32_t)(i + 1) + 3};
            CHECK_EQ_INT(hidx_find(&x, hash(miss.key), same_key, &miss), -1);
        }
        /* reset: every slot empty again, the next id 0 */
        hidx_reset(&x);
        CHECK_EQ_INT(x.n, 0);
        size_t used = 0;
        for (size_t i = 0; i < x.n_slots; i++) used += x.slot[i] != 0;
        CHECK_EQ_INT(used, 0);
    }
    hidx_free(&x);
    free(keys);
}

TEST(hash_index_matches_a_list)
{
    check_table(good_hash, 5000);
    check_table(bad_hash, 300);
}

TEST(hash_index_empty_finds_nothing)
{
    HashIndex x = {0};
    uint32_t keys[1] = {0};
    const Key k = {keys, 5};
    CHECK_EQ_INT(hidx_find(&x, 5, same_key, &k), -1);
    hidx_free(&x);
}
